"""Build ``rlguard/rules/catalog.json``, the rule metadata and texts a run reads instead of importing the rules.

    python -m rlguard_dev.catalog --write    # after changing a rule's code, name, options, tokens, docs or examples
    python -m rlguard_dev.catalog --check    # exit 1 if the file is stale

A test fails when the file no longer matches the rule classes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import rlguard.rules
from rlguard.engine.generated import is_current, write_generated
from rlguard.engine.rule_api import Rule
from rlguard.engine.target import NEWEST_KNOWN_TORCHRL, known_releases
from rlguard.rules import discover
from rlguard_dev.docs import rule_page


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
        # What reports and `rlguard explain` show, so that neither imports the rule.
        "description": " ".join(rule.why.split()), "page": rule_page(rule),
        "sinks": {name: list(escapes) for name, escapes in sorted(rule.sinks.items())},
        "through_imports": _through_imports(rule),
    }


def _through_imports(rule: type[Rule]) -> list[Any] | None:
    found = rule.prefilter_through_imports()
    return [found[0], [list(group) for group in found[1]]] if found is not None else None


def render() -> str:
    return json.dumps({"rules": [entry(rule) for rule in discover()]}, indent=1, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlguard_dev.catalog", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate catalog.json")
    mode.add_argument("--check", action="store_true", help="exit 1 if catalog.json is stale; write nothing")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not is_current(rlguard.rules.CATALOG_FILE, text):
            print(f"stale: {rlguard.rules.CATALOG_FILE}; run `python -m rlguard_dev.catalog --write`")
            return 1
        return 0
    write_generated(rlguard.rules.CATALOG_FILE, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
