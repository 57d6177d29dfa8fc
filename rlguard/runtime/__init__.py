"""rlguard's runtime half: corrected TorchRL components, training assertions and ``install()``.

Importing this package patches nothing and does not import torch: every name that needs torch
is imported on first access. ``install()`` (or ``installed()``, or ``pytest --rlguard``) patches
the installed torchrl in place; ``uninstall()`` restores the identical original objects.
"""

from __future__ import annotations

import importlib
from typing import Any

from rlguard.runtime.errors import RLGuardError, RLGuardWarning

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
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
