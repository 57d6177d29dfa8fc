"""Old TorchRL scripts run after ``rlguard fix --unsafe-fixes`` on the tested stack (torchrl 0.14.1).

Each fixture in tests/fixtures/old_scripts/ is a pytorch/rl tutorial or sota script from an old tag
(``git archive <tag>``), or a script from a public user repository at an old commit (its header names the
repository, commit and license), one file or a folder (its entry is the file that runs ``__main__``), reduced in
size with the edits its headers list; none touches the torchrl API it was written against. Each is
fixed with the real CLI, checked clean, and run to its end in a fresh interpreter, one thread per
process. Scripts on gymnasium's environments (``NEEDS``: the test extra) are skipped without them, saying
which package is missing. A script blocked by
something outside rlguard's reach is listed in ``BLOCKED`` with why; one that rlguard does not yet fix
whole is in ``KNOWN_GAPS``: it must still fail after the fix (then it is reported as xfail), so
closing the gap fails the test until the entry goes.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys

import pytest

from rlguard.rules.data import NEWEST_KNOWN_TORCHRL
from tests.old_release import old_stack

torchrl = pytest.importorskip("torchrl")
if tuple(int(p) for p in torchrl.__version__.split(".")[:2]) != NEWEST_KNOWN_TORCHRL[:2]:
    pytest.skip(f"the scripts run on torchrl {NEWEST_KNOWN_TORCHRL}, not {torchrl.__version__}",
                allow_module_level=True)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "old_scripts")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".py") or os.path.isdir(os.path.join(FIXTURES, f)))
# Scripts that cannot run here whatever rlguard does, with the reason.
BLOCKED: dict[str, str] = {}
# Scripts rlguard does not fix whole yet, with what is missing.
KNOWN_GAPS: dict[str, str] = {}
# The environments' packages a script needs (the test extra: gymnasium with its classic-control and mujoco
# extras): without them it is skipped, saying which is missing.
NEEDS: dict[str, tuple[str, ...]] = {
    "a2c_v0_4": ("gymnasium", "mujoco"),
    "coding_ddpg_v0_4.py": ("gymnasium", "mujoco"),
    "coding_dqn_v0_2.py": ("gymnasium", "pygame"),
    "dqn_v0_3": ("gymnasium",),
    "ppo_v0_1": ("gymnasium", "mujoco"),
    "ppo_v0_7": ("gymnasium", "mujoco"),
    "crossq_v0_5": ("gymnasium", "mujoco"),
    "sac_v0_3": ("gymnasium", "mujoco"),
    "td3_v0_3": ("gymnasium", "mujoco"),
    "discrete_sac_v0_1": ("gymnasium",),
}
# Scripts whose original runs on its own release: torchrl and tensordict of the tag's minor release (its last
# patch, whose wheel the removed-API table reads), beside the tested torch,
# and the other packages that release needs in place of this environment's (torchrl 0.7 refuses gymnasium 1.x).
# The others cannot: torchrl 0.1 to 0.5 need a tensordict (up to 0.5) that imports
# torch.multiprocessing.reductions.ForkingPickler, which torch 2.13 no longer has, and older torch wheels
# are CUDA builds of gigabytes.
OWN_RELEASE: dict[str, tuple[tuple[str, str], ...]] = {
    "ppo_v0_7": (("torchrl", "0.7.2"), ("tensordict", "0.7.2"), ("gymnasium", "0.29.1")),
}
# A script that has not ended by then counts as failed (an exception with ParallelEnv workers alive can hang).
TIMEOUT_S = 300
# A known gap must still fail after the fix; one that fails by hanging (spawned workers that re-run the script)
# has shown it well before the full limit.
GAP_TIMEOUT_S = 90
# One thread per process: a script's env workers and its trainer each take every core otherwise, and on a
# shared two-core machine a 300-frame run then takes minutes instead of seconds.
_ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _run(entry: str, cwd, paths: list[str] | None = None, timeout: int = TIMEOUT_S) -> tuple[int | None, str]:
    """The script's exit status (None: it hung) and the end of its stderr; its whole process group goes
    when it ends or hangs, workers included. With ``paths`` (``old_stack``), on that old stack."""
    isolation, env = (["-S"], {**_ENV, "PYTHONPATH": os.pathsep.join(paths)}) if paths else ([], _ENV)
    process = subprocess.Popen([sys.executable, *isolation, entry], cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        _, stderr = process.communicate(timeout=timeout)
        return process.returncode, stderr[-3000:]
    except subprocess.TimeoutExpired:
        return None, "hung"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate()


def _rlguard(*args: str, cwd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "rlguard", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_every_fixture_is_listed_once():
    assert SCRIPTS and set(BLOCKED) <= set(SCRIPTS) and set(KNOWN_GAPS) <= set(SCRIPTS) and set(NEEDS) <= set(SCRIPTS)
    assert set(OWN_RELEASE) <= set(SCRIPTS)
    assert not set(BLOCKED) & set(KNOWN_GAPS)


def _copy(script: str, folder) -> str:
    """The fixture copied into ``folder``; the file to run."""
    source = os.path.join(FIXTURES, script)
    if not os.path.isdir(source):
        shutil.copy(source, folder / script)
        return script
    shutil.copytree(source, folder, dirs_exist_ok=True)
    return next(f for f in sorted(os.listdir(folder)) if f.endswith(".py")
                and "__main__" in (folder / f).read_text(encoding="utf-8"))


@pytest.mark.slow  # each script trains for a few seconds to a minute
@pytest.mark.parametrize("script", SCRIPTS)
def test_old_script_runs_after_the_fix(tmp_path, script):
    if script in BLOCKED:
        pytest.skip(BLOCKED[script])
    missing = [m for m in NEEDS.get(script, ()) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{script} needs {', '.join(missing)} (the test extra)")
    entry = _copy(script, tmp_path)
    # The original fails on the tested stack: there is something to fix.
    assert _run(entry, tmp_path)[0] != 0, f"{script} runs unfixed: it proves nothing"
    fixed = _rlguard("fix", "--unsafe-fixes", "--no-cache", ".", cwd=str(tmp_path))
    assert fixed.returncode in (0, 1), fixed.stderr
    check = _rlguard("check", "--no-cache", "--select", "RLG006,RLG007", ".", cwd=str(tmp_path))
    assert check.returncode == 0 or script in KNOWN_GAPS, check.stdout  # a gap may be a finding with no fix
    status, stderr = _run(entry, tmp_path, timeout=GAP_TIMEOUT_S if script in KNOWN_GAPS else TIMEOUT_S)
    if script in KNOWN_GAPS:
        assert status != 0, f"{script} runs after the fix: take it off KNOWN_GAPS"
        pytest.xfail(KNOWN_GAPS[script])
    assert status == 0, f"{script} after the fix:\n{stderr}"


@pytest.mark.slow  # downloads the old releases' wheels on first use
@pytest.mark.parametrize("script", sorted(OWN_RELEASE))
def test_the_original_runs_on_its_own_release(tmp_path, script, release_wheels):
    missing = [m for m in NEEDS.get(script, ()) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{script} needs {', '.join(missing)} (the test extra)")
    versions = dict(OWN_RELEASE[script])
    others = [f"{name}=={version}" for name, version in versions.items() if name not in ("torchrl", "tensordict")]
    (tmp_path / "stack").mkdir()
    paths = old_stack(tmp_path / "stack", release_wheels, versions["torchrl"], versions["tensordict"],
                      hidden=tuple(name for name in versions if name not in ("torchrl", "tensordict")))
    if others:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", paths[0], *others],
                       check=True, capture_output=True)
    (tmp_path / "run").mkdir()
    entry = _copy(script, tmp_path / "run")
    status, stderr = _run(entry, tmp_path / "run", paths)
    assert status == 0, f"{script} on torchrl {versions['torchrl']}:\n{stderr}"
