"""Build ``catalog.json``, the rule metadata a run reads instead of importing the rule modules.

    python -m rlguard.rules.catalog --write    # after changing a rule's code, name, options or tokens
    python -m rlguard.rules.catalog --check    # exit 1 if the file is stale

A test fails when the file no longer matches the rule classes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import re
import sys
from collections.abc import Sequence
from typing import Any

import rlguard.rules
from rlguard.engine.generated import is_current, write_generated
from rlguard.engine.rule_api import Rule
from rlguard.engine.target import NEWEST_KNOWN_TORCHRL, known_releases

_RULE_MODULE = re.compile(r"^rlg\d{3}_\w+$")


def discover() -> tuple[type[Rule], ...]:
    """Import every rule module; each defines exactly one rule."""
    found = []
    for info in sorted(pkgutil.iter_modules(rlguard.rules.__path__), key=lambda m: m.name):
        if _RULE_MODULE.match(info.name):
            module = importlib.import_module(f"rlguard.rules.{info.name}")
            rules = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Rule) and v is not Rule
                     and v.__module__ == module.__name__]
            if len(rules) != 1:
                raise ImportError(f"{module.__name__} must define exactly one rule, found {len(rules)}")
            found.append(rules[0])
    codes = [rule.code for rule in found]
    if len(set(codes)) != len(codes):
        raise ImportError(f"rule codes are defined twice: {sorted(c for c in set(codes) if codes.count(c) > 1)}")
    return tuple(found)


def probe_versions() -> list[tuple[int, ...]]:
    """The torchrl versions a rule's pre-filter tokens are sampled at: every release the table knows,
    and every minor up to well past the newest, with and without patch numbers (``(0, 5)`` sorts
    before ``(0, 5, 0)``, and a rule may compare with either)."""
    minors = range(NEWEST_KNOWN_TORCHRL[1] + 10)
    versions = {(0,), (1,), (1, 0), (1, 0, 0), *known_releases(), NEWEST_KNOWN_TORCHRL}
    versions |= {(0, minor) for minor in minors} | {(0, minor, patch) for minor in minors for patch in range(10)}
    return sorted(versions)


def _token_steps(rule: type[Rule]) -> list[list[Any]]:
    """``prefilter_tokens`` as (lowest version, groups) steps over the probe versions."""
    steps: list[list[Any]] = []
    for version in probe_versions():
        groups = [list(group) for group in rule.prefilter_tokens(version)]
        if not steps or steps[-1][1] != groups:
            steps.append([list(version), groups])
    return steps


def entry(rule: type[Rule]) -> dict[str, Any]:
    return {
        "code": rule.code, "name": rule.name, "summary": rule.summary,
        "module": rule.__module__.rpartition(".")[2], "class": rule.__qualname__,
        "options": [{"name": o.name, "kind": o.kind.__name__, "default": o.default, "description": o.description}
                    for o in rule.options],
        "min_target": list(rule.min_target) if rule.min_target is not None else None,
        "tokens": _token_steps(rule),
        "class_roots": sorted(rule.class_roots), "class_group": rule.class_group,
        "library_copies": rule.library_copies,
        "sinks": {name: list(escapes) for name, escapes in sorted(rule.sinks.items())},
    }


def render() -> str:
    return json.dumps({"rules": [entry(rule) for rule in discover()]}, indent=1, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlguard.rules.catalog", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate catalog.json")
    mode.add_argument("--check", action="store_true", help="exit 1 if catalog.json is stale; write nothing")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not is_current(rlguard.rules.CATALOG_FILE, text):
            print(f"stale: {rlguard.rules.CATALOG_FILE}; run `python -m rlguard.rules.catalog --write`")
            return 1
        return 0
    write_generated(rlguard.rules.CATALOG_FILE, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
