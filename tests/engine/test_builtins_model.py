"""The built-ins model is generated from typeshed's stubs and kept current; what it says matches Python."""

from __future__ import annotations

import pytest

from rlguard.engine.builtins_model import MODEL_PATH, builtin_results, mutation
from rlguard.engine.generated import is_current
from rlguard_dev import builtins_model


def test_the_shipped_model_is_what_the_stubs_give():
    assert is_current(MODEL_PATH, builtins_model.build()), \
        "stale: run `python -m rlguard_dev.builtins_model --write`"


@pytest.mark.parametrize("name, positional, keywords, expected", [
    ("max", 1, frozenset(), ["elem", 0]),  # max(losses): an item
    ("max", 1, frozenset({"key"}), ["elem", 0]),
    ("max", 3, frozenset(), ["arg", [0, 1, "*"]]),  # max(a, b, c): one of them
    ("sorted", 1, frozenset({"reverse"}), ["list", ["elem", 0]]),
    ("reversed", 1, frozenset(), ["iter", ["elem", 0]]),
    ("enumerate", 1, frozenset(), ["iter", ["tuple", [["value"], ["elem", 0]]]]),
    ("zip", 2, frozenset(), ["iter", ["tuple", [["elem", 0], ["elem", 1]]]]),
    ("abs", 1, frozenset(), ["same", 0]),
    ("len", 1, frozenset(), ["value"]),
])
def test_what_builtins_give(name, positional, keywords, expected):
    assert expected in builtin_results(name, positional, keywords)


def test_sum_of_items_is_an_item():
    # ``sum(xs)`` is ``T | Literal[0]``: the plain alternative is what an empty input gives.
    assert ["elem", 0] in builtin_results("sum", 1, frozenset())


@pytest.mark.parametrize("container, method, expected", [
    ("list", "append", [["item", 0]]),
    ("list", "extend", [["spread", 0]]),
    ("list", "insert", [["item", 1]]),
    ("list", "__iadd__", [["spread", 0]]),
    ("dict", "update", [["spread", 0], ["keywords"]]),
    ("dict", "__setitem__", [["item", 1]]),
    ("set", "add", [["item", 0]]),
    ("dict", "get", []),  # reads, returns a value: adds nothing
    ("list", "count", []),
])
def test_container_methods_that_add_values(container, method, expected):
    assert mutation(container, method) == expected

