"""A JSON array of findings with 1-based positions."""

from __future__ import annotations

import json

from rlguard.engine.findings import Finding, Report


def as_dict(finding: Finding) -> dict:
    span = finding.located
    return {
        "path": finding.path,
        "cell": finding.cell,
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line,
        "end_column": span.end_column,
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "remedy": finding.remedy,
        "fix": finding.fix.to_json() if finding.fix else None,
    }


def render(report: Report) -> str:
    return json.dumps([as_dict(f) for f in [*report.findings, *report.unused_suppressions]], indent=2) + "\n"
