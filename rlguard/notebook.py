"""Jupyter notebooks: their code cells, joined into one module that the engine checks like a file.

The cells run in one namespace (an import in cell 1 serves cell 3), so they are joined in order
and checked together; each finding is then placed on its cell and its line within that cell.
IPython syntax is not Python: a line magic (``%time``), a shell escape (``!pip``) and a help
query (``obj?``) become ``pass`` with the same indentation, and a cell magic (``%%bash``) turns
its whole cell into blank lines. Lines keep their numbers either way.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass



class NotebookError(Exception):
    """The file is not a notebook rlguard can read; the message says why, in one line."""


@dataclass(frozen=True)
class Notebook:
    source: bytes  # the code cells joined, as UTF-8 Python
    starts: tuple[int, ...]  # the first line (1-based) of each code cell in ``source``
    cells: tuple[int, ...]  # each code cell's number among all cells, 1-based, as Jupyter shows them

    def locate(self, line: int) -> tuple[int, int]:
        """(cell number, line within the cell) of a line of ``source``."""
        index = max(bisect.bisect_right(self.starts, line) - 1, 0)
        return self.cells[index], line - self.starts[index] + 1


def read(data: bytes) -> Notebook:
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise NotebookError(f"not a notebook: invalid JSON ({error})") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("not a notebook: no `cells` list")
    lines: list[str] = []
    starts: list[int] = []
    numbers: list[int] = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        starts.append(len(lines) + 1)
        numbers.append(number)
        lines.extend(_python_lines(text))
    return Notebook("".join(line + "\n" for line in lines).encode("utf-8"), tuple(starts), tuple(numbers))


def _python_lines(text: str) -> list[str]:
    lines = text.splitlines() or [""]
    if lines[0].lstrip().startswith("%%"):
        return [""] * len(lines)  # a cell magic: the cell is another language, or IPython's to run
    return [_without_magic(line) for line in lines]


def _without_magic(line: str) -> str:
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#")):
        return indent + "pass"
    return line
