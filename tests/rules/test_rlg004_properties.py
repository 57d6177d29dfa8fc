"""RLG004 fixes over generated variants: names, aliases, nesting, comments, call layouts, CRLF, tabs.

Properties: the fixed code parses; no RLG004 finding is left (every variant generated here has a
known TensorDict parameter, so it is fixable); fixing twice gives the same text as fixing once; a
variant whose values are all read from the parameter is fixed without ``--unsafe-fixes``.
"""

from __future__ import annotations

import ast
import keyword

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlguard.testing import check_source, fix_source

TD_IMPORTS = [
    ("from tensordict import TensorDict", "TensorDict"),
    ("from tensordict import TensorDict as TD", "TD"),
    ("import tensordict", "tensordict.TensorDict"),
    ("import tensordict as tdl", "tdl.TensorDict"),
    ("from tensordict._td import TensorDict as Td2", "Td2"),
]
BASES = [
    ("from torchrl.envs import Transform", "Transform", ""),
    ("import torchrl.envs as E", "E.Transform", ""),
    ("from torchrl.envs.transforms import ObservationTransform as OT", "OT", ""),
    ("from torchrl.envs import Transform", "Base", "class Base(Transform):\n    pass\n\n\n"),
]
METHODS = [("_call", 1), ("forward", 1), ("_inv_call", 1), ("_reset", 2), ("_step", 2)]
RESERVED = {"self", "torch", "tensordict", "tdl", "td2", "out", "other", "buffer", "tmp", "data", "i", "x",
            "TD", "Td2", "E", "OT", "Base", "Transform", "TensorDict", "print", "range", "len", "cls"}
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and n not in RESERVED and not n.startswith("__"))
COMMENTS = st.sampled_from(["", "", "# note", "# TODO: device?", "# see the docs"])
NESTING = st.lists(st.sampled_from(["if", "for", "with", "try", "while"]), max_size=3)


@st.composite
def programs(draw):
    td_import, ctor = draw(st.sampled_from(TD_IMPORTS))
    base_import, base, base_class = draw(st.sampled_from(BASES))
    method, count = draw(st.sampled_from(METHODS))
    params = draw(st.lists(NAMES, min_size=count, max_size=count, unique=True))
    source_param = draw(st.sampled_from(params))
    keys = draw(st.lists(st.sampled_from(["obs", "reward", "done", "action"]), min_size=0, max_size=3, unique=True))
    computed = draw(st.booleans())  # a value that is not read from the parameter: unsafe fix
    shape = draw(st.sampled_from(["dict", "nested", "keywords", "empty"]))
    device = draw(st.sampled_from(["missing", "missing", "none-keyword", "none-positional"]))
    layout = draw(st.sampled_from(["one-line", "per-line", "per-line-trailing", "hanging"]))
    via_name = draw(st.booleans())
    nesting = draw(NESTING)
    indent_unit = draw(st.sampled_from(["    ", "  ", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    comment = draw(COMMENTS)

    values = [f"'{key}': {source_param}['{key}']" for key in keys]
    if computed:
        values.append("'noise': torch.zeros(3)")
    if shape == "nested" and values:
        source = "{'inner': " + f"{ctor}({{{', '.join(values)}}}, [])" + "}"
    elif shape == "empty" or not values:
        source = None
    else:
        source = "{" + ", ".join(values) + "}"
    args: list[str] = []
    if shape == "keywords" and values:
        args += [v.replace("'", "", 2).replace(": ", "=", 1) for v in values]
        source = None
    if source is not None:
        args.insert(0, source)
    if device == "none-positional":
        if source is None:
            args.insert(0, "{}")
        args[1:1] = ["[]", "None"]
    else:
        args.append("batch_size=[]")
        if device == "none-keyword":
            args.append("device=None")

    def call(level: str) -> list[str]:
        inner = level + indent_unit
        if layout == "one-line":
            return [f"{ctor}({', '.join(args)})"]
        if layout == "hanging":
            return [f"{ctor}({args[0]},"] + [f"{inner}{a}," for a in args[1:-1]] + [f"{inner}{args[-1]})"] \
                if len(args) > 1 else [f"{ctor}({args[0]})"]
        lines = [f"{ctor}("] + [f"{inner}{a}," for a in args]
        if layout == "per-line":
            lines[-1] = lines[-1][:-1]
        return lines + [f"{level})"]

    lines = ["import torch", td_import, base_import, "", ""]
    if base_class:
        lines += base_class.rstrip("\n").split("\n") + ["", ""]
    lines += [f"class Fixme({base}):", f"{indent_unit}def {method}(self, {', '.join(params)}):"]
    level = indent_unit * 2
    for block in nesting:
        header = {"if": "if self.enabled:", "for": "for i in range(2):", "with": "with torch.no_grad():",
                  "try": "try:", "while": "while self.enabled:"}[block]
        lines.append(level + header)
        level += indent_unit
        if block == "try":
            lines.append(level + "pass")  # closed by the except below
    built = call(level)
    if comment:
        lines.append(level + comment)
    if via_name:
        lines.append(level + "out = " + built[0])
        lines += built[1:]
        lines.append(level + "return out")
    else:
        lines.append(level + "return " + built[0])
        lines += built[1:]
    for block in reversed(nesting):
        level = level[: -len(indent_unit)]
        if block == "try":
            lines.append(level + "except RuntimeError:")
            lines.append(level + indent_unit + "raise")
    lines.append(indent_unit * 2 + f"return {params[0]}")
    text = newline.join(lines) + newline
    safe = not computed and bool(keys) and shape != "empty"
    return text, safe


def rlg004(source: str):
    return [f for f in check_source(source, select=["RLG004"]) if f.code == "RLG004"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_fix_properties(program):
    source, safe = program
    assert rlg004(source), source
    once = fix_source(source, select=["RLG004"], unsafe=True)
    ast.parse(once)
    assert rlg004(once) == [], once
    assert fix_source(once, select=["RLG004"], unsafe=True) == once
    if "\r\n" in source:
        assert "\n" not in once.replace("\r\n", "")
    if safe:
        assert fix_source(source, select=["RLG004"]) == once


RB_IMPORTS = [
    ("from torchrl.data import ReplayBuffer", "ReplayBuffer"),
    ("from torchrl.data import TensorDictReplayBuffer as RB", "RB"),
    ("import torchrl.data as trd", "trd.PrioritizedReplayBuffer"),
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(td=st.sampled_from(TD_IMPORTS), rb=st.sampled_from(RB_IMPORTS), fn=NAMES, param=NAMES,
       before=st.booleans(), newline=st.sampled_from(["\n", "\r\n"]), comment=COMMENTS)
def test_buffer_function_fix_properties(td, rb, fn, param, before, newline, comment):
    td_import, ctor = td
    rb_import, buffer = rb
    function = [f"def {fn}({param}):", f"    {comment}" if comment else "    pass",
                f"    return {ctor}({{'obs': {param}['obs']}}, batch_size={param}.batch_size)", "", ""]
    call = [f"rb = {buffer}(transform={fn})", ""]
    body = function + call if before else call + ["", ""] + function
    source = newline.join([td_import, rb_import, "", "", *body]).rstrip(newline) + newline
    assert len(rlg004(source)) == 1, source
    once = fix_source(source, select=["RLG004"])
    ast.parse(once)
    assert f"device={param}.device)" in once
    assert rlg004(once) == []
    assert fix_source(once, select=["RLG004"]) == once
