"""The visitor RLG006 and RLG007 share: uses of torchrl and tensordict APIs that the target removed.

Both read one table (``data.REMOVED_API``, generated from the real wheels). RLG006 owns the collector
names, RLG007 everything else, so a use is reported once. Each import or use site is one finding.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Applicability, Breaks, Edit, Fix, Requirement
from rlguard.engine.index import Built, ProjectIndex
from rlguard.engine.annotations import ForwardReference, forward_references
from rlguard.engine.names import dotted_name, loaded_names, module_of_import_from
from rlguard.engine.prefilter import Token, TokenGroups
from rlguard.engine.target import version_text
from rlguard.engine.traversal import iter_nodes
from rlguard.rules import changed_defaults, value_heads
from rlguard.rules.base import Option, Rule
from rlguard.rules.data import (CHANGED_DEFAULTS, FORWARDED_KEYWORDS, MEMBER_HOLDERS, MODULE_METHODS_RETURNING_SELF,
                                REMOVED_API, ApiChange, ChangedDefault)
from rlguard.rules.removed_api_calls import (dict_key_rename, keyword_rename, last_module, operator_rewrite, string_keys,
                                             wrapper_rewrite)
from rlguard.rules.removed_api_envs import call_instead, nested_outputs
from rlguard.engine.reach import may_derive_from
from rlguard.engine.class_lookup import may_be_project

# The class a wrapper's rewrite puts the policy and the module in, by rewrite kind: the policy before an
# exploration module, or the wrapped network before the module that does the rest of the old wrapper's work.
SEQUENTIALS = {"policy-then-module": ("tensordict.nn", "TensorDictSequential"),
               "operator-then-module": ("torch.nn", "Sequential")}
SEQUENTIAL = SEQUENTIALS["policy-then-module"]

PREVIEW = Option("preview", bool, False,
                 "Also flag names deprecated at the target but not yet removed, saying which version removes them.")


@dataclass(frozen=True)
class WrapperValue(Requirement):
    """The value ``built`` describes is an instance of the torchrl class named ``wrapper``, followed through
    the project's factories (``ProjectIndex.value_class``): ``explore`` in ``model, explore = make_agent()``."""

    built: Built
    wrapper: str  # the short name: the class is spelled through any of torchrl's modules


@dataclass(frozen=True)
class ClassUsedVia(Requirement):
    """One of the project modules ``modules`` imports one of torchrl's ``classes``."""

    modules: tuple[str, ...]
    classes: tuple[str, ...]


@dataclass(frozen=True)
class DerivesFrom(Requirement):
    """The project class ``qualname`` derives from the class ``root`` of ``package`` (any of its modules)."""

    qualname: str
    root: str
    package: str


def _roots(root: str, package: str) -> Callable[[str], bool]:
    return lambda qualname: qualname.split(".")[0] == package and qualname.rpartition(".")[2] == root


def _necessary_text(change: ApiChange) -> Token:
    """What any use of ``change`` this visitor can match spells out. A name is matched by its
    qualified name, resolved through this file's own imports, so the text holds both the name and
    its module's last part (``return_types`` and ``max``: ``max`` alone is in half of all files).
    A method or keyword is matched through its owner's or callable's name, which the text holds too."""
    parts = change.name.split(".")
    if change.kind == "member":  # spelled through any of the enum's names
        return parts[-1]
    if change.kind == "key":  # ``specs["input_spec"]["action"]``: the container and the key
        return tuple(parts[1:])
    if change.kind == "positional":  # passed by position: only the callable is spelled
        return parts[0]
    if change.kind in ("setter", "returns"):  # ``self.device = d`` in a subclass: the base class (or, through
        return tuple(parts)  # ``class_roots``, a class deriving from it) and the attribute
    if change.kind == "name":
        parts.append(change.module.rpartition(".")[2])
    unique = tuple(dict.fromkeys(parts))
    return unique[0] if len(unique) == 1 else unique


class _Table(NamedTuple):
    """A rule's part of the removed-API table, indexed the ways its visitors ask (read only)."""

    names: dict[str, ApiChange]  # qualified name -> its change (kind "name")
    by_short: dict[str, list[ApiChange]]  # a name's last part -> its changes
    members: list[ApiChange]  # removed methods and keywords
    methods: dict[str, list[ApiChange]]  # a removed method's name -> its changes
    keywords: dict[str, list[ApiChange]]  # class or function name -> its keyword changes
    enum_members: list[ApiChange]
    spec_keys: dict[tuple[str, ...], ApiChange]  # (container, key)
    # A class's keyword changes reach the old names renamed to it: ``BoundedTensorSpec(minimum=0)``
    # becomes ``Bounded(minimum=0)`` with its rename, which ``Bounded`` refuses.
    renamed_to: dict[str, set[str]]
    modules: dict[str, ApiChange]
    positionals: dict[str, list[ApiChange]]  # callable name -> its parameters made keyword-only
    defaults: dict[str, list[ChangedDefault]]  # class name -> its changed defaults
    setters: dict[str, list[ApiChange]]  # attribute -> the classes whose setter refuses it
    returns: dict[str, ApiChange]  # method -> its change


_TABLES: dict[str, _Table] = {}  # by rule code


def _table_for(rule: type[RemovedApiRule]) -> _Table:
    table = _TABLES.get(rule.code)
    if table is None:
        table = _TABLES[rule.code] = _build_table(rule)
    return table


def _build_table(rule: type[RemovedApiRule]) -> _Table:
    owned = [c for c in REMOVED_API if rule.owns(c)]
    names = {c.qualname: c for c in owned if c.kind == "name"}
    members = [c for c in owned if c.kind in ("method", "keyword")]
    renamed_to: dict[str, set[str]] = {}
    for change in REMOVED_API:
        if change.kind == "name" and change.fix != "none" and change.new_name and change.new_name != change.name:
            renamed_to.setdefault(change.new_name, set()).add(change.name)
    defaults: dict[str, list[ChangedDefault]] = {}
    for default in CHANGED_DEFAULTS if rule.judges_defaults else ():
        defaults.setdefault(default.cls, []).append(default)
    return _Table(
        names=names,
        by_short=_grouped(names.values(), lambda c: c.name),
        members=members,
        methods=_grouped((c for c in members if c.kind == "method"), lambda c: c.name.rpartition(".")[2]),
        keywords=_grouped((c for c in members if c.kind == "keyword"), lambda c: c.name.rpartition(".")[0]),
        enum_members=[c for c in owned if c.kind == "member"],
        spec_keys={tuple(c.name.split(".")[1:]): c for c in owned if c.kind == "key"},
        renamed_to=renamed_to,
        modules={c.qualname: c for c in owned if c.kind == "module"},
        positionals=_grouped((c for c in owned if c.kind == "positional"), lambda c: c.name.rpartition(".")[0]),
        defaults=defaults,
        setters=_grouped((c for c in owned if c.kind == "setter"), lambda c: c.name.rpartition(".")[2]),
        returns={c.name.rpartition(".")[2]: c for c in owned if c.kind == "returns"},
    )


def _grouped(changes: Iterable[ApiChange], key: Callable[[ApiChange], str]) -> dict[str, list[ApiChange]]:
    found: dict[str, list[ApiChange]] = {}
    for change in changes:
        found.setdefault(key(change), []).append(change)
    return found


class RemovedApiRule(Rule):
    """A rule over part of the removed-API table; subclasses say which part (``owns``)."""

    options: ClassVar[tuple[Option, ...]] = (PREVIEW,)
    # A vendored copy of the library (``vendor/torchrl/collectors/__init__.py``) is the library
    # itself at its own version: its imports are right for it, and renaming them breaks it.
    library_copies = False
    owns: Callable[[ApiChange], bool]
    # Reports the defaults that changed (``changed_defaults``) in files its stale references date before the
    # change. No pre-filter token of its own: such a file holds a stale reference, whose tokens let it through.
    judges_defaults: ClassVar[bool] = False
    # Reports a value head of an ``ActorValueOperator`` given to a value estimator (``value_heads``).
    judges_value_heads: ClassVar[bool] = False

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        table = _table_for(type(self))  # the same for every file: built once per rule
        self._names, self._by_short, self._members = table.names, table.by_short, table.members
        self._methods, self._keywords, self._enum_members = table.methods, table.keywords, table.enum_members
        self._spec_keys, self._renamed_to, self._modules = table.spec_keys, table.renamed_to, table.modules
        self._positionals, self._defaults = table.positionals, table.defaults
        self._setters, self._returns = table.setters, table.returns
        self._stored: set[int] = set()  # assignment targets: ``x[k] = ...`` is a write
        self._call_of: dict[int, cst.Call] = {}  # the Name a call calls -> the call
        # Imports of a removed module or of a name from one: (statement, alias or None for ``*``, change,
        # the module or name imported), reported once the walk is done.
        self._module_imports: list[tuple[cst.Import | cst.ImportFrom, cst.ImportAlias | None, ApiChange, str]] = []
        self._attribute_of: dict[int, str] = {}  # the Name ``x`` of ``x.attr`` -> ``attr``
        self._wrapper_calls: list[tuple[cst.Call, ApiChange, cst.Call | None]] = []  # + rewrite, if it fits
        self._steps: list[tuple[cst.Attribute, Built]] = []  # ``policy.step`` of a value built by a call
        self._imported: list[tuple[cst.ImportFrom, cst.ImportAlias, ApiChange, str]] = []  # + statement module
        self._uses: dict[str, list[cst.Name]] = {}  # local name -> Name nodes reading it
        self._not_uses: set[int] = set()  # Name nodes that name something else: ``x.<name>``, ``f(<name>=...)``
        self._star_sources: set[str] = set()  # modules star-imported from
        self._star_uses: list[tuple[cst.Name, ApiChange]] = []  # names that only a star import provides
        # ``module.<removed name>``, reported once the walk is done (``ctx.versions`` needs the whole file)
        self._attributes: list[tuple[cst.Attribute, ApiChange, list[Edit]]] = []
        self._exported: set[str] = set()  # names in the module's ``__all__``
        self._references: list[ForwardReference] = []  # types spelled in annotation strings
        self._default_uses: list[changed_defaults.DefaultUse] = []
        self._keys_set: set[str] = set()  # keywords of any ``.set_keys(...)`` call in the file
        self._line: cst.SimpleStatementLine | None = None  # the simple statement line being walked
        self._stale: list[tuple[cst.CSTNode, Breaks, ApiChange]] = []  # uses that fail at the target
        self._heads: list[tuple[cst.Call, Built]] = []  # ``x.get_value_head()`` calls, with what builds ``x``
        self._heads_reported: set[int] = set()  # of those, the ones reported where an estimator gets them

    @classmethod
    def prefilter_tokens(cls, target: tuple[int, ...]) -> TokenGroups:
        tokens: set[Token] = {_necessary_text(c) for c in REMOVED_API if cls.owns(c)}
        if cls.judges_value_heads:
            tokens.add(value_heads.HEAD)
        return (tuple(sorted(tokens, key=str)),)

    @classmethod
    def prefilter_through_imports(cls) -> tuple[str | int, TokenGroups] | None:
        """A wrapper another file builds, annealed here with ``.step()`` (``_flag_steps``)."""
        wrappers = sorted({c.name for c in REMOVED_API if cls.owns(c) and c.rewrite == "policy-then-module"})
        return (".step(", (tuple(wrappers),)) if wrappers else None

    @classmethod
    def resolve(cls, requirement: Requirement, index: ProjectIndex, path: str,
                options: Mapping[str, Any]) -> dict[str, str] | None:
        if isinstance(requirement, WrapperValue):
            built = index.value_class(requirement.built, path, MODULE_METHODS_RETURNING_SELF)
            return {} if built is not None and built.startswith("torchrl.") \
                and built.rpartition(".")[2] == requirement.wrapper else None
        if isinstance(requirement, DerivesFrom):
            roots = _roots(requirement.root, requirement.package)
            return {} if index.derives_from(requirement.qualname, roots, near=path) else None
        if isinstance(requirement, value_heads.ValueHead):
            return {} if value_heads.holds(requirement, index, path) else None
        if isinstance(requirement, ClassUsedVia):
            for module in requirement.modules:
                for facts in index.module_files(module, path):
                    used = sorted(q.rpartition(".")[2] for q in facts.imports.values()
                                  if q.startswith("torchrl.") and q.rpartition(".")[2] in requirement.classes)
                    if used:
                        return {"user": used[0], "module": module}
            return None
        return super().resolve(requirement, index, path, options)

    # ----- the table at the target -----
    def _state(self, change: ApiChange) -> str | None:
        """"removed" at the target, "deprecated" (reported only with ``preview``), or None."""
        target = self.ctx.target
        if change.breaks_in is not None and target >= change.breaks_in:
            return "removed"
        if self.settings.get("preview") and change.deprecated_in is not None and target >= change.deprecated_in:
            return "deprecated"
        return None

    def _change(self, qualname: str | None) -> ApiChange | None:
        change = self._names.get(qualname) if qualname else None
        return change if change is not None and self._state(change) else None

    def _flag(self, node: cst.CSTNode, change: ApiChange, texts: tuple[str, str], raises: str | None,
              fix: Fix | None = None, requires: tuple[Requirement, ...] = ()) -> None:
        """Report a use of ``change``; ``raises``: what the use raises where the API is gone. The
        engine keeps it only where the code runs at such a version and nothing catches that."""
        message, remedy = texts
        removed = self._state(change) == "removed"
        since = change.breaks_in if removed else change.deprecated_in
        raises = raises if removed and not self._only_ignored(change) else None
        breaks = Breaks(since, raises) if since is not None else None
        if removed and breaks is not None and not requires:
            self._stale.append((node, breaks, change))
        self.report(node, message, remedy=remedy, fix=fix, breaks=breaks, requires=requires)

    def _effect(self, node: cst.CSTNode, at_run_time: str) -> str:
        """What fails: ``at_run_time``, or under ``if TYPE_CHECKING:``, which never runs, the type checker."""
        if self.ctx.versions.branch(node).kind == "type-checking":
            return "a type checker fails on this import (it runs only under `TYPE_CHECKING`, never when the program runs)"
        return at_run_time

    def _message(self, change: ApiChange, effect: str) -> tuple[str, str]:
        """``effect``: what fails, e.g. "this import fails at run time"."""
        package = change.module.split(".")[0]
        old = change.name.split(".")[-1]
        if self._state(change) == "removed":
            removed = version_text(change.removed_in)
            head = f"`{old}` was removed in {package} {removed}, so {effect}"
            return head, f"{_advice(change, old)} (`{old}` is gone on every {package} from {removed} on; the target is {version_text(self.ctx.target)})"
        else:
            going = change.removed_in or change.announced_removal
            head = (f"`{old}` is deprecated since {package} {version_text(change.deprecated_in)} and "
                    + (f"goes in {version_text(going)}" if going else "upstream has not said when it goes"))
        return head, _advice(change, old)

    def _fix(self, change: ApiChange, edits: list[Edit]) -> Fix | None:
        if change.fix == "none" or not change.new_name or not edits:
            return None
        applicability: Applicability = "safe" if change.fix == "safe" else "unsafe"
        return Fix(applicability, f"Replace `{change.name}` with `{change.replacement}`", tuple(edits))

    # ----- imports -----
    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = module_of_import_from(node, self.ctx.module, self.ctx.imports.is_package)
        self._check_module_from(node, module)
        if isinstance(node.names, cst.ImportStar):
            if module is not None:
                self._star_sources.add(module)
            return
        source = self.ctx.imports.names  # already updated by the engine for this statement
        for alias in node.names:
            self._skip_names(alias)
            local = alias.evaluated_alias or alias.evaluated_name
            change = self._change(source.get(local))
            if change is not None and isinstance(alias.name, cst.Name) and module is not None:
                self._imported.append((node, alias, change, module))

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._skip_names(alias)
            dotted = dotted_name(alias.name)
            if dotted and (change := self._module_change(dotted)) is not None:
                self._module_imports.append((node, alias, change, dotted))

    def _check_module_from(self, node: cst.ImportFrom, module: str | None) -> None:
        """``from <removed module> import <any name>`` (private ones too: the import fails all the same),
        and ``from <package> import <removed module>``. A name the table lists is reported as itself."""
        if module is None or not self._modules:
            return
        removed = self._module_change(module)
        if isinstance(node.names, cst.ImportStar):
            if removed is not None:
                self._module_imports.append((node, None, removed, module))
            return
        for alias in node.names:
            qualname = self.ctx.imports.names.get(alias.evaluated_alias or alias.evaluated_name)
            if removed is not None and self._change(qualname) is None:
                self._module_imports.append((node, alias, removed, qualname or module))
            elif removed is None and qualname and (change := self._module_change(qualname)) is not None:
                self._module_imports.append((node, alias, change, qualname))

    def _module_change(self, dotted: str) -> ApiChange | None:
        """The removed module ``dotted`` is or lies in (the innermost one the table lists)."""
        parts = dotted.split(".")
        for cut in range(len(parts), 1, -1):
            change = self._modules.get(".".join(parts[:cut]))
            if change is not None and self._state(change):
                return change
        return None

    def _skip_names(self, alias: cst.ImportAlias) -> None:
        part: cst.CSTNode = alias.name
        while isinstance(part, cst.Attribute):
            self._not_uses.add(id(part.attr))
            part = part.value
        self._not_uses.add(id(part))
        if alias.asname is not None:
            self._not_uses.add(id(alias.asname.name))

    # ----- names that are not uses -----
    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._not_uses.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self._not_uses.add(id(node.name))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._stored.add(id(node.target))

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._line = node

    def visit_Assign(self, node: cst.Assign) -> None:
        self._stored.update(id(t.target) for t in node.targets)
        if self._setters:
            self._check_setters(node)
        # __all__ = ["SyncDataCollector", ...] at module level: the name is re-exported.
        if self.ctx.at_module_level and any(isinstance(t.target, cst.Name) and t.target.value == "__all__"
                                             for t in node.targets):
            if isinstance(node.value, (cst.List, cst.Tuple)):
                for element in node.value.elements:
                    if isinstance(element.value, cst.SimpleString):
                        name = element.value.evaluated_value
                        if isinstance(name, str):  # a bytes literal exports nothing
                            self._exported.add(name)

    # ----- uses -----
    def visit_Annotation(self, node: cst.Annotation) -> None:
        for reference in forward_references(node.annotation):
            self._references.append(reference)
            self._check_dotted_reference(reference)

    def _check_dotted_reference(self, reference: ForwardReference) -> None:
        """``"torchrl.collectors.SyncDataCollector"``: resolved in the annotation's own scope."""
        for part in iter_nodes(reference.expression):
            if not isinstance(part, cst.Attribute):
                continue
            change = self._change(self.ctx.qualname(part))
            if change is not None and change.found != "raises":  # a class that raises when built still names one
                edits = [Edit(reference.literal, _renamed(reference, [part.attr], change.new_name or ""))] \
                    if _same_module(change) else []
                self._flag(reference.literal, change, self._message(
                    change, f"the annotation `{dotted_name(part)}` names nothing and type checkers and "
                    "`typing.get_type_hints` fail on it"), None,
                            fix=self._fix(change, edits))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_uses.add(id(node.attr))
        if isinstance(node.value, cst.Name):
            self._attribute_of[id(node.value)] = node.attr.value
        self._check_enum_member(node)
        if node.attr.value == "step" and (built := self.ctx.built(node.value)) is not None:
            self._steps.append((node, built))
        change = self._change(self.ctx.qualname(node))
        if change is not None and change.found == "raises":
            return  # the attribute exists; its call is flagged
        if change is not None and dotted_name(node.value) is not None:
            edits = [Edit(node.attr, cst.Name(change.new_name or ""))] if _same_module(change) else []
            self._attributes.append((node, change, edits))
        elif change is None:
            self._check_member(node)

    def visit_Call(self, node: cst.Call) -> None:
        self._check_wrapper(node)
        if self._defaults:
            self._check_default(node)
        if self.judges_value_heads and self.ctx.target >= value_heads.BREAKS.since:
            self._check_value_head(node)
        if isinstance(node.func, cst.Name):
            self._call_of[id(node.func)] = node
        self._check_positional(node)
        keywords = {arg.keyword.value: arg for arg in node.args if arg.keyword is not None}
        if not keywords or not self._members:
            return
        for change in self._members:
            callable_name, _, keyword = change.name.rpartition(".")
            if change.kind == "keyword" and keyword in keywords and self._calls(node, change, callable_name) \
                    and self._state(change):
                edits = keyword_rename(node, keywords[keyword], change.replacement or "") \
                    if change.fix == "safe" and change.replacement else []
                called = (self.ctx.callee(node) or callable_name).rpartition(".")[2]
                what = f"`{callable_name}({keyword}=...)`" if called == callable_name else \
                    f"`{keyword}=` of `{callable_name}`, the class `{called}` is renamed to,"
                self._flag(keywords[keyword], change, self._member_message(change, what),
                           "TypeError", fix=self._keyword_fix(change, edits))
        self._check_forwarded(node, keywords)

    def _check_value_head(self, node: cst.Call) -> None:
        """``GAE(value_network=avo.get_value_head())``, directly, through a name, through a project function
        returning the head, or through a project callable that hands the argument to an estimator; a fix where
        the head is taken in this file. Head calls are kept for ``_flag_dated_heads``."""
        if value_heads.is_head_call(node) and isinstance(node.func, cst.Attribute):
            receiver = self.ctx.built(node.func.value)
            if receiver is not None:
                self._heads.append((node, receiver))
        project: str | None = None
        for value, slot in value_heads.sinks(node, self.ctx.callee(node)):
            built = self.ctx.built(value)
            if built is None or not value_heads.may_be_head(built):
                continue
            if slot is not None:  # asked only here: most calls pass nothing that may be a head
                project = project or self.ctx.project_callee(node)
                if project is None:
                    return
            binding = self.ctx.binding_in(value.value, {})[0] if isinstance(value, cst.Name) else None
            bound = binding.value if binding is not None and not binding.opaque and binding.unpacked is None else None
            head = value_heads.head_call(value, bound)
            if head is not None:
                self._heads_reported.add(id(head))
            self.report(value, value_heads.MESSAGE, remedy=value_heads.REMEDY + ("" if head else value_heads.ELSEWHERE),
                        fix=value_heads.fix(head) if head is not None else None,
                        breaks=value_heads.BREAKS, requires=(value_heads.ValueHead(built, project, slot),))

    def _flag_dated_heads(self) -> None:
        """In a file written for torchrl 0.1, whose estimators ran a value head on the current step's
        features, each head of an operator not already reported at an estimator: where it goes is not always
        followed (a project function returns it to its callers)."""
        heads = [(call, receiver) for call, receiver in self._heads if id(call) not in self._heads_reported]
        dated = self._dated_before(value_heads.BREAKS.since) if heads else None
        if dated is None:
            return
        message, remedy = value_heads.dated_texts(changed_defaults.written_before(
            dated, value_heads.BREAKS.since, self.ctx.target))
        for call, receiver in heads:
            self.report(call, message, remedy=remedy, fix=value_heads.fix(call), breaks=value_heads.BREAKS,
                        requires=(value_heads.ValueHead(Built("." + value_heads.HEAD, receiver=receiver)),))

    def _dated_before(self, since: tuple[int, ...]) -> ApiChange | None:
        """The stale reference standing here that dates the file before torchrl ``since`` (``changed_defaults``)."""
        versions = self.ctx.versions
        return changed_defaults.dated_before([c for node, breaks, c in self._stale if versions.stands(node, breaks)],
                                             since, self.ctx.target, self.ctx.lowest)

    def _check_default(self, node: cst.Call) -> None:
        """A call of a torchrl class whose default changed, relying on it; ``.set_keys`` calls, which set a
        loss's keys explicitly."""
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "set_keys":
            self._keys_set.update(arg.keyword.value for arg in node.args if arg.keyword is not None)
        callee = self.ctx.callee(node) or ""
        for change in self._defaults.get(callee.rpartition(".")[2], ()) if callee.startswith("torchrl.") else ():
            if change.kind == "parameter" and changed_defaults.relies_on_default(node, change):
                self._default_uses.append(changed_defaults.DefaultUse(node, change))
            elif change.kind == "tensor-key":
                target = changed_defaults.assigned_target(self._line, node)
                self._default_uses.append(changed_defaults.DefaultUse(node, change, self._line, target))

    def _flag_changed_defaults(self) -> None:
        """Each use relying on a default that changed, in a file its stale references date before the change."""
        for use in self._default_uses:
            change = use.change
            dated = self._dated_before(change.changed_in)
            if dated is None or (change.kind == "tensor-key" and change.name in self._keys_set):
                continue
            message, remedy = changed_defaults.texts(use, dated, self.ctx.target)
            self.report(use.call, message, remedy=remedy, fix=changed_defaults.fix(use), breaks=Breaks(change.changed_in))

    def _check_positional(self, node: cst.Call) -> None:
        """``SoftUpdate(loss_module, 0.99)`` where ``eps`` became keyword-only: the argument gets its name."""
        callee = self.ctx.callee(node)
        short = callee.rpartition(".")[2] if callee else \
            node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        changes = self._positionals.get(short or "", ())
        positional: list[cst.Arg] = []
        for arg in node.args if changes else ():
            if arg.keyword is not None or arg.star == "**":
                break
            if arg.star == "*":
                return  # where the arguments after it land is not known
            positional.append(arg)
        for change in changes:
            if change.position >= len(positional) or not self._state(change) or not self._calls(node, change, short or ""):
                continue
            parameter, arg = change.name.rpartition(".")[2], positional[change.position]
            named = arg.with_changes(keyword=cst.Name(parameter), equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
            fix = None if any(a.keyword is not None and a.keyword.value == parameter for a in node.args) else \
                Fix("safe", f"Pass `{parameter}=` by name", (Edit(arg, named),))
            package = change.module.split(".")[0]
            self._flag(arg, change, (f"`{short}` takes `{parameter}` only by name since {package} "
                                     f"{version_text(change.removed_in)}, so passing it by position raises TypeError "
                                     f"(the target is {version_text(self.ctx.target)})", f"pass it as `{parameter}=...`"),
                       "TypeError", fix=fix)

    def _keyword_fix(self, change: ApiChange, edits: list[Edit]) -> Fix | None:
        keyword = change.name.rpartition(".")[2]
        return Fix("safe", f"Rename `{keyword}=` to `{change.replacement}=`", tuple(edits)) if edits else None

    def _check_forwarded(self, node: cst.Call, keywords: dict[str, cst.Arg]) -> None:
        """``distribution_kwargs={"min": ...}`` beside ``distribution_class=TanhNormal``: the dict's keys
        are keywords of that class, renamed only inside the literal passed to that argument."""
        callee = self.ctx.callee(node)
        if callee is None or callee.split(".")[0] not in ("torchrl", "tensordict"):
            return
        for class_argument, kwargs_argument in FORWARDED_KEYWORDS:
            if class_argument not in keywords or kwargs_argument not in keywords:
                continue
            # The literal itself, or the one a name passed there was bound to (``kwargs = {...}``): that
            # dict may be read elsewhere too, so its keys' fix is unsafe.
            passed = keywords[kwargs_argument].value
            literal = self.ctx.value_of(passed)
            target = self.ctx.qualname(self.ctx.value_of(keywords[class_argument].value))
            if not isinstance(literal, cst.Dict) or target is None:
                continue
            applicability: Applicability = "safe" if literal is passed else "unsafe"
            short = target.rpartition(".")[2]
            for change in self._keywords.get(short, ()):
                key_name = change.name.rpartition(".")[2]
                if change.module.split(".")[0] != target.split(".")[0] or not self._state(change):
                    continue
                for key, key_node in string_keys(literal):
                    if key == key_name:
                        edits = dict_key_rename(literal, key_node, change.replacement or "") \
                            if change.fix == "safe" and change.replacement else []
                        what = f"`{kwargs_argument}={{\"{key}\": ...}}` (a `{short}` keyword)"
                        fix = Fix(applicability, f"Rename the key `{key}` to `{change.replacement}`", tuple(edits)) \
                            if edits else None
                        self._flag(key_node, change, self._member_message(change, what), "TypeError", fix=fix)

    def _check_wrapper(self, node: cst.Call) -> None:
        """A call of a policy wrapper whose constructor only raises: rewritten as the policy followed by
        the module that replaced it, when the call fits (``wrapper_rewrite``)."""
        change = self._change(self.ctx.callee(node))
        if change is None or (change.found != "raises" and not change.rewrite) or self._state(change) != "removed":
            return
        rewrite = {"policy-then-module": wrapper_rewrite, "operator-then-module": operator_rewrite}.get(change.rewrite)
        rewritten = rewrite(node, change, SEQUENTIALS[change.rewrite][1], change.new_name or "") if rewrite else None
        self._wrapper_calls.append((node, change, rewritten))

    def _calls(self, call: cst.Call, change: ApiChange, callable_name: str) -> bool:
        """The call reaches ``callable_name`` of the change's package: a function or class by its
        qualified name, or a method of a value built from the change's class."""
        package = change.module.split(".")[0]
        callee = self.ctx.callee(call)
        if callee is not None:
            called = callee.rpartition(".")[2]
            return (called == callable_name or called in self._renamed_to.get(callable_name, ())) \
                and callee.startswith(package + ".")
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == callable_name:
            return self._receiver_class(call.func.value, change)
        return False

    def _receiver_class(self, receiver: cst.BaseExpression, change: ApiChange) -> bool:
        built = self.ctx.built(receiver)
        owner = change.module.rpartition(".")[2]
        return built is not None and built.callee.rpartition(".")[2] == owner \
            and built.callee.startswith(change.module.split(".")[0] + ".")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """``specs["input_spec"]["action"]`` or ``env.output_spec["observation"]``: a key of an environment
        spec container that moved, in a file that imports torchrl. A read is rewritten to the new keys (a
        nested key, which Composite reads as the chain); a write is only flagged: the container is locked."""
        if not self._spec_keys:
            return
        key = _string_index(node)
        inner = node.value
        container = _string_index(inner) if isinstance(inner, cst.Subscript) else \
            inner.attr.value if isinstance(inner, cst.Attribute) else None
        change = self._spec_keys.get((container or "", key or ""))
        if change is None or not self._state(change) \
                or not any(q.split(".")[0] == "torchrl" for q in self.ctx.imports.names.values()):
            return
        literal = node.slice[0].slice.value  # type: ignore[attr-defined]  # a string, by ``_string_index``
        path = [cst.SimpleString(f"{literal.prefix}{literal.quote}{k}{literal.quote}") for k in change.path]
        new: cst.BaseExpression = path[0] if len(path) == 1 else \
            cst.Tuple([cst.Element(k) for k in path], lpar=[], rpar=[])
        stored = id(node) in self._stored
        fix = Fix("safe", f"Read `{', '.join(change.path)}` of `{container}`", (Edit(literal, new),)) \
            if change.fix == "safe" and not stored else None
        spelled = "][".join(f'"{k}"' for k in change.path)
        self._flag(node, change, (
            f"`{container}[\"{key}\"]` is gone from torchrl {version_text(change.removed_in)}: the key moved (the target is "
            f"{version_text(self.ctx.target)})",
            f"read `{container}[{spelled}]`, which holds what `{key}` held"
            + (f" (`env.{(change.replacement or '').rpartition('.')[2]}` reads it too)"
               if len(change.path) == 1 and change.replacement else "")
            + ("; `env.<name>_spec = ...` sets a spec: the container is locked" if stored else "")),
            "KeyError", fix=fix)

    # ----- environments -----
    def _check_setters(self, node: cst.Assign) -> None:
        """``self.device = d`` in a class that may derive from the class whose property now refuses every
        value (torchrl's ``EnvBase``; the index decides): rewritten as the call upstream's message names
        (``self.to(d)``), or as an assignment of the property that now holds what it held (``state_spec``)."""
        cls = self.ctx.current_class
        for target in node.targets:
            if isinstance(target.target, cst.Attribute) and self.ctx.is_self_attr(target.target) is None:
                self._check_instance_setter(target.target)
        if cls is None:
            return
        for target in node.targets:
            attr = self.ctx.is_self_attr(target.target)
            for change in self._setters.get(attr or "", ()):
                owner, package = change.name.rpartition(".")[0], change.module.split(".")[0]
                if not self._state(change) or self._first_value(node, attr or "", change) \
                        or not may_derive_from(self.ctx.facts.classes, cls.qualname, _roots(owner, package)):
                    continue
                assert isinstance(target.target, cst.Attribute)  # ``is_self_attr``
                self._flag(target.target, change, self._setter_message(change, attr or ""), "RuntimeError",
                           fix=self._setter_fix(node, target.target, change),
                           requires=(DerivesFrom(cls.qualname, owner, package),))
                break

    def _check_instance_setter(self, target: cst.Attribute) -> None:
        """``env.input_spec = spec`` where ``env`` was built by the class (``TransformedEnv(...)``) or by a
        project class deriving from it. A setter that takes a first value (``once``) is left alone: whether
        the constructor stored one is not known here."""
        built = self.ctx.built(target.value)
        for change in self._setters.get(target.attr.value, ()) if built is not None else ():
            owner, package = change.name.rpartition(".")[0], change.module.split(".")[0]
            assert built is not None
            callee = built.callee
            own = callee.rpartition(".")[2] == owner and callee.split(".")[0] == package
            if change.once or not self._state(change) or not (own or may_be_project(callee)):
                continue
            head, remedy = self._setter_message(change, target.attr.value)
            receiver = dotted_name(target.value) or "the environment"
            self._flag(target, change, (head.replace("`self.", f"`{receiver}.", 1), remedy.replace("`self.", f"`{receiver}.")),
                       "RuntimeError", fix=self._setter_fix(None, target, change),
                       requires=() if own else (DerivesFrom(callee, owner, package),))
            break

    def _first_value(self, node: cst.Assign, attr: str, change: ApiChange) -> bool:
        """The setter takes a first value, before the constructor stores one (``once``), and this is it: an
        assignment in ``__init__`` with no ``super().__init__(<attr>=...)`` before it (which stores one)."""
        method = self.ctx.current_method()
        if not change.once or method is None or method.name.value != "__init__":
            return False
        for found in iter_nodes(method.body):
            if isinstance(found, cst.Assign) and any(self.ctx.is_self_attr(t.target) == attr for t in found.targets):
                return found is node  # an earlier assignment took the first value
            if isinstance(found, cst.Call) and isinstance(found.func, cst.Attribute) \
                    and found.func.attr.value == "__init__" and isinstance(found.func.value, cst.Call) \
                    and dotted_name(found.func.value.func) == "super" \
                    and any(a.keyword is not None and a.keyword.value == attr and dotted_name(a.value) != "None"
                            for a in found.args):
                return False
        return True

    def _setter_message(self, change: ApiChange, attr: str) -> tuple[str, str]:
        owner, package = change.name.rpartition(".")[0], change.module.split(".")[0]
        head = (f"`self.{attr} = ...` raises RuntimeError since {package} {version_text(change.removed_in)}: "
                f"`{owner}`'s setter refuses it (the target is {version_text(self.ctx.target)})")
        new = change.new_name
        if change.rewrite == "call":
            remedy = (f"call `self.{new}(...)` instead, as upstream's message says (with a value that may be None, "
                      f"which the old attribute took and `{new}` refuses, under `if value is not None:`)")
        elif new:
            remedy = f"set `self.{new}` instead"
        else:
            remedy = "upstream names no replacement"
        if change.once:
            remedy += " (the setter takes only a first value, before the constructor stores one)"
        return head, remedy + (f"; {change.note}" if change.note else "")

    def _setter_fix(self, node: cst.Assign | None, target: cst.Attribute, change: ApiChange) -> Fix | None:
        new = change.new_name
        if change.fix == "none" or not new:
            return None
        if change.rewrite == "call":
            if node is None:
                return None
            edit = call_instead(self._line, node, target, new, not self._not_none(node.value)) \
                if self._line is not None else None
            return Fix("unsafe", f"Call `.{new}(...)`", (edit,)) if edit is not None else None
        return Fix("unsafe", f"Set `{new}`", (Edit(target.attr, cst.Name(new)),))

    def _not_none(self, value: cst.BaseExpression) -> bool:
        """A string literal or a ``torch.device(...)`` call: never None, which the old attribute took
        (``td.device`` of a TensorDict built without one) and ``to`` refuses."""
        value = self.ctx.value_of(value)
        return isinstance(value, (cst.SimpleString, cst.FormattedString)) or (
            isinstance(value, cst.Call) and self.ctx.callee(value) == "torch.device")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """``_step`` of a class that may derive from ``EnvBase`` returning ``TensorDict({"next": {...}})``."""
        change = self._returns.get(node.name.value)
        cls = self.ctx.current_class
        if change is None or cls is None or not self._state(change) or not change.path \
                or not (self.ctx.in_class_body() or self.ctx.current_method() is node):
            return
        owner, package = change.name.rpartition(".")[0], change.module.split(".")[0]
        if not may_derive_from(self.ctx.facts.classes, cls.qualname, _roots(owner, package)):
            return
        key = change.path[0]
        literals, edits = nested_outputs(node, key)
        if not literals:
            return
        method = node.name.value
        fix = Fix("unsafe", f"Return the entries at the root, not under \"{key}\"", tuple(edits)) if edits else None
        remedy = (f"return the entries at the root (the literal without its \"{key}\" level) and read them there: "
                  f"`out[\"{key}\"]` becomes `out`")
        if edits is None:
            remedy += f" (not rewritten: the function reads what it returns otherwise than under \"{key}\")"
        self._flag(literals[0], change, (
            f"`{method}` output under \"{key}\": `step` nests it since {package} {version_text(change.removed_in)}, so "
            f"keys land under (\"{key}\", \"{key}\") (target {version_text(self.ctx.target)})", remedy), None, fix=fix, requires=(DerivesFrom(cls.qualname, owner, package),))

    def _check_enum_member(self, node: cst.Attribute) -> None:
        """``ExplorationType.MODE`` in a file that uses a class the member raises with (``TanhNormal``), or
        that imports from a project module that does (the actor is built there: ``make_ppo_models``)."""
        for change in self._enum_members:
            enum, _, member = change.name.rpartition(".")
            qualname = self.ctx.qualname(node) or ""
            owner = qualname.rpartition(".")[0]
            if node.attr.value != member or owner.rpartition(".")[2] not in change.aliases \
                    or owner.split(".")[0] not in ("torchrl", "tensordict") or not self._state(change):
                continue
            users = sorted({q.rpartition(".")[2] for q in self.ctx.imports.names.values()
                            if q.split(".")[0] == "torchrl" and q.rpartition(".")[2] in change.with_classes})
            requires: tuple[Requirement, ...] = ()
            who = f"`{users[0]}`" if users else "`{user}` (which `{module}` imports)"  # filled by ``resolve``
            if not users:
                modules = self._project_modules()
                if not modules:
                    continue
                requires = (ClassUsedVia(modules, change.with_classes),)
            new = (change.replacement or "").rpartition(".")[2]
            fix = Fix("unsafe", f"Use `{new}`", (Edit(node.attr, cst.Name(new)),)) if new else None
            self._flag(node, change, (f"`{enum.rpartition('.')[2]}.{member}` raises with {who} since torchrl "
                                      f"{version_text(change.removed_in)} (the target is {version_text(self.ctx.target)})",
                                      f"use `{new}`, as upstream's message says"), "RuntimeError", fix=fix,
                       requires=requires)

    def _project_modules(self) -> tuple[str, ...]:
        """The modules this file imports names from, or imports, that may be the project's own: not the
        standard library's, torch's, torchrl's or tensordict's (the index finds which are on disk)."""
        modules: dict[str, None] = {}
        for qualname in self.ctx.imports.names.values():
            for module in (qualname, qualname.rpartition(".")[0]):
                top = module.split(".")[0]
                if module and top not in ("torch", "torchrl", "tensordict") and top not in sys.stdlib_module_names:
                    modules[module] = None
        return tuple(modules)

    def _check_member(self, node: cst.Attribute) -> None:
        for change in self._methods.get(node.attr.value, ()):
            owner, _, method = change.name.rpartition(".")
            if self._state(change) \
                    and (self._built_by(node.value, change, owner) or self._held(node.value, change, owner)):
                fix = Fix("safe", f"Rename `.{method}` to `.{change.replacement}`",
                          (Edit(node.attr, cst.Name(change.replacement or "")),)) \
                    if change.fix == "safe" and change.replacement else None
                self._flag(node, change, self._member_message(change, f"`.{method}`"), "AttributeError", fix=fix)

    def _built_by(self, receiver: cst.BaseExpression, change: ApiChange, owner: str) -> bool:
        built = self.ctx.built(receiver)
        return built is not None and built.callee.rpartition(".")[2] == owner \
            and built.callee.startswith(change.module.split(".")[0] + ".")

    def _held(self, receiver: cst.BaseExpression, change: ApiChange, owner: str) -> bool:
        """``spec.space``: an attribute through which the library's classes hold an ``owner``, in a file
        that imports from the change's package."""
        package = change.module.split(".")[0]
        return isinstance(receiver, cst.Attribute) and receiver.attr.value in MEMBER_HOLDERS.get(owner, ()) \
            and any(q.split(".")[0] == package for q in self.ctx.imports.names.values())

    def _only_ignored(self, change: ApiChange) -> bool:
        """The target is one of the releases that drop the keyword without a word, before it raises."""
        return change.ignored_in is not None and (change.removed_in is None or self.ctx.target < change.removed_in)

    def _member_message(self, change: ApiChange, what: str) -> tuple[str, str]:
        package = change.module.split(".")[0]
        use = f"use `{change.replacement}`" if change.replacement else "upstream names no replacement: remove it"
        target = version_text(self.ctx.target)
        if self._only_ignored(change):
            head = f"{what} is silently ignored from {package} {version_text(change.ignored_in)} (the target is {target})"
            use = f"the constructor takes it through `**kwargs` and drops it, so the default is used: {use}"
            if change.removed_in is not None:
                use += f"; it raises TypeError from {version_text(change.removed_in)}"
        else:
            head = f"{what} was removed in {package} {version_text(change.removed_in)} (the target is {target})"
            if change.ignored_in is not None:  # the detail goes in the remedy: the first line stays short
                use += f"; {package} {version_text(change.ignored_in)} already ignored it without a word (the default was used)"
        return head, use + (f"; {change.note}" if change.note else "")

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self._not_uses:
            return
        self._uses.setdefault(node.value, []).append(node)
        if self._star_sources and node.value in self._by_short \
                and node.value not in self.ctx.imports.names and self.ctx.lookup(node.value) is None:
            for change in self._by_short[node.value]:
                if change.module in self._star_sources and self._state(change):
                    self._star_uses.append((node, change))
                    break

    def leave_Module(self, node: cst.Module) -> None:
        self._flag_wrappers()
        self._flag_steps()
        self._flag_module_imports()
        self._leave_imports_and_uses()
        self._flag_changed_defaults()  # last: the stale references above date the file
        self._flag_dated_heads()

    def _leave_imports_and_uses(self) -> None:
        """Imports of old names with their uses, ``module.<old name>``, and names only a star import gave."""
        # Uses of a from-imported old name are renamed with its import, in one fix. Reported here:
        # whether the code runs only for a type checker is known once the walk is done.
        for statement, alias, change, module in self._imported:
            if change.found == "raises":
                continue  # the import works; each call is flagged (``_flag_wrappers``)
            effect = self._effect(alias, "this import fails at run time")
            self._flag(alias, change, self._message(change, effect), "ImportError",
                       fix=self._import_fix(statement, alias, change, module))
        for attribute, change, edits in self._attributes:
            effect = self._effect(attribute, f"`{dotted_name(attribute)}` raises AttributeError at run time")
            self._flag(attribute, change, self._message(change, effect), "AttributeError", fix=self._fix(change, edits))
        for use, change in self._star_uses:
            if change.found == "raises":
                continue  # still provided; its calls are flagged
            edits = [Edit(use, cst.Name(change.new_name or ""))] if _same_module(change) else []
            self._flag(use, change, self._message(change, "the star import no longer provides it and this name fails at run time"),
                       "NameError", fix=self._fix(change, edits))

    def _flag_module_imports(self) -> None:
        for statement, alias, change, imported in self._module_imports:
            effect = self._effect(alias or statement, "this import fails at run time")
            gone, package = change.qualname, change.module.split(".")[0]
            head = f"`{gone}` was removed in {package} {version_text(change.removed_in)}, so {effect}"
            if not change.replacement:
                remedy = "upstream names no replacement: remove or rewrite this import"
            else:
                offered = ", ".join(f"`{n}`" for n in change.provides[:4]) + (", ..." if len(change.provides) > 4 else "")
                remedy = f"import from `{change.replacement}`, which offers {offered}"
                short = imported.rpartition(".")[2]
                if imported.startswith(gone + ".") and short not in change.provides:
                    remedy += f"; it has no `{short}`: rewrite what uses it"
            remedy += f" (the target is {version_text(self.ctx.target)})"
            # ``from package import gone`` raises a plain ImportError; importing the module or from it, its subclass
            raises = "ImportError" if isinstance(statement, cst.ImportFrom) and imported == gone else "ModuleNotFoundError"
            self._flag(alias or statement, change, (head, remedy), raises,
                       fix=self._module_fix(statement, alias, change, imported))

    def _module_fix(self, statement: cst.Import | cst.ImportFrom, alias: cst.ImportAlias | None, change: ApiChange,
                    imported: str) -> Fix | None:
        """The removed module imported under a name of its own (``import m as ve``, ``from p import m``)
        becomes its replacement under that name, when each use is ``ve.<a name the replacement offers>``."""
        new = change.replacement
        if new is None or alias is None or imported != change.qualname \
                or (isinstance(statement, cst.Import) and alias.asname is None):
            return None
        local = alias.evaluated_alias or alias.evaluated_name
        if not all(self._attribute_of.get(id(use)) in change.provides for use in self._uses.get(local, [])):
            return None
        renamed = cst.ImportAlias(name=_module_expr(new), asname=cst.AsName(name=cst.Name(local)))
        if isinstance(statement, cst.Import):
            edit = Edit(alias, renamed.with_changes(comma=alias.comma))
        elif not statement.relative and len(statement.names) == 1:  # type: ignore[arg-type]
            edit = Edit(statement, cst.Import(names=[renamed]))
        else:
            return None
        return Fix("safe", f"Import `{new}` as `{local}`", (edit,))

    def _flag_wrappers(self) -> None:
        """Each call of a class whose constructor only raises, with its rewrite where it has one. When
        every call of that class in the file is rewritten, the first one's fix also moves ``.step()`` to
        the module (``policy[-1].step()``) and drops the import that only those calls used."""
        done: set[str] = set()
        for call, change, rewritten in self._wrapper_calls:
            edits: list[Edit] = []
            sequential = SEQUENTIALS.get(change.rewrite, SEQUENTIAL)
            needed = (sequential, (change.new_module or "", change.new_name or ""))
            clash = next((name for module, name in needed if not self._importable(module, name)), None)
            if rewritten is not None and clash is None:
                edits.append(Edit(call, rewritten))
                if change.qualname not in done and self._all_rewritten(change):
                    done.add(change.qualname)
                    edits += [Edit(step.value, last_module(step.value)) for step, built in self._steps
                              if self._change(built.callee) is change]
                    edits += self._unused_imports(change)
            held = "policy" if change.rewrite == "policy-then-module" else "wrapped module"
            fix = Fix("unsafe", f"Put the {held} in a `{sequential[1]}` followed by `{change.new_name}`", tuple(edits),
                      imports=needed) if edits else None
            remedy = _wrapper_remedy(change, sequential[1])
            if rewritten is None and change.rewrite:
                remedy += f" (not rewritten: the call passes something other than the {held} and the arguments " \
                          f"{change.new_name} takes)"
            elif clash is not None:
                remedy += f" (not rewritten: `{clash}` names something else in this file)"
            old, package = change.name, change.module.split(".")[0]
            head = f"`{old}(...)` raises RuntimeError since {package} {version_text(change.removed_in)}: its constructor only raises" \
                if change.found == "raises" else \
                f"`{old}` is gone from `{change.module}` since {package} {version_text(change.removed_in)}, and its class only raises"
            self._flag(call, change, (f"{head} (the target is {version_text(self.ctx.target)})", remedy),
                       "RuntimeError" if change.found == "raises" else "ImportError", fix=fix)

    def _flag_steps(self) -> None:
        """``explore.step()`` where ``explore`` is not built by a wrapper call of this file, but may be one
        through factories (``model, explore = make_agent()`` of another module, or ``Wrapper(...).to(d)``):
        the index decides. Once the wrapper is rewritten, the annealing lives on the module, the last of
        the ``TensorDictSequential``; where the wrapper is not rewritten the code fails when it is built."""
        wrappers = {c.name: c for c in self._names.values() if c.rewrite == "policy-then-module" and self._state(c) == "removed"}
        for step, built in self._steps:
            if self._change(built.callee) is not None:
                continue  # built here: moved with the wrapper's own fix (``_flag_wrappers``)
            receiver = dotted_name(step.value) or "the policy"
            for name, change in wrappers.items():
                fix = Fix("unsafe", f"Call `.step()` on the `{change.new_name}`", (Edit(step.value, last_module(step.value)),))
                self._flag(step, change, (
                    f"`{receiver}` is a `{name}`, whose constructor only raises since torchrl {version_text(change.removed_in)}: "
                    f"rewritten as `{SEQUENTIAL[1]}(policy, {change.new_name}(...))`, it has no `.step()`",
                    f"call `.step()` on the module, the last of the sequence: `{receiver}[-1].step(...)`"),
                    "RuntimeError", fix=fix, requires=(WrapperValue(built, name),))

    def _importable(self, module: str, name: str) -> bool:
        """``from module import name`` adds no clash: the file imports that class under that name already
        (from any of the package's modules), or binds and reads nothing of that name."""
        imported = self.ctx.imports.names.get(name)
        if imported is not None:
            return imported.rpartition(".")[2] == name and imported.split(".")[0] == module.split(".")[0]
        return self.ctx.lookup(name) is None and name not in self._uses

    def _all_rewritten(self, change: ApiChange) -> bool:
        return all(r is not None for _, c, r in self._wrapper_calls if c is change)

    def _unused_imports(self, change: ApiChange) -> list[Edit]:
        """Edits dropping each ``from m import <change>`` whose every use is a rewritten call."""
        calls = {id(c.func) for c, ch, r in self._wrapper_calls if ch is change and r is not None}
        edits: list[Edit] = []
        for statement, alias, imported, _ in self._imported:
            uses = self._uses.get(alias.evaluated_alias or alias.evaluated_name, [])
            if imported is change and uses and all(id(u) in calls for u in uses) \
                    and not isinstance(statement.names, cst.ImportStar):
                edits += [Edit(statement, cst.RemovalSentinel.REMOVE)] if len(statement.names) == 1 \
                    else _remove_alias(statement, alias)
        return edits

    def _import_fix(self, statement: cst.ImportFrom, alias: cst.ImportAlias, change: ApiChange,
                    module: str) -> Fix | None:
        old, new = alias.evaluated_name, change.new_name
        if new is None or change.fix == "none" or change.rewrite:
            return None  # a class whose calls are rewritten: each call's fix drops the import it no longer needs
        moved = change.new_module not in (None, module)
        if moved and statement.relative:
            return None  # the message says where it went
        uses = [Edit(use, cst.Name(new)) for use in self._uses.get(old, [])] if alias.asname is None else []
        if alias.asname is None:
            uses += self._reference_edits(old, new) + self._carried_keywords(old, new, change)
        if moved and len(statement.names) != 1:  # type: ignore[arg-type]
            return self._split_fix(statement, alias, change, uses)
        name_node = alias.name
        assert isinstance(name_node, cst.Name)
        head = [Edit(statement.module, _module_expr(change.new_module or module))] if moved and statement.module else []
        if alias.asname is None and self._reexported(old):
            kept = alias.with_changes(name=cst.Name(new), asname=cst.AsName(name=cst.Name(old)))
            return Fix("safe" if change.fix == "safe" else "unsafe",
                       f"Import `{new}` as `{old}`, which this module re-exports", (*head, Edit(alias, kept)))
        if alias.asname is None and not moved and _imports_unaliased(statement, new):
            return self._fix(change, [*_remove_alias(statement, alias), *uses])
        return self._fix(change, [*head, Edit(name_node, cst.Name(new)), *uses])

    def _carried_keywords(self, old: str, new: str, change: ApiChange) -> list[Edit]:
        """The keyword renames ``new`` needs in each call of ``old`` (``minimum=`` -> ``low=``), made with
        the rename: without them the renamed call fails where the old one only warned."""
        edits: list[Edit] = []
        for use in self._uses.get(old, []):
            call = self._call_of.get(id(use))
            if call is None:
                continue
            for keyword_change in self._keywords.get(new, []):
                keyword = keyword_change.name.rpartition(".")[2]
                if keyword_change.module.split(".")[0] == change.module.split(".")[0] \
                        and keyword_change.fix == "safe" and keyword_change.replacement and self._state(keyword_change):
                    edits += [e for arg in call.args if arg.keyword is not None and arg.keyword.value == keyword
                              for e in keyword_rename(call, arg, keyword_change.replacement)]
        return edits

    def _split_fix(self, statement: cst.ImportFrom, alias: cst.ImportAlias, change: ApiChange,
                   uses: list[Edit]) -> Fix | None:
        """A moved name imported beside others: it leaves the statement and is imported from its new
        module (the others stay; a later pass moves the next one)."""
        if alias.asname is not None or change.fix == "none" or self._reexported(alias.evaluated_name):
            return None
        assert not isinstance(statement.names, cst.ImportStar)
        kept = [a for a in statement.names if a is not alias]
        if statement.lpar is None:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return Fix("safe" if change.fix == "safe" else "unsafe",
                   f"Import `{change.new_name}` from `{change.new_module}`",
                   (Edit(statement, statement.with_changes(names=kept)), *uses),
                   imports=((change.new_module or "", change.new_name or ""),))

    def _reference_edits(self, old: str, new: str) -> list[Edit]:
        """Rewrites of the annotation strings that name ``old``."""
        edits = []
        for reference in self._references:
            names = loaded_names(reference.expression, frozenset({old}))
            if names:
                edits.append(Edit(reference.literal, _renamed(reference, names, new)))
        return edits

    def _reexported(self, old: str) -> bool:
        """``__all__`` lists the name, or another linted file imports it from this module. (The index
        is complete only when fixing; the check pass's fix summary then says "Rename".)"""
        if old in self._exported:
            return True
        index, module = self.ctx.index, self.ctx.module
        return bool(index is not None and module and
                    any(path != self.ctx.path for path in index.importers(f"{module}.{old}")))


def _string_index(node: cst.BaseExpression) -> str | None:
    """``x["key"]``: the key, when the subscript is one string literal."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    key = value.evaluated_value if isinstance(value, cst.SimpleString) else None
    return key if isinstance(key, str) else None


def _wrapper_remedy(change: ApiChange, sequential: str) -> str:
    """What replaces a wrapper whose constructor only raises, by the structure its rewrite knows."""
    new = change.new_name
    if change.rewrite == "policy-then-module":
        return (f"put the policy in `{sequential}(policy, {new}(spec=policy.spec.clone(), ...))` and call "
                f"`.step()` on the `{new}`; the clone keeps the policy's own spec")
    if change.rewrite == "operator-then-module":
        return (f"use `nn.{sequential}(module, {new}(...))` with the wrapper's other arguments: the wrapper ran "
                f"the module, then did what `{new}` does. `nn.{sequential}` passes one input to the module and its "
                f"one output on (a module taking several tensors or returning a tuple needs a small module of your "
                f"own), and the wrapped module's state_dict keys start with `0.` instead of "
                f"`{(change.old_parameters or ('operator',))[0]}.` (an old checkpoint needs its keys renamed)")
    return f"use `{change.replacement}`, as upstream's message says"


def _advice(change: ApiChange, old: str) -> str:
    if not change.replacement:
        return "upstream names no replacement: remove or rewrite this use" + (f" ({change.note})" if change.note else "")
    where = f" from `{change.new_module}`" if change.new_module and change.new_module != change.module else ""
    text = f"use `{change.new_name}`{where}"
    if change.fix == "unsafe" and not change.note:
        text += " (its arguments or behaviour differ: check each use)"
    return text + (f"; {change.note}" if change.note else "")


def _same_module(change: ApiChange) -> bool:
    return change.new_module in (None, change.module)


def _module_expr(module: str) -> cst.Attribute | cst.Name:
    parts = module.split(".")
    expr: cst.Attribute | cst.Name = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(expr, cst.Name(part))
    return expr


def _renamed(reference: ForwardReference, names: list[cst.Name], new: str) -> cst.SimpleString:
    """The annotation string with the given names (nodes of its expression) changed to ``new``."""
    renamed = reference.expression.visit(_rename_names()(names, new))
    assert isinstance(renamed, cst.BaseExpression), "renaming names never removes the expression"
    code = cst.Module([]).code_for_node(renamed)
    literal = reference.literal
    return literal.with_changes(value=f"{literal.prefix}{literal.quote}{code}{literal.quote}")


@functools.cache  # the class is made on first use, so importing the rule does not load libcst
def _rename_names() -> Callable[[list[cst.Name], str], cst.CSTTransformer]:
    class RenameNames(cst.CSTTransformer):
        """Gives the given Name nodes a new value."""

        def __init__(self, names: list[cst.Name], new: str) -> None:
            super().__init__()
            self._ids, self._new = {id(name) for name in names}, new

        def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
            return updated_node.with_changes(value=self._new) if id(original_node) in self._ids else updated_node

    return RenameNames


def _imports_unaliased(statement: cst.ImportFrom, name: str) -> bool:
    assert not isinstance(statement.names, cst.ImportStar)
    return any(isinstance(a.name, cst.Name) and a.name.value == name and a.asname is None for a in statement.names)


def _remove_alias(statement: cst.ImportFrom, alias: cst.ImportAlias) -> list[Edit]:
    """Edits dropping one name from ``from m import a, b``, keeping the commas valid."""
    assert not isinstance(statement.names, cst.ImportStar)
    names = list(statement.names)
    position = next(i for i, a in enumerate(names) if a is alias)
    edits = [Edit(alias, cst.RemovalSentinel.REMOVE)]
    if position == len(names) - 1 and position > 0:
        # The previous name becomes the last: it takes the removed one's trailing comma (allowed in
        # parentheses, with the whitespace before ``)``), or none.
        previous = names[position - 1]
        comma = alias.comma if statement.lpar is not None else cst.MaybeSentinel.DEFAULT
        edits.append(Edit(previous, previous.with_changes(comma=comma)))
    return edits
