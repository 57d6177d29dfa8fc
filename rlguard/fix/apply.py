"""Apply rule-proposed edits to a parsed module, and add the imports the fixes need."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Edit, Fix
from rlguard.engine.traversal import iter_nodes


@functools.cache  # the class is made on first use, so importing the fixer does not load libcst
def _replace() -> Callable[[dict[int, Edit]], cst.CSTTransformer]:
    class Replace(cst.CSTTransformer):
        def __init__(self, edits: dict[int, Edit]) -> None:
            super().__init__()
            self._edits = edits

        def on_leave(self, original_node, updated_node):
            edit = self._edits.get(id(original_node))
            if edit is None:
                return updated_node
            if _keeps_node(edit):  # the node as the edits inside it left it, then what the edit adds
                return cst.FlattenSentinel([updated_node, *edit.new.nodes[1:]])  # type: ignore[union-attr]
            return edit.new

    return Replace


def non_overlapping(fixes: Sequence[Fix], module: cst.Module) -> list[Fix]:
    """Fixes in order, dropping any that touches a node (or a descendant) another fix already edits."""
    taken: set[int] = set()
    chosen = []
    for fix in fixes:
        touched = {id(node) for edit in fix.edits for node in ((edit.old,) if _keeps_node(edit) else iter_nodes(edit.old))}
        if touched & taken:
            continue
        taken |= touched
        chosen.append(fix)
    return chosen


def _keeps_node(edit: Edit) -> bool:
    """An edit that keeps its node first and adds statements after it (``set_keys`` after the line building a
    loss): it touches nothing inside the node, so it composes with the edits there."""
    return isinstance(edit.new, cst.FlattenSentinel) and bool(edit.new.nodes) and edit.new.nodes[0] is edit.old


def apply_fixes(module: cst.Module, fixes: Sequence[Fix]) -> cst.Module:
    edits = {id(edit.old): edit for fix in fixes for edit in fix.edits}
    fixed = module.visit(_replace()(edits))
    needed = [imp for fix in fixes for imp in fix.imports]
    return add_imports(fixed, needed) if needed else fixed


def add_imports(module: cst.Module, imports: Iterable[tuple[str, str]]) -> cst.Module:
    """Add ``from M import N`` lines once each: after the block of imports holding the file's first
    top-level import from the package of one of them, where the file first loads it, else after the
    file's leading imports. Code that must run before the package loads (``multiprocessing.set_start_method``,
    which importing torchrl settles) keeps running first."""
    wanted = list(dict.fromkeys(imports))
    present = _top_level_from_imports(module)
    statements = [
        cst.parse_statement(f"from {source} import {name}\n")
        for source, name in wanted
        if (source, name) not in present
    ]
    if not statements:
        return module
    body = list(module.body)
    packages = {source.split(".")[0] for source, _ in wanted}
    first = next((index for index, statement in enumerate(body) if _imports_from(statement) & packages), None)
    position = _insert_position(body) if first is None else _end_of_imports(body, first)
    return module.with_changes(body=[*body[:position], *statements, *body[position:]])


def _top_level_from_imports(module: cst.Module) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative \
                        and not isinstance(small.names, cst.ImportStar):
                    source = cst.Module([]).code_for_node(small.module)
                    found.update((source, alias.evaluated_name) for alias in small.names if alias.asname is None)
    return found


def _imports_from(statement: cst.BaseStatement) -> set[str]:
    """The top-level packages a top-level ``import``/``from ... import`` line loads (none for a relative one)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return set()
    found = set()
    for small in statement.body:
        if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
            found.add(cst.Module([]).code_for_node(small.module).split(".")[0])
        elif isinstance(small, cst.Import):
            found.update(cst.Module([]).code_for_node(alias.name).split(".")[0] for alias in small.names)
    return found


def _end_of_imports(body: Sequence[cst.BaseStatement], start: int) -> int:
    """The index after the run of import lines that ``start`` begins."""
    position = start
    while position < len(body) and isinstance(body[position], cst.SimpleStatementLine) \
            and isinstance(body[position].body[0], (cst.Import, cst.ImportFrom)):  # type: ignore[attr-defined]
        position += 1
    return position


def _insert_position(body: Sequence[cst.BaseStatement]) -> int:
    """After a docstring, ``__future__`` imports and the leading block of imports."""
    position = 0
    for index, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        small = statement.body[0]
        is_docstring = index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
        if is_docstring or isinstance(small, (cst.Import, cst.ImportFrom)):
            position = index + 1
        else:
            break
    return position
