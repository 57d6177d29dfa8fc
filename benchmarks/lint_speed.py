"""rlguard check against a libcst parse-only pass, Fixit, TorchFix and ruff, on real code.

Prints a table of seconds and ratios to the parse-only baseline (a) and writes it as JSON.
Figures are ratios measured in the same run: the machines are noisy. Never a timed test.
(a), (b) and (c) run in rounds, one of each per round, and (b) and (c) are given as the median of
their rounds' ratios to (a): a shared machine's speed drifts over minutes, so commands timed in
blocks one after the other would compare different machines.

    python benchmarks/lint_speed.py                       # torchrl + tensordict + sota-implementations
    python benchmarks/lint_speed.py --corpus sota         # user-style training scripts only
    python benchmarks/lint_speed.py --scale 1,4,16 --skip-peers   # growth with tree size
    python benchmarks/lint_speed.py --one-file-only               # the pre-commit case alone

The one-file table is what a pre-commit hook feels: `rlguard check` of one file, as CPU time
(user + system, the child's own rusage: steadier than wall time on a shared machine) and as a
ratio to `python -c pass` timed in the same run. The project pins torchrl in its pyproject.toml,
as most do (otherwise the target version comes from the installed torchrl's metadata). The
children run with bytecode caching on, as an installed package does.

Its targets: a warm check of one file with a cross-file finding (RLG001 on a class defined in
another file) at most 6x `python -c pass`, and rlguard's pre-commit hook on a changed file with a
TorchRL pattern at most 1.6x ruff's hook on the same file. A changed file with a pattern has no
target of its own against `python -c pass`: importing libcst alone costs 6-8x.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _corpus import build_corpus, interleaved, median_of, python_files, tool  # noqa: E402

PARSE_ONLY = """
import sys, libcst
for path in open(sys.argv[1]).read().splitlines():
    try:
        libcst.parse_module(open(path, 'rb').read())
    except Exception:
        pass
"""
TARGETS = {"a": 1.0, "b": 1.0, "c": 0.55, "d": 0.05, "e": 0.12}  # issue 12: (b), (c) and warm (d)
ONE_FILE_TARGETS = {"unchanged": 2.5, "cleared": 3.0, "cross-file": 6.0}  # ratios to `python -c pass`
HOOK_TARGET = 1.6  # rlguard's pre-commit hook, as a ratio to ruff's on the same file
CLEARED = "import os\n\n\ndef main():\n    return os.getcwd()\n"  # no rule's tokens: the pre-filter clears it
PATTERN = "from torchrl.collectors import SyncDataCollector\n\ncollector = SyncDataCollector(None, None)\n"
# RLG001 across files: the class that holds a lock in one file, its deep copy in another.
POLICY = "import threading\n\n\nclass Policy:\n    def __init__(self):\n        self.lock = threading.Lock()\n"
TRAIN = "import copy\n\nfrom policy import Policy\n\nsnapshot = copy.deepcopy(Policy())\n"
HOOKS = """repos:
  - repo: local
    hooks:
      - {{id: rlguard, name: rlguard, entry: {python} -m rlguard check --force-exclude, language: system, types: [python], require_serial: true}}
      - {{id: ruff, name: ruff, entry: {ruff} check --no-cache --isolated, language: system, types: [python]}}
"""


def measure(root: str, repeats: int, peer_repeats: int, skip_peers: bool) -> dict:
    listing = os.path.join(root, "files.txt")
    files = python_files(os.path.join(root, "tree"))
    with open(listing, "w") as out:
        out.write("\n".join(files))
    tree = os.path.join(root, "tree")
    cache = os.path.join(root, "cache")
    rlguard = [sys.executable, "-m", "rlguard", "check", "--exit-zero", "--quiet"]
    cold = interleaved(repeats, {
        "a": ([sys.executable, "-c", PARSE_ONLY, listing], False),
        "b": ([*rlguard, "--no-cache", "--jobs", "1", tree], True),
        "c": ([*rlguard, "--no-cache", tree], True),
    }, root)
    rows = {
        "a": ("libcst parse only, 1 process", cold["a"]),
        "b": ("rlguard --no-cache --jobs 1", cold["b"]),
        "c": ("rlguard --no-cache (all cores)", cold["c"]),
    }
    median_of(1, [*rlguard, "--cache-dir", cache, tree], root)  # fill the cache
    rows["d"] = ("rlguard, warm cache", median_of(repeats, [*rlguard, "--cache-dir", cache, tree], root))

    def touch_one() -> None:
        with open(files[len(files) // 2], "a") as out:
            out.write(f"\n# touched {time.time()}\n")

    rows["e"] = ("rlguard, one file touched", median_of(repeats, [*rlguard, "--cache-dir", cache, tree], root, before=touch_one))
    if not skip_peers:
        rows["f"] = ("fixit lint", median_of(peer_repeats, [*tool("fixit"), "lint", tree], root))
        rows["g"] = ("torchfix", median_of(peer_repeats, [*tool("torchfix"), tree], root))
        rows["h"] = ("ruff check", median_of(repeats, [*tool("ruff"), "check", "--no-cache", "--isolated", "--exit-zero", tree], root))
    return rows


def _child_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    return env


def cpu_time(command: list[str], cwd: str, before=None) -> tuple[float, float]:
    """(CPU seconds of the child and its children, wall seconds) for one run."""
    if before is not None:
        before()
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=_child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = 0  # reaped above
    return usage.ru_utime + usage.ru_stime, wall


def _appender(path: str):
    def change() -> None:
        with open(path, "a") as out:
            out.write(f"# changed {time.time()}\n")
    return change


def one_file(repeats: int) -> dict:
    """The pre-commit case: one file, against `python -c pass` and against ruff's hook, in one run."""
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "pyproject.toml"), "w") as out:
            out.write('[project]\nname = "bench"\nversion = "0"\ndependencies = ["torchrl==0.14.1"]\n')
        files = (("unchanged.py", PATTERN), ("cleared.py", CLEARED), ("pattern.py", PATTERN), ("policy.py", POLICY),
                 ("train.py", TRAIN))
        for name, text in files:
            with open(os.path.join(root, name), "w") as out:
                out.write(text)
        check = [sys.executable, "-m", "rlguard", "check", "--exit-zero"]
        cases = {
            "python": ([sys.executable, "-c", "pass"], None),
            # The floor of any run that parses: a TorchRL pattern needs libcst, whose import alone costs this.
            "libcst": ([sys.executable, "-c", "import libcst"], None),
            "unchanged": ([*check, "unchanged.py"], None),
            "cleared": ([*check, "cleared.py"], _appender(os.path.join(root, "cleared.py"))),
            "pattern": ([*check, "pattern.py"], _appender(os.path.join(root, "pattern.py"))),
            "cross-file": ([*check, "train.py"], None),
        }
        _require_finding([*check, "train.py"], root, "train.py:5:12: RLG001")  # the row measures what it says
        for command, _ in cases.values():  # warm up: bytecode written, cache filled
            cpu_time(command, root)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(repeats):  # interleaved, so a busy moment of the machine hits every case alike
            for name, (command, before) in cases.items():
                runs[name].append(cpu_time(command, root, before))
        rows = {name: {"cpu_seconds": statistics.median(c for c, _ in r), "wall_seconds": statistics.median(w for _, w in r)}
                for name, r in runs.items()}
        rows.update(_hooks(root, repeats))
    base = rows["python"]["cpu_seconds"]
    print(f"{'one file':48}{'CPU s':>8}{'ratio':>8}{'target':>9}{'wall s':>9}")
    for name, row in rows.items():
        row["ratio"] = round(row["cpu_seconds"] / base, 2)
        target = ONE_FILE_TARGETS.get(name)
        row["target"] = target
        print(f"{LABELS[name]:48}{row['cpu_seconds']:8.3f}{row['ratio']:8.2f}{(f'<= {target}' if target else ''):>9}"
              f"{row['wall_seconds']:9.3f}")
    for name, (hook, path, _, label) in HOOK_CASES.items():
        if hook == "rlguard" and name in rows:
            row = rows[name]
            row["ratio_to_ruff"] = round(row["cpu_seconds"] / rows[f"hook ruff {path}"]["cpu_seconds"], 2)
            row["target_to_ruff"] = HOOK_TARGET
            print(f"{label + ' / ruff hook':48}{'':8}{row['ratio_to_ruff']:8.2f}{f'<= {HOOK_TARGET}':>9}")
    return rows


def _require_finding(command: list[str], cwd: str, expected: str) -> None:
    done = subprocess.run(command, cwd=cwd, env=_child_env(), capture_output=True, text=True)
    if expected not in done.stdout:
        raise SystemExit(f"`{' '.join(command[2:])}` did not report {expected!r}:\n{done.stdout}{done.stderr}")


# `pre-commit run HOOK --files FILE`: row -> (hook, file, whether the file changes before each run, label).
# Each rlguard row is also compared with ruff's hook on the same file.
HOOK_CASES = {
    "hook rlguard cleared": ("rlguard", "cleared.py", True, "rlguard hook, changed, pre-filter clears"),  # most of a commit
    "hook rlguard pattern": ("rlguard", "pattern.py", True, "rlguard hook, changed, TorchRL pattern"),  # parsed: libcst
    # Right after the row above, on the same text: served from the cache (a second try of the same commit).
    "hook rlguard warm": ("rlguard", "pattern.py", False, "rlguard hook, TorchRL pattern, checked before"),
    # ruff's hook runs with --no-cache: a change makes no difference to it.
    "hook ruff pattern.py": ("ruff", "pattern.py", False, "ruff hook, TorchRL pattern file"),
    "hook ruff cleared.py": ("ruff", "cleared.py", False, "ruff hook, file the pre-filter clears"),
}
LABELS = {"python": "python -c pass", "libcst": "python -c 'import libcst'", "unchanged": "rlguard check, unchanged file, warm",
          "cleared": "rlguard check, changed, pre-filter clears", "pattern": "rlguard check, changed, TorchRL pattern",
          "cross-file": "rlguard check, warm, cross-file finding", **{name: case[3] for name, case in HOOK_CASES.items()}}


def _hooks(root: str, repeats: int) -> dict:
    """`pre-commit run HOOK --files F` for rlguard's hook and ruff's on the same files (wall and CPU time),
    interleaved; a changed file is appended to before each run, as a commit's file has changed."""
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        ruff = None
    if ruff is None:
        print("(pre-commit or ruff not installed: no hook figures)")
        return {}
    env = _child_env()
    for command in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(command, cwd=root, env=env, check=True)
    with open(os.path.join(root, ".pre-commit-config.yaml"), "w") as out:
        out.write(HOOKS.format(python=sys.executable, ruff=ruff))
    cases = {name: ([sys.executable, "-m", "pre_commit", "run", hook, "--files", path],
                    _appender(os.path.join(root, path)) if changed else None)
             for name, (hook, path, changed, _) in HOOK_CASES.items()}
    for command, before in cases.values():
        cpu_time(command, root, before)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, (command, before) in cases.items():
            runs[name].append(cpu_time(command, root, before))
    return {name: {"cpu_seconds": statistics.median(c for c, _ in r), "wall_seconds": statistics.median(w for _, w in r)}
            for name, r in runs.items()}


def one_file_alone(root: str, repeats: int) -> dict:
    """(f) one corpus file checked alone, cold (no cache) and warm, against a libcst parse of it alone.

    The file is the corpus script that reaches the most first-party files through its imports:
    the run must read only what the file reaches, not the tree around it.
    """
    tree = os.path.join(root, "tree")
    path = _most_reaching_script(tree)
    listing = os.path.join(root, "one_file.txt")
    with open(listing, "w") as out:
        out.write(path)
    rlguard = [sys.executable, "-m", "rlguard", "check", "--exit-zero", "--quiet"]
    cache = os.path.join(root, "one_file_cache")
    parse = median_of(repeats, [sys.executable, "-c", PARSE_ONLY, listing], root)
    cold = median_of(repeats, [*rlguard, "--no-cache", "--jobs", "1", path], root)
    median_of(1, [*rlguard, "--cache-dir", cache, "--jobs", "1", path], root)  # fill the cache
    warm = median_of(repeats, [*rlguard, "--cache-dir", cache, "--jobs", "1", path], root)
    row = {"file": os.path.relpath(path, tree), "parse_seconds": parse["seconds"], "cold_seconds": cold["seconds"],
           "warm_seconds": warm["seconds"], "cold_ratio": round(cold["seconds"] / parse["seconds"], 3),
           "warm_ratio": round(warm["seconds"] / parse["seconds"], 3)}
    print(f"(f) one file alone: {row['file']}: libcst parse {parse['seconds']:.2f} s, rlguard cold "
          f"{cold['seconds']:.2f} s ({row['cold_ratio']:.2f}x), warm {warm['seconds']:.2f} s ({row['warm_ratio']:.2f}x)")
    return row


def _most_reaching_script(tree: str) -> str:
    """The sota-implementations script (else any file) with the most sibling-module imports."""
    files = python_files(tree)
    scripts = [f for f in files if f"{os.sep}sota-implementations{os.sep}" in f] or files

    def reach(path: str) -> int:
        folder = os.path.dirname(path)
        with open(path, encoding="utf-8", errors="replace") as handle:
            words = set(handle.read().split())
        return sum(name[:-3] in words for name in os.listdir(folder) if name.endswith(".py"))

    return max(scripts, key=lambda path: (reach(path), path))


def report(rows: dict, files: int, lines: int) -> dict:
    base = rows["a"][1]["seconds"]
    table = {}
    print(f"corpus: {files} files, {lines} lines")
    print(f"{'':3}{'what':34}{'seconds':>9}{'ratio to (a)':>14}{'target':>9}{'peak MB':>9}")
    for key, (label, result) in rows.items():
        # Timed in rounds beside (a): the median of the rounds' ratios; the others, against (a)'s median.
        ratio = statistics.median(result["round_ratios"]) if "round_ratios" in result else result["seconds"] / base
        target = TARGETS.get(key)
        table[key] = {"what": label, **result, "ratio": round(ratio, 3), "target": target,
                      "seconds_per_1000_lines": round(result["seconds"] * 1000 / max(lines, 1), 4)}
        print(f"({key}) {label:34}{result['seconds']:9.2f}{ratio:14.3f}{(f'<= {target}' if target and key != 'a' else ''):>9}"
              f"{(result['peak_mb'] or ''):>9}")
    if "f" in table and "g" in table:
        print(f"(b) is {table['f']['seconds'] / table['b']['seconds']:.1f}x faster than fixit and "
              f"{table['g']['seconds'] / table['b']['seconds']:.1f}x faster than torchfix (target: 8x)")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="torchrl,tensordict,sota", help="comma-separated: torchrl, tensordict, sota")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peer-repeats", type=int, default=1, help="Fixit and TorchFix take minutes per run")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--scale", default="1", help="comma-separated copy factors, e.g. 1,4,16")
    parser.add_argument("--json", default=os.path.join("benchmarks", "results", "lint_speed.json"))
    parser.add_argument("--one-file-repeats", type=int, default=15)
    parser.add_argument("--one-file-only", action="store_true", help="only the one-file (pre-commit) table")
    args = parser.parse_args()
    results: dict = {"one_file": one_file(args.one_file_repeats)}
    for factor in (int(f) for f in ([] if args.one_file_only else args.scale.split(","))):
        with tempfile.TemporaryDirectory() as root:
            files, lines = build_corpus(os.path.join(root, "tree"), args.corpus.split(","), copies=factor)
            print(f"\n== scale {factor}x ==")
            rows = measure(root, args.repeats, args.peer_repeats, args.skip_peers or factor > 1)
            results[f"{factor}x"] = {"files": files, "lines": lines, "rows": report(rows, files, lines)}
            if factor == 1:
                results[f"{factor}x"]["one_file_alone"] = one_file_alone(root, args.repeats)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as out:
        json.dump(results, out, indent=2)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
