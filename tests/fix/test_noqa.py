"""Suppression comments rlguard writes: `check --add-noqa` (as ruff's) and RLG100's fix, which takes
unused codes out of suppressions (`fix --show-unused-noqa`)."""

from __future__ import annotations

import pytest

from rlguard.engine.suppress import Suppression
from rlguard.fix.noqa import add_noqa, remove_codes
from tests.helpers import OLD_IMPORT

TENSOR = "json.dumps(torch.zeros(1))"


def test_add_noqa_appends_merges_and_keeps_line_endings():
    text = f"import json, torch\r\n{OLD_IMPORT.rstrip()}  # noqa: F401\r\n{TENSOR}  # keep\r\nx = 1  # noqa\r\n{TENSOR}"
    new, changed, skipped = add_noqa(text, {2: {"RLG006"}, 3: {"RLG003"}, 4: {"RLG003"}, 5: {"RLG003", "RLG001"}})
    assert new == (f"import json, torch\r\n{OLD_IMPORT.rstrip()}  # noqa: F401, RLG006\r\n{TENSOR}  # keep  # noqa: RLG003\r\n"
                   f"x = 1  # noqa\r\n{TENSOR}  # noqa: RLG001, RLG003")
    assert (changed, skipped) == (3, [])
    assert add_noqa(new, {2: {"RLG006"}})[1] == 0  # already there: nothing to add


def test_add_noqa_never_writes_into_a_string():
    text = 'x = """\nSyncDataCollector\n""" + f(a,\n  b)\n'
    new, changed, skipped = add_noqa(text, {1: {"RLG006"}, 2: {"RLG006"}, 4: {"RLG003"}})
    assert (new, changed, skipped) == ('x = """\nSyncDataCollector\n""" + f(a,\n  b)  # noqa: RLG003\n', 1, [1, 2])


@pytest.mark.parametrize("line, unused, expected", [
    ("x = 1  # noqa: RLG001, F401\n", {"RLG001"}, "x = 1  # noqa: F401\n"),
    ("x = 1  # noqa: RLG001,RLG003\n", {"RLG001"}, "x = 1  # noqa: RLG003\n"),
    ("x = 1  # noqa: RLG001\n", {"RLG001"}, "x = 1\n"),
    ("x = 1  # noqa: RLG001 because of the camera\n", {"RLG001"}, "x = 1  # because of the camera\n"),
    ("    # rlguard: ignore[RLG006]\n", {"RLG006"}, ""),
    ("    # rlguard: ignore[RLG006, RLG001]\n", {"RLG006"}, "    # rlguard: ignore[RLG001]\n"),
])
def test_remove_codes(line, unused, expected):
    ignore = "rlguard:" in line
    suppression = Suppression(1, frozenset({"RLG001", "RLG003", "RLG006", "F401"}), (1, 2) if ignore else (1,))
    assert remove_codes(line + "y = 2\n", [(suppression, frozenset(unused))])[0] == expected + "y = 2\n"


def test_check_add_noqa_silences_every_finding(tree):
    path = tree.write("a.py", f"import json, torch\n{OLD_IMPORT.rstrip()}  # noqa: F401\n{TENSOR}\n")
    tree.write("b.py", "x = 1\n")
    assert tree.run("check", "--no-cache", ".").returncode == 1
    added = tree.run("check", "--no-cache", "--add-noqa", ".")
    assert (added.returncode, added.stderr) == (0, "Added 2 noqa directives.\n")
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == f"import json, torch\n{OLD_IMPORT.rstrip()}  # noqa: F401, RLG006\n{TENSOR}  # noqa: RLG003\n"
    assert tree.run("check", "--no-cache", "--show-unused-noqa", ".").returncode == 0
    assert tree.run("check", "--no-cache", "--add-noqa", ".").stderr == "Added 0 noqa directives.\n"
    refused = tree.run("check", "--add-noqa", "--fix", ".")
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1


def test_fix_takes_unused_codes_out(tree):
    path = tree.write("a.py", f"import os  # noqa: RLG003, F401\n{OLD_IMPORT.rstrip()}  # noqa: RLG006, RLG001\n"
                              "# rlguard: ignore[RLG004]\ny = 2\nz = 3  # noqa\n")
    checked = tree.run("check", "--no-cache", "--show-unused-noqa", "--output-format", "concise", ".")
    assert checked.stdout.splitlines()[:4] == ["a.py:1:1: RLG100 unused suppression of RLG003 [*]",
                                               "a.py:2:1: RLG100 unused suppression of RLG001 [*]",
                                               "a.py:3:1: RLG100 unused suppression of RLG004 [*]",
                                               "a.py:5:1: RLG100 unused blanket `noqa`"]
    assert tree.run("fix", "--no-cache", ".").stdout.startswith("Fixed 0 findings")  # only when asked
    fixed = tree.run("fix", "--no-cache", "--show-unused-noqa", ".")
    assert fixed.stdout.splitlines() == ["Fixed 3 findings in 1 file (RLG100: 3).", "1 remaining:",
                                         "  a.py:4:1: RLG100 unused blanket `noqa`  (no automatic fix)"]
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == f"import os  # noqa: F401\n{OLD_IMPORT.rstrip()}  # noqa: RLG006\ny = 2\nz = 3  # noqa\n"
    assert fixed.returncode == 1
