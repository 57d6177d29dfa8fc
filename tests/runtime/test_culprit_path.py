"""The member a message names: the uncopyable value itself, by a path that evaluates to it, held by the user's class.

The policy is the realistic exploration-wrapped actor: ``TensorDictSequential(features,
ProbabilisticActor(TensorDictSequential(encoder, head)), AdditiveGaussianModule)``, whose
library containers all customise pickling and hold aliases of each other (``_det_part``).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable

import pytest
import torch
import torchrl.collectors
from rlguard_runtime_helpers import ACT, OBS, only
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.data import Bounded
from torchrl.modules import AdditiveGaussianModule, ProbabilisticActor, TanhNormal
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

from rlguard.advice import DEVICE, PICKLE, remedy
from rlguard.runtime import RLGuardError, RLGuardWarning, installed
from rlguard.runtime.marker import find_uncopyable, find_unpicklable

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # torchrl 0.15 transform notice
HIDDEN = 16
LOCK = type(threading.Lock())
OLD_WALK_LIMIT = 20_000  # objects: past it, the search used to name the holder instead of the lock


class Config:
    """A plain object of the user's own code holding the lock (public attribute names)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.scale = 1.0


class PrivateConfig:
    """The same with private attribute names, as much real code spells it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()


class Encoder(nn.Module):
    def __init__(self, private: bool = False) -> None:
        super().__init__()
        self.linear = nn.Linear(HIDDEN, HIDDEN)
        if private:
            self._cfg = PrivateConfig()
        else:
            self.cfg = Config()

    def forward(self, feature: torch.Tensor) -> torch.Tensor:
        return self.linear(feature).relu()


class Reading:
    def __init__(self, value: float) -> None:
        self.value = value


class SensorBank(nn.Module):
    """An encoder holding many small objects of its own; the last one holds the lock."""

    def __init__(self, size: int = 25_000) -> None:
        super().__init__()
        self.linear = nn.Linear(HIDDEN, HIDDEN)
        self.readings = [Reading(float(i)) for i in range(size)]
        self.readings[-1].lock = threading.Lock()

    def forward(self, feature: torch.Tensor) -> torch.Tensor:
        return self.linear(feature).relu()


def exploring_actor(encoder: nn.Module) -> TensorDictSequential:
    spec = Bounded(-1.0, 1.0, shape=(ACT,))
    features = TensorDictModule(nn.Linear(OBS, HIDDEN), in_keys=["observation"], out_keys=["feature"])
    body = TensorDictModule(encoder, in_keys=["feature"], out_keys=["hidden"])
    head = TensorDictModule(nn.Sequential(nn.Linear(HIDDEN, 2 * ACT), NormalParamExtractor()),
                            in_keys=["hidden"], out_keys=["loc", "scale"])
    actor = ProbabilisticActor(TensorDictSequential(body, head), in_keys=["loc", "scale"], spec=spec,
                               distribution_class=TanhNormal)
    return TensorDictSequential(features, actor, AdditiveGaussianModule(spec=spec))


ENCODER = "policy.module[1].module[0].module[0].module"
# the encoder, the path a message must name, the user's class holding the lock
CASES = [
    pytest.param(Encoder, f"{ENCODER}.cfg.lock", Config, id="public"),
    pytest.param(lambda: Encoder(private=True), f"{ENCODER}._cfg._lock", PrivateConfig, id="private"),
    # more objects before the lock than the old walk visited (OLD_WALK_LIMIT)
    pytest.param(SensorBank, f"{ENCODER}.readings[24999].lock", Reading, id="past-the-old-walk-limit"),
]


def collector_warning(policy: nn.Module) -> str:
    with installed(**only("collectors")), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        collector = torchrl.collectors.Collector(ContinuousActionVecMockEnv(), policy, frames_per_batch=4,
                                                 total_frames=4, policy_device="cpu:0")
        next(iter(collector))  # the policy runs in place
    [message] = [str(w.message) for w in record if issubclass(w.category, RLGuardWarning)]
    return message


@pytest.mark.parametrize(("encoder", "path", "holder"), CASES)
def test_the_message_names_the_lock_by_its_path_and_addresses_the_users_class(
    encoder: Callable[[], nn.Module], path: str, holder: type
) -> None:
    policy = exploring_actor(encoder())
    message = collector_warning(policy)
    assert f"`{path}` (_thread.lock) (held by {holder.__qualname__}, defined at {__file__}:" in message
    assert remedy(DEVICE, holder.__qualname__) in message
    assert "_det_part" not in message and "TensorDictSequential`" not in message
    lock = eval(path, {"policy": policy})  # the path is Python that reaches the lock
    assert isinstance(lock, LOCK)
    assert not isinstance(lock, holder) and lock in vars(eval(path.rpartition(".")[0], {"policy": policy})).values()


def test_the_old_walk_limit_case_is_past_it() -> None:
    assert len(SensorBank().readings) > OLD_WALK_LIMIT


@pytest.mark.parametrize(("encoder", "path", "holder"), CASES)
def test_the_search_finds_the_same_member_for_copy_and_for_pickling(
    encoder: Callable[[], nn.Module], path: str, holder: type
) -> None:
    policy = exploring_actor(encoder())
    copied, pickled = find_uncopyable(policy, "policy"), find_unpicklable(policy, "policy")
    assert copied is not None and pickled is not None
    assert (copied.path, copied.owner, copied.type_name) == (path, holder, "_thread.lock")
    assert (pickled.path, pickled.owner) == (path, holder)
    assert remedy(PICKLE, pickled.holder_name()) == remedy(PICKLE, holder.__qualname__)


class Device:
    """Holds a lock and a back-reference to the module that owns it."""

    def __init__(self, owner: nn.Module) -> None:
        self.owner = owner
        self.lock = threading.Lock()


class Sensor(nn.Module):
    """A module whose lock sits in a member that refers back up to the module."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(OBS, ACT)
        self.device = Device(self)


def test_a_back_reference_does_not_stand_in_for_the_lock() -> None:
    # Probing `device` alone also copies its owner; only the lock explains the failure.
    culprit = find_uncopyable(TensorDictModule(Sensor(), in_keys=["observation"], out_keys=["action"]), "policy")
    assert culprit is not None
    assert (culprit.path, culprit.owner) == ("policy.module.device.lock", Device)


def test_a_loss_refusal_names_the_lock_inside_the_exploring_actor() -> None:
    from torchrl.modules import ValueOperator
    from torchrl.objectives import DDPGLoss

    class Value(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(OBS + ACT, 1)

        def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
            return self.linear(torch.cat([observation, action], -1))

    policy = exploring_actor(Encoder())
    value = ValueOperator(Value(), in_keys=["observation", "action"])
    with installed(**only("collectors")), pytest.raises(RLGuardError) as error:
        DDPGLoss(policy, value)
    message = str(error.value)
    assert "`actor_network.module[1].module[0].module[0].module.cfg.lock` (_thread.lock) (held by Config" in message
    assert "_det_part" not in message
    assert all(p.device.type == "cpu" for p in policy.parameters())  # no meta tensors left behind
