"""RLG006 removed-collector-name: an old collector name that torchrl 0.13 removed."""

from __future__ import annotations

import functools
from collections.abc import Callable

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Edit, Fix
from rlguard.engine.names import dotted_name, module_of_import_from
from rlguard.engine.traversal import iter_nodes
from rlguard.rules.base import Example, Rule
from rlguard.rules.data import COLLECTOR_NAMES_REMOVED_IN, COLLECTOR_OLD_NAME_MODULES, COLLECTOR_RENAMES
from rlguard.engine.types import ForwardReference, forward_references, loaded_names


def _old_name(qualname: str | None) -> str | None:
    """The removed collector name a qualified name refers to, if any."""
    if qualname is None:
        return None
    module, _, name = qualname.rpartition(".")
    return name if module in COLLECTOR_OLD_NAME_MODULES.get(name, ()) else None


class RemovedCollectorName(Rule):
    code = "RLG006"
    name = "removed-collector-name"
    summary = "Imports or uses a collector name that torchrl 0.13 removed"
    why = (
        "TorchRL 0.11 renamed its collectors (`SyncDataCollector` became `Collector`, "
        "`MultiaSyncDataCollector` became `MultiAsyncCollector`, ...) and 0.13 removed the old "
        "names. Code that still imports them fails with `ImportError` as soon as it runs on a "
        "current torchrl, often deep inside a launcher or a worker process; `tc.SyncDataCollector` "
        "raises `AttributeError` the same way."
    )
    fix_doc = (
        "Safe. The import and every use in the file are renamed to the new name, including uses "
        "in string annotations (`\"SyncDataCollector\"`), which would otherwise name nothing; "
        "`Literal[...]` values and `Annotated[...]` metadata are strings, not types, and stay. An "
        "alias (`import ... as X`) is kept, so uses of the alias do not change. Where the same import "
        "statement already imports the new name, the old one is removed instead. Where the module "
        "re-exports the old name in `__all__`, the new name is imported under the old one "
        "(`from torchrl.collectors import Collector as SyncDataCollector`) so that importers of "
        "this module keep working. The new names exist since torchrl 0.11, so the fixed code needs "
        "torchrl >= 0.11."
    )
    min_target = COLLECTOR_NAMES_REMOVED_IN
    tokens = (tuple(COLLECTOR_RENAMES),)
    valid = (
        Example("from torchrl.collectors import Collector\n\ncollector = Collector(env, policy, frames_per_batch=64)\n"),
        Example("from torchrl.collectors import SyncDataCollector\n", target="0.12",
                note="Before 0.13 the old name still exists."),
        Example("from my_project.collectors import SyncDataCollector\n",
                note="A class of the same name from another package is not torchrl's."),
    )
    invalid = (
        Example(
            "from torchrl.collectors import SyncDataCollector\n\ncollector = SyncDataCollector(env, policy, frames_per_batch=64)\n",
            fixed="from torchrl.collectors import Collector\n\ncollector = Collector(env, policy, frames_per_batch=64)\n",
            message="use `Collector`",
        ),
        Example(
            "from torchrl.collectors import SyncDataCollector\n\n"
            "def collect(collector: \"SyncDataCollector\") -> \"list[SyncDataCollector]\":\n"
            "    return [collector]\n",
            fixed="from torchrl.collectors import Collector\n\n"
            "def collect(collector: \"Collector\") -> \"list[Collector]\":\n"
            "    return [collector]\n",
            note="String annotations are renamed with the import.",
        ),
        Example(
            "from torchrl.collectors import MultiaSyncDataCollector as Multi\n\nc = Multi([make_env] * 2, policy)\n",
            fixed="from torchrl.collectors import MultiAsyncCollector as Multi\n\nc = Multi([make_env] * 2, policy)\n",
            note="An alias is kept.",
        ),
        Example(
            "import torchrl.collectors as tc\n\nc = tc.SyncDataCollector(env, policy)\n",
            fixed="import torchrl.collectors as tc\n\nc = tc.Collector(env, policy)\n",
        ),
        Example(
            "from torchrl.collectors import Collector, SyncDataCollector\n\n"
            "def make(env, policy, legacy=False):\n"
            "    cls = SyncDataCollector if legacy else Collector\n"
            "    return cls(env, policy)\n",
            fixed="from torchrl.collectors import Collector\n\n"
            "def make(env, policy, legacy=False):\n"
            "    cls = Collector if legacy else Collector\n"
            "    return cls(env, policy)\n",
            note="When the statement already imports the new name, the old one is dropped.",
        ),
        Example(
            "from torchrl.collectors.distributed import DistributedDataCollector\n\n"
            "__all__ = [\"DistributedDataCollector\"]\n",
            fixed="from torchrl.collectors.distributed import DistributedCollector as DistributedDataCollector\n\n"
            "__all__ = [\"DistributedDataCollector\"]\n",
            note="A re-exported name keeps its public spelling.",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._imported: list[tuple[cst.ImportFrom, cst.ImportAlias, str]] = []  # (statement, alias, old name)
        self._uses: dict[str, list[cst.Name]] = {}  # local name -> Name nodes reading it
        self._not_uses: set[int] = set()  # Name nodes that name something else: ``x.<name>``, ``f(<name>=...)``
        self._star_sources: set[str] = set()  # modules star-imported from
        self._star_uses: list[tuple[cst.Name, str]] = []  # old names that only a star import provides
        self._exported: set[str] = set()  # names in the module's ``__all__``
        self._references: list[ForwardReference] = []  # types spelled in annotation strings

    # ----- imports -----
    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            module = module_of_import_from(node, self.ctx.module, self.ctx.imports.is_package)
            if module is not None:
                self._star_sources.add(module)
            return
        source = self.ctx.imports.names  # already updated by the engine for this statement
        for alias in node.names:
            self._skip_names(alias)
            local = alias.evaluated_alias or alias.evaluated_name
            old = _old_name(source.get(local))
            if old is not None and isinstance(alias.name, cst.Name):
                self._imported.append((node, alias, old))

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._skip_names(alias)

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

    def visit_Assign(self, node: cst.Assign) -> None:
        # __all__ = ["SyncDataCollector", ...] at module level: the name is re-exported.
        if self.ctx.at_module_level and any(isinstance(t.target, cst.Name) and t.target.value == "__all__"
                                             for t in node.targets):
            if isinstance(node.value, (cst.List, cst.Tuple)):
                for element in node.value.elements:
                    if isinstance(element.value, cst.SimpleString):
                        self._exported.add(element.value.evaluated_value)

    # ----- uses -----
    def visit_Annotation(self, node: cst.Annotation) -> None:
        for reference in forward_references(node.annotation):
            self._references.append(reference)
            self._check_dotted_reference(reference)

    def _check_dotted_reference(self, reference: ForwardReference) -> None:
        """``"torchrl.collectors.SyncDataCollector"``: resolved in the annotation's own scope."""
        for part in iter_nodes(reference.expression):
            old = _old_name(self.ctx.qualname(part)) if isinstance(part, cst.Attribute) else None
            if old is not None:
                new = COLLECTOR_RENAMES[old]
                message = (f"`{old}` was removed in torchrl 0.13: the annotation `{dotted_name(part)}` names nothing, "
                           f"so type checkers and `typing.get_type_hints` fail on it")
                edit = Edit(reference.literal, _renamed(reference, [part.attr], new))
                self.report(reference.literal, message, remedy=_remedy(old), fix=self._fix(old, [edit]))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_uses.add(id(node.attr))
        old = _old_name(self.ctx.qualname(node))
        if old is not None and dotted_name(node.value) is not None:
            new = COLLECTOR_RENAMES[old]
            message = f"`{old}` was removed in torchrl 0.13: `{dotted_name(node)}` raises AttributeError at run time"
            self.report(node, message, remedy=_remedy(old), fix=self._fix(old, [Edit(node.attr, cst.Name(new))]))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self._not_uses:
            return
        self._uses.setdefault(node.value, []).append(node)
        if self._star_sources and node.value in COLLECTOR_OLD_NAME_MODULES \
                and node.value not in self.ctx.imports.names and self.ctx.lookup(node.value) is None \
                and self._star_sources.intersection(COLLECTOR_OLD_NAME_MODULES[node.value]):
            self._star_uses.append((node, node.value))

    def leave_Module(self, node: cst.Module) -> None:
        # Uses of a from-imported old name are renamed with its import, in one fix.
        for statement, alias, old in self._imported:
            new = COLLECTOR_RENAMES[old]
            name_node = alias.name
            assert isinstance(name_node, cst.Name)
            uses = [Edit(use, cst.Name(new)) for use in self._uses.get(old, [])] if alias.asname is None else []
            if alias.asname is None:
                uses += self._reference_edits(old, new)
            if alias.asname is None and self._reexported(old):
                kept = alias.with_changes(name=cst.Name(new), asname=cst.AsName(name=cst.Name(old)))
                fix = Fix("safe", f"Import `{new}` as `{old}`, which this module re-exports", (Edit(alias, kept),))
            elif alias.asname is None and _imports_unaliased(statement, new):
                fix = self._fix(old, [*_remove_alias(statement, alias), *uses])
            else:
                fix = self._fix(old, [Edit(name_node, cst.Name(new)), *uses])
            self.report(alias, f"`{old}` was removed in torchrl 0.13: this import fails at run time", remedy=_remedy(old),
                        fix=fix)
        for use, old in self._star_uses:
            new = COLLECTOR_RENAMES[old]
            message = f"`{old}` was removed in torchrl 0.13: the star import no longer provides it, so this name fails"
            self.report(use, message, remedy=_remedy(old), fix=self._fix(old, [Edit(use, cst.Name(new))]))

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

    @staticmethod
    def _fix(old: str, edits: list[Edit]) -> Fix:
        return Fix("safe", f"Rename `{old}` to `{COLLECTOR_RENAMES[old]}`", tuple(edits))


def _remedy(old: str) -> str:
    return f"use `{COLLECTOR_RENAMES[old]}` (the same collector, renamed in 0.11)"


def _renamed(reference: ForwardReference, names: list[cst.Name], new: str) -> cst.SimpleString:
    """The annotation string with the given names (nodes of its expression) changed to ``new``."""
    code = cst.Module([]).code_for_node(reference.expression.visit(_rename_names()(names, new)))
    literal = reference.literal
    return literal.with_changes(value=f"{literal.prefix}{literal.quote}{code}{literal.quote}")


@functools.cache  # the class is made on first use, so importing this rule does not load libcst
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
