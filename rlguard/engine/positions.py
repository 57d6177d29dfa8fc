"""Positions for the few nodes that are reported, computed only in files with findings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rlguard.engine.findings import Span
from rlguard.engine.lazy import cst

if TYPE_CHECKING:
    from libcst._position import CodeRange


class _AllPlaced(Exception):
    """Every wanted node has its span: the rest of the file need not be generated."""


class _Spans(dict):
    """The spans libcst's codegen records, node by node, in source order; it stops the codegen once the
    last wanted node is placed (findings are usually far from the end of a file)."""

    def __init__(self, wanted: set[int]) -> None:
        super().__init__()
        self.missing = set(wanted)

    def __setitem__(self, node: cst.CSTNode, where: CodeRange) -> None:
        super().__setitem__(node, where)
        self.missing.discard(id(node))
        if not self.missing:
            raise _AllPlaced

    def __missing__(self, node: cst.CSTNode) -> CodeRange:
        """While ``_AllPlaced`` unwinds, enclosing nodes read the spans of children never generated."""
        if self.missing:
            raise KeyError(node)
        from libcst.metadata import CodePosition, CodeRange

        return CodeRange(CodePosition(0, 0), CodePosition(0, 0))


class _Sink:
    """Stands in for a metadata provider: libcst's codegen state only needs ``_computed``."""

    def __init__(self, wanted: set[int]) -> None:
        self._computed = _Spans(wanted)


def spans_for(module: cst.Module, nodes: Iterable[cst.CSTNode], source: str | None = None) -> dict[int, Span]:
    """Span of each node (keyed by ``id``), from one syntactic-position codegen pass.

    With the module's ``source``, nodes that all sit in one top-level statement are placed by generating
    that statement alone, found in the source by its text (a statement late in a long file costs the
    same as an early one); a text found more than once falls back to the whole pass."""
    nodes = list(nodes)
    statement = _enclosing_statement(module, nodes) if source is not None and nodes else None
    if statement is not None and source is not None:
        text = module.code_for_node(statement)
        start = source.find(text)
        if text and start >= 0 and (start == 0 or source[start - 1] == "\n") and source.find(text, start + 1) < 0:
            alone = module.with_changes(body=[statement], header=[], footer=[])
            lines = source.count("\n", 0, start)
            return {key: Span(span.line + lines, span.column, span.end_line + lines, span.end_column)
                    for key, span in _generated_spans(alone, nodes).items()}
    return _generated_spans(module, nodes)


def _enclosing_statement(module: cst.Module, nodes: list[cst.CSTNode]) -> cst.CSTNode | None:
    """The top-level statement holding every one of ``nodes``, if one does."""
    from rlguard.engine.traversal import iter_nodes  # the traversal imports the context, which imports findings

    wanted = {id(node) for node in nodes}
    for statement in module.body:
        inside = sum(1 for node in iter_nodes(statement) if id(node) in wanted)
        if inside:
            return statement if inside == len(wanted) else None
    return None


def _generated_spans(module: cst.Module, nodes: list[cst.CSTNode]) -> dict[int, Span]:
    from libcst.metadata.position_provider import PositionProvidingCodegenState  # only files with findings need it

    sink = _Sink({id(node) for node in nodes})
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=sink,  # type: ignore[arg-type]  # duck-typed: only ``_computed`` is used
    )
    try:
        module._codegen(state)
    except _AllPlaced:
        pass
    spans: dict[int, Span] = {}
    for node in nodes:
        where = sink._computed.get(node)
        if where is not None:
            spans[id(node)] = Span(where.start.line, where.start.column + 1, where.end.line, where.end.column + 1)
    return spans
