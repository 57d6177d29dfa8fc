"""The README's first command lints examples/: each script shows its pattern, the clean one nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPECTED = {
    "camera_policy/collect.py": {"RLG001"},
    "ppo_lstm/train.py": {"RLG002"},
    "sampler_state.py": {"RLG003"},
    "reward_transform.py": {"RLG004"},
    "trainer_hooks.py": {"RLG005"},
    "old_collector.py": {"RLG006"},
}


def test_each_example_shows_its_rule_and_the_clean_script_nothing():
    done = subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "--format", "json", "examples"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    found: dict[str, set[str]] = {}
    for finding in json.loads(done.stdout):
        found.setdefault(os.path.relpath(finding["path"], "examples"), set()).add(finding["code"])
    assert found == EXPECTED


def _camera_example(tmp_path, policies_edit=("", ""), collect_edit=("", "")) -> str:
    """A copy of examples/camera_policy with one edit to each file; returns the folder holding the package."""
    package = os.path.join(tmp_path, "camera_policy")
    os.makedirs(package)
    for name, (old, new) in (("__init__.py", ("", "")), ("policies.py", policies_edit), ("collect.py", collect_edit)):
        with open(os.path.join(ROOT, "examples", "camera_policy", name), encoding="utf-8") as handle:
            text = handle.read()
        assert old in text, (name, old)
        with open(os.path.join(package, name), "w", encoding="utf-8") as handle:
            handle.write(text.replace(old, new, 1) if old else text)
    return str(tmp_path)


def _run_example(folder: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([folder, ROOT])}
    return subprocess.run([sys.executable, os.path.join(folder, "camera_policy", "collect.py")], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def _check(folder: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "camera_policy"], cwd=folder,
                          env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True, text=True, timeout=300)


REMEDIES = {
    # "build the policy on its device yourself and leave `policy_device=` out"
    "no-policy-device": {"collect_edit": (', policy_device="cpu:0")', ")")},
    # "mark `CameraPolicy` `@rlguard.runtime.uncopyable` and call `rlguard.runtime.install()`"
    "uncopyable": {"policies_edit": ("class CameraPolicy", "import rlguard.runtime\n\n\n@rlguard.runtime.uncopyable\nclass CameraPolicy"),
                   "collect_edit": ("env = PendulumEnv()", "import rlguard.runtime\n\nrlguard.runtime.install()\nenv = PendulumEnv()")},
}


def test_the_camera_example_fails_as_its_finding_says(tmp_path):
    pytest.importorskip("torchrl")
    folder = _camera_example(tmp_path)
    done = _run_example(folder)
    assert done.returncode != 0
    assert "TypeError: cannot pickle '_thread.lock' object" in done.stderr
    checked = _check(folder)  # and the finding names the remedies tried below
    assert checked.returncode == 1
    assert "leave `policy_device=` out" in checked.stdout and "`@rlguard.runtime.uncopyable`" in checked.stdout


@pytest.mark.parametrize("remedy", REMEDIES)
def test_the_camera_example_runs_after_each_remedy_its_finding_names(tmp_path, remedy):
    """The remedy must remove the crash, not only silence the linter."""
    pytest.importorskip("torchrl")
    folder = _camera_example(tmp_path, **REMEDIES[remedy])
    checked = _check(folder)
    assert checked.returncode == 0, checked.stdout
    done = _run_example(folder)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("tensor(") == 4  # 256 frames in batches of 64, one mean reward each
