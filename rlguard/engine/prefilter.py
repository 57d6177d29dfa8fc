"""Decide, from the file text alone, which rules could fire: a file no rule needs is never parsed."""

from __future__ import annotations

import re
from typing import Iterable, Sequence

TokenGroups = Sequence[Sequence[str]]

_CLASS_HEADER = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.MULTILINE)
_WORD = re.compile(rb"\w+")


def rules_needed(text: str, rule_tokens: dict[str, TokenGroups]) -> list[str]:
    """Codes of rules whose every token group has a token present in ``text``."""
    return [
        code
        for code, groups in rule_tokens.items()
        if all(any(token in text for token in group) for group in groups)
    ]


def derived_class_names(sources: Iterable[bytes], roots: frozenset[str]) -> frozenset[str]:
    """Names of classes that derive, textually and transitively across files, from ``roots``.

    A subclass of a user transform defined in another file may not mention ``Transform``
    at all; its file must still reach the parser. This over-approximates, which is safe.
    """
    bases_of: dict[str, set[str]] = {}
    for data in sources:
        if b"class" not in data:
            continue
        for match in _CLASS_HEADER.finditer(data):
            words = {w.decode() for w in _WORD.findall(match.group(2))}
            bases_of.setdefault(match.group(1).decode(), set()).update(words)
    derived: set[str] = set()
    frontier = set(roots)
    while frontier:
        frontier = {name for name, bases in bases_of.items() if name not in derived and bases & (frontier | derived)}
        derived |= frontier
    return frozenset(derived)
