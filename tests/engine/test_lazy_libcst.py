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
print("RULES:" + ",".join(sorted(m.rpartition(".")[2] for m in sys.modules if m.startswith("rlguard.rules.rlg"))))
print("LIBCST:" + ",".join(sorted(m for m in sys.modules if m.split(".")[0] == "libcst")))
"""


def _probe(tree, *args: str) -> dict[str, list[str]]:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tree.root, capture_output=True, text=True)
    lines = result.stdout.strip().splitlines()[-2:]
    assert [line.partition(":")[0] for line in lines] == ["RULES", "LIBCST"], result.stdout + result.stderr
    return {key: [name for name in names.split(",") if name] for key, _, names in (line.partition(":") for line in lines)}


def loaded_libcst(tree, *args: str) -> bool:
    return bool(_probe(tree, *args)["LIBCST"])


def loaded_rules(tree, *args: str) -> list[str]:
    """The rule modules a run imported, by module name."""
    return _probe(tree, *args)["RULES"]


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


def test_rule_modules_load_only_for_a_file_that_needs_their_visitor(tree):
    tree.write("plain.py", "import os\n\nprint(os.getcwd())\n")
    tree.write("old.py", OLD_IMPORT)
    cache = ["--cache-dir", os.path.join(tree.root, "cache")]
    assert loaded_rules(tree, "check", *cache, "plain.py") == []  # the pre-filter clears it
    parsed = loaded_rules(tree, "check", *cache, "old.py")  # RLG006's visitor is needed; RLG003's (json) is not
    assert "rlg006_removed_collector_name" in parsed and "rlg003_tensor_in_json" not in parsed
    assert loaded_rules(tree, "check", *cache, "old.py") == []  # served from the cache


def test_a_pool_of_cleared_files_loads_nothing_before_it_forks_and_one_that_parses_loads_the_rules(tree):
    """Loading for the workers (``analyze.load_checking``) happens only when a file of the pool will be parsed."""
    for name in ("a.py", "b.py", "c.py"):
        tree.write(name, "import os\n\nprint(os.getcwd())\n")
    assert _probe(tree, "check", "--no-cache", "--jobs", "2", "a.py", "b.py", "c.py") == {"RULES": [], "LIBCST": []}
    tree.write("c.py", OLD_IMPORT)
    loaded = _probe(tree, "check", "--no-cache", "--jobs", "2", "a.py", "b.py", "c.py")
    assert loaded["LIBCST"] and "rlg001_uncopyable_policy" in loaded["RULES"]  # every selected rule, here
