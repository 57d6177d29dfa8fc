"""C3 linearisation, as Python orders a class's ancestors: one implementation for project classes
(``ProjectIndex.mro``) and library classes (``ApiModel.ancestry``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")


def c3_merge(sequences: Sequence[Sequence[T]], key: Callable[[T], Hashable]) -> list[T] | None:
    """C3's merge: repeatedly take the first head that is in no other sequence's tail.

    ``sequences`` are the parents' linearisations followed by the list of parents; items are
    compared by ``key``. None when no order exists (Python would refuse the class)."""
    result: list[T] = []
    remaining = [list(s) for s in sequences if s]
    while remaining:
        for sequence in remaining:
            head = key(sequence[0])
            if not any(head in {key(item) for item in s[1:]} for s in remaining):
                break
        else:
            return None
        result.append(sequence[0])
        remaining = [rest for s in remaining if (rest := [item for item in s if key(item) != head])]
    return result
