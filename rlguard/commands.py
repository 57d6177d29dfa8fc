"""What ``rlguard check`` and ``rlguard fix`` do once arguments are parsed."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from rlguard.config import (Config, ConfigError, config_file, config_for, load_config, project_root, validate_codes,
                            validate_version)
from rlguard.engine.discovery import DiscoveryError, discover, is_notebook
from rlguard.engine.findings import Finding, Report
from rlguard.engine.runner import Project, RunOptions, check, display_path
from rlguard.engine.target import resolve_target
from rlguard.report import formatter, text

if TYPE_CHECKING:
    from rlguard.fix.run import FileFix

# The fixer, the SARIF reporter and the notebook reader are imported where they are used:
# `rlguard check` of Python files with the default text output, the pre-commit case, needs none.

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
    if getattr(args, "watch", False):
        return _watch(args)
    return _lint_once(args)


def _watch(args: argparse.Namespace) -> int:
    from rlguard.watch import WatchUnavailable, watch

    if "-" in args.paths or args.add_noqa or args.output_file:
        print("error: --watch checks files as they change: it takes neither `-`, --add-noqa nor --output-file",
              file=sys.stderr)
        return EXIT_USAGE
    missing = [path for path in args.paths if not os.path.exists(path)]
    if missing:
        print(f"error: {missing[0]}: no such file or directory", file=sys.stderr)
        return EXIT_USAGE
    try:
        return watch(args.paths, functools.partial(_lint_once, args))
    except WatchUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE


def _lint_once(args: argparse.Namespace) -> int:
    try:
        select = validate_codes(args.select, "--select") if args.select is not None else None
        extend_select = validate_codes(args.extend_select, "--extend-select")
        ignore = validate_codes(args.ignore, "--ignore")
        flag = validate_version(args.target_torchrl, "--target-torchrl")
        stdin = _stdin(args)
        groups = _groups(args, stdin)
    except (ConfigError, DiscoveryError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "add_noqa", False) and (stdin or args.fix or args.diff):
        print("error: --add-noqa writes the files it checks: it takes neither `-`, --fix nor --diff", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs is not None and args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    runs: list[tuple[Report, Project]] = []
    for config, files in groups:
        target = resolve_target(flag, config.target_torchrl, config.root)
        cache_dir = args.cache_dir or os.path.join(project_root(config.root) or config.root, ".rlguard_cache")
        options = RunOptions(select=select, extend_select=extend_select, ignore=ignore, jobs=args.jobs, cache_dir=cache_dir,
                             use_cache=not args.no_cache, sources=dict([stdin]) if stdin else None)
        try:
            runs.append(check(files, config, options, target, show_unused=args.show_unused_noqa))
        except DiscoveryError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_USAGE
    if getattr(args, "add_noqa", False):
        return _add_noqa(runs)
    if stdin and (args.command == "fix" or getattr(args, "fix", False)):
        return _fix_stdin(args, stdin, runs)
    if args.command == "fix" or getattr(args, "fix", False) or args.diff:
        return _fix(args, runs)
    try:
        return _report(args, runs)
    except ConfigError as error:  # --output-file cannot be written
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE


def _stdin(args: argparse.Namespace) -> tuple[str, bytes] | None:
    """``-`` as the only path: the source comes from stdin, named by ``--stdin-filename``."""
    if "-" not in args.paths:
        if args.stdin_filename:
            raise ConfigError("--stdin-filename needs `-` as the path")
        return None
    if args.paths != ["-"]:
        raise ConfigError("`-` (read stdin) cannot be combined with other paths")
    if is_notebook(args.stdin_filename or ""):
        raise ConfigError("notebooks cannot be read from stdin; name the .ipynb file instead")
    return display_path(args.stdin_filename or "stdin.py"), sys.stdin.buffer.read()


def _groups(args: argparse.Namespace, stdin: tuple[str, bytes] | None) -> list[tuple[Config, list[str]]]:
    """The files to check, grouped by the configuration each one gets (its nearest ``[tool.rlguard]``).

    A file found in a folder is left out when its own configuration excludes it; a file named
    explicitly only with ``--force-exclude`` (as pre-commit names every file)."""
    chosen = config_file(args.config) if args.config else None  # --config: one configuration for every file
    configure = (lambda _: chosen) if chosen is not None else config_for
    for path in [stdin[0]] if stdin else args.paths or ["."]:
        configure(path)  # a broken configuration is an error even where no file is found
    if stdin is not None:
        found, explicit = [stdin[0]], {stdin[0]}
    else:
        found = discover(args.paths).files
        explicit = {display_path(p) for p in args.paths if not os.path.isdir(p)}
    groups: dict[str | None, tuple[Config, list[str]]] = {}
    for path in sorted({display_path(p) for p in found}):
        config = configure(path)
        if (args.force_exclude or path not in explicit) and config.excludes(path):
            continue
        groups.setdefault(config.path, (config, []))[1].append(path)
    return [groups[key] for key in sorted(groups, key=lambda k: k or "")]


def _merged(runs: list[tuple[Report, Project]]) -> Report:
    merged = Report()
    for report, _ in runs:
        merged.findings.extend(report.findings)
        merged.unused_suppressions.extend(report.unused_suppressions)
        merged.files_checked += report.files_checked
        merged.files_parsed += report.files_parsed
        merged.notes.extend(report.notes)
    merged.findings.sort(key=Finding.sort_key)
    merged.unused_suppressions.sort(key=Finding.sort_key)
    return merged


def _report(args: argparse.Namespace, runs: list[tuple[Report, Project]]) -> int:
    report = _merged(runs)
    fmt = args.output_format
    with _output(args) as (out, color):
        if args.statistics and fmt in text.STYLES:
            out.write(text.statistics([*report.findings, *report.unused_suppressions]))  # the table alone
        elif fmt in text.STYLES:
            out.write(text.render(report, fmt, color, quiet=args.quiet))
        elif fmt == "sarif":
            from rlguard.report import sarif
            from rlguard.fix.edits import fix_edits

            # SARIF carries each fix's edits, which takes the parsed project, not only the findings.
            edits = {finding: e for r, project in runs for finding, e in fix_edits(r, project).items()}
            out.write(sarif.render(report, fixes=edits))
        else:
            out.write(formatter(fmt)(report))
        if args.statistics and fmt not in text.STYLES:  # never inside machine-read output
            sys.stderr.write(text.statistics([*report.findings, *report.unused_suppressions]))
    has_findings = bool(report.findings or report.unused_suppressions)
    return EXIT_FINDINGS if has_findings and not args.exit_zero else EXIT_CLEAN


@contextlib.contextmanager
def _output(args: argparse.Namespace) -> Iterator[tuple[TextIO, bool]]:
    """Where the report goes (``--output-file`` or stdout), and whether it may be coloured."""
    if args.output_file:
        try:
            handle = open(args.output_file, "w", encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"{args.output_file}: cannot write: {error.strerror or error}") from None
        with handle:
            yield handle, args.color == "always"
        return
    yield sys.stdout, use_color(args.color, sys.stdout)


def use_color(choice: str, stream: TextIO) -> bool:
    """``--color always|never``; ``auto`` colours a terminal unless ``NO_COLOR`` is set (no-color.org)."""
    if choice != "auto":
        return choice == "always"
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def _fix_stdin(args: argparse.Namespace, stdin: tuple[str, bytes], runs: list[tuple[Report, Project]]) -> int:
    """``rlguard fix -``: the fixed source to stdout (unchanged if nothing applies), the rest to stderr."""
    from rlguard.fix.run import FixRequest, fix_bytes

    path, data = stdin
    if not runs:  # excluded (--force-exclude): pass the text through untouched
        sys.stdout.buffer.write(data)
        return EXIT_CLEAN
    _, project = runs[0]
    outcome = fix_bytes(path, data, FixRequest(project.settings, project.index, args.unsafe_fixes, project.config,
                                               args.show_unused_noqa))
    sys.stdout.buffer.write(outcome.fixed or data)
    sys.stdout.flush()
    if outcome.error:
        print(f"{path}: not fixed: {outcome.error}", file=sys.stderr)
    for finding, reason in outcome.remaining:
        print(f"{text.line(finding)}  ({reason})", file=sys.stderr)
    return EXIT_FINDINGS if outcome.remaining and not args.exit_zero else EXIT_CLEAN


def _fix(args: argparse.Namespace, runs: list[tuple[Report, Project]]) -> int:
    applied: Counter = Counter()
    changed = 0
    remaining: list[tuple[Finding, str]] = []
    for report, project in runs:
        changed += _fix_run(args, report, project, applied, remaining)
    _fix_summary(args, applied, changed, remaining)
    if args.exit_zero:
        return EXIT_CLEAN
    if args.diff:
        return EXIT_FINDINGS if changed else EXIT_CLEAN
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def _fix_run(args: argparse.Namespace, report: Report, project: Project, applied: Counter,
             remaining: list[tuple[Finding, str]]) -> int:
    """Fix one configuration's files; counts go into ``applied`` and ``remaining``. Returns the files changed."""
    from rlguard.engine.workers import default_jobs, run_all
    from rlguard.fix.run import FileFix, FixRequest, fix_file
    from rlguard.fix.write import WriteError, write_if_unchanged

    # Unused suppressions are reported, and so fixed, only with --show-unused-noqa.
    fixable = sorted({f.path for f in [*report.findings, *report.unused_suppressions]
                      if f.fix and (f.fix.applicability == "safe" or args.unsafe_fixes)})
    for path in [p for p in fixable if is_notebook(p)]:
        print(f"{path}: not fixed: rlguard does not rewrite notebooks; apply the fixes in the notebook", file=sys.stderr)
    fixable = [p for p in fixable if not is_notebook(p)]
    request = FixRequest(project.settings, project.index, args.unsafe_fixes, project.config, args.show_unused_noqa)
    outcomes = run_all(functools.partial(fix_file, request=request), fixable, args.jobs or default_jobs(),
                       lambda path, reason: FileFix(path, error=reason))
    by_path = {o.path: o for o in outcomes}
    remaining.extend((f, _unfixed_reason(f)) for f in [*report.findings, *report.unused_suppressions] if f.path not in by_path)
    changed = 0
    for outcome in outcomes:
        remaining.extend(outcome.remaining)
        if outcome.error:
            print(f"{outcome.path}: not fixed: {outcome.error}", file=sys.stderr)
            continue
        if outcome.fixed is None or outcome.original is None:
            continue
        if args.diff:
            sys.stdout.write(_diff(outcome))
        else:
            try:
                write_if_unchanged(outcome.path, outcome.original, outcome.fixed)
            except WriteError as error:
                print(f"{outcome.path}: not fixed: {error}", file=sys.stderr)
                continue
        changed += 1
        applied.update(outcome.applied)
    return changed


# Findings a ``noqa`` cannot silence: the file does not parse, was not checked, or names an unknown code.
_NOT_SUPPRESSIBLE = ("RLG000", "RLG100", "RLG998")


def _add_noqa(runs: list[tuple[Report, Project]]) -> int:
    """``check --add-noqa``: each finding's line gets ``# noqa: CODE`` (as ruff's ``--add-noqa``), so a
    project can adopt rlguard and silence what it already has. Notebooks are not rewritten. Exit 0."""
    from rlguard.engine.parse import ParseError, decode, parse
    from rlguard.fix.noqa import add_noqa
    from rlguard.fix.write import WriteError, write_if_unchanged

    added = 0
    for report, project in runs:
        by_path: dict[str, dict[int, set[str]]] = {}
        for finding in report.findings:
            if finding.code not in _NOT_SUPPRESSIBLE and not is_notebook(finding.path):
                by_path.setdefault(finding.path, {}).setdefault(finding.line, set()).add(finding.code)
        for path, codes in sorted(by_path.items()):
            data = project.contents.get(path)
            if data is None:
                continue
            source = decode(data)
            if isinstance(source, ParseError):
                continue
            text, changed, skipped = add_noqa(source.text, codes)
            for line in skipped:
                print(f"{path}:{line}: no noqa added: the line ends inside a string", file=sys.stderr)
            new = text.encode(source.encoding)
            if not changed or isinstance(parse(source._replace(text=text)), ParseError):
                continue
            try:
                write_if_unchanged(path, data, new)
            except WriteError as error:
                print(f"{path}: no noqa added: {error}", file=sys.stderr)
                continue
            added += changed
    print(f"Added {added} noqa directive{'s' if added != 1 else ''}.", file=sys.stderr)
    return EXIT_CLEAN


def _unfixed_reason(finding: Finding) -> str:
    if finding.fix is None:
        return "no automatic fix"
    if is_notebook(finding.path):
        return "in a notebook; apply the fix by hand"
    return "unsafe fix; apply with --unsafe-fixes"


def _diff(outcome: FileFix) -> str:
    import difflib

    assert outcome.original is not None and outcome.fixed is not None, "only changed files are diffed"
    before = outcome.original.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    after = outcome.fixed.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    name = os.path.relpath(outcome.path).replace(os.sep, "/")  # `a/x.py`, as git writes diff headers
    lines = list(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}"))
    # As diff(1) does, mark a last line without a newline, so output stays line-oriented.
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _fix_summary(args: argparse.Namespace, applied: Counter, changed: int, remaining: list) -> None:
    """What was fixed, then what remains. ``--quiet`` keeps only the remaining findings, one a line,
    as ``ruff check --fix --quiet`` prints its remaining diagnostics: exit 1 then always says why."""
    out = sys.stderr if args.diff else sys.stdout
    ordered = sorted(remaining, key=lambda fr: fr[0].sort_key())
    if args.quiet:
        for finding, reason in ordered:
            print(f"{text.line(finding)}  ({reason})", file=out)
        return
    verb = "Would fix" if args.diff else "Fixed"
    total = sum(applied.values())
    per_rule = ", ".join(f"{code}: {n}" for code, n in sorted(applied.items()))
    print(f"{verb} {total} finding{'s' if total != 1 else ''} in {changed} file{'s' if changed != 1 else ''}"
          + (f" ({per_rule})." if per_rule else "."), file=out)
    if remaining:
        print(f"{len(remaining)} remaining:", file=out)
        for finding, reason in ordered:
            print(f"  {text.line(finding)}  ({reason})", file=out)
