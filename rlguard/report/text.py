"""Text output: each finding, then a summary line.

Three styles: ``text`` (the default) puts what is wrong and why on the first line and the
remedy on an indented second line; ``concise`` keeps one short line per finding; ``full`` joins
message and remedy on one line. Colour is the caller's choice (a TTY without ``NO_COLOR``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rlguard.engine.findings import Finding, Report

STYLES = ("text", "concise", "full")
_RESET = "\033[0m"
_BOLD, _RED, _CYAN, _DIM = "\033[1m", "\033[31m", "\033[36m", "\033[2m"


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color and text else text


def _safe_fix(finding: Finding) -> bool:
    return finding.fix is not None and finding.fix.applicability == "safe"


def _unsafe_fix(finding: Finding) -> bool:
    return finding.fix is not None and finding.fix.applicability == "unsafe"


def line(finding: Finding, style: str = "concise", color: bool = False) -> str:
    """One finding: ``path:line:col: CODE message [*]``, and for ``text`` its remedy below."""
    where = _paint(f"{finding.location}:", _BOLD, color)
    code = _paint(finding.code, _BOLD + _RED, color)
    message = finding.full_message if style == "full" else finding.message
    mark = " " + _paint("[*]", _CYAN, color) if _safe_fix(finding) else ""
    first = f"{where} {code} {message}{mark}"
    if style == "text" and finding.remedy:
        return first + "\n" + _paint(f"    {finding.remedy_sentence}", _DIM, color)
    return first


def summary(report: Report) -> list[str]:
    """``Found N findings in M files (K files checked).``, plus what ``rlguard fix`` can do about them."""
    everything = [*report.findings, *report.unused_suppressions]  # RLG100 counts: it sets exit 1 too
    checked = _plural(report.files_checked, "file")
    if not everything:
        return [f"All checks passed ({checked} checked)."]
    files = len({f.path for f in everything})
    lines = [f"Found {_plural(len(everything), 'finding')} in {_plural(files, 'file')} ({checked} checked)."]
    safe = sum(1 for f in report.findings if _safe_fix(f))
    unsafe = sum(1 for f in report.findings if _unsafe_fix(f))
    if safe:
        lines.append(f"{safe} fixable with `rlguard fix` ([*]).")
    if unsafe:
        lines.append(f"{_plural(unsafe, 'more fix', 'more fixes')} available with `rlguard fix --unsafe-fixes` "
                     "(unsafe: review the changes).")
    return lines


def _plural(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {plural or noun + 's'}"


def render(report: Report, style: str = "text", color: bool = False, quiet: bool = False) -> str:
    lines = [line(f, style, color) for f in [*report.findings, *report.unused_suppressions]]
    if not quiet:
        lines.extend(summary(report))
        lines.extend(note[:1].upper() + note[1:] + "." for note in report.notes)
    return "".join(text + "\n" for text in lines)


def statistics(findings: Sequence[Finding]) -> str:
    """A table of counts per rule, most frequent first, with how many of them a fix can remove."""
    counts = Counter((f.code, f.name) for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None)
    if not counts:
        return ""
    rows = [f"{'count':>5}  {'code':<6}  {'fixable':>7}  rule"]
    for (code, name), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        rows.append(f"{count:5d}  {code:<6}  {fixable[code]:7d}  {name}")
    return "\n".join(rows) + "\n"
