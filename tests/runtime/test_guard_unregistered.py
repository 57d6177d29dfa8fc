"""A TrainingGuard used without a Trainer saves and restores its counters like a registered one."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from rlguard.runtime import TrainingGuard


def test_an_unregistered_guard_has_a_state_dict_and_loads_it() -> None:
    guard = TrainingGuard()
    guard.check_batch(TensorDict({"reward": torch.zeros(4, 1)}, batch_size=[4]))
    state = guard.state_dict()
    assert state["policy_lag"] == 0 and state["batches"] == 1
    assert all(type(value) is int for value in state.values())  # plain ints, as a checkpoint wants
    restored = TrainingGuard()
    restored.load_state_dict(state)
    assert restored.state_dict() == state
