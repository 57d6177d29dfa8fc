"""Where settings come from, as ruff users expect: `extend` in the configuration, `--config PATH`,
`--extend-select`; and `--exit-zero` on `fix`."""

from __future__ import annotations

import json
import os

from tests.helpers import OLD_IMPORT

TENSOR_JSON = "import json\nimport torch\n\njson.dumps({'w': torch.zeros(1)})\n"  # RLG003


def _codes(result) -> list[tuple[str, str]]:
    return sorted((f["path"], f["code"]) for f in json.loads(result.stdout))


def test_extend_lays_the_file_over_the_one_it_names(tree):
    tree.write(".git/HEAD", "ref: refs/heads/main\n")
    tree.write("shared/base.toml", "[tool.rlguard]\nselect = ['RLG006']\nexclude = ['generated/']\n"
                                   "[tool.rlguard.rules.RLG001]\nuncopyable-types = ['robot.Driver']\n")
    tree.write("pkg/pyproject.toml", "[tool.rlguard]\nextend = '../shared/base.toml'\nextend-select = ['RLG003']\n")
    tree.write("pkg/old.py", OLD_IMPORT)
    tree.write("pkg/tensor.py", TENSOR_JSON)
    tree.write("pkg/generated/old.py", OLD_IMPORT)
    tree.write("pkg/hook.py", "from torchrl.trainers import TrainerHookBase\n\n\nclass H(TrainerHookBase):\n    pass\n")
    result = tree.run("check", "--no-cache", "--output-format", "json", "pkg")
    # select and exclude come from the base, extend-select adds RLG003; RLG005 stays unselected.
    assert _codes(result) == [("pkg/old.py", "RLG006"), ("pkg/tensor.py", "RLG003")], result.stdout + result.stderr
    tree.write("pkg/pyproject.toml", "[tool.rlguard]\nextend = '../shared/base.toml'\nselect = ['RLG003']\n")
    assert _codes(tree.run("check", "--no-cache", "--output-format", "json", "pkg")) == [("pkg/tensor.py", "RLG003")]


def test_extend_mistakes_name_their_file(tree):
    tree.write("base.toml", "[tool.rlguard]\nselct = ['RLG006']\n")
    tree.write("pyproject.toml", "[tool.rlguard]\nextend = 'base.toml'\n")
    tree.write("a.py", "x = 1\n")
    result = tree.run("check", "--no-cache", ".")
    assert result.returncode == 2
    assert result.stderr.strip() == (f"error: {os.path.join(tree.root, 'base.toml')}: [tool.rlguard]: unknown key 'selct' "
                                     "(did you mean 'select'?)")
    tree.write("base.toml", "[tool.rlguard]\nextend = 'pyproject.toml'\n")
    looped = tree.run("check", "--no-cache", ".")
    assert looped.returncode == 2 and "extends itself" in looped.stderr and len(looped.stderr.splitlines()) == 1
    tree.write("pyproject.toml", "[tool.rlguard]\nextend = 'missing.toml'\n")
    assert "missing.toml: no such file" in tree.run("check", "--no-cache", ".").stderr


def test_config_flag_applies_one_file_to_every_path(tree):
    tree.write("pyproject.toml", "[tool.rlguard]\nselect = ['RLG003']\n")
    tree.write("ci/strict.toml", "[tool.rlguard]\nselect = ['RLG006']\n")
    tree.write("old.py", OLD_IMPORT)
    tree.write("tensor.py", TENSOR_JSON)
    assert _codes(tree.run("check", "--no-cache", "--output-format", "json", ".")) == [("tensor.py", "RLG003")]
    flagged = tree.run("check", "--no-cache", "--output-format", "json", "--config", "ci/strict.toml", ".")
    assert _codes(flagged) == [("old.py", "RLG006")]
    missing = tree.run("check", "--no-cache", "--config", "nope.toml", ".")
    assert (missing.returncode, missing.stderr.strip()) == (2, "error: --config: nope.toml: no such file")


def test_extend_select_adds_to_the_selection(tree):
    tree.write("pyproject.toml", "[tool.rlguard]\nselect = ['RLG006']\n")
    tree.write("old.py", OLD_IMPORT)
    tree.write("tensor.py", TENSOR_JSON)
    assert _codes(tree.run("check", "--no-cache", "--output-format", "json", "--extend-select", "RLG003", ".")) == [
        ("old.py", "RLG006"), ("tensor.py", "RLG003")]
    # --select replaces the configuration's selection; --extend-select adds to it.
    assert _codes(tree.run("check", "--no-cache", "--output-format", "json", "--select", "RLG003", ".")) == [
        ("tensor.py", "RLG003")]
    unknown = tree.run("check", "--extend-select", "RLG06", ".")
    assert unknown.returncode == 2 and "--extend-select: unknown rule code 'RLG06'" in unknown.stderr


def test_fix_exit_zero(tree):
    tree.write("hook.py", "from torchrl.trainers import TrainerHookBase\n\n\nclass H(TrainerHookBase):\n    pass\n\n\nhook = H()\n")
    assert tree.run("fix", "--no-cache", ".").returncode == 1  # RLG005 has no fix: it remains
    zero = tree.run("fix", "--no-cache", "--exit-zero", ".")
    assert zero.returncode == 0 and "1 remaining:" in zero.stdout
