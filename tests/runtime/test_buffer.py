"""ReplayBuffer and TensorDictReplayBuffer with pin_memory=True: pinned samples where possible,
no crash where not."""

from __future__ import annotations

import warnings
from typing import Any
from collections.abc import Iterator

import pytest
import torch
from rlguard_runtime_helpers import only
from tensordict import TensorDict, TensorDictBase
from torchrl.data import LazyTensorStorage, ListStorage, PrioritizedReplayBuffer, TensorDictPrioritizedReplayBuffer
from torchrl.data import ReplayBuffer as StockPlainBuffer
from torchrl.data import TensorDictReplayBuffer as StockBuffer
from torchrl.envs.transforms import Transform

from rlguard.runtime import RLGuardWarning, installed
from rlguard.runtime import buffer as rlguard_buffer
from rlguard.runtime._patch import PatchSet
from rlguard.runtime.buffer import ReplayBuffer, TensorDictReplayBuffer, patches, pinning_error
from rlguard.runtime.sampler import patches as sampler_patches

NO_PINNING = pinning_error() is not None
cpu_only = pytest.mark.skipif(not NO_PINNING, reason="pinned memory works here")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


class AddSquare(Transform):
    """A real transform that creates a new entry at sampling time."""

    def __init__(self) -> None:
        super().__init__(in_keys=["obs"], out_keys=["obs_squared"])

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs**2


def data(n: int = 6) -> TensorDict:
    return TensorDict(obs=torch.arange(float(n)), nested=TensorDict(x=torch.ones(n, 2), batch_size=[n]), batch_size=[n])


@pytest.fixture
def patched() -> Iterator[None]:
    applied = PatchSet()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)  # the tree fallback notice
        for patch in patches() + sampler_patches():
            applied.apply(patch)
    yield
    applied.restore_all()


def tensors_in(sample: TensorDictBase, info: dict[str, Any] | None = None) -> list[torch.Tensor]:
    leaves = list(sample.values(include_nested=True, leaves_only=True))
    return leaves + [value for value in (info or {}).values() if isinstance(value, torch.Tensor)]


# --- no accelerator ------------------------------------------------------------------------


@cpu_only
def test_stock_buffer_raises_on_every_sample() -> None:
    buffer = StockBuffer(storage=LazyTensorStorage(8), pin_memory=True)
    buffer.extend(data())
    for _ in range(2):
        with pytest.raises(RuntimeError, match="accelerator"):
            buffer.sample(3)


@cpu_only
def test_without_accelerator_warns_once_and_samples_unpinned() -> None:
    with pytest.warns(RLGuardWarning, match=r"pin_memory=True\) cannot pin here") as caught:
        buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(8), pin_memory=True, transform=AddSquare())
        TensorDictReplayBuffer(storage=ListStorage(8), pin_memory=True)
    assert len(caught) == 1
    buffer.extend(data())
    sample, info = buffer.sample(4, return_info=True)
    assert sample["obs_squared"].equal(sample["obs"] ** 2)
    assert sample["index"].equal(torch.as_tensor(info["index"]))
    assert not any(t.is_pinned() for t in tensors_in(sample))


@cpu_only
def test_stock_plain_buffer_raises_on_every_sample() -> None:
    buffer = StockPlainBuffer(storage=LazyTensorStorage(8), pin_memory=True)
    buffer.extend(torch.arange(6.0))
    for _ in range(2):
        with pytest.raises(RuntimeError, match="accelerator"):
            buffer.sample(3)


@cpu_only
def test_plain_buffer_without_accelerator_warns_once_and_samples_unpinned() -> None:
    with pytest.warns(RLGuardWarning, match=r"ReplayBuffer\(pin_memory=True\) cannot pin here") as caught:
        buffer = ReplayBuffer(storage=LazyTensorStorage(8), pin_memory=True)
        ReplayBuffer(storage=ListStorage(8), pin_memory=True)
    assert len(caught) == 1
    buffer.extend(torch.arange(6.0))
    sample, info = buffer.sample(4, return_info=True)
    assert sample.shape == (4,) and not sample.is_pinned()


@cpu_only
def test_pin_memory_false_stays_silent() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RLGuardWarning)
        TensorDictReplayBuffer(storage=LazyTensorStorage(8))


@cpu_only
@pytest.mark.parametrize("storage", [LazyTensorStorage, ListStorage])
def test_patches_fix_stock_buffers_and_their_subclasses(patched: None, storage: type) -> None:
    with pytest.warns(RLGuardWarning, match="pageable"):
        plain = StockBuffer(storage=storage(8), pin_memory=True)
    prioritized = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=storage(8), pin_memory=True)
    for buffer in (plain, prioritized):
        buffer.extend(data())
        assert buffer.sample(3)["index"].shape == (3,)
    assert prioritized.sample(3)["priority_weight"].shape == (3,)


@cpu_only
def test_installed_buffers_sample_without_error() -> None:
    with installed(**only("buffers")), pytest.warns(RLGuardWarning, match="pageable"):
        buffer = StockBuffer(storage=LazyTensorStorage(8), pin_memory=True)
    buffer.extend(data())
    assert buffer.sample(2).batch_size == (2,)


def test_patches_restore_the_identical_originals() -> None:
    names = ("__init__", "sample", "dumps", "loads")
    originals = [vars(StockPlainBuffer)[name] for name in names] + [vars(StockBuffer)["sample"]]
    applied = PatchSet()
    for patch in patches():
        applied.apply(patch)
    assert vars(StockBuffer)["sample"] is vars(TensorDictReplayBuffer)["sample"]
    assert all(vars(StockPlainBuffer)[name] is vars(ReplayBuffer)[name] for name in names)
    applied.restore_all()
    assert [vars(StockPlainBuffer)[name] for name in names] + [vars(StockBuffer)["sample"]] == originals


# --- priority updates ---------------------------------------------------------------------


def reductions_over_rows(action: Any) -> list[list[int]]:
    """Shapes given to aten::max with a second dimension: torchrl's max(dim=1) per transition."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as profile:
        action()
    return [e.input_shapes[0] for e in profile.events() if e.name == "aten::max" and len(e.input_shapes[0]) == 2]


@pytest.mark.parametrize("sync", [True, False])
def test_one_priority_per_transition_is_not_reduced(patched: None, sync: bool) -> None:
    # max(dim=1) over a dimension of size 1 wakes every intra-op thread: 20-30 ms on a busy
    # two-core machine against 7 us on one thread, most of a prioritized replay step.
    def buffer() -> TensorDictPrioritizedReplayBuffer:
        made = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(8), sync=sync)
        made.extend(data())
        return made

    corrected, batch = buffer(), data()[:4].set("index", torch.tensor([0, 2, 3, 5]))
    batch.set("td_error", torch.tensor([0.5, 4.0, 1.0, 2.0]))
    assert reductions_over_rows(lambda: corrected.update_tensordict_priority(batch)) == []
    raw = corrected.prioritized_sampler._sum_tree[torch.tensor([0, 2, 3, 5])]
    assert torch.allclose(torch.as_tensor(raw), (batch["td_error"] + 1e-8) ** 0.7)


def test_several_priorities_per_transition_are_still_reduced(patched: None) -> None:
    buffer = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(8))
    batch = data()[:2].set("td_error", torch.tensor([[0.5, 4.0], [3.0, 1.0]]))
    assert buffer._get_priority_vector(batch).tolist() == [4.0, 3.0]


# --- pinned output -------------------------------------------------------------------------


@pytest.fixture
def simulated_pinning(monkeypatch: pytest.MonkeyPatch) -> list[torch.Tensor]:
    """Record every tensor that goes through ``torch.Tensor.pin_memory``.

    This replaces the very method whose use is checked. Where pinning works (an accelerator), the
    replacement calls the real method, so the call path runs for real and the results must be
    pinned. On a CPU-only torch the real method raises, so the replacement simulates it with a
    copy: the test then proves that every entry goes through pinning, not that it comes back
    pinned (the ``cuda`` tests below check that without any replacement).
    """
    real_pin_memory = torch.Tensor.pin_memory
    pinned: list[torch.Tensor] = []

    def pin_memory(tensor: torch.Tensor, *args: Any) -> torch.Tensor:
        result = tensor.clone() if NO_PINNING else real_pin_memory(tensor, *args)
        pinned.append(result)
        return result

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)
    rlguard_buffer.pinning_error.cache_clear()
    yield pinned
    rlguard_buffer.pinning_error.cache_clear()


@pytest.mark.parametrize("storage", [LazyTensorStorage, ListStorage], ids=["device cpu", "device None"])
def test_every_sampled_entry_goes_through_pinning(patched: None, simulated_pinning: list, storage: type) -> None:
    """Simulated where nothing can pin (see ``simulated_pinning``); real, and checked pinned, elsewhere."""
    buffer = TensorDictPrioritizedReplayBuffer(
        alpha=0.7, beta=0.5, storage=storage(8), pin_memory=True, transform=AddSquare()
    )
    buffer.extend(data())
    sample, info = buffer.sample(4, return_info=True)
    assert {"index", "priority_weight", "obs_squared"} <= set(sample.keys())
    for tensor in tensors_in(sample, info):
        assert any(tensor is copy for copy in simulated_pinning)
        assert NO_PINNING or tensor.is_pinned()


@pytest.mark.parametrize("storage", [LazyTensorStorage, ListStorage], ids=["device cpu", "device None"])
def test_plain_buffer_pins_its_sample_and_info(simulated_pinning: list, storage: type) -> None:
    buffer = ReplayBuffer(storage=storage(8), pin_memory=True)
    buffer.extend(torch.arange(6.0))
    sample, info = buffer.sample(4, return_info=True)
    assert any(sample is copy for copy in simulated_pinning)
    # torchrl pins only the data, and only where the storage's device is "cpu".
    for value in info.values():
        assert not isinstance(value, torch.Tensor) or any(value is copy for copy in simulated_pinning)


def test_patched_prioritized_plain_buffer_pins_its_weights(patched: None, simulated_pinning: list) -> None:
    buffer = PrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=ListStorage(8), pin_memory=True)
    buffer.extend(torch.arange(6.0))
    sample, info = buffer.sample(4, return_info=True)
    assert isinstance(info["priority_weight"], torch.Tensor)
    for tensor in (sample, info["priority_weight"]):
        assert any(tensor is copy for copy in simulated_pinning)


def assert_all_pinned(sample: TensorDictBase, info: dict[str, Any] | None = None) -> None:
    unpinned = [t.shape for t in tensors_in(sample, info) if not t.is_pinned()]
    assert not unpinned


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("storage", [LazyTensorStorage, ListStorage], ids=["device cpu", "device None"])
def test_cuda_sample_is_pinned_after_transforms(storage: type) -> None:
    buffer = TensorDictReplayBuffer(storage=storage(8), pin_memory=True, transform=AddSquare())
    buffer.extend(data())
    sample, info = buffer.sample(4, return_info=True)
    assert "obs_squared" in sample.keys()
    assert_all_pinned(sample, info)


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("storage", [LazyTensorStorage, ListStorage], ids=["device cpu", "device None"])
def test_cuda_prioritized_index_and_weights_are_pinned(patched: None, storage: type) -> None:
    buffer = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=storage(8), pin_memory=True)
    buffer.extend(data())
    sample = buffer.sample(4)
    assert sample["index"].is_pinned() and sample["priority_weight"].is_pinned()
    assert_all_pinned(sample)
