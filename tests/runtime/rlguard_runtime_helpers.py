"""Shared pieces of the runtime tests: small real policies, component selection, snapshots."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict.nn import TensorDictModule
from torch import nn

COMPONENTS = ("collectors", "recurrent", "samplers", "buffers", "training")
OBS, ACT = 7, 7  # ContinuousActionVecMockEnv's observation and action sizes


def only(*components: str) -> dict[str, bool]:
    """install()/installed() keyword arguments enabling just ``components``."""
    return {name: name in components for name in COMPONENTS}


class LockedNet(nn.Module):
    """A policy network holding a lock, as real policies do around shared inference state."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(OBS, ACT)
        self.lock = threading.Lock()

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        with self.lock:
            return self.linear(observation).tanh()


def policy(net: nn.Module | None = None) -> TensorDictModule:
    return TensorDictModule(net or LockedNet(), in_keys=["observation"], out_keys=["action"])


_ENV_LOCK = threading.Lock()


def collector_corrected() -> bool:
    """Whether torchrl's own Collector, built here, runs an uncopyable policy in place."""
    import torchrl.collectors
    from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

    with _ENV_LOCK:  # torchrl's mock envs rewrite class attributes while they are built
        env = ContinuousActionVecMockEnv()
    try:
        torchrl.collectors.Collector(env, policy(), frames_per_batch=4, total_frames=8, policy_device="cpu:0")
    except TypeError as error:  # stock torchrl deep-copies the policy for its policy_device
        assert "cannot pickle '_thread.lock'" in str(error)
        return False
    return True


def snapshot() -> dict[tuple[int, str], Any]:
    """Every attribute of every loaded torchrl/tensordict module and of the classes they define."""
    owners: dict[int, Any] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("torchrl", "tensordict")):
            continue
        owners[id(module)] = module
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__.startswith(("torchrl", "tensordict")):
                owners[id(value)] = value
    return {(key, attr): value for key, owner in owners.items() for attr, value in list(vars(owner).items())}


def changed(before: dict[tuple[int, str], Any], after: dict[tuple[int, str], Any]) -> list[tuple[int, str]]:
    """Attributes of owners known ``before`` that are not the identical object, appeared or vanished."""
    owners = {owner for owner, _ in before}
    keys = before.keys() | {key for key in after if key[0] in owners}
    missing = object()
    return [key for key in keys if before.get(key, missing) is not after.get(key, missing)]


def left_patched(before: dict[tuple[int, str], Any]) -> list[str]:
    """Attributes that install() patches and that are not now the objects they were ``before``.

    Comparing only those keeps torchrl's own lazy caches, which running tests may rebind, out.
    """
    from rlguard.runtime import install, uninstall

    now = snapshot()
    install()
    patched = snapshot()
    uninstall()
    targets = changed(patched, snapshot())
    missing = object()
    return [name for key in targets if before.get(key, missing) is not now.get(key, missing) for name in key[1:]]


_VIEWS = {"aten::slice", "aten::view", "aten::reshape", "aten::_reshape_alias", "aten::as_strided", "aten::select"}


def tree_values(tree: Any, capacity: int) -> torch.Tensor:
    """A segment tree's leaves through the interface both rlguard's trees and torchrl's compiled ones
    have, so the same test runs where the extension loads."""
    return torch.as_tensor(tree[torch.arange(capacity)])


def largest_op(action: Any, *trees: Any) -> int:
    """The most elements an aten op worked on while ``action`` ran: its largest input, not
    counting views (they copy nothing) nor the levels of ``trees``, which ops write into at
    given indices or reduce a slice of. Past torch's parallel grain an op wakes the intra-op
    threads, so this says whether a call can collapse on a busy machine, without timing it."""
    exempt = {level.numel() for tree in trees for level in getattr(tree, "_levels", ())}  # compiled trees: none
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as profile:
        action()
    sizes = [
        int(np.prod(shape))
        for event in profile.events()
        if event.name not in _VIEWS
        for shape in event.input_shapes
        if isinstance(shape, list) and shape and int(np.prod(shape)) not in exempt
    ]
    return max(sizes)



def current_state(path: Path) -> Path:
    """The folder holding the current state of a state folder written by rlguard's dumps (the
    generation CURRENT names), or ``path`` itself for a flat state (stock torchrl's)."""
    pointer = path / "CURRENT"
    return path / pointer.read_text().strip() if pointer.exists() else path
