"""Reliability sweep: rlguard check and fix over real code nobody here wrote.

For each corpus: no crash or traceback, every unparsable file reported as RLG000 with a
line, no RLG999 internal error, and every file `rlguard fix --unsafe-fixes` rewrites still
parses. Corpora: the running interpreter's stdlib, installed torchrl/tensordict/torch/numpy,
and this repo's tests and examples. Prints a table and writes JSON.

    python benchmarks/sweep.py                     # all corpora
    python benchmarks/sweep.py --corpus stdlib
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

SITE = sysconfig.get_paths()["purelib"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPORA = {
    "stdlib": [sysconfig.get_paths()["stdlib"]],
    "torchrl+tensordict": [os.path.join(SITE, "torchrl"), os.path.join(SITE, "tensordict"), os.path.join(SITE, "sota-implementations")],
    "torch": [os.path.join(SITE, "torch")],
    "numpy": [os.path.join(SITE, "numpy")],
    "repo": [os.path.join(REPO, "tests"), os.path.join(REPO, "examples")],
}


def _copy(sources: list[str], destination: str) -> None:
    for source in sources:
        shutil.copytree(source, os.path.join(destination, os.path.basename(source)), symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc", "site-packages"))


def _snapshot(root: str) -> dict[str, bytes]:
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith((".py", ".pyi")):
                path = os.path.join(folder, name)
                try:
                    with open(path, "rb") as handle:
                        files[path] = handle.read()
                except OSError:
                    pass
    return files


def sweep(name: str, sources: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as root:
        _copy([s for s in sources if os.path.isdir(s)], root)
        before = _snapshot(root)
        start = time.perf_counter()
        check = subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "--format", "json", "."],
                               cwd=root, capture_output=True, text=True)
        check_seconds = time.perf_counter() - start
        findings = json.loads(check.stdout) if check.stdout.strip().startswith("[") else None
        fix = subprocess.run([sys.executable, "-m", "rlguard", "fix", "--no-cache", "--unsafe-fixes", "."],
                             cwd=root, capture_output=True, text=True)
        after = _snapshot(root)
    changed = [p for p in after if after[p] != before.get(p)]
    unparsable_fixes = []
    for path in changed:
        try:
            ast.parse(after[path])
        except (SyntaxError, ValueError) as error:
            unparsable_fixes.append(f"{os.path.relpath(path, root)}: {error}")
    codes: dict[str, int] = {}
    for finding in findings or []:
        codes[finding["code"]] = codes.get(finding["code"], 0) + 1
    return {
        "corpus": name,
        "files": len(before),
        "check_exit": check.returncode,
        "check_seconds": round(check_seconds, 1),
        "tracebacks": ("Traceback" in check.stderr) + ("Traceback" in fix.stderr),
        "fix_exit": fix.returncode,
        "findings_by_code": codes,
        "parse_errors_without_line": sum(1 for f in findings or [] if f["code"] == "RLG000" and not f["line"]),
        "files_fixed": len(changed),
        "fixed_files_not_parsing": unparsable_fixes,
        "skipped_lines": [line for line in check.stderr.splitlines() if ": skipped: " in line][:20],
        "ok": check.returncode in (0, 1) and fix.returncode in (0, 1) and findings is not None
        and "Traceback" not in check.stderr + fix.stderr and not unparsable_fixes and codes.get("RLG999", 0) == 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA), help="default: all")
    parser.add_argument("--json", default=os.path.join("benchmarks", "results", "sweep.json"))
    args = parser.parse_args()
    results = [sweep(name, CORPORA[name]) for name in (args.corpus or CORPORA)]
    print(f"{'corpus':22}{'files':>7}{'RLG000':>8}{'RLG999':>8}{'findings':>10}{'fixed':>7}{'bad fixes':>10}{'tracebacks':>11}{'secs':>7}  ok")
    for r in results:
        codes = r["findings_by_code"]
        print(f"{r['corpus']:22}{r['files']:7}{codes.get('RLG000', 0):8}{codes.get('RLG999', 0):8}{sum(codes.values()):10}"
              f"{r['files_fixed']:7}{len(r['fixed_files_not_parsing']):10}{r['tracebacks']:11}{r['check_seconds']:7}  {r['ok']}")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as out:
        json.dump(results, out, indent=2)
    print(f"wrote {args.json}")
    sys.exit(0 if all(r["ok"] for r in results) else 1)


if __name__ == "__main__":
    main()
