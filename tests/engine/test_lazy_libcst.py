"""libcst and the rules' visitors load only when a file needs a parse.

Each probe runs in a fresh interpreter, so what it finds in ``sys.modules`` is what that run imported.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import OLD_IMPORT

PROBE = """
import sys
from rlguard.cli import main
code = main(sys.argv[1:])
print("LIBCST:" + ",".join(sorted(m for m in sys.modules if m.split(".")[0] == "libcst")))
"""


def loaded_libcst(tree, *args: str) -> bool:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tree.root, capture_output=True, text=True)
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("LIBCST:"), result.stdout + result.stderr
    return last != "LIBCST:"


def test_a_file_the_prefilter_clears_needs_no_libcst(tree):
    tree.write("plain.py", "import os\n\nprint(os.getcwd())\n")
    assert not loaded_libcst(tree, "check", "--no-cache", "plain.py")


def test_a_file_served_from_the_cache_needs_no_libcst(tree):
    tree.write("old.py", OLD_IMPORT)
    cache = ["--cache-dir", os.path.join(tree.root, "cache")]
    assert loaded_libcst(tree, "check", *cache, "old.py")  # the first run parses: the probe sees libcst
    assert not loaded_libcst(tree, "check", *cache, "old.py")


def test_rule_metadata_and_docs_load_without_libcst(tree):
    assert not loaded_libcst(tree, "rules")
    assert not loaded_libcst(tree, "explain", "RLG004")
    result = subprocess.run([sys.executable, "-c", "import sys; from rlguard.rules import RULES; "
                             "print([(r.code, r.name, [o.name for o in r.options]) for r in RULES]); "
                             "print('libcst' in sys.modules)"], capture_output=True, text=True)
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "False" and "RLG004" in lines[0], result.stdout + result.stderr
