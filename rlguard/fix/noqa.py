"""Suppression comments that rlguard writes: ``--add-noqa`` adds ``# noqa: CODE`` to the lines of
findings, and the fix of RLG100 takes out the codes that silence nothing.

Both edit the text, not the syntax tree (a comment is not a node a rule can replace): the
tokenizer says where each comment is, and where a line ends inside a string, which no comment
can follow. The caller verifies the result as it verifies every fix.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Mapping

from rlguard.engine.suppress import IGNORE, NOQA, Suppression

_BREAK = re.compile(r"\r\n|\r|\n")


class _Lines:
    """A text's lines (with their endings), its comments by line, and the lines that end inside a string."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True) or [""]
        self.comments: dict[int, tuple[int, str]] = {}  # line -> (column, comment text)
        self.in_string: set[int] = set()  # lines whose line break belongs to a string
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                self.comments[token.start[0]] = (token.start[1], token.string)
            elif token.start[0] < token.end[0] and token.type not in (tokenize.NL, tokenize.NEWLINE):
                self.in_string.update(range(token.start[0], token.end[0]))  # a string (or f-string part) over lines

    def body(self, number: int) -> tuple[str, str]:
        """Line ``number`` (1-based) without its line break, and the break."""
        line = self.lines[number - 1]
        ending = _BREAK.search(line)
        return (line[: ending.start()], ending.group()) if ending and ending.end() == len(line) else (line, "")

    def text(self) -> str:
        return "".join(self.lines)


def add_noqa(text: str, codes_by_line: Mapping[int, Iterable[str]]) -> tuple[str, int, list[int]]:
    """``text`` with ``# noqa: CODES`` on each line of ``codes_by_line``, merged into a ``noqa``
    already there. Returns the text, how many lines changed, and the lines left alone because they
    end inside a string. Raises ``tokenize.TokenError`` or ``SyntaxError`` on text that does not tokenize."""
    lines = _Lines(text)
    changed, skipped = 0, []
    for number, codes in sorted(codes_by_line.items()):
        if number in lines.in_string or not 0 < number <= len(lines.lines):
            skipped.append(number)
            continue
        body, ending = lines.body(number)
        new = _with_codes(body, lines.comments.get(number), set(codes))
        if new != body:
            lines.lines[number - 1] = new + ending
            changed += 1
    return lines.text(), changed, skipped


def _with_codes(body: str, comment: tuple[int, str] | None, codes: set[str]) -> str:
    match = NOQA.search(comment[1]) if comment else None
    if comment is None or match is None:
        return f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}"
    if match.group("codes") is None:
        return body  # a bare noqa silences every code already
    present = match.group("codes")
    missing = sorted(codes - {code.upper() for code in re.findall(r"[A-Za-z]+[0-9]+", present)})
    if not missing:
        return body
    end = comment[0] + match.end("codes")
    return body[:end] + ", " + ", ".join(missing) + body[end:]


def remove_codes(text: str, unused: Iterable[tuple[Suppression, frozenset[str]]]) -> tuple[str, int]:
    """``text`` without the unused codes of its suppression comments: a code is taken out of its
    list, a comment left with no code is taken out whole, and a line left empty by that goes too.
    Other tools' codes (``F401``) stay. Returns the text and how many codes were taken out."""
    lines = _Lines(text)
    removed = 0
    emptied: list[int] = []
    for suppression, codes in unused:
        comment = lines.comments.get(suppression.line)
        if comment is None:
            continue
        body, ending = lines.body(suppression.line)
        pattern = IGNORE if len(suppression.applies_to) > 1 else NOQA
        new_comment, count = _without(comment[1], pattern, codes)
        if not count:
            continue
        removed += count
        before = body[: comment[0]]
        kept = before + new_comment if new_comment else before.rstrip()
        if not kept.strip():
            emptied.append(suppression.line)
        lines.lines[suppression.line - 1] = kept + ending
    for number in sorted(emptied, reverse=True):
        del lines.lines[number - 1]
    return lines.text(), removed


def _without(comment: str, pattern: re.Pattern[str], codes: frozenset[str]) -> tuple[str, int]:
    """The comment without ``codes`` in the suppression ``pattern`` finds, and how many were taken out."""
    match = pattern.search(comment)
    if match is None or match.group("codes") is None:
        return comment, 0
    listed = re.findall(r"[A-Za-z]+[0-9]+", match.group("codes"))
    kept = [code for code in listed if code.upper() not in codes]
    if len(kept) == len(listed):
        return comment, 0
    if kept:
        start, end = match.span("codes")
        return comment[:start] + ", ".join(kept) + comment[end:], len(listed) - len(kept)
    rest = (comment[: match.start()] + comment[match.end():]).strip()
    return (rest if rest.startswith("#") or not rest else "# " + rest), len(listed)
