"""Dependencies point down: rules -> fix -> engine. The engine never imports the rules or the fixer, and
the fixer (RLG002's planner included) never imports the rules: what it must know, the rule hands it.

Checked twice: by reading each module's imports, and by importing each layer in a fresh interpreter
and looking at what ``sys.modules`` then holds (an import through a third module shows only there)."""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import pytest

import rlguard.engine

ENGINE = pathlib.Path(rlguard.engine.__file__).parent
FIX = ENGINE.parent / "fix"


def _imported_modules(path: pathlib.Path, package: str = "rlguard.engine") -> list[str]:
    """Absolute names of every module a file imports, anywhere in it (functions included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            found.append(base)
            found.extend(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            # importlib.import_module("rlguard.rules...") is an import too.
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
                found.append(str(node.args[0].value))
    return found


def test_the_engine_has_modules_to_check():
    assert len(list(ENGINE.glob("*.py"))) > 10


def _offenders(folder: pathlib.Path, package: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    return {
        path.name: names
        for path in sorted(folder.glob("*.py"))
        if (names := [m for m in _imported_modules(path, package)
                      if any(m == f or m.startswith(f + ".") for f in forbidden)])
    }


def test_no_engine_module_imports_the_rules_or_the_fixer():
    assert _offenders(ENGINE, "rlguard.engine", ("rlguard.rules", "rlguard.fix")) == {}


def test_no_fixer_module_imports_the_rules():
    assert (FIX / "recurrent_mode.py").is_file()
    assert _offenders(FIX, "rlguard.fix", ("rlguard.rules",)) == {}


def test_the_check_sees_a_relative_import_of_the_rules(tmp_path):
    """The checker itself must catch the forms a regression could take."""
    sample = tmp_path / "sample.py"
    sample.write_text("from ..rules import RULES\nimport importlib\nimportlib.import_module('rlguard.rules.data')\n")
    assert {"rlguard.rules", "rlguard.rules.data"} <= set(_imported_modules(sample))
    assert "rlguard.rules" in _imported_modules(sample, "rlguard.fix")


def _modules(folder: str) -> list[str]:
    """Every module of a folder of the package, found on disk (a new module is checked without a list to update)."""
    package = ENGINE.parent / folder
    return sorted(f"rlguard.{folder}.{path.stem}" for path in package.glob("*.py") if path.stem != "__init__")


THIRD_PARTY = ("torch", "torchrl", "tensordict", "libcst")  # the linter never imports the first three; libcst only to parse
# layer -> (what to import, the rlguard packages it may load besides rlguard/__init__)
LAYERS = {
    "engine": (_modules("engine"), ("rlguard.engine",)),
    "fix": (_modules("fix"), ("rlguard.engine", "rlguard.fix")),
    # The catalog, not a rule module: a run loads a rule's module only for a file that needs it.
    "rules": (["rlguard.rules"], ("rlguard.engine", "rlguard.rules:package")),
    "config": (["rlguard.config"], ("rlguard.engine", "rlguard.rules:package", "rlguard.config")),
    # The formatters format: no fixer, no rule module, no generator (and no analysis: see below).
    "reporters": (["rlguard.report.text", "rlguard.report.json_format", "rlguard.report.github", "rlguard.report.sarif"],
                  ("rlguard.engine", "rlguard.rules:package", "rlguard.docs", "rlguard.report")),
}
ANALYSIS = ("rlguard.engine.runner", "rlguard.engine.analyze", "rlguard.engine.traversal")  # what judges files

PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(sys.modules)))
"""


def _allowed(module: str, allowed: tuple[str, ...]) -> bool:
    if module in ("rlguard", "rlguard.engine"):  # a submodule's import runs its packages' __init__
        return True
    for entry in allowed:
        name, _, only = entry.partition(":")
        if module == name or (not only and module.startswith(name + ".")):
            return True
    return False


@pytest.mark.parametrize("layer", LAYERS)
def test_importing_a_layer_loads_nothing_above_it(layer):
    modules, allowed = LAYERS[layer]
    assert modules
    result = subprocess.run([sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, check=True)
    loaded = json.loads(result.stdout)
    assert set(modules) <= set(loaded)
    above = [m for m in loaded if (m.startswith("rlguard") and not _allowed(m, allowed))
             or m.split(".")[0] in THIRD_PARTY or (layer == "reporters" and m in ANALYSIS)]
    assert above == [], f"importing the {layer} layer loaded {above}"


def test_the_probe_sees_an_import_made_through_another_module():
    """The check above must catch the side effect this layering once had: the runner loading the
    rules through the configuration."""
    result = subprocess.run([sys.executable, "-c", PROBE, "rlguard.engine.runner", "rlguard.config"],
                            capture_output=True, text=True, check=True)
    loaded = json.loads(result.stdout)
    assert "rlguard.rules" in loaded and not _allowed("rlguard.rules", LAYERS["engine"][1])


def test_the_engine_runs_the_rules_it_is_handed(tree):
    """The engine keeps no registry: the configuration hands it the catalog (``Config.rules``), and
    it chooses among those rules only."""
    from rlguard.config import Config, load_config
    from rlguard.engine.runner import RunOptions, check
    from rlguard.engine.target import Target
    from rlguard.rules import CATALOG

    tree.write("a.py", "import json\nimport torch\nfrom torchrl.collectors import SyncDataCollector\n"
                       "json.dumps({'loss': torch.zeros(2).mean()})\n")
    options, target = RunOptions(jobs=1, use_cache=False), Target((0, 14), "flag")
    every, _ = check([tree.root], Config(root=tree.root), options, target)
    assert {f.code for f in every.findings} == {"RLG003", "RLG006"}
    only, _ = check([tree.root], Config(root=tree.root, rules={"RLG006": CATALOG["RLG006"]}), options, target)
    assert {f.code for f in only.findings} == {"RLG006"}
    assert load_config(tree.root).rules is CATALOG is Config().rules
