"""The values that flow between engine stages: findings, their fixes, and index requirements.

A run served from the cache, or one whose files the pre-filter clears, loads this module: its
values are named tuples and plain classes, not dataclasses: importing ``dataclasses`` and building
each dataclass cost about half of what such a run spends beyond starting the interpreter.
"""

from __future__ import annotations

import os
from typing import Literal, NamedTuple

from rlguard.engine.lazy import cst

Applicability = Literal["safe", "unsafe"]

class Requirement:
    """A question about the project index that a finding waits on, such as "is ``pkg.mod.Policy``
    uncopyable?". Rules subclass it with typed fields and answer it in ``Rule.resolve``; a finding
    that carries requirements stands only if one of them holds once the project is indexed."""

# Diagnostics the engine itself emits; they are not rules and cannot be selected away.
ENGINE_CODES: dict[str, str] = {
    "RLG000": "parse-error",
    "RLG100": "unused-suppression",
    "RLG998": "skipped-file",
    "RLG999": "internal-error",
}


class Edit(NamedTuple):
    """Replace one node of the parsed module (matched by identity) with another."""

    old: cst.CSTNode
    new: cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel


class Fix(NamedTuple):
    """What a rule proposes; applied by rlguard.fix, never by the rule."""

    applicability: Applicability
    description: str
    edits: tuple[Edit, ...]
    # (module, name) pairs the fixed code needs, e.g. ("torchrl.modules", "set_recurrent_mode").
    imports: tuple[tuple[str, str], ...] = ()


class Breaks(NamedTuple):
    """When a finding's problem happens: from torchrl ``since`` on, raising ``raises`` (an exception
    class name a handler may catch; None for what only a reader or a type checker sees). The engine
    keeps the finding only where its code runs at such a version (``engine/versions.py``)."""

    since: tuple[int, ...]
    raises: str | None = None


class FixSummary(NamedTuple):
    applicability: Applicability
    description: str

    def to_json(self) -> dict[str, str]:
        return {"applicability": self.applicability, "description": self.description}


class Span(NamedTuple):
    line: int
    column: int  # 1-based, in characters
    end_line: int
    end_column: int


class Finding(NamedTuple):
    path: str
    span: Span | None  # None until located: reports waiting on the index get a position only if they stand
    code: str
    name: str
    message: str  # the first line: what is wrong and why, in about 120 characters
    fix: FixSummary | None = None
    remedy: str = ""  # how to fix it by hand; reporters print it below the message
    cell: int | None = None  # in a notebook: the cell, and ``span`` counts lines within it

    @property
    def located(self) -> Span:
        """The span of a located finding; every finding is located before it is reported or sorted."""
        assert self.span is not None, "findings are located before they are reported"
        return self.span

    @property
    def location(self) -> str:
        """``path:line:col``, or ``path:cell N:line:col`` in a notebook."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.located.line}:{self.located.column}"

    @property
    def in_cell(self) -> str | None:
        """``cell 4, line 3, column 32`` for a notebook finding: formats that locate by line in the
        file itself (GitHub annotations, SARIF) cannot point into a cell, so they say it in words."""
        if self.cell is None:
            return None
        return f"cell {self.cell}, line {self.located.line}, column {self.located.column}"

    @property
    def remedy_sentence(self) -> str:
        """The remedy as reporters print it on a line of its own: a sentence, capitalised."""
        return self.remedy[:1].upper() + self.remedy[1:]

    @property
    def line(self) -> int:
        return self.located.line

    @property
    def full_message(self) -> str:
        """The message and its remedy as one text, as json and SARIF carry it."""
        return f"{self.message}; {self.remedy}" if self.remedy else self.message

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.located.line, self.located.column, self.code, self.message)


class TextEdit(NamedTuple):
    """Replace the text from (line, column) to (end_line, end_column), 1-based, end exclusive, in
    code points; an empty range is an insertion point. What a fix changes, as SARIF and editors take it."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str


class PendingFinding(NamedTuple):
    """A finding as a worker produced it: it may still wait on the project index."""

    finding: Finding
    requires: tuple[Requirement, ...] = ()
    report: int = -1  # the report's position in its file's walk, to locate it later


class Report:
    """Everything a run produced, in deterministic order."""

    __slots__ = ("findings", "files_checked", "files_parsed", "unused_suppressions", "notes")

    def __init__(self, findings: list[Finding] | None = None, files_checked: int = 0, files_parsed: int = 0,
                 unused_suppressions: list[Finding] | None = None, notes: list[str] | None = None) -> None:
        self.findings = [] if findings is None else findings
        self.files_checked = files_checked
        self.files_parsed = files_parsed
        self.unused_suppressions = [] if unused_suppressions is None else unused_suppressions
        self.notes = [] if notes is None else notes  # lines for the summary: what the run left out


def display_path(path: str) -> str:
    """A path as every report names it: relative to the working folder, without ``./``, when the
    file is inside it; absolute otherwise."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative
