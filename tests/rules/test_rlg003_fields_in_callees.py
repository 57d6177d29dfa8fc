"""RLG003 for an instance whose fields hold tensors (a dataclass, a NamedTuple, a class assigning a tensor
to ``self.x``), passed to a function of another module that encodes its fields (``dataclasses.asdict``,
``astuple``, ``vars``, ``__dict__``, ``_asdict()``): the summary kind "fields" of the engine's value
model (``engine.values.SUMMARY_KINDS``). Reported at the call, in the caller's file, with a remedy and
no fix (the tensors sit in the instance, built elsewhere).

Every flagged program raises TypeError when run; every near miss (the same instance with its fields
converted by ``.item()``/``.tolist()``, a dataclass whose fields are floats, a callee that encodes only
the field names or their count) is not reported, and runs.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.helpers import caller_and_helpers, findings_of, run_as_module

torch = pytest.importorskip("torch")

HELPERS = textwrap.dedent("""
    import dataclasses
    import json
    from dataclasses import asdict, astuple


    def write_report(result, indent=None):
        return json.dumps(asdict(result), indent=indent)


    def write_tuple(result):
        return json.dumps(astuple(result))


    def write_vars(result):
        return json.dumps(vars(result))


    def write_dict(result):
        return json.dumps(result.__dict__)


    def write_named(row):
        return json.dumps(row._asdict())


    def report_on(result, tag="eval"):
        return write_report(result)


    def write_names(result):
        return json.dumps([field.name for field in dataclasses.fields(result)])


    def write_count(result):
        return json.dumps(len(asdict(result)))
""")

CALLER = textwrap.dedent("""\
    import json
    from dataclasses import dataclass
    from typing import NamedTuple

    import torch

    from {helpers} import report_on, write_count, write_dict, write_named, write_names, write_report, write_tuple, write_vars


    @dataclass
    class EvalResult:
        episodes: int
        mean_return: torch.Tensor


    @dataclass
    class FloatResult:
        episodes: int
        mean_return: float


    class Row(NamedTuple):
        step: int
        loss: torch.Tensor


    class FloatRow(NamedTuple):
        step: int
        loss: float


    class Tracker:
        def __init__(self):
            self.best = torch.zeros(())


    def evaluate(episodes=3):
        return EvalResult(episodes, torch.rand(episodes).mean())


    returns = torch.rand(4)
    header = json.dumps({{"run": "eval"}})  # the file names an encoder: the rule's text pre-filter reads it
""")

# name -> (statements, the callee named; then (old, new) conversions that make it a near miss)
CASES = {
    "asdict of a dataclass built here": (
        "out = write_report(EvalResult(4, returns.mean()))", "write_report",
        ("EvalResult(4, returns.mean())", "FloatResult(4, returns.mean().item())")),
    "asdict of a dataclass a project function returns": (
        "result = evaluate()\nout = write_report(result, indent=2)", "write_report",
        ("result = evaluate()", "result = FloatResult(3, 1.0)")),
    "asdict through a function passing it on": (
        "out = report_on(evaluate(), tag='x')", "report_on", ("evaluate()", "FloatResult(1, 2.0)")),
    "astuple": (
        "stats = EvalResult(2, returns.max())\nout = write_tuple(stats)", "write_tuple",
        ("EvalResult(2, returns.max())", "FloatResult(2, returns.max().item())")),
    "vars of an instance assigning a tensor in __init__": (
        "out = write_vars(Tracker())", "write_vars", ("Tracker()", "FloatResult(0, 0.5)")),
    "__dict__ of a dataclass built with a tensor under a float annotation": (
        "out = write_dict(FloatResult(1, returns.sum()))", "write_dict", ("returns.sum()", "returns.sum().tolist()")),
    "_asdict of a NamedTuple": (
        "out = write_named(Row(3, returns.mean()))", "write_named", ("Row(3, returns.mean())", "FloatRow(3, float(returns.mean()))")),
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    yield from caller_and_helpers(tmp_path, monkeypatch, HELPERS, CALLER)



@pytest.mark.parametrize("name", list(CASES))
def test_an_instance_with_tensor_fields_reaching_the_callees_encoder_is_reported_at_the_call(project, name):
    caller, extra = project
    statements, callee, _ = CASES[name]
    source = caller(statements)
    with pytest.raises(TypeError, match="not JSON serializable"):
        run_as_module(source)
    (finding,) = findings_of("RLG003", source, extra)
    assert finding.message.startswith(f"`{callee}` passes `")
    assert finding.line > 41  # at the call, in the caller's statements
    assert "fields hold tensors" in finding.full_message and "default=lambda value: value.tolist()" in finding.full_message
    assert finding.fix is None


@pytest.mark.parametrize("name", list(CASES))
def test_the_same_call_with_converted_fields_is_not_reported_and_runs(project, name):
    caller, extra = project
    statements, _, (old, new) = CASES[name]
    assert old in statements
    source = caller(statements.replace(old, new))
    assert findings_of("RLG003", source, extra) == [], name
    json.loads(run_as_module(source)["out"])


@pytest.mark.parametrize("statements", [
    "out = write_names(EvalResult(4, returns.mean()))",  # only the field names are encoded
    "out = write_count(evaluate())",  # only how many fields there are
    "out = json.dumps(evaluate().episodes)",  # a plain field read from it
])
def test_callees_that_encode_no_tensor_field_are_not_reported(project, statements):
    caller, extra = project
    source = caller(statements)
    assert findings_of("RLG003", source, extra) == []
    json.loads(run_as_module(source)["out"])


def test_the_blind_case_015_shape_runs_once_the_encoder_converts_tensors(project):
    """The remedy's ``default=`` removes the crash: the helper given it encodes the same instance."""
    caller, extra = project
    source = caller("result = evaluate()\nout = json.dumps(__import__('dataclasses').asdict(result), "
                    "default=lambda value: value.tolist())")
    assert findings_of("RLG003", source, extra) == []
    assert set(json.loads(run_as_module(source)["out"])) == {"episodes", "mean_return"}
