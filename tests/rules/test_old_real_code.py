"""torchrl 0.10.1's own SOTA helpers (tests/fixtures/torchrl_0_10_sota, MIT): linted for torchrl 0.14, fixed,
and the fixed files import and build their collectors on the installed torchrl."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

torchrl = pytest.importorskip("torchrl")

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(CHECKOUT, "tests", "fixtures", "torchrl_0_10_sota")
FILES = ("td3_utils.py", "sac_utils.py", "iql_utils.py")
# Findings per file before the fix (README.md "Upgrading" quotes these counts).
EXPECTED_BEFORE = {"td3_utils.py": 1, "sac_utils.py": 2, "iql_utils.py": 1}


def _rlguard(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": CHECKOUT}
    return subprocess.run([sys.executable, "-m", "rlguard", *args, "--target-torchrl", "0.14", "--no-cache",
                           "--select", "RLG006,RLG007"], capture_output=True, text=True, cwd=cwd, env=env)


def _counts(output: str) -> dict[str, int]:
    counts = dict.fromkeys(FILES, 0)
    for line in output.splitlines():
        name = os.path.basename(line.split(":")[0])
        if name in counts and " RLG00" in line:
            counts[name] += 1
    return counts


def _load(path: str):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cfg() -> SimpleNamespace:
    return SimpleNamespace(
        collector=SimpleNamespace(device="cpu", init_random_frames=0, frames_per_batch=8, total_frames=16,
                                  reset_at_each_iter=False, max_frames_per_traj=-1),
        compile=SimpleNamespace(cudagraphs=False), env=SimpleNamespace(seed=0))


@pytest.fixture(scope="module")
def fixed_copy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sota")
    for name in FILES:
        shutil.copy(os.path.join(FIXTURES, name), folder / name)
    before = _rlguard("check", ".", cwd=folder)
    fixed = _rlguard("fix", ".", cwd=folder)
    after = _rlguard("check", ".", cwd=folder)
    return folder, before, fixed, after


def test_lint_counts_before_and_after_the_fix(fixed_copy):
    _, before, fixed, after = fixed_copy
    assert _counts(before.stdout) == EXPECTED_BEFORE, before.stdout
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert after.returncode == 0 and _counts(after.stdout) == dict.fromkeys(FILES, 0), after.stdout


@pytest.mark.parametrize("name", FILES)
def test_the_original_fails_to_import_and_the_fixed_file_builds_its_collector(fixed_copy, name):
    from torchrl.envs import PendulumEnv
    from torchrl.envs.utils import RandomPolicy

    with pytest.raises(ImportError, match="DataCollector"):
        _load(os.path.join(FIXTURES, name))
    module = _load(str(fixed_copy[0] / name))
    env = PendulumEnv()
    collector = module.make_collector(_cfg(), env, RandomPolicy(env.action_spec), compile_mode=None,
                                      **({"device": "cpu"} if name == "td3_utils.py" else {}))
    try:
        batch = next(iter(collector))
        assert batch.numel() == 8
    finally:
        collector.shutdown()
