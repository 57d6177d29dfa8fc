"""``install()``, ``uninstall()`` and ``installed()``: patch the installed torchrl in place.

The patches go in once, when the first ``install()`` or ``installed()`` block asks for any
component, and stay while ``install()`` is active or any block's settings can still apply. Each
patched function then chooses per call between rlguard's version and torchrl's original, on the
settings active for the caller (:mod:`rlguard.runtime.settings`): the innermost open block of its
thread or asyncio task, else ``install()``'s. Opening or closing a block only changes a
``ContextVar``, so no thread ever runs on a half-applied set of patches.

A block's settings follow the contexts copied from it: an asyncio task created inside the block
(or ``asyncio.to_thread``, ``contextvars.copy_context()``) keeps them after the block closes, for
as long as it runs. So the patches stay while any context still holds a block's settings (a weak
reference tells), and when nothing is active any more, every patched attribute is restored to
the identical original object.

Module attributes that are not functions (the segment tree classes that stand in for missing
compiled ones) cannot choose per call: they stay in place while anything is active.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import threading
import types
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

from rlguard.runtime import settings as _settings
from rlguard.runtime._patch import Patch, PatchSet
from rlguard.runtime.errors import RLGuardError, runtime_imports

_TESTED = ">=0.14,<0.15"
# Component -> (modules whose patches() it applies, torchrl versions it supports), in apply order.
_COMPONENTS: dict[str, tuple[tuple[str, ...], str]] = {
    "collectors": (("collector", "losses"), _TESTED),
    # upstream since 0.7 (process-wide until the ContextVar version), the backport before
    "recurrent": (("recurrent",), ">=0.6,<0.15"),
    "samplers": (("sampler",), _TESTED),
    "buffers": (("buffer",), _TESTED),
    "training": (("guard",), _TESTED),
}
assert tuple(_COMPONENTS) == _settings.COMPONENTS

# Not reentrant: a release callback that finds it taken, even by its own thread, leaves the
# restore to the holder (see _locked).
_lock = threading.Lock()
# The settings of this install generation's blocks that some context still holds.
_blocks: set[weakref.ref[_settings.Settings]] = set()
_recheck = False  # a block's settings were released while _lock was taken
_patches = PatchSet()


def install(
    *,
    collectors: bool = True,
    recurrent: bool = True,
    samplers: bool = True,
    buffers: bool = True,
    training: bool = True,
    checks: Mapping[str, bool] | None = None,
    warn: bool = False,
    max_policy_lag: int = 1,
) -> None:
    """Patch the installed torchrl in place, for the whole process; thread-safe.

    - ``collectors``: an uncopyable policy runs in place instead of crashing the Collector's
      copy; multi-process collectors refuse it before starting workers; ``get_stateful_net``
      and ``DDPGLoss`` report the member that cannot be copied (RLG001);
    - ``recurrent``: ``set_recurrent_mode`` per thread and task, for coroutines and reused
      instances too (RLG002);
    - ``samplers``: extension-free segment trees when torchrl's compiled extension is missing;
    - ``buffers``: ``pin_memory=True`` buffers that sample pinned, or warn once without an
      accelerator;
    - ``training``: the ``TrainingGuard`` checks on collectors, replay buffers and losses;
      ``checks`` switches single checks (``{"priorities": False}``, names in
      ``rlguard.runtime.settings.CHECKS``), ``warn=True`` warns instead of raising, and
      ``max_policy_lag`` is how many batches a collector may run stale weights.

    A later ``install()`` replaces the settings of an earlier one: ``install(training=False)``
    switches the training checks off. Open ``installed()`` blocks keep their own settings.

    Raises ``RLGuardError`` naming the supported range when a chosen component does not
    support the installed torchrl; then nothing changes.
    """
    chosen = _chosen(locals())
    with _locked():
        _apply()
        _settings.set_process(chosen)


def uninstall() -> None:
    """Restore every attribute that rlguard patched to the identical original object.

    Blocks still open, in any thread, stop applying too.
    """
    with _locked():
        _settings.invalidate()
        _blocks.clear()
        _patches.restore_all()


@contextlib.contextmanager
def installed(
    *,
    collectors: bool = True,
    recurrent: bool = True,
    samplers: bool = True,
    buffers: bool = True,
    training: bool = True,
    checks: Mapping[str, bool] | None = None,
    warn: bool = False,
    max_policy_lag: int = 1,
) -> Iterator[None]:
    """``install()`` for the duration of a ``with`` block, in this thread or asyncio task only.

    Inside the block its own settings replace ``install()``'s and any outer block's (so
    ``installed(training=False)`` runs without the training checks); other threads and tasks
    keep theirs. Blocks nest and overlap across threads. An asyncio task created inside the
    block keeps the block's settings until it ends, even when the block closes first, as every
    ``ContextVar`` does. An ``uninstall()`` inside the block restores everything at once, and
    the block's exit does not patch again.
    """
    chosen = _chosen(locals())
    with _locked():
        _apply()
        _blocks.add(weakref.ref(chosen, _released))
        token = _settings.enter(chosen)
    del chosen  # from here on, only the contexts that hold the settings keep them alive
    try:
        yield
    finally:
        _settings.leave(token)
        with _locked():
            _restore_if_unused()


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """``_lock``, then the restore that a release callback could not do while it was taken."""
    with _lock:
        yield
    while _recheck:
        with _lock:
            _restore_if_unused()


def _released(ref: weakref.ref[_settings.Settings]) -> None:
    """A block's settings are gone from every context: restore torchrl if nothing else applies.

    Runs wherever the last reference was dropped, maybe with ``_lock`` taken: then it never
    waits for it, and whoever holds it restores on release.
    """
    global _recheck
    _recheck = True  # before trying the lock: a holder that releases after this sees it
    while _recheck and _lock.acquire(blocking=False):
        try:
            _restore_if_unused()
        finally:
            _lock.release()


def _restore_if_unused() -> None:
    """Restore every patch when neither install() nor any block's settings can apply. Under _lock."""
    global _recheck
    _recheck = False
    _blocks.difference_update([ref for ref in _blocks if ref() is None])  # only changed under _lock
    if _settings.active_process() is None and not _blocks:
        _patches.restore_all()


def _chosen(arguments: dict[str, Any]) -> _settings.Settings:
    with runtime_imports():
        chosen = _settings.build(**arguments)
        for name in _COMPONENTS:
            if name in chosen.components:
                _check_version(name)
    return chosen


def _check_version(component: str) -> None:
    supported = _COMPONENTS[component][1]
    if not _supports(component):
        import torchrl

        raise RLGuardError(
            f"rlguard: install({component}=True) supports torchrl {supported}, but this environment "
            f"has torchrl {torchrl.__version__} ({torchrl.__file__}). Install a supported version "
            f"(pip install 'torchrl{supported}'), or pass {component}=False to install the other "
            "corrections. The lint rules RLG001 to RLG005 need no torchrl and still apply."
        )


def _supports(component: str) -> bool:
    import torchrl
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    found = Version(torchrl.__version__).base_version  # 0.14.1+cu128 and 0.14.1.dev0 count as 0.14.1
    return found in SpecifierSet(_COMPONENTS[component][1])


def _apply() -> None:
    """Patch in every component this torchrl supports, once; all or nothing. Call under _lock."""
    if len(_patches):
        return
    try:
        for name in _COMPONENTS:
            if _supports(name):
                for patch in _component_patches(name):
                    _patches.apply(_dispatching(name, patch))
    except BaseException:
        _patches.restore_all()
        raise


def _component_patches(component: str) -> list[Patch]:
    modules = _COMPONENTS[component][0]
    with runtime_imports():
        loaded = [importlib.import_module(f"rlguard.runtime.{module}") for module in modules]
    return [patch for module in loaded for patch in module.patches()]


def _dispatching(component: str, patch: Patch) -> Patch:
    """``patch`` with a function that runs the corrected value where ``component`` is active."""
    original = inspect.getattr_static(patch.owner, patch.name, None)
    functions = isinstance(original, types.FunctionType) and isinstance(patch.value, types.FunctionType)
    if not (patch.scoped and functions):
        return patch
    corrected = patch.value
    wants = _settings.wants

    @functools.wraps(corrected)
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        return (corrected if wants(component) else original)(*args, **kwargs)

    return Patch(patch.owner, patch.name, dispatch)
