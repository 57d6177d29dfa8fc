"""Atomic writes that keep the file's mode and never overwrite a concurrent edit."""

from __future__ import annotations

import os
import stat
import tempfile


class WriteError(Exception):
    """The file was left untouched; the message says why."""


def write_if_unchanged(path: str, expected: bytes, new: bytes) -> None:
    """Replace ``path`` with ``new`` if it still holds ``expected``: temp file in the same folder, then os.replace."""
    try:
        with open(path, "rb") as handle:
            current = handle.read()
    except OSError as error:
        raise WriteError(f"cannot read back before writing: {error.strerror or error}") from None
    if current != expected:
        raise WriteError("changed on disk since it was read; not overwritten (run rlguard fix again)")
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if not os.access(path, os.W_OK):
            raise WriteError("read-only file; not written")
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".rlguard-tmp")
    except OSError as error:
        raise WriteError(f"cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(new)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as error:
        _remove_quietly(temporary)
        raise WriteError(f"cannot write: {error.strerror or error}") from None
    except BaseException:
        _remove_quietly(temporary)
        raise


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
