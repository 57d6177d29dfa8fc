"""Spans of reported nodes match libcst's own syntactic positions, also when the codegen stops early."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rlguard.engine.positions import spans_for
from rlguard.engine.traversal import iter_nodes

SOURCE = '''import torch


class Policy(torch.nn.Module):
    """A docstring."""

    def forward(self, x):  # a comment
        return (x
                + 1)


def main():
    value = Policy()(torch.ones(2))
    print({"a": value})
'''


def _expected(module: cst.Module) -> dict[int, tuple[int, int, int, int]]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    return {id(node): (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1) for node, r in positions.items()}


def test_every_node_as_libcst_places_it():
    module = cst.parse_module(SOURCE)
    expected = _expected(module)
    nodes = list(iter_nodes(module))
    spans = spans_for(module, nodes)
    assert {key: tuple(span) for key, span in spans.items()} == {id(node): expected[id(node)] for node in nodes}


def test_each_node_alone_is_placed_the_same():
    """Asking for one node stops the codegen right after it, inside the nodes that enclose it: its
    span must not change, and the enclosing nodes' unfinished spans must not break the codegen."""
    module = cst.parse_module(SOURCE)
    expected = _expected(module)
    for node in iter_nodes(module):
        assert {key: tuple(span) for key, span in spans_for(module, [node]).items()} == {id(node): expected[id(node)]}
