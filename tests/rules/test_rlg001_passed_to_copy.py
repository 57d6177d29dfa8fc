"""RLG001 where the deep copy sits in the callee: a policy holding an uncopyable member, handed to a
function, a method or a class of another module that deep-copies it (or pickles it to a multi-process
collector), itself, through a project function it passes it on to (by position, by keyword, through
``**kwargs``), or stored by a constructor as ``self.x`` that a method then copies, is reported at the
call, in the caller's file (``ProjectIndex.argument_reaches`` with the rule's copy sinks).

Every flagged program raises the pickling TypeError when run against torch 2.13 / torchrl 0.14.1 /
tensordict 0.14.3; every near miss (the same call with a policy that holds no such member, or a callee
that does not copy what it is given) is not reported, and runs.
"""

from __future__ import annotations

import sys
import textwrap
import uuid

import pytest

pytest.importorskip("torchrl")

from tests.helpers import findings_of, importable_module, run_as_module  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

# The callees' module, imported by the caller as ``helpers_<suffix>``.
HELPERS = textwrap.dedent("""
    import copy
    from dataclasses import dataclass


    class Evaluator:
        def __init__(self, n_steps=10):
            self.n_steps = n_steps

        def evaluate(self, policy):
            return copy.deepcopy(policy).eval()

        def attach(self, policy):
            self.policy = policy
            return self


    def evaluate_policy(n_steps=3, **kwargs):
        evaluator = Evaluator(n_steps)
        return evaluator.evaluate(**kwargs)


    def attach_policy(**kwargs):
        evaluator = Evaluator()
        return evaluator.attach(**kwargs)


    def snapshot(policy):
        return copy.deepcopy(policy)


    def snapshot_by_keyword(policy):
        return copy.deepcopy(x=policy)


    def forwards(net, tag="eval"):
        return snapshot(net)


    def forwards_kwargs(**kwargs):
        return snapshot(**kwargs)


    def snapshot_option(**options):
        return copy.deepcopy(options.get("policy"))


    def snapshot_item(**options):
        return copy.deepcopy(options["policy"])


    class Holder:
        def __init__(self, policy, name="holder"):
            self.name = name
            self.policy = policy

        def frozen(self):
            return copy.deepcopy(self.policy)


    @dataclass
    class Box:
        policy: object

        def frozen(self):
            return copy.deepcopy(self.policy)


    def keeps(policy):
        return policy


    def shallow(policy):
        return copy.copy(policy)


    def copies_state(policy):
        return copy.deepcopy(policy.state_dict())


    def maybe_snapshot(policy, frozen=False):
        if frozen:
            return copy.deepcopy(policy)
        return policy
""")

# name -> the caller's statements after ``policy = ...``, the callee the finding names
FLAGGED = {
    "a method of an instance built in the call": ("out = Evaluator(3).evaluate(policy)", "evaluate"),
    "a method of an instance bound to a name": ("evaluator = Evaluator()\nout = evaluator.evaluate(policy)", "evaluate"),
    "a function, positionally": ("out = snapshot(policy)", "snapshot"),
    "a function, by keyword": ("out = snapshot(policy=policy)", "snapshot"),
    "a function that copies its parameter by keyword": ("out = snapshot_by_keyword(policy)", "snapshot_by_keyword"),
    "a function passing it on": ("out = forwards(policy)", "forwards"),
    "a function passing **kwargs on": ("out = forwards_kwargs(policy=policy)", "forwards_kwargs"),
    "**kwargs passed on to a method of an instance it builds": (
        "out = evaluate_policy(n_steps=2, policy=policy)", "evaluate_policy"),
    "**kwargs read with .get": ("out = snapshot_option(policy=policy, tag=1)", "snapshot_option"),
    "**kwargs read by key": ("out = snapshot_item(policy=policy)", "snapshot_item"),
    "a constructor storing it, a method copying it": ("out = Holder(policy).frozen()", "Holder"),
    "a constructor storing it by keyword": ("holder = Holder(name='h', policy=policy)\nout = holder.frozen()", "Holder"),
    "a dataclass field a method copies": ("out = Box(policy).frozen()", "Box"),
}
# Calls of the same callees that do not copy the policy: with any policy, they are not reported.
NOT_COPYING = {
    "a function returning its parameter": "out = keeps(policy)",
    "a shallow copy": "out = shallow(policy)",
    "a deep copy of the state dict": "out = copies_state(policy)",
    "a stored policy no method copies, given where the copy is not": "out = Holder(None, name=policy)",
    "a copy on a branch the call does not take": "out = maybe_snapshot(policy)",
    "a keyword **kwargs takes but the copy does not read": "out = snapshot_option(model=policy)",
    "**kwargs passed on to a method that keeps it": "out = attach_policy(policy=policy)",
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The helpers module on ``sys.path`` under a unique name; the caller's source for a case."""
    module = importable_module(tmp_path, monkeypatch, HELPERS)
    helpers = next(module)

    def caller(statements: str, member: str = "self.lock = threading.Lock()") -> str:
        names = "Box, Evaluator, Holder, attach_policy, copies_state, evaluate_policy, forwards, forwards_kwargs, keeps, maybe_snapshot, shallow, " \
                "snapshot, snapshot_by_keyword, snapshot_item, snapshot_option"
        return textwrap.dedent(f"""\
            import queue
            import threading
            from copy import deepcopy

            from tensordict.nn import TensorDictModule
            from torch import nn

            from {helpers} import {names}


            class StreamingNet(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(3, 1)
                    {member}


            config = deepcopy({{"lr": 1e-3}})
            policy = TensorDictModule(StreamingNet(), in_keys=["observation"], out_keys=["action"])
        """) + statements + "\n"

    yield caller, {f"{helpers}.py": HELPERS}
    next(module, None)



@pytest.mark.parametrize("name", list(FLAGGED))
def test_a_policy_reaching_the_callees_deep_copy_is_reported_at_the_call_and_crashes(project, name):
    caller, extra = project
    statements, callee = FLAGGED[name]
    source = caller(statements)
    with pytest.raises(TypeError, match="cannot pickle"):
        run_as_module(source)
    (finding,) = findings_of("RLG001", source, extra)
    assert finding.line > 18  # at the call, in the caller's statements
    assert finding.message.startswith("`StreamingNet` cannot be deep-copied by `copy.deepcopy` in "
                                      f"`{callee}`, which is given it here: `self.lock` holds a thread lock")
    assert "__deepcopy__" in finding.full_message and "{" not in finding.full_message


@pytest.mark.parametrize("name", list(FLAGGED))
def test_the_same_call_with_a_copyable_policy_is_not_reported_and_runs(project, name):
    caller, extra = project
    source = caller(FLAGGED[name][0], member="self.scale = 2.0")
    assert findings_of("RLG001", source, extra) == []
    run_as_module(source)


@pytest.mark.parametrize("name", list(NOT_COPYING))
def test_a_callee_that_does_not_copy_the_policy_is_not_reported_and_runs(project, name):
    caller, extra = project
    source = caller(NOT_COPYING[name])
    assert findings_of("RLG001", source, extra) == []
    run_as_module(source)


def test_a_queue_in_a_dict_reaching_a_method_of_another_module(project):
    """Blind case 008's shape: ``self.channels = {name: queue.Queue() ...}``, the policy copied by
    another class's method it is given to."""
    caller, extra = project
    member = 'self.channels = {name: queue.Queue(maxsize=8) for name in ("features", "actions")}'
    source = caller("out = Evaluator().evaluate(policy)", member=member)
    with pytest.raises(TypeError, match="cannot pickle"):
        run_as_module(source)
    (finding,) = findings_of("RLG001", source, extra)
    assert "`self.channels[...]` holds a thread queue" in finding.message


def test_a_policy_pickled_by_a_multi_process_collector_in_the_callee_names_policy_factory(project):
    """A ``__deepcopy__`` does not help a policy that a callee hands to a multi-process collector."""
    helpers = textwrap.dedent("""
        from torchrl.collectors import MultiSyncCollector


        def start(env_maker, policy):
            return MultiSyncCollector([env_maker], policy, frames_per_batch=8, total_frames=16)
    """)
    caller, extra = project
    extra = {**extra, "starter.py": helpers}
    source = caller("from starter import start\n\ncollector = start(None, policy)")
    (finding,) = findings_of("RLG001", source, extra)
    assert "cannot be pickled to `MultiSyncCollector`'s workers in `start`" in finding.message
    assert "policy_factory" in finding.full_message


def test_a_module_of_helpers_alone_has_nothing_to_report():
    """The copies in the callees are reported where a policy is passed, never in the helpers' file."""
    assert findings_of("RLG001", HELPERS, {}) == []


LOSSES = textwrap.dedent("""
    from torchrl.objectives import DDPGLoss, DQNLoss


    def make_ddpg(actor, critic, gamma=0.99):
        return DDPGLoss(actor, critic)


    def make_dqn(qnet):
        return DQNLoss(qnet, action_space="one-hot")
""")

LOSS_CALLER = textwrap.dedent("""\
    import threading
    from copy import deepcopy

    import torch
    from torch import nn
    from torchrl.modules import Actor, QValueActor, ValueOperator

    from losses_{suffix} import make_ddpg, make_dqn


    class LockedNet(nn.Module):
        def __init__(self, inputs, outputs):
            super().__init__()
            self.lin = nn.Linear(inputs, outputs)
            self.lock = threading.Lock()

        def forward(self, *inputs):
            return self.lin(torch.cat(inputs, -1))


    config = deepcopy({{"gamma": 0.99}})
""")


@pytest.fixture
def losses(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    suffix = uuid.uuid4().hex[:8]
    (tmp_path / f"losses_{suffix}.py").write_text(LOSSES)
    yield LOSS_CALLER.format(suffix=suffix), {f"losses_{suffix}.py": LOSSES}
    for name in [m for m in sys.modules if m.endswith(suffix)]:
        del sys.modules[name]


def test_a_network_handed_to_a_factory_of_a_copying_loss_is_reported_and_crashes(losses):
    caller, extra = losses
    source = caller + ('actor = Actor(nn.Linear(3, 1), in_keys=["observation"])\n'
                       'critic = ValueOperator(LockedNet(4, 1), in_keys=["observation", "action"])\n'
                       "loss = make_ddpg(actor, critic=critic)\n")
    with pytest.raises(TypeError, match="cannot pickle"):
        run_as_module(source)
    (finding,) = findings_of("RLG001", source, extra)
    assert finding.message.startswith("`LockedNet` cannot be deep-copied by `DDPGLoss` (it copies its networks) in "
                                      "`make_ddpg`, which is given it here: `self.lock` holds a thread lock")


def test_a_network_handed_to_a_factory_of_a_loss_that_keeps_it_is_not_reported_and_runs(losses):
    caller, extra = losses
    source = caller + ('qnet = QValueActor(LockedNet(3, 2), in_keys=["observation"], action_space="one-hot")\n'
                       "loss = make_dqn(qnet)\n")
    assert findings_of("RLG001", source, extra) == []
    run_as_module(source)
