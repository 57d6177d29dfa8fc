"""Settings: the SPEC of --rlguard and the ini option, and warn-once scoped per installed block."""

from __future__ import annotations

import inspect
import warnings

import pytest
from torchrl.data import LazyTensorStorage, TensorDictPrioritizedReplayBuffer
from torchrl.data.replay_buffers.samplers import prioritized as torchrl_prioritized

from rlguard.runtime import RLGuardError, RLGuardWarning, install, installed
from rlguard.runtime.settings import merged, parse_spec

needs_fallback = pytest.mark.skipif(
    torchrl_prioritized.SumSegmentTreeFp32 is not None, reason="torchrl's compiled segment trees load here"
)


def test_a_spec_switches_groups_and_checks_in_order() -> None:
    assert parse_spec("") == {}
    assert parse_spec("-samplers, -training.priorities ,warn,max_policy_lag=3") == {
        "samplers": False,
        "warn": True,
        "max_policy_lag": 3,
        "checks": {"priorities": False},
    }
    assert parse_spec("none,collectors,training.recurrent,raise") == {
        "collectors": True,
        "recurrent": False,
        "samplers": False,
        "buffers": False,
        "training": False,
        "checks": {"recurrent": True},
        "warn": False,
    }


@pytest.mark.parametrize("item", ["sampler", "-training.priority", "training.lag", "max_policy_lag=-1", "warn=1"])
def test_a_bad_spec_item_is_named(item: str) -> None:
    spec = f"collectors,{item}"
    with pytest.raises(RLGuardError, match=rf"{item!r} in {spec!r} is not a setting\. SPEC: comma-separated"):
        parse_spec(spec)


def test_later_layers_win_and_checks_merge_one_by_one() -> None:
    session = parse_spec("-collectors,-training.priorities,warn")
    marker = {"warn": False, "checks": {"pinned": False}}
    assert merged(session, marker) == {"collectors": False, "warn": False, "checks": {"priorities": False, "pinned": False}}


@needs_fallback
def test_the_tree_fallback_warns_at_the_first_sampler_built_once_per_block() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RLGuardWarning)
        install()  # no sampler yet: no notice
        with installed():
            pass
    for _ in range(2):
        with installed(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = inspect.currentframe().f_lineno + 1
            TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(8))
            TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(8))
        notices = [w for w in caught if "compiled segment trees are unavailable" in str(w.message)]
        assert [(w.filename, w.lineno) for w in notices] == [(__file__, line)]  # the user's line, once per block
