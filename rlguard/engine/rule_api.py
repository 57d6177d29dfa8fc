"""The engine's rule API: the shape every rule has, and the registry the rules package fills.

A rule is one class in one module. Its examples generate its docs page and
``rlguard explain``, and are its first tests. Rules report; they never print.
The engine runs rules through this interface and never imports ``rlguard.rules``: the rules
package registers its catalog (``rlguard.engine.rule_info``) when it is imported, and the engine
loads a rule's class only when a file needs its visitor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar
from collections.abc import Mapping

from rlguard.engine.rule_info import Option

__all__ = ["Example", "Option", "Report", "Rule"]

if TYPE_CHECKING:
    from rlguard.engine.lazy import cst

    from rlguard.engine.context import FileContext
    from rlguard.engine.findings import Breaks, Fix, Requirement
    from rlguard.engine.index import ProjectIndex
    from rlguard.engine.prefilter import TokenGroups

@dataclass(frozen=True)
class Example:
    """A snippet for docs and tests. For invalid examples, ``fixed`` is the code after the fix."""

    code: str
    fixed: str | None = None
    unsafe: bool = False  # the fix needs --unsafe-fixes
    target: str | None = None  # torchrl version to judge with ("0.10"), or a pin's specifier (">=0.11"); default: newest known
    options: Mapping[str, Any] = field(default_factory=dict)  # this rule's options
    files: Mapping[str, str] = field(default_factory=dict)  # other files of the project, by relative path
    message: str | None = None  # a substring the finding's message must contain
    note: str = ""  # one line shown above the example in the docs


@dataclass
class Report:
    """One finding as a rule made it: the node, not yet a position."""

    node: cst.CSTNode
    message: str
    fix: Fix | None
    requires: tuple[Requirement, ...]
    remedy: str = ""
    breaks: Breaks | None = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line: what it does
    what: ClassVar[str] = ""  # markdown: what it does, at length; the docs fall back on the summary
    why: ClassVar[str]  # markdown: why is this bad
    fix_doc: ClassVar[str]  # markdown: the fix and its safety
    options: ClassVar[tuple[Option, ...]] = ()
    min_target: ClassVar[tuple[int, ...] | None] = None  # the rule applies from this torchrl on
    # Pre-filter: every group must have one of its tokens in the file text, or the rule cannot fire
    # (a token that is a tuple of strings is in the text when all of them are).
    tokens: ClassVar[TokenGroups] = ()
    # Token group ``class_group`` is also met by a class whose bases name one of these classes, or
    # (textually, through any linted file) a subclass of one.
    class_roots: ClassVar[frozenset[str]] = frozenset()
    class_group: ClassVar[int] = 0
    # False: the rule has nothing to say inside a copy of torchrl or tensordict (``in_library_copy``),
    # so the engine never runs it, nor parses such a file for it.
    library_copies: ClassVar[bool] = True
    # True only for the rule that removes compatibility code for versions the pin no longer admits:
    # every other rule's fix is withheld inside a branch that runs on other torchrl versions.
    rewrites_compat_code: ClassVar[bool] = False
    # Calls whose first argument must hold nothing the rule looks for (qualified name -> keywords that
    # make such a call safe, ``default=`` for a JSON encoder). The engine summarises which parameters of
    # each function reach one (``FunctionFacts.flows``), so a rule can judge what a caller passes.
    sinks: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    # (trigger, groups): a file that does not meet ``tokens`` is still checked when its text holds
    # ``trigger`` (any file: ""), or, for an int, meets the rule's token group of that index (its class
    # condition included), and its imports reach a project function or class whose text meets
    # ``groups``, itself or through what it calls (``engine.callers``): the sink, or the value, is in
    # another file.
    through_imports: ClassVar[tuple[str | int, TokenGroups] | None] = None
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
        breaks: Breaks | None = None,
    ) -> None:
        """Record a finding: ``message`` says what is wrong and why in one short line (about 120
        characters), ``remedy`` how to fix it. With ``requires``, it stands only if the index confirms
        one of them; ``{placeholders}`` in both texts are then filled from the index's answer. With
        ``breaks``, it stands only where the node runs at a version the problem exists at (shims,
        guards and version gates are read by the engine)."""
        self.reports.append(Report(node, message, fix, requires, remedy, breaks))

    @classmethod
    def resolve(cls, requirement: Requirement, index: ProjectIndex, path: str, options: Mapping[str, Any]) -> dict[str, str] | None:
        """Answer one of this rule's requirements against the complete index, or None if it fails."""
        raise NotImplementedError(f"{cls.code} made a requirement it cannot resolve: {requirement}")

    @classmethod
    def prefilter_tokens(cls, target: tuple[int, ...]) -> TokenGroups:
        """The pre-filter groups for a target torchrl; rules whose triggers change with it narrow them."""
        return cls.tokens

    @classmethod
    def prefilter_through_imports(cls) -> tuple[str | int, TokenGroups] | None:
        """``through_imports``; rules whose groups come from data compute them."""
        return cls.through_imports

    @classmethod
    def applies_to(cls, target: tuple[int, ...]) -> bool:
        return cls.min_target is None or target >= cls.min_target

    @classmethod
    def default_options(cls) -> dict[str, Any]:
        return {option.name: option.default for option in cls.options}
