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
    """One ``::error``. A notebook finding annotates the whole file (its lines are not the
    notebook file's lines) and names its cell and line in the message."""
    span = finding.located
    where = (("line", span.line), ("col", span.column), ("endLine", span.end_line), ("endColumn", span.end_column))
    properties = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in (("file", finding.path), *(where if finding.cell is None else ()),
                           ("title", f"{finding.code} {finding.name}"))
    )
    text = f"{finding.in_cell}: {finding.message}" if finding.cell is not None else finding.message
    if finding.remedy:
        text += "\n" + finding.remedy_sentence  # two lines in the annotation
    return f"::error {properties}::{escape_data(text)}"


def render(report: Report) -> str:
    return "".join(annotation(f) + "\n" for f in [*report.findings, *report.unused_suppressions])
