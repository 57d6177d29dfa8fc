"""The corrected Collector, the multi-process refusal and the loss-side copy corrections."""

from __future__ import annotations

import copy
import multiprocessing
import threading
import warnings

import pytest
import torch
import torchrl.collectors
from rlguard_runtime_helpers import OBS, LockedNet, only, policy
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn
from torchrl.modules import ProbabilisticActor, QValueActor, TanhNormal, ValueOperator
from torchrl.objectives import ClipPPOLoss, DDPGLoss, DQNLoss
from torchrl.testing.mocking_classes import (
    ContinuousActionVecMockEnv,
    DiscreteActionVecMockEnv,
)

from rlguard.runtime import (
    Collector,
    RLGuardError,
    RLGuardWarning,
    installed,
    uncopyable,
)

FRAMES = 8
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # torchrl 0.15 transform notice


def collect(collector_cls: type, net: nn.Module, **kwargs: object) -> tuple[torchrl.collectors.Collector, TensorDict]:
    collector = collector_cls(
        ContinuousActionVecMockEnv(), policy(net), frames_per_batch=FRAMES, total_frames=2 * FRAMES, **kwargs
    )
    return collector, next(iter(collector))


def rlguard_warnings(record: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in record if issubclass(w.category, RLGuardWarning)]


def assert_same_layout(data: TensorDict, reference: TensorDict) -> None:
    assert data.batch_size == reference.batch_size
    assert set(data.keys(True, True)) == set(reference.keys(True, True))
    for key in reference.keys(True, True):
        assert data[key].shape == reference[key].shape, key


def assert_actions_from(net: nn.Module, data: TensorDict) -> None:
    with torch.no_grad():
        torch.testing.assert_close(data["action"], net(data["observation"]))


def test_stock_collector_crashes_on_a_lock_and_strips_the_policy() -> None:
    net = LockedNet()
    with pytest.raises(TypeError, match="cannot pickle '_thread.lock'"):
        collect(torchrl.collectors.Collector, net, policy_device="cpu:0")
    # torchrl copies inside tensordict's to_module(meta) context, which does not swap back on error
    assert dict(net.named_parameters()) == {}


def test_corrected_collector_runs_a_locked_policy_in_place() -> None:
    net = LockedNet()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        collector, data = collect(Collector, net, policy_device="cpu:0")
    [warning] = rlguard_warnings(record)
    message = str(warning.message)
    for part in ("`policy.module.lock`", "LockedNet", "cannot pickle", "__deepcopy__", "policy_factory=",
                 "uncopyable", "RLG001", "policy_device=cpu"):
        assert part in message
    assert warning.filename == __file__  # points at the user's line, not at torchrl
    assert collector.policy_device == torch.device("cpu")
    assert collector.policy.module is net
    assert_actions_from(net, data)
    _, reference = collect(torchrl.collectors.Collector, nn.Sequential(nn.Linear(OBS, OBS), nn.Tanh()),
                           policy_device="cpu:0")
    assert_same_layout(data, reference)


def test_the_warning_is_given_once() -> None:
    with pytest.warns(RLGuardWarning):
        collect(Collector, LockedNet(), policy_device="cpu:0")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RLGuardWarning)
        collect(Collector, LockedNet(), policy_device="cpu:0")


@pytest.mark.parametrize("mark", ["class", "instance"])
def test_a_marked_policy_is_never_copied(mark: str) -> None:
    @uncopyable
    class Marked(nn.Linear):
        pass

    net = Marked(OBS, OBS) if mark == "class" else uncopyable(nn.Linear(OBS, OBS))
    with pytest.warns(RLGuardWarning, match=r"`policy.module` \(.*\) .*is marked @uncopyable"):
        collector, data = collect(Collector, net, policy_device="cpu:0")
    assert collector.policy.module is net
    assert_actions_from(net, data)


def test_a_copyable_policy_is_copied_exactly_as_upstream() -> None:
    net = nn.Linear(OBS, OBS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RLGuardWarning)
        ours, data = collect(Collector, net, policy_device="cpu:0")
    stock, reference = collect(torchrl.collectors.Collector, nn.Linear(OBS, OBS), policy_device="cpu:0")
    assert ours.policy_device == stock.policy_device == torch.device("cpu:0")
    assert ours.policy.module is not net and callable(ours.get_weights_fn)
    assert_same_layout(data, reference)


class LockSharingNet(LockedNet):
    """Copyable on purpose: the copy shares the lock, so rlguard must copy it like upstream."""

    def __deepcopy__(self, memo: dict[int, object]) -> LockSharingNet:
        memo[id(self.lock)] = self.lock
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        clone.__dict__.update(copy.deepcopy(vars(self), memo))
        return clone


def test_a_policy_with_its_own_deepcopy_is_copied() -> None:
    net = LockSharingNet()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RLGuardWarning)
        collector, _ = collect(Collector, net, policy_device="cpu:0")
    assert collector.policy.module is not net
    assert collector.policy.module.lock is net.lock


def test_update_policy_weights_keeps_the_in_place_policy_current() -> None:
    net = LockedNet()
    with pytest.warns(RLGuardWarning):
        collector = Collector(ContinuousActionVecMockEnv(), policy(net), frames_per_batch=FRAMES,
                              total_frames=4 * FRAMES, policy_device="cpu:0")
    batches = iter(collector)
    assert_actions_from(net, next(batches))
    trained = LockedNet()
    collector.update_policy_weights_(TensorDict.from_module(policy(trained)))
    data = next(batches)
    assert_actions_from(trained, data)
    with torch.no_grad():
        net.linear.weight.mul_(-1)  # a training step on the caller's policy
    collector.update_policy_weights_()
    assert_actions_from(net, next(batches))


def test_multiprocess_collectors_refuse_an_uncopyable_policy_before_any_worker() -> None:
    envs = [ContinuousActionVecMockEnv] * 2
    with installed(**only("collectors")):
        for make in (
            lambda: torchrl.collectors.MultiSyncCollector(envs, policy(), frames_per_batch=FRAMES),
            lambda: torchrl.collectors.MultiAsyncCollector(envs, policy(), frames_per_batch=FRAMES),
            lambda: torchrl.collectors.Collector(envs, policy(), frames_per_batch=FRAMES, num_collectors=2),
        ):
            with pytest.raises(RLGuardError) as error:
                make()
            assert "No worker was started" in str(error.value)
            assert "`policy.module.lock`" in str(error.value) and "policy_factory=" in str(error.value)
            assert "RLG001" in str(error.value)
            assert multiprocessing.active_children() == []


def test_installed_torchrl_collector_runs_a_locked_policy_in_place() -> None:
    net = LockedNet()
    with installed(**only("collectors")), pytest.warns(RLGuardWarning, match="RLG001"):
        _, data = collect(torchrl.collectors.Collector, net, policy_device="cpu:0")
    assert dict(net.named_parameters()).keys() == {"linear.weight", "linear.bias"}
    assert_actions_from(net, data)


class LockedQNet(nn.Module):
    def __init__(self, actions: int) -> None:
        super().__init__()
        self.linear = nn.Linear(OBS, actions)
        self.lock = threading.Lock()

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.linear(observation)


def test_get_stateful_net_falls_back_to_no_copy() -> None:
    env = DiscreteActionVecMockEnv()
    loss = DQNLoss(QValueActor(LockedQNet(env.action_spec.shape[-1]), in_keys=["observation"],
                               spec=env.action_spec), action_space=env.action_spec)
    with pytest.raises(TypeError, match="cannot pickle"):
        loss.get_stateful_net("value_network")
    with installed(**only("collectors")), pytest.warns(RLGuardWarning) as record:
        net = loss.get_stateful_net("value_network")
    message = str(record[0].message)
    assert "DQNLoss.get_stateful_net('value_network')" in message and "`value_network.module.0" in message
    assert "RLG001" in message and "copy=False" in message
    torch.testing.assert_close(net.module[0].linear.weight, loss.value_network_params["module", "0", "module",
                                                                                      "linear", "weight"])


def ddpg_networks(actor_net: nn.Module) -> tuple[TensorDictModule, ValueOperator]:
    class Critic(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(2 * OBS, 1)

        def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
            return self.linear(torch.cat([observation, action], -1))

    return policy(actor_net), ValueOperator(Critic(), in_keys=["observation", "action"])


def test_ddpg_loss_reraises_the_copy_failure_and_keeps_the_networks() -> None:
    stock_actor = LockedNet()
    with pytest.raises(TypeError, match="cannot pickle"):
        DDPGLoss(*ddpg_networks(stock_actor))
    assert {p.device.type for p in stock_actor.parameters()} == {"meta"}  # torchrl left them there
    actor = LockedNet()
    with installed(**only("collectors")), pytest.raises(RLGuardError) as error:
        DDPGLoss(*ddpg_networks(actor))
    message = str(error.value)
    assert "DDPGLoss deep-copies" in message and "`actor_network.module.lock`" in message
    assert "__deepcopy__" in message and "RLG001" in message
    assert error.value.__context__ is None  # raised before torchrl ran: no chained traceback
    assert {p.device.type for p in actor.parameters()} == {"cpu"}


def test_ddpg_loss_builds_as_upstream_with_copyable_networks() -> None:
    with installed(**only("collectors")):
        loss = DDPGLoss(*ddpg_networks(nn.Sequential(nn.Linear(OBS, OBS), nn.Tanh())))
    assert "actor_critic" in vars(loss)


class LockedGaussianNet(LockedNet):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(OBS, 2 * OBS)
        self.split = NormalParamExtractor()

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with self.lock:
            return self.split(self.linear(observation))


def test_a_ppo_loop_that_never_copies_runs_silently_under_install() -> None:
    actor = ProbabilisticActor(
        TensorDictModule(LockedGaussianNet(), in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"], distribution_class=TanhNormal, return_log_prob=True,
    )
    critic = ValueOperator(nn.Linear(OBS, 1), in_keys=["observation"])
    with installed(**only("collectors")), warnings.catch_warnings():
        warnings.simplefilter("error", RLGuardWarning)
        data = next(iter(Collector(ContinuousActionVecMockEnv(), actor, frames_per_batch=FRAMES,
                                   total_frames=FRAMES)))
        loss = ClipPPOLoss(actor, critic)
        losses = loss(data)
        (losses["loss_objective"] + losses["loss_critic"]).backward()
    assert all(torch.isfinite(value) for value in losses.values() if value.dtype.is_floating_point)
    assert actor.module[0].module.linear.weight.grad.abs().sum() > 0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_locked_cpu_policy_runs_on_the_cpu_between_cuda_env_steps() -> None:
    net = LockedNet()
    with pytest.warns(RLGuardWarning, match="runs in place on cpu"):
        collector, data = collect(Collector, net, policy_device="cuda", env_device="cuda", storing_device="cuda")
    assert collector.policy_device == torch.device("cpu")
    assert data["action"].device.type == "cuda"
    assert_actions_from(net, data.cpu())
