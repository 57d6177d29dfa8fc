"""Validation of a replay buffer's state folder before ``loads`` changes anything.

torchrl's ``loads`` reads the storage, the sampler, the writer, the RNG, the transform and the
metadata one after the other and trusts each: a bad file met midway leaves a half-loaded
buffer, a raw ``KeyError``/``TypeError``, or nonsense such as ``len(rb) == 999`` at capacity
20. Here every file is read and checked first, and the first problem raises ``RLGuardError``
naming the file. Reading never runs code: JSON is parsed with bounded nesting, the prefetch
state is read by an unpickler that builds only plain types, ``.pt`` files by ``torch.load`` with
``weights_only=True``, and a tensordict folder that would import a class or unpickle a field is
refused.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
from pathlib import Path
from typing import Any
from collections.abc import Mapping

import torch
from tensordict import is_tensor_collection
from torchrl.data.replay_buffers.checkpointers import TensorStorageCheckpointer
from torchrl.data.replay_buffers.writers import RoundRobinWriter, TensorDictMaxValueWriter

from rlguard.runtime import state_folder
from rlguard.runtime.errors import RLGuardError
from rlguard.runtime.sampler import check_loadable as check_sampler

__all__ = ["PREFETCH_JSON", "check_loadable", "check_prefetch"]

PREFETCH_JSON = "prefetch.json"
_PREFETCH_PICKLE = "prefetch.pkl"  # stock torchrl's, read without unpickling objects
_PREFETCH_BYTES = 1 << 20  # a plain prefetch state is tens of bytes
_BUFFER_METADATA = "buffer_metadata.json"
_STORAGE_METADATA = "storage_metadata.json"
_TENSORDICT_META = "meta.json"
# Files that only an unpickler reads (tensordict's non-tensor fields); refused anywhere.
_PICKLE_SUFFIXES = (".pickle", ".pkl")
# Files torchrl reads with torch.load, safe only with its default weights_only=True.
_TORCH_SUFFIXES = (".pt", ".t")
_AGAIN = "Dump the buffer again."


def check_loadable(buffer: Any, folder: Path) -> None:
    """Raise ``RLGuardError`` for a state that ``loads`` would fail on midway, load as nonsense,
    or that would run code; change nothing."""
    if not folder.is_dir():
        raise RLGuardError(f"{folder}: missing or not a directory. Point loads() at the directory that dumps() wrote.")
    json_files = _read_all_json(folder)
    _check_no_code(folder, json_files)
    _check_buffer_metadata(folder / _BUFFER_METADATA, json_files)
    _check_storage(buffer, folder / "storage", json_files)
    _check_writer(buffer, folder / "writer", json_files)
    _check_sampler(buffer, folder / "sampler")
    _check_rng(folder / "rng_state")
    _check_transform(buffer, folder / "transform.t")
    check_prefetch(folder)


# --- reading -------------------------------------------------------------------------------


def _read_json(file: Path) -> Any:
    try:
        return state_folder.parse_json(file, file.read_bytes().decode())
    except FileNotFoundError:
        raise RLGuardError(f"{file}: missing. Point loads() at the directory that dumps() wrote.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RLGuardError(f"{file}: not readable JSON ({error}): the file is corrupt. {_AGAIN}") from None


def _state_files(folder: Path, pattern: str) -> list[Path]:
    """The files of the state in ``folder`` matching ``pattern``, at any depth, outside the
    protocol's entries (a flat state's folder may hold a first dump's staging folder, and a
    sampler dumped on its own a state folder of its own: its loads reads that)."""
    return [
        file
        for file in sorted(folder.rglob(pattern))
        if not any(state_folder.is_protocol_entry(part) for part in file.relative_to(folder).parts)
    ]


def _read_all_json(folder: Path) -> dict[Path, Any]:
    """Every JSON file of the state, parsed safely: torchrl's json.load never meets a hostile one."""
    return {file: _read_json(file) for file in _state_files(folder, "*.json")}


def _json_object(file: Path, json_files: Mapping[Path, Any], keys: tuple[str, ...] = ()) -> dict[str, Any]:
    data = json_files[file] if file in json_files else _read_json(file)
    if not isinstance(data, dict):
        raise RLGuardError(f"{file}: expected a JSON object, got {type(data).__name__}. {_AGAIN}")
    missing = [key for key in keys if key not in data]
    if missing:
        raise RLGuardError(f"{file}: field '{missing[0]}' is missing. {_AGAIN}")
    return data


def _fail(file: Path, field: str, problem: str) -> RLGuardError:
    return RLGuardError(f"{file}: field '{field}' {problem}. {_AGAIN}")


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_count(file: Path, data: Mapping[str, Any], field: str, low: int, high: int | None) -> None:
    value = data[field]
    if not _integer(value) or value < low or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f">= {low}"
        raise _fail(file, field, f"must be an integer {bounds}, got {value!r}")


# --- code ----------------------------------------------------------------------------------


def _check_no_code(folder: Path, json_files: Mapping[Path, Any]) -> None:
    """Refuse what would make torchrl's or tensordict's loaders import or unpickle: pickled
    non-tensor fields, ``.pt`` files while torch is told to unpickle them in full, a tensorclass
    named by its import path, and a dtype string that CompressedListStorage hands to ``eval``."""
    for file in _state_files(folder, "*"):
        if file.suffix in _PICKLE_SUFFIXES and file != folder / _PREFETCH_PICKLE:
            raise RLGuardError(
                f"{file}: a pickle; loading it would run whatever code it names, so rlguard never "
                "unpickles a state file. Store plain tensors (no non-tensor Python objects) and dump again."
            )
    unsafe_torch_load = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in ("1", "y", "yes", "true")
    weights = [file for file in _state_files(folder, "*") if file.suffix in _TORCH_SUFFIXES]
    if unsafe_torch_load and weights:
        raise RLGuardError(
            f"{weights[0]}: TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD is set, so torchrl's torch.load would "
            "unpickle it in full and run any code it names. Unset it to load this state."
        )
    for file, data in json_files.items():
        problem = _code_in(data)
        if problem:
            raise RLGuardError(f"{file}: {problem}; loading it would run code, so it is refused.")


def _code_in(data: Any) -> str | None:
    """What in a parsed JSON value makes a loader import or evaluate a name (iterative walk)."""
    pending = [data]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            if "_tensorclass_type" in value:
                return f"names the class {str(value['_tensorclass_type'])[:80]!r} to import"
            if value.get("__type__") == "torch.dtype" and _dtype(value.get("value")) is None:
                return f"gives the dtype {str(value.get('value'))[:80]!r}, which is not a torch dtype"
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return None


def _dtype(name: Any) -> torch.dtype | None:
    found = getattr(torch, str(name).removeprefix("torch."), None)
    return found if isinstance(found, torch.dtype) else None


# --- metadata, writer ----------------------------------------------------------------------


def _check_buffer_metadata(file: Path, json_files: Mapping[Path, Any]) -> None:
    data = _json_object(file, json_files, ("batch_size",))
    for field in ("batch_size", "consume_after_n_samples"):
        value = data.get(field)
        if value is not None and (not _integer(value) or value < 1):
            raise _fail(file, field, f"must be null or a positive integer, got {value!r}")


def _check_writer(buffer: Any, folder: Path, json_files: Mapping[Path, Any]) -> None:
    """torchrl's round-robin and max-value writers: a cursor inside the storage, a count, and
    the tensor file each describes. Other writers' files are only read as JSON above."""
    writer = buffer._writer
    if not isinstance(writer, (RoundRobinWriter, TensorDictMaxValueWriter)):
        return
    file = folder / "metadata.json"
    data = _json_object(file, json_files, ("cursor",))
    _check_count(file, data, "cursor", 0, max(_capacity(buffer._storage) - 1, 0))
    if data.get("write_count") is not None:
        _check_count(file, data, "write_count", 0, None)
    if isinstance(writer, TensorDictMaxValueWriter):
        _json_object(file, json_files, ("rank_key", "shape", "dtype"))
        _check_tensor_file(folder / "current_top_values.memmap", data["shape"], data["dtype"], file)
    elif data.get("generation_shape") is not None:
        _json_object(file, json_files, ("generation_dtype",))
        _check_tensor_file(folder / "generation.memmap", data["generation_shape"], data["generation_dtype"], file)


def _capacity(storage: Any) -> int:
    """Transitions along the storage's first dimension (its max_size when that is unknown)."""
    try:
        return int(storage._max_size_along_dim0())
    except (RuntimeError, ValueError, TypeError, AttributeError):  # a multi-dimensional one before data
        return int(storage.max_size)


# --- storage -------------------------------------------------------------------------------


def _check_storage(buffer: Any, folder: Path, json_files: Mapping[Path, Any]) -> None:
    """The storage part of a state, before torchrl's loads copies any of it: a length the
    storage can hold, every tensor file whole, and shaped as the storage it is copied into.
    torchrl maps a truncated file without complaint (the buffer then holds whatever follows),
    and copies key by key, so a shape that differs halfway leaves the storage half-loaded."""
    storage = buffer._storage
    if type(getattr(storage, "checkpointer", None)) is not TensorStorageCheckpointer or not folder.is_dir():
        return  # another storage's own format: its JSON was read safely above
    described = folder / _STORAGE_METADATA
    metadata = _json_object(described, json_files, ("is_pytree", "len", "metadata"))
    if not isinstance(metadata["is_pytree"], bool):
        raise _fail(described, "is_pytree", f"must be true or false, got {metadata['is_pytree']!r}")
    if not isinstance(metadata["metadata"], dict):
        raise _fail(described, "metadata", f"must be an object, got {type(metadata['metadata']).__name__}")
    _check_count(described, metadata, "len", 0, _room(storage))
    current = storage._storage if storage.initialized else None
    if metadata["is_pytree"] and current is None:
        raise RLGuardError(
            f"{described}: holds plain tensors, which torchrl loads only into a storage that already "
            "holds data of their shape; extend this buffer once (e.g. with one transition) before loads()."
        )
    # An empty storage is built from the dump at the capacity it was given.
    capacity = storage.max_size if current is None and storage.ndim == 1 else None
    tensors = _described_tensors(folder, metadata, json_files)
    if not tensors and metadata["len"]:
        raise RLGuardError(f"{described}: says the storage holds {metadata['len']} transitions, but no tensor file is described. {_AGAIN}")
    for file, (shape, dtype_name, meta) in tensors.items():
        _check_tensor_file(file, shape, dtype_name, meta)
        target = _storage_tensor(current, file.relative_to(folder)) if current is not None else None
        wanted = list(target.shape) if target is not None else None
        if wanted is not None and shape != wanted or capacity is not None and shape[:1] != [capacity]:
            room = f"holds {wanted} there" if wanted is not None else f"has room for {capacity} transitions"
            raise RLGuardError(
                f"{file}: holds a {shape} tensor, but this buffer's storage {room}: "
                "the dump comes from a buffer of another capacity or layout."
            )


def _room(storage: Any) -> int | None:
    """How many elements the storage's length may count: its capacity, times the trailing
    dimensions of a multi-dimensional storage (unknown before it holds data)."""
    if storage.ndim == 1:
        return int(storage.max_size)
    return math.prod(storage.shape) if storage.initialized else None


def _described_tensors(
    folder: Path, metadata: dict[str, Any], json_files: Mapping[Path, Any]
) -> dict[Path, tuple[Any, Any, Path]]:
    """Every tensor file of a storage dump: path -> (shape, dtype name, the file describing it),
    from storage_metadata.json (pytree storages) or tensordict's meta.json files."""
    if metadata["is_pytree"]:
        described = folder / _STORAGE_METADATA
        return {
            folder / (name.replace(".", "/") + ".memmap"): (entry.get("shape"), entry.get("dtype"), described)
            for name, entry in metadata["metadata"].items()
            if isinstance(entry, dict)
        }
    return _tensordict_files(folder, json_files)


def _tensordict_files(folder: Path, json_files: Mapping[Path, Any]) -> dict[Path, tuple[Any, Any, Path]]:
    """The tensor files a memory-mapped tensordict folder describes in its meta.json files."""
    found: dict[Path, tuple[Any, Any, Path]] = {}
    for meta in sorted(folder.rglob(_TENSORDICT_META)):
        for key, entry in _json_object(meta, json_files).items():
            if isinstance(entry, dict) and "dtype" in entry:  # a tensor; other entries are folders or the td's own
                found[meta.parent / f"{key}.memmap"] = (entry.get("shape"), entry.get("dtype"), meta)
    return found


def _check_tensor_file(file: Path, shape: Any, dtype_name: Any, described: Path) -> None:
    dtype = _dtype(dtype_name)
    valid_shape = isinstance(shape, list) and all(_integer(size) and size >= 0 for size in shape)
    if dtype is None or not valid_shape:
        raise RLGuardError(f"{described}: describes {file.name} as {shape!r} {dtype_name!r}, not a tensor. {_AGAIN}")
    expected = math.prod(shape) * dtype.itemsize
    held = file.stat().st_size if file.is_file() else None
    if held != expected:
        state = "missing" if held is None else f"holds {held} bytes"
        raise RLGuardError(
            f"{file}: {state}, but {described.name} describes {shape} {dtype_name} ({expected} bytes): "
            f"the dump is truncated or corrupt. {_AGAIN}"
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


# --- rng, transform, sampler files ---------------------------------------------------------


def _check_rng(folder: Path) -> None:
    if not folder.exists():
        return
    files = _tensordict_files(folder, {})
    for file, (shape, dtype_name, meta) in files.items():
        _check_tensor_file(file, shape, dtype_name, meta)
    state = [(file, shape, dtype) for file, (shape, dtype, _) in files.items() if file.name == "rng_state.memmap"]
    if not state or state[0][2] not in ("torch.uint8", "uint8"):
        raise RLGuardError(f"{folder}: holds no uint8 rng_state tensor; the random generator's state is corrupt. {_AGAIN}")


def _check_transform(buffer: Any, file: Path) -> None:
    """torchrl loads transform.t last, with strict key matching: a bad one failed after the
    storage, sampler and writer were already replaced."""
    if not file.exists():
        return
    state = _load_weights(file)
    if not isinstance(state, Mapping):
        raise RLGuardError(f"{file}: holds a {type(state).__name__}, not a transform's state_dict. {_AGAIN}")
    expected = buffer._transform.state_dict()
    if set(state) != set(expected):
        extra, missing = sorted(set(state) - set(expected)), sorted(set(expected) - set(state))
        problem = f"has the unexpected key '{extra[0]}'" if extra else f"lacks the key '{missing[0]}'"
        raise RLGuardError(f"{file}: {problem}: the dump comes from a buffer with other transforms.")
    for key, value in state.items():
        wanted = expected[key]
        if isinstance(wanted, torch.Tensor) and (not isinstance(value, torch.Tensor) or value.shape != wanted.shape):
            got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise RLGuardError(f"{file}: key '{key}' holds {got}, but this buffer's transform holds {tuple(wanted.shape)}.")


def _check_sampler(buffer: Any, folder: Path) -> None:
    """The sampler's files; a sampler dumped on its own by rlguard (a buffer whose dumps was
    not corrected) holds a state folder of its own, read as the sampler's loads reads it."""
    if not folder.is_dir():
        check_sampler(buffer.sampler, folder)  # a prioritized sampler's missing files are named
        return
    with state_folder.reading(folder) as resolved:
        if not check_sampler(buffer.sampler, resolved):
            _check_weights_files(resolved)


def _check_weights_files(folder: Path) -> None:
    """A non-prioritized sampler's ``.pt`` files (e.g. SamplerWithoutReplacement's) read whole."""
    for file in sorted(folder.glob("*.pt")) if folder.is_dir() else ():
        _load_weights(file)


def _load_weights(file: Path) -> Any:
    try:
        return torch.load(file, weights_only=True, map_location="cpu")
    except Exception as error:  # torch raises many types for a bad file; one line names it
        detail = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise RLGuardError(f"{file}: cannot be read as plain tensors ({detail}). {_AGAIN}") from None


# --- prefetch ------------------------------------------------------------------------------


class _PlainUnpickler(pickle.Unpickler):
    """Builds only what pickle's own opcodes make (dicts, lists, tuples, str, numbers, None):
    every class, function and extension goes through ``find_class``, which refuses it."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name}")


def check_prefetch(folder: Path) -> None:
    """The prefetch state, rlguard's JSON or stock torchrl's pickle read as plain data only.

    Nothing from it is restored: prefetched samples are copies drawn again after loading.
    """
    file = folder / PREFETCH_JSON
    if file.exists():
        _check_prefetch_fields(file, _read_json(file), queue_required=False)
    elif (folder / _PREFETCH_PICKLE).exists():
        _check_prefetch_fields(folder / _PREFETCH_PICKLE, _read_plain_pickle(folder / _PREFETCH_PICKLE), queue_required=True)


def _read_plain_pickle(file: Path) -> Any:
    try:
        with open(file, "rb") as handle:
            raw = handle.read(_PREFETCH_BYTES + 1)
    except OSError as error:
        raise RLGuardError(f"{file}: cannot be read ({error.strerror or error}).") from None
    if len(raw) > _PREFETCH_BYTES:
        raise RLGuardError(f"{file}: larger than {_PREFETCH_BYTES} bytes; a prefetch state is plain data of a few bytes.")
    try:
        return _PlainUnpickler(io.BytesIO(raw)).load()
    except pickle.UnpicklingError as error:
        text = str(error)
        if "." in text and " " not in text:  # a global refused by find_class
            raise RLGuardError(
                f"{file}: holds a pickled {text} (stock torchrl pickles prefetched samples); loading "
                "it would run code, so rlguard does not. Delete prefetch.pkl to load the rest: "
                "the buffer then draws fresh samples."
            ) from None
        raise RLGuardError(f"{file}: not a readable pickle ({text}): the file is corrupt. {_AGAIN}") from None
    except Exception as error:  # truncated or garbled streams raise EOFError, ValueError, ...
        raise RLGuardError(f"{file}: not a readable pickle ({type(error).__name__}: {error}): the file is corrupt. {_AGAIN}") from None


def _check_prefetch_fields(file: Path, data: Any, *, queue_required: bool) -> None:
    if not isinstance(data, dict):
        raise RLGuardError(f"{file}: expected a prefetch state (an object), got {type(data).__name__}. {_AGAIN}")
    keys = ("version", "capacity", "queue") if queue_required else ("version", "capacity")
    missing = [key for key in keys if key not in data]
    if missing:
        raise _fail(file, missing[0], "is missing")
    if data["version"] != 1:
        raise _fail(file, "version", f"is {data['version']!r}; this rlguard reads version 1")
    _check_count(file, data, "capacity", 0, None)
    queue = data.get("queue", ())
    if not isinstance(queue, (list, tuple)):
        raise _fail(file, "queue", f"must be a list, got {type(queue).__name__}")
    if queue:
        raise _fail(file, "queue", f"holds {len(queue)} plain values where prefetched samples belong")
