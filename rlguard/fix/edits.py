"""The text edits of each finding's own fix: SARIF's ``fixes``, the language server's code actions.

``rlguard fix`` applies every fix of a file at once; SARIF attaches a fix to one result. So each
fix is applied alone to the file as the run read it, and the difference is turned into minimal
replacements (line and column, 1-based, in code points). This parses the files again but writes
nothing. The reporters only format what this computes: ``rlguard check --output-format sarif``
passes it to ``rlguard.report.sarif.render``.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from rlguard.engine.analyze import analyze_bytes
from rlguard.engine.discovery import is_notebook
from rlguard.engine.findings import Finding, Report, TextEdit
from rlguard.fix.apply import apply_fixes
from rlguard.fix.run import FixRequest, standing_findings

if TYPE_CHECKING:  # pragma: no cover
    from rlguard.engine.runner import Project

_BREAK = re.compile(r"\r\n|\r|\n")  # Python's line breaks; str.splitlines knows more


def fix_edits(report: Report, project: Project) -> dict[Finding, list[TextEdit]]:
    """For every finding of ``report`` that has a fix, the edits that fix alone makes. Notebooks get
    none: rlguard does not rewrite them, and their findings count lines within a cell."""
    by_path: dict[str, set[Finding]] = defaultdict(set)
    for finding in report.findings:
        if finding.fix is not None and not is_notebook(finding.path):
            by_path[finding.path].add(finding)
    request = FixRequest(project.settings, project.index, True, project.config)
    found: dict[Finding, list[TextEdit]] = {}
    for path, wanted in sorted(by_path.items()):
        data = project.code(path)  # as this run read it (stdin's text included)
        if data is not None:
            found.update(own_edits(path, data, request, wanted.__contains__))
    return found


def own_edits(path: str, data: bytes, request: FixRequest, wanted: Callable[[Finding], bool]) -> dict[Finding, list[TextEdit]]:
    """The edits of each ``wanted`` standing finding's own fix, applied alone to ``data``."""
    analysis = analyze_bytes(path, data, request.settings, request.index)
    if analysis.module is None:
        return {}
    original = analysis.module.code
    found: dict[Finding, list[TextEdit]] = {}
    for finding, fix in standing_findings(analysis, request):
        if fix is None or not wanted(finding) or (fix.applicability == "unsafe" and not request.unsafe):
            continue
        try:
            edits = text_edits(original, apply_fixes(analysis.module, [fix]).code)
        except Exception:  # a fix libcst cannot render: that finding simply gets no edits
            continue
        if edits:
            found[finding] = edits
    return found


def text_edits(before: str, after: str) -> list[TextEdit]:
    """Minimal replacements that turn ``before`` into ``after``: a line diff, each changed block
    trimmed to the characters that differ."""
    old_breaks, new_breaks = _breaks(before), _breaks(after)
    old_starts = _line_starts(before, old_breaks)
    new_starts = _line_starts(after, new_breaks)
    old_lines = [before[a:b] for a, b in zip(old_starts, old_starts[1:], strict=False)]
    new_lines = [after[a:b] for a, b in zip(new_starts, new_starts[1:], strict=False)]
    spans: list[tuple[int, int, str]] = []  # (start, end, replacement) as offsets into before
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        # A block of as many new lines as old ones is edited line by line: renames stay small.
        pairs = [(i, j, i + 1, j + 1) for i, j in zip(range(i1, i2), range(j1, j2), strict=False)] if i2 - i1 == j2 - j1 else [(i1, j1, i2, j2)]
        for a1, b1, a2, b2 in pairs:
            start, end = old_starts[a1], old_starts[a2]
            old_part, new_part = before[start:end], after[new_starts[b1]:new_starts[b2]]
            if old_part == new_part:
                continue
            prefix = _common_prefix(old_part, new_part)
            suffix = _common_prefix(old_part[prefix:][::-1], new_part[prefix:][::-1])
            # Widen to whole identifiers: replace `SyncDataCollector`, not delete `SyncData`.
            while prefix and _is_word(old_part[prefix - 1]) and (_is_word(old_part[prefix:prefix + 1]) or _is_word(new_part[prefix:prefix + 1])):
                prefix -= 1
            while suffix and _is_word(old_part[-suffix]) and (_is_word(old_part[-suffix - 1:-suffix]) or _is_word(new_part[-suffix - 1:-suffix])):
                suffix -= 1
            spans.append((start + prefix, end - suffix, new_part[prefix:len(new_part) - suffix]))
    merged: list[tuple[int, int, str]] = []
    for start, end, text in spans:  # edits that touch become one: no two share a boundary
        if merged and start <= merged[-1][1]:
            previous = merged.pop()
            start, text = previous[0], previous[2] + before[previous[1]:start] + text
        merged.append((start, end, text))
    return [TextEdit(*_position(old_breaks, start), *_position(old_breaks, end), text) for start, end, text in merged]


def _breaks(text: str) -> list[int]:
    """Offsets just past each line break."""
    return [match.end() for match in _BREAK.finditer(text)]


def _line_starts(text: str, breaks: list[int]) -> list[int]:
    """Where each line starts, plus the end of the text (so line k is starts[k]:starts[k + 1])."""
    starts = [0, *breaks]
    if starts[-1] != len(text):
        starts.append(len(text))
    return starts


def _position(breaks: list[int], offset: int) -> tuple[int, int]:
    """(line, column), 1-based, of a character offset."""
    line_index = bisect.bisect_right(breaks, offset)
    line_start = breaks[line_index - 1] if line_index else 0
    return line_index + 1, offset - line_start + 1


def _is_word(char: str) -> bool:
    return bool(char) and (char.isalnum() or char == "_")


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
