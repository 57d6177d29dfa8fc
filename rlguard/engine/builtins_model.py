"""What the built-in functions and container methods do with values, as data generated from typeshed.

``builtins_model.json`` is written by ``python -m rlguard_dev.builtins_model --write`` from the stubs
mypy ships; this module only reads it. Terms are described in ``rlguard_dev/builtins_model.py``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

MODEL_PATH = Path(__file__).with_name("builtins_model.json")
Term = list[Any]


@cache
def _data() -> dict[str, Any]:
    return json.loads(MODEL_PATH.read_text(encoding="utf-8"))


def builtin_results(name: str, positional: int, keywords: frozenset[str]) -> list[Term | None]:
    """What ``builtins.<name>(...)`` may give, for a call passing ``positional`` arguments and
    ``keywords``: the term of each overload that fits (None for an overload the stubs leave unknown)."""
    fitting = []
    for overload in _data()["functions"].get(name, ()):
        if positional < overload["required"] or (positional > overload["positional"] and not overload["varargs"]):
            continue
        if not keywords <= set(overload["keywords"]):
            continue
        fitting.append(overload["result"])
    return fitting


def mutation(container: str, method: str) -> list[Term]:
    """Where the values ``container.method(...)`` adds come from (``["item", i]``, ``["spread", i]``,
    ``["keywords"]``); empty when the method adds none."""
    return _data()["mutators"].get(container, {}).get(method, [])


def mutated_kind(method: str) -> str | None:
    """The one kind of container that has the mutating method ``method`` (``append``: a list), if only one has it."""
    kinds = [kind for kind, methods in _data()["mutators"].items() if method in methods]
    return kinds[0] if len(kinds) == 1 else None


@cache
def list_builders() -> frozenset[str]:
    """The built-in functions that always give a new list (``sorted``): every overload's result is one."""
    return frozenset(name for name, overloads in _data()["functions"].items()
                     if overloads and all(o["result"] is not None and o["result"][0] == "list" for o in overloads))
