"""Find the files to lint: ``*.py`` and ``*.pyi`` under the given paths, minus what is excluded."""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterable, Sequence

SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", "build", "dist", ".tox", ".nox", ".venv", "venv",
     ".mypy_cache", ".pytest_cache", ".ruff_cache", ".rlguard_cache", "node_modules", ".eggs"}
)
NOTEBOOK_SUFFIX = ".ipynb"  # rlguard.notebook reads them; this name lets a run without one skip that import
SUFFIXES = (".py", ".pyi", NOTEBOOK_SUFFIX)


def is_notebook(path: str) -> bool:
    """A Jupyter notebook, which ``rlguard.notebook`` reads: asked here, so a run without one never imports it."""
    return path.endswith(NOTEBOOK_SUFFIX)


class Discovery:
    __slots__ = ("files", "skipped")

    def __init__(self) -> None:
        self.files: list[str] = []
        self.skipped: list[tuple[str, str]] = []  # (path, reason)


class DiscoveryError(Exception):
    """A path named on the command line does not exist: a usage error."""


def discover(paths: Sequence[str], exclude: Sequence[str] = (), root: str = ".") -> Discovery:
    result = Discovery()
    found: list[str] = []
    unfiltered: list[str] = []  # under a folder named explicitly although .gitignore lists it
    for path in paths or ["."]:
        if os.path.isdir(path):
            walked = list(_walk(path, exclude, root, result))
            (unfiltered if _git_ignored([os.path.join(path, "")]) else found).extend(walked)
        elif os.path.lexists(path):
            _add_file(path, result, explicit=True)  # named explicitly: always checked
        else:
            raise DiscoveryError(f"{path}: no such file or directory")
    ignored = _git_ignored(found)
    for path in [*found, *unfiltered]:
        if path not in ignored:
            _add_file(path, result, explicit=False)
    result.files = sorted(dict.fromkeys(result.files))
    return result


def _walk(top: str, exclude: Sequence[str], root: str, result: Discovery) -> Iterable[str]:
    # followlinks=False: a symlink loop cannot trap the walk.
    for directory, dirnames, filenames in os.walk(top, onerror=lambda e: result.skipped.append((e.filename, e.strerror or str(e)))):
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in SKIPPED_DIRS and not d.endswith(".egg-info")
            and not os.path.isfile(os.path.join(directory, d, "pyvenv.cfg"))
            and not _excluded(os.path.join(directory, d), exclude, root)
        )
        for name in sorted(filenames):
            path = os.path.join(directory, name)
            if name.endswith(SUFFIXES) and not _excluded(path, exclude, root):
                yield path


def _excluded(path: str, patterns: Sequence[str], root: str) -> bool:
    if not patterns:
        return False
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    name = os.path.basename(path)
    return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) or relative.startswith(p.rstrip("/") + "/") for p in patterns)


def _add_file(path: str, result: Discovery, explicit: bool) -> None:
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        result.skipped.append((path, error.strerror or str(error)))
        return
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        result.skipped.append((path, f"{kind}, not a source file"))
        return
    result.files.append(path)


def _git_ignored(paths: list[str]) -> set[str]:
    """Paths .gitignore excludes, asking git once per repository; empty outside git."""
    if not paths:
        return set()
    import subprocess  # here: a run on named files never asks git, and this import is not free

    by_repo: dict[str, list[str]] = {}
    for path in paths:
        by_repo.setdefault(_repo_of(os.path.dirname(path) or "."), []).append(path)
    ignored: set[str] = set()
    for repo, members in by_repo.items():
        if not repo:
            continue
        try:
            out = subprocess.run(
                ["git", "-C", repo, "check-ignore", "-z", "--stdin"],
                input="\0".join(os.path.abspath(p) for p in members).encode(),
                capture_output=True, timeout=30, check=False,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        hits = {os.path.abspath(p) for p in out.decode(errors="replace").split("\0") if p}
        ignored.update(p for p in members if os.path.abspath(p) in hits)
    return ignored


_repo_cache: dict[str, str] = {}


def _repo_of(directory: str) -> str:
    """The git work tree containing a directory, found by walking up to a ``.git`` entry."""
    start = os.path.abspath(directory)
    if start in _repo_cache:
        return _repo_cache[start]
    current = start
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            break
        parent = os.path.dirname(current)
        if parent == current:
            current = ""
            break
        current = parent
    _repo_cache[start] = current
    return current
