"""``path:line:col: CODE message`` lines, then a summary line."""

from __future__ import annotations

from collections import Counter

from rlguard.engine.findings import Finding, Report


def line(finding: Finding) -> str:
    suffix = " [*]" if finding.fix and finding.fix.applicability == "safe" else ""
    return f"{finding.path}:{finding.line}:{finding.span.column}: {finding.code} {finding.message}{suffix}"


def summary(report: Report) -> str:
    count = len(report.findings) + len(report.unused_suppressions)  # RLG100 counts: it sets exit 1 too
    fixable = sum(1 for f in report.findings if f.fix and f.fix.applicability == "safe")
    files = _plural(report.files_checked, "file")
    text = f"Found {_plural(count, 'finding')} in {files}." if count else f"All checks passed ({files})."
    if fixable:
        text += f" {fixable} fixable with `rlguard fix` ([*])."
    return text


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def render(report: Report) -> str:
    lines = [line(f) for f in [*report.findings, *report.unused_suppressions]]
    lines.append(summary(report))
    return "\n".join(lines) + "\n"


def statistics(report: Report) -> str:
    counts = Counter((f.code, f.name) for f in report.findings)
    rows = [f"{count:5d}  {code}  {name}" for (code, name), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(rows) + ("\n" if rows else "")
