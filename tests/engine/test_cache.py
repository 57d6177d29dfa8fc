"""The result cache: a second run parses nothing; a changed file is re-checked alone."""

from __future__ import annotations

import os

from rlguard.config import Config
from rlguard.engine.runner import RunOptions, analyze_project, check
from rlguard.engine.target import Target
from tests.helpers import OLD_IMPORT

TARGET = Target((0, 14, 1), "flag")


def _run(root: str, cache_dir: str):
    options = RunOptions(jobs=1, cache_dir=cache_dir)
    report, project = check([root], Config(root=root), options, TARGET)
    return report, project


def test_second_run_parses_nothing_and_one_change_rechecks_one_file(tree, tmp_path_factory):
    cache_dir = str(tmp_path_factory.mktemp("cache"))
    for i in range(5):
        tree.write(f"m{i}.py", OLD_IMPORT if i % 2 else "x = 1\n")
    first, project = _run(tree.root, cache_dir)
    assert project.analyzed == 5
    second, project = _run(tree.root, cache_dir)
    assert project.analyzed == 0
    assert second.findings == first.findings
    tree.write("m0.py", OLD_IMPORT)
    third, project = _run(tree.root, cache_dir)
    assert project.analyzed == 1
    assert len(third.findings) == len(first.findings) + 1


def test_cache_folder_ignores_itself_and_survives_corruption(tree, tmp_path_factory):
    cache_dir = str(tmp_path_factory.mktemp("cache"))
    tree.write("a.py", OLD_IMPORT)
    first, _ = _run(tree.root, cache_dir)
    with open(os.path.join(cache_dir, ".gitignore")) as handle:
        assert handle.read().strip().endswith("*")
    for folder, _, files in os.walk(cache_dir):
        for name in files:
            if name != ".gitignore":
                with open(os.path.join(folder, name), "wb") as out:
                    out.write(b"not a pickle")
    second, project = _run(tree.root, cache_dir)
    assert project.analyzed == 1 and second.findings == first.findings


def test_settings_change_invalidates(tree, tmp_path_factory):
    cache_dir = str(tmp_path_factory.mktemp("cache"))
    tree.write("a.py", OLD_IMPORT)
    _run(tree.root, cache_dir)
    project = analyze_project([tree.root], Config(root=tree.root), RunOptions(jobs=1, cache_dir=cache_dir), Target((0, 13), "flag"))
    assert project.analyzed == 1


def test_a_change_to_rlguards_rules_invalidates_without_a_new_version(tree, tmp_path_factory, monkeypatch):
    # An install from a git commit keeps its version while its rules change.
    import rlguard.engine.cache as cache

    package = tmp_path_factory.mktemp("package")
    (package / "rules").mkdir()
    (package / "runtime").mkdir()
    rule, runtime = package / "rules" / "rlg001.py", package / "runtime" / "guard.py"
    rule.write_text("x = 1\n")
    runtime.write_text("y = 1\n")
    monkeypatch.setattr(cache, "_PACKAGE", str(package))
    cache_dir = str(tmp_path_factory.mktemp("cache"))
    tree.write("a.py", OLD_IMPORT)
    _run_fresh_stamp(tree.root, cache_dir)
    runtime.write_text("y = 22\n")  # not the linter: the cache stands
    assert _run_fresh_stamp(tree.root, cache_dir)[1].analyzed == 0
    rule.write_text("x = 22\n")
    assert _run_fresh_stamp(tree.root, cache_dir)[1].analyzed == 1


def _run_fresh_stamp(root: str, cache_dir: str):
    """A run in a new process, as far as the code stamp goes: it is computed once per process."""
    import rlguard.engine.cache as cache

    cache._code_stamp.cache_clear()
    return _run(root, cache_dir)


def test_regenerated_data_invalidates(tree, tmp_path_factory, monkeypatch):
    """The README has maintainers regenerate the API model: a cached verdict made with the old one
    must not survive (a cached run once said "All checks passed" where --no-cache found RLG003)."""
    import shutil

    import rlguard
    import rlguard.engine.cache as cache

    package = tmp_path_factory.mktemp("package") / "rlguard"
    shutil.copytree(os.path.dirname(rlguard.__file__), package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "_PACKAGE", str(package))
    cache_dir = str(tmp_path_factory.mktemp("cache"))
    tree.write("a.py", OLD_IMPORT)
    _run_fresh_stamp(tree.root, cache_dir)
    assert _run_fresh_stamp(tree.root, cache_dir)[1].analyzed == 0
    for data in ("engine/apimodel.json", "engine/apimodel_classes.json", "rules/removed_api.json", "rules/catalog.json"):
        path = package / data
        path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # as a regenerated file differs
        assert _run_fresh_stamp(tree.root, cache_dir)[1].analyzed == 1, data


def test_default_cache_lives_at_the_project_root(tree):
    tree.write("pyproject.toml", "[tool.rlguard]\n")
    tree.write("src/a.py", OLD_IMPORT)
    tree.run("check", "src")
    assert os.path.isfile(os.path.join(tree.root, ".rlguard_cache", ".gitignore"))


POLICY = """\
import threading
from torch import nn


class CamPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
"""
COPYING = "import copy\nfrom mypkg.policies import CamPolicy\n\ntwin = copy.deepcopy(CamPolicy())\n"


def test_a_fact_changing_in_one_file_changes_the_verdict_in_another(tree, tmp_path_factory):
    cache_dir = str(tmp_path_factory.mktemp("cache"))
    tree.write("mypkg/__init__.py", "")
    tree.write("mypkg/policies.py", POLICY)
    tree.write("train.py", COPYING)
    first, project = _run(tree.root, cache_dir)
    assert [(f.code, f.path.rsplit("/", 1)[-1]) for f in first.findings] == [("RLG001", "train.py")]
    assert "`self.lock`" in first.findings[0].message
    tree.write("mypkg/policies.py", POLICY + "\n    def __deepcopy__(self, memo):\n        return CamPolicy()\n")
    second, project = _run(tree.root, cache_dir)
    assert second.findings == []
    assert project.analyzed == 1, "only the changed file is parsed again; train.py's verdict is re-resolved from the index"
