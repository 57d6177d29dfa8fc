"""The pytest plugin, run for real: ``pytest --rlguard`` on a small TorchRL project in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

HELPERS = Path(__file__).parent

CONFTEST = """
import atexit, json
import torchrl.collectors, torchrl.data, torchrl.modules, torchrl.objectives, torchrl.trainers
from rlguard_runtime_helpers import left_patched, snapshot

BEFORE = snapshot()  # conftest loads before the plugin's pytest_configure installs

@atexit.register
def _after_the_session():
    with open("after.json", "w") as out:
        json.dump({"left_patched": left_patched(BEFORE)}, out)
"""

PLANTED_BUG = """
import torch
from torch import nn
from torchrl.modules import ValueOperator
from torchrl.objectives import DDPGLoss
from rlguard_runtime_helpers import OBS, LockedNet, policy

class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2 * OBS, 1)

    def forward(self, observation, action):
        return self.linear(torch.cat([observation, action], -1))

def test_ddpg_with_a_locked_actor():
    DDPGLoss(policy(LockedNet()), ValueOperator(Critic(), in_keys=["observation", "action"]))
"""

CLEAN = """
import torchrl.collectors
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv
from rlguard_runtime_helpers import LockedNet, policy

def test_collect_with_a_locked_policy_on_cpu0():
    assert "_get_policy_and_device" in vars(torchrl.collectors.Collector)  # installed by --rlguard
    collector = torchrl.collectors.Collector(
        ContinuousActionVecMockEnv(), policy(LockedNet()), frames_per_batch=8, total_frames=8,
        policy_device="cpu:0",
    )
    assert next(iter(collector)).batch_size == (8,)
"""

PER_TEST = """
import pytest
from rlguard_runtime_helpers import collector_corrected as patched

def test_before():
    assert not patched()

@pytest.mark.filterwarnings("ignore::rlguard.runtime.RLGuardWarning")
def test_fixture(rlguard_runtime):
    assert patched() and rlguard_runtime.Collector.__module__ == "rlguard.runtime.collector"

@pytest.mark.rlguard
@pytest.mark.filterwarnings("ignore::rlguard.runtime.RLGuardWarning")
def test_marker():
    assert patched()

@pytest.mark.rlguard(collectors=False)
def test_marker_with_components():
    assert not patched()

def test_after():
    assert not patched()
"""


def run_pytest(project: Path, files: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    for name, source in files.items():
        (project / name).write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HELPERS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", "ignore::FutureWarning", *options, "."],
        cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def test_the_plugin_module_imports_no_torch() -> None:
    script = "import sys, rlguard.runtime.pytest_plugin; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_rlguard_option_reports_the_planted_bug_and_passes_the_clean_test(tmp_path: Path) -> None:
    result = run_pytest(
        tmp_path, {"conftest.py": CONFTEST, "test_bug.py": PLANTED_BUG, "test_clean.py": CLEAN}, "--rlguard", "-rA"
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "rlguard: runtime installed for the session" in output
    assert "FAILED test_bug.py::test_ddpg_with_a_locked_actor" in output
    assert "PASSED test_clean.py::test_collect_with_a_locked_policy_on_cpu0" in output
    assert "RLGuardError: rlguard: DDPGLoss deep-copies its actor and value networks" in output
    assert "`actor_network.module.lock`" in output and "RLG001" in output
    assert "cannot pickle '_thread.lock' object" in output
    assert json.loads((tmp_path / "after.json").read_text()) == {"left_patched": []}


def test_fixture_and_marker_install_for_one_test(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, {"test_per_test.py": PER_TEST}, "--strict-markers")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


def test_an_unsupported_torchrl_stops_the_session_with_the_message_only(tmp_path: Path) -> None:
    old_torchrl = "import torchrl\ntorchrl.__version__ = '0.13.0'\n"
    result = run_pytest(tmp_path, {"conftest.py": old_torchrl, "test_nothing.py": "def test_x(): pass\n"}, "--rlguard")
    assert result.returncode == 4  # pytest's usage error
    assert "--rlguard: rlguard: install(collectors=True) supports torchrl >=0.14,<0.15" in result.stderr
    assert "0.13.0" in result.stderr and "Traceback" not in result.stdout + result.stderr


SETTINGS = """
import pytest, torch
from tensordict import TensorDict
from torchrl.objectives import LossModule
from rlguard.runtime import RLGuardError, RLGuardWarning
from rlguard_runtime_helpers import collector_corrected

class NanLoss(LossModule):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(()))

    def forward(self, data):
        return TensorDict({"loss": self.weight * float("nan")})

def test_session_settings():
    assert not collector_corrected()  # -collectors
    with pytest.raises(RLGuardError, match="NanLoss returned NaN"):
        NanLoss()(TensorDict())

@pytest.mark.rlguard(training=False)
def test_marker_switches_training_off():
    NanLoss()(TensorDict())

@pytest.mark.rlguard("-training.nonfinite")
def test_marker_spec_switches_one_check_off():
    NanLoss()(TensorDict())
    assert not collector_corrected()  # the session's settings still hold

@pytest.mark.rlguard(warn=True, collectors=True)
def test_marker_warns_instead_and_switches_collectors_on():
    with pytest.warns(RLGuardWarning, match="NanLoss returned NaN"):
        NanLoss()(TensorDict())
    with pytest.warns(RLGuardWarning, match="could not deep-copy|cannot be copied"):
        assert collector_corrected()

@pytest.mark.rlguard(collectors=True)
def test_the_same_warning_again_in_another_test():
    with pytest.warns(RLGuardWarning):
        assert collector_corrected()
"""


def test_spec_ini_and_marker_choose_groups_checks_and_warn_mode(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, {"test_settings.py": SETTINGS}, "-rA", "--rlguard=-collectors")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout
    (tmp_path / "pytest.ini").write_text("[pytest]\nrlguard = -collectors\n")
    result = run_pytest(tmp_path, {}, "-rA", "--rlguard")  # a bare --rlguard before a path takes no SPEC
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


def test_a_bad_spec_stops_the_session_with_one_line(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, {"test_nothing.py": "def test_x(): pass\n"}, "--rlguard=-training.priority")
    assert result.returncode == 4
    assert "--rlguard: rlguard: '-training.priority' in '-training.priority' is not a setting" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr
