"""Files rlguard generates from its rule modules or from the installed libraries (the rule catalog,
the API model, the removed-API table, the rule pages): each generator renders its text, and this
module compares it with the file on disk or replaces the file whole."""

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
    """Replace ``path`` with ``text`` unless it already holds it. The text goes to a temporary file
    beside it, then over it in one rename, so an interrupted write leaves the old file whole.
    Returns whether the file was written."""
    if is_current(path, text):
        return False
    temporary = f"{os.fspath(path)}.{os.urandom(6).hex()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return True
