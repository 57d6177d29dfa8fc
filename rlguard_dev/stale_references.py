"""Which torchrl and tensordict imports of a tree fail on the installed stack, and whether rlguard flags each.

The measure of the upgrade issue: on old TorchRL trees (a tag's ``examples/``, ``tutorials/`` and
``sota-implementations/``), every import of a name that fails here should carry an RLG006 or RLG007
finding on its line. An import fails when its module does not import, or has neither the attribute nor
a submodule of that name.

Usage: ``python -m rlguard_dev.stale_references TREE [TREE ...]``; prints one line per tree and each import
left unflagged.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator

LIBRARIES = ("torchrl", "tensordict")


def imports_here(module: str, name: str | None = None) -> bool:
    """Whether ``from module import name`` (or ``import module``) works on the installed stack."""
    try:
        found = importlib.import_module(module)
    except Exception:  # an old module may fail in any way on import
        return False
    if name is None or name == "*" or hasattr(found, name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
    except Exception:
        return False
    return True


def library_imports(path: str) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name) of each absolute import of torchrl or tensordict in the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] in LIBRARIES:
            yield from ((alias.lineno, node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((alias.lineno, alias.name, None) for alias in node.names if alias.name.split(".")[0] in LIBRARIES)


def flagged_lines(tree: str) -> set[tuple[str, int]]:
    """(absolute path, line) of rlguard's RLG006 and RLG007 findings in the tree, at the tested torchrl."""
    run = subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "--exit-zero", "--output-format",
                          "json", "--select", "RLG006,RLG007", "--target-torchrl", "0.14", "."],
                         capture_output=True, text=True, cwd=tree, check=True)
    return {(os.path.abspath(os.path.join(tree, f["path"])), f["line"]) for f in json.loads(run.stdout)}


def measure(tree: str) -> list[str]:
    total, stale = 0, []
    for folder, _, files in os.walk(tree):
        for name in sorted(files):
            path = os.path.abspath(os.path.join(folder, name))
            for line, module, imported in library_imports(path) if name.endswith(".py") else ():
                total += 1
                if not imports_here(module, imported):
                    stale.append((path, line, f"{module}.{imported}" if imported else module))
    flagged = flagged_lines(tree)
    missed = [entry for entry in stale if entry[:2] not in flagged]
    lines = [f"{tree}: {total} imports of torchrl/tensordict, {len(stale)} fail here, "
             f"{len(stale) - len(missed)} flagged, {len(missed)} not flagged"]
    return lines + [f"  not flagged: {os.path.relpath(path, tree)}:{line} {what}" for path, line, what in missed]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlguard_dev.stale_references", description=__doc__.partition("\n")[0])
    parser.add_argument("trees", nargs="+", metavar="TREE", help="a folder of Python files (an old tag's examples, a repo)")
    trees = parser.parse_args(argv).trees
    missing = [tree for tree in trees if not os.path.isdir(tree)]
    if missing:
        parser.error(f"not a folder: {', '.join(missing)}")
    warnings.filterwarnings("ignore")  # old names warn on import
    for tree in trees:
        print("\n".join(measure(tree)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
