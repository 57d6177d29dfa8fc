"""[tool.rlguard]: bad keys and values are exit-2 errors naming the key; good ones take effect."""

from __future__ import annotations

import json

import pytest

from tests.helpers import OLD_IMPORT

BAD = [
    ('selct = ["RLG001"]', "unknown key 'selct' (did you mean 'select'?)"),
    ("select = [1]", "select must be a list of strings"),
    ('ignore = ["RLG042"]', "unknown rule code 'RLG042'"),
    ('target-torchrl = "latest"', "target-torchrl: 'latest' is not a version"),
    ('exclude = "build"', "exclude must be a list of strings"),
    ('[tool.rlguard.rules.RLG006]\nfoo = 1', "rules.RLG006: unknown option 'foo'"),
    ('[tool.rlguard.rules.RLG123]\nx = 1', "unknown rule code 'RLG123'"),
    ("timeout = -1", "timeout must be a positive number"),
]


@pytest.mark.parametrize("body, expected", BAD)
def test_bad_config_exits_two_naming_the_key(tree, body, expected):
    tree.write("pyproject.toml", "[tool.rlguard]\n" + body + "\n")
    tree.write("a.py", OLD_IMPORT)
    result = tree.run("check", "--no-cache", ".")
    assert result.returncode == 2, result.stdout
    assert expected in result.stderr
    assert "pyproject.toml" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_select_as_a_comma_separated_string_works_like_the_flag(tree):
    tree.write("a.py", OLD_IMPORT)
    tree.write("pyproject.toml", '[tool.rlguard]\nselect = "RLG002,RLG006"\n')
    chosen = tree.run("check", "--no-cache", ".")
    assert chosen.returncode == 1 and "a.py:1:32: RLG006" in chosen.stdout, chosen.stdout + chosen.stderr
    tree.write("pyproject.toml", '[tool.rlguard]\nselect = "RLG002,RLG004"\n')  # RLG006 left out: silent
    left_out = tree.run("check", "--no-cache", ".")
    assert left_out.returncode == 0 and "All checks passed" in left_out.stdout, left_out.stdout + left_out.stderr


def test_unparsable_pyproject_is_a_config_error(tree):
    tree.write("pyproject.toml", "[tool.rlguard\n")
    result = tree.run("check", ".")
    assert result.returncode == 2 and "pyproject.toml: cannot read" in result.stderr


def test_config_takes_effect(tree):
    tree.write("pyproject.toml", '[tool.rlguard]\nexclude = ["gen/*"]\nper-file-ignores = { "tests/*" = ["RLG006"] }\n')
    tree.write("gen/a.py", OLD_IMPORT)
    tree.write("tests/b.py", OLD_IMPORT)
    tree.write("src/c.py", OLD_IMPORT)
    result = tree.run("check", "--no-cache", ".")
    assert result.returncode == 1
    assert "src/c.py" in result.stdout and "gen/a.py" not in result.stdout and "tests/b.py" not in result.stdout


def test_target_version_resolution_order(tree):
    tree.write("a.py", OLD_IMPORT)
    # RLG006 applies from 0.13: a pin below that silences it, the flag overrides the pin.
    tree.write("requirements.txt", "numpy\ntorchrl>=0.12,<0.13\n")
    assert tree.run("check", "--no-cache", ".").returncode == 0
    assert tree.run("check", "--no-cache", "--target-torchrl", "0.14", ".").returncode == 1
    tree.write("pyproject.toml", '[project]\nname = "x"\ndependencies = ["torchrl==0.14.1"]\n')
    assert tree.run("check", "--no-cache", ".").returncode == 1
    tree.write("pyproject.toml", '[project]\nname = "x"\ndependencies = ["torchrl==0.14.1"]\n[tool.rlguard]\ntarget-torchrl = "0.12"\n')
    assert tree.run("check", "--no-cache", ".").returncode == 0


# --show-unused-noqa: only a rule that ran on a file can show one of its suppressions to be unused.
UNUSED_BOTH = "x = 1  # noqa: RLG006\ny = 2  # noqa: RLG002\n"


def unused_lines(tree, *args):
    result = tree.run("check", "--no-cache", "--show-unused-noqa", *args, ".")
    assert "Traceback" not in result.stderr, result.stderr
    return sorted(line.split(": ", 1)[1].removesuffix(" [*]") for line in result.stdout.splitlines() if "RLG100" in line)


def test_unused_noqa_of_every_rule_that_ran(tree):
    tree.write("a.py", UNUSED_BOTH)
    assert unused_lines(tree) == ["RLG100 unused suppression of RLG002", "RLG100 unused suppression of RLG006"]


def test_unused_noqa_ignores_rules_that_select_and_ignore_switched_off(tree):
    tree.write("a.py", UNUSED_BOTH)
    assert unused_lines(tree, "--select", "RLG002") == ["RLG100 unused suppression of RLG002"]
    assert unused_lines(tree, "--ignore", "RLG002") == ["RLG100 unused suppression of RLG006"]
    tree.write("pyproject.toml", '[tool.rlguard]\nignore = ["RLG006"]\n')
    assert unused_lines(tree) == ["RLG100 unused suppression of RLG002"]


def test_unused_noqa_ignores_rules_per_file_ignores_switched_off(tree):
    tree.write("pyproject.toml", '[tool.rlguard]\nper-file-ignores = { "tests/*" = ["RLG006"] }\n')
    tree.write("tests/a.py", UNUSED_BOTH)
    tree.write("src/b.py", UNUSED_BOTH)
    result = tree.run("check", "--no-cache", "--show-unused-noqa", ".")
    assert "tests/a.py:2:1: RLG100 unused suppression of RLG002" in result.stdout
    assert "tests/a.py:1:1" not in result.stdout
    assert "src/b.py:1:1: RLG100 unused suppression of RLG006" in result.stdout


def test_unused_noqa_ignores_rules_the_target_version_gates_off(tree):
    # RLG006 applies from torchrl 0.13 on: judged for 0.12 it never runs.
    tree.write("a.py", UNUSED_BOTH)
    assert unused_lines(tree, "--target-torchrl", "0.12") == ["RLG100 unused suppression of RLG002"]
    assert "RLG100 unused suppression of RLG006" in unused_lines(tree, "--target-torchrl", "0.14")


def test_unused_blanket_noqa_only_when_every_rule_ran(tree):
    tree.write("a.py", "x = 1  # noqa\n# an RLG006 finding follows, unsuppressed\n" + OLD_IMPORT)
    assert unused_lines(tree) == ["RLG100 unused blanket `noqa`"]
    assert unused_lines(tree, "--select", "RLG002") == []


def test_a_used_suppression_is_never_reported(tree):
    tree.write("a.py", OLD_IMPORT.rstrip() + "  # noqa: RLG006\n")
    assert unused_lines(tree, "--select", "RLG006") == []
    assert unused_lines(tree, "--ignore", "RLG006") == []


def test_files_named_on_the_command_line_follow_the_config_except_exclude(tree):
    """What docs/integrations.md promises for pre-commit, which names each changed file."""
    tree.write("pyproject.toml", '[tool.rlguard]\nexclude = ["gen/*"]\nper-file-ignores = { "tests/*" = ["RLG006"] }\n'
                                 'ignore = ["RLG002"]\n')
    for path in ("gen/a.py", "tests/b.py", "src/c.py"):
        tree.write(path, OLD_IMPORT)
    tree.write("src/d.py", "from torchrl.modules import LSTMModule\n\nlstm = LSTMModule(3, 8, in_key='x', out_key='y')\n"
                           "lstm.set_recurrent_mode(True)\n")
    result = tree.run("check", "--no-cache", "--format", "json", "src/c.py", "gen/a.py", "tests/b.py", "src/d.py")
    flagged = sorted((f["path"], f["code"]) for f in json.loads(result.stdout))
    # named files are checked even when excluded; per-file-ignores and ignore hold
    assert flagged == [("gen/a.py", "RLG006"), ("src/c.py", "RLG006")], result.stdout + result.stderr
