"""Under install(), torchrl copies a copyable policy or network exactly as often as stock torchrl does.

The policy shares its lock in its own ``__deepcopy__`` (the remedy rlguard's messages give), and
counts its calls: a ``__deepcopy__`` with side effects (a counter, a registration, a connection)
must not run an extra time because rlguard probed the copy first.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torchrl.collectors
from rlguard_runtime_helpers import ACT, OBS, LockedNet, only
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.modules import Actor, ValueOperator
from torchrl.objectives import DDPGLoss
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

from rlguard.runtime import installed

pytestmark = [
    pytest.mark.filterwarnings("ignore::FutureWarning"),  # torchrl 0.15 transform notice
    pytest.mark.filterwarnings("ignore:No target network updater"),
]


class SharingNet(LockedNet):
    """The helpers' locked network, sharing its lock in its own __deepcopy__; counts the copies."""

    copies = 0

    def __deepcopy__(self, memo: dict[int, Any]) -> SharingNet:
        type(self).copies += 1
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy({k: v for k, v in vars(self).items() if k != "lock"}, memo))
        new.lock = self.lock
        return new


class Critic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(OBS + ACT, 1)

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.cat([observation, action], -1))


def build_collector() -> None:
    policy = TensorDictModule(SharingNet(), in_keys=["observation"], out_keys=["action"])
    collector = torchrl.collectors.Collector(ContinuousActionVecMockEnv(), policy, frames_per_batch=4,
                                             total_frames=4, policy_device="cpu:0")  # a device copy
    assert collector.policy.module is not policy.module  # torchrl made its copy


def build_ddpg_loss() -> None:
    actor = Actor(SharingNet(), in_keys=["observation"])
    DDPGLoss(actor, ValueOperator(Critic(), in_keys=["observation", "action"]))


@pytest.mark.parametrize("build", [build_collector, build_ddpg_loss], ids=["Collector", "DDPGLoss"])
def test_a_policys_own_deepcopy_runs_as_often_as_in_stock_torchrl(build: Callable[[], None]) -> None:
    SharingNet.copies = 0
    build()
    stock = SharingNet.copies
    SharingNet.copies = 0
    with installed(**only("collectors")):
        build()
    assert stock >= 1 and SharingNet.copies == stock
