"""Parsing: what rlguard asks of libcst."""

from __future__ import annotations

import libcst
import pytest

from rlguard.engine.parse import Source, parse


def test_parsing_skips_node_validation_and_leaves_it_on_for_nodes_built_after():
    """Parsed nodes are not validated (the parser builds them right); a node built by a fix still is."""
    calls = []
    original = libcst.CSTNode.__dict__["__post_init__"]
    libcst.CSTNode.__post_init__ = lambda node: calls.append(node) or original(node)
    try:
        module = parse(Source("x = compute(1, key='a')\n", "utf-8"))
        assert isinstance(module, libcst.Module) and calls == []
        with pytest.raises(libcst.CSTValidationError):
            libcst.Name("")
        assert calls
    finally:
        libcst.CSTNode.__post_init__ = original
