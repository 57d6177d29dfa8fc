"""``--format github``: GitHub Actions workflow commands, escaped as the Actions toolkit does.

The rules (actions/toolkit, packages/core/src/command.ts): in the message, ``%`` -> ``%25``,
CR -> ``%0D``, LF -> ``%0A``; in property values, the same plus ``:`` -> ``%3A`` and ``,`` -> ``%2C``.
``%`` is escaped first, so an escape sequence already in the text survives as itself.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from rlguard.engine.findings import Finding, FixSummary, Report, Span
from rlguard.report import github

COMMAND = re.compile(r"^::(?P<command>\w+) (?P<properties>[^:]*)::(?P<message>.*)$")


def finding(path="src/train.py", message="boom", code="RLG006", name="removed-collector-name", line=3) -> Finding:
    return Finding(path, Span(line, 5, line, 22), code, name, message, FixSummary("safe", "Rename"))


def unescape(value: str) -> str:
    """The runner's decoding: every %XX the toolkit produces, %25 last."""
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(escaped, raw)
    return value


def parse(line: str) -> tuple[str, dict[str, str], str]:
    match = COMMAND.match(line)
    assert match, line
    properties = dict(item.split("=", 1) for item in match.group("properties").split(","))
    return match.group("command"), properties, match.group("message")


@pytest.mark.parametrize("raw, escaped", [
    ("100%", "100%25"),
    ("a\rb", "a%0Db"),
    ("a\nb", "a%0Ab"),
    ("a\r\nb", "a%0D%0Ab"),
    ("%0A", "%250A"),  # already looks escaped: must stay literal
    ("a:b,c", "a:b,c"),  # the message keeps : and ,
])
def test_message_escaping(raw, escaped):
    assert github.escape_data(raw) == escaped


@pytest.mark.parametrize("raw, escaped", [
    ("100%", "100%25"),
    ("a\rb", "a%0Db"),
    ("a\nb", "a%0Ab"),
    ("dir:name.py", "dir%3Aname.py"),
    ("we,ird.py", "we%2Cird.py"),
    ("%3A", "%253A"),
])
def test_property_escaping(raw, escaped):
    assert github.escape_property(raw) == escaped


@pytest.mark.parametrize("path", ["plain.py", "we,ird.py", "c:olon.py", "per%cent.py", "line\nfeed.py", "carriage\rreturn.py",
                                  "all:of,them%\r\n.py"])
@pytest.mark.parametrize("message", ["plain", "with: colon, comma", "100% sure", "two\nlines", "cr\rhere", "::error file=x::y"])
def test_annotation_round_trips(path, message):
    line = github.annotation(finding(path=path, message=message))
    assert "\n" not in line and "\r" not in line
    command, properties, text = parse(line)
    assert command == "error"
    assert unescape(properties["file"]) == path
    assert unescape(text) == message
    assert properties["title"] == "RLG006 removed-collector-name"
    assert (properties["line"], properties["col"], properties["endLine"], properties["endColumn"]) == ("3", "5", "3", "22")


def test_one_annotation_per_finding_in_order():
    report = Report(findings=[finding(line=1), finding(line=9, message="second"), finding(path="b.py")], files_checked=2)
    lines = github.render(report).splitlines()
    assert len(lines) == 3
    assert [parse(line)[2] for line in lines] == ["boom", "second", "boom"]


def test_title_is_code_and_name_escaped():
    line = github.annotation(finding(code="RLG001", name="uncopyable-policy"))
    assert parse(line)[1]["title"] == "RLG001 uncopyable-policy"


def test_no_findings_no_output():
    assert github.render(Report(files_checked=4)) == ""


def test_unused_suppressions_are_annotated_too():
    unused = Finding("a.py", Span(2, 1, 2, 1), "RLG100", "unused-suppression", "unused suppression of RLG006")
    assert parse(github.render(Report(unused_suppressions=[unused])).strip())[1]["title"] == "RLG100 unused-suppression"


def test_cli_end_to_end_on_a_path_with_comma_and_colon(tmp_path):
    folder = tmp_path / "we,ird:dir"
    folder.mkdir()
    (folder / "odd,name:1.py").write_text("from torchrl.collectors import SyncDataCollector\n", encoding="utf-8")
    (folder / "clean.py").write_text("x = 1\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "rlguard", "check", "--format", "github", "--no-cache",
                             "we,ird:dir"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    command, properties, message = parse(lines[0])
    assert command == "error"
    assert properties["file"] == "we%2Cird%3Adir/odd%2Cname%3A1.py"
    assert unescape(properties["file"]) == "we,ird:dir/odd,name:1.py"
    assert properties["title"] == "RLG006 removed-collector-name"
    assert (properties["line"], properties["col"]) == ("1", "32")
    assert "Use `Collector`" in unescape(message)


def test_a_notebook_finding_annotates_its_file_and_names_its_cell():
    in_notebook = finding(path="explore.ipynb")._replace(cell=4, remedy="use `Collector`")
    command, properties, message = parse(github.annotation(in_notebook))
    assert properties == {"file": "explore.ipynb", "title": "RLG006 removed-collector-name"}  # no line of the JSON file
    assert unescape(message) == "cell 4, line 3, column 5: boom\nUse `Collector`"


def test_the_remedy_line_is_a_sentence():
    command, properties, message = parse(github.annotation(finding()._replace(remedy="use `Collector` (gone since 0.13)")))
    assert unescape(message) == "boom\nUse `Collector` (gone since 0.13)"
