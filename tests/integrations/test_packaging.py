"""The wheel installs what users run, and not the maintainers' generators (``rlguard_dev``).

The wheel is built from a copy of the files setuptools reads (the real pyproject.toml), so a
package list that matched ``rlguard_dev`` (``include = ["rlguard*"]`` would) fails here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.integrations.conftest import CHECKOUT

pytest.importorskip("setuptools")
pytest.importorskip("wheel")


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(CHECKOUT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("rlguard", "rlguard_dev"):
        shutil.copytree(CHECKOUT / package, source / package, ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
                   check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = out.glob("rlguard-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_the_wheel_leaves_out_the_generators(wheel_names):
    assert (CHECKOUT / "rlguard_dev" / "catalog.py").is_file()  # the source the wheel was built from had them
    assert [name for name in wheel_names if name.startswith("rlguard_dev")] == []


def test_the_wheel_holds_the_package_and_the_data_it_reads(wheel_names):
    for name in ("rlguard/cli.py", "rlguard/docs.py", "rlguard/engine/runner.py", "rlguard/runtime/install.py",
                 "rlguard/rules/catalog.json", "rlguard/rules/removed_api.json", "rlguard/engine/apimodel.json", "rlguard/engine/builtins_model.json",
                 "rlguard/engine/apimodel_classes.json", "rlguard/py.typed"):
        assert name in wheel_names, name


# Runs the commands that show rule texts with the generators made unimportable, as in an installed wheel.
WITHOUT_GENERATORS = """
import sys
sys.modules["rlguard_dev"] = None
from rlguard.cli import main
for args in (["rules"], ["explain", "RLG001"], ["explain", "RLG000"], ["check", "--format", "sarif", "--no-cache", sys.argv[1]]):
    main(args)
assert not [name for name in sys.modules if name.startswith("rlguard_dev")]
"""


def test_rules_explain_and_sarif_run_without_the_generators(tmp_path):
    (tmp_path / "old.py").write_text("from torchrl.collectors import SyncDataCollector\n")
    result = subprocess.run([sys.executable, "-c", WITHOUT_GENERATORS, str(tmp_path / "old.py")], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
    assert result.returncode in (0, 1), result.stderr
    assert "RLG001  uncopyable-policy" in result.stdout
    assert "## Why is this bad?" in result.stdout  # RLG001's page
    assert "A file that does not parse" in result.stdout  # RLG000's page
    assert '"ruleId": "RLG006"' in result.stdout and "helpUri" in result.stdout
