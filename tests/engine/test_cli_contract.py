"""The CLI contract other tools depend on: exit codes, formats, parse errors, suppressions."""

from __future__ import annotations

import json
import os
import pty
import random
import re
import shlex
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


# ----- output people read -----
UNSAFE_FIXABLE = "import json\nimport torch\n\nstats = {'loss': torch.zeros(())}\njson.dumps(stats)\nprint(stats)\n"


def test_text_puts_the_remedy_on_an_indented_second_line(tree):
    tree.write("old.py", OLD_IMPORT)
    default = tree.run("check", "--no-cache", ".").stdout.splitlines()
    assert default[0] == "old.py:1:32: RLG006 `SyncDataCollector` was removed in torchrl 0.13, so this import fails at run time [*]"
    assert default[1] == ("    Use `Collector` (`SyncDataCollector` is gone on every torchrl from 0.13 on; "
                          "the target is 0.14.1)")
    concise = tree.run("check", "--no-cache", "--output-format", "concise", ".").stdout.splitlines()
    assert concise[0] == default[0] and concise[1].startswith("Found 1 finding")
    full = tree.run("check", "--no-cache", "--output-format", "full", ".").stdout.splitlines()
    assert full[0] == default[0][:-4] + "; " + default[1].strip()[0].lower() + default[1].strip()[1:] + " [*]"


def test_colour_on_request_never_in_a_pipe(tree):
    tree.write("old.py", OLD_IMPORT)
    assert "\033[" not in tree.run("check", "--no-cache", ".").stdout  # a pipe: auto means no colour
    coloured = tree.run("check", "--no-cache", "--color", "always", ".").stdout
    assert "\033[1;31m" not in coloured and "\033[1m\033[31mRLG006\033[0m" in coloured


def test_colour_on_a_terminal_unless_no_color(tree):
    tree.write("old.py", OLD_IMPORT)

    def on_terminal(**env: str) -> str:
        leader, follower = pty.openpty()
        done = subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "."], cwd=tree.root,
                              stdout=follower, stderr=subprocess.PIPE, env={**os.environ, **env}, timeout=300)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
        assert done.returncode == 1
        return b"".join(chunks).decode()

    assert "\033[" in on_terminal(NO_COLOR="")
    assert "\033[" not in on_terminal(NO_COLOR="1")


def test_summary_counts_files_with_findings_and_files_checked_and_unsafe_fixes(tree):
    tree.write("old.py", OLD_IMPORT)
    tree.write("stats.py", UNSAFE_FIXABLE)
    tree.write("clean.py", "import os\n")
    out = tree.run("check", "--no-cache", ".").stdout.splitlines()
    assert out[-3:] == ["Found 2 findings in 2 files (3 files checked).",
                        "1 fixable with `rlguard fix` ([*]).",
                        "1 more fix available with `rlguard fix --unsafe-fixes` (unsafe: review the changes)."]


def test_paths_have_no_dot_slash_in_any_format(tree):
    tree.write("pkg/old.py", OLD_IMPORT)
    for fmt in ("text", "concise", "full", "json", "github", "sarif"):
        out = tree.run("check", "--no-cache", "--output-format", fmt, ".").stdout
        assert "pkg/old.py" in out and "./" not in out, (fmt, out)
    sub = tree.run("check", "--no-cache", "--output-format", "concise", ".", cwd=f"{tree.root}/pkg").stdout
    assert sub.startswith("old.py:1:32:")


def test_cross_file_references_use_the_report_base(tree):
    tree.write("pyproject.toml", "")  # the project root: `robot` resolves from it, as `python -m train.run` would
    tree.write("robot/__init__.py", "")
    tree.write("robot/models.py", "import threading\n\n\nclass LockedNet:\n    def __init__(self):\n"
                                  "        self.lock = threading.Lock()\n")
    tree.write("train/run.py", "import copy\n\nfrom robot.models import LockedNet\n\ncopy.deepcopy(LockedNet())\n")
    [line] = [x for x in tree.run("check", "--no-cache", "--output-format", "full", ".").stdout.splitlines() if "RLG001" in x]
    assert line.startswith("train/run.py:5:1: RLG001") and "set at robot/models.py:6" in line


def test_statistics_never_corrupt_machine_output(tree):
    tree.write("a.py", OLD_IMPORT)
    for fmt in ("json", "sarif"):
        result = tree.run("check", "--no-cache", "--statistics", "--output-format", fmt, ".")
        json.loads(result.stdout)  # still one JSON document
        assert "    1  RLG006        1  removed-collector-name" in result.stderr


def test_output_file_format_alias_and_short_version(tree):
    tree.write("a.py", OLD_IMPORT)
    result = tree.run("check", "--no-cache", "--format", "json", "-o", "report.json", ".")
    assert result.returncode == 1 and result.stdout == ""
    with open(f"{tree.root}/report.json", encoding="utf-8") as handle:
        assert json.load(handle)[0]["code"] == "RLG006"
    version = tree.run("-V")
    assert version.returncode == 0 and version.stdout.startswith("rlguard ")
    bad = tree.run("check", "--output-file", "no/such/dir/report.txt", ".")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "cannot write" in bad.stderr


def test_explain_every_listed_code(tree):
    listed = [line.split()[0] for line in tree.run("rules").stdout.splitlines() if line.startswith("RLG")]
    assert {"RLG000", "RLG100", "RLG999"} <= set(listed)
    for code in listed:
        result = tree.run("explain", code.lower())
        assert result.returncode == 0 and result.stdout.startswith(f"# {code} "), code


# ----- stdin, force-exclude, configuration per file -----
def _stdin(tree, *args: str, text: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlguard", *args], cwd=tree.root, input=text,
                          capture_output=True, text=True, timeout=300)


def test_check_and_fix_read_stdin(tree):
    tree.write("pyproject.toml", "[tool.rlguard]\nper-file-ignores = { 'legacy/*' = ['RLG006'] }\n")
    checked = _stdin(tree, "check", "--no-cache", "-", "--stdin-filename", "src/train.py", text=OLD_IMPORT)
    assert checked.returncode == 1 and checked.stdout.startswith("src/train.py:1:32: RLG006")
    # The config of the named file applies: its per-file-ignores silence the same text.
    ignored = _stdin(tree, "check", "--no-cache", "-", "--stdin-filename", "legacy/train.py", text=OLD_IMPORT)
    assert ignored.returncode == 0, ignored.stdout
    fixed = _stdin(tree, "fix", "--no-cache", "-", "--stdin-filename", "src/train.py", text="import os\n" + OLD_IMPORT)
    assert fixed.returncode == 0 and fixed.stdout == "import os\nfrom torchrl.collectors import Collector\n"
    assert not os.path.exists(f"{tree.root}/src")  # stdin is never written to disk
    unnamed = _stdin(tree, "check", "--no-cache", "-", text=OLD_IMPORT)
    assert unnamed.stdout.startswith("stdin.py:1:32: RLG006")


def test_stdin_checks_the_text_alone(tree):
    """Other files of the folder are read for what the text imports from them, never reported."""
    tree.write("old.py", OLD_IMPORT)
    tree.write("src/pkg/__init__.py", "")
    tree.write("src/pkg/policies.py", POLICY)
    clean = _stdin(tree, "check", "--no-cache", "-", "--stdin-filename", "src/pkg/x.py", text="import os\n")
    assert (clean.returncode, clean.stdout) == (0, "All checks passed (1 file checked).\n"), clean.stdout
    copying = "import copy\nfrom pkg.policies import CamPolicy\n\ntwin = copy.deepcopy(CamPolicy())\n"
    found = _stdin(tree, "check", "--no-cache", "--output-format", "concise", "-", "--stdin-filename", "src/pkg/x.py",
                   text=copying)
    assert found.stdout.splitlines()[:-1] == [
        "src/pkg/x.py:4:8: RLG001 `CamPolicy` cannot be deep-copied by `copy.deepcopy`: `self.lock` holds a thread lock"]


POLICY = """\
import threading
from torch import nn


class CamPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
"""


def test_force_exclude_applies_exclude_to_named_files(tree):
    tree.write("pyproject.toml", "[tool.rlguard]\nexclude = ['generated/']\n")
    tree.write("generated/old.py", OLD_IMPORT)
    assert tree.run("check", "--no-cache", ".").returncode == 0  # excluded in a folder walk
    assert tree.run("check", "--no-cache", "generated/old.py").returncode == 1  # named: checked
    forced = tree.run("check", "--no-cache", "--force-exclude", "generated/old.py")
    assert forced.returncode == 0 and "0 files checked" in forced.stdout
    piped = _stdin(tree, "fix", "--no-cache", "--force-exclude", "-", "--stdin-filename", "generated/old.py", text=OLD_IMPORT)
    assert piped.stdout == OLD_IMPORT  # excluded text passes through unchanged


def _two_packages(tree) -> None:
    """A repository holding two packages: one ignores RLG006, the other has no [tool.rlguard]."""
    tree.write(".git/HEAD", "ref: refs/heads/main\n")
    tree.write("pyproject.toml", "[tool.rlguard]\nselect = ['RLG006']\n")
    tree.write("pkg_a/pyproject.toml", "[tool.rlguard]\nignore = ['RLG006']\n")
    tree.write("pkg_a/m.py", OLD_IMPORT)
    tree.write("pkg_b/pyproject.toml", "[project]\nname = 'pkg-b'\n")  # no [tool.rlguard]: the root's applies
    tree.write("pkg_b/m.py", OLD_IMPORT)
    tree.write("pkg_b/n.py", OLD_IMPORT)


def test_configuration_is_found_per_file_and_order_does_not_matter(tree):
    _two_packages(tree)
    files = ["pkg_a/m.py", "pkg_b/m.py", "pkg_b/n.py"]
    outputs = set()
    for seed in range(4):
        random.Random(seed).shuffle(files)
        result = tree.run("check", "--no-cache", "--output-format", "concise", *files)
        outputs.add((result.returncode, result.stdout))
    [(code, out)] = outputs
    assert code == 1 and [line.split(":")[0] for line in out.splitlines()[:-2]] == ["pkg_b/m.py", "pkg_b/n.py"]
    assert tree.run("check", "--no-cache", "pkg_a/m.py").returncode == 0


def test_cache_lives_at_the_project_root(tree):
    _two_packages(tree)
    tree.run("check", "pkg_b/m.py", "pkg_a/m.py")
    assert os.path.isdir(os.path.join(tree.root, ".rlguard_cache"))
    assert not any(os.path.exists(os.path.join(tree.root, p, ".rlguard_cache")) for p in ("pkg_a", "pkg_b"))


# ----- notebooks -----
def _notebook(*cells: tuple[str, str]) -> str:
    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
                                 for kind, text in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_notebooks_are_checked_cell_by_cell(tree):
    tree.write("tutorial.ipynb", _notebook(
        ("markdown", "# Collecting data\n"),
        ("code", "%matplotlib inline\n!pip install torchrl\nimport torch\n"),
        ("code", "%%bash\necho this is not python\n"),
        ("code", "for step in range(3):\n    %time step\nfrom torchrl.collectors import SyncDataCollector\n"),
    ))
    result = tree.run("check", "--no-cache", "--output-format", "concise", ".")
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].startswith("tutorial.ipynb:cell 4:3:32: RLG006 ")
    listed = json.loads(tree.run("check", "--no-cache", "--format", "json", ".").stdout)
    assert [(f["path"], f["cell"], f["line"]) for f in listed] == [("tutorial.ipynb", 4, 3)]


def test_notebook_names_in_one_cell_serve_the_next(tree):
    tree.write("nb.ipynb", _notebook(("code", "import json\nimport torch\n"), ("code", "json.dumps(torch.zeros(3))\n")))
    out = tree.run("check", "--no-cache", "--output-format", "concise", "nb.ipynb").stdout
    assert out.startswith("nb.ipynb:cell 2:1:1: RLG003 ")


def test_suppressions_in_notebook_cells(tree):
    tree.write("nb.ipynb", _notebook(("code", "import os\n"),
                                     ("code", OLD_IMPORT.rstrip() + "  # noqa: RLG006\nx = 1  # noqa: RLG003\n")))
    result = tree.run("check", "--no-cache", "--show-unused-noqa", "--output-format", "concise", "nb.ipynb")
    assert result.stdout.splitlines()[0] == "nb.ipynb:cell 2:2:1: RLG100 unused suppression of RLG003 [*]"
    assert "RLG006" not in result.stdout


def test_a_broken_notebook_is_one_finding_and_fix_refuses_notebooks(tree):
    tree.write("broken.ipynb", "{ not json")
    tree.write("nb.ipynb", _notebook(("code", OLD_IMPORT)))
    checked = tree.run("check", "--no-cache", "--output-format", "concise", ".")
    assert checked.stdout.startswith("broken.ipynb:1:1: RLG000 not a notebook: invalid JSON")
    before = open(f"{tree.root}/nb.ipynb").read()
    fixed = tree.run("fix", "--no-cache", "nb.ipynb")
    assert fixed.returncode == 1 and "Traceback" not in fixed.stderr
    assert "nb.ipynb: not fixed: rlguard does not rewrite notebooks" in fixed.stderr
    assert open(f"{tree.root}/nb.ipynb").read() == before


# ----- docs/cli.md: its samples are real output -----
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = re.compile(r"<!-- sample:[^>]*-->\n```console\n\$ (rlguard [^\n]*)\n(.*?)```", re.S)


def sample_output(command: str) -> str:
    """What ``command`` prints from the checkout's root (without the cache: the output is the same)."""
    _, *args = shlex.split(command)
    done = subprocess.run([sys.executable, "-m", "rlguard", args[0], "--no-cache", *args[1:]], cwd=CHECKOUT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"})
    return done.stdout


def test_cli_page_samples_are_real_output():
    with open(os.path.join(CHECKOUT, "docs", "cli.md"), encoding="utf-8") as handle:
        samples = SAMPLE.findall(handle.read())
    assert len(samples) >= 4
    for command, shown in samples:
        assert sample_output(command) == shown, (
            f"docs/cli.md: `{command}` prints something else now; regenerate the samples with "
            "`python tests/engine/test_cli_contract.py --write-samples`")


def write_samples() -> None:
    path = os.path.join(CHECKOUT, "docs", "cli.md")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    text = SAMPLE.sub(lambda m: m.group(0).replace(m.group(2), sample_output(m.group(1))), text)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


if __name__ == "__main__" and sys.argv[1:] == ["--write-samples"]:
    write_samples()


# ----- small contract points (issue 26) -----
def test_an_empty_selection_selects_nothing(tree):
    """As in ruff: `select = []` and `--select ""` run no rule (a syntax error is still reported)."""
    tree.write("old.py", OLD_IMPORT)
    assert tree.run("check", "--no-cache", "--select", "", ".").returncode == 0
    tree.write("pyproject.toml", "[tool.rlguard]\nselect = []\n")
    assert tree.run("check", "--no-cache", ".").returncode == 0
    tree.write("broken.py", "def f(:\n")
    result = tree.run("check", "--no-cache", "--output-format", "concise", ".")
    assert result.stdout.startswith("broken.py:1:") and " RLG000 " in result.stdout and "RLG006" not in result.stdout
    assert tree.run("check", "--no-cache", "--select", "RLG006", "old.py").returncode == 1  # the flag replaces it


def test_quiet_fix_prints_what_remains_and_nothing_else(tree):
    """As `ruff check --fix --quiet`: no summary, but each remaining finding, so exit 1 says why."""
    path = tree.write("a.py", OLD_IMPORT + "import json, torch\njson.dump({'w': torch.zeros(1)}, f)\n")
    tree.write("b.py", "from torch import nn\nfrom torchrl.trainers import TrainerHookBase\n\n\n"
                       "class Logger(TrainerHookBase):\n    def register(self, trainer, name='x'):\n        pass\n")
    result = tree.run("fix", "-q", "--no-cache", ".")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith("b.py:5:1: RLG005 ") and line.endswith("(no automatic fix)") for line in lines), lines
    with open(path, encoding="utf-8") as handle:
        assert "Collector\n" in handle.read()  # the fixes were applied
    tree.write("b.py", "x = 1\n")
    assert (tree.run("fix", "-q", "--no-cache", ".").stdout, tree.run("fix", "-q", "--no-cache", ".").returncode) == ("", 0)
