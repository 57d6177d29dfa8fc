"""A drop-in ``PrioritizedSampler`` with four corrections, and the patches that install them.

(a) Where torchrl's compiled extension does not load, prioritized samplers and buffers use
    rlguard's extension-free segment trees instead of raising "SumSegmentTreeFp32 is not
    available". (b) ``dumps``/``loads`` and ``state_dict``/``load_state_dict`` round-trip:
    the metadata is plain JSON, the max priority comes back as a pair of tensors, loading
    twice works, and the trees come back bit for bit. (c) A bad state (corrupt, truncated,
    missing, another capacity or dtype) raises ``RLGuardError`` naming the file and the field,
    and leaves the sampler exactly as it was; states written by stock torchrl load.
(d) A dump is atomic and safe beside concurrent loads: ``dumps(path)`` makes a new generation
    of the state folder ``path`` current by one rename, and ``loads`` reads the generation that
    was current, which no dump deletes while it is read (:mod:`rlguard.runtime.state_folder`).
    The metadata records the SHA-256 of both tree files, so a flat state mixed from two dumps
    is refused instead of loading new trees under the old alpha and max priority.

Each generation keeps torchrl's layout, so either side reads the other's files:
``sampler_metadata.json`` and one raw float64 file per tree, one value per leaf (torchrl
ignores the extra ``_sha256`` field); stock torchrl loads ``path/gen-N``, and a flat folder
written by stock torchrl loads here.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Iterator, Mapping

import numpy as np
import torch
from torchrl.data.replay_buffers import samplers as _samplers_package
from torchrl.data.replay_buffers.samplers import prioritized as _prioritized
from torchrl.data.replay_buffers.samplers import prioritized_slice as _prioritized_slice
from torchrl.data.replay_buffers.samplers.prioritized import PrioritizedSampler as _Stock  # Any to mypy: torchrl ships no types

from rlguard.runtime import state_folder
from rlguard.runtime._patch import Patch
from rlguard.runtime.errors import RLGuardError
from rlguard.runtime.extension import warn_fallback
from rlguard.runtime.segment_tree import TORCHRL_TREE_CLASSES, WRITE_CHUNK
from rlguard.runtime.state_folder import inside_staging

__all__ = ["PrioritizedSampler", "PrioritizedSliceSampler", "check_loadable", "patches"]

_stock_update_priority = vars(_Stock)["update_priority"]  # kept before install() replaces it
_StockSlice: Any = _prioritized_slice.PrioritizedSliceSampler  # torchrl ships no types for it

METADATA_FILE = "sampler_metadata.json"
TREE_FILES = {"_sum_tree": "sumtree.memmap", "_min_tree": "mintree.memmap"}
# What a flat state (stock torchrl's, or an older rlguard's) holds at the top of a sampler's folder.
_FLAT_ENTRIES = frozenset(
    name + suffix for name in (METADATA_FILE, *TREE_FILES.values()) for suffix in ("", ".partial")
)
# torchrl's schema 1: _max_priority holds the raw priority (pytorch/rl#3925). Files without a
# version may hold the alpha-transformed value, recomputed from the tree as torchrl does.
SCHEMA_VERSION = 1
DIGEST_FIELD = "_sha256"
_DTYPES = {"float32": torch.float32, "float64": torch.float64}
_RLG003 = "RLG003 tensor-in-json"
# The max priority and its index, both present or both absent.
_MaxPriority = tuple[torch.Tensor, torch.Tensor] | tuple[None, None]


class PrioritizedSampler(_Stock):
    """torchrl's ``PrioritizedSampler`` (same arguments and behaviour), corrected.

    It falls back to extension-free segment trees where torchrl's compiled extension does not
    load, and its state round trip is plain JSON, type-preserving, validated and atomic.
    """

    # torchrl's property (untyped there): reads as a (value, index) pair, accepts None.
    _max_priority: Any

    def _init(self) -> None:
        suffix = {torch.float32: "Fp32", torch.float64: "Fp64"}.get(self.dtype)
        prefix = "Cuda" if self._device is not None and self._device.type == "cuda" else ""
        if suffix is None or getattr(_prioritized, f"{prefix}SumSegmentTree{suffix}") is not None:
            _Stock._init(self)  # the compiled trees load (or the dtype is unsupported: torchrl says so)
            return
        warn_fallback()
        self._sum_tree = TORCHRL_TREE_CLASSES[f"SumSegmentTree{suffix}"](self._max_capacity, self._device)
        self._min_tree = TORCHRL_TREE_CLASSES[f"MinSegmentTree{suffix}"](self._max_capacity, self._device)
        self._max_priority = None

    # The methods below touch only attributes every torchrl PrioritizedSampler has:
    # install() sets them on torchrl's class as they are.
    def update_priority(self, index: Any, priority: Any, *, storage: Any = None) -> None:
        """torchrl's, a chunk at a time for a large 1-D batch (a large ``extend`` marks every
        new index this way): its element-wise ops on the whole batch would each wake the
        intra-op threads, which costs milliseconds per op on a busy machine. Chunks are
        written in order, so the last priority given to an index still wins."""
        for part, part_priority in _chunks(index, priority):
            _stock_update_priority(self, part, part_priority, storage=storage)

    def state_dict(self) -> dict[str, Any]:
        """Hyper-parameters, the max priority and both trees' leaves, as plain tensors.

        Tensors rather than tree objects: ``torch.load`` with its default ``weights_only=True``
        refuses torchrl's compiled trees and rlguard's alike.
        """
        value, index = self._max_priority
        return {
            "_schema_version": SCHEMA_VERSION,
            "_alpha": float(self._alpha),
            "_beta": float(self._beta),
            "_eps": float(self._eps),
            "_max_priority": (_clone(value), _clone(index)),
            "_max_capacity": self._max_capacity,
            "_sum_tree": _tree_leaves(self._sum_tree, self._max_capacity),
            "_min_tree": _tree_leaves(self._min_tree, self._max_capacity),
        }

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Load a state from ``state_dict()``, rlguard's or torchrl's; all or nothing."""
        _commit(self, _State.from_state_dict(self, state_dict))

    def dumps(self, path: str | os.PathLike[str]) -> None:
        """Make the state the current generation of the state folder ``path`` (see
        :mod:`rlguard.runtime.state_folder`); each generation is in torchrl's layout, metadata as
        plain JSON. Inside a buffer's dump, the files go flat into the buffer's generation."""
        path = Path(path).absolute()
        _metadata(self, path / METADATA_FILE)  # refuses a state JSON cannot hold, before any folder exists
        if inside_staging():
            _write_flat(self, path)
        else:
            state_folder.write(path, functools.partial(_write_flat, self), _FLAT_ENTRIES)

    def loads(self, path: str | os.PathLike[str]) -> None:
        """Load the last complete state that ``dumps`` (rlguard's or torchrl's) wrote under
        ``path``; all or nothing."""
        with state_folder.reading(Path(path).absolute()) as folder:
            _commit(self, _State.from_files(self, folder))


_STATE_METHODS = ("state_dict", "load_state_dict", "dumps", "loads")
_PATCHED_METHODS = ("update_priority", *_STATE_METHODS)


class PrioritizedSliceSampler(_StockSlice):
    """torchrl's ``PrioritizedSliceSampler`` (same arguments and behaviour), corrected as
    :class:`PrioritizedSampler` is: rlguard's trees where the compiled ones do not load, and
    the same validated, crash-consistent state round trip. It needs no ``install()``."""

    _init = PrioritizedSampler._init
    update_priority = PrioritizedSampler.update_priority
    state_dict = PrioritizedSampler.state_dict
    load_state_dict = PrioritizedSampler.load_state_dict
    dumps = PrioritizedSampler.dumps
    loads = PrioritizedSampler.loads


def check_loadable(sampler: Any, folder: Path) -> bool:
    """Raise ``RLGuardError`` if the flat state in ``folder`` would not load into ``sampler``;
    change nothing. False for samplers whose state rlguard does not read itself."""
    if not isinstance(sampler, _Stock):
        return False
    _State.from_files(sampler, folder)
    return True


def patches() -> list[Patch]:
    """torchrl's PrioritizedSampler gets the safe round trip and chunked large updates;
    missing compiled trees get ours."""
    fixes = [Patch(_Stock, name, vars(PrioritizedSampler)[name]) for name in _PATCHED_METHODS]
    fixes.append(Patch(_Stock, "_init", _noticing_fallback(_Stock._init)))
    missing = missing_tree_names()
    for module in (_prioritized, _samplers_package):
        fixes += [Patch(module, name, TORCHRL_TREE_CLASSES[name]) for name in missing if hasattr(module, name)]
    return fixes


def _noticing_fallback(stock_init: Any) -> Any:
    def _init(self: _Stock) -> None:
        stock_init(self)
        if isinstance(self._sum_tree, tuple(TORCHRL_TREE_CLASSES.values())):
            warn_fallback()  # at the first sampler built on rlguard's trees, not at install()

    return _init


def missing_tree_names() -> list[str]:
    """torchrl's segment tree names that its extension did not provide (or rlguard replaced).

    The CUDA trees count only where CUDA is available: a CPU-only torchrl wheel on a CPU
    machine misses nothing.
    """
    ours = set(TORCHRL_TREE_CLASSES.values())
    wanted = [name for name in TORCHRL_TREE_CLASSES if not name.startswith("Cuda") or torch.cuda.is_available()]
    return [name for name in wanted if getattr(_prioritized, name, None) is None or getattr(_prioritized, name) in ours]


# --- loading -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _State:
    """A validated state, ready to replace the sampler's in one step."""

    alpha: float
    beta: float
    eps: float
    max_priority: _MaxPriority
    sum_leaves: torch.Tensor
    min_leaves: torch.Tensor

    @classmethod
    def from_state_dict(cls, sampler: _Stock, state: Mapping[str, Any]) -> _State:
        where = f"{type(sampler).__name__}.load_state_dict"
        if not isinstance(state, Mapping):
            raise RLGuardError(f"{where}: expected the dict from state_dict(), got {type(state).__name__}")
        fields = _Fields(state, where)
        capacity = sampler._max_capacity
        if "_max_capacity" in state:
            fields.capacity(capacity)
        trees = {name: (fields.require(name), f"{where}: state_dict['{name}']") for name in TREE_FILES}
        leaves = [_leaves_from(tree, capacity, tree_where) for tree, tree_where in trees.values()]
        wheres = [tree_where for _, tree_where in trees.values()]
        written = _dtype_name(getattr(state["_sum_tree"], "dtype", None))
        return cls._build(sampler, fields, leaves, wheres, written)

    @classmethod
    def from_files(cls, sampler: _Stock, path: Path) -> _State:
        metadata_file = path / METADATA_FILE
        fields = _Fields(_read_metadata(metadata_file), str(metadata_file))
        fields.capacity(sampler._max_capacity)
        digests = fields.digests(metadata_file)
        files = [(path / name, f"{path / name} (field '{field}')") for field, name in TREE_FILES.items()]
        leaves = [
            _read_leaves(file, sampler._max_capacity, where, digests.get(file.name), metadata_file)
            for file, where in files
        ]
        wheres = [where for _, where in files]
        return cls._build(sampler, fields, leaves, wheres, fields.written_dtype())

    @classmethod
    def _build(
        cls, sampler: _Stock, fields: _Fields, leaves: list[torch.Tensor], wheres: list[str], written: str | None
    ) -> _State:
        alpha, beta, eps = (fields.number(name) for name in ("_alpha", "_beta", "_eps"))
        (sum_in, min_in), (sum_where, min_where) = leaves, wheres  # one of each per tree in TREE_FILES
        sum_leaves, min_leaves = _checked_leaves(sampler.dtype, sum_in, min_in, sum_where, min_where, written)
        max_priority = fields.max_priority(sampler._max_capacity, sampler.dtype, sum_leaves)
        recompute = fields.version() < 1 and sampler._max_priority_within_buffer
        if recompute and max_priority[0] is not None and alpha != 0:
            max_priority = _raw_max(sum_leaves, alpha, eps)
        return cls(alpha, beta, eps, max_priority, sum_leaves, min_leaves)


class _Fields:
    """Typed access to a metadata dict or state dict, failing with the file and field named."""

    def __init__(self, data: Mapping[str, Any], where: str) -> None:
        self.data, self.where = data, where

    def fail(self, name: str, problem: str, advice: str = "") -> RLGuardError:
        message = f"{self.where}: field '{name}' {problem}."
        return RLGuardError(message + (f" {advice}" if advice else ""))

    def require(self, name: str) -> Any:
        if name not in self.data:
            raise self.fail(name, "is missing", "Write the state again with dumps()/state_dict().")
        return self.data[name]

    def number(self, name: str) -> float:
        value = self.require(name)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, str) and value.startswith("tensor("):
            raise self.fail(
                name,
                f"holds the string {value!r}",
                f"A tensor was written to JSON as text ({_RLG003}): write numbers, e.g. with .item().",
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise self.fail(name, f"must be a finite number >= 0, got {value!r}")
        return float(value)

    def version(self) -> int:
        version = self.data.get("_schema_version", 0)
        if isinstance(version, bool) or not isinstance(version, int):
            raise self.fail("_schema_version", f"must be an integer, got {version!r}")
        return version

    def capacity(self, expected: int) -> None:
        found = self.require("_max_capacity")
        if isinstance(found, bool) or not isinstance(found, (int, float)) or found != int(found):
            raise self.fail("_max_capacity", f"must be an integer, got {found!r}")
        if int(found) != expected:
            raise self.fail(
                "_max_capacity",
                f"is {int(found)}, but this sampler's capacity is {expected}",
                f"Load it into a PrioritizedSampler(max_capacity={int(found)}, ...).",
            )

    def digests(self, metadata_file: Path) -> dict[str, str]:
        """The tree files' SHA-256 that rlguard's dumps() records; none in torchrl's files."""
        digests = self.data.get(DIGEST_FIELD, {})
        names = set(TREE_FILES.values())
        if not isinstance(digests, dict) or not set(digests) <= names or not all(
            isinstance(value, str) for value in digests.values()
        ):
            raise self.fail(DIGEST_FIELD, f"must map {sorted(names)} to hex digests, got {_short(digests)}")
        return digests

    def written_dtype(self) -> str | None:
        dtype = self.data.get("_dtype")
        if dtype is not None and dtype not in _DTYPES:
            raise self.fail("_dtype", f"must be one of {sorted(_DTYPES)}, got {dtype!r}")
        return dtype

    def max_priority(
        self, capacity: int, dtype: torch.dtype, sum_leaves: torch.Tensor
    ) -> _MaxPriority:
        raw = self.require("_max_priority")
        if raw is None:
            return (None, None)
        if isinstance(raw, (int, float, torch.Tensor)) and not isinstance(raw, bool) and _numel(raw) == 1:
            # Older torchrl kept a bare float; the pair's index is the tree's argmax.
            if not bool(sum_leaves.gt(0).any()):
                return (None, None)
            return (self._priority(raw, dtype), sum_leaves.argmax())
        if not isinstance(raw, (list, tuple)) or len(raw) != 2:
            raise self.fail(
                "_max_priority",
                f"must be null or a [priority, index] pair, got {_short(raw)}",
                f"Tensors cannot be written to JSON ({_RLG003}).",
            )
        value, index = raw
        if value is None and index is None:
            return (None, None)
        if value is None or index is None:
            raise self.fail("_max_priority", f"must hold both a priority and an index, got {_short(raw)}")
        return (self._priority(value, dtype), self._index(index, capacity))

    def _priority(self, value: Any, dtype: torch.dtype) -> torch.Tensor:
        if isinstance(value, torch.Tensor):
            value = value.item() if value.numel() == 1 else value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise self.fail("_max_priority", f"must hold a finite priority >= 0, got {_short(value)}")
        return torch.tensor(value, dtype=dtype)

    def _index(self, index: Any, capacity: int) -> torch.Tensor:
        if isinstance(index, torch.Tensor) and index.numel() == 1:
            index = index.item()
        if isinstance(index, bool) or not isinstance(index, (int, float)) or index != int(index):
            raise self.fail("_max_priority", f"must hold an integer index, got {_short(index)}")
        if not 0 <= int(index) < capacity:
            raise self.fail("_max_priority", f"holds index {int(index)}, outside this sampler's capacity {capacity}")
        return torch.tensor(int(index))


def _read_metadata(file: Path) -> Any:
    try:
        text = file.read_bytes().decode()
    except FileNotFoundError:
        raise RLGuardError(f"{file}: missing. Point loads() at the directory that dumps() wrote.") from None
    except OSError as error:
        raise RLGuardError(f"{file}: cannot be read ({error}).") from None
    except UnicodeDecodeError as error:
        raise RLGuardError(
            f"{file}: not valid JSON (byte {error.start} is not UTF-8 text): the file is corrupt. "
            "Write it again with dumps()."
        ) from None
    try:
        metadata = state_folder.parse_json(file, text)
    except json.JSONDecodeError as error:
        keys = re.findall(r'"(\w+)"\s*:', text[: error.pos])
        field = f" inside field '{keys[-1]}'" if keys else ""
        raise RLGuardError(
            f"{file}: not valid JSON ({error.msg} at line {error.lineno} column {error.colno}); "
            f"it breaks off{field}. torchrl versions that passed tensors to json.dump crashed "
            f"midway and left such truncated files ({_RLG003}). Dump the sampler again with "
            "rlguard.runtime.install() active, or with rlguard's PrioritizedSampler."
        ) from None
    if not isinstance(metadata, dict):
        raise RLGuardError(f"{file}: expected a JSON object of sampler fields, got {_short(metadata)}.")
    return metadata


def _read_leaves(file: Path, capacity: int, where: str, digest: str | None, metadata_file: Path) -> torch.Tensor:
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise RLGuardError(f"{where}: missing; dumps() writes it beside {METADATA_FILE}.") from None
    except OSError as error:
        raise RLGuardError(f"{where}: cannot be read ({error}).") from None
    expected = capacity * 8
    if len(raw) != expected:
        held = f"{len(raw) // 8} float64 leaves" if len(raw) % 8 == 0 else f"{len(raw)} bytes"
        raise RLGuardError(
            f"{where}: holds {held}, but this sampler's capacity is {capacity} "
            f"({expected} bytes): the file is truncated or comes from another capacity."
        )
    if digest is not None and hashlib.sha256(raw).hexdigest() != digest:
        raise RLGuardError(
            f"{where}: does not match {metadata_file.name} (its SHA-256 differs from the one "
            "recorded there): a dumps() was interrupted, or the files come from different dumps. "
            "Dump the sampler again."
        )
    return torch.from_numpy(np.frombuffer(raw, dtype=np.float64).copy())


def _leaves_from(value: Any, capacity: int, where: str) -> torch.Tensor:
    """A state dict's tree: rlguard's leaf tensor, or a tree object from torchrl's state_dict()."""
    if isinstance(value, torch.Tensor):
        leaves = value
    elif hasattr(value, "__getitem__") and hasattr(value, "__len__"):
        if len(value) != capacity:
            raise RLGuardError(f"{where}: a tree of {len(value)} leaves, but this sampler's capacity is {capacity}.")
        leaves = _tree_leaves(value, capacity)
    else:
        raise RLGuardError(f"{where}: expected a tensor of leaves or a segment tree, got {type(value).__name__}.")
    if leaves.shape != (capacity,) or not leaves.dtype.is_floating_point:
        raise RLGuardError(
            f"{where}: expected {capacity} floating-point leaves, got {leaves.dtype} of shape "
            f"{tuple(leaves.shape)}: the state comes from another capacity or is corrupt."
        )
    return leaves.detach().to("cpu", torch.float64)


def _checked_leaves(
    dtype: torch.dtype,
    sum_leaves: torch.Tensor,
    min_leaves: torch.Tensor,
    sum_where: str,
    min_where: str,
    written_dtype: str | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Leaves that a sampler of ``dtype`` can hold exactly, with empty leaves made its own."""
    for leaves, where in ((sum_leaves, sum_where), (min_leaves, min_where)):
        bad = ~(torch.isfinite(leaves) & (leaves >= 0))
        if bad.any():
            i = int(bad.nonzero()[0])
            raise RLGuardError(f"{where}: leaf {i} holds {leaves[i].item()!r}; priorities are finite and >= 0.")
    # An empty leaf is 0 in the sum tree and the dtype's max in the min tree, either dtype's.
    empty_min = (min_leaves == torch.finfo(torch.float32).max) | (min_leaves == torch.finfo(torch.float64).max)
    empty = (sum_leaves == 0) & empty_min
    written = ~empty
    differ = written & (sum_leaves != min_leaves)
    if differ.any():
        i = int(differ.nonzero()[0])
        raise RLGuardError(
            f"{sum_where} and {min_where}: leaf {i} holds {sum_leaves[i].item()!r} in one and "
            f"{min_leaves[i].item()!r} in the other, but both trees hold the same priority: the "
            "files are corrupt or come from different dumps."
        )
    exact = sum_leaves.to(dtype).to(torch.float64) == sum_leaves
    if not exact.all():
        i = int((~exact).nonzero()[0])
        source = f"a {written_dtype} sampler" if written_dtype else "a sampler of another dtype"
        raise RLGuardError(
            f"{sum_where}: leaf {i} holds {sum_leaves[i].item()!r}, which {dtype} cannot hold "
            f"exactly: the state comes from {source}. Construct this sampler with "
            f"dtype=torch.{written_dtype or 'float64'}."
        )
    identity = torch.finfo(dtype).max
    return sum_leaves.to(dtype), torch.where(empty, identity, min_leaves).to(dtype)


def _raw_max(sum_leaves: torch.Tensor, alpha: float, eps: float) -> _MaxPriority:
    """torchrl's recompute for pre-schema states: invert (p + eps) ** alpha at the tree's max."""
    value, index = sum_leaves.max(0)
    if value <= 0:
        return (None, None)
    return ((value ** (1.0 / alpha) - eps).clamp_min(0), index)


def _commit(sampler: _Stock, state: _State) -> None:
    """Swap the validated state in; nothing before this point touched the sampler."""
    sum_tree = _filled_like(sampler._sum_tree, state.sum_leaves)
    min_tree = _filled_like(sampler._min_tree, state.min_leaves)
    sampler._alpha, sampler._beta, sampler._eps = state.alpha, state.beta, state.eps
    pair = state.max_priority
    device = sampler.device
    sampler._max_priority = None if pair[0] is None else (pair[0].to(device), pair[1].to(device))
    sampler._sum_tree, sampler._min_tree = sum_tree, min_tree


def _filled_like(tree: Any, leaves: torch.Tensor) -> Any:
    """A new tree of the same class (and device) as ``tree`` holding ``leaves``."""
    fresh = copy.deepcopy(tree)
    if hasattr(fresh, "load_leaves"):
        fresh.load_leaves(leaves)
    else:  # torchrl's compiled tree
        device = _tree_device(tree)
        fresh[torch.arange(leaves.numel(), device=device)] = leaves.to(device)
    return fresh


# --- writing -------------------------------------------------------------------------------


def _write_flat(sampler: _Stock, folder: Path) -> None:
    """The state's files in torchrl's layout, into a folder no reader sees yet. The metadata
    records the trees' SHA-256, so a flat state mixed from two dumps (written by an older
    rlguard straight into the target) is refused rather than loaded."""
    metadata = _metadata(sampler, folder / METADATA_FILE)
    folder.mkdir(parents=True, exist_ok=True)
    digests = {}
    for field, name in TREE_FILES.items():
        data = _tree_leaves(getattr(sampler, field), sampler._max_capacity).to("cpu", torch.float64).numpy().tobytes()
        digests[name] = hashlib.sha256(data).hexdigest()
        (folder / name).write_bytes(data)
    metadata[DIGEST_FIELD] = digests
    (folder / METADATA_FILE).write_text(json.dumps(metadata, allow_nan=False))


def _metadata(sampler: _Stock, file: Path) -> dict[str, Any]:
    value, index = sampler._max_priority
    if value is not None and not math.isfinite(float(value)):
        raise RLGuardError(
            f"{file}: field '_max_priority' is {float(value)}, which JSON cannot hold: a non-finite "
            "priority reached update_priority(). TrainingGuard (install(training=True)) catches it there."
        )
    return {
        "_schema_version": SCHEMA_VERSION,
        "_alpha": float(sampler._alpha),
        "_beta": float(sampler._beta),
        "_eps": float(sampler._eps),
        "_max_priority": [None, None] if value is None else [float(value), int(index)],
        "_max_capacity": int(sampler._max_capacity),
        "_dtype": _dtype_name(sampler.dtype),
    }


def _tree_leaves(tree: Any, capacity: int) -> torch.Tensor:
    if hasattr(tree, "leaves"):
        return tree.leaves()
    return torch.as_tensor(tree[torch.arange(capacity, device=_tree_device(tree))])  # torchrl's compiled tree


def _tree_device(tree: Any) -> torch.device:
    """torchrl's CUDA trees say where they live; its CPU trees have no ``device``."""
    return torch.device(getattr(tree, "device", None) or "cpu")


def _chunks(index: Any, priority: Any) -> Iterator[tuple[Any, Any]]:
    """``(index, priority)`` in chunks under torch's parallel grain, or whole where it is not
    a large 1-D batch (a multi-dimensional index is mapped to the tree by torchrl as a whole)."""
    count = index.shape[0] if isinstance(index, (torch.Tensor, np.ndarray)) and index.ndim == 1 else 0
    priorities = priority if isinstance(priority, torch.Tensor) else torch.as_tensor(priority)
    if count <= WRITE_CHUNK or priorities.numel() not in (1, count):
        yield index, priority
        return
    flat = priorities.reshape(-1)
    for start in range(0, count, WRITE_CHUNK):
        yield index[start : start + WRITE_CHUNK], flat if flat.numel() == 1 else flat[start : start + WRITE_CHUNK]


def _clone(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def _dtype_name(dtype: torch.dtype | None) -> str | None:
    return next((name for name, known in _DTYPES.items() if known == dtype), None)


def _numel(value: Any) -> int:
    return value.numel() if isinstance(value, torch.Tensor) else 1


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
