"""TOML files as rlguard reads them: a project's pyproject.toml (configuration, torchrl pin), and a vendored
library's (its name).

Each is parsed once per process, and kept between runs beside the project's result cache (``.rlguard_cache``
next to the file, where a run has already made it) as the document ``marshal`` writes, with the file's
identity (path, inode, size, modification and change times): importing tomllib costs about 4 ms, a
fifteenth of a warm one-file check, and most runs read an unchanged file. A file changed in the last two
seconds is not kept (a second change within the clock's granularity would keep its times: git's "racy"
files), nor a document marshal cannot write (TOML dates). Callers must not change the document they get.
"""

from __future__ import annotations

import marshal
import os
import sys
import time
from typing import Any

from rlguard.engine.generated import replace_whole

CACHE_FOLDER = ".rlguard_cache"  # the default place of a project's result cache (``rlguard.commands``)
_FORMAT = ("rlguard-toml", 1, sys.version_info[:2], marshal.version)  # marshal's format follows Python's
_SETTLED_NS = 2_000_000_000

Identity = tuple[int, int, int, int]
_documents: dict[str, tuple[Identity, dict[str, Any]]] = {}


class TomlError(Exception):
    """A TOML file that cannot be read, decoded or parsed; the message says why."""


def read_toml(path: str) -> dict[str, Any]:
    """The document in ``path`` (not to be changed). Raises ``TomlError``."""
    try:
        info = os.stat(path)
    except OSError as error:
        raise TomlError(str(error)) from None
    identity = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    known = _documents.get(path)
    if known is not None and known[0] == identity:
        return known[1]
    kept = os.path.join(os.path.dirname(os.path.abspath(path)), CACHE_FOLDER, f"{os.path.basename(path)}.marshal")
    document = _kept(kept, path, identity)
    if document is None:
        document = _parse(path)
        if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) > _SETTLED_NS:
            _keep(kept, path, identity, document)
    _documents[path] = (identity, document)
    return document


def _parse(path: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise TomlError(str(error)) from None


def _kept(kept: str, path: str, identity: Identity) -> dict[str, Any] | None:
    try:
        with open(kept, "rb") as handle:
            stored = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        return None  # none kept, or unreadable: parsed again
    if not isinstance(stored, tuple) or len(stored) != 4 or stored[:3] != (_FORMAT, os.path.abspath(path), identity) \
            or not isinstance(stored[3], dict):
        return None
    return stored[3]


def _keep(kept: str, path: str, identity: Identity, document: dict[str, Any]) -> None:
    """Written only where the project's cache folder exists, whole (``replace_whole``). Failing costs only speed."""
    if not os.path.isdir(os.path.dirname(kept)):
        return
    try:
        replace_whole(kept, marshal.dumps((_FORMAT, os.path.abspath(path), identity, document)))
    except (ValueError, OSError):  # a value marshal cannot write (a TOML date); a read-only or full disk
        pass
