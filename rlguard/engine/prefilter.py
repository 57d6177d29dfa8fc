"""Decide, from the file text alone, which rules could fire: a file no rule needs is never parsed."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import AnyStr

# A token is a substring of the file text, or a tuple of substrings that must all be there.
Token = str | tuple[str, ...]
TokenGroups = Sequence[Sequence[Token]]
# A rule's class condition: token group ``index`` is also met by a class whose bases name one of ``names``.
ClassCondition = tuple[int, frozenset[str]]

# Patterns start with a literal where they can: the regex engine then jumps between its
# occurrences, where ``^[ \t]*class`` is tried at every position of the file.
_CLASS_HEADER = re.compile(rb"class[ \t]+(\w+)[ \t]*\(([^)]*)\)")  # read through ``at_line_start``
_CLASS_STATEMENT = re.compile(r"class[ \t]+(\w+)[ \t]*\(([^)]*)\)")
_WORD = re.compile(rb"\w+")
_TEXT_WORD = re.compile(r"\w+")
_FEW_NAMES = 8
_LAST_WORD = re.compile(r"(\w+)\s*\Z")


def called(*names: str) -> tuple[str, ...]:
    """Tokens met where one of ``names`` is called (``name(``, ``name (``) or imported under another name
    (``name as``): a rule whose sink is a call needs no file that only mentions the name (a docstring, a
    type hint, ``isinstance``)."""
    return tuple(token for name in names for token in (f"{name}(", f"{name} (", f"{name} as"))


def rules_needed(text: str, rule_tokens: Mapping[str, TokenGroups],
                 class_conditions: Mapping[str, ClassCondition] | None = None) -> list[str]:
    """Codes of rules whose every token group is met: by a token in ``text``, or, for a rule's
    class group, by a class statement whose bases name one of the rule's classes."""
    conditions = class_conditions or {}
    bases: _ClassBases | None = None
    present = functools.cache(text.__contains__)  # rules share parts (RLG007 and RLG008 name the same classes)
    needed = []
    for code, groups in rule_tokens.items():
        condition = conditions.get(code)
        met = True
        for index, group in enumerate(groups):
            if _group_met(_grouped(tuple(group)), present):
                continue
            if condition is not None and condition[0] == index and "class" in text:
                bases = bases or _ClassBases(text)
                if bases.name_one_of(condition[1]):
                    continue
            met = False
            break
        if met:
            needed.append(code)
    return needed


def _group_met(grouped: tuple[tuple[str, ...], dict[str, list[tuple[str, ...]]]],
               present: Callable[[str], bool]) -> bool:
    words, by_first = grouped
    return any(present(word) for word in words) or any(
        present(first) and any(all(present(part) for part in rest) for rest in rests) for first, rests in by_first.items())


@functools.lru_cache(maxsize=64)
def _grouped(group: tuple[Token, ...]) -> tuple[tuple[str, ...], dict[str, list[tuple[str, ...]]]]:
    """A group's single tokens, and its tuples by their first part: one search for a class name shared by
    many tokens (RLG007 has 349 tokens, 219 first parts), not one each."""
    words = tuple(token for token in group if type(token) is str)
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for token in group:
        if type(token) is not str:
            by_first.setdefault(token[0], []).append(tuple(token[1:]))
    return words, by_first


class _ClassBases:
    """The words a file's class statements name as bases, and, read only when those name none of
    the classes asked about, the file's ``X as Y`` aliases (``class A(ON)`` after ``import ... as ON``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words = {w for match in at_line_start(_CLASS_STATEMENT, text) for w in _TEXT_WORD.findall(match.group(2))}
        self._aliases: list[tuple[str, str]] | None = None

    def name_one_of(self, names: frozenset[str]) -> bool:
        if not self.words:
            return False
        if not self.words.isdisjoint(names):
            return True
        if len(names) <= _FEW_NAMES and not any(name in self.text for name in names):
            return False  # a few names are quicker to look for than every alias; none, no alias of one
        if self._aliases is None:
            self._aliases = _aliases(self.text, self.words) if "as" in self.text else []
        return any(original in names for original, _ in self._aliases)


def at_line_start(pattern: re.Pattern[AnyStr], text: AnyStr) -> Iterator[re.Match[AnyStr]]:
    """The matches of ``pattern`` that begin a line, after its indentation."""
    newline, blank = ("\n", " \t") if isinstance(text, str) else (b"\n", b" \t")
    position = 0
    while (match := pattern.search(text, position)) is not None:
        start = match.start()
        if text[text.rfind(newline, 0, start) + 1:start].strip(blank):
            position = start + 1  # mid-line: it must not swallow a statement that starts a later line
        else:
            yield match
            position = max(match.end(), start + 1)


def _aliases(text: str, aliases: Iterable[str]) -> list[tuple[str, str]]:
    """(original, alias) for every ``original as alias`` whose alias is one of ``aliases`` (the words a
    file's class statements name as bases: a file binds many more). The pattern starts at ``as``: one
    that starts at a word re-reads every word of the file."""
    found = []
    words = "|".join(map(re.escape, sorted(aliases)))
    pattern = re.compile(rf"(?<=\s)as\s+({words})\b")
    for match in pattern.finditer(text):
        before = _LAST_WORD.search(text[max(0, match.start() - 80):match.start()])
        if before is not None:
            found.append((before.group(1), match.group(1)))
    return found


def class_statements(data: bytes) -> Iterator[tuple[bytes, list[bytes]]]:
    """(name, words of its bases) of each class statement in a file: ``class A(pkg.Base, Mixin)``
    gives ``A`` and pkg, Base, Mixin."""
    if b"class" not in data:
        return
    for match in at_line_start(_CLASS_HEADER, data):
        yield match.group(1), _WORD.findall(match.group(2))


def class_bases(sources: Iterable[bytes]) -> dict[str, set[str]]:
    """The words each class statement of ``sources`` names as bases, by class name (merged across files)."""
    bases_of: dict[str, set[str]] = {}
    for data in sources:
        for name, bases in class_statements(data):
            bases_of.setdefault(name.decode(), set()).update(w.decode() for w in bases)
    return bases_of


def derived_class_names(bases_of: Mapping[str, set[str]], roots: frozenset[str]) -> frozenset[str]:
    """Names of classes that derive, textually and transitively across files, from ``roots``
    (``bases_of``: ``class_bases`` of the sources).

    A subclass of a user transform defined in another file may not mention ``Transform``
    at all; its file must still reach the parser. This over-approximates, which is safe.
    """
    derived: set[str] = set()
    frontier = set(roots)  # the roots themselves are not returned, only their subclasses
    while frontier:
        frontier = {name for name, bases in bases_of.items() if name not in derived and bases & (frontier | derived)}
        derived |= frontier
    return frozenset(derived)
