"""A buffer's loads validates every file of its state before changing anything, and never runs
code from it: hostile JSON, a planted pickle payload, nonsense lengths and cursors, and stock
torchrl's own folders (read safely)."""

from __future__ import annotations

import json
import math
import os
import pickle
import warnings
from pathlib import Path
from typing import Any
from collections.abc import Callable

import pytest
import torch
from rlguard_runtime_helpers import current_state, only, tree_values
from tensordict import TensorDict
from torchrl.data import LazyMemmapStorage, LazyTensorStorage, TensorDictPrioritizedReplayBuffer
from torchrl.data import TensorDictReplayBuffer as StockBuffer
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from torchrl.data.replay_buffers.writers import TensorDictMaxValueWriter
from torchrl.envs.transforms import Compose, ObservationNorm

from rlguard.runtime import RLGuardError, RLGuardWarning, installed
from rlguard.runtime.buffer import ReplayBuffer, TensorDictReplayBuffer
from rlguard.runtime.sampler import PrioritizedSampler

CAPACITY = 20


def buffer(**kwargs: Any) -> TensorDictReplayBuffer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        sampler = PrioritizedSampler(CAPACITY, alpha=0.7, beta=0.5)
    return TensorDictReplayBuffer(storage=LazyTensorStorage(CAPACITY), sampler=sampler, batch_size=4, **kwargs)


def filled(count: int, seed: int, **kwargs: Any) -> TensorDictReplayBuffer:
    made = buffer(**kwargs)
    made.extend(TensorDict(obs=torch.arange(float(count)) + 100 * seed, batch_size=[count]))
    made.update_priority(torch.arange(count), torch.arange(1.0, count + 1) * seed)
    return made


def state(made: TensorDictReplayBuffer) -> tuple[Any, ...]:
    observations = tuple(made.storage[: len(made)]["obs"].tolist()) if len(made) else ()
    sums = tuple(tree_values(made.sampler._sum_tree, CAPACITY).tolist())
    return (len(made), observations, made.writer._cursor, made.writer._write_count, sums, made._batch_size)


def refused(folder: Path, named: str) -> str:
    """Load ``folder`` into a filled buffer: the error names ``named``, in one line, and the
    buffer is exactly as it was."""
    target = filled(5, seed=1)
    before = state(target)
    with pytest.raises(RLGuardError) as raised:
        target.loads(folder)
    message = str(raised.value)
    assert named in message and "\n" not in message, message
    assert state(target) == before
    return message


def edit_json(relative: str, change: Callable[[Any], Any]) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        file = folder / relative
        file.write_text(json.dumps(change(json.loads(file.read_text()))))

    return damage


def with_field(**fields: Any) -> Callable[[Any], Any]:
    return lambda data: {**data, **fields}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


WRITER, STORAGE, META = "writer/metadata.json", "storage/storage_metadata.json", "buffer_metadata.json"
DAMAGE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # every file of a buffer's state, each malformed shape: (damage, file named, problem named)
    "storage length beyond capacity": (edit_json(STORAGE, with_field(len=999)), "storage_metadata.json", "'len' must be an integer from 0 to 20, got 999"),
    "negative storage length": (edit_json(STORAGE, with_field(len=-1)), "storage_metadata.json", "'len'"),
    "storage length as text": (edit_json(STORAGE, with_field(len="10")), "storage_metadata.json", "'len'"),
    "is_pytree not a bool": (edit_json(STORAGE, with_field(is_pytree="no")), "storage_metadata.json", "'is_pytree'"),
    "storage metadata not an object": (edit_json(STORAGE, with_field(metadata=[])), "storage_metadata.json", "'metadata'"),
    "empty storage metadata": (edit_json(STORAGE, lambda _: {}), "storage_metadata.json", "is missing"),
    "cursor beyond capacity": (edit_json(WRITER, with_field(cursor=999)), "metadata.json", "'cursor' must be an integer from 0 to 19, got 999"),
    "negative cursor": (edit_json(WRITER, with_field(cursor=-3)), "metadata.json", "'cursor'"),
    "cursor as text": (edit_json(WRITER, with_field(cursor="5")), "metadata.json", "'cursor'"),
    "cursor as a bool": (edit_json(WRITER, with_field(cursor=True)), "metadata.json", "'cursor'"),
    "write count as a float": (edit_json(WRITER, with_field(write_count=2.5)), "metadata.json", "'write_count'"),
    "empty writer metadata": (edit_json(WRITER, lambda _: {}), "metadata.json", "'cursor' is missing"),
    "writer metadata a list": (edit_json(WRITER, lambda _: [1]), "metadata.json", "expected a JSON object"),
    "batch size as text": (edit_json(META, with_field(batch_size="4")), "buffer_metadata.json", "'batch_size'"),
    "empty buffer metadata": (edit_json(META, lambda _: {}), "buffer_metadata.json", "'batch_size' is missing"),
    "sampler metadata empty": (edit_json("sampler/sampler_metadata.json", lambda _: {}), "sampler_metadata.json", "is missing"),
    "deep writer JSON": (lambda p: (p / WRITER).write_text(nested(100_000)), "metadata.json", "levels deep"),
    "deep storage JSON": (lambda p: (p / "storage" / "meta.json").write_text(nested(5000)), "meta.json", "levels deep"),
    "deep sampler JSON": (lambda p: (p / "sampler" / "sampler_metadata.json").write_text(nested(100_000)), "sampler_metadata.json", "levels deep"),
    "prefetch state of another version": (edit_json("prefetch.json", with_field(version=7)), "prefetch.json", "'version'"),
    "prefetch state empty": (edit_json("prefetch.json", lambda _: {}), "prefetch.json", "is missing"),
    "prefetch state not JSON": (lambda p: (p / "prefetch.json").write_bytes(b"\x80\x04"), "prefetch.json", "not readable JSON"),
    "no storage tensor": (lambda p: (p / "storage" / "obs.memmap").unlink(), "obs.memmap", "missing"),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_every_malformed_state_file_is_refused_before_anything_changes(tmp_path: Path, damage) -> None:
    how, named, problem = damage
    filled(12, seed=2).dumps(tmp_path)
    how(current_state(tmp_path))
    message = refused(tmp_path, named)
    assert problem in message, message


def test_deeply_nested_sampler_metadata_raises_rlguard_error(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        sampler = PrioritizedSampler(CAPACITY, alpha=0.7, beta=0.5)
    sampler.dumps(tmp_path)
    (current_state(tmp_path) / "sampler_metadata.json").write_text('{"_alpha": ' + nested(50_000) + "}")
    with pytest.raises(RLGuardError, match=r"sampler_metadata\.json: nests arrays and objects 50001 levels deep"):
        sampler.loads(tmp_path)  # RecursionError before


def test_the_random_generator_round_trips_and_a_damaged_one_is_refused(tmp_path: Path) -> None:
    original = filled(12, seed=2, generator=torch.Generator().manual_seed(7))
    original.dumps(tmp_path)
    target = filled(5, seed=1, generator=torch.Generator().manual_seed(1))
    target.loads(tmp_path)
    assert torch.equal(target._rng.get_state(), original._rng.get_state())
    memmap = current_state(tmp_path) / "rng_state" / "rng_state.memmap"
    memmap.write_bytes(memmap.read_bytes()[:10])
    refused(tmp_path, "rng_state.memmap: holds 10 bytes")


def test_plain_tensors_into_an_empty_storage_are_refused_with_the_remedy(tmp_path: Path) -> None:
    original = ReplayBuffer(storage=LazyTensorStorage(CAPACITY), batch_size=4)
    original.extend(torch.arange(30.0).reshape(15, 2))
    original.dumps(tmp_path)
    empty = ReplayBuffer(storage=LazyTensorStorage(CAPACITY), batch_size=4)
    with pytest.raises(RLGuardError, match=r"storage_metadata\.json: holds plain tensors, .* extend this buffer once"):
        empty.loads(tmp_path)  # torchrl's RuntimeError before
    assert len(empty) == 0
    empty.extend(torch.zeros(1, 2))
    empty.loads(tmp_path)
    assert torch.equal(empty.storage[:15], original.storage[:15])


LAYOUTS: dict[str, Callable[[], Any]] = {
    "max-value writer": lambda: TensorDictReplayBuffer(
        storage=LazyTensorStorage(10), writer=TensorDictMaxValueWriter(rank_key="r"), batch_size=2
    ),
    "memmap storage, sampler without replacement": lambda: TensorDictReplayBuffer(
        storage=LazyMemmapStorage(10), sampler=SamplerWithoutReplacement(), batch_size=2
    ),
    "two-dimensional storage": lambda: TensorDictReplayBuffer(storage=LazyTensorStorage(10, ndim=2), batch_size=2),
}


@pytest.mark.parametrize("make", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_valid_states_of_other_layouts_load(tmp_path: Path, make: Callable[[], Any]) -> None:
    """Near misses of the checks: other writers, samplers and storage shapes are not refused."""
    original = make()
    shape = [3, 4] if original.storage.ndim == 2 else [15]
    original.extend(TensorDict(obs=torch.arange(float(math.prod(shape))).reshape(shape), r=torch.rand(shape), batch_size=shape))
    original.sample()
    original.dumps(tmp_path)
    loaded = make()
    loaded.loads(tmp_path)
    assert len(loaded) == len(original) and loaded.writer._cursor == original.writer._cursor
    assert torch.equal(loaded.storage[: len(original.storage)]["obs"], original.storage[: len(original.storage)]["obs"])


# --- transforms ----------------------------------------------------------------------------


def normalized(loc: float) -> TensorDictReplayBuffer:
    return filled(6, seed=1, transform=Compose(ObservationNorm(loc=torch.tensor(loc), scale=1.0, in_keys=["obs"])))


def test_a_transform_state_from_another_buffer_is_refused_before_the_storage_loads(tmp_path: Path) -> None:
    filled(12, seed=2, transform=Compose(ObservationNorm(loc=torch.zeros(3), scale=1.0, in_keys=["obs"]))).dumps(tmp_path)
    target = normalized(0.5)
    before = state(target)
    with pytest.raises(RLGuardError, match=r"transform\.t: key '.*loc' holds \(3,\), but this buffer's transform holds \(\)"):
        target.loads(tmp_path)  # torchrl failed on the transform after replacing storage, sampler and writer
    assert state(target) == before


def test_a_corrupt_transform_file_is_refused_in_one_line(tmp_path: Path) -> None:
    normalized(2.0).dumps(tmp_path)
    (current_state(tmp_path) / "transform.t").write_bytes(b"PK\x03\x04 not a zip")
    message = refused(tmp_path, "transform.t: cannot be read as plain tensors")
    assert "Traceback" not in message


def test_a_transform_state_round_trips(tmp_path: Path) -> None:
    normalized(2.0).dumps(tmp_path)
    target = normalized(0.5)
    target.loads(tmp_path)
    assert float(target._transform[0].loc) == 2.0


# --- no code from a state folder -----------------------------------------------------------


class Payload:
    """Unpickling this runs ``open(marker, "w")``: a stand-in for any code a downloaded file names."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def test_a_planted_pickle_payload_in_prefetch_state_does_not_run(tmp_path: Path) -> None:
    filled(12, seed=2).dumps(tmp_path / "rb")
    folder = current_state(tmp_path / "rb")
    marker = tmp_path / "payload-ran"
    (folder / "prefetch.json").unlink()
    (folder / "prefetch.pkl").write_bytes(pickle.dumps({"version": 1, "capacity": 0, "queue": (Payload(marker),)}))
    message = refused(tmp_path / "rb", "prefetch.pkl: holds a pickled io.open")
    assert "would run code" in message
    assert not marker.exists(), "loads ran code from the state folder"


def test_a_pickled_tensordict_field_is_refused_without_unpickling(tmp_path: Path) -> None:
    filled(12, seed=2).dumps(tmp_path / "rb")
    storage = current_state(tmp_path / "rb") / "storage"
    marker = tmp_path / "payload-ran"
    (storage / "other.pickle").write_bytes(pickle.dumps(Payload(marker)))
    refused(tmp_path / "rb", "other.pickle: a pickle; loading it would run")
    assert not marker.exists()


def test_a_tensorclass_import_path_is_refused(tmp_path: Path) -> None:
    filled(12, seed=2).dumps(tmp_path / "rb")
    edit_json("storage/meta.json", with_field(_tensorclass_type="antigravity.Fly"))(current_state(tmp_path / "rb"))
    refused(tmp_path / "rb", "names the class 'antigravity.Fly' to import")


def test_torch_files_are_refused_while_torch_is_told_to_unpickle_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    normalized(2.0).dumps(tmp_path)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    refused(tmp_path, "transform.t: TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD is set")


def stock_buffer(prefetch: int | None = None) -> StockBuffer:
    made = StockBuffer(storage=LazyTensorStorage(CAPACITY), batch_size=4, prefetch=prefetch)
    made.extend(TensorDict(obs=torch.arange(12.0) + 200, batch_size=[12]))
    return made


def test_a_stock_torchrl_folder_loads_reading_its_prefetch_pickle_as_plain_data(tmp_path: Path) -> None:
    stock_buffer(prefetch=2).dumps(tmp_path)
    assert (tmp_path / "prefetch.pkl").exists() and not (tmp_path / "CURRENT").exists()
    target = TensorDictReplayBuffer(storage=LazyTensorStorage(CAPACITY), batch_size=4, prefetch=2)
    target.loads(tmp_path)
    assert target.storage[:12]["obs"].tolist() == (torch.arange(12.0) + 200).tolist()


def test_stock_prefetched_samples_are_refused_naming_the_remedy(tmp_path: Path) -> None:
    stock = stock_buffer(prefetch=2)
    stock.sample()  # fills the prefetch queue with sampled tensordicts, pickled by dumps
    stock.dumps(tmp_path)
    target = TensorDictReplayBuffer(storage=LazyTensorStorage(CAPACITY), batch_size=4, prefetch=2)
    with pytest.raises(RLGuardError, match=r"prefetch\.pkl: holds a pickled tensordict\..*Delete prefetch\.pkl"):
        target.loads(tmp_path)
    assert len(target) == 0
    (tmp_path / "prefetch.pkl").unlink()
    target.loads(tmp_path)
    assert len(target) == 12


def test_a_buffer_with_prefetched_samples_round_trips_without_a_pickle(tmp_path: Path) -> None:
    original = filled(12, seed=2, prefetch=2)
    original.sample()
    original.dumps(tmp_path)
    folder = current_state(tmp_path)
    assert not list(folder.rglob("*.pkl")) and json.loads((folder / "prefetch.json").read_text()) == {"version": 1, "capacity": 2}
    target = filled(5, seed=1, prefetch=2)
    target.loads(tmp_path)
    assert state(target)[:4] == state(original)[:4]
    assert target.sample()["obs"].shape == (4,)


# --- priorities ----------------------------------------------------------------------------


def test_a_nan_priority_at_extend_raises_rlguard_error() -> None:
    with installed(**only("samplers", "buffers", "training")):
        made = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(CAPACITY), batch_size=4)
        batch = TensorDict(obs=torch.arange(3.0), td_error=torch.tensor([1.0, float("nan"), 2.0]), batch_size=[3])
        with pytest.raises(RLGuardError, match="NaN, inf or negative") as raised:
            made.extend(batch)  # torchrl wrapped it: RuntimeError("Failed to update priority of extended data")
    assert "\n" not in str(raised.value).split(". ")[0]


def test_other_extend_errors_stay_torchrl_errors() -> None:
    with installed(**only("buffers")):
        made = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(CAPACITY), batch_size=4)
        batch = TensorDict(obs=torch.arange(3.0), td_error=torch.ones(3, dtype=torch.complex64), batch_size=[3])  # torchrl cannot rank it
        with pytest.raises(RuntimeError, match="Failed to update priority"):
            made.extend(batch)


def test_no_state_file_is_opened_by_pickle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stock_buffer(prefetch=2).dumps(tmp_path / "stock")
    filled(12, seed=2).dumps(tmp_path / "ours")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("pickle.load reached")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    TensorDictReplayBuffer(storage=LazyTensorStorage(CAPACITY), batch_size=4, prefetch=2).loads(tmp_path / "stock")
    buffer().loads(tmp_path / "ours")
    assert os.listdir(tmp_path / "ours")  # nothing was removed by loading
