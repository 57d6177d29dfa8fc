"""[tool.rlguard]: bad keys and values are exit-2 errors naming the key; good ones take effect."""

from __future__ import annotations

import pytest

from tests.helpers import OLD_IMPORT

BAD = [
    ('selct = ["RLG001"]', "unknown key 'selct' (did you mean 'select'?)"),
    ('select = "RLG002,RLG006"', None),
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
    if expected is None:  # a comma-separated string is accepted like the CLI flag
        assert result.returncode in (0, 1)
        return
    assert result.returncode == 2, result.stdout
    assert expected in result.stderr
    assert "pyproject.toml" in result.stderr and len(result.stderr.strip().splitlines()) == 1


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
