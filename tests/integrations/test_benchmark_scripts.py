"""The runtime benchmark scripts run, on tiny sizes, and write the JSON their figures come from.

No timing is asserted (figures live in the scripts' output, not in tests); this only keeps
the scripts from rotting between the runs that produce the numbers in the notes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torchrl")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def run(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def test_segment_tree_benchmark(tmp_path):
    out = tmp_path / "tree.json"
    run("segment_tree.py", "--capacity", "5000", "--batch", "16", "--repeats", "3", "--slow-repeats", "1",
        "--out", str(out))
    report = json.loads(out.read_text())
    for mode in ("interleaved", "back-to-back"):
        assert set(report[mode]["results_ms"]) >= {"rlguard (extension-free)", "textbook per item",
                                                    "python-list per item", "tensor-per-item"}
        assert all(value > 0 for value in report[mode]["ratios"].values())


def test_per_step_benchmark(tmp_path):
    out = tmp_path / "per.json"
    run("per_step.py", "--capacity", "2000", "--batch", "16", "--steps", "3", "--out", str(out))
    assert json.loads(out.read_text())["median_ms"]["rlguard"] > 0


def test_install_overhead_benchmark(tmp_path):
    run("install_overhead.py", "--repeats", "1", "--frames", "64", "--output", str(tmp_path))
    assert (tmp_path / "install_overhead.json").exists()


def test_pinned_h2d_benchmark_measures_or_says_what_it_needs(tmp_path):
    import torch

    out = tmp_path / "h2d.json"
    stdout = run("pinned_h2d.py", "--capacity", "256", "--batch", "16", "--obs-shape", "4", "--repeats", "2",
                 "--out", str(out))
    report = json.loads(out.read_text())
    if torch.cuda.is_available():
        assert set(report["results_ms"]) == {"pageable", "pinned"}
    else:
        assert report == {"skipped": report["skipped"]} and report["skipped"].startswith("needs CUDA")
        assert "needs CUDA" in stdout


def test_state_folder_trial(tmp_path):
    out = tmp_path / "state.json"
    run("state_folder.py", "--writers", "1", "--readers", "1", "--dumps", "2", "--runs", "1", "--kills", "2",
        "--out", str(out))
    report = json.loads(out.read_text())
    assert report["concurrent"]["dumps"] == {"complete": 2} and set(report["concurrent"]["loads"]) <= {"complete"}
    assert report["kills"]["after_kill"] == {"complete": 2}


def test_lint_speed_one_file_table(tmp_path):
    """The pre-commit case: its rows, with the targets the README quotes (figures are not asserted)."""
    out = tmp_path / "lint_speed.json"
    stdout = run("lint_speed.py", "--one-file-only", "--one-file-repeats", "1", "--json", str(out))
    rows = json.loads(out.read_text())["one_file"]
    assert {"python", "libcst", "unchanged", "cleared", "pattern", "cross-file"} <= set(rows)
    assert rows["cross-file"]["target"] == 6.0 and rows["pattern"]["target"] is None
    if "hook rlguard pattern" in rows:  # pre-commit and ruff are in the test extra
        assert all(rows[f"hook rlguard {case}"]["target_to_ruff"] == 1.6 for case in ("cleared", "pattern", "warm"))
    assert "rlguard check, warm, cross-file finding" in stdout
