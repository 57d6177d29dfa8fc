"""A content-addressed result cache: a second run on an unchanged tree parses nothing.

A file's entry is keyed by its bytes, rlguard's own code and data files (the API model, the
removed-API table, the rule catalog) and the settings. Verdicts that
depend on other files are not cached as verdicts: the cached part is each file's facts
and pending findings, and the project index is re-resolved from them on every run.
"""

from __future__ import annotations

import functools
import os
import pickle

from rlguard import __version__
from rlguard.engine.analyze import FileResult
from rlguard.engine.generated import replace_whole
from rlguard.engine.hashing import new_hash

_GITIGNORE = "# Created by rlguard; the cache is local state.\n*\n"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.cache  # once per process: every configuration group of a run shares it
def _code_stamp() -> str:
    """Sizes and modification times of rlguard's linter sources and of the data it judges with.

    The version alone is not enough: an install from a git commit, or an editable one,
    keeps its version while its rules change, and stale verdicts would outlive them. The
    generated data files (the API model, the removed-API table, the rule catalog, ...) decide
    verdicts as much as the code: regenerating one must re-check every file. So every file of
    the package counts, except the runtime (which the linter never loads) and bytecode.
    """
    stamp = new_hash()
    for folder, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d not in ("runtime", "__pycache__"))
        for name in sorted(f for f in files if not f.endswith((".pyc", ".pyo"))):
            info = os.stat(os.path.join(folder, name))
            stamp.update(f"{os.path.relpath(os.path.join(folder, name), _PACKAGE)}:{info.st_size}:{info.st_mtime_ns}\n".encode())
    return stamp.hexdigest()[:16]


class ResultCache:
    def __init__(self, directory: str, fingerprint: str) -> None:
        self.directory = directory
        self._salt = f"{__version__}:{_code_stamp()}:{fingerprint}".encode()
        self._ready = False

    def key(self, path: str, data: bytes, codes: tuple[str, ...] = ()) -> str:
        """``codes``: the rules a file needs for what its imports reach (``Settings.callers``)."""
        digest = new_hash(self._salt)
        digest.update(repr(codes).encode())
        digest.update(os.path.abspath(path).encode())
        digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def get(self, key: str) -> FileResult | None:
        try:
            with open(os.path.join(self.directory, key[:2], key), "rb") as handle:
                value = pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            return None  # missing or corrupt entries are simply recomputed
        return value if isinstance(value, FileResult) else None

    def put(self, key: str, result: FileResult) -> None:
        try:
            self._prepare()
            folder = os.path.join(self.directory, key[:2])
            os.makedirs(folder, exist_ok=True)
            replace_whole(os.path.join(folder, key), pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            pass  # a read-only or full disk only costs speed

    def _prepare(self) -> None:
        if self._ready:
            return
        os.makedirs(self.directory, exist_ok=True)
        marker = os.path.join(self.directory, ".gitignore")
        if not os.path.exists(marker):
            with open(marker, "w", encoding="utf-8") as out:
                out.write(_GITIGNORE)
        self._ready = True
