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


REPEATED = '''# a header comment
import os

@staticmethod
def twice():
    return os.sep

x = 1\r
x = 1\r

def twice():
    return os.sep
'''


def test_each_node_placed_from_its_statement_alone_as_libcst_places_it():
    """Given the source, a node is placed by generating its top-level statement alone; a statement whose
    text the file repeats (the second ``x = 1``, the two ``twice``) is placed by the whole pass."""
    for source in (SOURCE, REPEATED):
        module = cst.parse_module(source)
        expected = _expected(module)
        for node in iter_nodes(module):
            assert {key: tuple(span) for key, span in spans_for(module, [node], source).items()} == \
                {id(node): expected[id(node)]}


def test_nodes_in_different_statements_placed_together():
    module = cst.parse_module(SOURCE)
    expected = _expected(module)
    first, last = module.body[0], module.body[-1]
    spans = spans_for(module, [first, last], SOURCE)
    assert {key: tuple(span) for key, span in spans.items()} == {id(first): expected[id(first)], id(last): expected[id(last)]}


def test_a_statement_generated_alone_is_found_in_the_file_text(monkeypatch):
    """The shortcut is taken (the statement alone is generated, not the file) when its text is unique."""
    import rlguard.engine.positions as positions

    module = cst.parse_module(SOURCE)
    generated: list[int] = []
    real = positions._generated_spans
    monkeypatch.setattr(positions, "_generated_spans", lambda m, nodes: generated.append(len(m.body)) or real(m, nodes))
    target = module.body[-1]
    assert spans_for(module, [target], SOURCE) == {id(target): spans_for(module, [target])[id(target)]}
    assert generated[0] == 1
