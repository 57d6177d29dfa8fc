"""What ``rlguard check`` and ``rlguard fix`` do once arguments are parsed."""

from __future__ import annotations

import argparse
import difflib
import functools
import os
import sys
from collections import Counter

from rlguard.config import ConfigError, load_config, validate_codes, validate_version
from rlguard.engine.discovery import DiscoveryError
from rlguard.engine.findings import Report
from rlguard.engine.runner import Project, RunOptions, check
from rlguard.engine.target import resolve_target
from rlguard.engine.workers import default_jobs, run_all
from rlguard.fix.run import FileFix, FixRequest, fix_file
from rlguard.fix.write import WriteError, write_if_unchanged
from rlguard.report import FORMATS, sarif, text
from rlguard.report.sarif_fixes import fix_edits

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def run_doctor(args: argparse.Namespace) -> int:
    from rlguard import doctor

    try:
        config = load_config(args.project or ".")
        flag = validate_version(args.target_torchrl, "--target-torchrl")
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.project and not os.path.exists(args.project):
        print(f"error: {args.project}: no such file or directory", file=sys.stderr)
        return EXIT_USAGE
    items = doctor.diagnose(config, resolve_target(flag, config.target_torchrl, config.root), args.project, args.extension_path)
    sys.stdout.write(doctor.render_json(items) if args.format == "json" else doctor.render_text(items))
    return EXIT_FINDINGS if any(item.verdict == "fail" for item in items) else EXIT_CLEAN


def run_lint(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.paths[0] if args.paths else ".")
        select = validate_codes(args.select, "--select") if args.select else None
        ignore = validate_codes(args.ignore, "--ignore")
        flag = validate_version(args.target_torchrl, "--target-torchrl")
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs is not None and args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    target = resolve_target(flag, config.target_torchrl, config.root)
    options = RunOptions(select=select, ignore=ignore, jobs=args.jobs, cache_dir=args.cache_dir, use_cache=not args.no_cache)
    try:
        report, project = check(args.paths, config, options, target, show_unused=getattr(args, "show_unused_noqa", False))
    except DiscoveryError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    for path, reason in project.skipped:
        print(f"{path}: skipped: {reason}", file=sys.stderr)
    if args.command == "fix" or getattr(args, "fix", False) or args.diff:
        return _fix(args, report, project)
    return _report(args, report, project)


def _report(args: argparse.Namespace, report: Report, project: Project) -> int:
    if args.format == "text" and args.quiet:
        sys.stdout.write("".join(text.line(f) + "\n" for f in [*report.findings, *report.unused_suppressions]))
    elif args.format == "sarif":
        # SARIF carries each fix's edits, which takes the parsed project, not only the findings.
        sys.stdout.write(sarif.render(report, fixes=fix_edits(report, project)))
    else:
        sys.stdout.write(FORMATS[args.format](report))
    if args.statistics:
        sys.stdout.write(text.statistics(report))
    has_findings = bool(report.findings or report.unused_suppressions)
    return EXIT_FINDINGS if has_findings and not args.exit_zero else EXIT_CLEAN


def _fix(args: argparse.Namespace, report: Report, project: Project) -> int:
    fixable = sorted({f.path for f in report.findings if f.fix and (f.fix.applicability == "safe" or args.unsafe_fixes)})
    request = FixRequest(project.settings, project.index, args.unsafe_fixes, project.config)
    outcomes = run_all(functools.partial(fix_file, request=request), fixable, args.jobs or default_jobs(),
                       lambda path, reason: FileFix(path, error=reason))
    by_path = {o.path: o for o in outcomes}
    remaining = [(f, "no automatic fix" if f.fix is None else "unsafe fix; apply with --unsafe-fixes")
                 for f in report.findings if f.path not in by_path]
    applied: Counter = Counter()
    changed = 0
    for outcome in outcomes:
        remaining.extend(outcome.remaining)
        if outcome.error:
            print(f"{outcome.path}: not fixed: {outcome.error}", file=sys.stderr)
            continue
        if outcome.fixed is None:
            continue
        if args.diff:
            sys.stdout.write(_diff(outcome))
            changed += 1
            applied.update(outcome.applied)
            continue
        try:
            write_if_unchanged(outcome.path, outcome.original, outcome.fixed)
        except WriteError as error:
            print(f"{outcome.path}: not fixed: {error}", file=sys.stderr)
            continue
        changed += 1
        applied.update(outcome.applied)
    if not args.quiet:
        _fix_summary(args, applied, changed, remaining)
    if args.diff:
        return EXIT_FINDINGS if changed else EXIT_CLEAN
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def _diff(outcome: FileFix) -> str:
    before = outcome.original.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    after = outcome.fixed.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    name = os.path.relpath(outcome.path).replace(os.sep, "/")  # `a/x.py`, as git writes diff headers
    lines = list(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}"))
    # As diff(1) does, mark a last line without a newline, so output stays line-oriented.
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _fix_summary(args: argparse.Namespace, applied: Counter, changed: int, remaining: list) -> None:
    out = sys.stderr if args.diff else sys.stdout
    verb = "Would fix" if args.diff else "Fixed"
    total = sum(applied.values())
    per_rule = ", ".join(f"{code}: {n}" for code, n in sorted(applied.items()))
    print(f"{verb} {total} finding{'s' if total != 1 else ''} in {changed} file{'s' if changed != 1 else ''}"
          + (f" ({per_rule})." if per_rule else "."), file=out)
    if remaining:
        print(f"{len(remaining)} remaining:", file=out)
        for finding, reason in sorted(remaining, key=lambda fr: fr[0].sort_key()):
            print(f"  {text.line(finding)}  ({reason})", file=out)
