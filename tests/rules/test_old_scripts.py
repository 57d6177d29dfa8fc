"""Old TorchRL scripts run after ``rlguard fix --unsafe-fixes`` on the tested stack (torchrl 0.14.1).

Each fixture in tests/fixtures/old_scripts/ is a pytorch/rl tutorial or sota script from an old tag
(``git archive <tag>``), reduced in size with the edits its header lists; none touches the torchrl API
it was written against. Each is fixed with the real CLI, checked clean, and run to its end in a fresh
interpreter. A script blocked by something outside rlguard's reach is listed in ``BLOCKED`` with why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from rlguard.rules.data import NEWEST_KNOWN_TORCHRL

torchrl = pytest.importorskip("torchrl")
if tuple(int(p) for p in torchrl.__version__.split(".")[:2]) != NEWEST_KNOWN_TORCHRL[:2]:
    pytest.skip(f"the scripts run on torchrl {NEWEST_KNOWN_TORCHRL}, not {torchrl.__version__}",
                allow_module_level=True)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "old_scripts")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".py"))
# Scripts that cannot run here whatever rlguard does, with the reason.
BLOCKED: dict[str, str] = {}


def _rlguard(*args: str, cwd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "rlguard", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_every_fixture_is_listed_once():
    assert SCRIPTS and set(BLOCKED) <= set(SCRIPTS)


@pytest.mark.slow  # each script trains for a few seconds to a minute
@pytest.mark.parametrize("script", SCRIPTS)
def test_old_script_runs_after_the_fix(tmp_path, script):
    if script in BLOCKED:
        pytest.skip(BLOCKED[script])
    shutil.copy(os.path.join(FIXTURES, script), tmp_path / script)
    # The original fails on the tested stack: there is something to fix.
    original = subprocess.run([sys.executable, script], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert original.returncode != 0, f"{script} runs unfixed: it proves nothing"
    fixed = _rlguard("fix", "--unsafe-fixes", "--no-cache", script, cwd=str(tmp_path))
    assert fixed.returncode in (0, 1), fixed.stderr
    check = _rlguard("check", "--no-cache", "--select", "RLG006,RLG007", script, cwd=str(tmp_path))
    assert check.returncode == 0, check.stdout
    done = subprocess.run([sys.executable, script], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{script} after the fix:\n{done.stderr[-3000:]}"
