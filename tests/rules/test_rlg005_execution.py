"""RLG005 against a real ``torchrl.trainers.Trainer`` (torch 2.13, torchrl 0.14.1).

A tiny trainer (mock environment, small collector, a real DDPG loss, Adam) shows what the rule
claims: an unknown destination makes ``register_op`` raise, the fixed one is accepted, and a hook
class missing ``state_dict``/``load_state_dict``/``register`` breaks checkpoints for real.
"""

from __future__ import annotations

import os
import sys
import runpy
import typing
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
from torchrl.collectors import Collector  # noqa: E402
from torchrl.modules import MLP, Actor, ValueOperator  # noqa: E402
from torchrl.objectives import DDPGLoss, SoftUpdate  # noqa: E402
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv  # noqa: E402
from torchrl.trainers import Trainer, TrainerHookBase  # noqa: E402
from torchrl.trainers.trainers import TargetNetUpdaterHook  # noqa: E402

from rlguard.rules.data import trainer_hooks_for  # noqa: E402
from rlguard.testing import check_source, fix_source  # noqa: E402


class _QValue(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP(in_features=14, out_features=1, num_cells=[8])

    def forward(self, observation, action):
        return self.mlp(torch.cat([observation, action], -1))


def make_loss():
    actor = Actor(MLP(in_features=7, out_features=7, num_cells=[8]), in_keys=["observation"])
    return DDPGLoss(actor, ValueOperator(_QValue(), in_keys=["observation", "action"])), actor


@pytest.fixture
def trainer(tmp_path):
    loss, actor = make_loss()
    collector = Collector(ContinuousActionVecMockEnv(), actor, frames_per_batch=8, total_frames=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield Trainer(collector=collector, total_frames=16, frame_skip=1, optim_steps_per_batch=1, loss_module=loss,
                      optimizer=torch.optim.Adam(loss.parameters(), lr=1e-3), progress_bar=False,
                      save_trainer_file=str(tmp_path / "trainer.pt"))
    collector.shutdown()


def rlg005(source):
    return [f for f in check_source(source, select=["RLG005"]) if f.code == "RLG005"]


def test_destinations_match_torchrl(trainer):
    accepted = typing.get_args(typing.get_type_hints(Trainer.register_op)["dest"])
    assert set(accepted) == set(trainer_hooks_for((0, 14, 1)))
    for dest in accepted:  # every listed destination really is accepted
        trainer.register_op(dest, _noop_for(dest))


def _noop_for(dest):
    if dest in ("pre_steps_log", "post_steps_log", "post_optim_log", "pre_epoch_log", "post_epoch_log"):
        def log(batch) -> tuple[str, float]:
            return "x", 0.0
        return log
    if dest == "post_optim_complete_log":
        def complete(step: int, batch=None) -> tuple[str, float]:
            return "x", 0.0
        return complete
    if dest in ("batch_process", "process_optim_batch", "post_loss", "process_loss"):
        return lambda batch: batch
    if dest == "optimizer":
        return lambda batch, *args: batch
    return lambda: None


ATTACH = '''\
def attach(trainer, op):
    trainer.register_op("post_step", op)
'''


def test_misspelled_destination_raises_and_the_fix_is_accepted(trainer, tmp_path):
    assert len(rlg005(ATTACH)) == 1
    path = tmp_path / "before.py"
    path.write_text(ATTACH)
    with pytest.raises(RuntimeError, match="post_step is not recognised"):
        runpy.run_path(str(path))["attach"](trainer, lambda: None)

    fixed = fix_source(ATTACH, select=["RLG005"], unsafe=True)
    assert 'trainer.register_op("post_steps", op)' in fixed
    assert rlg005(fixed) == []
    path = tmp_path / "after.py"
    path.write_text(fixed)
    calls = []
    runpy.run_path(str(path))["attach"](trainer, lambda: calls.append(1))
    trainer._post_steps_hook()
    assert calls == [1]


HOOK = '''\
from torchrl.trainers import TrainerHookBase


class CountSteps(TrainerHookBase):
    def __init__(self):
        self.steps = 0

    def __call__(self):
        self.steps += 1

    def register(self, trainer, name="count_steps"):
        trainer.register_module(name, self)
        trainer.register_op("post_steps", self)
'''


def test_hook_without_state_dict_breaks_the_checkpoint(trainer, tmp_path):
    (finding,) = rlg005(HOOK)
    assert "`state_dict`, `load_state_dict`" in finding.full_message
    path = tmp_path / "hook.py"
    path.write_text(HOOK)
    hook = runpy.run_path(str(path))["CountSteps"]()  # TrainerHookBase is not an ABC: this works
    hook.register(trainer)
    with pytest.raises(NotImplementedError):
        trainer.save_trainer(force_save=True)
    assert not os.path.exists(trainer.save_trainer_file)


def test_complete_hook_checkpoints(trainer):
    class CountSteps(TrainerHookBase):
        def __init__(self):
            self.steps = 0

        def __call__(self):
            self.steps += 1

        def state_dict(self):
            return {"steps": self.steps}

        def load_state_dict(self, state_dict):
            self.steps = state_dict["steps"]

        def register(self, trainer, name="count_steps"):
            trainer.register_module(name, self)
            trainer.register_op("post_steps", self)

    hook = CountSteps()
    hook.register(trainer)
    hook.steps = 3
    state = trainer.state_dict()
    hook.steps = 0
    trainer.load_state_dict(state)
    assert hook.steps == 3


def test_hook_without_load_state_dict_breaks_loading(trainer):
    class Half(TrainerHookBase):
        def state_dict(self):
            return {}

        def register(self, trainer, name="half"):
            trainer.register_module(name, self)

    Half().register(trainer)
    state = trainer.state_dict()
    with pytest.raises(NotImplementedError):
        trainer.load_state_dict(state)


def test_hook_without_register_cannot_be_registered(trainer):
    class NoRegister(TrainerHookBase):
        def state_dict(self):
            return {}

        def load_state_dict(self, state_dict):
            pass

    with pytest.raises(NotImplementedError):
        NoRegister().register(trainer, "x")


def test_mro_decides_which_state_dict_runs():
    """``class H(TrainerHookBase, nn.Module)`` gets the raising state_dict; the other order does not."""

    class First(TrainerHookBase, torch.nn.Module):
        def register(self, trainer, name):
            pass

    class Second(torch.nn.Module, TrainerHookBase):
        def register(self, trainer, name):
            pass

    torch.nn.Module.__init__(first := First.__new__(First))
    with pytest.raises(NotImplementedError):
        first.state_dict()
    assert Second().state_dict() == {}


def test_torchrl_target_net_updater_hook_lacks_state_dict():
    """The one finding in torchrl's own sources is real: the class is incomplete."""
    loss, _ = make_loss()
    hook = TargetNetUpdaterHook(SoftUpdate(loss, eps=0.9))
    with pytest.raises(NotImplementedError):
        hook.state_dict()
    with pytest.raises(NotImplementedError):
        hook.load_state_dict({})


CONSTANT = '''\
DEST = "{dest}"


def attach(trainer, op):
    trainer.register_op(DEST, op)
'''


def test_a_destination_held_in_a_module_constant(trainer, tmp_path):
    (finding,) = rlg005(CONSTANT.format(dest="post_step"))
    assert "`post_steps`" in finding.full_message and finding.fix is None  # the constant may serve elsewhere
    path = tmp_path / "constant.py"
    path.write_text(CONSTANT.format(dest="post_step"))
    with pytest.raises(RuntimeError, match="post_step is not recognised"):
        runpy.run_path(str(path))["attach"](trainer, lambda: None)


@pytest.mark.parametrize("source", [
    CONSTANT.format(dest="post_steps"),  # a valid destination
    CONSTANT.format(dest="post_step").replace('"\n', '"\nif OTHER:\n    DEST = "post_steps"\n', 1),  # bound twice
])
def test_a_constant_destination_near_miss(source):
    assert rlg005(source) == []


FACTORY = '''\
from torchrl.trainers import Trainer


def make_trainer(collector, loss, optimizer, path):
    return Trainer(collector=collector, total_frames=16, frame_skip=1, optim_steps_per_batch=1, loss_module=loss,
                   optimizer=optimizer, progress_bar=False, save_trainer_file=path)
'''

USES_FACTORY = '''\
from factory import make_trainer


def train(collector, loss, optimizer, path, op):
    trainer = make_trainer(collector, loss, optimizer, path)
    trainer.register_hook("post_step", op)
    return trainer
'''

NOT_A_TRAINER = '''\
class Scheduler:
    def register_hook(self, dest, op):
        pass


def make_trainer(collector, loss, optimizer, path):
    return Scheduler()
'''


def test_register_hook_on_a_trainer_from_a_project_factory(tmp_path):
    found = [f for f in check_source(USES_FACTORY, select=["RLG005"], extra_files={"factory.py": FACTORY})
             if f.code == "RLG005"]
    assert len(found) == 1 and "`register_hook('post_step', ...)`" in found[0].full_message
    # A factory of the project that builds something else: not a Trainer, not reported.
    assert [f for f in check_source(USES_FACTORY, select=["RLG005"], extra_files={"factory.py": NOT_A_TRAINER})
            if f.code == "RLG005"] == []

    (tmp_path / "factory.py").write_text(FACTORY)
    (tmp_path / "train.py").write_text(USES_FACTORY)
    loss, actor = make_loss()
    collector = Collector(ContinuousActionVecMockEnv(), actor, frames_per_batch=8, total_frames=16)
    sys.path.insert(0, str(tmp_path))
    try:
        train = runpy.run_path(str(tmp_path / "train.py"))["train"]
        with warnings.catch_warnings(), pytest.raises(RuntimeError, match="post_step is not recognised"):
            warnings.simplefilter("ignore")
            train(collector, loss, torch.optim.Adam(loss.parameters()), str(tmp_path / "t.pt"), lambda: None)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("factory", None)
        collector.shutdown()


def test_register_op_on_a_project_factory_that_builds_no_trainer_is_not_reported():
    source = USES_FACTORY.replace("register_hook", "register_op")
    assert [f for f in check_source(source, select=["RLG005"], extra_files={"factory.py": NOT_A_TRAINER})
            if f.code == "RLG005"] == []


@pytest.mark.parametrize("rebinding", [
    'DEST = "post_steps"\n',  # bound again further down: the function reads the last value
    'def configure():\n    global DEST\n    DEST = "post_steps"\n',
])
def test_a_constant_rebound_after_the_function_is_not_read_as_the_first_value(rebinding, trainer, tmp_path):
    source = CONSTANT.format(dest="post_step") + "\n\n" + rebinding
    assert rlg005(source) == []
    if rebinding.startswith("DEST"):  # the call really takes the last value: torchrl accepts it
        path = tmp_path / "rebound.py"
        path.write_text(source)
        runpy.run_path(str(path))["attach"](trainer, lambda: None)
