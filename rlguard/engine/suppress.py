"""Suppression comments: ``# noqa``, ``# noqa: RLG001``, ``# rlguard: ignore[RLG001]``."""

from __future__ import annotations

import re

# Public: the fixer edits these comments (rlguard.fix.noqa), and must read them as they are read here.
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
IGNORE = re.compile(r"#\s*rlguard:\s*ignore\[(?P<codes>[^\]]*)\]")
_CODE = re.compile(r"[A-Z]+[0-9]+")
# A comment, or a string literal (any prefix, quotes escaped inside): read in source order from the
# start of a file, each match begins where code would, so a ``#`` a string holds is never a comment.
_COMMENT_OR_STRING = re.compile(
    r"#[^\n]*"
    r"|'''(?:\\.|[^\\])*?'''"
    r'|"""(?:\\.|[^\\])*?"""'
    r"|'(?:\\.|[^'\\\n])*'"
    r'|"(?:\\.|[^"\\\n])*"',
    re.DOTALL,
)


class Suppression:
    # A plain class: cached results carry these, and a cache hit should not import ``dataclasses``.
    __slots__ = ("line", "codes", "applies_to", "used")

    def __init__(self, line: int, codes: frozenset[str] | None, applies_to: tuple[int, ...]) -> None:
        self.line = line  # where the comment is
        self.codes = codes  # None: a bare noqa, which silences everything on its line
        self.applies_to = applies_to  # lines it silences
        self.used: set[str] = set()


def find_suppressions(text: str) -> list[Suppression]:
    """Suppressions in real comments (not in strings). The file parsed, so its strings are complete:
    one pattern tells comments from strings as the tokenizer does, at a twentieth of its cost."""
    if "rlguard:" not in text and not any(_concerns_rlguard(match) for match in NOQA.finditer(text)):
        return []  # no comment-like text could silence one of ours
    found: list[Suppression] = []
    line, counted = 1, 0
    for match in _COMMENT_OR_STRING.finditer(text):
        start = match.start()
        if text[start] == "#":
            line += text.count("\n", counted, start)
            counted = start
            found.extend(_parse_comment(match.group(), line))
    return found


def _concerns_rlguard(noqa: re.Match[str]) -> bool:
    """A bare ``noqa`` silences every rule; ``noqa: F401`` none of rlguard's."""
    codes = noqa.group("codes")
    return not codes or "RLG" in codes.upper()


def _parse_comment(comment: str, line: int) -> list[Suppression]:
    found = []
    noqa = NOQA.search(comment)
    if noqa:
        codes = noqa.group("codes")
        found.append(Suppression(line, frozenset(_CODE.findall(codes.upper())) if codes else None, (line,)))
    ignore = IGNORE.search(comment)
    if ignore:
        found.append(Suppression(line, frozenset(_CODE.findall(ignore.group("codes").upper())), (line, line + 1)))
    return found


def is_suppressed(code: str, line: int, suppressions: list[Suppression]) -> bool:
    for suppression in suppressions:
        if line in suppression.applies_to and (suppression.codes is None or code in suppression.codes):
            suppression.used.add(code)
            return True
    return False
