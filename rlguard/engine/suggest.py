""""Did you mean ...?": the one name a typo most likely meant, for configuration keys, rule codes,
rule options and the values rules know (a Trainer's hook destinations)."""

from __future__ import annotations

from collections.abc import Iterable

CUTOFF = 0.75  # difflib's similarity ratio below which two names are not taken for a typo of each other


def closest(word: str, choices: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The choice ``word`` most likely meant, or None: when nothing is close enough, and when two
    choices are equally close (a guess between them would mislead as often as help).

    A choice that starts with the word, or that the word starts with (``target`` for
    ``target-torchrl``, ``ignored`` for ``ignore``), is preferred to any other. Case is ignored.
    """
    import difflib  # here: only a mistake needs it

    key = word.lower()
    options = list(dict.fromkeys(choices))
    related = [c for c in options
               if min(len(key), len(c)) >= 3 and (c.lower().startswith(key) or key.startswith(c.lower()))]
    if len(related) == 1:
        return related[0]
    scored = [(difflib.SequenceMatcher(None, key, c.lower(), autojunk=False).ratio(), c) for c in related or options]
    top = max((score for score, _ in scored), default=0.0)
    best = [c for score, c in scored if score == top]
    return best[0] if top >= cutoff and len(best) == 1 else None


def one_edit_away(a: str, b: str) -> bool:
    """Levenshtein distance exactly 1: one insertion, deletion or substitution."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i + (len(a) == len(b)):] == b[i + 1:]
