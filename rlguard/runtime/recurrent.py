"""``set_recurrent_mode``: torchrl's own where it exists (torchrl >= 0.7), a backport before.

torchrl 0.14 keeps the mode in a ``ContextVar``: isolated per thread and per asyncio task.
``install(recurrent=True)`` corrects two gaps of the upstream object on every version:

- decorating an ``async def`` applied the mode only while the coroutine object was created, not
  while it ran; it now applies inside the coroutine;
- entering one instance twice (``cm = set_recurrent_mode(); with cm: with cm: ...``) restored the
  inner mode on the outer exit, and one instance shared by threads or asyncio tasks (a module-level
  ``RECURRENT = set_recurrent_mode(True)``) restored another thread's mode; every exit now restores
  what its own entry saw, kept per thread and per task;
- decorating an async generator is refused with a ``TypeError`` that says what to do instead.

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


# What each entry saw, innermost last, as (id of the entered instance, previous mode). A tuple
# in a ContextVar: every thread and asyncio task pushes and pops its own entries, even when they
# share one instance (``RECURRENT = set_recurrent_mode(True)`` at module level).
_SAVED: contextvars.ContextVar[tuple[tuple[int, bool | None], ...]] = contextvars.ContextVar(
    "rlguard_recurrent_saved", default=()
)
_NOT_ENTERED = object()


def _push(instance: object, previous: bool | None) -> None:
    _SAVED.set((*_SAVED.get(), (id(instance), previous)))


def _pop(instance: object) -> Any:
    """The mode that this context's innermost entry of ``instance`` saw; _NOT_ENTERED if none."""
    saved = _SAVED.get()
    for position in range(len(saved) - 1, -1, -1):
        if saved[position][0] == id(instance):
            _SAVED.set(saved[:position] + saved[position + 1 :])
            return saved[position][1]
    return _NOT_ENTERED


def _coroutine_aware(call: Callable[[Any, F], F]) -> Callable[[Any, F], F]:
    """Wrap a decorator ``__call__`` so that ``async def`` functions run inside a fresh clone.

    Async generators are refused: each step may run in another task, so no mode set around
    the generator could be restored in the context that set it.
    """

    @functools.wraps(call)
    def __call__(self: Any, func: F) -> F:
        if inspect.isasyncgenfunction(func):
            raise TypeError(
                f"set_recurrent_mode cannot decorate the async generator {func.__qualname__}: its "
                "steps may run in different asyncio tasks, where the mode could not be restored. "
                "Use `with set_recurrent_mode(...):` inside it, around the code between two yields."
            )
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

    def clone(self) -> _BackportSetRecurrentMode:
        return type(self)(self.mode)

    def __enter__(self) -> None:
        _push(self, _BACKPORT_MODE.get())
        _BACKPORT_MODE.set(self.mode)

    def __exit__(self, *exc_info: object) -> None:
        previous = _pop(self)
        _BACKPORT_MODE.set(None if previous is _NOT_ENTERED else previous)

    # A Callable type cannot carry the generic method's own type variable through the wrapper.
    __call__ = _coroutine_aware(_DecoratorContextManager.__call__)  # type: ignore[assignment]


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
        # Every exit restores what its own entry saw, whatever is active when it runs.
        Patch(set_recurrent_mode, "__exit__", _exit, scoped=False),
    ]
    if not isinstance(getattr(_state, "_context_mode", None), contextvars.ContextVar):
        # torchrl 0.7 to 0.13 kept the mode in one process-wide attribute: make it per context.
        corrections += [
            Patch(_state, "get_mode", _BACKPORT_MODE.get),
            Patch(_state, "set_mode", _BACKPORT_MODE.set),
        ]
    return corrections


def _enter(self: Any) -> None:
    # Saved per context, so that re-entering one instance, or sharing it between threads and
    # tasks, restores each entry's own mode; ``prev`` stays set for an exit after uninstall().
    self.prev = _state.get_mode()
    _push(self, self.prev)
    _state.set_mode(self.mode)


def _exit(self: Any, *exc_info: object) -> None:
    previous = _pop(self)
    # Entered by torchrl's own __enter__ (before install(), or outside any block): its ``prev``.
    _state.set_mode(self.prev if previous is _NOT_ENTERED else previous)


def _honour_backport(cls: type) -> Patch:
    default = vars(cls)["recurrent_mode"]

    def recurrent_mode(self: Any) -> bool:
        mode = _BACKPORT_MODE.get()
        return default.fget(self) if mode is None else mode

    return Patch(cls, "recurrent_mode", property(recurrent_mode, default.fset, doc=default.__doc__))
