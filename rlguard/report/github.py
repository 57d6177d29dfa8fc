"""GitHub Actions workflow commands, one ``::error`` annotation per finding.

Escaping follows GitHub's workflow-command rules: in the message ``%``, CR and LF are
percent-encoded; in property values ``:`` and ``,`` are encoded as well.
"""

from __future__ import annotations

from rlguard.engine.findings import Finding, Report


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    span = finding.located
    properties = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in (
            ("file", finding.path), ("line", span.line), ("col", span.column),
            ("endLine", span.end_line), ("endColumn", span.end_column), ("title", f"{finding.code} {finding.name}"),
        )
    )
    text = f"{finding.message}\n{finding.remedy}" if finding.remedy else finding.message  # two lines in the annotation
    return f"::error {properties}::{escape_data(text)}"


def render(report: Report) -> str:
    return "".join(annotation(f) + "\n" for f in [*report.findings, *report.unused_suppressions])
