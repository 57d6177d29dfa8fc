"""``install()``, ``uninstall()`` and ``installed()``: patch the installed torchrl in place.

A component is active while ``install()`` pinned it (until ``uninstall()``) or while any
``installed()`` block that asked for it is open, in any thread. Whenever the active set changes,
every patch is restored and the active components are applied again in a fixed order, so
overlapping blocks, nesting and threads can never restore attributes out of order: after the
last one closes, every patched attribute is the identical original object.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Iterator

from rlguard.runtime._patch import Patch, PatchSet
from rlguard.runtime.errors import RLGuardError

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

_lock = threading.RLock()
_pinned: set[str] = set()
_blocks: dict[object, frozenset[str]] = {}
_patches = PatchSet()
_applied: tuple[str, ...] = ()


def install(
    *,
    collectors: bool = True,
    recurrent: bool = True,
    samplers: bool = True,
    buffers: bool = True,
    training: bool = True,
) -> None:
    """Patch the installed torchrl in place; idempotent and thread-safe.

    - ``collectors``: an uncopyable policy runs in place instead of crashing the Collector's
      copy; multi-process collectors refuse it before starting workers; ``get_stateful_net``
      and ``DDPGLoss`` report the member that cannot be copied (RLG001);
    - ``recurrent``: ``set_recurrent_mode`` per thread and task, for coroutines and reused
      instances too (RLG002);
    - ``samplers``: pure-PyTorch segment trees when torchrl's compiled extension is missing;
    - ``buffers``: ``pin_memory=True`` buffers that sample pinned, or warn once without an
      accelerator;
    - ``training``: the ``TrainingGuard`` checks on collectors, replay buffers and losses.

    Raises ``RLGuardError`` naming the supported range when a chosen component does not
    support the installed torchrl; then nothing is patched.
    """
    chosen = _chosen(collectors, recurrent, samplers, buffers, training)
    with _lock:
        added = chosen - _pinned
        _pinned.update(added)
        _sync_or_undo(lambda: _pinned.difference_update(added))


def uninstall() -> None:
    """Restore every attribute that rlguard patched to the identical original object."""
    with _lock:
        _pinned.clear()
        _blocks.clear()
        _sync()


@contextlib.contextmanager
def installed(
    *,
    collectors: bool = True,
    recurrent: bool = True,
    samplers: bool = True,
    buffers: bool = True,
    training: bool = True,
) -> Iterator[None]:
    """``install()`` for the duration of a ``with`` block; blocks nest and overlap across threads.

    On exit, the block's components stay patched only while ``install()`` or another open block
    still asks for them. An ``uninstall()`` inside the block restores everything at once.
    """
    chosen = _chosen(collectors, recurrent, samplers, buffers, training)
    token = object()
    with _lock:
        _blocks[token] = chosen
        _sync_or_undo(lambda: _blocks.pop(token))
    try:
        yield
    finally:
        with _lock:
            _blocks.pop(token, None)  # uninstall() inside the block already removed it
            _sync()


def _chosen(collectors: bool, recurrent: bool, samplers: bool, buffers: bool, training: bool) -> frozenset[str]:
    flags = {
        "collectors": collectors,
        "recurrent": recurrent,
        "samplers": samplers,
        "buffers": buffers,
        "training": training,
    }
    chosen = [name for name, on in flags.items() if on]
    for name in chosen:
        _check_version(name)
    return frozenset(chosen)


def _check_version(component: str) -> None:
    import torchrl
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    supported = _COMPONENTS[component][1]
    found = Version(torchrl.__version__).base_version  # 0.14.1+cu128 and 0.14.1.dev0 count as 0.14.1
    if found not in SpecifierSet(supported):
        raise RLGuardError(
            f"rlguard: install({component}=True) supports torchrl {supported}, but this environment "
            f"has torchrl {torchrl.__version__} ({torchrl.__file__}). Install a supported version "
            f"(pip install 'torchrl{supported}'), or pass {component}=False to install the other "
            "corrections. The lint rules RLG001 to RLG005 need no torchrl and still apply."
        )


def _sync_or_undo(undo: Callable[[], object]) -> None:
    try:
        _sync()
    except BaseException:
        undo()  # a component failed to build its patches: back to the previous active set
        _sync()
        raise


def _sync() -> None:
    global _applied
    active = _pinned.union(*_blocks.values())
    wanted = tuple(name for name in _COMPONENTS if name in active)
    if wanted == _applied:
        return
    _patches.restore_all()
    _applied = ()
    try:
        for name in wanted:
            for patch in _component_patches(name):
                _patches.apply(patch)
    except BaseException:
        _patches.restore_all()
        raise
    _applied = wanted


def _component_patches(component: str) -> list[Patch]:
    modules = _COMPONENTS[component][0]
    return [patch for module in modules for patch in importlib.import_module(f"rlguard.runtime.{module}").patches()]
