"""The rule registry: every ``rlgNNN_*.py`` module in this package holds exactly one rule.

Codes are stable. Discovery by module name keeps adding a rule to one new file.

``CATALOG`` is the rule catalog (``catalog.json``, each rule's metadata and documentation, generated
by ``python -m rlguard_dev.catalog --write``); the configuration hands it to the engine
(``rlguard.config.Config.rules``). Importing this package imports no rule module: a run loads a
rule's module only when a file needs its visitor. ``RULES`` and
``RULES_BY_CODE``, the rule classes with their docs and examples, import every rule module on first access.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, NamedTuple

from rlguard.engine.findings import ENGINE_CODES
from rlguard.engine.rule_info import Option, RuleInfo

if TYPE_CHECKING:
    from rlguard.engine.prefilter import Token, TokenGroups
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
        sinks={name: tuple(escapes) for name, escapes in entry.get("sinks", {}).items()},
        through_imports=_through(entry.get("through_imports")),
    )


def _through(value: list[Any] | None) -> tuple[str | int, TokenGroups] | None:
    if value is None:
        return None
    trigger, groups = value
    return trigger, tuple(tuple(_token(t) for t in group) for group in groups)


class RuleText(NamedTuple):
    """What reports and ``rlguard explain`` show of a rule, besides its summary."""

    description: str  # why the rule exists, as one paragraph (SARIF's fullDescription)
    page: str  # the rule's documentation page, as docs/rules/ shows it


def _entries(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)["rules"]


def read_catalog(path: str = CATALOG_FILE) -> tuple[RuleInfo, ...]:
    return tuple(_info(entry) for entry in _entries(path))


_ENTRIES = _entries(CATALOG_FILE)
CATALOG: dict[str, RuleInfo] = {entry["code"]: _info(entry) for entry in _ENTRIES}
# A rule merged in before its texts and sinks were generated still loads, so the generator can run to add them
# (the catalog's staleness test fails until it has).
TEXTS: dict[str, RuleText] = {entry["code"]: RuleText(entry.get("description", ""), entry.get("page", "")) for entry in _ENTRIES}


def discover() -> tuple[type[Rule], ...]:
    """Import every rule module (named ``rlgNNN_*``); each defines exactly one rule."""
    import importlib
    import pkgutil
    import re

    from rlguard.engine.rule_api import Rule

    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if re.fullmatch(r"rlg\d{3}_\w+", info.name):
            module = importlib.import_module(f"{__name__}.{info.name}")
            rules = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Rule) and v is not Rule
                     and v.__module__ == module.__name__]
            if len(rules) != 1:
                raise ImportError(f"{module.__name__} must define exactly one rule, found {len(rules)}")
            found.append(rules[0])
    codes = [rule.code for rule in found]
    if len(set(codes)) != len(codes):
        raise ImportError(f"rule codes are defined twice: {sorted(c for c in set(codes) if codes.count(c) > 1)}")
    return tuple(found)


def __getattr__(name: str) -> Any:
    """``RULES`` and ``RULES_BY_CODE``: the rule classes, imported on first use."""
    if name not in ("RULES", "RULES_BY_CODE"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    rules = discover()
    globals().update(RULES=rules, RULES_BY_CODE={rule.code: rule for rule in rules})
    return globals()[name]


__all__ = ["CATALOG", "ENGINE_CODES", "RULES", "RULES_BY_CODE", "TEXTS"]
