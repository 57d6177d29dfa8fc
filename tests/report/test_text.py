"""What people read: each rule's first line is short, and its remedy says what to do."""

from __future__ import annotations

import pytest

from rlguard.engine.findings import Finding, FixSummary, Report, Span
from rlguard.report import text
from rlguard.rules import RULES
from rlguard.testing import check_source

FIRST_LINE = 120  # characters: what is wrong and why, on one terminal line


def _findings(rule) -> list[Finding]:
    found = []
    for example in rule.invalid:
        options = {rule.code: dict(example.options)} if example.options else None
        found += check_source(example.code, select=[rule.code], target=example.target, options=options,
                              extra_files=example.files)
    return found


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_first_lines_are_short_and_every_finding_has_a_remedy(rule):
    found = _findings(rule)
    assert found, f"{rule.code}: its invalid examples report nothing"
    for finding in found:
        assert len(finding.message) <= FIRST_LINE, finding.message
        assert "\n" not in finding.message and finding.remedy, finding
        assert not finding.message.endswith((".", ";")) and not finding.remedy.endswith(";"), finding


def _finding(path: str, code: str, fix: str | None, remedy: str = "do this") -> Finding:
    return Finding(path, Span(2, 5, 2, 9), code, "name", "what and why", FixSummary(fix, "d") if fix else None, remedy)


def test_styles_and_summary():
    report = Report([_finding("a.py", "RLG006", "safe"), _finding("b.py", "RLG002", "unsafe"),
                     _finding("b.py", "RLG003", None, remedy="")], files_checked=5)
    assert text.render(report).splitlines() == [
        "a.py:2:5: RLG006 what and why [*]", "    Do this",
        "b.py:2:5: RLG002 what and why", "    Do this",
        "b.py:2:5: RLG003 what and why",
        "Found 3 findings in 2 files (5 files checked).",
        "1 fixable with `rlguard fix` ([*]).",
        "1 more fix available with `rlguard fix --unsafe-fixes` (unsafe: review the changes).",
    ]
    assert text.render(report, "concise", quiet=True).splitlines()[1] == "b.py:2:5: RLG002 what and why"
    assert text.render(report, "full", quiet=True).splitlines()[0] == "a.py:2:5: RLG006 what and why; do this [*]"
    assert text.render(Report(files_checked=1)) == "All checks passed (1 file checked).\n"


def test_notebook_findings_name_their_cell():
    finding = Finding("t.ipynb", Span(3, 1, 3, 4), "RLG006", "n", "m", cell=7)
    assert text.line(finding) == "t.ipynb:cell 7:3:1: RLG006 m"
