"""TrainingGuard: each check catches a planted bug and stays silent on correct training."""

from __future__ import annotations

import copy
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from rlguard_runtime_helpers import COMPONENTS, only
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.checkpoint import Checkpoint
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, RandomSampler, TensorDictReplayBuffer
from torchrl.envs import Compose, EnvBase, InitTracker, PendulumEnv, SerialEnv, TransformedEnv, UnaryTransform
from torchrl.modules import (
    MLP,
    Actor,
    LSTMModule,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
    set_recurrent_mode,
)
from torchrl.objectives import ClipPPOLoss, DDPGLoss, DQNLoss
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv, DiscreteActionVecMockEnv
from torchrl.trainers import ReplayBufferTrainer, Trainer, UpdateWeights

from rlguard.runtime import RLGuardError, RLGuardWarning, install, installed
from rlguard.runtime import TensorDictReplayBuffer as CorrectedBuffer
from rlguard.runtime import guard as guard_module
from rlguard.runtime._patch import PatchSet
from rlguard.runtime.guard import TrainingGuard, patches

OBS, ACT = 7, 7  # the mock envs' observation and action sizes
FRAMES, BATCHES, OPTIM_STEPS = 8, 4, 2
CLEAN_RUN = {"batches": BATCHES, "losses": BATCHES * OPTIM_STEPS, "steps": BATCHES * OPTIM_STEPS, "violations": 0}

pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),  # torchrl 0.15 notices
    pytest.mark.filterwarnings("ignore:No target network updater"),
    pytest.mark.filterwarnings("ignore:rlguard. torchrl's compiled segment trees"),  # the sampler fallback notice
]

needs_sampler = pytest.mark.skipif(
    importlib.util.find_spec("rlguard.runtime.sampler") is None,
    reason="no prioritized sampler works on this stack without rlguard.runtime.sampler",
)


# -- real components -----------------------------------------------------------------------


def dqn(env: EnvBase | None = None, **collector_kwargs: object) -> tuple[DQNLoss, Collector]:
    env = env or DiscreteActionVecMockEnv()
    actor = QValueActor(
        MLP(in_features=OBS, out_features=ACT, num_cells=[8]), in_keys=["observation"], spec=env.action_spec
    )
    loss = DQNLoss(actor, action_space=env.action_spec)
    loss.make_value_estimator(gamma=0.9)  # built now, so a fresh trainer can load a checkpoint of this one
    collector = Collector(env, actor, frames_per_batch=FRAMES, total_frames=FRAMES * BATCHES, **collector_kwargs)
    return loss, collector


def make_trainer(
    loss: nn.Module,
    collector: Collector,
    optimizer: torch.optim.Optimizer,
    *,
    guard: TrainingGuard | None = None,
    update_weights: bool = True,
    buffer: TensorDictReplayBuffer | None = None,
    **trainer_kwargs: object,
) -> tuple[Trainer, TrainingGuard]:
    trainer = Trainer(
        collector=collector,
        total_frames=FRAMES * BATCHES,
        frame_skip=1,
        optim_steps_per_batch=OPTIM_STEPS,
        loss_module=loss,
        optimizer=optimizer,
        progress_bar=False,
        **trainer_kwargs,
    )
    if buffer is not None:
        ReplayBufferTrainer(buffer, batch_size=4, flatten_tensordicts=True).register(trainer)
    if update_weights:
        UpdateWeights(collector, 1).register(trainer)
    guard = guard or TrainingGuard()
    guard.register(trainer)
    return trainer, guard


def random_buffer() -> TensorDictReplayBuffer:
    return TensorDictReplayBuffer(storage=LazyTensorStorage(64), sampler=RandomSampler(), batch_size=4)


def ppo_with_recurrent_critic() -> tuple[ClipPPOLoss, Collector]:
    """PPO whose critic is an LSTM; two envs, so batches are (2 envs, 4 steps)."""
    lstm = LSTMModule(input_size=OBS, hidden_size=8, in_key="observation", out_key="embed")
    env = SerialEnv(
        2, lambda: TransformedEnv(ContinuousActionVecMockEnv(), Compose(InitTracker(), lstm.make_tensordict_primer()))
    )
    critic = TensorDictSequential(lstm, TensorDictModule(nn.Linear(8, 1), in_keys=["embed"], out_keys=["state_value"]))
    actor = ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(nn.Linear(OBS, 2 * ACT), NormalParamExtractor()),
            in_keys=["observation"],
            out_keys=["loc", "scale"],
        ),
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        spec=env.action_spec,
        return_log_prob=True,
    )
    loss = ClipPPOLoss(actor, critic)
    loss.make_value_estimator(gamma=0.9, lmbda=0.9, deactivate_vmap=True)  # vmap cannot run an LSTM
    collector = Collector(env, actor, frames_per_batch=FRAMES, total_frames=FRAMES * BATCHES)
    return loss, collector


def rollout(env: EnvBase, policy: nn.Module | None = None, steps: int = 6) -> TensorDict:
    with torch.no_grad():
        return env.rollout(steps, policy)


class DetachedNet(nn.Module):
    """A Q-network that, by mistake, returns values cut from its graph."""

    def __init__(self) -> None:
        super().__init__()
        self.net = MLP(in_features=OBS, out_features=ACT, num_cells=[8])

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.net(observation).detach()


def ddpg_after_backward(lr: float) -> tuple[DDPGLoss, torch.optim.Optimizer]:
    env = ContinuousActionVecMockEnv()
    actor = Actor(nn.Linear(OBS, ACT), in_keys=["observation"], spec=env.action_spec)
    value = ValueOperator(MLP(in_features=OBS + ACT, out_features=1, num_cells=[8]), in_keys=["observation", "action"])
    loss = DDPGLoss(actor, value)
    loss.make_value_estimator(gamma=0.9)
    optimizer = torch.optim.SGD(loss.parameters(), lr=lr)
    losses = loss(rollout(env, actor))
    (losses["loss_actor"] + losses["loss_value"]).backward()
    return loss, optimizer


# -- the stack behaves as the guards assume ------------------------------------------------


def test_lstm_in_sequential_mode_treats_each_time_step_independently() -> None:
    lstm = LSTMModule(input_size=3, hidden_size=4, in_key="observation", out_key="features")
    data = TensorDict({"observation": torch.randn(2, 5, 3), "is_init": torch.zeros(2, 5, 1, dtype=torch.bool)}, [2, 5])
    data["is_init"][:, 0] = True
    sequential = lstm(data.clone())["features"]  # no error, no warning
    steps = torch.stack([lstm(data[:, t].clone())["features"] for t in range(5)], 1)
    with set_recurrent_mode(True):
        recurrent = lstm(data.clone())["features"]
    torch.testing.assert_close(sequential, steps)
    torch.testing.assert_close(sequential[:, 0], recurrent[:, 0])
    assert not torch.allclose(sequential[:, 1:], recurrent[:, 1:])


# -- a real Trainer -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "installing", [(), ("training",), COMPONENTS], ids=["registered", "and-installed", "and-all-installed"]
)
@pytest.mark.parametrize("policy_device", [None, "cpu:0"])  # "cpu:0" makes the collector copy the policy
def test_correct_trainer_loop_is_silent(policy_device: str | None, installing: tuple[str, ...]) -> None:
    loss, collector = dqn(policy_device=policy_device)
    before = copy.deepcopy(list(loss.parameters()))
    trainer, guard = make_trainer(loss, collector, torch.optim.Adam(loss.parameters(), lr=1e-2), buffer=random_buffer())
    with installed(**only(*installing)):
        trainer.train()
    assert guard.counts == CLEAN_RUN
    assert all(not torch.equal(a, b) for a, b in zip(before, loss.parameters(), strict=True))


def test_trainer_catches_a_collector_policy_that_is_never_updated() -> None:
    loss, collector = dqn(policy_device="cpu:0")
    trainer, _ = make_trainer(loss, collector, torch.optim.Adam(loss.parameters(), lr=1e-2), update_weights=False)
    with pytest.raises(
        RLGuardError, match=r"differed from the trained policy's for 2 batches in a row \(allowed: 1\)"
    ) as caught:
        trainer.train()
    assert "update_policy_weights_()" in str(caught.value) and "RLG005" in str(caught.value)


def test_a_policy_run_in_place_never_lags() -> None:
    loss, collector = dqn()  # no policy_device: the collector runs the trained module itself
    trainer, guard = make_trainer(loss, collector, torch.optim.Adam(loss.parameters(), lr=1e-2), update_weights=False)
    trainer.train()
    assert guard.state_dict()["policy_lag"] == 0


def test_trainer_catches_a_zero_learning_rate() -> None:
    loss, collector = dqn()
    trainer, _ = make_trainer(loss, collector, torch.optim.Adam(loss.parameters(), lr=0.0))
    with pytest.raises(
        RLGuardError, match=r"Adam.step\(\) left all 4 parameters that had a gradient unchanged"
    ) as caught:
        trainer.train()
    assert "value_network_params.module.0.module.0.weight" in str(caught.value)
    assert "learning rate(s): [0.0]" in str(caught.value)


def test_trainer_catches_a_loss_that_trains_a_copy_the_optimizer_does_not_hold() -> None:
    loss, collector = dqn()
    optimizer = torch.optim.Adam(copy.deepcopy(loss).parameters(), lr=1e-2)
    trainer, _ = make_trainer(loss, collector, optimizer)
    with pytest.raises(
        RLGuardError, match=r"DQNLoss: backward of 'loss' gives no gradient to any of the 4 trained parameters"
    ):
        trainer.train()


def test_trainer_catches_an_infinite_reward() -> None:
    log_reward = UnaryTransform(in_keys=["reward"], out_keys=["reward"], fn=torch.log)  # log(0) = -inf
    loss, collector = dqn(TransformedEnv(DiscreteActionVecMockEnv(), log_reward))
    trainer, _ = make_trainer(loss, collector, torch.optim.Adam(loss.parameters(), lr=1e-2))
    with pytest.raises(RLGuardError, match=r"Collector batch holds NaN or inf in \('next', 'reward'\)\.") as caught:
        trainer.train()
    assert "'observation'" not in str(caught.value)


def ppo_trainer_computing_advantages(recurrent: bool) -> tuple[Trainer, TrainingGuard]:
    """A PPO Trainer that computes GAE advantages on each collected (env, time) batch."""
    loss, collector = ppo_with_recurrent_critic()
    trainer, guard = make_trainer(loss, collector, torch.optim.Adam(loss.parameters(), lr=1e-3), update_weights=False)
    trainer.register_op(
        "batch_process", set_recurrent_mode(True)(loss.value_estimator) if recurrent else loss.value_estimator
    )
    return trainer, guard


def test_trainer_with_a_recurrent_critic_run_in_recurrent_mode_is_silent() -> None:
    trainer, guard = ppo_trainer_computing_advantages(recurrent=True)
    trainer.train()
    assert guard.counts == CLEAN_RUN


def test_trainer_catches_a_recurrent_critic_run_step_by_step() -> None:
    trainer, _ = ppo_trainer_computing_advantages(recurrent=False)
    with pytest.raises(
        RLGuardError, match=r"ClipPPOLoss\.critic_network\.module\.0 ran in sequential mode on data of shape \(2, 4\)"
    ) as caught:
        trainer.train()
    assert "set_recurrent_mode(True)" in str(caught.value) and "RLG002 manual-recurrent-mode" in str(caught.value)


@needs_sampler
def test_trainer_catches_priorities_read_from_the_wrong_key() -> None:
    from torchrl.data import TensorDictPrioritizedReplayBuffer

    # A step cost of -1 per step: the reward is no priority, and a negative one turns NaN in the sampler.
    step_cost = UnaryTransform(in_keys=["reward"], out_keys=["reward"], fn=lambda reward: reward - 1)
    env = TransformedEnv(DiscreteActionVecMockEnv(), step_cost)
    # Extending reads priorities from the key: the installed check stops them before they are stored.
    with installed(**only("samplers", "training")):
        buffer = TensorDictPrioritizedReplayBuffer(
            alpha=0.7, beta=0.5, storage=LazyTensorStorage(64), batch_size=4, priority_key=("next", "reward")
        )
        loss, collector = dqn(env)
        trainer, _ = make_trainer(loss, collector, torch.optim.Adam(loss.parameters(), lr=1e-2), buffer=buffer)
        with pytest.raises(RuntimeError, match="Failed to update priority of extended data") as caught:
            trainer.train()  # torchrl wraps any error of the priority update in its own
    assert isinstance(caught.value.__cause__, RLGuardError)
    assert re.search(r"priorities that are NaN, inf or negative: values \[-1\.0", str(caught.value.__cause__))


@needs_sampler
def test_zero_priorities_are_accepted_and_their_slots_still_sampled() -> None:
    from torchrl.data import TensorDictPrioritizedReplayBuffer

    with installed(**only("samplers", "training")):
        buffer = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(8), batch_size=64)
        buffer.extend(TensorDict({"observation": torch.randn(8, 3)}, [8]))
        buffer.update_priority(torch.arange(8), torch.zeros(8))  # torchrl stores (0 + eps) ** alpha
        seen = torch.cat([buffer.sample()["index"] for _ in range(10)])
    assert set(seen.tolist()) == set(range(8))
    with pytest.raises(RLGuardError, match=r"NaN, inf or negative: values \[-0\.5\] at indices \[3\]"):
        TrainingGuard().check_priority(torch.tensor([0.0, 0.0, 0.0, -0.5]), torch.arange(4))


@pytest.mark.parametrize("unified", [False, True], ids=["legacy-torch-file", "Checkpoint"])
def test_guard_state_survives_a_trainer_checkpoint(tmp_path: Path, unified: bool) -> None:
    path = tmp_path / "trainer"

    def build() -> tuple[Trainer, TrainingGuard]:
        loss, collector = dqn(policy_device="cpu:0")
        return make_trainer(
            loss,
            collector,
            torch.optim.Adam(loss.parameters(), lr=1e-2),
            guard=TrainingGuard(max_policy_lag=BATCHES),
            update_weights=False,  # so the policy lag grows and has something to restore
            save_trainer_file=path,
            **({"checkpoint": Checkpoint()} if unified else {}),
        )

    trainer, guard = build()
    trainer.train()
    saved = guard.state_dict()
    assert saved == {**CLEAN_RUN, "policy_lag": BATCHES - 1}  # stale from the second batch on
    restored_trainer, restored = build()
    restored_trainer.load_from_file(path)
    assert restored.state_dict() == saved


# -- the checks without a Trainer -----------------------------------------------------------


def test_check_batch_names_the_non_finite_entry() -> None:
    data = rollout(PendulumEnv())
    guard = TrainingGuard()
    guard.check_batch(data)
    data["next", "reward"][2] = float("nan")
    with pytest.raises(RLGuardError, match=r"batch holds NaN or inf in \('next', 'reward'\)\."):
        guard.check_batch(data)
    guard.check_batch(data, keys=["th", ("next", "th")])  # only the entries asked for
    assert guard.counts["batches"] == 3


def test_check_batch_with_a_collector_inspects_its_observations_and_rewards() -> None:
    _, collector = dqn()
    batch = next(iter(collector))
    guard = TrainingGuard()
    batch["action_value"][0, 0] = -float("inf")  # a masked action's value: not an observation
    guard.check_batch(batch, collector=collector)
    batch["next", "observation"][3, 0] = float("nan")
    with pytest.raises(RLGuardError, match=r"Collector batch holds NaN or inf in \('next', 'observation'\)\."):
        guard.check_batch(batch, collector=collector)


def test_check_batch_does_not_mistake_a_large_finite_entry_for_inf() -> None:
    large = TensorDict({"observation": torch.full((4,), 3e38), "reward": torch.ones(4)}, [4])
    assert not torch.isfinite(large["observation"].sum())  # the cheap sum test alone would flag it
    guard = TrainingGuard()
    guard.check_batch(large)
    assert guard.counts == {"batches": 1, "losses": 0, "steps": 0, "violations": 0}
    large["observation"][1] = float("inf")  # the same entry, now truly infinite, is still caught
    with pytest.raises(RLGuardError, match=r"batch holds NaN or inf in 'observation'\."):
        guard.check_batch(large)
    assert guard.counts["violations"] == 1


def test_check_loss_catches_a_nan_loss_from_a_nan_reward() -> None:
    env = DiscreteActionVecMockEnv()
    loss, _ = dqn(env)
    data = rollout(env, loss.value_network)
    guard = TrainingGuard()
    guard.check_loss(loss(data), loss.parameters())
    data["next", "reward"][1] = float("nan")
    with pytest.raises(RLGuardError, match=r"DQNLoss returned NaN or inf in 'loss'\."):
        guard.check_loss(loss(data), loss.parameters(), where="DQNLoss")


def test_check_loss_ignores_diagnostics() -> None:
    losses = TensorDict(
        {"loss_critic": torch.ones((), requires_grad=True), "explained_variance": torch.tensor(float("nan"))}
    )
    TrainingGuard().check_loss(losses)


def test_check_loss_catches_a_detached_network() -> None:
    env = DiscreteActionVecMockEnv()
    actor = QValueActor(DetachedNet(), in_keys=["observation"], spec=env.action_spec)
    loss = DQNLoss(actor, action_space=env.action_spec)
    data = rollout(env, actor)
    guard = TrainingGuard()
    with pytest.raises(RLGuardError, match=r"backward of 'loss' gives no gradient to any of the 4 trained parameters"):
        guard.check_loss(loss(data), loss.parameters())
    with pytest.raises(RLGuardError, match=r"gives no gradient to any parameter"):
        guard.check_loss(loss(data))
    with torch.no_grad():  # evaluation: no graph is expected
        guard.check_loss(loss(data), loss.parameters())


def test_check_step_is_silent_on_a_real_step() -> None:
    loss, optimizer = ddpg_after_backward(lr=1e-2)
    guard = TrainingGuard()
    with guard.check_step(optimizer, loss):
        optimizer.step()
    assert guard.counts["steps"] == 1


def test_check_step_catches_a_step_that_changes_nothing() -> None:
    loss, optimizer = ddpg_after_backward(lr=0.0)
    with pytest.raises(
        RLGuardError, match=r"SGD.step\(\) left all 6 parameters .*'actor_network_params.module.weight'"
    ):
        with TrainingGuard().check_step(optimizer, loss):
            optimizer.step()


def test_check_step_catches_zero_grad_between_backward_and_step() -> None:
    _, optimizer = ddpg_after_backward(lr=1e-2)
    optimizer.zero_grad()
    with pytest.raises(RLGuardError, match=r"SGD.step\(\) found no gradient on any of its 6 parameters"):
        with TrainingGuard().check_step(optimizer):
            optimizer.step()


def test_check_priority_accepts_real_td_errors_and_names_bad_slots() -> None:
    env = DiscreteActionVecMockEnv()
    loss, _ = dqn(env)
    data = rollout(env, loss.value_network)
    loss(data)
    guard = TrainingGuard()
    guard.check_priority(data["td_error"], torch.arange(6))
    priority = data["td_error"].clone()
    priority[3], priority[5] = float("nan"), -1.0
    with pytest.raises(RLGuardError, match=r"got 2 priorities .*: values \[nan, -1\.0\] at indices \[13, 15\]"):
        guard.check_priority(priority, torch.arange(10, 16))
    guard.check_priority(priority, torch.tensor([0, 1, 2, -1, 4, -1]))  # slots a writer skipped


def test_check_recurrent_inside_a_value_estimator_under_install() -> None:
    loss, collector = ppo_with_recurrent_critic()
    data = next(iter(collector)).detach()
    collector.shutdown()
    with installed(**only("training")):
        with set_recurrent_mode(True):
            loss.value_estimator(data.clone())
        loss(data.clone())  # a loss computes its advantage in recurrent mode by itself
        with pytest.raises(
            RLGuardError, match=r"LSTMModule ran in sequential mode on data of shape \(2, 4\) inside a loss"
        ):
            loss.value_estimator(data.clone())


@pytest.mark.filterwarnings("ignore:rlguard. TensorDictReplayBuffer.pin_memory=True. cannot pin here")
def test_check_pinned_is_silent_without_an_accelerator() -> None:
    if guard_module._accelerator_available():
        pytest.skip("an accelerator is present")
    sample = TensorDict({"observation": torch.zeros(4, 3), "index": torch.arange(4)}, [4])
    assert not sample["index"].is_pinned()
    TrainingGuard().check_pinned(sample)
    with installed(**only("training")):
        assert pinned_buffer_sample(CorrectedBuffer)["observation"].shape == (4, 3)


def pinned_buffer_sample(buffer_class: type) -> TensorDict:
    buffer = buffer_class(storage=LazyTensorStorage(16), batch_size=4, pin_memory=True)
    buffer.extend(TensorDict({"observation": torch.randn(16, 3)}, [16]))
    return buffer.sample()


def test_check_pinned_names_unpinned_entries_where_an_accelerator_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard_module, "_accelerator_available", lambda: True)
    sample = TensorDict({"observation": torch.zeros(4, 3)}, [4])
    with pytest.raises(
        RLGuardError,
        match=r"sample\(\): the buffer has pin_memory=True but 'observation', 'index' came back unpinned.*RLG004",
    ):
        TrainingGuard().check_pinned((sample, {"index": torch.arange(4)}), where="buffer.sample()")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_stock_pinned_buffer_is_caught_on_cuda() -> None:
    with installed(**only("training")):
        with pytest.raises(RLGuardError, match=r"TensorDictReplayBuffer.sample\(\): .*'index'"):
            pinned_buffer_sample(TensorDictReplayBuffer)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_corrected_pinned_buffer_is_silent_on_cuda() -> None:
    with installed(**only("training")):
        assert pinned_buffer_sample(CorrectedBuffer)["index"].is_pinned()


# -- switches, warn mode -------------------------------------------------------------------


def _nonfinite(guard: TrainingGuard) -> None:
    guard.check_batch(TensorDict({"observation": torch.tensor([1.0, float("inf")])}))


def _detached(guard: TrainingGuard) -> None:
    param = nn.Parameter(torch.ones(2))  # the loss's graph starts below it, at a detached copy
    guard.check_loss(TensorDict({"loss": (param.detach() * 2).sum().requires_grad_()}), [param])


def _unchanged(guard: TrainingGuard) -> None:
    loss, optimizer = ddpg_after_backward(lr=0.0)
    with guard.check_step(optimizer, loss):
        optimizer.step()


def _priorities(guard: TrainingGuard) -> None:
    guard.check_priority(torch.tensor([1.0, -1.0]))


def _lag(guard: TrainingGuard) -> None:
    loss, collector = dqn(policy_device="cpu:0")
    optimizer = torch.optim.SGD(loss.parameters(), lr=0.1)
    for batch in collector:
        guard.check_batch(batch, collector=collector)
        loss(batch)["loss"].backward()
        optimizer.step()


def _recurrent(guard: TrainingGuard) -> None:
    lstm = LSTMModule(input_size=3, hidden_size=4, in_key="observation", out_key="features")
    guard.check_recurrent(lstm, TensorDict({"observation": torch.zeros(2, 5, 3)}, [2, 5]))


def _pinned(guard: TrainingGuard) -> None:
    guard.check_pinned(TensorDict({"observation": torch.zeros(4)}, [4]))


PLANTED: dict[str, Callable[[TrainingGuard], None]] = {
    "nonfinite": _nonfinite,
    "detached_loss": _detached,
    "unchanged_params": _unchanged,
    "priorities": _priorities,
    "policy_lag": _lag,
    "recurrent": _recurrent,
    "pinned": _pinned,
}


@pytest.fixture
def accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend an accelerator exists, so the pinned-memory check runs on this CPU-only torch."""
    monkeypatch.setattr(guard_module, "_accelerator_available", lambda: True)


@pytest.mark.parametrize("switch", PLANTED)
def test_each_switch_turns_its_check_on_and_off(switch: str, accelerator: None) -> None:
    with pytest.raises(RLGuardError, match="TrainingGuard: "):
        PLANTED[switch](TrainingGuard())
    guard = TrainingGuard(**{switch: False})
    PLANTED[switch](guard)
    assert guard.counts["violations"] == 0


@pytest.mark.parametrize("switch", PLANTED)
def test_warn_mode_warns_instead_of_raising(switch: str, accelerator: None) -> None:
    guard = TrainingGuard(warn=True)
    with pytest.warns(RLGuardWarning, match="TrainingGuard: "):
        PLANTED[switch](guard)
    assert guard.counts["violations"] >= 1


# -- install(training=True) ----------------------------------------------------------------


def test_patches_restore_the_identical_originals() -> None:
    found = patches()
    missing = object()
    before = [vars(p.owner).get(p.name, missing) for p in found]
    applied = PatchSet()
    for patch in found:
        applied.apply(patch)
    assert all(vars(p.owner)[p.name] is p.value for p in found)
    applied.restore_all()
    assert all(vars(p.owner).get(p.name, missing) is original for p, original in zip(found, before, strict=True))
    assert {(p.owner.__name__, p.name) for p in found} >= {
        ("BaseCollector", "__iter__"),
        ("LossModule", "__call__"),
        ("LSTMModule", "forward"),
        ("GRUModule", "forward"),
        ("PrioritizedSampler", "update_priority"),
        ("ReplayBuffer", "sample"),
        ("TensorDictReplayBuffer", "sample"),
    }


def detached_dqn() -> tuple[DQNLoss, TensorDict]:
    env = DiscreteActionVecMockEnv()
    actor = QValueActor(DetachedNet(), in_keys=["observation"], spec=env.action_spec)
    return DQNLoss(actor, action_space=env.action_spec), rollout(env, actor)


DETACHED = r"DQNLoss: backward of 'loss' gives no gradient"


def test_a_later_install_switches_groups_and_checks_off() -> None:
    loss, data = detached_dqn()
    install()
    with pytest.raises(RLGuardError, match=DETACHED):
        loss(data)
    install(training=False)
    loss(data)
    install(checks={"detached_loss": False})
    loss(data)
    install()
    with pytest.raises(RLGuardError, match=DETACHED):
        loss(data)


def test_a_block_switches_checks_off_inside_install_and_only_there() -> None:
    loss, data = detached_dqn()
    install()
    with installed(training=False):
        loss(data)
        with installed(checks={"detached_loss": False, "nonfinite": True}):
            loss(data)
        loss(data)
    with pytest.raises(RLGuardError, match=DETACHED):
        loss(data)


def test_warn_mode_and_the_lag_threshold_at_install() -> None:
    loss, data = detached_dqn()
    with installed(**only("training"), warn=True), pytest.warns(RLGuardWarning, match=DETACHED):
        loss(data)
    with installed(**only("training"), max_policy_lag=BATCHES):
        _lag(TrainingGuard(policy_lag=False))  # lags BATCHES - 1 batches: allowed
    with installed(**only("training"), max_policy_lag=2), pytest.raises(RLGuardError, match="for 3 batches in a row"):
        _lag(TrainingGuard(policy_lag=False))


def test_bad_settings_are_refused_by_name() -> None:
    with pytest.raises(RLGuardError, match=r"unknown training check\(s\) \['priority'\]; the checks are nonfinite"):
        install(checks={"priority": False})
    with pytest.raises(RLGuardError, match="max_policy_lag must be an int >= 0, not -1"):
        install(max_policy_lag=-1)


def test_install_catches_an_infinite_reward_while_collecting() -> None:
    env = TransformedEnv(
        DiscreteActionVecMockEnv(), UnaryTransform(in_keys=["reward"], out_keys=["reward"], fn=torch.log)
    )
    _, collector = dqn(env)
    with installed(**only("training")):
        with pytest.raises(RLGuardError, match=r"Collector batch holds NaN or inf in \('next', 'reward'\)"):
            next(iter(collector))


def test_install_catches_a_stale_collector_policy_in_a_manual_loop() -> None:
    with installed(**only("training")):
        with pytest.raises(RLGuardError, match="for 2 batches in a row"):
            _lag(TrainingGuard(policy_lag=False))  # the installed checks alone


def test_install_catches_a_detached_loss() -> None:
    loss, data = detached_dqn()
    with installed(**only("training")):
        with pytest.raises(RLGuardError, match=DETACHED):
            loss(data)


@needs_sampler
def test_install_checks_priorities_before_the_sampler_stores_them() -> None:
    from torchrl.data import TensorDictPrioritizedReplayBuffer

    with installed(**only("samplers", "training")):
        buffer = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(8), batch_size=4)
        buffer.extend(TensorDict({"observation": torch.randn(8, 3)}, [8]))
        with pytest.raises(RLGuardError, match=r"values \[nan\] at indices \[2\]"):
            buffer.update_priority(torch.arange(4), torch.tensor([1.0, 1.0, float("nan"), 1.0]))
        # Stored, the NaN would make every later sample() fail (numpy: "Range exceeds valid bounds").
        assert torch.isfinite(buffer.sample()["priority_weight"]).all()


def test_install_is_silent_on_a_correct_manual_loop() -> None:
    loss, collector = dqn(policy_device="cpu:0")
    buffer = random_buffer()
    optimizer = torch.optim.Adam(loss.parameters(), lr=1e-2)
    before = copy.deepcopy(list(loss.parameters()))
    with installed(**only("training")):
        for batch in collector:
            buffer.extend(batch)
            losses = loss(buffer.sample())
            losses["loss"].backward()
            optimizer.step()
            optimizer.zero_grad()
            collector.update_policy_weights_()
    assert all(not torch.equal(a, b) for a, b in zip(before, loss.parameters(), strict=True))
