"""An older torchrl and tensordict next to this environment's torch, for running code as users of old releases do.

The release wheels come from the cache the removed-API table is generated from (``tests/fixtures/wheels``,
git-ignored; the ``release_wheels`` fixture fills it with pip). They are unpacked into a folder that goes first on the path of a
``python -S`` run, beside a view of this environment's site-packages without torchrl and tensordict:
torch stays the tested one (torchrl's compiled extension does not load against it, which torchrl
tolerates with a warning), and nothing else of the old releases is needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from rlguard_dev.upgrade_table import wheel_path

HIDDEN = ("torchrl", "tensordict")


def _wheel(cache: str, package: str, version: str) -> str:
    found = wheel_path(cache, package, version)
    if found is None:
        pytest.fail(f"no {package} {version} wheel in {cache}: the release_wheels fixture downloads the table's releases")
    return found


def old_stack(folder: Path, wheels: str, torchrl: str, tensordict: str, hidden: tuple[str, ...] = ()) -> list[str]:
    """The path entries that give Python torchrl ``torchrl`` and tensordict ``tensordict`` (run with ``-S``),
    from the release wheels in ``wheels`` (the ``release_wheels`` fixture's folder). The packages named in
    ``hidden`` are left out of the view too, for the caller to put their old releases in the first entry."""
    site, view = folder / "site", folder / "view"
    site.mkdir()
    view.mkdir()
    for package, version in (("torchrl", torchrl), ("tensordict", tensordict)):
        with zipfile.ZipFile(_wheel(wheels, package, version)) as wheel:
            wheel.extractall(site)
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name.partition("-")[0].lower() not in HIDDEN + hidden and not entry.name.endswith(".pth"):
            (view / entry.name).symlink_to(entry)
    return [str(site), str(view)]


# Runs each snippet in a fresh namespace: ["ok", the value it left in BRANCH] or [exception name, detail].
RUNNER = """
import json, sys, traceback, warnings
sys.path[:0] = json.loads(sys.argv[1])
warnings.simplefilter("ignore")
results = []
for source in json.load(open(sys.argv[2], encoding="utf-8")):
    scope = {}
    try:
        exec(compile(source, "<snippet>", "exec"), scope)
        results.append(["ok", str(scope.get("BRANCH"))])
    except Exception as error:
        results.append([type(error).__name__, traceback.format_exc(limit=1)[-300:]])
print(json.dumps(results))
"""


def run_snippets(sources: list[str], folder: Path, paths: list[str] | None = None) -> list[tuple[str, str]]:
    """Each snippet's verdict, ("ok", BRANCH) or (exception, detail), on this environment's stack or,
    with ``paths`` from ``old_stack``, on the old one."""
    data, runner = folder / "snippets.json", folder / "runner.py"
    data.write_text(json.dumps(sources), encoding="utf-8")
    runner.write_text(RUNNER, encoding="utf-8")
    isolation = ["-S"] if paths else []
    done = subprocess.run([sys.executable, *isolation, str(runner), json.dumps(paths or []), str(data)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return [(r[0], r[1]) for r in json.loads(done.stdout.strip().splitlines()[-1])]
