"""The README's first command lints examples/: each script shows its pattern, the clean one nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
