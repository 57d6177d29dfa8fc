"""Positions for the few nodes that are reported, computed only in files with findings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rlguard.engine.findings import Span
from rlguard.engine.lazy import cst

if TYPE_CHECKING:
    from libcst._position import CodeRange


class _Sink:
    """Stands in for a metadata provider: libcst's codegen state only needs ``_computed``."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


def spans_for(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, Span]:
    """Span of each node (keyed by ``id``), from one syntactic-position codegen pass."""
    from libcst.metadata.position_provider import PositionProvidingCodegenState  # only files with findings need it

    sink = _Sink()
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=sink,  # type: ignore[arg-type]  # duck-typed: only ``_computed`` is used
    )
    module._codegen(state)
    spans: dict[int, Span] = {}
    for node in nodes:
        where = sink._computed.get(node)
        if where is not None:
            spans[id(node)] = Span(where.start.line, where.start.column + 1, where.end.line, where.end.column + 1)
    return spans
