"""The engine's rule API: the shape every rule has, and the registry the rules package fills.

A rule is one class in one module. Its examples generate its docs page and
``rlguard explain``, and are its first tests. Rules report; they never print.
The engine runs rules through this interface and never imports ``rlguard.rules``: the rules
package registers its catalog here when it is imported (by the command line, or a caller).
The catalog is each rule's metadata (``RuleInfo``), read from a generated file: a run selects,
configures and pre-filters rules without importing them, and imports a rule's module only when
a file needs its visitor.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar
from collections.abc import Iterable, Mapping

if TYPE_CHECKING:
    from rlguard.engine.lazy import cst

    from rlguard.engine.context import FileContext
    from rlguard.engine.findings import Fix, Requirement
    from rlguard.engine.index import ProjectIndex

TokenGroups = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Example:
    """A snippet for docs and tests. For invalid examples, ``fixed`` is the code after the fix."""

    code: str
    fixed: str | None = None
    unsafe: bool = False  # the fix needs --unsafe-fixes
    target: str | None = None  # torchrl version to judge with; default: newest known
    options: Mapping[str, Any] = field(default_factory=dict)  # this rule's options
    files: Mapping[str, str] = field(default_factory=dict)  # other files of the project, by relative path
    message: str | None = None  # a substring the finding's message must contain
    note: str = ""  # one line shown above the example in the docs


@dataclass(frozen=True)
class Option:
    name: str
    kind: type  # list, str, int or bool
    default: Any
    description: str


@dataclass
class Report:
    """One finding as a rule made it: the node, not yet a position."""

    node: cst.CSTNode
    message: str
    fix: Fix | None
    requires: tuple[Requirement, ...]
    remedy: str = ""


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line: what it does
    what: ClassVar[str] = ""  # markdown: what it does, at length; the docs fall back on the summary
    why: ClassVar[str]  # markdown: why is this bad
    fix_doc: ClassVar[str]  # markdown: the fix and its safety
    options: ClassVar[tuple[Option, ...]] = ()
    min_target: ClassVar[tuple[int, ...] | None] = None  # the rule applies from this torchrl on
    # Pre-filter: every group must have one of its tokens in the file text, or the rule cannot fire.
    tokens: ClassVar[tuple[tuple[str, ...], ...]] = ()
    # Token group ``class_group`` is also met by a class whose bases name one of these classes, or
    # (textually, through any linted file) a subclass of one.
    class_roots: ClassVar[frozenset[str]] = frozenset()
    class_group: ClassVar[int] = 0
    valid: ClassVar[tuple[Example, ...]] = ()
    invalid: ClassVar[tuple[Example, ...]] = ()

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.reports: list[Report] = []

    @property
    def settings(self) -> Mapping[str, Any]:
        return self.ctx.options.get(self.code, {})

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        remedy: str = "",
        fix: Fix | None = None,
        requires: tuple[Requirement, ...] = (),
    ) -> None:
        """Record a finding: ``message`` says what is wrong and why in one short line (about 120
        characters), ``remedy`` how to fix it. With ``requires``, it stands only if the index confirms
        one of them; ``{placeholders}`` in both texts are then filled from the index's answer."""
        self.reports.append(Report(node, message, fix, requires, remedy))

    @classmethod
    def resolve(cls, requirement: Requirement, index: ProjectIndex, path: str, options: Mapping[str, Any]) -> dict[str, str] | None:
        """Answer one of this rule's requirements against the complete index, or None if it fails."""
        raise NotImplementedError(f"{cls.code} made a requirement it cannot resolve: {requirement}")

    @classmethod
    def prefilter_tokens(cls, target: tuple[int, ...]) -> tuple[tuple[str, ...], ...]:
        """The pre-filter groups for a target torchrl; rules whose triggers change with it narrow them."""
        return cls.tokens

    @classmethod
    def applies_to(cls, target: tuple[int, ...]) -> bool:
        return cls.min_target is None or target >= cls.min_target

    @classmethod
    def default_options(cls) -> dict[str, Any]:
        return {option.name: option.default for option in cls.options}


class RuleInfo:
    """What the engine knows of a rule before loading it: its metadata, and where its class lives.

    It answers as the rule class does (``applies_to``, ``prefilter_tokens``, ``default_options``);
    ``load`` imports the rule's module. It pickles as data, so workers get it whatever their start method.
    """

    __slots__ = ("code", "name", "summary", "options", "min_target", "token_steps", "class_roots", "class_group",
                 "module", "qualname")

    def __init__(self, code: str, name: str, summary: str, options: tuple[Option, ...],
                 min_target: tuple[int, ...] | None, token_steps: tuple[tuple[tuple[int, ...], TokenGroups], ...],
                 class_roots: frozenset[str], class_group: int, module: str, qualname: str) -> None:
        self.code, self.name, self.summary, self.options = code, name, summary, options
        self.min_target, self.class_roots, self.class_group = min_target, class_roots, class_group
        # (lowest target, groups) pairs in ascending order: the pre-filter groups from that version on.
        self.token_steps = token_steps
        self.module, self.qualname = module, qualname

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


_REGISTRY: dict[str, RuleInfo] = {}


def register_rules(rules: Iterable[RuleInfo]) -> None:
    """Called by the rules package on import with its catalog; codes are unique."""
    for rule in rules:
        known = _REGISTRY.setdefault(rule.code, rule)
        if (known.module, known.qualname) != (rule.module, rule.qualname):
            raise ImportError(f"rule code {rule.code} is defined twice ({known.module}, {rule.module})")


def registered_rules() -> tuple[RuleInfo, ...]:
    """Every registered rule's metadata, by code."""
    return tuple(_REGISTRY[code] for code in sorted(_REGISTRY))
