"""Copies of torchrl or tensordict inside a project, and which torchrl each file is written for.

Python decides which torchrl a file gets by resolving ``import torchrl`` from that file, so does
rlguard. Two questions are answered here, neither from folder names alone:

- Is a file a module *of* torchrl or tensordict (``in_library_copy``)? Only if Python names it so:
  its package chain starts at a ``torchrl`` or ``tensordict`` package. OmniDrones'
  ``omni_drones/utils/torchrl/env.py`` is ``omni_drones.utils.torchrl.env``, the user's own code.
- Is a file part of a *vendored* library (``LibraryTree``)? A vendored library is a source tree that
  carries its own packaging metadata naming torchrl or tensordict (``setup.py``, ``pyproject.toml``,
  ``setup.cfg``, ``PKG-INFO``, or a ``*.dist-info``/``*.egg-info`` of it) beside the package itself,
  inside the project (never the project itself). Its whole tree (the package, ``test/``,
  ``tutorials/``, ``examples/``, ``benchmarks/``, ...) is library code written for the copy's own
  version: every file in it resolves ``import torchrl`` to the copy, since the tree's metadata makes
  it the project root of its files. Like ruff with ``third_party/``, a run leaves it out with a note,
  unless ``include-vendored`` asks for it, and then judges it at the copy's version. ``rlguard fix``
  never rewrites it.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from rlguard.engine.toml_files import TomlError, read_toml

LIBRARIES = ("torchrl", "tensordict")
_VERSION = re.compile(r"""^\s*(?:__version__|version)\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""", re.MULTILINE)
_METADATA_VERSION = re.compile(r"^Version:\s*(\S+)", re.MULTILINE)
_PYPROJECT_VERSION = re.compile(r"""^\s*version\s*=\s*["']([^"']+)["']""", re.MULTILINE)


class LibraryTree(NamedTuple):
    """A vendored copy of ``library``: the folder its tree starts at, and the version it states."""

    root: str  # absolute
    library: str  # "torchrl" or "tensordict"
    version: str | None  # None when the copy states none

    @property
    def judged_at(self) -> tuple[int, ...] | None:
        """The torchrl version its code is judged at (tensordict 0.N goes with torchrl 0.N)."""
        from rlguard.engine.target import parse_version

        return parse_version(self.version) if self.version else None

    def holds(self, path: str) -> bool:
        return os.path.abspath(path).startswith(self.root + os.sep)

    def describe(self, relative_to: str) -> str:
        """``vendored torchrl 0.4.0 at third_party/rl``."""
        where = os.path.relpath(self.root, relative_to).replace(os.sep, "/")
        return f"vendored {self.library}{' ' + self.version if self.version else ''} at {where}"


def in_library_copy(module: str) -> bool:
    """A module of torchrl or tensordict themselves, as Python names it from its package chain
    (``torchrl.envs``, also in a bare copy ``vendor/torchrl/envs``): the library's own definitions."""
    return module.partition(".")[0] in LIBRARIES


def tree_of(path: str, project_root: str) -> LibraryTree | None:
    """The vendored library whose tree holds ``path``, below ``project_root`` (the project itself,
    even a checkout of torchrl, is never vendored)."""
    boundary = os.path.abspath(project_root)
    folder = os.path.dirname(os.path.abspath(path))
    while folder.startswith(boundary + os.sep):
        tree = library_tree(folder)
        if tree is not None and tree.holds(path):
            return tree
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


@functools.lru_cache(maxsize=4096)
def library_tree(folder: str) -> LibraryTree | None:
    """The vendored library that ``folder`` holds, if its metadata names the package beside it.

    Source metadata (``setup.py``, ...) makes the whole folder the tree; an installed copy's
    ``*.dist-info`` only its package folder (``pip install --target vendor`` puts others beside it).
    """
    for library in LIBRARIES:
        package = os.path.join(folder, library)
        if not os.path.isfile(os.path.join(package, "__init__.py")):
            continue
        if _source_metadata_names(folder, library):
            return LibraryTree(folder, library, copy_version(package, library))
        if _installed_metadata(folder, library):
            return LibraryTree(package, library, copy_version(package, library))
    return None


def _source_metadata_names(folder: str, library: str) -> bool:
    name = re.escape(library)
    if _search(os.path.join(folder, "setup.py"), re.compile(rf"""\b(?:package_)?name\s*=\s*["']{name}["']""")):
        return True
    if _search(os.path.join(folder, "setup.cfg"), re.compile(rf"^\s*name\s*=\s*{name}\s*$", re.MULTILINE)):
        return True
    if _search(os.path.join(folder, "PKG-INFO"), re.compile(rf"^Name:\s*{name}\s*$", re.MULTILINE)):
        return True
    return _pyproject_name(os.path.join(folder, "pyproject.toml")) == library


def _pyproject_name(path: str) -> str | None:
    try:
        document = read_toml(path)
    except TomlError:
        return None
    name = document.get("project", {}).get("name") or document.get("tool", {}).get("poetry", {}).get("name")
    return name if isinstance(name, str) else None


def _installed_metadata(folder: str, library: str) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names if (n.startswith(f"{library}-") or n == f"{library}.egg-info")
                  and n.endswith((".dist-info", ".egg-info")))


def copy_version(package: str, library: str) -> str | None:
    """The version a copy of ``library`` (its package folder) states: its installed metadata, its
    ``PKG-INFO``, ``pyproject.toml``, ``version.py`` or ``version.txt``; None when it states none."""
    holder = os.path.dirname(package)
    for candidate in _installed_metadata(holder, library):
        for file in ("METADATA", "PKG-INFO"):
            found = _search(os.path.join(holder, candidate, file), _METADATA_VERSION)
            if found:
                return found
    for path, pattern in ((os.path.join(holder, "PKG-INFO"), _METADATA_VERSION),
                          (os.path.join(holder, "pyproject.toml"), _PYPROJECT_VERSION),
                          (os.path.join(package, "version.py"), _VERSION),
                          (os.path.join(package, "_version.py"), _VERSION),
                          (os.path.join(holder, "version.txt"), re.compile(r"^\s*(\d\S*)"))):
        found = _search(path, pattern)
        if found:
            return found
    return None


def _search(path: str, pattern: re.Pattern[str]) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            match = pattern.search(handle.read(200_000))
    except OSError:
        return None
    return (match.group(1) if match.groups() else match.group()) if match else None


class Partition(NamedTuple):
    kept: list[str]  # the files to check
    skipped: dict[LibraryTree, list[str]]  # files of vendored trees left out, by tree
    included: tuple[LibraryTree, ...]  # vendored trees checked at their own version


def partition(files: Sequence[str], project_root: str, include: bool) -> Partition:
    """Split a run's files: vendored trees are left out, or kept and judged at their own version."""
    library_tree.cache_clear()  # per run: a long-lived process (the language server) sees trees come and go
    kept: list[str] = []
    skipped: dict[LibraryTree, list[str]] = {}
    included: dict[LibraryTree, None] = {}
    for path in files:
        tree = tree_of(path, project_root)
        if tree is None or include:
            kept.append(path)
            if tree is not None:
                included[tree] = None
        else:
            skipped.setdefault(tree, []).append(path)
    return Partition(kept, skipped, tuple(included))


def skip_notes(skipped: dict[LibraryTree, list[str]], project_root: str) -> list[str]:
    """One line per vendored tree left out: ``skipped 412 files of a vendored torchrl 0.4.0 at third_party/rl``."""
    notes = []
    for tree, files in sorted(skipped.items()):
        count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
        notes.append(f"skipped {count} of a {tree.describe(project_root)} (`include-vendored = true` checks it)")
    return notes


def judged_at(path: str, trees: Iterable[LibraryTree]) -> LibraryTree | None:
    """The included vendored tree that holds ``path``, whose version it is judged at."""
    return next((tree for tree in trees if tree.holds(path)), None)
