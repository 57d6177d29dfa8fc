"""rlguard check against a libcst parse-only pass, Fixit, TorchFix and ruff, on real code.

Prints a table of seconds and ratios to the parse-only baseline (a) and writes it as JSON.
Figures are ratios measured in the same run: the machines are noisy. Never a timed test.

    python benchmarks/lint_speed.py                       # torchrl + tensordict + sota-implementations
    python benchmarks/lint_speed.py --corpus sota         # user-style training scripts only
    python benchmarks/lint_speed.py --scale 1,4,16 --skip-peers   # growth with tree size
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _corpus import build_corpus, median_of, python_files, tool  # noqa: E402

PARSE_ONLY = """
import sys, libcst
for path in open(sys.argv[1]).read().splitlines():
    try:
        libcst.parse_module(open(path, 'rb').read())
    except Exception:
        pass
"""
TARGETS = {"a": 1.0, "b": 1.3, "c": 0.75, "d": 0.08, "e": 0.12}


def measure(root: str, repeats: int, peer_repeats: int, skip_peers: bool) -> dict:
    listing = os.path.join(root, "files.txt")
    files = python_files(os.path.join(root, "tree"))
    with open(listing, "w") as out:
        out.write("\n".join(files))
    tree = os.path.join(root, "tree")
    cache = os.path.join(root, "cache")
    rlguard = [sys.executable, "-m", "rlguard", "check", "--exit-zero", "--quiet"]
    rows = {
        "a": ("libcst parse only, 1 process", median_of(repeats, [sys.executable, "-c", PARSE_ONLY, listing], root)),
        "b": ("rlguard --no-cache --jobs 1", median_of(repeats, [*rlguard, "--no-cache", "--jobs", "1", tree], root, memory=True)),
        "c": ("rlguard --no-cache (all cores)", median_of(repeats, [*rlguard, "--no-cache", tree], root, memory=True)),
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


def one_file(root: str, repeats: int) -> dict:
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
        ratio = result["seconds"] / base
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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer-repeats", type=int, default=1, help="Fixit and TorchFix take minutes per run")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--scale", default="1", help="comma-separated copy factors, e.g. 1,4,16")
    parser.add_argument("--json", default=os.path.join("benchmarks", "results", "lint_speed.json"))
    args = parser.parse_args()
    results = {}
    for factor in (int(f) for f in args.scale.split(",")):
        with tempfile.TemporaryDirectory() as root:
            files, lines = build_corpus(os.path.join(root, "tree"), args.corpus.split(","), copies=factor)
            print(f"\n== scale {factor}x ==")
            rows = measure(root, args.repeats, args.peer_repeats, args.skip_peers or factor > 1)
            results[f"{factor}x"] = {"files": files, "lines": lines, "rows": report(rows, files, lines)}
            if factor == 1:
                results["one_file"] = one_file(root, args.repeats)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as out:
        json.dump(results, out, indent=2)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
