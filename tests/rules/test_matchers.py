"""The shared call helpers and name reads (tensor inference is tested through RLG003: test_rlg003_values.py)."""

from __future__ import annotations

import textwrap

import libcst as cst

from rlguard.engine.names import loaded_names
from rlguard.engine.matching import has_star_kwargs, is_none, keyword, method_call, positional


# ----- call helpers -----

def _call(code: str) -> cst.Call:
    node = cst.parse_expression(code)
    assert isinstance(node, cst.Call)
    return node


def test_call_helpers():
    call = _call("f(a, b, *rest, key=1, other=None, **extra)")
    assert [cst.Module([]).code_for_node(arg.value) for arg in positional(call)] == ["a", "b"]
    assert keyword(call, "key") is not None and keyword(call, "missing") is None
    assert is_none(keyword(call, "other").value) and not is_none(keyword(call, "key").value)
    assert has_star_kwargs(call) and not has_star_kwargs(_call("f(*a)"))
    receiver, method = method_call(_call("model.net.state_dict()"))
    assert method == "state_dict" and cst.Module([]).code_for_node(receiver) == "model.net"
    assert method_call(_call("f()")) is None


# ----- reads of names -----

def test_loaded_names_skips_writes_and_other_name_positions():
    module = cst.parse_module(textwrap.dedent("""
        import m
        from a import m as m2
        m = {}
        m: dict = {}
        m["k"] = m
        m += 1
        obj.m = f(m=1)
        for m in range(3):
            pass
        def m(m): return m
        class m: pass
        (m := 1)
        [m for m in y]
        with open(p) as m:
            print(m)
        global m
        del m
    """))
    reads = loaded_names(module, frozenset({"m"}))
    lines = [module.code_for_node(name) for name in reads]
    assert len(reads) == 7, lines  # m["k"] = m (twice), m += 1, return m, [m ...] elt, print(m), del m
