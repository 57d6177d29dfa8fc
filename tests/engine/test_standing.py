"""One answer to "which findings stand" (select, ignore, per-file-ignores, noqa, target), shared by
``check``, ``fix`` (files and stdin), the language server and SARIF's fixes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import OLD_IMPORT

FIXABLE = "import os\n" + OLD_IMPORT


def _stdin(tree, *args: str, text: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlguard", *args], cwd=tree.root, input=text,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("codes", ["ALL", "RLG00", "RLG006"])
def test_a_file_ignored_per_file_is_reported_and_fixed_alike(tree, codes):
    tree.write("pyproject.toml", f"[tool.rlguard]\nper-file-ignores = {{ 'a.py' = ['{codes}'] }}\n")
    path = tree.write("a.py", FIXABLE)
    tree.write("b.py", FIXABLE)
    checked = tree.run("check", "--no-cache", "--output-format", "concise", ".")
    assert checked.stdout.startswith("b.py:2:32: RLG006") and "a.py" not in checked.stdout
    piped = _stdin(tree, "fix", "--no-cache", "-", "--stdin-filename", "a.py", text=FIXABLE)
    assert (piped.returncode, piped.stdout) == (0, FIXABLE), piped.stderr
    assert tree.run("fix", "--no-cache", ".").returncode == 0
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == FIXABLE  # b.py is fixed; a.py, ignored, is left as it was
    with open(f"{tree.root}/b.py", encoding="utf-8") as handle:
        assert handle.read() == "import os\nfrom torchrl.collectors import Collector\n"


def test_the_language_servers_fix_all_leaves_an_ignored_file_alone(tree, monkeypatch):
    pytest.importorskip("pygls")
    from rlguard import server

    tree.write(".git/HEAD", "ref: refs/heads/main\n")
    tree.write("pyproject.toml", "[tool.rlguard]\nper-file-ignores = { 'a.py' = ['ALL'] }\n")
    ignored, other = tree.write("a.py", FIXABLE), tree.write("b.py", FIXABLE)
    monkeypatch.chdir(tree.root)
    assert server._fix_all(ignored, server.lint(ignored, FIXABLE)) == []
    checked = server.lint(other, FIXABLE)
    assert [f.code for f in checked.findings] == ["RLG006"] and server._fix_all(other, checked)


def test_a_noqa_holds_for_the_fixer_and_for_sarif(tree):
    tree.write("a.py", "import os\n" + OLD_IMPORT.rstrip() + "  # noqa: RLG006\n")
    assert tree.run("check", "--no-cache", ".").returncode == 0
    piped = _stdin(tree, "fix", "--no-cache", "-", "--stdin-filename", "a.py",
                   text="import os\n" + OLD_IMPORT.rstrip() + "  # noqa: RLG006\n")
    assert piped.stdout == "import os\n" + OLD_IMPORT.rstrip() + "  # noqa: RLG006\n"
