"""SARIF 2.1.0 for GitHub code scanning: a rules table, one result per finding, a region each.

- ``tool.driver.rules`` lists every rule and engine diagnostic, each with ``helpUri`` pointing
  at its page of the docs site; the texts come from the generated rule catalog, so no rule module
  is imported to write them;
- every result carries ``partialFingerprints`` so code scanning tracks it across commits;
- a result whose finding has a fix carries ``fixes`` with the concrete text replacements, when
  the caller passes them (``rlguard.fix.edits.fix_edits`` computes them from the
  project the run analysed). Without them, no ``fixes`` property is written: SARIF requires
  every fix to hold at least one replacement, so a description alone would not be valid.

Columns are counted in Unicode code points, as rlguard counts them (``run.columnKind``).
The output validates against the OASIS SARIF 2.1.0 schema (tests/report/schemas/).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from urllib.parse import quote

from rlguard import __version__
from rlguard.docs import DOCS_URL, engine_summary, rule_url
from rlguard.engine.findings import Finding, Report, TextEdit
from rlguard.rules import CATALOG, ENGINE_CODES, TEXTS

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT = "rlguardFinding/v1"


# A finding -> the edits its own fix makes in its file.
FixEdits = Mapping[Finding, Sequence[TextEdit]]


def artifact_uri(path: str) -> str:
    """A URI reference for a path: relative paths stay relative (code scanning resolves them
    against the checkout), absolute ones become ``file://`` URIs. Reserved characters are
    percent-encoded, so ``:`` or ``#`` in a file name cannot be read as a scheme or a fragment."""
    if os.path.isabs(path):
        return "file://" + quote(path.replace(os.sep, "/"), safe="/")
    posix = path.replace(os.sep, "/")
    while posix.startswith("./"):
        posix = posix[2:]
    return quote(posix, safe="/")


def _rules() -> list[dict]:
    table = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary.rstrip(".") + "."},
            "fullDescription": {"text": TEXTS[rule.code].description},
            "helpUri": rule_url(rule.code),
            "help": {"text": f"{rule.summary.rstrip('.')}. See {rule_url(rule.code)}",
                     "markdown": f"{rule.summary.rstrip('.')}. [Documentation]({rule_url(rule.code)})"},
            "defaultConfiguration": {"level": "error"},
        }
        for rule in CATALOG.values()
    ]
    for code, name in ENGINE_CODES.items():
        table.append({
            "id": code,
            "name": name,
            "shortDescription": {"text": engine_summary(code) + "."},
            "helpUri": rule_url(code),
            "defaultConfiguration": {"level": "error"},
        })
    return table


def fingerprint(finding: Finding, occurrence: int = 0) -> str:
    """Stable across commits that only move the finding: code, file and message, not the line.

    ``occurrence`` tells apart identical findings in one file (0 for the first, 1 for the next, ...)."""
    key = f"{finding.code}\0{finding.path}\0{finding.message}\0{occurrence}"
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _region(line: int, column: int, end_line: int, end_column: int) -> dict:
    return {"startLine": max(line, 1), "startColumn": max(column, 1),
            "endLine": max(end_line, line, 1), "endColumn": max(end_column, 1)}


def _fix(finding: Finding, edits: Sequence[TextEdit]) -> dict:
    assert finding.fix is not None
    return {
        "description": {"text": f"{finding.fix.description} ({finding.fix.applicability} fix)"},
        "artifactChanges": [{
            "artifactLocation": {"uri": artifact_uri(finding.path)},
            "replacements": [
                {"deletedRegion": _region(e.line, e.column, e.end_line, e.end_column),
                 "insertedContent": {"text": e.text}}
                for e in edits
            ],
        }],
        "properties": {"applicability": finding.fix.applicability},
    }


def _result(finding: Finding, rule_index: dict[str, int], occurrence: int, edits: Sequence[TextEdit] | None) -> dict:
    span = finding.located
    # A notebook's lines are not its file's lines: code scanning needs a region in the file, so the
    # result sits on the file's first line and says where in which cell, in its text and properties.
    region = _region(span.line, span.column, span.end_line, span.end_column) if finding.cell is None else _region(1, 1, 1, 1)
    text = finding.full_message if finding.cell is None else f"{finding.in_cell}: {finding.full_message}"
    result: dict = {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "level": "error",
        "message": {"text": text},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(finding.path)},
                "region": region,
            }
        }],
        "partialFingerprints": {FINGERPRINT: fingerprint(finding, occurrence)},
    }
    if finding.cell is not None:
        result["properties"] = {"cell": finding.cell, "line": span.line, "column": span.column,
                                "endLine": span.end_line, "endColumn": span.end_column}
    if finding.fix is not None and edits:
        result["fixes"] = [_fix(finding, edits)]
    return result


def render(report: Report, fixes: FixEdits | None = None) -> str:
    rules = _rules()
    rule_index = {rule["id"]: i for i, rule in enumerate(rules)}
    seen: Counter = Counter()
    results = []
    for finding in [*report.findings, *report.unused_suppressions]:
        key = (finding.code, finding.path, finding.message)
        results.append(_result(finding, rule_index, seen[key], (fixes or {}).get(finding)))
        seen[key] += 1
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "rlguard", "version": __version__, "semanticVersion": __version__,
                                "informationUri": DOCS_URL, "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
