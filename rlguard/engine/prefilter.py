"""Decide, from the file text alone, which rules could fire: a file no rule needs is never parsed."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

TokenGroups = Sequence[Sequence[str]]
# A rule's class condition: token group ``index`` is also met by a class whose bases name one of ``names``.
ClassCondition = tuple[int, frozenset[str]]

_CLASS_HEADER = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.MULTILINE)
_CLASS_BASES = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)
_WORD = re.compile(rb"\w+")
_TEXT_WORD = re.compile(r"\w+")
_ALIAS = re.compile(r"\b(\w+)\s+as\s+(\w+)")


def rules_needed(text: str, rule_tokens: Mapping[str, TokenGroups],
                 class_conditions: Mapping[str, ClassCondition] | None = None) -> list[str]:
    """Codes of rules whose every token group is met: by a token in ``text``, or, for a rule's
    class group, by a class statement whose bases name one of the rule's classes."""
    conditions = class_conditions or {}
    headers: tuple[set[str], list[tuple[str, str]]] | None = None
    needed = []
    for code, groups in rule_tokens.items():
        condition = conditions.get(code)
        met = True
        for index, group in enumerate(groups):
            if any(token in text for token in group):
                continue
            if condition is not None and condition[0] == index and "class" in text:
                headers = headers or _class_headers(text)
                if _derives_from(headers, condition[1]):
                    continue
            met = False
            break
        if met:
            needed.append(code)
    return needed


def _class_headers(text: str) -> tuple[set[str], list[tuple[str, str]]]:
    """Words named in the file's class bases, and its ``X as Y`` aliases."""
    words = {w for bases in _CLASS_BASES.findall(text) for w in _TEXT_WORD.findall(bases)}
    return words, _ALIAS.findall(text) if " as " in text else []


def _derives_from(headers: tuple[set[str], list[tuple[str, str]]], names: frozenset[str]) -> bool:
    words, aliases = headers
    return bool(words & names) or any(original in names and alias in words for original, alias in aliases)


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
    frontier = set(roots)  # the roots themselves are not returned, only their subclasses
    while frontier:
        frontier = {name for name, bases in bases_of.items() if name not in derived and bases & (frontier | derived)}
        derived |= frontier
    return frozenset(derived)
