"""rlguard doctor on the real tested stack, on a linter-only install, and on a broken extension."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata

import pytest
import torch

from rlguard.engine.toml_files import read_toml
from rlguard.engine.target import parse_version, satisfies
from rlguard.runtime.extension import probe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _doctor(*args: str, cwd: str = ROOT, env=None, python=(sys.executable,)) -> tuple[int, list[dict]]:
    done = subprocess.run([*python, "-m", "rlguard", "doctor", "--format", "json", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def _by_name(items: list[dict]) -> dict[str, dict]:
    return {item["name"]: item for item in items}


def test_tested_stack_verdicts():
    code, items = _doctor()
    found = _by_name(items)
    for package in ("torch", "tensordict", "torchrl"):
        assert found[package] == {"name": package, "verdict": "ok", "evidence": metadata.version(package), "fix": ""}
    # torchrl's own requirement on tensordict, as its metadata states it, is checked and met
    [needs] = [r for r in metadata.requires("torchrl") if r.startswith("tensordict") and ";" not in r]
    spec = needs[len("tensordict"):].strip()
    assert found[f"torchrl needs tensordict{spec}"]["verdict"] == "ok"
    assert satisfies(parse_version(metadata.version("tensordict")), spec)
    extension = found["torchrl compiled extension"]
    if probe().loads:  # torchrl's extension rebuilt against this torch, or a matching torch
        assert extension["verdict"] == "ok"
    else:  # the wheel of the tested stack: built against another torch, and rlguard's runtime covers it
        assert extension["verdict"] == "warn" and "rlguard.runtime.install()" in extension["fix"]
    assert code == 0  # nothing the tested stack runs is broken for code that calls install()
    assert found["target-torchrl"]["evidence"].startswith(f"{metadata.version('torchrl')} (from ")
    if not torch.cuda.is_available():
        assert found["accelerator"]["verdict"] == "warn"
        pinned = found["pinned memory"]
        assert pinned["verdict"] == "warn" and "Cannot access accelerator" in pinned["evidence"]


@pytest.mark.skipif(probe().loads, reason="torchrl's extension loads here: nothing to fall back from")
def test_a_missing_symbol_is_named_once_and_short():
    status = probe()
    assert status.missing_symbol and len(status.missing_symbol) > 100  # the mangled name this is about
    evidence = _by_name(_doctor()[1])["torchrl compiled extension"]["evidence"]
    assert status.missing_symbol not in evidence
    assert evidence.count("lacks the symbol") == 1 and len(evidence) < 250, evidence
    assert "_wrap_outputs" in evidence  # demangled (or cut) so a person can search for it


PRIORITIZED = """
import sys, torch
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage, TensorDictPrioritizedReplayBuffer
if sys.argv[1] == "install":
    import rlguard.runtime
    rlguard.runtime.install()
buffer = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(16), batch_size=4)
buffer.extend(TensorDict({"obs": torch.arange(8.0)}, batch_size=[8]))
print("SAMPLED", tuple(buffer.sample()["obs"].shape))
"""


@pytest.mark.skipif(probe().loads, reason="torchrl's extension loads here: nothing to fall back from")
def test_the_verdict_says_whether_prioritized_replay_runs():
    """The doctor's advice, run: without install() torchrl's prioritized replay raises, with it it samples."""
    run = lambda mode: subprocess.run([sys.executable, "-c", PRIORITIZED, mode], capture_output=True, text=True,
                                      timeout=300)
    stock = run("stock")
    assert stock.returncode != 0 and "SumSegmentTreeFp32 is not available" in stock.stderr
    installed = run("install")
    assert installed.returncode == 0 and "SAMPLED (4,)" in installed.stdout, installed.stderr


def test_text_format_and_project_findings(tmp_path):
    (tmp_path / "old.py").write_text("from torchrl.collectors import SyncDataCollector\n")
    done = subprocess.run([sys.executable, "-m", "rlguard", "doctor", "--project", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0  # findings and a covered extension warn; only a failed check fails
    assert "WARN  RLG006 removed-collector-name" in done.stdout and "would fire on 1 place(s)" in done.stdout
    assert done.stdout.splitlines()[0].startswith("OK    python")


def test_linter_only_install_reports_runtime_as_missing(tmp_path):
    """Without site-packages (python -S), only libcst and its pure dependencies are importable."""
    site = sysconfig.get_paths()["purelib"]
    for name in ("libcst", "yaml", "typing_extensions.py"):
        source = os.path.join(site, name)
        (shutil.copytree if os.path.isdir(source) else shutil.copy)(source, os.path.join(tmp_path, name))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    code, items = _doctor(env=env, python=(sys.executable, "-S"), cwd=str(tmp_path))
    found = _by_name(items)
    assert code == 0
    for package in ("torch", "tensordict", "torchrl"):
        assert found[package]["verdict"] == "warn" and "not installed" in found[package]["evidence"]
        # rlguard has no release: the advice installs the extra from a checkout, which declares it.
        assert "pip install '.[runtime]' in a checkout of rlguard" in found[package]["fix"]
        assert "rlguard[runtime]'" not in found[package]["fix"]
    assert found["torchrl compiled extension"]["evidence"] == "torch is not installed"
    assert "runtime" in read_toml(os.path.join(ROOT, "pyproject.toml"))["project"]["optional-dependencies"]


@pytest.mark.parametrize("content", [b"", b"\x7fELF garbage that is not a shared object"])
def test_broken_extension_names_the_loader_error(tmp_path, content):
    broken = tmp_path / "_torchrl.cpython-311-x86_64-linux-gnu.so"
    broken.write_bytes(content)
    code, items = _doctor("--extension-path", str(broken))
    extension = _by_name(items)["torchrl compiled extension"]
    # rlguard's runtime still covers it: a warning with the loader's error and what to do
    assert code == 0 and extension["verdict"] == "warn" and "rlguard.runtime.install()" in extension["fix"]
    assert str(broken) in extension["evidence"]
    assert any(words in extension["evidence"] for words in ("file too short", "invalid ELF header", "not a dynamic"))


def test_satisfies():
    assert satisfies((0, 14, 3), ">=0.14.3,<0.15.0")
    assert not satisfies((0, 15), ">=0.14.3,<0.15.0")
    assert satisfies((2, 13, 0), "~=2.13")
    assert satisfies((0, 14, 1), "==0.14.*") and not satisfies((0, 13, 1), "==0.14.*")
    assert not satisfies((2, 0), "!=2.0")


def test_usage_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "rlguard", "doctor", "--project", str(tmp_path / "missing")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no such file or directory" in done.stderr
