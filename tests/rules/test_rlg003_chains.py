"""RLG003 over generated programs: a tensor reaching ``json.dumps`` through any chain of the value
model's constructs, up to a fixed depth, is reported; the same chain with the tensor converted first
(``.item()``, ``.tolist()``, ``float()``) is not. Each program is run: the first raises TypeError, the
second runs. The chain may end inside a function, a lambda or a ``**kwargs`` function of the project
that dumps what it is given (after steps of its own, or through another function it passes it to):
the finding is then at the call.

CI draws a fixed set of programs (``derandomize``), so a run never fails on a newly drawn example. To
explore new random programs, and more of them, set ``RLGUARD_HYPOTHESIS_EXAMPLES``::

    RLGUARD_HYPOTHESIS_EXAMPLES=1000 python -m pytest tests/rules/test_rlg003_chains.py

A failure found that way prints the program; add its construct's gap as a regular case
(``test_rlg003_flows.py``) with the fix, so the fixed set need not draw it.
"""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import run_as_module
from rlguard.testing import check_source

pytest.importorskip("torch")

MAX_DEPTH = 4
_EXPLORED = int(os.environ.get("RLGUARD_HYPOTHESIS_EXAMPLES") or 0)  # random examples asked for; 0: the fixed set
SETTINGS = settings(max_examples=_EXPLORED or 500, derandomize=not _EXPLORED, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# Constructs: shape of the value they take -> [(shape of the value they give, definitions, statements)].
# ``{p}`` is the previous value's name, ``{v}`` the new one's, ``{i}`` a number unique to the step.
# Shapes: "tensor" (a tensor, or a float once converted), "dict", "list".
CONSTRUCTS: dict[str, list[tuple[str, str, str]]] = {
    "any": [
        ("dict", "", "{v} = {{'k{i}': {p}}}"),
        ("list", "", "{v} = [{p}]"),
        ("list", "", "{v} = ({p}, 0)"),
        ("dict", "", "{v} = {{}}\nfor key in ['a', 'b']:\n    {v}[key] = {p}"),
        ("list", "", "{v} = []\nfor _ in range(2):\n    {v}.append({p})"),
        ("list", "", "{v} = [1]\n{v}.extend([{p}])"),
        ("list", "", "{v} = []\n{v} += [{p}]"),
        ("dict", "", "{v} = {{'n': 1}}\n{v}.update(k{i}={p})"),
        ("dict", "", "{v} = dict(k{i}={p})"),
        ("list", "", "{v} = []\nfor item in [{p}]:\n    {v}.append(item)"),
        ("list", "def keep{i}(x):\n    return [x]\n", "{v} = keep{i}({p})"),
        ("dict", "@dataclass\nclass Row{i}:\n    value: float\n", "{v} = dataclasses.asdict(Row{i}(value={p}))"),
    ],
    "tensor": [
        ("tensor", "", "{v} = {p} * 2"),
        ("tensor", "", "{v} = abs({p})"),
        ("tensor", "", "{v} = max([{p}, {p}])"),
        ("tensor", "", "{v} = sum([{p}, {p}])"),
        ("tensor", "def scale{i}(x):\n    return x * 3\n", "{v} = scale{i}({p})"),
        ("dict", "def wrap{i}(x):\n    return {{'w': x, 'n': 1}}\n", "{v} = wrap{i}({p})"),
        ("list", "def both{i}(x):\n    return x, 1\n", "{v} = both{i}({p})"),
        ("tensor", "", "half{i} = lambda x: x / 2\n{v} = half{i}({p})"),
        ("list", "def pair{i}(x):\n    return [x, 1]\n", "{v} = pair{i}({p})"),
        ("dict", "class Box{i}:\n    def summary(self, value):\n        return {{'value': value * 2}}\n",
         "{v} = {{'n': 1, **Box{i}().summary({p})}}"),
    ],
    "dict": [
        ("dict", "", "{v} = {{**{p}, 'extra': 1}}"),
        ("dict", "", "{v} = dict(**{p})"),
        ("dict", "", "{v} = {{k: x for k, x in {p}.items()}}"),
        ("list", "", "{v} = list({p}.values())"),
        ("list", "", "{v} = list({p}.items())"),
        ("dict", "", "{v} = {p}.copy()"),
        ("dict", "", "{v} = dict(zip({p}.keys(), {p}.values()))"),
        ("list", "", "{v} = [x for _, x in {p}.items()]"),
        ("dict", "def same{i}(d):\n    return dict(d)\n", "{v} = same{i}({p})"),
    ],
    "list": [
        ("list", "", "{v} = [*{p}, 2]"),
        ("list", "", "{v} = list(reversed({p}))"),
        ("list", "", "{v} = [x for x in {p}]"),
        ("list", "", "{v} = [pair[1] for pair in enumerate({p})]"),
        ("list", "", "{v} = list(enumerate({p}))"),
        ("list", "", "{v} = list(zip({p}, {p}))"),
        ("list", "", "{v} = list({p}) + [2]"),
        ("list", "", "{v} = {p} * 2"),
        ("list", "", "{v} = sorted({p}, key=id)"),
        ("list", "", "{v} = {p}[:]"),
        ("list", "def copy{i}(xs):\n    return list(xs)\n", "{v} = copy{i}({p})"),
    ],
}
CONVERSIONS = ["{t}.item()", "{t}.tolist()", "float({t})"]
# Where the chain meets ``json.dumps``: at module level, or in a callee given the value there
# (``{p}``: the name the callee's steps read, ``{last}``: the name they give). "function" and "forward"
# take the steps after the split into their body; a lambda and a ``**kwargs`` function take none.
SINKS = {
    "direct": ("", "out = json.dumps({last})"),
    "function": ("def sink({p}):\n{steps}\n    return json.dumps({last})\n", "out = sink({p})"),
    "forward": ("def dump({p}):\n{steps}\n    return json.dumps({last})\n\n\ndef sink(value):\n    return dump(value)\n",
                "out = sink({p})"),
    "lambda": ("sink = lambda value: json.dumps(value)\n", "out = sink({p})"),
    "kwargs": ("def sink(**fields):\n    return json.dumps(dict(**fields))\n", "out = sink(step=1, value={p})"),
}


@st.composite
def chains(draw):
    """A program whose tensor ``t`` flows through a chain of constructs into ``json.dumps``, and the
    conversion to insert."""
    depth = draw(st.integers(min_value=1, max_value=MAX_DEPTH))
    shape, definitions, statements, previous = "tensor", [], [], "start"
    for step in range(depth):
        options = CONSTRUCTS["any"] + CONSTRUCTS[shape]
        shape, definition, statement = draw(st.sampled_from(options))
        name = f"v{step}"
        definitions.append(definition.format(i=step))
        statements.append(statement.format(v=name, p=previous, i=step))
        previous = name
    conversion = draw(st.sampled_from(CONVERSIONS))
    sink = draw(st.sampled_from(sorted(SINKS)))
    split = draw(st.integers(min_value=0, max_value=depth)) if sink in ("function", "forward") else depth
    return definitions, _sunk(statements, split, sink), previous, conversion


def _sunk(statements: list[str], split: int, sink: str) -> list[str]:
    """The chain's statements with its end at the sink: those after ``split`` move into the callee."""
    given = f"v{split - 1}" if split else "start"
    last = f"v{len(statements) - 1}" if statements else "start"
    steps = textwrap.indent("\n".join(statements[split:]), "    ") or "    pass"
    definition, call = SINKS[sink]
    return [*statements[:split], definition.format(p=given, steps=steps, last=last), call.format(p=given, last=last)]


def _program(definitions, statements, last, start: str) -> str:
    header = "import dataclasses\nimport json\nfrom dataclasses import dataclass\n\nimport torch\n\n"
    body = "\n".join(d for d in definitions if d)
    return header + body + f"\n\nt = torch.tensor(1.5)\nstart = {start}\n" + "\n".join(statements) + "\n"


def _rlg003(source: str) -> list:
    return [f for f in check_source(source, select=["RLG003"]) if f.code == "RLG003"]


@SETTINGS
@given(chains())
def test_a_tensor_through_any_chain_is_reported(chain):
    definitions, statements, last, _ = chain
    source = _program(definitions, statements, last, "t")
    with pytest.raises(TypeError, match="not JSON serializable"):
        run_as_module(source)
    assert _rlg003(source), source


@SETTINGS
@given(chains())
def test_the_chain_of_a_converted_tensor_is_not_reported(chain):
    definitions, statements, last, conversion = chain
    source = _program(definitions, statements, last, conversion.format(t="t"))
    run_as_module(source)  # runs: nothing in it is a tensor any more
    assert _rlg003(source) == [], source


def test_the_generator_reaches_every_construct():
    """Each construct can be drawn: from a tensor, or after a construct that gives its shape."""
    gives = {shape for options in CONSTRUCTS.values() for shape, _, _ in options}
    assert set(CONSTRUCTS) - {"any"} <= gives
    assert json.dumps(sorted(gives)) == '["dict", "list", "tensor"]'


@pytest.mark.parametrize("statement", [textwrap.dedent(s) for _, _, s in CONSTRUCTS["any"]])
def test_each_construct_alone_on_a_tensor(statement):
    definitions = [d.format(i=0) for _, d, s in CONSTRUCTS["any"] if s == statement]
    source = _program(definitions, _sunk([statement.format(v="v0", p="start", i=0)], 1, "direct"), "v0", "t")
    with pytest.raises(TypeError):
        run_as_module(source)
    assert _rlg003(source), source
