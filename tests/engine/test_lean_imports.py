"""A run served from the cache, and one whose file the pre-filter clears, import no ``dataclasses``.

That module and the classes it builds cost about half of such a run beyond interpreter start, so
the values these runs load (findings, cached results, index facts, suppressions, config, target)
are plain classes and named tuples. Each probe runs in a fresh interpreter, so what it finds in
``sys.modules`` is what that run imported.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import OLD_IMPORT

PROBE = """
import sys
from rlguard.cli import main
main(sys.argv[1:])
print("DATACLASSES:" + str("dataclasses" in sys.modules))
"""
PIN = '[project]\nname = "demo"\nversion = "0"\ndependencies = ["torchrl==0.14.1"]\n'
# A finding, a suppressed one, an unused suppression and a class: every kind of value a cached result holds.
CACHED = (OLD_IMPORT + "from torchrl.collectors import SyncDataCollector as Old  # noqa: RLG006\n"
          "import os  # noqa: RLG006\n\n\nclass Policy:\n    def __init__(self):\n        self.lock = os.getcwd()\n")


def _probe(tree, *args: str) -> tuple[str, bool]:
    """(what the run printed, whether it imported ``dataclasses``)."""
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tree.root, capture_output=True, text=True)
    output, _, flag = result.stdout.rpartition("DATACLASSES:")
    assert flag.strip() in ("True", "False"), result.stdout + result.stderr
    return output, flag.strip() == "True"


def test_a_cache_hit_imports_no_dataclasses_and_reports_as_the_first_run(tree):
    tree.write("pyproject.toml", PIN)
    tree.write("old.py", CACHED)
    args = ["check", "--show-unused-noqa", "--cache-dir", os.path.join(tree.root, "cache"), "old.py"]
    first, _ = _probe(tree, *args)  # parses, and fills the cache
    again, imported = _probe(tree, *args)
    assert not imported
    assert again == first  # findings, suppressions and facts came back from the cache intact
    assert "old.py:1:32: RLG006" in first and "old.py:3:" in first and "RLG100" in first
    assert "old.py:2:" not in first  # suppressed


def test_a_file_the_prefilter_clears_imports_no_dataclasses(tree):
    tree.write("pyproject.toml", PIN)
    tree.write("plain.py", "import os  # noqa: RLG001\n\nprint(os.getcwd())\n")
    output, imported = _probe(tree, "check", "--no-cache", "plain.py")
    assert not imported
    assert "All checks passed" in output


def test_a_file_that_needs_a_parse_still_may(tree):
    """The probe can see the import: a parsed file's rules build their own dataclasses."""
    tree.write("old.py", OLD_IMPORT)
    _, imported = _probe(tree, "check", "--no-cache", "old.py")
    assert imported
