"""RLG006 removed-collector-name: an old collector name that torchrl 0.13 removed."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from rlguard.engine.findings import Edit, Fix
from rlguard.engine.names import dotted_name
from rlguard.rules.base import Example, Rule
from rlguard.rules.data import COLLECTOR_MODULES, COLLECTOR_NAMES_REMOVED_IN, COLLECTOR_RENAMES


def _old_name(qualname: Optional[str]) -> Optional[str]:
    """The removed collector name a qualified name refers to, if any."""
    if qualname is None:
        return None
    module, _, name = qualname.rpartition(".")
    return name if name in COLLECTOR_RENAMES and module in COLLECTOR_MODULES else None


class RemovedCollectorName(Rule):
    code = "RLG006"
    name = "removed-collector-name"
    summary = "Imports or uses a collector name that torchrl 0.13 removed"
    why = (
        "TorchRL 0.11 renamed its collectors (`SyncDataCollector` became `Collector`, "
        "`MultiaSyncDataCollector` became `MultiAsyncCollector`, ...) and 0.13 removed the old "
        "names. Code that still imports them fails with `ImportError` as soon as it runs on a "
        "current torchrl, often deep inside a launcher or a worker process."
    )
    fix_doc = (
        "Safe. The import and every use in the file are renamed to the new name; an alias "
        "(`import ... as X`) is kept, so uses of the alias do not change. The new names exist "
        "since torchrl 0.11, so the fixed code needs torchrl >= 0.11."
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
            "from torchrl.collectors import MultiaSyncDataCollector as Multi\n\nc = Multi([make_env] * 2, policy)\n",
            fixed="from torchrl.collectors import MultiAsyncCollector as Multi\n\nc = Multi([make_env] * 2, policy)\n",
            note="An alias is kept.",
        ),
        Example(
            "import torchrl.collectors as tc\n\nc = tc.SyncDataCollector(env, policy)\n",
            fixed="import torchrl.collectors as tc\n\nc = tc.Collector(env, policy)\n",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._imported: list[tuple[cst.ImportAlias, cst.Name, str]] = []  # (alias, name node, old name)
        self._uses: dict[str, list[cst.Name]] = {}  # local name -> Name nodes using it
        self._attribute_names: set[int] = set()  # ``x.<name>`` is an attribute, not a use of ``name``

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        source = self.ctx.imports.names  # already updated by the engine for this statement
        for alias in node.names:
            local = alias.evaluated_alias or alias.evaluated_name
            old = _old_name(source.get(local))
            if old is not None and isinstance(alias.name, cst.Name):
                self._imported.append((alias, alias.name, old))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._attribute_names.add(id(node.attr))
        old = _old_name(self.ctx.qualname(node))
        if old is not None and dotted_name(node.value) is not None:
            new = COLLECTOR_RENAMES[old]
            self.report(node, self._message(old), fix=self._fix(old, [Edit(node.attr, cst.Name(new))]))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._attribute_names:
            self._uses.setdefault(node.value, []).append(node)

    def leave_Module(self, node: cst.Module) -> None:
        # Uses of a from-imported old name are renamed with its import, in one fix.
        for alias, name_node, old in self._imported:
            new = COLLECTOR_RENAMES[old]
            edits = [Edit(name_node, cst.Name(new))]
            if alias.asname is None:
                edits += [Edit(use, cst.Name(new)) for use in self._uses.get(old, []) if use is not name_node]
            self.report(alias, self._message(old), fix=self._fix(old, edits))

    def _message(self, old: str) -> str:
        return (f"`{old}` was removed in torchrl 0.13 and this import fails at run time; "
                f"use `{COLLECTOR_RENAMES[old]}` (the same collector, renamed in 0.11)")

    @staticmethod
    def _fix(old: str, edits: list[Edit]) -> Fix:
        return Fix("safe", f"Rename `{old}` to `{COLLECTOR_RENAMES[old]}`", tuple(edits))
