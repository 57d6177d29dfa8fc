"""Helpers shared by the test folders."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
import uuid

OLD_IMPORT = "from torchrl.collectors import SyncDataCollector\n"


class Tree:
    """A temporary project on disk and a way to run the real CLI on it."""

    def __init__(self, root):
        self.root = root

    def write(self, relative: str, text: str, mode: str = "w") -> str:
        path = os.path.join(self.root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if "b" in mode:
            with open(path, mode) as out:
                out.write(text)
        else:
            with open(path, mode, encoding="utf-8", newline="") as out:
                out.write(textwrap.dedent(text))
        return path

    def run(self, *args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "rlguard", *args], cwd=cwd or self.root,
                              capture_output=True, text=True, timeout=300)



def analyzed_project(root, paths=None, target=None):
    """The engine's whole-project pass (no cache, one process) over ``paths`` (default: ``root``),
    configured at ``root``: for tests that ask the project index directly."""
    from rlguard.config import Config
    from rlguard.engine.runner import RunOptions, analyze_project
    from rlguard.engine.target import NEWEST_KNOWN_TORCHRL, Target

    return analyze_project([str(path) for path in (paths or [root])], Config(root=str(root)),
                           RunOptions(jobs=1, use_cache=False), target or Target(NEWEST_KNOWN_TORCHRL, "default"))


def index_of(root, files: dict[str, str]):
    """The project index over ``files`` (name: source) written under ``root``, and the first file's path."""
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    return analyzed_project(root).index, str(root / next(iter(files)))


def run_as_module(code: str) -> dict:
    """Run a program as a module of its own (dataclasses look their module up in ``sys.modules``);
    its namespace afterwards."""
    module = types.ModuleType(f"program_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    try:
        exec(compile(code, "<program>", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module.__dict__


def importable_module(tmp_path, monkeypatch, text: str):
    """For a fixture: ``text`` as a module on ``sys.path`` under a unique name (``helpers_<hex>``), dropped
    from ``sys.modules`` once the fixture ends. Yields its name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    name = f"helpers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(text)
    yield name
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


def caller_and_helpers(tmp_path, monkeypatch, helpers: str, caller: str):
    """For a fixture: ``helpers`` importable (``importable_module``); yields a function that turns statements
    into a caller module (``caller`` formatted with the helpers' module name, then the statements) and the
    helpers as the extra files a check sees beside it."""
    module = importable_module(tmp_path, monkeypatch, helpers)
    name = next(module)
    yield (lambda statements: caller.format(helpers=name) + statements + "\n"), {f"{name}.py": helpers}
    next(module, None)


def findings_of(code: str, source: str, extra: dict) -> list:
    """Rule ``code``'s findings in ``source``, checked beside the ``extra`` files."""
    from rlguard.testing import check_source

    return [f for f in check_source(source, select=[code], extra_files=extra) if f.code == code]
