"""``--format sarif``: valid SARIF 2.1.0 (checked against the OASIS schema that ships in
tests/report/schemas/), a rules table with helpUri into the docs, partialFingerprints, and fixes
with real replacements where a fix exists."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from rlguard.config import Config
from rlguard.docs import DOCS_URL, rule_url
from rlguard.engine.findings import Finding, FixSummary, Report, Span
from rlguard.engine.runner import RunOptions, check
from rlguard.engine.target import Target
from rlguard.report import sarif
from rlguard.fix.edits import fix_edits, text_edits
from rlguard.rules import ENGINE_CODES, RULES
from rlguard.rules.data import NEWEST_KNOWN_TORCHRL
from rlguard_dev.docs import generate

SCHEMA_PATH = Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json"
SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"

OLD = (
    "from torchrl.collectors import SyncDataCollector\n"
    "\n"
    "collector = SyncDataCollector(env, policy, frames_per_batch=64)\n"
)
NEW = (
    "from torchrl.collectors import Collector\n"
    "\n"
    "collector = Collector(env, policy, frames_per_batch=64)\n"
)


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    # Draft 4 knows no uri-reference format; Draft 7's checker adds it (artifactLocation.uri).
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def validate(validator, text: str) -> dict:
    document = json.loads(text)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
    return document


def make(path="src/a.py", line=1, message="m", code="RLG006", fix=True) -> Finding:
    return Finding(path, Span(line, 2, line, 9), code, dict(ENGINE_CODES).get(code, "removed-collector-name"), message,
                   FixSummary("safe", "Rename `A` to `B`") if fix else None)


def test_vendored_schema_is_the_unmodified_copy():
    assert hashlib.sha256(SCHEMA_PATH.read_bytes()).hexdigest() == SCHEMA_SHA256
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")


def test_the_validator_rejects_invalid_sarif(validator):
    """The schema really constrains what we emit: the old empty `artifactChanges` fails it."""
    document = json.loads(sarif.render(Report(findings=[make()])))
    document["runs"][0]["results"][0]["fixes"] = [{"description": {"text": "x"}, "artifactChanges": []}]
    assert list(validator.iter_errors(document))
    document["runs"][0]["results"][0].pop("fixes")
    document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = "we,ird:x.py"
    assert list(validator.iter_errors(document)), "uri-reference format is not being checked"


def test_empty_report_is_valid(validator):
    document = validate(validator, sarif.render(Report(files_checked=3)))
    assert document["version"] == "2.1.0"
    assert document["runs"][0]["results"] == []


def test_rules_table_lists_every_code_with_help_uri_into_the_docs(validator):
    document = validate(validator, sarif.render(Report()))
    driver = document["runs"][0]["tool"]["driver"]
    assert driver["name"] == "rlguard"
    assert driver["informationUri"] == DOCS_URL
    rules = {rule["id"]: rule for rule in driver["rules"]}
    generated = generate()  # tests/integrations/test_docs.py checks docs/ holds exactly these
    assert set(rules) == {rule.code for rule in RULES} | set(ENGINE_CODES)
    for code, rule in rules.items():
        assert rule["helpUri"] == rule_url(code) == f"{DOCS_URL}rules/{code}/"
        assert f"rules/{code}.md" in generated, f"helpUri of {code} points to a page the docs do not have"
        assert rule["name"] and rule["shortDescription"]["text"]


def test_rule_texts_are_the_rules_own(validator):
    """Read from the catalog, they say what the rule classes say."""
    rules = {rule["id"]: rule for rule in validate(validator, sarif.render(Report()))["runs"][0]["tool"]["driver"]["rules"]}
    for rule in RULES:
        entry = rules[rule.code]
        assert entry["name"] == rule.name
        assert entry["shortDescription"]["text"] == rule.summary.rstrip(".") + "."
        assert entry["fullDescription"]["text"] == " ".join(rule.why.split())
    assert rules["RLG000"]["shortDescription"]["text"] == "A file that does not parse."


def test_writing_sarif_imports_no_rule_module_and_no_generator():
    """A reporter only formats: the rules table comes from the generated catalog."""
    probe = ("import sys; from rlguard.engine.findings import Report; from rlguard.report import sarif; sarif.render(Report()); "
             "print(sorted(m for m in sys.modules if m.startswith(('rlguard.rules.', 'rlguard_dev', 'libcst'))))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_results_regions_rule_index_and_uris(validator):
    findings = [make(), make(path="./pkg/we,ird:name #1.py", line=4), make(path="/abs/dir/x y.py", code="RLG000", fix=False)]
    document = validate(validator, sarif.render(Report(findings=findings)))
    run = document["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    results = run["results"]
    assert len(results) == 3
    for result, finding in zip(results, findings, strict=False):
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"] == finding.code
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == (finding.line, 2, finding.line, 9)
        assert result["message"]["text"] == finding.full_message
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert uris == ["src/a.py", "pkg/we%2Cird%3Aname%20%231.py", "file:///abs/dir/x%20y.py"]


def test_partial_fingerprints_survive_moved_lines_and_tell_duplicates_apart(validator):
    before = json.loads(sarif.render(Report(findings=[make(line=3), make(line=8)])))
    after = json.loads(sarif.render(Report(findings=[make(line=13), make(line=18)])))
    prints_before = [r["partialFingerprints"][sarif.FINGERPRINT] for r in before["runs"][0]["results"]]
    prints_after = [r["partialFingerprints"][sarif.FINGERPRINT] for r in after["runs"][0]["results"]]
    assert prints_before == prints_after
    assert len(set(prints_before)) == 2
    other = json.loads(sarif.render(Report(findings=[make(message="other")])))
    assert other["runs"][0]["results"][0]["partialFingerprints"][sarif.FINGERPRINT] not in prints_before


def test_no_fixes_property_without_edits(validator):
    document = validate(validator, sarif.render(Report(findings=[make()])))
    assert "fixes" not in document["runs"][0]["results"][0]


def _apply(source: str, replacements: list[dict]) -> str:
    """Apply SARIF replacements (line/column regions, code points) to a text."""
    starts = [0] + [i + 1 for i, char in enumerate(source) if char == "\n"]

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1 if line - 1 < len(starts) else len(source)

    for replacement in sorted(replacements, key=lambda r: (r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]), reverse=True):
        region = replacement["deletedRegion"]
        start, end = offset(region["startLine"], region["startColumn"]), offset(region["endLine"], region["endColumn"])
        source = source[:start] + replacement["insertedContent"]["text"] + source[end:]
    return source


def _run(root: Path) -> tuple[Report, object]:
    config = Config(root=str(root))
    return check([str(root)], config, RunOptions(jobs=1, use_cache=False), Target(NEWEST_KNOWN_TORCHRL, "default"))


def test_fixes_carry_replacements_that_reproduce_rlguard_fix(tmp_path, validator):
    (tmp_path / "train.py").write_text(OLD, encoding="utf-8")
    (tmp_path / "attr.py").write_text("import torchrl.collectors as tc\n\nc = tc.SyncDataCollector(env, policy)\n", encoding="utf-8")
    (tmp_path / "clean.py").write_text("x = 1\n", encoding="utf-8")
    report, project = _run(tmp_path)
    assert report.findings
    edits = fix_edits(report, project)
    document = validate(validator, sarif.render(report, fixes=edits))
    results = document["runs"][0]["results"]
    assert len(results) == len(report.findings) == 2
    fixed = {}
    for result, finding in zip(results, report.findings, strict=False):
        assert finding.fix is not None
        (fix,) = result["fixes"]
        assert finding.fix.description in fix["description"]["text"]
        assert fix["properties"]["applicability"] == "safe"
        (change,) = fix["artifactChanges"]
        assert change["artifactLocation"]["uri"] == sarif.artifact_uri(finding.path)
        fixed[os.path.basename(finding.path)] = _apply(Path(finding.path).read_text(encoding="utf-8"), change["replacements"])
    # Each file here has one fix, so applying it alone gives what `rlguard fix` writes.
    assert fixed["train.py"] == NEW
    assert fixed["attr.py"] == "import torchrl.collectors as tc\n\nc = tc.Collector(env, policy)\n"


def test_the_import_fix_renames_every_use(tmp_path):
    (tmp_path / "train.py").write_text(OLD, encoding="utf-8")
    report, project = _run(tmp_path)
    (finding,) = report.findings
    replacements = fix_edits(report, project)[finding]
    assert [(e.line, e.column, e.end_line, e.end_column, e.text) for e in replacements] == [
        (1, 32, 1, 49, "Collector"), (3, 13, 3, 30, "Collector"),
    ]


def test_text_edits_reproduce_the_target():
    cases = [("a\nb\n", "a\nB\n"), ("x", "xy"), ("", "z\n"), ("a\r\nbb\r\n", "a\r\nbxb\r\n"), ("a\nb\n", "b\n"),
             ("f(a)\n", "f(a, device=td.device)\n"), ("é = 1\nx = é\n", "é = 2\nx = é\n")]
    for before, after in cases:
        edits = text_edits(before, after)
        as_sarif = [{"deletedRegion": {"startLine": e.line, "startColumn": e.column, "endLine": e.end_line, "endColumn": e.end_column},
                     "insertedContent": {"text": e.text}} for e in edits]
        assert _apply(before, as_sarif) == after, (before, after, edits)
    assert text_edits("same\n", "same\n") == []


def test_cli_sarif_output_is_valid(tmp_path, validator):
    (tmp_path / "train.py").write_text(OLD, encoding="utf-8")
    (tmp_path / "broken.py").write_text("def f(:\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "rlguard", "check", "--format", "sarif", "--no-cache", "."],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    document = validate(validator, result.stdout)
    results = document["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == ["RLG000", "RLG006"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {"train.py", "broken.py"}
    assert [r["ruleId"] for r in results if "fixes" in r] == ["RLG006"]


def test_cli_sarif_output_carries_fixes(tmp_path, validator):
    (tmp_path / "train.py").write_text(OLD, encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "rlguard", "check", "--format", "sarif", "--no-cache", "."],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    document = validate(validator, result.stdout)
    (result_,) = document["runs"][0]["results"]
    (fix,) = result_["fixes"]
    (change,) = fix["artifactChanges"]
    assert _apply(OLD, change["replacements"]) == NEW


def test_a_notebook_finding_names_its_cell_and_sits_on_the_files_first_line(tmp_path, validator):
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# title\n"]},
                          {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                           "source": ["import os\n", "from torchrl.collectors import SyncDataCollector\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "explore.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    report, project = _run(tmp_path)
    document = validate(validator, sarif.render(report, fixes=fix_edits(report, project)))
    (result,) = document["runs"][0]["results"]
    assert result["message"]["text"].startswith("cell 2, line 2, column 32: `SyncDataCollector` was removed")
    assert result["properties"] == {"cell": 2, "line": 2, "column": 32, "endLine": 2, "endColumn": 49}
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}
    assert "fixes" not in result  # rlguard does not rewrite notebooks: no edit to offer
