"""RLG004 against the real libraries (torch 2.13, torchrl 0.14.1, tensordict 0.14.3).

The device-less TensorDict is a real problem (an environment's whole rollout loses its device;
a pinned replay buffer skips pinning), and the fixed transforms produce TensorDicts with a device.
"""

from __future__ import annotations

import runpy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
from tensordict import TensorDict  # noqa: E402
from torchrl.data import LazyTensorStorage, ReplayBuffer  # noqa: E402
from torchrl.envs import TransformedEnv  # noqa: E402
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv  # noqa: E402

from rlguard.testing import check_source, fix_source  # noqa: E402


def run(source: str, tmp_path, name: str) -> dict:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return runpy.run_path(str(path))


def fix(source: str, unsafe: bool) -> str:
    fixed = fix_source(source, select=["RLG004"], unsafe=unsafe)
    assert fixed != source
    assert [f for f in check_source(fixed, select=["RLG004"]) if f.code == "RLG004"] == []
    return fixed


ENV_TRANSFORM = '''\
from tensordict import TensorDict
from torchrl.envs import Transform


class Rebuild(Transform):
    """Rebuilds the environment's output (a stand-in for transforms that return a new TensorDict)."""

    def _reset(self, tensordict, tensordict_reset):
        return TensorDict(dict(tensordict_reset.items()), batch_size=tensordict_reset.batch_size)

    def _call(self, next_tensordict):
        return TensorDict(dict(next_tensordict.items()), batch_size=next_tensordict.batch_size)
'''


def test_env_transform_rollout_loses_then_keeps_its_device(tmp_path):
    before = run(ENV_TRANSFORM, tmp_path, "before")["Rebuild"]
    env = TransformedEnv(ContinuousActionVecMockEnv(device="cpu"), before())
    assert env.device == torch.device("cpu")
    assert env.reset().device is None  # the bug: the environment's output has no device
    assert env.rollout(3).device is None

    fixed = fix(ENV_TRANSFORM, unsafe=True)
    # Not a plain read of one parameter: the unsafe fix uses the first one, the reset input.
    assert "batch_size=tensordict_reset.batch_size, device=tensordict.device)" in fixed
    assert "batch_size=next_tensordict.batch_size, device=next_tensordict.device)" in fixed
    after = run(fixed, tmp_path, "after")["Rebuild"]
    env = TransformedEnv(ContinuousActionVecMockEnv(device="cpu"), after())
    assert env.reset().device == torch.device("cpu")
    rollout = env.rollout(3)
    assert rollout.device == torch.device("cpu")
    assert rollout["next"].device == torch.device("cpu")


PAIRS = '''\
from tensordict import TensorDict
from torchrl.envs import Transform


class PairUp(Transform):
    def forward(self, tensordict):
        return TensorDict(
            {"obs": tensordict["observation"], "next_obs": tensordict["next", "observation"]},
            batch_size=tensordict.batch_size,
        )
'''


def _transitions() -> TensorDict:
    obs = torch.arange(16.0).unsqueeze(-1)
    return TensorDict({"observation": obs, "next": {"observation": obs + 1}}, batch_size=[16], device="cpu")


def test_forward_transform_applied_directly_and_in_a_buffer(tmp_path):
    before = run(PAIRS, tmp_path, "before")["PairUp"]
    assert before()(_transitions()).device is None
    rb = ReplayBuffer(storage=LazyTensorStorage(16, device="cpu"), transform=before(), batch_size=4)
    rb.extend(_transitions())
    assert rb.sample().device is None

    fixed = fix(PAIRS, unsafe=False)  # every value is read from ``tensordict``: a safe fix
    after = run(fixed, tmp_path, "after")["PairUp"]
    out = after()(_transitions())
    assert out.device == torch.device("cpu")
    assert torch.equal(out["next_obs"], out["obs"] + 1)
    rb = ReplayBuffer(storage=LazyTensorStorage(16, device="cpu"), transform=after(), batch_size=4)
    rb.extend(_transitions())
    assert rb.sample().device == torch.device("cpu")


BUFFER_FUNCTION = '''\
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage, ReplayBuffer


def to_pairs(data):
    return TensorDict({"obs": data["observation"], "next_obs": data["next", "observation"]}, batch_size=data.batch_size)


def make_buffer():
    return ReplayBuffer(storage=LazyTensorStorage(16, device="cpu"), transform=to_pairs, pin_memory=True, batch_size=4)
'''


def test_pinned_buffer_skips_device_less_samples(tmp_path, monkeypatch):
    """The pinned-buffer bug: ``pin_memory=True`` pins a sample only when its device is the CPU."""
    pinned = []

    def spy(self, *args, **kwargs):
        pinned.append(self.device)
        if torch.cuda.is_available():
            return original(self, *args, **kwargs)
        return self  # pinning needs an accelerator; on a CPU-only machine record that it was asked for

    original = TensorDict.pin_memory
    monkeypatch.setattr(TensorDict, "pin_memory", spy)

    rb = run(BUFFER_FUNCTION, tmp_path, "before")["make_buffer"]()
    rb.extend(_transitions())
    sample = rb.sample()
    assert sample.device is None and pinned == []  # silently not pinned

    fixed = fix(BUFFER_FUNCTION, unsafe=False)
    assert "batch_size=data.batch_size, device=data.device)" in fixed
    rb = run(fixed, tmp_path, "after")["make_buffer"]()
    rb.extend(_transitions())
    sample = rb.sample()
    assert sample.device == torch.device("cpu")
    assert pinned == [torch.device("cpu")]  # the buffer now takes its pinning path
    if torch.cuda.is_available():
        assert sample["obs"].is_pinned()


def test_set_into_a_tensordict_takes_its_device():
    """Why ``td.set(key, TensorDict(...))`` and ``td.update(TensorDict(...))`` are not reported."""
    td = TensorDict({"a": torch.zeros(2)}, [2], device="cpu")
    td.set("goal", TensorDict({"p": torch.zeros(2)}, [2]))
    td.update(TensorDict({"q": TensorDict({"r": torch.zeros(2)}, [2])}, [2]))
    assert td["goal"].device == torch.device("cpu")
    assert td["q"].device == torch.device("cpu")


def test_to_device_gives_a_device():
    """Why ``TensorDict(...).to(device)`` is not reported."""
    assert TensorDict({"a": torch.zeros(2)}, [2]).to("cpu").device == torch.device("cpu")
