"""RLG002 fixes over generated variants: names, aliases, nesting, comments, blank lines, CRLF, tabs.

Properties: the fixed code parses; no RLG002 finding is left (every variant generated here is
fixable); fixing twice gives the same text as fixing once.
"""

from __future__ import annotations

import ast
import keyword

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlguard.testing import check_source, fix_source

MODULE_IMPORTS = [
    ("from torchrl.modules import LSTMModule", "LSTMModule"),
    ("from torchrl.modules import GRUModule", "GRUModule"),
    ("from torchrl.modules import LSTMModule as Memory", "Memory"),
    ("import torchrl.modules as tm", "tm.GRUModule"),
    ("from torchrl.modules.tensordict_module.rnn import LSTMModule", "LSTMModule"),
]
CM_IMPORTS = [
    None,
    "from torchrl.modules import set_recurrent_mode",
    "from torchrl.modules import set_recurrent_mode as srm",
    "import torchrl.modules as trm",
    "from torchrl import modules",
]
RESERVED = {"data", "loss_fn", "head", "batch", "print", "range", "len", "tm", "trm", "srm", "modules",
            "Seq", "DQNLoss", "Memory", "LSTMModule", "GRUModule", "set_recurrent_mode", "i", "out",
            "torchrl_set_recurrent_mode", "step", "holder"}
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n) and n not in RESERVED and not n.startswith("__"))
COMMENTS = st.sampled_from(["", "", "# note", "# TODO: check", "# see the docs"])
NESTING = st.lists(st.sampled_from(["def", "if", "for", "while", "with", "try", "else"]), max_size=3)


@st.composite
def programs(draw):
    module_import, ctor = draw(st.sampled_from(MODULE_IMPORTS))
    cm_import = draw(st.sampled_from(CM_IMPORTS))
    receiver = draw(NAMES)
    form = draw(st.sampled_from(["pair", "open", "value-call", "value-loss", "two-receivers"]))
    other = draw(NAMES.filter(lambda n: n != receiver))
    holder = draw(NAMES.filter(lambda n: n not in (receiver, other)))
    nesting = draw(NESTING)
    indent_unit = draw(st.sampled_from(["    ", "  ", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    blank = draw(st.booleans())

    top = [module_import, "from tensordict.nn import TensorDictSequential as Seq",
           "from torchrl.objectives import DQNLoss"]
    if cm_import:
        top.append(cm_import)
    top += ["", f"{receiver} = {ctor}(input_size=3, hidden_size=8, in_key='obs', out_key='h')",
            f"{other} = {ctor}(input_size=3, hidden_size=8, in_key='obs', out_key='v')", ""]

    def comment(level):
        text = draw(COMMENTS)
        return [(level, text)] if text else []

    def trailing():
        text = draw(COMMENTS)
        return f"  {text}" if text else ""

    body: list[tuple[int, str]] = []
    level = 0
    for kind in nesting:
        header = {
            "def": f"def step(batch{level}):",
            "if": "if len(data) > 0:",
            "for": "for i in range(2):",
            "while": "while data:",
            "with": "with open('log.txt') as log:",
            "try": "try:",
            "else": "if not data:",
        }[kind]
        if kind == "else":
            body += [(level, header), (level + 1, "pass"), (level, "else:")]
        else:
            body.append((level, header))
        level += 1
    inner: list[tuple[int, str]] = []
    if form in ("pair", "open", "two-receivers"):
        inner += comment(level)
        inner.append((level, f"{receiver}.set_recurrent_mode(True){trailing()}"))
        if form == "two-receivers":
            inner += comment(level)
            inner.append((level, f"{other}.set_recurrent_mode(True){trailing()}"))
        if blank:
            inner.append((level, ""))
        inner += comment(level)
        inner.append((level, f"out = {receiver}(data){trailing()}"))
        inner.append((level, "loss_fn(out)"))
        if form in ("pair", "two-receivers"):
            inner += comment(level)
            inner.append((level, f"{receiver}.set_recurrent_mode(False){trailing()}"))
            if form == "two-receivers":
                inner.append((level, f"{other}.set_recurrent_mode(False)"))
            inner.append((level, "print(out)"))
    elif form == "value-call":
        inner.append((level, f"{holder} = Seq({receiver}.set_recurrent_mode(True), head){trailing()}"))
        inner += comment(level)
        if blank:
            inner.append((level, ""))
        inner.append((level, f"out = {holder}(data)"))
        inner.append((level, f"{holder}(data){trailing()}"))
        inner.append((level, "print(out)"))
    else:
        inner.append((level, f"{holder} = Seq({receiver}.set_recurrent_mode(), head)"))
        inner += comment(level)
        inner.append((level, f"loss = DQNLoss({holder}, action_space='one-hot'){trailing()}"))
    for depth in reversed(range(len(nesting))):
        if nesting[depth] == "try":
            inner += [(depth, "except ValueError:"), (depth + 1, "pass")]
    body += inner
    lines = top + [indent_unit * lvl + text if text else "" for lvl, text in body]
    return newline.join(lines) + newline


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_fix_leaves_no_finding_is_idempotent_and_parses(source):
    ast.parse(source)  # the generator makes valid programs
    before = [f for f in check_source(source, select=["RLG002"]) if f.code == "RLG002"]
    assert before and all(f.fix is not None for f in before), [f.full_message for f in before]
    fixed = fix_source(source, unsafe=True, select=["RLG002"])
    ast.parse(fixed)
    assert [f for f in check_source(fixed, select=["RLG002"]) if f.code == "RLG002"] == []
    assert fix_source(fixed, unsafe=True, select=["RLG002"]) == fixed
    if "\r\n" in source:
        assert "\n" not in fixed.replace("\r\n", "")
    for line in source.splitlines():
        if "#" in line:
            assert line.strip()[line.strip().index("#"):] in fixed  # comments stay


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_safe_fix_alone_touches_only_statement_forms(source):
    fixed = fix_source(source, unsafe=False, select=["RLG002"])
    ast.parse(fixed)
    left = [f for f in check_source(fixed, select=["RLG002"]) if f.code == "RLG002"]
    assert all(f.fix is not None and f.fix.applicability == "unsafe" for f in left)
    assert fix_source(fixed, unsafe=False, select=["RLG002"]) == fixed
