"""RLG004 (issue 12, section 4): whatever callable a replay buffer is given as ``transform=`` (a function,
a lambda, a ``functools.partial``, an instance with ``__call__``, each part of a ``Compose``), and
``TensorDict.from_dict(...)`` as well as ``TensorDict(...)``; flagged and near-miss forms."""

from __future__ import annotations

import runpy
import textwrap

import pytest

from rlguard.testing import check_source


def findings(source: str):
    return [f for f in check_source(textwrap.dedent(source), select=["RLG004"]) if f.code == "RLG004"]


HEADER = """
import functools
from functools import partial

import torch
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage, ReplayBuffer
"""

PAIRS = """
def to_pairs(data, key="obs"):
    return TensorDict({"obs": data[key], "next_obs": data["next", key]}, batch_size=data.batch_size)
"""

PAIRS_FROM_DICT = """
def to_pairs(data):
    return TensorDict.from_dict({"obs": data["obs"], "next_obs": data["next", "obs"]})
"""

PAIRS_CLASS = """
class ToPairs:
    def __init__(self, key):
        self.key = key

    def __call__(self, data):
        return TensorDict({"obs": data[self.key]}, batch_size=data.batch_size)
"""

FLAGGED = {
    "function": PAIRS + "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=to_pairs)\n",
    "from_dict": PAIRS_FROM_DICT + "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=to_pairs)\n",
    "partial": PAIRS + "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=partial(to_pairs, key='pixels'))\n",
    "functools.partial": PAIRS + "rb = ReplayBuffer(storage=LazyTensorStorage(10), "
                                 "transform=functools.partial(to_pairs, key='pixels'))\n",
    "instance with __call__": PAIRS_CLASS + "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=ToPairs('obs'))\n",
    "instance through a name": PAIRS_CLASS + "pairs = ToPairs('obs')\n"
                                             "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=pairs)\n",
}


@pytest.mark.parametrize("name", list(FLAGGED))
def test_flagged(name):
    (finding,) = findings(HEADER + FLAGGED[name])
    assert "a `ReplayBuffer` transform" in finding.message


NEAR_MISSES = {
    "function with a device": PAIRS.replace("batch_size=data.batch_size)", "batch_size=data.batch_size, device=data.device)")
    + "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=to_pairs)\n",
    "from_dict with a device": PAIRS_FROM_DICT.replace('"obs"]})', '"obs"]}, device=data.device)')
    + "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=to_pairs)\n",
    "function not given to a buffer": PAIRS + "rb = ReplayBuffer(storage=LazyTensorStorage(10))\n",
    "partial of another function": PAIRS + "def keep(data, key):\n    return data\n\n\n"
                                    "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=partial(keep, key='obs'))\n",
    "class whose other method builds it": PAIRS_CLASS.replace("def __call__", "def build")
    + "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=ToPairs('obs'))\n",
    "instance not given to a buffer": PAIRS_CLASS + "pairs = ToPairs('obs')\nrb = ReplayBuffer(storage=LazyTensorStorage(10))\n",
}


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_near_miss(name):
    assert findings(HEADER + NEAR_MISSES[name]) == []


@pytest.mark.parametrize("name", ["from_dict", "instance with __call__", "partial"])
def test_flagged_transforms_give_device_less_samples(name, tmp_path):
    """What the flagged buffers hand out has no device, though the stored data has one (so a buffer
    with ``pin_memory=True`` would not pin it); the rule's advice gives it back."""
    pytest.importorskip("torchrl")
    torch = pytest.importorskip("torch")
    path = tmp_path / "buffer.py"
    path.write_text(HEADER + FLAGGED[name].replace("LazyTensorStorage(10)", "LazyTensorStorage(10), batch_size=2"))
    rb = runpy.run_path(str(path))["rb"]
    rb.extend(_stored(torch))
    assert rb.sample().device is None


def _stored(torch):
    from tensordict import TensorDict

    return TensorDict({"obs": torch.zeros(4, 2), "pixels": torch.zeros(4, 2),
                       "next": {"obs": torch.ones(4, 2), "pixels": torch.ones(4, 2)}},
                      batch_size=[4], device="cpu")


def test_near_miss_transform_keeps_the_device(tmp_path):
    pytest.importorskip("torchrl")
    torch = pytest.importorskip("torch")
    path = tmp_path / "buffer.py"
    path.write_text(HEADER + NEAR_MISSES["from_dict with a device"].replace("LazyTensorStorage(10)",
                                                                           "LazyTensorStorage(10), batch_size=2"))
    rb = runpy.run_path(str(path))["rb"]
    rb.extend(_stored(torch))
    assert rb.sample().device == torch.device("cpu")


TRANSFORM = """
import torch
from tensordict import TensorDict
from torchrl.envs import Transform


class Split(Transform):
    def _call(self, next_tensordict):
        first = TensorDict({"x": next_tensordict["x"]}, batch_size=[])
        second = first.clone()
        return RESULT
"""


@pytest.mark.parametrize("result, flagged", [
    ("torch.stack([first, second])", True),  # stacking device-less TensorDicts keeps no device
    ("second", True),  # clone() keeps the missing device
    ("torch.stack([first, second]).to(next_tensordict.device)", False),
    ("second.to(next_tensordict.device)", False),
    ("torch.stack([first, second]).to(torch.float64)", True),  # a dtype is not a device
])
def test_device_through_clone_stack_and_to(result, flagged):
    assert bool(findings(TRANSFORM.replace("RESULT", result))) == flagged


def test_stacked_device_less_tensordicts_have_no_device():
    torch = pytest.importorskip("torch")
    from tensordict import TensorDict

    first = TensorDict({"x": torch.zeros(2)}, batch_size=[])
    assert torch.stack([first, first.clone()]).device is None
    assert torch.stack([first, first.clone()]).to("cpu").device == torch.device("cpu")
