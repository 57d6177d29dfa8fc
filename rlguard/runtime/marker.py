"""``@uncopyable`` and the search for the member that keeps an object from being deep-copied.

The marker is the attribute ``__rlguard_uncopyable__ = True``, set on a class (inherited by its
subclasses) or on one instance. rlguard's runtime never deep-copies a marked object, and the lint
rule RLG001 (uncopyable-policy) treats ``@uncopyable`` classes as deliberately uncopyable.

Importing this module does not import torch.
"""

from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

MARKER = "__rlguard_uncopyable__"
_MAX_DEPTH = 8
_CONTAINERS = (dict, list, tuple, set, frozenset)
_COPY_HOOKS = ("__deepcopy__", "__getstate__", "__reduce_ex__", "__reduce__")

T = TypeVar("T")


def uncopyable(obj: T) -> T:
    """Mark a module class, or one instance, as never to be deep-copied.

    Use it as a class decorator (``@uncopyable``) or call it on an instance
    (``uncopyable(policy)``). It returns its argument unchanged apart from the marker.
    """
    setattr(obj, MARKER, True)
    return obj


def is_marked(obj: Any) -> bool:
    return getattr(obj, MARKER, False) is True


@dataclass(frozen=True)
class Uncopyable:
    """Where a deep copy fails: the member's dotted path, why, and the class that holds it."""

    path: str
    type_name: str
    reason: str
    owner: type | None

    def describe(self) -> str:
        where = f" (held by {self.owner.__qualname__}{_defined_at(self.owner)})" if self.owner else ""
        return f"`{self.path}` ({self.type_name}){where} {self.reason}"

    def holder_name(self) -> str:
        return self.owner.__qualname__ if self.owner else self.type_name


def find_marked(obj: Any, path: str) -> Uncopyable | None:
    """The first object marked ``@uncopyable`` in ``obj`` or its submodules (cheap: no copying)."""
    if is_marked(obj):
        return _marked(path, obj, None)
    if _is_module(obj):
        for name, module in obj.named_modules():
            if name and is_marked(module):
                parent = obj.get_submodule(name.rpartition(".")[0]) if "." in name else obj
                return _marked(f"{path}.{name}", module, type(parent))
    return None


def find_uncopyable(obj: Any, path: str) -> Uncopyable | None:
    """The deepest member of ``obj`` that is marked or whose deep copy raises; None if it copies.

    Submodules are walked rather than copied, so their tensors are never duplicated, and nothing
    is swapped into ``obj``: torch's modules stay exactly as they were, whatever is found.
    """
    return find_marked(obj, path) or _search(obj, path, None, depth=0, seen=set())


def whole(obj: Any, path: str, error: BaseException) -> Uncopyable:
    """The object itself as the culprit, when no single member explains why its copy failed."""
    return Uncopyable(path, _type_name(obj), f"could not be copied: {type(error).__name__}: {error}", None)


def _search(obj: Any, path: str, owner: type | None, depth: int, seen: set[int]) -> Uncopyable | None:
    if id(obj) in seen or depth > _MAX_DEPTH:
        return None
    seen.add(id(obj))
    # A module is walked member by member, skipping its tensors, unless its class customises
    # copying: then only a copy of the whole module tells whether it copies.
    walked = _is_module(obj) and not _customises_copy(type(obj))
    error = None if walked else _copy_error(obj)
    if not walked and error is None:
        return None
    holder = owner if isinstance(obj, _CONTAINERS) else type(obj)
    for child_path, child in _members(obj, path):
        found = _search(child, child_path, holder, depth + 1, seen)
        if found is not None:
            return found
    if error is None:
        return None
    return Uncopyable(path, _type_name(obj), f"cannot be copied: {type(error).__name__}: {error}", owner)


def _members(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield f"{path}[{key!r}]", value
    elif isinstance(obj, _CONTAINERS):
        for index, value in enumerate(obj):
            yield f"{path}[{index}]", value
    elif _is_module(obj):
        for name, value in vars(obj).items():
            if name == "_modules":
                for child_name, child in value.items():
                    yield f"{path}.{child_name}", child
            elif name not in ("_parameters", "_buffers"):  # tensors always copy
                yield f"{path}.{name}", value
    elif hasattr(obj, "__dict__"):
        for name, value in vars(obj).items():
            yield f"{path}.{name}", value


def _copy_error(obj: Any) -> Exception | None:
    try:
        copy.deepcopy(obj)
    except Exception as error:  # any failure makes the member the culprit
        return error
    return None


def _is_module(obj: Any) -> bool:
    # imported here, not at the top: this module must stay importable without torch
    from torch import nn

    return isinstance(obj, nn.Module)


def _customises_copy(cls: type) -> bool:
    from torch import nn

    return any(getattr(cls, name, None) is not getattr(nn.Module, name, None) for name in _COPY_HOOKS)


def _marked(path: str, obj: Any, owner: type | None) -> Uncopyable:
    cls = obj if isinstance(obj, type) else type(obj)
    return Uncopyable(path, _type_name(obj), f"is marked @uncopyable{_defined_at(cls)}", owner)


def _type_name(obj: Any) -> str:
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _defined_at(cls: type) -> str:
    try:
        return f", defined at {inspect.getsourcefile(cls)}:{inspect.getsourcelines(cls)[1]}"
    except (TypeError, OSError):
        return ""


def remedies(holder: str) -> str:
    """What a user can do about an uncopyable policy; shared by every RLG001 message."""
    return (
        f"To fix it: give {holder} a `__deepcopy__` that shares or recreates that member, "
        "build the policy where it runs with `policy_factory=`, or mark the class with "
        "`@rlguard.runtime.uncopyable` to state that it must never be copied. "
        "Lint rule RLG001 (uncopyable-policy) flags this pattern statically."
    )


_LIBRARIES = ("rlguard.", "torchrl.", "tensordict.", "torch.", "functools", "contextlib")


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warn_once`` that points at the first frame of the user's code."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_LIBRARIES):
        frame, level = frame.f_back, level + 1
    # warn_once adds its own frame; warnings.warn counts from warn_once's caller.
    return level + 1
