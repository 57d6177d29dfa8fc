"""RLG003 where the encoder sits in the callee: a tensor, or a dict or list of tensors, passed to a
function, a ``**kwargs`` function or a lambda of the project (in another module, or in the same one) that
hands what it is given to ``json.dump(s)`` is reported at the call, in the caller's file.

Every flagged program raises TypeError when run; after ``rlguard fix --unsafe-fixes`` it runs and writes
what the encoder writes when it converts each tensor with ``.tolist()``. Every near miss (the same call
with ``.item()``, ``.tolist()`` or ``float()``, or a callee that dumps no tensor of what it is given) is
not reported, and runs.
"""

from __future__ import annotations

import json
import textwrap
from unittest import mock

import pytest

from tests.helpers import findings_of, importable_module, run_as_module
from rlguard.testing import check_source, fix_source

torch = pytest.importorskip("torch")

# The callee's module, imported by the caller as ``helpers_<suffix>``.
HELPERS = textwrap.dedent("""
    import json


    def log_jsonl(**fields):
        return json.dumps(dict(**fields))


    def log_to(stream, **fields):
        json.dump(fields, stream)


    def dump_metrics(metrics):
        return json.dumps(metrics)


    def log(metrics, step=0):
        return dump_metrics(metrics)


    def scaled(x):
        return x * 2


    def dump_scaled(x):
        return json.dumps({"x": scaled(x)})


    dump = lambda d: json.dumps(d)
""")

# name -> (caller's statements after ``loss = ...``, the calls reported, then (old, new) conversions
# that make it a near miss)
CASES = {
    "tensors as keywords into **fields, dict(**fields) dumped": (
        "out = log_jsonl(loss=loss, step=1)", ["log_jsonl"], ("loss=loss,", "loss=loss.item(),")),
    "tensors as keywords into **fields, json.dump(fields, f)": (
        "stream = io.StringIO()\nlog_to(stream, loss=loss * 2, step=1)\nout = stream.getvalue()", ["log_to"],
        ("loss=loss * 2,", "loss=float(loss * 2),")),
    "a dict of tensors given to a function that dumps its parameter": (
        'out = dump_metrics({"loss": loss, "step": 1})', ["dump_metrics"], ('"loss": loss,', '"loss": loss.item(),')),
    "a dict of tensors bound to a name first": (
        'metrics = {"loss": loss.detach(), "max": loss.max()}\nout = dump_metrics(metrics)', ["dump_metrics"],
        ("loss.detach()", "loss.detach().tolist()"), ("loss.max()", "loss.max().item()")),
    "a list of tensors given to a function that dumps its parameter": (
        "out = dump_metrics([loss, loss * 2])", ["dump_metrics"], ("[loss, loss * 2]", "[loss.item(), float(loss * 2)]")),
    "a dict of tensors forwarded to the function that dumps it": (
        'out = log({"loss": loss}, step=3)', ["log"], ('{"loss": loss}', '{"loss": loss.tolist()}')),
    "a tensor through another project call of the callee": (
        "out = dump_scaled(loss)", ["dump_scaled"], ("dump_scaled(loss)", "dump_scaled(loss.item())")),
    "a dict of tensors given to a lambda of another module": (
        'out = dump({"loss": loss})', ["dump"], ('{"loss": loss}', '{"loss": float(loss)}')),
    "a dict of tensors given to a lambda of this module": (
        'dump_here = lambda d: json.dumps(d)\nout = dump_here({"loss": loss})', ["dump_here"],
        ('{"loss": loss}', '{"loss": loss.item()}')),
    "tensors as keywords into a **kw lambda": (
        "stream = io.StringIO()\nwrite = lambda **kw: json.dump(kw, stream)\nwrite(loss=loss, step=1)\n"
        "out = stream.getvalue()", ["write"], ("loss=loss,", "loss=loss.tolist(),")),
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The helpers module on ``sys.path`` under a unique name; the caller's source for a case."""
    module = importable_module(tmp_path, monkeypatch, HELPERS)
    helpers = next(module)

    def caller(statements: str) -> str:
        names = "dump, dump_metrics, dump_scaled, log, log_jsonl, log_to"
        return (f"import io\nimport json\n\nimport torch\n\nfrom {helpers} import {names}\n\n"
                f"loss = torch.arange(3.0).mean()\n{statements}\n")

    yield caller, {f"{helpers}.py": HELPERS}
    next(module, None)



def _with_tolist_default(code: str) -> dict:
    with mock.patch.object(json.JSONEncoder, "default", lambda self, value: value.tolist()):
        return run_as_module(code)


@pytest.mark.parametrize("name", list(CASES))
def test_a_tensor_reaching_the_callees_encoder_is_reported_at_the_call_and_fixed(project, name):
    caller, extra = project
    statements, callees, *_ = CASES[name]
    source = caller(statements)
    with pytest.raises(TypeError, match="not JSON serializable"):
        run_as_module(source)
    found = findings_of("RLG003", source, extra)
    assert [f.message.partition("`")[2].partition("`")[0] for f in found] == callees, name
    assert all(" passes `" in f.message and "raises TypeError on torch tensors" in f.message for f in found)
    assert all(f.line > 6 for f in found)  # in the caller's statements, where the tensor is passed
    fixed = fix_source(source, select=["RLG003"], unsafe=True, extra_files=extra)
    assert fixed != source and findings_of("RLG003", fixed, extra) == []
    assert json.loads(run_as_module(fixed)["out"]) == json.loads(_with_tolist_default(source)["out"])


@pytest.mark.parametrize("name", list(CASES))
def test_the_same_call_with_a_conversion_is_not_reported_and_runs(project, name):
    caller, extra = project
    statements, _, *conversions = CASES[name]
    for old, new in conversions:
        assert old in statements, (name, old)
        statements = statements.replace(old, new)
    source = caller(statements)
    assert findings_of("RLG003", source, extra) == [], name
    json.loads(run_as_module(source)["out"])


@pytest.mark.parametrize("statements", [
    # the callee dumps the keys of the dict it is given, or its length
    "def names(d):\n    return json.dumps(list(d))\n\nout = names({'loss': loss})",
    "def count(d):\n    return json.dumps(len(d))\n\nout = count({'loss': loss})",
    # a lambda's parameter shadows a module name bound to tensors
    "d = {'loss': loss}\nshow = lambda d: json.dumps(d)\nout = show({'step': 1})",
    # the callee dumps its parameter only on some paths, which the call does not take
    "def maybe(d, as_json=False):\n    return json.dumps(d) if as_json else d\n\nout = json.dumps(maybe(1))\n"
    "maybe({'loss': loss})",
    # a lambda with an encoder hook
    "safe = lambda d: json.dumps(d, default=lambda v: v.tolist())\nout = safe({'loss': loss})",
])
def test_near_misses_of_a_sink_in_the_callee(project, statements):
    caller, extra = project
    source = caller(statements)
    assert findings_of("RLG003", source, extra) == [], statements
    json.loads(run_as_module(source)["out"])


def test_a_module_of_helpers_alone_has_nothing_to_report():
    """The sinks in the callees are reported where a tensor is passed, never in the helpers' file."""
    assert [f for f in check_source(HELPERS, select=["RLG003"]) if f.code == "RLG003"] == []
