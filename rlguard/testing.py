"""Run the real engine on snippets: used by rule examples, tests and docs checks."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any
from collections.abc import Iterator, Mapping, Sequence

from rlguard.config import Config
from rlguard.engine.findings import Finding
from rlguard.engine.runner import RunOptions, check
from rlguard.engine.target import Target, lowest_admitted, newest_admitted, parse_version
from rlguard.fix.run import FixRequest, fix_file
from rlguard.rules.data import NEWEST_KNOWN_TORCHRL

MAIN_FILE = "example.py"


def _write(root: str, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as out:
            out.write(text)


def _config(root: str, options: Mapping[str, Mapping[str, Any]] | None) -> Config:
    return Config(root=root, rule_options=dict(options or {}))


def _target(target: str | None) -> Target:
    """A version judges at that version; a specifier (``>=0.11``) as a project's pin would."""
    if target and target[0] in "<>=~!":
        newest = newest_admitted(target) or NEWEST_KNOWN_TORCHRL
        return Target(newest, f"pin torchrl{target}", lowest_admitted(target))
    return Target(parse_version(target) if target else NEWEST_KNOWN_TORCHRL, "flag" if target else "default")


def check_source(source: str, *, select: Sequence[str] | None = None, target: str | None = None,
                 options: Mapping[str, Mapping[str, Any]] | None = None,
                 extra_files: Mapping[str, str] | None = None) -> list[Finding]:
    """Findings in ``source`` (checked as example.py beside ``extra_files``), from a real engine run."""
    with tempfile.TemporaryDirectory() as root, _inside(root):
        _write(root, {**(extra_files or {}), MAIN_FILE: source})
        report, _ = check(["."], _config(root, options), RunOptions(select=select, jobs=1, use_cache=False), _target(target))
        # Run from the project's folder, as a user would: other files are named relative to it.
        return [f._replace(path=os.path.join(root, f.path)) for f in report.findings if f.path == MAIN_FILE]


@contextlib.contextmanager
def _inside(folder: str) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def fix_source(source: str, *, unsafe: bool = False, select: Sequence[str] | None = None,
               target: str | None = None, options: Mapping[str, Mapping[str, Any]] | None = None,
               extra_files: Mapping[str, str] | None = None) -> str:
    """``source`` after ``rlguard fix`` (with --unsafe-fixes if asked), from a real engine run."""
    with tempfile.TemporaryDirectory() as root:
        _write(root, {**(extra_files or {}), MAIN_FILE: source})
        config = _config(root, options)
        _, project = check([root], config, RunOptions(select=select, jobs=1, use_cache=False), _target(target))
        main = os.path.join(root, MAIN_FILE)
        request = FixRequest(project.settings, project.index, unsafe, config)
        outcome = fix_file(main, request)
        return (outcome.fixed or outcome.original or b"").decode("utf-8")
