"""Dependencies point down: rules -> fix -> engine. The engine never imports the rules or the fixer, and
the fixer (RLG002's planner included) never imports the rules: what it must know, the rule hands it."""

from __future__ import annotations

import ast
import pathlib

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


def test_the_rules_package_registers_its_rules_with_the_engine():
    from rlguard.engine.rule_info import registered_rules
    from rlguard.rules import RULES

    assert [info.code for info in registered_rules()] == [rule.code for rule in RULES]
    assert [info.load() for info in registered_rules()] == list(RULES)
