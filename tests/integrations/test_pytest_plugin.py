"""`pytest --rlguard`, end to end: a real pytest session in a subprocess, on a small project of
test files that use TorchRL. The planted runtime bug is reported with rlguard's message, the clean
test passes, and after the session every torchrl attribute is the identical original object."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torchrl")

PLANTED = '''
import threading

import torch
from torch import nn
from torchrl.modules import Actor, ValueOperator
from torchrl.objectives import DDPGLoss


class CameraNet(nn.Module):
    """A policy network that guards a device handle with a lock: it cannot be deep-copied."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 1)
        self.lock = threading.Lock()

    def forward(self, observation):
        with self.lock:
            return self.linear(observation)


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def forward(self, observation, action):
        return self.linear(torch.cat([observation, action], -1))


def test_ddpg_with_a_locked_actor():
    actor = Actor(CameraNet(), in_keys=["observation"])
    value = ValueOperator(QNet(), in_keys=["observation", "action"])
    DDPGLoss(actor, value)  # deep-copies the actor
'''

CLEAN = '''
import torch
from tensordict import TensorDict
from torchrl.modules import MLP
from torchrl.objectives import DQNLoss
from torchrl.modules import QValueActor


def test_dqn_loss_is_finite():
    actor = QValueActor(MLP(in_features=3, out_features=2, num_cells=[8]), in_keys=["observation"],
                        action_space="one-hot")
    loss = DQNLoss(actor, action_space="one-hot")
    batch = TensorDict({
        "observation": torch.randn(4, 3),
        "action": torch.nn.functional.one_hot(torch.randint(2, (4,)), 2),
        ("next", "observation"): torch.randn(4, 3),
        ("next", "reward"): torch.randn(4, 1),
        ("next", "done"): torch.zeros(4, 1, dtype=torch.bool),
        ("next", "terminated"): torch.zeros(4, 1, dtype=torch.bool),
    }, batch_size=[4])
    out = loss(batch)
    assert torch.isfinite(out["loss"])
'''

# Runs pytest in-process, so it can compare torchrl before and after the session by identity.
DRIVER = '''
import importlib, json, sys
import pytest

MODULES = ["torchrl", "torchrl.collectors", "torchrl.objectives", "torchrl.data", "torchrl.modules",
           "torchrl.envs", "torchrl.trainers", "tensordict", "tensordict.nn"]
for name in MODULES:
    importlib.import_module(name)


def patchable(value):
    """What a patch replaces: functions, classes, descriptors. Data (torchrl caches some lists
    on its classes, e.g. a loss's out_keys) is left out."""
    return callable(value) or hasattr(type(value), "__get__")


def snapshot():
    found = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("torchrl", "tensordict")):
            continue
        for attr, value in list(vars(module).items()):
            if patchable(value):
                found[(name, attr)] = value
            if isinstance(value, type) and value.__module__.startswith(("torchrl", "tensordict")):
                for member, inner in list(vars(value).items()):
                    if patchable(inner):
                        found[(name, attr, member)] = inner
    return found


before = snapshot()
code = pytest.main(sys.argv[1:])
after = snapshot()
changed = [".".join(key) for key, value in before.items() if key not in after or after[key] is not value]
print("RESULT " + json.dumps({"exit": int(code), "changed": changed[:20], "compared": len(before)}))
'''


def run_session(project: Path, *options: str) -> tuple[dict, str]:
    result = subprocess.run([sys.executable, str(project / "driver.py"), "-p", "no:cacheprovider", "-q", *options,
                             str(project / "tests")], cwd=project, capture_output=True, text=True, timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, result.stdout + result.stderr
    return json.loads(lines[-1][len("RESULT "):]), result.stdout + result.stderr


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pytest-project")
    (root / "tests").mkdir()
    (root / "tests" / "test_planted.py").write_text(textwrap.dedent(PLANTED))
    (root / "tests" / "test_clean.py").write_text(textwrap.dedent(CLEAN))
    (root / "driver.py").write_text(textwrap.dedent(DRIVER))
    return root


def test_rlguard_session_reports_the_planted_bug_and_restores_torchrl(project):
    result, output = run_session(project, "--rlguard")
    assert result["exit"] == 1, output
    assert "1 failed, 1 passed" in output
    assert "FAILED" in output and "test_planted.py::test_ddpg_with_a_locked_actor" in output
    assert "test_clean.py::test_dqn_loss_is_finite" not in output.split("short test summary")[-1]
    # rlguard's message: what, where, what to do, and the lint rule.
    assert "RLGuardError" in output
    assert "DDPGLoss deep-copies" in output
    assert "lock" in output and "CameraNet" in output
    assert "__deepcopy__" in output and "RLG001" in output
    assert "policy_factory=" not in output  # a loss has no factory to take
    # After the session, every torchrl and tensordict attribute is the original object again.
    assert result["compared"] > 1000
    assert result["changed"] == [], result["changed"]


def test_without_the_option_the_bug_is_torchrls_bare_error(project):
    result, output = run_session(project)
    assert result["exit"] == 1, output
    assert "1 failed, 1 passed" in output
    assert "RLGuardError" not in output
    assert "cannot pickle" in output
    assert result["changed"] == []
