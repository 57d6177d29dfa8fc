"""RLG003 for what an environment's rollout holds: an entry of a TensorDict (``td["next", "reward"]``,
``td.get(key)``) is a tensor or a nested TensorDict, and a reduction of it (``.sum()``, ``.max()``,
``.mean()``) is one of them too, which of them unknown: the engine's "mixed" kind. A "mixed" argument
reaches a sink in a callee, or gives what the callee returns, only as both a tensor and a TensorDict
would (``engine.values.either_kind``), so nothing that needs one of them is misled. A function given an
environment (the summary kind "env") returns what its rollouts hold.

Every flagged program raises TypeError when run against torchrl 0.14.1's mock environment; every near
miss (the same value converted by ``.item()``/``float()``, a function building plain values, a callee
that needs a TensorDict) is not reported.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.helpers import caller_and_helpers, findings_of, run_as_module
from rlguard.testing import check_source, fix_source

pytest.importorskip("torchrl")

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

HELPERS = textwrap.dedent("""
    import json
    from dataclasses import asdict, dataclass


    @dataclass
    class EpisodeStats:
        length: int
        total_reward: object


    def write_report(stats):
        return json.dumps(asdict(stats))


    def dump(value):
        return json.dumps(value)


    def dump_entries(value):
        return json.dumps(value.to_dict())  # a TensorDict's: a tensor has no ``to_dict``


    class Evaluator:
        def __init__(self, env, steps=3):
            self.env = env
            self.steps = steps

        def run(self):
            rollout = self.env.rollout(self.steps)
            rewards = rollout["next", "reward"]
            return {"return": rewards.sum(), "length": rollout.shape[-1]}

        def run_floats(self):
            rollout = self.env.rollout(self.steps)
            return {"return": rollout["next", "reward"].sum().item(), "length": rollout.shape[-1]}


    def collect(env, steps=3):
        history = []
        for i in range(2):
            data = env.rollout(steps)
            entry = {"iteration": i}
            entry["mean_reward"] = data["next", "reward"].mean()
            history.append(entry)
        return history


    def collect_floats(env, steps=3):
        history = []
        for i in range(2):
            data = env.rollout(steps)
            entry = {"iteration": i}
            entry["mean_reward"] = data["next", "reward"].mean().item()
            history.append(entry)
        return history
""")

CALLER = textwrap.dedent("""\
    import json

    from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

    from {helpers} import EpisodeStats, Evaluator, collect, collect_floats, dump, dump_entries, write_report

    env = ContinuousActionVecMockEnv()
    rollout = env.rollout(4)
    rewards = rollout["next", "reward"]
    header = json.dumps({{"run": 1}})
""")

# name -> (statements, the callee named, (old, new): the conversion that makes it a near miss)
FLAGGED = {
    "a reduction of an entry in a dataclass field": (
        "out = write_report(EpisodeStats(4, rewards.sum()))", "write_report", ("rewards.sum()", "rewards.sum().item()")),
    "a reduction of an entry read by tuple key": (
        "out = dump(rollout['next', 'reward'].max())", "dump", (".max()", ".max().item()")),
    "a reduction of an entry read with get": (
        "out = dump(rollout.get('action').mean())", "dump", ("rollout.get('action').mean()",
                                                             "float(rollout.get('action').mean())")),
    "a list of dicts a function given an environment builds from its rollouts": (
        "out = dump(collect(env))", "dump", ("collect(env)", "collect_floats(env)")),
    "dicts a method returns from the environment its instance was built with": (
        "evaluator = Evaluator(env, steps=2)\nresults = {}\nfor name in ('a', 'b'):\n"
        "    results[name] = evaluator.run()\nout = dump(results)", "dump", ("evaluator.run()", "evaluator.run_floats()")),
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    yield from caller_and_helpers(tmp_path, monkeypatch, HELPERS, CALLER)


@pytest.mark.parametrize("name", list(FLAGGED))
def test_a_rollout_value_reaching_the_callees_encoder_is_reported_at_the_call(project, name):
    caller, extra = project
    statements, callee, _ = FLAGGED[name]
    source = caller(statements)
    with pytest.raises(TypeError, match="not JSON serializable"):
        run_as_module(source)
    (finding,) = findings_of("RLG003", source, extra)
    assert finding.message.startswith(f"`{callee}` passes `")
    assert finding.line == 10 + statements.count("\n") + 1  # at the call, in the caller's statements


@pytest.mark.parametrize("name", list(FLAGGED))
def test_the_same_call_with_a_conversion_is_not_reported_and_runs(project, name):
    caller, extra = project
    statements, _, (old, new) = FLAGGED[name]
    assert old in statements
    source = caller(statements.replace(old, new))
    assert findings_of("RLG003", source, extra) == [], name
    json.loads(run_as_module(source)["out"])


def test_a_callee_that_needs_a_tensordict_is_not_given_one_by_a_mixed_value(project):
    """``dump_entries`` encodes ``value.to_dict()``, tensors only when ``value`` is a TensorDict: a
    reduction of an entry is not known to be one (here it is a tensor, and the call raises
    AttributeError, not the encoder's TypeError)."""
    caller, extra = project
    source = caller("out = dump_entries(rewards.sum())")
    assert findings_of("RLG003", source, extra) == []
    with pytest.raises(AttributeError, match="to_dict"):
        run_as_module(source)


@pytest.mark.parametrize("expression", ["rewards.sum()", "rollout['next', 'reward'].max()",
                                        "rollout.get('action').mean()"])
def test_an_identified_reduction_in_the_callers_encoder_is_fixed_and_then_runs(project, expression):
    caller, extra = project
    source = caller(f"out = json.dumps({{'total': {expression}}})")
    with pytest.raises(TypeError, match="not JSON serializable"):
        run_as_module(source)
    (finding,) = [f for f in check_source(source, select=["RLG003"], extra_files=extra) if f.code == "RLG003"]
    assert finding.fix is not None
    fixed = fix_source(source, select=["RLG003"], extra_files=extra)
    assert fixed != source and "tolist()" in fixed
    assert isinstance(json.loads(run_as_module(fixed)["out"])["total"], (float, list))


def test_a_method_of_an_instance_built_with_no_environment_is_unknown(project):
    caller, extra = project
    source = caller("out = dump({'run': Evaluator(None).steps, 'plain': 1})")
    assert findings_of("RLG003", source, extra) == []
    assert json.loads(run_as_module(source)["out"]) == {"run": 3, "plain": 1}


def test_a_value_read_with_a_default_is_unknown(project):
    """``td.get(key, default)`` may give the default: what it is, the model does not say."""
    caller, extra = project
    source = caller("out = dump(rollout.get('missing', 0.0))")
    assert findings_of("RLG003", source, extra) == []
    assert json.loads(run_as_module(source)["out"]) == 0.0
