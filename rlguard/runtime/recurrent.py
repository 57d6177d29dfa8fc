"""``set_recurrent_mode``: torchrl's own where it exists (torchrl >= 0.7), a backport before.

torchrl 0.14 keeps the mode in a ``ContextVar``: isolated per thread and per asyncio task.
``install(recurrent=True)`` corrects two gaps of the upstream object on every version:

- decorating an ``async def`` applied the mode only while the coroutine object was created, not
  while it ran; it now applies inside the coroutine;
- entering one instance twice (``cm = set_recurrent_mode(); with cm: with cm: ...``) restored the
  inner mode on the outer exit; every exit now restores what its own entry saw.

On torchrl 0.7 to 0.13, where upstream kept the mode in one process-wide attribute, the install
patches move it into a ``ContextVar``. On torchrl < 0.7 the backport has the same semantics, and
the install patches make ``LSTMModule``/``GRUModule`` read it ahead of their own mode.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from torch.utils._contextlib import _DecoratorContextManager
from torchrl.modules import GRUModule, LSTMModule

from rlguard.runtime._patch import Patch

F = TypeVar("F", bound=Callable[..., Any])
Mode = bool | Literal["recurrent", "sequential"] | None

_BACKPORT_MODE: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "rlguard_recurrent_mode", default=None
)


def _normalise(mode: Mode) -> bool | None:
    if isinstance(mode, str):
        if mode.lower() not in ("recurrent", "sequential"):
            raise ValueError(f"recurrent mode must be a bool, 'recurrent' or 'sequential', not {mode!r}")
        return mode.lower() == "recurrent"
    return mode


def _coroutine_aware(call: Callable[[Any, F], F]) -> Callable[[Any, F], F]:
    """Wrap a decorator ``__call__`` so that ``async def`` functions run inside a fresh clone."""

    @functools.wraps(call)
    def __call__(self: Any, func: F) -> F:
        if not inspect.iscoroutinefunction(func):
            return call(self, func)

        @functools.wraps(func)
        async def run(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return await func(*args, **kwargs)

        return run  # type: ignore[return-value]

    return __call__


class _BackportSetRecurrentMode(_DecoratorContextManager):
    """Context manager and decorator setting the RNN recurrent mode (backport of torchrl 0.7's)."""

    def __init__(self, mode: Mode = True) -> None:
        self.mode = _normalise(mode)
        self._tokens: list[contextvars.Token[bool | None]] = []

    def clone(self) -> _BackportSetRecurrentMode:
        return type(self)(self.mode)

    def __enter__(self) -> None:
        self._tokens.append(_BACKPORT_MODE.set(self.mode))

    def __exit__(self, *exc_info: object) -> None:
        _BACKPORT_MODE.reset(self._tokens.pop())

    __call__ = _coroutine_aware(_DecoratorContextManager.__call__)


try:
    from torchrl.modules import set_recurrent_mode
    from torchrl.modules.tensordict_module.rnn import (
        recurrent_mode_state_manager as _state,
    )
except ImportError:  # torchrl < 0.7
    set_recurrent_mode = _BackportSetRecurrentMode
    _state = None

IS_BACKPORT = set_recurrent_mode is _BackportSetRecurrentMode


def patches() -> list[Patch]:
    """The corrections for ``install(recurrent=True)`` (see the module docstring)."""
    if IS_BACKPORT:
        return [_honour_backport(LSTMModule), _honour_backport(GRUModule)]
    corrections = [
        Patch(set_recurrent_mode, "__call__", _coroutine_aware(set_recurrent_mode.__call__)),
        Patch(set_recurrent_mode, "__enter__", _enter),
        Patch(set_recurrent_mode, "__exit__", _exit),
    ]
    if not isinstance(getattr(_state, "_context_mode", None), contextvars.ContextVar):
        # torchrl 0.7 to 0.13 kept the mode in one process-wide attribute: make it per context.
        corrections += [
            Patch(_state, "get_mode", _BACKPORT_MODE.get),
            Patch(_state, "set_mode", _BACKPORT_MODE.set),
        ]
    return corrections


def _enter(self: Any) -> None:
    # A stack per instance, so that re-entering one instance restores each level correctly;
    # ``prev`` stays set for an exit that runs after uninstall().
    self.prev = _state.get_mode()
    self.__dict__.setdefault("_rlguard_previous", []).append(self.prev)
    _state.set_mode(self.mode)


def _exit(self: Any, *exc_info: object) -> None:
    previous = self.__dict__.get("_rlguard_previous")
    # Entered before install(): upstream's own ``prev`` is what that entry saw.
    _state.set_mode(previous.pop() if previous else self.prev)


def _honour_backport(cls: type) -> Patch:
    default = vars(cls)["recurrent_mode"]

    def recurrent_mode(self: Any) -> bool:
        mode = _BACKPORT_MODE.get()
        return default.fget(self) if mode is None else mode

    return Patch(cls, "recurrent_mode", property(recurrent_mode, default.fset, doc=default.__doc__))
