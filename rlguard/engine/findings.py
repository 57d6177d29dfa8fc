"""The values that flow between engine stages: findings, their fixes, and index requirements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

Applicability = Literal["safe", "unsafe"]

@dataclass(frozen=True)
class Requirement:
    """A question about the project index that a finding waits on, such as "is ``pkg.mod.Policy``
    uncopyable?". Rules subclass it with typed fields and answer it in ``Rule.resolve``; a finding
    that carries requirements stands only if one of them holds once the project is indexed."""

# Diagnostics the engine itself emits; they are not rules and cannot be selected away.
ENGINE_CODES: dict[str, str] = {
    "RLG000": "parse-error",
    "RLG100": "unused-suppression",
    "RLG999": "internal-error",
}


@dataclass(frozen=True)
class Edit:
    """Replace one node of the parsed module (matched by identity) with another."""

    old: cst.CSTNode
    new: cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel


@dataclass(frozen=True)
class Fix:
    """What a rule proposes; applied by rlguard.fix, never by the rule."""

    applicability: Applicability
    description: str
    edits: tuple[Edit, ...]
    # (module, name) pairs the fixed code needs, e.g. ("torchrl.modules", "set_recurrent_mode").
    imports: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class FixSummary:
    applicability: Applicability
    description: str

    def to_json(self) -> dict[str, str]:
        return {"applicability": self.applicability, "description": self.description}


@dataclass(frozen=True)
class Span:
    line: int
    column: int  # 1-based, in characters
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Finding:
    path: str
    span: Span | None  # None until located: reports waiting on the index get a position only if they stand
    code: str
    name: str
    message: str
    fix: FixSummary | None = None

    @property
    def line(self) -> int:
        return self.span.line

    def sort_key(self) -> tuple:
        return (self.path, self.span.line, self.span.column, self.code, self.message)


@dataclass(frozen=True)
class PendingFinding:
    """A finding as a worker produced it: it may still wait on the project index."""

    finding: Finding
    requires: tuple[Requirement, ...] = ()
    report: int = -1  # the report's position in its file's walk, to locate it later


@dataclass
class Report:
    """Everything a run produced, in deterministic order."""

    findings: list[Finding] = field(default_factory=list)
    files_checked: int = 0
    files_parsed: int = 0
    unused_suppressions: list[Finding] = field(default_factory=list)
