"""The corrected Collector, the multi-process refusal, and shutting workers down on a guard error."""

from __future__ import annotations

import copy
import multiprocessing
import threading
import warnings
from collections.abc import Callable, Iterator

import pytest
import torch
import torchrl.collectors
from rlguard_runtime_helpers import ACT, OBS, LockedNet, only, policy
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
from torchrl.objectives import ClipPPOLoss
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

from rlguard.advice import DEVICE, PICKLE, remedy

from rlguard.runtime import (
    Collector,
    RLGuardError,
    RLGuardWarning,
    installed,
    uncopyable,
)
from rlguard.runtime.marker import find_uncopyable, find_unpicklable

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
    for part in ("`policy.module.lock` (_thread.lock) (held by LockedNet", "cannot pickle", "RLG001",
                 "policy_device=cpu:0", remedy(DEVICE, "LockedNet")):
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
    with pytest.warns(RLGuardWarning, match=r"`policy.module` \(.*\) .*is marked @uncopyable") as record:
        collector, data = collect(Collector, net, policy_device="cpu:0")
    [message] = [str(w.message) for w in record if issubclass(w.category, RLGuardWarning)]
    assert remedy(DEVICE, type(net).__name__, marked=True) in message
    assert "@rlguard.runtime.uncopyable`" not in message and "__deepcopy__" not in message  # it is marked
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


MULTI_PROCESS = (
    lambda envs, net: torchrl.collectors.MultiSyncCollector(envs, policy(net), frames_per_batch=FRAMES,
                                                           total_frames=2 * FRAMES),
    lambda envs, net: torchrl.collectors.MultiAsyncCollector(envs, policy(net), frames_per_batch=FRAMES,
                                                            total_frames=2 * FRAMES),
    lambda envs, net: torchrl.collectors.Collector(envs, policy(net), frames_per_batch=FRAMES,
                                                   total_frames=2 * FRAMES, num_collectors=2),
)


@pytest.fixture
def start_method(request: pytest.FixtureRequest) -> Iterator[str]:
    """The global start method torchrl's collectors use, restored afterwards."""
    previous = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method(request.param, force=True)
    yield request.param
    multiprocessing.set_start_method(previous, force=True)


class PicklableLockedNet(LockedNet):
    """Pickles by leaving the lock out and rebuilding it: what the multi-process advice asks for."""

    def __getstate__(self) -> dict[str, object]:
        return {key: value for key, value in super().__getstate__().items() if key != "lock"}

    def __setstate__(self, state: dict[str, object]) -> None:
        super().__setstate__(state)
        self.lock = threading.Lock()


@pytest.mark.parametrize("net", [LockedNet, LockSharingNet], ids=["lock", "deepcopy-sharing-the-lock"])
@pytest.mark.parametrize("start_method", ["spawn", "forkserver"], indirect=True)
@pytest.mark.parametrize("make", MULTI_PROCESS, ids=["sync", "async", "num_collectors"])
def test_multiprocess_collectors_refuse_an_unpicklable_policy_before_any_worker(
    make: Callable[..., object], start_method: str, net: type[nn.Module]
) -> None:
    # A __deepcopy__ that shares the lock copies, but workers pickle: it must be refused too.
    with installed(**only("collectors")), pytest.raises(RLGuardError) as error:
        make([ContinuousActionVecMockEnv] * 2, net())
    message = str(error.value)
    assert f"pickles it (start method {start_method!r})" in message and "No worker was started" in message
    assert "`policy.module.lock` (_thread.lock) (held by " in message and "cannot be pickled" in message
    assert remedy(PICKLE, net.__qualname__) in message and "RLG001" in message
    assert "@rlguard.runtime.uncopyable" not in message  # the marker would not let a worker have it
    assert multiprocessing.active_children() == []


def test_the_pickling_probe_accepts_getstate_and_leaves_tensors_alone() -> None:
    net = PicklableLockedNet()
    assert find_unpicklable(policy(net), "policy") is None
    assert not net.linear.weight.is_shared()  # torch would have moved it to shared memory
    assert find_unpicklable(policy(LockSharingNet()), "policy") is not None


@pytest.mark.parametrize("start_method", ["fork"], indirect=True)
def test_forked_workers_run_a_locked_policy_they_inherit(start_method: str) -> None:
    # Nothing is pickled with fork: the workers collect with the policy, so it is not refused.
    with installed(**only("collectors")):
        collector = torchrl.collectors.MultiSyncCollector([ContinuousActionVecMockEnv] * 2, policy(),
                                                           frames_per_batch=FRAMES, total_frames=FRAMES)
        try:
            batch = next(iter(collector))
        finally:
            collector.shutdown()
    assert batch.numel() == FRAMES and multiprocessing.active_children() == []


@pytest.mark.parametrize("start_method", ["fork"], indirect=True)
def test_a_marked_policy_is_refused_whatever_the_start_method(start_method: str) -> None:
    with installed(**only("collectors")), pytest.raises(RLGuardError) as error:
        MULTI_PROCESS[0]([ContinuousActionVecMockEnv] * 2, uncopyable(LockedNet()))
    message = str(error.value)
    assert "forks it" in message and "is marked @uncopyable" in message
    assert remedy(PICKLE, "LockedNet", marked=True) in message and "__getstate__" not in message


@pytest.mark.parametrize("start_method", ["fork"], indirect=True)
def test_the_advised_policy_factory_collects(start_method: str) -> None:
    with installed(**only("collectors")):
        collector = torchrl.collectors.MultiSyncCollector(
            [ContinuousActionVecMockEnv] * 2, policy_factory=policy, frames_per_batch=FRAMES, total_frames=FRAMES)
        try:
            assert next(iter(collector)).numel() == FRAMES
        finally:
            collector.shutdown()


class NaNNet(nn.Module):
    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return torch.full_like(observation, float("nan"))


@pytest.mark.parametrize("start_method", ["fork"], indirect=True)
@pytest.mark.parametrize("collector_cls", [torchrl.collectors.MultiSyncCollector,
                                           torchrl.collectors.MultiAsyncCollector])
def test_an_rlguard_error_in_the_wrapped_iterator_shuts_the_workers_down(
    start_method: str, collector_cls: type
) -> None:
    # Built before installed(): the forked workers run stock torchrl, so the guard's check
    # fails in this process, inside the wrapped iterator, on the first batch.
    collector = collector_cls([ContinuousActionVecMockEnv] * 2, policy(NaNNet()), frames_per_batch=FRAMES,
                              total_frames=4 * FRAMES)
    workers = list(collector.procs)
    try:
        with installed(**only("training")), pytest.raises(RLGuardError, match="NaN"):
            for _ in collector:
                pass
        alive = [worker for worker in workers if worker.is_alive()]
    finally:
        collector.shutdown()  # so that a failure here cannot leave pytest waiting on workers
    assert workers and alive == []


class Camera:
    """Not a module: a device handle of the user's own code, holding the lock it reads under."""

    def __init__(self, owner: nn.Module) -> None:
        self.lock = threading.Lock()
        self.owner = owner  # a cycle back to the encoder: the search must end anyway


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(OBS, 2 * ACT)
        self.camera = Camera(self)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        with self.camera.lock:
            return self.linear(observation)


def exploring_actor() -> TensorDictSequential:
    """TensorDictSequential -> ProbabilisticActor -> TensorDictSequential -> encoder, as real code wraps it."""
    encoder = TensorDictModule(Encoder(), in_keys=["observation"], out_keys=["hidden"])
    split = TensorDictModule(NormalParamExtractor(), in_keys=["hidden"], out_keys=["loc", "scale"])
    actor = ProbabilisticActor(TensorDictSequential(encoder, split), in_keys=["loc", "scale"],
                               distribution_class=TanhNormal)
    return TensorDictSequential(actor, TensorDictModule(nn.Identity(), in_keys=["action"], out_keys=["action"]))


def test_a_lock_ten_levels_down_is_named_by_its_public_path_and_the_users_class() -> None:
    actor = exploring_actor()
    with installed(**only("collectors")), pytest.warns(RLGuardWarning) as record:
        collector = torchrl.collectors.Collector(ContinuousActionVecMockEnv(), actor, frames_per_batch=FRAMES,
                                                 total_frames=FRAMES, policy_device="cpu:0")
        next(iter(collector))
    [message] = [str(w.message) for w in record if issubclass(w.category, RLGuardWarning)]
    path = "policy.module[0].module[0].module[0].module.camera.lock"
    assert f"`{path}` (_thread.lock) (held by Camera, defined at {__file__}" in message
    assert path.count(".") + path.count("[") == 9 and "_det_part" not in message  # nine steps: past the old cliff at eight
    assert remedy(DEVICE, "Camera") in message and "TensorDictModule`" not in message
    assert collector.policy is actor


def test_the_search_has_no_depth_cliff_and_ends_on_cycles() -> None:
    net: nn.Module = Encoder()
    for _ in range(60):
        net = nn.Sequential(net)
    culprit = find_uncopyable(policy(net), "policy")
    assert culprit is not None and culprit.path == "policy.module" + "[0]" * 60 + ".camera.lock"
    assert culprit.owner is Camera


def test_installed_torchrl_collector_runs_a_locked_policy_in_place() -> None:
    net = LockedNet()
    with installed(**only("collectors")), pytest.warns(RLGuardWarning, match="RLG001"):
        _, data = collect(torchrl.collectors.Collector, net, policy_device="cpu:0")
    assert dict(net.named_parameters()).keys() == {"linear.weight", "linear.bias"}
    assert_actions_from(net, data)


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
