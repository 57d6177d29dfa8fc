"""RLG003 fix properties over generated programs: names, aliases, nesting, comments, CRLF.

For every generated program whose payload holds tensors: the fix leaves no RLG003 finding, fixing
twice equals fixing once, the output parses, and the fixed program runs and writes the same JSON
as the original would with a ``default=`` hook converting each tensor with ``.tolist()``.
"""

from __future__ import annotations

import json
import keyword

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlguard.testing import check_source, fix_source

pytest.importorskip("torch")

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

identifiers = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=6).map(lambda s: "v_" + s).filter(
    lambda s: not keyword.iskeyword(s)
)

# Leaves: (template, holds a tensor). {T} is torch's local name, {x} a name bound to a tensor.
TENSOR_LEAVES = [
    "{T}.zeros(2)", "{T}.tensor(1.5)", "{x}", "{x}.mean()", "{x} * 2", "-{x}", "{x}[0]", "{T}.stack([{x}, {x}])",
    "{x}.max()", "{x}.detach().cpu()", "{T}.arange(3).float() / 2", "{x} > 0", "{T}.sort({x}).values",
]
PLAIN_LEAVES = ["1", "'text'", "{x}.sum().item()", "None", "{x}.tolist()", "len({x})", "[1.5, 2]"]


def leaf():
    return st.one_of(st.sampled_from(TENSOR_LEAVES).map(lambda t: (t, True)),
                     st.sampled_from(PLAIN_LEAVES).map(lambda t: (t, False)))


def structure():
    def extend(children):
        keys = st.text(alphabet="abcdef", min_size=1, max_size=4)
        as_dict = st.lists(st.tuples(keys, children), min_size=1, max_size=3, unique_by=lambda kv: kv[0]).map(
            lambda items: ("{" + ", ".join(f"{k!r}: {v[0]}" for k, v in items) + "}", any(v[1] for _, v in items)))
        as_list = st.lists(children, min_size=1, max_size=3).map(
            lambda items: ("[" + ", ".join(v[0] for v in items) + "]", any(v[1] for v in items)))
        as_tuple = st.lists(children, min_size=2, max_size=3).map(
            lambda items: ("(" + ", ".join(v[0] for v in items) + ")", any(v[1] for v in items)))
        as_comp = children.map(lambda v: (f"[{v[0]} for _ in range(2)]", v[1]))
        return st.one_of(as_dict, as_list, as_tuple, as_comp)

    return st.recursive(leaf(), extend, max_leaves=6)


ENCODERS = [
    # (import line, how the call is written, whether it writes to a file object)
    ("import json", "json.dumps", False),
    ("import json as {alias}", "{alias}.dumps", False),
    ("from json import dumps", "dumps", False),
    ("from json import dumps as {alias}", "{alias}", False),
    ("import json", "json.dump", True),
    ("from json import dump as {alias}", "{alias}", True),
]


@st.composite
def programs(draw):
    names = draw(st.lists(identifiers, min_size=4, max_size=4, unique=True))
    tensor_name, container, alias, torch_alias = names
    torch_import, torch_name = draw(st.sampled_from([("import torch", "torch"),
                                                     (f"import torch as {torch_alias}", torch_alias)]))
    import_line, call, to_file = draw(st.sampled_from(ENCODERS))
    import_line, call = import_line.format(alias=alias), call.format(alias=alias)
    payload, holds_tensor = draw(structure())
    payload = payload.replace("{T}", torch_name).replace("{x}", tensor_name)
    bind = draw(st.booleans())
    in_function = draw(st.booleans())
    comment = draw(st.booleans())
    crlf = draw(st.booleans())

    note = "  # note" if comment else ""
    body = [f"{tensor_name} = {torch_name}.arange(4).float() - 1.5{note}"]
    if comment:
        body.append("# build the payload")
    if bind:
        body.append(f"{container} = {payload}{note}")
        payload = container
    if to_file:
        body += ["_buffer = io.StringIO()", f"{call}({payload}, _buffer){note}", "out = _buffer.getvalue()"]
    else:
        body.append(f"out = {call}({payload}){note}")
    header = ["import io", import_line, torch_import, "import json as _oracle_json", ""]
    if in_function:
        lines = header + ["", "def make():"] + ["    " + line for line in body] + ["    return out", "", "out = make()"]
    else:
        lines = header + body
    source = "\n".join(lines) + "\n"
    # The oracle: the same payload through json with a hook converting tensors like the fix does.
    oracle_call = f"_oracle_json.dumps({payload}, default=lambda t: t.tolist())"
    oracle = source.replace(f"{call}({payload}, _buffer){note}", f"_buffer.write({oracle_call}){note}") \
                   .replace(f"out = {call}({payload}){note}", f"out = {oracle_call}{note}")
    assert oracle != source
    if crlf:
        source = source.replace("\n", "\r\n")
    return source, oracle, holds_tensor


def _findings(source: str):
    return [f for f in check_source(source, select=["RLG003"]) if f.code == "RLG003"]


def _run(source: str) -> str:
    namespace: dict = {}
    exec(compile(source.replace("\r\n", "\n"), "<generated>", "exec"), namespace)
    return namespace["out"]


@SETTINGS
@given(programs())
def test_fix_properties(program):
    source, oracle, holds_tensor = program
    found = _findings(source)
    assert bool(found) == holds_tensor, source
    if not holds_tensor:
        assert fix_source(source, select=["RLG003"]) == source
        return
    assert [f.fix.applicability for f in found if f.fix] == ["safe"], (source, found)
    fixed = fix_source(source, select=["RLG003"])
    compile(fixed.replace("\r\n", "\n"), "<fixed>", "exec")  # parses
    assert _findings(fixed) == [], fixed
    assert fix_source(fixed, select=["RLG003"]) == fixed  # fixing twice changes nothing
    if "\r\n" in source:
        assert fixed.count("\n") == fixed.count("\r\n")
    if "# note" in source:
        assert fixed.count("# note") == source.count("# note")
    assert json.loads(_run(fixed)) == json.loads(_run(oracle))
    with pytest.raises(TypeError):
        _run(source)
