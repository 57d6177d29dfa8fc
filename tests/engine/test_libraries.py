"""Vendored copies of torchrl and tensordict: found by their packaging metadata, left out of a run with
a note (or checked at their own version with ``include-vendored``), never rewritten; a user package
that only happens to be named ``torchrl`` is the user's code, checked and fixed like any other."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rlguard.engine.libraries import LibraryTree, in_library_copy, library_tree, tree_of

# NavRL's shape: torchrl 0.4.0 and tensordict 0.4.0 checked out under third_party/, each with its
# own setup.py and version.txt, and their own tests and tutorials using names the copy defines.
VENDORED_TORCHRL = {
    "third_party/rl/setup.py": 'package_name = "torchrl"\n\nsetup(name=package_name, version=version)\n',
    "third_party/rl/version.txt": "0.4.0\n",
    "third_party/rl/torchrl/__init__.py": "",
    "third_party/rl/torchrl/data/__init__.py": "from .tensor_specs import CompositeSpec\n",
    "third_party/rl/torchrl/data/tensor_specs.py": "class CompositeSpec:\n    pass\n",
    "third_party/rl/test/test_specs.py": "from torchrl.data import CompositeSpec\n\nspec = CompositeSpec()\n",
    "third_party/rl/tutorials/collect.py": "from torchrl.collectors import SyncDataCollector\n",
    "third_party/tensordict/setup.py": 'package_name = "tensordict"\n',
    "third_party/tensordict/version.txt": "0.4.0\n",
    "third_party/tensordict/tensordict/__init__.py": "",
    "third_party/tensordict/test/test_nn.py": "from tensordict.nn import set_interaction_mode\n",
}
USER = {"train.py": "from torchrl.data import CompositeSpec\n\nspec = CompositeSpec()\n"}


def _write(tree, files: dict[str, str]) -> None:
    for path, text in files.items():
        tree.write(path, text)


def _lines(output: str, fragment: str) -> list[str]:
    return [line for line in output.splitlines() if fragment in line]


def test_a_vendored_tree_is_left_out_with_one_note_per_copy(tree):
    _write(tree, {".git/HEAD": "", **VENDORED_TORCHRL, **USER})
    run = tree.run("check", "--no-cache", "--target-torchrl", "0.14", ".")
    assert run.returncode == 1, run.stderr
    assert _lines(run.stdout, "RLG") == [
        line for line in run.stdout.splitlines() if line.startswith("train.py:")] and _lines(run.stdout, "train.py:1:")
    assert "third_party/rl/test" not in run.stdout and "third_party/tensordict/test" not in run.stdout
    assert "Skipped 6 files of a vendored torchrl 0.4.0 at third_party/rl" in run.stdout
    assert "Skipped 3 files of a vendored tensordict 0.4.0 at third_party/tensordict" in run.stdout


def test_one_file_of_a_vendored_tree_is_left_out_as_in_a_whole_run(tree):
    """pre-commit names files one by one: the verdict must be the same as for the folder."""
    _write(tree, {".git/HEAD": "", **VENDORED_TORCHRL})
    run = tree.run("check", "--no-cache", "--target-torchrl", "0.14", "third_party/rl/test/test_specs.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Skipped 1 file of a vendored torchrl 0.4.0 at third_party/rl" in run.stdout


def test_an_included_tree_is_judged_at_its_own_version_and_never_fixed(tree):
    """With ``include-vendored``, a copy at 0.12 reports what 0.12 lacks (CompositeSpec, gone in 0.11) but
    not what it still has (SyncDataCollector, gone in 0.13), without a fix; the user's code is judged at 0.14."""
    files = {**VENDORED_TORCHRL, "third_party/rl/version.txt": "0.12.0\n",
             "pyproject.toml": "[tool.rlguard]\ninclude-vendored = true\n", **USER}
    _write(tree, files)
    check = tree.run("check", "--no-cache", "--target-torchrl", "0.14", ".")
    vendored = _lines(check.stdout, "third_party/")
    assert [line.split(":")[0] for line in vendored] == ["third_party/rl/test/test_specs.py"], check.stdout
    assert "torchrl 0.11" in vendored[0] and "[*]" not in vendored[0]
    assert "[*]" in _lines(check.stdout, "train.py:1:")[0]
    assert "Skipped" not in check.stdout
    fix = tree.run("fix", "--no-cache", "--target-torchrl", "0.14", ".")
    for path, text in files.items():
        if path.startswith("third_party/"):
            with open(os.path.join(tree.root, path), encoding="utf-8") as handle:
                assert handle.read() == text, path
    with open(os.path.join(tree.root, "train.py"), encoding="utf-8") as handle:
        assert handle.read().startswith("from torchrl.data import Composite\n"), fix.stdout + fix.stderr


def test_fix_of_a_vendored_file_from_stdin_passes_it_through(tree):
    _write(tree, {".git/HEAD": "", **VENDORED_TORCHRL})
    source = VENDORED_TORCHRL["third_party/rl/test/test_specs.py"]
    run = subprocess.run([sys.executable, "-m", "rlguard", "fix", "--target-torchrl", "0.14", "--stdin-filename",
                          "third_party/rl/test/test_specs.py", "-"], input=source, cwd=tree.root,
                         capture_output=True, text=True, timeout=300)
    assert run.stdout == source, run.stderr


# OmniDrones' shape: its own package has a subpackage named torchrl, and pins no copy of torchrl.
OMNIDRONES = {
    ".git/HEAD": "",
    "setup.py": 'from setuptools import setup\n\nsetup(name="omni_drones", install_requires=["torchrl==0.3.1"])\n',
    "omni_drones/__init__.py": "",
    "omni_drones/utils/__init__.py": "",
    "omni_drones/utils/torchrl/__init__.py": "from .transforms import spec_of\n",
    "omni_drones/utils/torchrl/transforms.py": (
        "import torch\nfrom torchrl.data import (\n    BoundedTensorSpec,\n    CompositeSpec,\n)\n\n\n"
        "def spec_of(n):\n    low = torch.zeros(n)\n"
        "    return CompositeSpec(action=BoundedTensorSpec(low, low + 1, shape=(n,)))\n"
    ),
}


def test_a_user_package_named_torchrl_is_checked_and_fixed(tree):
    _write(tree, OMNIDRONES)
    check = tree.run("check", "--no-cache", "--target-torchrl", "0.14", ".")
    flagged = _lines(check.stdout, "omni_drones/utils/torchrl/transforms.py:")
    assert [line.split(": ")[1].split()[0] for line in flagged] == ["RLG007", "RLG007"], check.stdout
    assert "Skipped" not in check.stdout
    fix = tree.run("fix", "--no-cache", "--target-torchrl", "0.14", ".")
    assert fix.returncode == 0, fix.stdout + fix.stderr
    # The fixed package runs on the installed torchrl 0.14.1: the names it now imports exist.
    probe = "from omni_drones.utils.torchrl import spec_of\nprint(type(spec_of(3)).__name__)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=tree.root, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "Composite", done.stderr


@pytest.mark.parametrize("files, found", [
    ({"setup.py": 'package_name = "torchrl"\n'}, "torchrl"),
    ({"setup.cfg": "[metadata]\nname = tensordict\n"}, "tensordict"),
    ({"pyproject.toml": '[project]\nname = "torchrl"\n'}, "torchrl"),
    ({"PKG-INFO": "Metadata-Version: 2.1\nName: torchrl\nVersion: 0.6.0\n"}, "torchrl"),
    ({"setup.py": 'setup(name="mylab", install_requires=["torchrl"])\n'}, None),  # requires it, is not it
    ({"pyproject.toml": '[project]\nname = "torchrl-tools"\n'}, None),
    ({"version.txt": "0.4.0\n"}, None),  # a version alone names nothing
    ({}, None),
])
def test_a_tree_is_a_copy_when_its_metadata_names_the_package_beside_it(tmp_path, files, found):
    library = found or ("tensordict" if "tensordict" in str(files) else "torchrl")
    (tmp_path / library).mkdir()
    (tmp_path / library / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    library_tree.cache_clear()
    tree = library_tree(str(tmp_path))
    assert (tree.library if tree else None) == found


def test_an_installed_copy_is_only_its_package(tmp_path):
    """``pip install --target vendor``: the dist-info names the package; the other packages beside it are not torchrl."""
    (tmp_path / "vendor" / "tensordict").mkdir(parents=True)
    (tmp_path / "vendor" / "tensordict" / "__init__.py").write_text("")
    (tmp_path / "vendor" / "tensordict-0.5.0.dist-info").mkdir()
    (tmp_path / "vendor" / "tensordict-0.5.0.dist-info" / "METADATA").write_text("Name: tensordict\nVersion: 0.5.0\n")
    library_tree.cache_clear()
    root = str(tmp_path)
    assert tree_of(str(tmp_path / "vendor" / "tensordict" / "nn.py"), root) == \
        LibraryTree(str(tmp_path / "vendor" / "tensordict"), "tensordict", "0.5.0")
    assert tree_of(str(tmp_path / "vendor" / "other.py"), root) is None


def test_the_project_itself_is_never_vendored(tmp_path):
    """rlguard run inside a checkout of torchrl checks torchrl: the boundary is the project root."""
    (tmp_path / "torchrl").mkdir()
    (tmp_path / "torchrl" / "__init__.py").write_text("")
    (tmp_path / "setup.py").write_text('package_name = "torchrl"\n')
    library_tree.cache_clear()
    assert tree_of(str(tmp_path / "test" / "test_envs.py"), str(tmp_path)) is None
    assert tree_of(str(tmp_path / "test" / "test_envs.py"), str(tmp_path.parent)) is not None


def test_the_library_itself_is_named_by_its_package_chain():
    assert in_library_copy("torchrl.envs") and in_library_copy("tensordict")
    assert not in_library_copy("omni_drones.utils.torchrl.env") and not in_library_copy("torchrl_utils")


def test_include_vendored_must_be_a_boolean(tree):
    tree.write("pyproject.toml", '[tool.rlguard]\ninclude-vendored = "yes"\n')
    tree.write("a.py", "x = 1\n")
    run = tree.run("check", "a.py")
    assert run.returncode == 2
    assert run.stderr.strip().endswith("include-vendored must be true or false, got 'yes'") and "Traceback" not in run.stderr


def test_a_vendored_tree_is_what_its_own_files_import(tmp_path):
    """As Python resolves it from each file of the tree (the tree's metadata makes it their project root,
    or ``sys.path[0]`` is a folder of it), ``import torchrl`` reaches the copy: the tree is written for it."""
    from rlguard.engine.project import ModuleResolver
    from tests.engine.test_project import write

    write(tmp_path, {".git/HEAD": "", **VENDORED_TORCHRL, **USER})
    library_tree.cache_clear()
    resolver = ModuleResolver()
    copy = str(tmp_path / "third_party" / "rl" / "torchrl" / "__init__.py")
    for name in ("third_party/rl/test/test_specs.py", "third_party/rl/tutorials/collect.py"):
        path = str(tmp_path / name)
        assert resolver.resolve("torchrl", path) == (copy,)
        assert tree_of(path, str(tmp_path)) == LibraryTree(str(tmp_path / "third_party" / "rl"), "torchrl", "0.4.0")
    assert tree_of(str(tmp_path / "train.py"), str(tmp_path)) is None
