"""rlguard's runtime half: corrected TorchRL components, training assertions and ``install()``.

Importing this package patches nothing and does not import torch: every name that needs torch
is imported on first access. ``install()`` (or ``installed()``, or ``pytest --rlguard``) patches
the installed torchrl in place; ``uninstall()`` restores the identical original objects.
Without torch, torchrl or tensordict, every entry point raises ``MissingRuntimeError`` (an
``ImportError``) with one line: install ``rlguard[runtime]``.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from typing import Any

from rlguard.runtime.errors import RUNTIME_PACKAGES, MissingRuntimeError, RLGuardError, RLGuardWarning, runtime_imports

# Imported eagerly (it imports no torch): a lazy import of the submodule ``install`` would bind
# the package attribute ``install`` to the module instead of the function.
from rlguard.runtime.install import install, installed, uninstall
from rlguard.runtime.marker import uncopyable

# Public name -> module of rlguard.runtime that defines it, imported on first access.
_LAZY = {
    "Collector": "collector",
    "set_recurrent_mode": "recurrent",
    "PrioritizedSampler": "sampler",
    "PrioritizedSliceSampler": "sampler",
    "ReplayBuffer": "buffer",
    "TensorDictReplayBuffer": "buffer",
    "TrainingGuard": "guard",
}

__all__ = [
    "Collector",
    "MissingRuntimeError",
    "PrioritizedSampler",
    "PrioritizedSliceSampler",
    "RLGuardError",
    "RLGuardWarning",
    "ReplayBuffer",
    "TensorDictReplayBuffer",
    "TrainingGuard",
    "install",
    "installed",
    "set_recurrent_mode",
    "uncopyable",
    "uninstall",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with runtime_imports():  # no torch here: one line that says what to install
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


class _RuntimeLoader(importlib.machinery.SourceFileLoader):
    def exec_module(self, module: Any) -> None:
        with runtime_imports():
            super().exec_module(module)


class _ExplainMissingRuntime:
    """A meta path finder for ``import rlguard.runtime.<module>`` where the runtime packages are
    missing: a module that imports torch ends in the same one-line error as every entry point."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(f"{__name__}."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _RuntimeLoader(spec.loader.name, spec.loader.path)
        return spec


if not all(importlib.util.find_spec(package) for package in RUNTIME_PACKAGES):
    sys.meta_path.insert(0, _ExplainMissingRuntime())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
