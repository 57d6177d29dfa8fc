"""The rule registry: every ``rlgNNN_*.py`` module in this package holds exactly one rule.

Codes are stable. Discovery by module name keeps adding a rule to one new file.

Importing this package registers the rule catalog (``catalog.json``, each rule's metadata, generated
by ``python -m rlguard.rules.catalog --write``) with the engine, and imports no rule module: a
run loads a rule's module only when a file needs its visitor. ``RULES`` and ``RULES_BY_CODE``,
the rule classes with their docs and examples, import every rule module on first access.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from rlguard.engine.findings import ENGINE_CODES
from rlguard.engine.rule_info import Option, RuleInfo, register_rules

if TYPE_CHECKING:
    from rlguard.engine.prefilter import Token
    from rlguard.engine.rule_api import Rule

    RULES: tuple[type[Rule], ...]  # bound by ``__getattr__`` on first use
    RULES_BY_CODE: dict[str, type[Rule]]

CATALOG_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.json")
_KINDS = {kind.__name__: kind for kind in (list, str, int, float, bool)}


def _version(value: list[int] | None) -> tuple[int, ...] | None:
    return tuple(value) if value is not None else None


def _token(token: str | list[str]) -> Token:
    return token if isinstance(token, str) else tuple(token)


def _info(entry: dict[str, Any]) -> RuleInfo:
    return RuleInfo(
        code=entry["code"], name=entry["name"], summary=entry["summary"],
        options=tuple(Option(o["name"], _KINDS[o["kind"]], o["default"], o["description"]) for o in entry["options"]),
        min_target=_version(entry["min_target"]),
        token_steps=tuple((tuple(since), tuple(tuple(_token(t) for t in group) for group in groups)) for since, groups in entry["tokens"]),
        class_roots=frozenset(entry["class_roots"]), class_group=entry["class_group"],
        module=f"{__name__}.{entry['module']}", qualname=entry["class"], library_copies=entry["library_copies"],
        sinks={name: tuple(escapes) for name, escapes in entry["sinks"].items()},
    )


def read_catalog(path: str = CATALOG_FILE) -> tuple[RuleInfo, ...]:
    with open(path, encoding="utf-8") as handle:
        return tuple(_info(entry) for entry in json.load(handle)["rules"])


CATALOG: dict[str, RuleInfo] = {info.code: info for info in read_catalog()}
register_rules(CATALOG.values())


def __getattr__(name: str) -> Any:
    """``RULES`` and ``RULES_BY_CODE``: the rule classes, imported on first use."""
    if name not in ("RULES", "RULES_BY_CODE"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from rlguard.rules.catalog import discover

    rules = discover()
    globals().update(RULES=rules, RULES_BY_CODE={rule.code: rule for rule in rules})
    return globals()[name]


__all__ = ["CATALOG", "ENGINE_CODES", "RULES", "RULES_BY_CODE"]
