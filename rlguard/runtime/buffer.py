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
``dumps``, a concurrent ``dumps``, or a bad file met by ``loads`` leaves a mixture, a
half-loaded buffer or an empty folder. Here ``dumps`` writes the whole buffer as a new
generation of the state folder and commits it by one rename of a pointer, and ``loads`` reads
the generation that was current, which no dump deletes while it is read
(:mod:`rlguard.runtime.state_folder`). ``loads`` validates every file first and changes
nothing when one is bad, and never runs code from the folder (:mod:`rlguard.runtime.state_checks`).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any
from collections.abc import Callable

import torch
from tensordict import is_tensor_collection
from torchrl.data.replay_buffers.replay_buffers import ReplayBuffer as _StockPlain
from torchrl.data.replay_buffers.replay_buffers import TensorDictPrioritizedReplayBuffer as _StockPrioritized
from torchrl.data.replay_buffers.replay_buffers import TensorDictReplayBuffer as _Stock

from rlguard.runtime import state_checks as checks
from rlguard.runtime import state_folder
from rlguard.runtime._patch import Patch
from rlguard.runtime.errors import RLGuardError, warn_once

__all__ = ["ReplayBuffer", "TensorDictReplayBuffer", "patches", "pinning_error"]

# What a buffer's state holds at the top of its folder (torchrl's names and rlguard's prefetch.json).
DUMP_ENTRIES = frozenset(
    {"storage", "sampler", "writer", "rng_state", "transform.t", "buffer_metadata.json", "prefetch.pkl", checks.PREFETCH_JSON}
)


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


def _raising_own_errors(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def extend(self: _Stock, *args: Any, **kwargs: Any) -> Any:
        """torchrl wraps any error of the priority update in ``RuntimeError("Failed to update
        priority of extended data...")``: rlguard's own (a NaN priority refused by the
        training checks) is raised as it is, so it reads as the one line that names the cause."""
        try:
            return original(self, *args, **kwargs)
        except RuntimeError as error:
            if isinstance(error.__cause__, RLGuardError):
                raise error.__cause__ from None
            raise

    return extend


# --- checkpoints ---------------------------------------------------------------------------


def _refuse_foreign_entries(target: Path) -> None:
    """A flat state at ``target`` is collected once a generation replaces it: refuse a folder
    holding anything a dump did not write, rather than ever deleting it."""
    if not target.is_dir():
        return
    foreign = sorted(
        name for name in os.listdir(target) if name not in DUMP_ENTRIES and not state_folder.is_protocol_entry(name)
    )
    if foreign:
        raise RLGuardError(
            f"{target}: holds '{foreign[0]}', which ReplayBuffer.dumps() does not write; dump into "
            "an empty or dedicated directory."
        )


def _corrected_dumps(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def dumps(self: _StockPlain, path: str | os.PathLike[str]) -> None:
        target = Path(path).absolute()
        _refuse_foreign_entries(target)
        state_folder.write(target, functools.partial(original, self), DUMP_ENTRIES)

    return dumps


def _corrected_loads(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def loads(self: _StockPlain, path: str | os.PathLike[str]) -> None:
        with state_folder.reading(Path(path).absolute()) as folder:
            checks.check_loadable(self, folder)
            original(self, folder)

    return loads


def _dump_prefetch_state(self: _StockPlain, path: Path, prefetch_state: dict[str, Any]) -> None:
    """The prefetch state as plain JSON. Prefetched samples are not kept: they are copies of
    stored transitions, drawn again after loading, and pickling them would make the loader
    run code. (torchrl pickles the whole queue to prefetch.pkl.)"""
    with open(Path(path) / checks.PREFETCH_JSON, "w") as file:
        json.dump({"version": prefetch_state["version"], "capacity": prefetch_state["capacity"]}, file)


def _load_prefetch_state(self: _StockPlain, path: Path) -> None:
    """Nothing to restore (see ``_dump_prefetch_state``); the file was validated without
    unpickling it, by ``check_loadable``."""
    checks.check_prefetch(Path(path))
    return None


_plain_init = _corrected_init(vars(_StockPlain)["__init__"])
_plain_sample = _corrected_sample(vars(_StockPlain)["sample"])
_dumps = _corrected_dumps(vars(_StockPlain)["dumps"])
_loads = _corrected_loads(vars(_StockPlain)["loads"])
_extend = _raising_own_errors(vars(_Stock)["extend"])
_priority_vector = _corrected_priority_vector(vars(_Stock)["_get_priority_vector"])
_prioritized_priority_vector = _corrected_priority_vector(vars(_StockPrioritized)["_get_priority_vector"])
_init = _corrected_init(vars(_Stock)["__init__"])
_sample = _corrected_sample(vars(_Stock)["sample"])


class ReplayBuffer(_StockPlain):
    """torchrl's ``ReplayBuffer`` (same arguments and behaviour), corrected.

    With ``pin_memory=True`` the whole sample is pinned (info included); without an
    accelerator the buffer warns once at construction and samples stay pageable instead of
    failing on every ``sample()``. ``dumps`` commits a whole generation of the state folder
    atomically, and ``loads`` is all or nothing and never unpickles.
    """

    __init__ = _plain_init
    sample = _plain_sample
    dumps = _dumps
    loads = _loads
    _dump_prefetch_state = _dump_prefetch_state
    _load_prefetch_state = _load_prefetch_state


class TensorDictReplayBuffer(_Stock):
    """torchrl's ``TensorDictReplayBuffer`` (same arguments and behaviour), corrected.

    With ``pin_memory=True`` the whole sample is pinned (index and priority weights included,
    whether or not its device is None); without an accelerator the buffer warns once at
    construction and samples stay pageable instead of failing on every ``sample()``.
    ``dumps`` commits a whole generation of the state folder atomically, and ``loads`` is all or
    nothing and never unpickles; rlguard's own errors raised by a priority update at ``extend``
    reach the caller unwrapped.
    """

    __init__ = _init
    sample = _sample
    _get_priority_vector = _priority_vector
    extend = _extend
    dumps = _dumps
    loads = _loads
    _dump_prefetch_state = _dump_prefetch_state
    _load_prefetch_state = _load_prefetch_state


def patches() -> list[Patch]:
    """torchrl's ReplayBuffer and TensorDictReplayBuffer, and so every subclass that defers to
    them, pin correctly and checkpoint safely (prefetch state included); priority updates skip
    a reduction that stalls on busy machines, and ``extend`` lets rlguard's errors through. TensorDictReplayBuffer's own ``__init__`` defers
    to ReplayBuffer's; its ``sample`` adds the info entries after ReplayBuffer's, so it is
    corrected too."""
    return [
        Patch(_StockPlain, "__init__", _plain_init),
        Patch(_StockPlain, "sample", _plain_sample),
        Patch(_StockPlain, "dumps", _dumps),
        Patch(_StockPlain, "loads", _loads),
        Patch(_StockPlain, "_dump_prefetch_state", _dump_prefetch_state),
        Patch(_StockPlain, "_load_prefetch_state", _load_prefetch_state),
        Patch(_Stock, "extend", _extend),
        Patch(_Stock, "sample", _sample),
        Patch(_Stock, "_get_priority_vector", _priority_vector),
        Patch(_StockPrioritized, "_get_priority_vector", _prioritized_priority_vector),
    ]
