"""Replay buffers whose ``pin_memory=True`` samples really are pinned, and whose checkpoints
are crash-consistent.

Pinning: torchrl pins inside ``_sample``, only when the output's device is "cpu" (not None),
and before ``sample()`` adds the index and priority-weight entries, which stay pageable. On a
torch without an accelerator, ``pin_memory()`` raises, so ``pin_memory=True`` fails on every
``sample()``. Here the finished sample (after transforms, with its index and weights) is
pinned whatever its device; without an accelerator, construction warns once and samples
stay pageable. ``ReplayBuffer`` and ``TensorDictReplayBuffer`` (and so every buffer built on
them) get the same correction.

Priorities: ``update_tensordict_priority`` reduces one priority per transition with
``max(dim=1)`` over a dimension of size 1, which wakes every intra-op thread (tens of
milliseconds on a busy machine, most of a replay step); here such priorities are used as they are.

Checkpoints: torchrl's ``dumps`` writes storage, sampler and writer one after the other into
the target directory, and ``loads`` reads them back one after the other, so a crash in
``dumps`` or a corrupt file met by ``loads`` leaves a mixture (new storage under old
priorities). Here ``dumps`` writes the whole buffer into a sibling folder, fsyncs it and
swaps it in by renames; a dump interrupted at any point leaves the old or the new buffer,
and the next ``dumps``/``loads`` finishes or discards the leftovers. ``loads`` validates the
sampler's state, every metadata file and the storage's tensor files (whole, and shaped as the
storage) first, and changes nothing when one is bad.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any
from collections.abc import Callable

import torch
from tensordict import is_tensor_collection
from torchrl.data.replay_buffers.checkpointers import TensorStorageCheckpointer
from torchrl.data.replay_buffers.replay_buffers import ReplayBuffer as _StockPlain
from torchrl.data.replay_buffers.replay_buffers import TensorDictPrioritizedReplayBuffer as _StockPrioritized
from torchrl.data.replay_buffers.replay_buffers import TensorDictReplayBuffer as _Stock

from rlguard.runtime._patch import Patch
from rlguard.runtime.errors import RLGuardError, warn_once
from rlguard.runtime.sampler import check_loadable, fsync_directory

__all__ = ["ReplayBuffer", "TensorDictReplayBuffer", "patches", "pinning_error"]

# What torchrl's ReplayBuffer.dumps writes at the top of its directory.
DUMP_ENTRIES = frozenset(
    {"storage", "sampler", "writer", "rng_state", "transform.t", "buffer_metadata.json", "prefetch.pkl"}
)
# Metadata files torchrl's loads reads with json.load, and the keys it requires of them.
_METADATA = {
    "buffer_metadata.json": ("batch_size",),
    "storage/storage_metadata.json": (),
    "writer/metadata.json": (),
}
# The file tensordict's memmap dumps describe each folder's tensors in.
_TENSORDICT_META = "meta.json"


@functools.lru_cache(maxsize=1)
def pinning_error() -> str | None:
    """Why pinned memory is unavailable in this process, or None where it works."""
    try:
        torch.empty(1).pin_memory()
    except RuntimeError as error:
        return str(error)
    return None


def pinned(value: Any) -> Any:
    """``value`` with every CPU tensor in it pinned (tensors, tensor collections, tuples, dicts)."""
    if isinstance(value, torch.Tensor):
        return value.pin_memory() if value.device.type == "cpu" else value
    if is_tensor_collection(value):
        return value.apply(pinned, propagate_lock=True)
    if isinstance(value, tuple):
        return tuple(pinned(item) for item in value)
    if isinstance(value, dict):
        return {key: pinned(item) for key, item in value.items()}
    return value  # numpy arrays and plain numbers cannot be pinned


# --- pinning -------------------------------------------------------------------------------


def _corrected_init(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def __init__(self: _StockPlain, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        error = pinning_error() if self._pin_memory else None
        if error:
            warn_once(
                "buffer-pin-memory-unavailable",
                f"rlguard: {type(self).__name__}(pin_memory=True) cannot pin here ({error}): "
                "this torch has no accelerator, and pinned memory only speeds up copies to one. "
                "Samples stay in pageable memory; pass pin_memory=False to silence this, or run "
                "where torch sees a GPU to get pinned samples.",
            )
            self._pin_memory = False

    return __init__


def _corrected_sample(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def sample(self: _StockPlain, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        return pinned(result) if self._pin_memory else result

    return sample


def _corrected_priority_vector(original: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    @functools.wraps(original)
    def _get_priority_vector(self: _Stock, tensordict: Any) -> torch.Tensor:
        """One priority per transition needs no reduction. torchrl reduces an (n, 1) view with
        ``max(dim=1)``, which over a dimension of size 1 wakes every intra-op thread: 20-30 ms
        on a busy two-core machine, against 7 us with one thread, most of a replay step."""
        priority = tensordict.get(self.priority_key, None)
        one_each = isinstance(priority, torch.Tensor) and priority.ndim and priority.numel() == priority.shape[0]
        if one_each and self._storage.ndim == 1:
            return priority.reshape(-1)
        return original(self, tensordict)

    return _get_priority_vector


# --- checkpoints ---------------------------------------------------------------------------


def _sibling(target: Path, stage: str) -> Path:
    """Where a dump of ``target`` is written (partial), waits complete (new) or is retired (old)."""
    return target.with_name(f".{target.name}.rlguard-{stage}")


def _finish_interrupted_dump(target: Path) -> None:
    """Bring ``target`` to the last complete dump, whatever point an earlier dumps() died at.

    A "new" folder is complete and fsynced, so it wins over what ``target`` holds; a "partial"
    one never is, and an "old" one was already replaced.
    """
    shutil.rmtree(_sibling(target, "partial"), ignore_errors=True)
    new, old = _sibling(target, "new"), _sibling(target, "old")
    if new.exists():
        try:
            if target.exists():
                shutil.rmtree(old, ignore_errors=True)
                os.rename(target, old)
            os.rename(new, target)
            fsync_directory(target.parent)
        except OSError as error:
            raise RLGuardError(
                f"{target}: cannot swap in the complete dump at {new} ({error.strerror or error}). "
                f"Rename {new.name} to {target.name} by hand, or dump again."
            ) from None
    shutil.rmtree(old, ignore_errors=True)


def _refuse_foreign_entries(target: Path) -> None:
    """dumps() replaces the whole directory: refuse before it would discard what it did not write."""
    if not target.is_dir():
        return
    foreign = sorted(entry.name for entry in target.iterdir() if entry.name not in DUMP_ENTRIES)
    if foreign:
        raise RLGuardError(
            f"{target}: holds '{foreign[0]}', which ReplayBuffer.dumps() does not write; a dump "
            "replaces the whole directory, so dump into an empty or dedicated directory."
        )


def _fsync_all(root: Path) -> None:
    """Every file and folder under ``root`` on disk (torchrl writes through memmaps and open())."""
    for folder, _, files in os.walk(root):
        for name in files:
            descriptor = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        fsync_directory(Path(folder))


def _corrected_dumps(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def dumps(self: _StockPlain, path: str | os.PathLike[str]) -> None:
        target = Path(path).absolute()
        _finish_interrupted_dump(target)
        _refuse_foreign_entries(target)
        partial = _sibling(target, "partial")
        original(self, partial)
        _fsync_all(partial)
        os.rename(partial, _sibling(target, "new"))  # the commit point: the new dump is whole
        fsync_directory(target.parent)
        _finish_interrupted_dump(target)

    return dumps


def _read_json_object(file: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    try:
        data = json.loads(file.read_bytes().decode())
    except FileNotFoundError:
        raise RLGuardError(f"{file}: missing. Point loads() at the directory that dumps() wrote.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RLGuardError(f"{file}: not readable JSON ({error}): the file is corrupt. Dump the buffer again.") from None
    if not isinstance(data, dict):
        raise RLGuardError(f"{file}: expected a JSON object, got {type(data).__name__}. Dump the buffer again.")
    missing = [key for key in keys if key not in data]
    if missing:
        raise RLGuardError(f"{file}: field '{missing[0]}' is missing. Dump the buffer again.")
    return data


def _described_tensors(folder: Path, metadata: dict[str, Any]) -> dict[Path, tuple[Any, Any, Path]]:
    """Every tensor file of a storage dump: path -> (shape, dtype name, the file describing it),
    from storage_metadata.json (pytree storages) or tensordict's meta.json files."""
    if metadata["is_pytree"]:
        described = folder / "storage_metadata.json"
        return {
            folder / (name.replace(".", "/") + ".memmap"): (entry.get("shape"), entry.get("dtype"), described)
            for name, entry in metadata["metadata"].items()
            if isinstance(entry, dict)
        }
    found: dict[Path, tuple[Any, Any, Path]] = {}
    for meta in sorted(folder.rglob(_TENSORDICT_META)):
        for key, entry in _read_json_object(meta, ()).items():
            if isinstance(entry, dict) and "dtype" in entry:  # a tensor; other entries are folders or the td's own
                found[meta.parent / f"{key}.memmap"] = (entry.get("shape"), entry.get("dtype"), meta)
    return found


def _expected_bytes(file: Path, shape: Any, dtype_name: Any, described: Path) -> int:
    dtype = getattr(torch, str(dtype_name).removeprefix("torch."), None)
    valid_shape = isinstance(shape, list) and all(isinstance(size, int) and size >= 0 for size in shape)
    if not isinstance(dtype, torch.dtype) or not valid_shape:
        raise RLGuardError(f"{described}: describes {file.name} as {shape!r} {dtype_name!r}, not a tensor. Dump the buffer again.")
    return math.prod(shape) * dtype.itemsize


def _check_storage(buffer: _StockPlain, folder: Path) -> None:
    """The storage part of a dump, before torchrl's loads copies any of it: every tensor file
    whole, and shaped as the storage it is copied into. torchrl maps a truncated file without
    complaint (the buffer then holds whatever follows), and copies key by key, so a shape that
    differs halfway leaves the storage half-loaded."""
    storage = buffer._storage
    if type(getattr(storage, "checkpointer", None)) is not TensorStorageCheckpointer or not folder.is_dir():
        return  # another storage's own format: torchrl's loads reads it
    metadata = _read_json_object(folder / "storage_metadata.json", ("is_pytree", "len", "metadata"))
    current = storage._storage if storage.initialized else None
    # An empty storage is built from the dump at the capacity it was given.
    capacity = storage.max_size if current is None and storage.ndim == 1 else None
    for file, (shape, dtype_name, described) in _described_tensors(folder, metadata).items():
        expected = _expected_bytes(file, shape, dtype_name, described)
        held = file.stat().st_size if file.is_file() else None
        if held != expected:
            state = "missing" if held is None else f"holds {held} bytes"
            raise RLGuardError(
                f"{file}: {state}, but {described.name} describes {shape} {dtype_name} ({expected} bytes): "
                "the dump is truncated or corrupt. Dump the buffer again."
            )
        target = _storage_tensor(current, file.relative_to(folder)) if current is not None else None
        wanted = list(target.shape) if target is not None else None
        if wanted is not None and shape != wanted or capacity is not None and shape[:1] != [capacity]:
            room = f"holds {wanted} there" if wanted is not None else f"has room for {capacity} transitions"
            raise RLGuardError(
                f"{file}: holds a {shape} tensor, but this buffer's storage {room}: "
                "the dump comes from a buffer of another capacity or layout."
            )


def _storage_tensor(current: Any, relative: Path) -> torch.Tensor | None:
    """The tensor of an initialized storage that the dump's file ``relative`` is copied into."""
    if isinstance(current, torch.Tensor):
        return current if relative.name == "_-single-tensor-_.memmap" else None
    if not is_tensor_collection(current):
        return None
    key = (*relative.parent.parts, relative.name.removesuffix(".memmap"))
    found = current.get(key, None)
    return found if isinstance(found, torch.Tensor) else None


def _check_loadable(buffer: _StockPlain, path: Path) -> None:
    """Raise ``RLGuardError`` for a dump that loads() would fail on midway; change nothing."""
    if not path.is_dir():
        raise RLGuardError(f"{path}: missing or not a directory. Point loads() at the directory that dumps() wrote.")
    for name, keys in _METADATA.items():
        file = path / name
        if name == "buffer_metadata.json" or file.parent.is_dir():
            _read_json_object(file, keys)
    _check_storage(buffer, path / "storage")
    check_loadable(buffer.sampler, path / "sampler")


def _corrected_loads(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def loads(self: _StockPlain, path: str | os.PathLike[str]) -> None:
        target = Path(path).absolute()
        _finish_interrupted_dump(target)
        _check_loadable(self, target)
        original(self, target)

    return loads


_plain_init = _corrected_init(vars(_StockPlain)["__init__"])
_plain_sample = _corrected_sample(vars(_StockPlain)["sample"])
_dumps = _corrected_dumps(vars(_StockPlain)["dumps"])
_loads = _corrected_loads(vars(_StockPlain)["loads"])
_priority_vector = _corrected_priority_vector(vars(_Stock)["_get_priority_vector"])
_prioritized_priority_vector = _corrected_priority_vector(vars(_StockPrioritized)["_get_priority_vector"])
_init = _corrected_init(vars(_Stock)["__init__"])
_sample = _corrected_sample(vars(_Stock)["sample"])


class ReplayBuffer(_StockPlain):
    """torchrl's ``ReplayBuffer`` (same arguments and behaviour), corrected.

    With ``pin_memory=True`` the whole sample is pinned (info included); without an
    accelerator the buffer warns once at construction and samples stay pageable instead of
    failing on every ``sample()``. ``dumps`` is crash-consistent and ``loads`` all or nothing.
    """

    __init__ = _plain_init
    sample = _plain_sample
    dumps = _dumps
    loads = _loads


class TensorDictReplayBuffer(_Stock):
    """torchrl's ``TensorDictReplayBuffer`` (same arguments and behaviour), corrected.

    With ``pin_memory=True`` the whole sample is pinned (index and priority weights included,
    whether or not its device is None); without an accelerator the buffer warns once at
    construction and samples stay pageable instead of failing on every ``sample()``.
    ``dumps`` is crash-consistent and ``loads`` all or nothing.
    """

    __init__ = _init
    sample = _sample
    _get_priority_vector = _priority_vector
    dumps = _dumps
    loads = _loads


def patches() -> list[Patch]:
    """torchrl's ReplayBuffer and TensorDictReplayBuffer, and so every subclass that defers to
    them, pin correctly and checkpoint safely; priority updates skip a reduction that stalls on
    busy machines. TensorDictReplayBuffer's own ``__init__`` defers
    to ReplayBuffer's; its ``sample`` adds the info entries after ReplayBuffer's, so it is
    corrected too."""
    return [
        Patch(_StockPlain, "__init__", _plain_init),
        Patch(_StockPlain, "sample", _plain_sample),
        Patch(_StockPlain, "dumps", _dumps),
        Patch(_StockPlain, "loads", _loads),
        Patch(_Stock, "sample", _sample),
        Patch(_Stock, "_get_priority_vector", _priority_vector),
        Patch(_StockPrioritized, "_get_priority_vector", _prioritized_priority_vector),
    ]
