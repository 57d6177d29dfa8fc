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


def spans_for(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, Span]:
    """Span of each node (keyed by ``id``), from one syntactic-position codegen pass."""
    from libcst.metadata.position_provider import PositionProvidingCodegenState  # only files with findings need it

    nodes = list(nodes)
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
