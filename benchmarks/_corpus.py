"""Shared by the benchmark scripts: build a lint corpus from installed packages, time commands."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Sequence

SITE = sysconfig.get_paths()["purelib"]
SOURCES = {"torchrl": "torchrl", "tensordict": "tensordict", "sota": "sota-implementations"}


def build_corpus(destination: str, parts: Sequence[str], copies: int = 1) -> tuple[int, int]:
    """Copy the chosen installed trees (``copies`` times) into ``destination``; (files, lines)."""
    files = lines = 0
    for copy_index in range(copies):
        for part in parts:
            source = os.path.join(SITE, SOURCES[part])
            target = os.path.join(destination, f"copy{copy_index}", SOURCES[part])
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    for folder, _, names in os.walk(destination):
        for name in names:
            if name.endswith(".py"):
                files += 1
                with open(os.path.join(folder, name), "rb") as handle:
                    lines += handle.read().count(b"\n")
    return files, lines


def python_files(root: str) -> list[str]:
    return sorted(os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names if name.endswith(".py"))


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        process = psutil.Process(pid)
        members = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            pass
    return total


def timed(command: Sequence[str], cwd: str, memory: bool = False) -> tuple[float, int, int]:
    """(seconds, exit code, peak resident memory of the process tree in bytes, if asked)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    if memory:
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, _tree_rss(process.pid))
                stop.wait(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
    code = process.wait()
    elapsed = time.perf_counter() - start
    if memory:
        stop.set()
        sampler.join()
    return elapsed, code, peak


def median_of(repeats: int, command: Sequence[str], cwd: str, memory: bool = False, before=None) -> dict:
    runs = []
    for _ in range(repeats):
        if before is not None:
            before()
        runs.append(timed(command, cwd, memory))
    return _summary(runs, memory)


def interleaved(repeats: int, commands: dict[str, tuple[Sequence[str], bool]], cwd: str) -> dict[str, dict]:
    """Each command once per round, ``repeats`` rounds; with each run's ratio to the first command's run
    of the same round (``round_ratios``). A shared machine's speed drifts over minutes: commands timed in
    blocks one after the other compare different machines, runs side by side in a round the same one."""
    runs: dict[str, list[tuple[float, int, int]]] = {key: [] for key in commands}
    for _ in range(repeats):
        for key, (command, memory) in commands.items():
            runs[key].append(timed(command, cwd, memory))
    first = next(iter(commands))
    return {key: {**_summary(runs[key], memory),
                  "round_ratios": [round(run[0] / base[0], 3) for run, base in zip(runs[key], runs[first], strict=True)]}
            for key, (_, memory) in commands.items()}


def _summary(runs: list[tuple[float, int, int]], memory: bool) -> dict:
    return {
        "seconds": statistics.median(r[0] for r in runs),
        "runs": [round(r[0], 3) for r in runs],
        "exit_code": runs[-1][1],
        "peak_mb": round(max(r[2] for r in runs) / 2**20, 1) if memory else None,
    }


def tool(name: str) -> list[str]:
    """A console script from the running interpreter's environment."""
    return [os.path.join(os.path.dirname(sys.executable), name)]
