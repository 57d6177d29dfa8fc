"""A patch is one attribute of one owner replaced by a corrected value.

Each runtime component exposes ``patches() -> list[Patch]``; ``install()`` applies them and
``uninstall()`` puts back the identical original objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_MISSING = object()


@dataclass(frozen=True)
class Patch:
    owner: Any  # a module or a class
    name: str
    value: Any
    # A scoped function runs only where its component is active (else the original runs);
    # an unscoped one runs wherever it is patched in, e.g. an exit that must match its entry.
    scoped: bool = True


class PatchSet:
    """Applies patches and remembers exactly what each attribute was before."""

    def __init__(self) -> None:
        self._originals: list[tuple[Any, str, Any]] = []

    def apply(self, patch: Patch) -> None:
        # Read from __dict__, not getattr: an inherited attribute must be removed, not copied down.
        original = vars(patch.owner).get(patch.name, _MISSING)
        self._originals.append((patch.owner, patch.name, original))
        setattr(patch.owner, patch.name, patch.value)

    def restore_all(self) -> None:
        while self._originals:
            owner, name, original = self._originals.pop()
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)

    def __len__(self) -> int:
        return len(self._originals)
