"""Valid code is never a parse error: 3.12 and 3.13 syntax passes on whatever Python runs rlguard.

Files no rule needs are syntax-checked with ``compile()`` first; on 3.10 and 3.11 that rejects the
snippets below, and libcst (whose grammar has them) must have the last word.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.helpers import OLD_IMPORT

NEWER = {
    "pep695_alias.py": "type Reward = dict[str, float]\n",  # 3.12
    "pep695_generic.py": "def first[T](items: list[T]) -> T:\n    return items[0]\n",  # 3.12
    "pep701_quotes.py": 'td = {"reward": 1.0}\nprint(f"{td["reward"]}")\n',  # 3.12: the f-string reuses its quote
    "pep701_nested.py": 'width = 4\nprint(f"{1.5:{f"{width}"}}")\n',  # 3.12
    "pep696_default.py": "class Box[T = int]:\n    pass\n",  # 3.13: a type parameter default
}


def compiles(source: str) -> bool:
    try:
        compile(source, "<test>", "exec")
    except SyntaxError:
        return False
    return True


def findings(tree, *paths):
    result = tree.run("check", "--no-cache", "--format", "json", *paths)
    assert "Traceback" not in result.stderr, result.stderr
    return [(f["path"], f["code"], f["line"]) for f in json.loads(result.stdout)]


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="this interpreter compiles all of them: nothing to fall back from")
def test_the_running_python_rejects_some_of_them():
    # Without this the test below would prove nothing on this interpreter.
    assert not all(compiles(source) for source in NEWER.values())


@pytest.mark.parametrize("name", sorted(NEWER))
def test_newer_syntax_no_rule_needs_is_not_a_parse_error(tree, name):
    tree.write(name, NEWER[name])
    assert findings(tree, name) == []


@pytest.mark.parametrize("name", sorted(NEWER))
def test_newer_syntax_beside_a_torchrl_pattern_is_still_checked(tree, name):
    tree.write(name, OLD_IMPORT + NEWER[name])
    assert findings(tree, name) == [(name, "RLG006", 1)]


@pytest.mark.parametrize("source, line", [("type = = 1\n", 1), ('x = 1\nprint(f"{td["}")\n', 2), ("def f[](): pass\n", 1)])
def test_invalid_code_stays_a_parse_error(tree, source, line):
    tree.write("bad.py", source)
    assert findings(tree, "bad.py") == [("bad.py", "RLG000", line)]
