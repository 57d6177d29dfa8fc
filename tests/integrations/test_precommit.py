"""The pre-commit hooks, run by the real pre-commit.

Each `pre-commit try-repo` builds a fresh hook environment (pip installs rlguard from a snapshot of
this checkout, and libcst from the package index), so these tests take a while: they are kept few.
PRE_COMMIT_HOME is a temporary folder: nothing touches the user's pre-commit cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integrations.conftest import CHECKOUT, clean_env, make_repo

pytestmark = pytest.mark.skipif(shutil.which("pre-commit") is None and not os.path.exists(
    os.path.join(os.path.dirname(sys.executable), "pre-commit")), reason="pre-commit is not installed")

RISKY = "from torchrl.collectors import SyncDataCollector\n\ncollector = SyncDataCollector(env, policy)\n"
FIXED = "from torchrl.collectors import Collector\n\ncollector = Collector(env, policy)\n"
CLEAN = "import json\n\nprint(json.dumps({'reward': 1.0}))\n"
STUB = "from torchrl.collectors import SyncDataCollector as SyncDataCollector\n"


def pre_commit(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    executable = shutil.which("pre-commit") or os.path.join(os.path.dirname(sys.executable), "pre-commit")
    return subprocess.run([executable, *args], cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=clean_env(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", NO_COLOR="1"))


@pytest.fixture(scope="module")
def hook_repo(checkout_snapshot) -> tuple[Path, str]:
    return checkout_snapshot


def test_hook_manifest():
    """One hook, as ruff offers one: `--fix` in its args makes it fix, then report what remains."""
    (hook,) = yaml.safe_load((CHECKOUT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "rlguard"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "pyi"]
    assert hook["require_serial"] is True  # for speed: rlguard runs its own worker pool
    assert hook["entry"] == "rlguard check --force-exclude"


def test_try_repo_check_hook_fails_on_the_risky_file(tmp_path, hook_repo):
    repo = make_repo(tmp_path / "project", {"train.py": RISKY, "clean.py": CLEAN, "stubs/types.pyi": STUB})
    result = pre_commit(repo, tmp_path / "home", "try-repo", str(hook_repo[0]), "rlguard", "--all-files")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "rlguard" in output and "Failed" in output
    assert "train.py:1:32: RLG006" in output
    assert "    Use `Collector`" in output
    assert "stubs/types.pyi:1:32: RLG006" in output  # types_or: pyi files are checked too
    assert "clean.py" not in output
    assert (repo / "train.py").read_text() == RISKY  # the check hook never writes


def test_configured_exclude_holds_under_pre_commit(tmp_path, hook_repo):
    """pre-commit names each file; `exclude` in [tool.rlguard] still applies (the hooks pass --force-exclude)."""
    config = '[tool.rlguard]\nexclude = ["generated/"]\n'
    repo = make_repo(tmp_path / "project", {"pyproject.toml": config, "generated/old.py": RISKY, "clean.py": CLEAN})
    result = pre_commit(repo, tmp_path / "home", "try-repo", str(hook_repo[0]), "rlguard", "--all-files")
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Passed" in output, output
    (repo / "train.py").write_text(RISKY)  # the same code outside the excluded folder still fails
    subprocess.run(["git", "add", "train.py"], cwd=repo, env=clean_env(), check=True)
    result = pre_commit(repo, tmp_path / "home", "try-repo", str(hook_repo[0]), "rlguard", "--all-files")
    assert result.returncode == 1 and "train.py:1:32: RLG006" in result.stdout + result.stderr


def test_try_repo_clean_repo_passes(tmp_path, hook_repo):
    repo = make_repo(tmp_path / "project", {"clean.py": CLEAN, "pkg/__init__.py": ""})
    result = pre_commit(repo, tmp_path / "home", "try-repo", str(hook_repo[0]), "--all-files")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert output.count("Passed") == 1, output


def _config(hook_repo: tuple[Path, str]) -> str:
    """A .pre-commit-config.yaml as the docs show it: the hook, fixing."""
    return yaml.safe_dump({"repos": [{
        "repo": str(hook_repo[0]), "rev": hook_repo[1], "hooks": [{"id": "rlguard", "args": ["--fix"]}],
    }]}, sort_keys=False)


@pytest.fixture(scope="module")
def configured(tmp_path_factory, hook_repo) -> tuple[Path, Path]:
    """A project whose .pre-commit-config.yaml uses the hook as the docs tell users to, with its own
    PRE_COMMIT_HOME: the hook environment stays there to be inspected."""
    root = tmp_path_factory.mktemp("configured")
    repo = make_repo(root / "project", {"train.py": RISKY, "clean.py": CLEAN, ".pre-commit-config.yaml": _config(hook_repo)})
    return repo, root / "home"


def test_the_fixing_hook_rewrites_the_file_and_fails_once(configured):
    repo, home = configured
    first = pre_commit(repo, home, "run", "rlguard", "--all-files")
    output = first.stdout + first.stderr
    assert first.returncode == 1, output
    assert "files were modified by this hook" in output
    assert "Fixed 1 finding in 1 file (RLG006: 1)" in output
    assert (repo / "train.py").read_text() == FIXED
    assert (repo / "clean.py").read_text() == CLEAN
    # As formatters do: the next run finds nothing to change.
    second = pre_commit(repo, home, "run", "--all-files")
    assert second.returncode == 0, second.stdout + second.stderr
    assert (second.stdout + second.stderr).count("Passed") == 1


# A deep copy of a policy that holds a lock (RLG001, no automatic fix) beside a removed name (RLG006, fixed).
UNFIXABLE = ("import copy\nimport threading\n\n\nclass Policy:\n    def __init__(self):\n        self.lock = threading.Lock()\n\n\n"
             "snapshot = copy.deepcopy(Policy())\n")


def test_the_fixing_hook_reports_what_remains_once(configured, hook_repo, tmp_path):
    _, home = configured  # the same hook environment
    repo = make_repo(tmp_path / "project", {"train.py": RISKY + UNFIXABLE, ".pre-commit-config.yaml": _config(hook_repo)})
    result = pre_commit(repo, home, "run", "rlguard", "--all-files")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Fixed 1 finding in 1 file (RLG006: 1)" in output
    assert output.count("RLG001") == 1, output
    assert "Collector(env, policy)" in (repo / "train.py").read_text()


def test_hook_environment_holds_no_torch(configured):
    repo, home = configured
    install = pre_commit(repo, home, "install-hooks")
    assert install.returncode == 0, install.stdout + install.stderr
    envs = sorted(home.glob("repo*/py_env-*"))
    assert len(envs) == 1, envs
    python = envs[0] / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    freeze = subprocess.run([str(python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, timeout=120, check=True)
    installed = {line.split("==")[0].split(" @ ")[0].strip().lower().replace("_", "-")
                 for line in freeze.stdout.splitlines() if line and not line.startswith("#")}
    print("hook environment:", sorted(installed))
    assert {"rlguard", "libcst"} <= installed, installed
    heavy = {"torch", "torchrl", "tensordict", "numpy", "nvidia-cuda-runtime-cu12", "triton"}
    assert not (installed & heavy), installed & heavy
    # And the hook's rlguard runs without them.
    probe = subprocess.run([str(python), "-c", "import importlib.util as u, sys; import rlguard.cli; "
                            "sys.exit(any(u.find_spec(m) for m in ('torch', 'torchrl', 'tensordict')))"],
                           capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
