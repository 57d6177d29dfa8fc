"""Line numbers in another file's text, for the few findings that name where something is set.

Only findings need them, so they are read from the text on demand, instead of paying a position
pass over every file the index reaches. Each file is read once per process (again if it changes).
"""

from __future__ import annotations

import os
import re

_LINES: dict[str, tuple[float, list[str]]] = {}  # path -> (mtime, lines)


def source_lines(path: str) -> list[str] | None:
    """The file's lines, or None when it cannot be read."""
    try:
        mtime = os.path.getmtime(path)
        cached = _LINES.get(path)
        if cached is None or cached[0] != mtime:
            with open(path, encoding="utf-8", errors="replace") as handle:
                cached = _LINES[path] = (mtime, handle.read().splitlines())
    except OSError:
        return None
    return cached[1]


def class_block(lines: list[str], class_name: str) -> tuple[int, int] | None:
    """First and last line numbers of the body of ``class <class_name>``, or None if there is none."""
    header = re.compile(rf"^(\s*)class\s+{re.escape(class_name)}\b")
    for number, text in enumerate(lines, 1):
        match = header.match(text)
        if match is None:
            continue
        indent = len(match.group(1).expandtabs())
        for end in range(number, len(lines)):
            text = lines[end]
            stripped = text.strip()
            if stripped and not stripped.startswith("#") and len(text) - len(text.lstrip()) <= indent \
                    and not stripped.startswith((")", "]", "}")):
                return number, end
        return number, len(lines)
    return None


def definition_line(path: str, qualname: str) -> int:
    """The line of the ``def`` of ``qualname`` (``module.function`` or ``module.Class.method``) in
    ``path``: a method's within its class's body, a function's at the top level (0 if not found)."""
    lines = source_lines(path)
    if lines is None:
        return 0
    owner, _, name = qualname.rpartition(".")
    block = class_block(lines, owner.rpartition(".")[2])
    indent = r"\s+" if block is not None else ""
    start, end = block if block is not None else (0, len(lines))
    pattern = re.compile(rf"^{indent}(async\s+)?def\s+{re.escape(name)}\s*\(")
    return next((number for number in range(start + 1, end + 1) if pattern.match(lines[number - 1])), 0)
