"""SARIF 2.1.0 for GitHub code scanning: a rules table, one result per finding, a region each."""

from __future__ import annotations

import hashlib
import json

from rlguard import __version__
from rlguard.engine.findings import Finding, Report
from rlguard.rules import ENGINE_CODES, RULES

DOCS_URL = "https://rlguard.readthedocs.io/en/latest/rules/{code}/"
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _rules() -> list[dict]:
    table = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.why},
            "helpUri": DOCS_URL.format(code=rule.code),
            "defaultConfiguration": {"level": "error"},
        }
        for rule in RULES
    ]
    table += [
        {"id": code, "name": name, "shortDescription": {"text": name.replace("-", " ")},
         "helpUri": DOCS_URL.format(code=code), "defaultConfiguration": {"level": "error"}}
        for code, name in ENGINE_CODES.items()
    ]
    return table


def _fingerprint(finding: Finding) -> str:
    # Stable across commits that move the line: code, file and message, not the position.
    return hashlib.sha256(f"{finding.code}\0{finding.path}\0{finding.message}".encode()).hexdigest()[:32]


def _result(finding: Finding, rule_index: dict[str, int]) -> dict:
    span = finding.span
    result = {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "level": "error",
        "message": {"text": finding.message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": finding.path.replace("\\", "/")},
                "region": {"startLine": span.line, "startColumn": span.column,
                           "endLine": span.end_line, "endColumn": span.end_column},
            }
        }],
        "partialFingerprints": {"rlguardFinding/v1": _fingerprint(finding)},
    }
    if finding.fix is not None:
        # The edit itself comes from `rlguard fix`; SARIF carries its description.
        result["fixes"] = [{"description": {"text": f"{finding.fix.description} ({finding.fix.applicability} fix)"},
                            "artifactChanges": []}]
    return result


def render(report: Report) -> str:
    rules = _rules()
    rule_index = {rule["id"]: i for i, rule in enumerate(rules)}
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "rlguard", "version": __version__, "informationUri": DOCS_URL.rsplit("rules", 1)[0],
                                "rules": rules}},
            "results": [_result(f, rule_index) for f in [*report.findings, *report.unused_suppressions]],
        }],
    }
    return json.dumps(document, indent=2) + "\n"
