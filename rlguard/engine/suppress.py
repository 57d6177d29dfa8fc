"""Suppression comments: ``# noqa``, ``# noqa: RLG001``, ``# rlguard: ignore[RLG001]``."""

from __future__ import annotations

import io
import re
import tokenize

# Public: the fixer edits these comments (rlguard.fix.noqa), and must read them as they are read here.
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
IGNORE = re.compile(r"#\s*rlguard:\s*ignore\[(?P<codes>[^\]]*)\]")
_CODE = re.compile(r"[A-Z]+[0-9]+")


class Suppression:
    # A plain class: cached results carry these, and a cache hit should not import ``dataclasses``.
    __slots__ = ("line", "codes", "applies_to", "used")

    def __init__(self, line: int, codes: frozenset[str] | None, applies_to: tuple[int, ...]) -> None:
        self.line = line  # where the comment is
        self.codes = codes  # None: a bare noqa, which silences everything on its line
        self.applies_to = applies_to  # lines it silences
        self.used: set[str] = set()


def find_suppressions(text: str) -> list[Suppression]:
    """Suppressions in real comments (not in strings), found with the tokenizer."""
    if "rlguard:" not in text and not any(_concerns_rlguard(match) for match in NOQA.finditer(text)):
        return []  # no comment-like text could silence one of ours: skip the (slow) tokenizer
    found: list[Suppression] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found.extend(_parse_comment(token.string, token.start[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # the file parsed with libcst; keep what was found before the odd token
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
