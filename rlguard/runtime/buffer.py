"""A ``TensorDictReplayBuffer`` whose ``pin_memory=True`` samples really are pinned.

torchrl pins inside ``_sample``: only when the TensorDict's device is "cpu" (not None), and
before ``sample()`` adds the index and priority-weight entries, which stay pageable. On a
torch without an accelerator, ``pin_memory()`` raises, so ``pin_memory=True`` fails on every
``sample()``. Here the finished sample (after transforms, with its index and weights) is
pinned whatever its device; without an accelerator, construction warns once and samples
stay pageable.
"""

from __future__ import annotations

import functools
from typing import Any
from collections.abc import Callable

import torch
from tensordict import is_tensor_collection
from torchrl.data.replay_buffers.replay_buffers import TensorDictReplayBuffer as _Stock

from rlguard.runtime._patch import Patch
from rlguard.runtime.errors import warn_once

__all__ = ["TensorDictReplayBuffer", "patches", "pinning_error"]


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


def _corrected_init(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def __init__(self: _Stock, *args: Any, **kwargs: Any) -> None:
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
    def sample(
        self: _Stock, batch_size: int | None = None, return_info: bool = False, include_info: bool | None = None
    ) -> Any:
        result = original(self, batch_size, return_info=return_info, include_info=include_info)
        return pinned(result) if self._pin_memory else result

    return sample


_init = _corrected_init(vars(_Stock)["__init__"])
_sample = _corrected_sample(vars(_Stock)["sample"])


class TensorDictReplayBuffer(_Stock):
    """torchrl's ``TensorDictReplayBuffer`` (same arguments and behaviour), corrected.

    With ``pin_memory=True`` the whole sample is pinned (index and priority weights included,
    whether or not its device is None); without an accelerator the buffer warns once at
    construction and samples stay pageable instead of failing on every ``sample()``.
    """

    __init__ = _init
    sample = _sample


def patches() -> list[Patch]:
    """torchrl's TensorDictReplayBuffer, and so every subclass that defers to it, pins correctly."""
    return [Patch(_Stock, "__init__", _init), Patch(_Stock, "sample", _sample)]
