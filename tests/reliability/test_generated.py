"""Generated programs: valid ones (hypothesmith) and mutated bytes never make check or fix raise;
fix output always parses and a second fix changes nothing."""

from __future__ import annotations

import ast

import hypothesmith
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rlguard.testing import check_source, fix_source

SEED = (
    "import copy, json, torch\nfrom torchrl.collectors import SyncDataCollector\n"
    "from torchrl.modules import LSTMModule\nlstm = LSTMModule(3, 4, in_key='x', out_key='y')\n"
    "lstm.set_recurrent_mode(True)\nout = lstm(td)\njson.dumps({'x': torch.zeros(2)})\n"
)
RUN = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


@RUN
@given(hypothesmith.from_grammar())
def test_valid_programs_never_crash(source):
    findings = check_source(source)
    assert all(f.code not in ("RLG999",) for f in findings), findings
    fixed = fix_source(source, unsafe=True)
    ast.parse(fixed)
    assert fix_source(fixed, unsafe=True) == fixed


@RUN
@given(hypothesmith.from_grammar(), st.sampled_from([SEED]))
def test_risky_code_inside_generated_programs(generated, seed):
    source = seed + generated
    assume(compiles(source))  # e.g. a generated `from __future__ import` is valid only at the top
    found = check_source(source)
    assert not [f for f in found if f.code == "RLG999"], found
    # Whatever follows it, the seed's removed-collector import is still found, and fixed.
    assert ("RLG006", 2) in {(f.code, f.line) for f in found}, found
    fixed = fix_source(source, unsafe=True)
    ast.parse(fixed)
    assert "SyncDataCollector" not in fixed
    assert not [f for f in check_source(fixed) if f.code == "RLG006"]
    assert fix_source(fixed, unsafe=True) == fixed


def compiles(source: str) -> bool:
    try:
        compile(source, "<generated>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@RUN
@given(st.binary(max_size=400), st.integers(min_value=0, max_value=len(SEED)))
def test_mutated_bytes_give_findings_not_exceptions(noise, position):
    data = SEED.encode()[:position] + noise + SEED.encode()[position:]
    source = data.decode("utf-8", errors="surrogateescape")
    try:
        source.encode("utf-8")
    except UnicodeEncodeError:
        source = data.decode("latin-1")
    findings = check_source(source)
    assert not [f for f in findings if f.code == "RLG999"], findings
    fixed = fix_source(source, unsafe=True)
    if fixed != source:
        ast.parse(fixed)
