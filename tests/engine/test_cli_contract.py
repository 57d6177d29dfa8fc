"""The CLI contract other tools depend on: exit codes, formats, parse errors, suppressions."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import OLD_IMPORT


def test_clean_tree_exits_zero(tree):
    tree.write("ok.py", "from torchrl.collectors import Collector\n")
    result = tree.run("check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All checks passed (1 file checked)." in result.stdout


def test_findings_exit_one_and_text_format(tree):
    tree.write("old.py", OLD_IMPORT)
    result = tree.run("check", "--no-cache", ".")
    assert result.returncode == 1
    first = result.stdout.splitlines()[0]
    assert first.startswith("old.py:1:32: RLG006 ")
    assert "Found 1 finding in 1 file (1 file checked)." in result.stdout
    tree.write("older.py", OLD_IMPORT)
    tree.write("clean.py", "import os\n")
    assert "Found 2 findings in 2 files (3 files checked)." in tree.run("check", "--no-cache", ".").stdout


def test_exit_zero_flag(tree):
    tree.write("old.py", OLD_IMPORT)
    assert tree.run("check", "--no-cache", "--exit-zero", ".").returncode == 0


def test_usage_errors_exit_two_with_one_line(tree):
    for args in (["check", "--select", "RLG999X"], ["check", "--target-torchrl", "banana"], ["check", "missing_dir"],
                 ["check", "--jobs", "0"], ["explain", "RLG777"], ["check", "--no-such-flag"]):
        result = tree.run(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


def test_json_format_keys_and_positions(tree):
    tree.write("old.py", "import os\n" + OLD_IMPORT)
    result = tree.run("check", "--no-cache", "--format", "json", ".")
    [finding] = json.loads(result.stdout)
    assert set(finding) == {"path", "cell", "line", "column", "end_line", "end_column", "code", "name", "message",
                            "remedy", "fix"}
    assert finding["path"] == "old.py" and finding["cell"] is None
    assert finding["remedy"].startswith("use `Collector`") and "Collector`" not in finding["message"].replace("SyncDataCollector", "")
    assert (finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (2, 32, 2, 49)
    assert finding["code"] == "RLG006" and finding["name"] == "removed-collector-name"
    assert finding["fix"]["applicability"] == "safe"


def test_parse_errors_are_findings_and_the_run_goes_on(tree):
    tree.write("broken.py", "def f(:\n    pass\n")
    tree.write("conflict.py", "x = 1\n<<<<<<< HEAD\ny = 2\n=======\ny = 3\n>>>>>>> branch\n")
    tree.write("latin.py", b"x = '\xe9'\n", mode="wb")
    tree.write("old.py", OLD_IMPORT)
    result = tree.run("check", "--no-cache", "--format", "json", ".")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    found = {(f["path"], f["code"], f["line"]) for f in json.loads(result.stdout)}
    assert ("broken.py", "RLG000", 1) in found
    assert ("conflict.py", "RLG000", 2) in found
    assert ("latin.py", "RLG000", 1) in found
    assert ("old.py", "RLG006", 1) in found


def test_noqa_forms(tree):
    tree.write("a.py", OLD_IMPORT.rstrip() + "  # noqa: RLG006\n")
    tree.write("b.py", OLD_IMPORT.rstrip() + "  # noqa\n")
    tree.write("c.py", "# rlguard: ignore[RLG006]\n" + OLD_IMPORT)
    tree.write("d.py", OLD_IMPORT.rstrip() + "  # rlguard: ignore[RLG006]\n")
    tree.write("e.py", OLD_IMPORT.rstrip() + "  # noqa: RLG002\n")
    tree.write("f.py", 'text = "# noqa"\n' + OLD_IMPORT)
    result = tree.run("check", "--no-cache", "--format", "json", ".")
    flagged = sorted(f["path"] for f in json.loads(result.stdout))
    assert flagged == ["e.py", "f.py"]


def test_show_unused_noqa(tree):
    tree.write("a.py", "x = 1  # noqa: RLG006\n" + OLD_IMPORT.rstrip() + "  # noqa: RLG006\n")
    result = tree.run("check", "--no-cache", "--show-unused-noqa", ".")
    assert result.returncode == 1
    assert "a.py:1:1: RLG100 unused suppression of RLG006" in result.stdout
    assert ":2:" not in result.stdout


def test_select_and_ignore(tree):
    tree.write("old.py", OLD_IMPORT)
    assert tree.run("check", "--no-cache", "--ignore", "RLG006", ".").returncode == 0
    assert tree.run("check", "--no-cache", "--select", "RLG002", ".").returncode == 0
    assert tree.run("check", "--no-cache", "--select", "RLG006", ".").returncode == 1
    assert tree.run("check", "--no-cache", "--select", "RLG00", ".").returncode == 1


def test_statistics(tree):
    tree.write("a.py", OLD_IMPORT)
    tree.write("b.py", OLD_IMPORT)
    tree.write("c.py", "import json\nimport torch\njson.dumps(torch.zeros(3))\n")
    result = tree.run("check", "--no-cache", "--statistics", ".")
    # The table alone: no findings listed, no summary; fixable counts the findings a fix can remove.
    assert result.stdout.splitlines() == ["count  code    fixable  rule",
                                          "    2  RLG006        2  removed-collector-name",
                                          "    1  RLG003        1  tensor-in-json"], result.stdout


def test_python_dash_m_matches_console_script(tree):
    tree.write("old.py", OLD_IMPORT)
    script = subprocess.run([sys.executable, "-c", "import sys; from rlguard.cli import main; sys.exit(main(['check', '--no-cache', '.']))"],
                            cwd=tree.root, capture_output=True, text=True)
    module = tree.run("check", "--no-cache", ".")
    assert (script.returncode, script.stdout) == (module.returncode, module.stdout)


def test_rules_and_explain(tree):
    listing = tree.run("rules")
    assert listing.returncode == 0 and "RLG006  removed-collector-name" in listing.stdout
    explained = tree.run("explain", "rlg006")
    assert explained.returncode == 0
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Fix and its safety", "## Options"):
        assert heading in explained.stdout


def test_output_order_is_the_same_with_one_or_two_jobs(tree):
    for i in range(12):
        tree.write(f"pkg{i % 3}/m{i}.py", "import os\n" * (i % 4) + OLD_IMPORT)
    one = tree.run("check", "--no-cache", "--jobs", "1", ".")
    two = tree.run("check", "--no-cache", "--jobs", "2", ".")
    assert one.stdout == two.stdout and one.stdout.count("RLG006") == 12


def test_a_closed_pipe_is_not_an_internal_error(tree):
    done = subprocess.run(f"{sys.executable} -m rlguard explain RLG006 | head -1", shell=True, cwd=tree.root,
                          capture_output=True, text=True)
    assert done.stdout.startswith("# RLG006") and "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_diff_marks_a_missing_final_newline(tree):
    tree.write("old.py", OLD_IMPORT.rstrip("\n"))
    result = tree.run("fix", "--diff", "--no-cache", ".")
    assert result.returncode == 1
    assert result.stdout.endswith("+from torchrl.collectors import Collector\n\\ No newline at end of file\n")
    assert "Would fix 1 finding in 1 file (RLG006: 1)." in result.stderr


def test_diff_headers_keep_dotted_names(tree):
    tree.write(".hidden.py", OLD_IMPORT)
    result = tree.run("fix", "--diff", "--no-cache", ".hidden.py")
    assert "--- a/.hidden.py\n+++ b/.hidden.py\n" in result.stdout
