"""Without torch, torchrl and tensordict (a linter-only install), every runtime entry point ends in one line.

The runtime packages are hidden for real: the subprocesses run with ``python -S`` on a view of this
environment's site-packages that leaves them out, so ``import torch`` fails as on a machine where
only ``pip install rlguard`` ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

import rlguard
from rlguard.runtime.errors import INSTALL_RUNTIME, MISSING_RUNTIME, RUNTIME_PACKAGES

ROOT = Path(rlguard.__file__).parents[1]
LINE = f"{MISSING_RUNTIME}; not installed here: torch, torchrl, tensordict. Run: {INSTALL_RUNTIME}"


@pytest.fixture(scope="module")
def bare_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This environment's site-packages without torch, torchrl, tensordict and their metadata."""
    view = tmp_path_factory.mktemp("site-packages")
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name.partition("-")[0].lower() not in RUNTIME_PACKAGES:
            (view / entry.name).symlink_to(entry)
    return view


def run(bare_site: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": f"{ROOT}:{bare_site}", "PATH": "/usr/bin:/bin", "HOME": str(bare_site)}
    return subprocess.run(
        [sys.executable, "-S", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_view_really_lacks_the_runtime_packages(bare_site: Path) -> None:
    result = run(bare_site, "-c", "import torch")
    assert "ModuleNotFoundError: No module named 'torch'" in result.stderr
    assert run(bare_site, "-c", "import pytest, rlguard.runtime").returncode == 0


ENTRY_POINTS = """
import importlib, json, pkgutil
import rlguard.runtime as runtime

results = {}

def attempt(name, call):
    try:
        call()
        results[name] = "ok"
    except Exception as error:
        results[name] = f"{type(error).__name__}: {error}"

class Net:
    pass

attempt("install", runtime.install)
attempt("installed", lambda: runtime.installed().__enter__())
attempt("uninstall", runtime.uninstall)
attempt("uncopyable", lambda: runtime.uncopyable(Net))
for name in runtime.__all__:
    attempt(f"rlguard.runtime.{name}", lambda: getattr(runtime, name))
for module in pkgutil.iter_modules(runtime.__path__):
    attempt(f"import {module.name}", lambda: importlib.import_module(f"rlguard.runtime.{module.name}"))
print(json.dumps(results))
"""


def test_every_entry_point_says_what_to_install(bare_site: Path) -> None:
    result = run(bare_site, "-c", ENTRY_POINTS)
    results = json.loads(result.stdout)
    failed = {name: outcome for name, outcome in results.items() if outcome != "ok"}
    assert set(failed.values()) == {f"MissingRuntimeError: {LINE}"}
    lazy = ("Collector", "TrainingGuard", "set_recurrent_mode", "PrioritizedSampler", "TensorDictReplayBuffer")
    needs_torch = {"install", "installed", *(f"rlguard.runtime.{name}" for name in lazy)}
    assert needs_torch | {"import guard", "import recurrent", "import collector", "import sampler"} <= failed.keys()
    # What needs no torch keeps working: the marker, uninstall, the plugin, settings, the doctor's probe.
    works = ("uninstall", "uncopyable", "rlguard.runtime.RLGuardError", "import pytest_plugin", "import settings")
    assert all(results[name] == "ok" for name in works)


PLUGIN_USERS = """
import pytest

def test_fixture(rlguard_runtime):
    pass

@pytest.mark.rlguard(training=False)
def test_marker():
    pass

def test_plain():
    pass
"""


def test_pytest_option_fixture_and_marker_end_in_one_line(bare_site: Path, tmp_path: Path) -> None:
    (tmp_path / "test_users.py").write_text(textwrap.dedent(PLUGIN_USERS))
    quiet = ("-p", "no:cacheprovider", "-p", "no:asyncio")  # pytest-asyncio (from pytest-lsp) warns on stderr
    session = run(bare_site, "-m", "pytest", *quiet, "--rlguard", ".", cwd=tmp_path)
    assert session.returncode == 4  # pytest's usage error
    assert session.stderr.strip().splitlines() == [f"ERROR: --rlguard: {LINE}"]
    per_test = run(bare_site, "-m", "pytest", *quiet, "-rA", ".", cwd=tmp_path)
    output = per_test.stdout + per_test.stderr
    assert per_test.returncode == 1 and "1 passed, 2 errors" in output, output
    assert "Traceback" not in output and "INTERNALERROR" not in output and "During handling" not in output
    for test in ("test_fixture", "test_marker"):  # the setup error is the one line, and nothing else
        report = output.split(f" ERROR at setup of {test} ")[1].splitlines()[1:3]
        assert report[0] == LINE and report[1].startswith(("___", "===")), report
