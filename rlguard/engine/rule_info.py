"""The rule catalog: what the engine knows of each rule before loading it.

Selecting, configuring and pre-filtering rules needs only their metadata (code, name, options,
the torchrl versions they apply to, their pre-filter tokens). The rules package reads it from a
generated file (``rlguard.rules.CATALOG``), and the configuration hands it to the engine
(``Config.rules``): the engine keeps no registry of its own. A run imports a rule's module, and
libcst, only for a file that needs the rule's visitor. This module imports no dataclass machinery:
a run served from the cache pays for as little as it can.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rlguard.engine.prefilter import TokenGroups
    from rlguard.engine.rule_api import Rule


class Option(NamedTuple):
    """One setting of a rule, under ``[tool.rlguard.rules.CODE]``."""

    name: str
    kind: type  # list, str, int or bool
    default: Any
    description: str


class RuleInfo:
    """What the engine knows of a rule before loading it: its metadata, and where its class lives.

    It answers as the rule class does (``applies_to``, ``prefilter_tokens``, ``default_options``);
    ``load`` imports the rule's module. It pickles as data, so workers get it whatever their start method.
    """

    __slots__ = ("code", "name", "summary", "options", "min_target", "token_steps", "class_roots", "class_group",
                 "module", "qualname", "library_copies", "sinks", "through_imports")

    def __init__(self, code: str, name: str, summary: str, options: tuple[Option, ...],
                 min_target: tuple[int, ...] | None, token_steps: tuple[tuple[tuple[int, ...], TokenGroups], ...],
                 class_roots: frozenset[str], class_group: int, module: str, qualname: str,
                 library_copies: bool = True, sinks: dict[str, tuple[str, ...]] | None = None,
                 through_imports: tuple[str | int, TokenGroups] | None = None) -> None:
        self.code, self.name, self.summary, self.options = code, name, summary, options
        self.min_target, self.class_roots, self.class_group = min_target, class_roots, class_group
        # (lowest target, groups) pairs in ascending order: the pre-filter groups from that version on.
        self.token_steps = token_steps
        self.module, self.qualname = module, qualname
        self.library_copies = library_copies  # False: never run in a copy of torchrl or tensordict
        self.sinks = sinks or {}  # see ``Rule.sinks``
        self.through_imports = through_imports  # see ``Rule.through_imports``

    def __repr__(self) -> str:
        return f"RuleInfo({self.code} {self.name})"

    def applies_to(self, target: tuple[int, ...]) -> bool:
        return self.min_target is None or target >= self.min_target

    def prefilter_tokens(self, target: tuple[int, ...]) -> TokenGroups:
        groups: TokenGroups = ()
        for since, step in self.token_steps:
            if target >= since:
                groups = step
        return groups

    def default_options(self) -> dict[str, Any]:
        return {option.name: option.default for option in self.options}

    def load(self) -> type[Rule]:
        """The rule class (its module is imported on first use)."""
        rule = getattr(importlib.import_module(self.module), self.qualname)
        if rule.code != self.code:
            raise ImportError(f"the rule catalog is stale: {self.module}.{self.qualname} is {rule.code}, not {self.code}")
        return rule


def declared_sinks(rules: Iterable[RuleInfo]) -> dict[str, tuple[str, ...]]:
    """The sinks (``Rule.sinks``) of every rule the configuration knows, whatever rules a run selects:
    the facts the engine keeps about them are then the same in every run, so the cache serves any selection."""
    return {name: escapes for rule in rules for name, escapes in rule.sinks.items()}
