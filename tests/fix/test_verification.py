"""A fix that fails verification is not applied (docs/fixes.md): the fixed text must parse and the
finding it claimed to remove must be gone, or the file is left as it was and the summary says why.
Driven through the real command line, with rules whose fixes are wrong (tests/fix/broken_rules.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import OLD_IMPORT

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAILED = "(the fix failed verification and was not applied)"


def _fix(tree, *args: str) -> subprocess.CompletedProcess:
    """``rlguard fix`` in a fresh process whose catalog also holds the broken rules."""
    script = ("import sys; import rlguard.rules; from tests.fix.broken_rules import register; register(); "
              "from rlguard.cli import main; sys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (CHECKOUT, os.environ.get("PYTHONPATH"))))}
    return subprocess.run([sys.executable, "-c", script, "fix", "--no-cache", *args], cwd=tree.root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_fix_that_leaves_its_finding_is_not_applied(tree):
    path = tree.write("a.py", "x = Widget\n")
    before = os.stat(path).st_mtime_ns
    result = _fix(tree, "a.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines() == ["Fixed 0 findings in 0 files.", "1 remaining:",
                                          f"  a.py:1:5: RLG990 `Widget` is flagged [*]  {FAILED}"]
    assert open(path, encoding="utf-8").read() == "x = Widget\n" and os.stat(path).st_mtime_ns == before


def test_a_fix_that_breaks_the_syntax_is_not_applied_and_the_good_fixes_still_are(tree):
    path = tree.write("a.py", OLD_IMPORT + "x = Gadget\nc = SyncDataCollector(env, None)\n")
    result = _fix(tree, "a.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"a.py:2:5: RLG991 `Gadget` is flagged [*]  {FAILED}" in result.stdout
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "from torchrl.collectors import Collector\nx = Gadget\nc = Collector(env, None)\n"
    assert result.stdout.startswith("Fixed 1 finding in 1 file (RLG006: 1).")


def test_stdin_gets_the_text_back_unchanged(tree):
    piped = subprocess.run([sys.executable, "-c", "import sys; import rlguard.rules; from tests.fix.broken_rules import register; "
                            "register(); from rlguard.cli import main; sys.exit(main(sys.argv[1:]))",
                            "fix", "--no-cache", "-", "--stdin-filename", "a.py"], cwd=tree.root, input="x = Gadget\n",
                           env={**os.environ, "PYTHONPATH": CHECKOUT}, capture_output=True, text=True, timeout=300)
    assert (piped.returncode, piped.stdout) == (1, "x = Gadget\n")
    assert f"RLG991 `Gadget` is flagged [*]  {FAILED}" in piped.stderr
