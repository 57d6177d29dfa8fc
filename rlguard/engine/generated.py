"""Files rlguard generates from its rule modules or from the installed libraries (the rule catalog,
the API model, the removed-API table, the rule pages): each generator renders its text, and this
module compares it with the file on disk or replaces the file whole (also the cache's entries and kept
TOML documents)."""

from __future__ import annotations

import os


def is_current(path: str | os.PathLike[str], text: str) -> bool:
    """Whether ``path`` holds exactly ``text``; a missing or unreadable file is not current."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read() == text
    except OSError:
        return False


def write_generated(path: str | os.PathLike[str], text: str) -> bool:
    """Replace ``path`` with ``text`` unless it already holds it (``replace_whole``). Returns whether the file
    was written."""
    if is_current(path, text):
        return False
    replace_whole(os.fspath(path), text.encode("utf-8"), mode=0o666)
    return True


def replace_whole(path: str, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to a fresh file beside ``path`` (created exclusively: no other writer shares it), then
    rename it over ``path`` in one step, so a reader, or an interrupted write, leaves the old file whole.
    The fresh file is removed when the write fails. ``mode`` is filtered by the umask. Raises OSError."""
    temporary = f"{path}.{os.urandom(6).hex()}.tmp"
    try:
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
