"""``@uncopyable`` and the search for the member that keeps an object from being deep-copied.

The marker is the attribute ``__rlguard_uncopyable__ = True``, set on a class (inherited by its
subclasses) or on one instance. torchrl does not read it: under ``install()``, rlguard's runtime
runs a marked policy or network in place where torchrl would copy it only to move it or to bake
parameters in, and refuses it with a clear error where a real copy is needed. The lint rule
RLG001 (uncopyable-policy) treats ``@uncopyable`` classes as deliberately uncopyable.

The search for the culprit member is best-first over attributes: it has no depth limit, ends on
cycles, visits a bounded number of objects, and names each object by its public path when it has
one. The remedy then addresses the nearest class of the user's own code above the member.

Importing this module does not import torch.
"""

from __future__ import annotations

import copy
import heapq
import inspect
import io
import itertools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

MARKER = "__rlguard_uncopyable__"
# The search visits at most this many objects: deep wrappers are followed to any depth, but a
# huge or endlessly generated object graph cannot stall the constructor that asked.
_MAX_OBJECTS = 20_000
_CONTAINERS = (dict, list, tuple, set, frozenset)
_COPY_HOOKS = ("__deepcopy__", "__getstate__", "__reduce_ex__", "__reduce__")
# Pickling ignores ``__deepcopy__``: a class that defines only that is still pickled member by member.
_PICKLE_HOOKS = ("__getstate__", "__setstate__", "__reduce_ex__", "__reduce__")
# Classes of these packages are never "the user's class" that a remedy addresses.
_LIBRARY_ROOTS = frozenset({"torch", "torchrl", "tensordict", "rlguard"}) | frozenset(sys.stdlib_module_names)

# Ends every runtime message about a copy, after the remedy.
LINT_NOTE = " Lint rule RLG001 (uncopyable-policy) flags this pattern statically."

T = TypeVar("T")
Probe = Callable[[Any], "Exception | None"]


def uncopyable(obj: T) -> T:
    """Mark a module class, or one instance, as never to be deep-copied.

    Use it as a class decorator (``@uncopyable``) or call it on an instance
    (``uncopyable(policy)``). It returns its argument unchanged apart from the marker.
    The marker acts through ``rlguard.runtime.install()`` (or rlguard's own ``Collector``):
    torchrl itself does not read it.
    """
    setattr(obj, MARKER, True)
    return obj


def is_marked(obj: Any) -> bool:
    return getattr(obj, MARKER, False) is True


@dataclass(frozen=True)
class Uncopyable:
    """Where a copy fails: the member's attribute path, why, and the user's class that holds it."""

    path: str
    type_name: str
    reason: str
    owner: type | None  # the nearest class of the user's own code above the member
    marked: bool = False

    def describe(self) -> str:
        where = f" (held by {self.owner.__qualname__}{_defined_at(self.owner)})" if self.owner else ""
        return f"`{self.path}` ({self.type_name}){where} {self.reason}"

    def holder_name(self) -> str:
        """The class a remedy addresses: the marked class itself, else the user's class holding it."""
        if self.owner is not None and not self.marked:
            return self.owner.__qualname__
        return self.type_name.rpartition(".")[2]


@dataclass(frozen=True)
class _Node:
    obj: Any
    path: str
    parent: _Node | None


def find_marked(obj: Any, path: str) -> Uncopyable | None:
    """The first object marked ``@uncopyable`` in ``obj``, its submodules and their members (cheap: no copying)."""
    for node in _best_first(obj, path, lambda node: _is_module(node.obj) or isinstance(node.obj, _CONTAINERS)):
        if is_marked(node.obj) and not isinstance(node.obj, type):
            return _marked(node)
    return None


def find_uncopyable(obj: Any, path: str) -> Uncopyable | None:
    """The deepest member of ``obj`` that is marked or whose deep copy raises; None if it copies.

    Submodules are walked rather than copied, so their tensors are never duplicated, and nothing
    is swapped into ``obj``: torch's modules stay exactly as they were, whatever is found.
    """
    return find_marked(obj, path) or _find_failing(obj, path, copy_error, _COPY_HOOKS, "cannot be copied")


def find_unpicklable(obj: Any, path: str) -> Uncopyable | None:
    """The deepest member of ``obj`` that is marked or that multiprocessing cannot pickle; None if it pickles.

    Pickled as a worker process receives it (``multiprocessing``'s ``ForkingPickler``), except
    that tensors are left out: torch shares them through shared memory, and a probe must not
    move the caller's tensors there.
    """
    return find_marked(obj, path) or _find_failing(obj, path, _pickle_error, _PICKLE_HOOKS, "cannot be pickled")


def whole(obj: Any, path: str, error: BaseException) -> Uncopyable:
    """The object itself as the culprit, when no single member explains why its copy failed."""
    return Uncopyable(path, _type_name(obj), f"could not be copied: {type(error).__name__}: {error}", None)


def _find_failing(obj: Any, path: str, probe: Probe, hooks: tuple[str, ...], verb: str) -> Uncopyable | None:
    errors: dict[int, Exception] = {}

    def expand(node: _Node) -> bool:
        # A module is walked member by member, skipping its tensors, unless its class customises
        # copying: then only probing the whole module tells whether it copies.
        if _is_module(node.obj) and not _customises(type(node.obj), hooks):
            return True
        error = probe(node.obj)
        if error is not None:
            errors[id(node.obj)] = error
        return error is not None

    visited = list(_best_first(obj, path, expand))  # expand() runs after each node is yielded
    failing = [node for node in visited if id(node.obj) in errors]
    explained = {id(above.obj) for node in failing for above in _ancestors(node)}
    for node in failing:  # best path first; the culprit is a failing object no failing member explains
        if id(node.obj) in explained or any(id(child) in errors for _, _, child in _members(node.obj, node.path)):
            continue
        error = errors[id(node.obj)]
        return Uncopyable(node.path, _type_name(node.obj), f"{verb}: {type(error).__name__}: {error}", _owner(node))
    return None


def _ancestors(node: _Node) -> Iterator[_Node]:
    above = node.parent
    while above is not None:
        yield above
        above = above.parent


def _best_first(root: Any, path: str, expand: Callable[[_Node], bool]) -> Iterator[_Node]:
    """Every object reachable from ``root`` through expanded objects, each once, by its best path.

    The best path has the fewest private attributes (``_det_part`` is an alias of ``module[0]``),
    then the fewest steps. Cycles end at the first visit; at most ``_MAX_OBJECTS`` are visited.
    """
    order = itertools.count()
    heap: list[tuple[int, int, int, _Node]] = [(0, 0, next(order), _Node(root, path, None))]
    seen: set[int] = set()
    while heap and len(seen) < _MAX_OBJECTS:
        private, depth, _, node = heapq.heappop(heap)
        if id(node.obj) in seen:
            continue
        seen.add(id(node.obj))
        yield node
        if expand(node):
            for name, child_path, child in _members(node.obj, node.path):
                if id(child) not in seen:
                    cost = private + name.startswith("_")
                    heapq.heappush(heap, (cost, depth + 1, next(order), _Node(child, child_path, node)))


def _members(obj: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(attribute name, path, value) of each member; dict keys and indexes count as public names."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield "", f"{path}[{key!r}]", value
    elif isinstance(obj, _CONTAINERS):
        for index, value in enumerate(obj):
            yield "", f"{path}[{index}]", value
    elif _is_module(obj):
        for name, value in vars(obj).items():
            if name == "_modules":
                for child_name, child in value.items():
                    yield child_name, f"{path}.{child_name}", child
            elif name not in ("_parameters", "_buffers"):  # tensors always copy
                yield name, f"{path}.{name}", value
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        for name, value in vars(obj).items():
            yield name, f"{path}.{name}", value


def _owner(node: _Node) -> type | None:
    """The class of the nearest object above ``node`` that the user's own code defines."""
    for above in _ancestors(node):
        if not isinstance(above.obj, _CONTAINERS) and _is_users(type(above.obj)):
            return type(above.obj)
    return None


def _is_users(cls: type) -> bool:
    root = cls.__module__.partition(".")[0]
    if root in _LIBRARY_ROOTS:
        return False
    source = getattr(sys.modules.get(cls.__module__), "__file__", None) or ""
    return "site-packages" not in source and "dist-packages" not in source


def copy_error(obj: Any) -> Exception | None:
    """What ``copy.deepcopy(obj)`` raises, or None when it copies."""
    try:
        copy.deepcopy(obj)
    except Exception as error:  # any failure makes the member the culprit
        return error
    return None


def _pickle_error(obj: Any) -> Exception | None:
    from multiprocessing.reduction import ForkingPickler

    import torch

    class _TensorlessPickler(ForkingPickler):
        def persistent_id(self, value: Any) -> int | None:
            return 0 if isinstance(value, torch.Tensor) else None

    try:
        _TensorlessPickler(io.BytesIO()).dump(obj)
    except Exception as error:  # any failure makes the member the culprit
        return error
    return None


def _is_module(obj: Any) -> bool:
    # imported here, not at the top: this module must stay importable without torch
    from torch import nn

    return isinstance(obj, nn.Module)


def _customises(cls: type, hooks: tuple[str, ...]) -> bool:
    from torch import nn

    return any(getattr(cls, name, None) is not getattr(nn.Module, name, None) for name in hooks)


def _marked(node: _Node) -> Uncopyable:
    obj = node.obj
    cls = obj if isinstance(obj, type) else type(obj)
    return Uncopyable(node.path, _type_name(obj), f"is marked @uncopyable{_defined_at(cls)}", _owner(node), True)


def _type_name(obj: Any) -> str:
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _defined_at(cls: type) -> str:
    try:
        return f", defined at {inspect.getsourcefile(cls)}:{inspect.getsourcelines(cls)[1]}"
    except (TypeError, OSError):
        return ""


_LIBRARIES = ("rlguard.", "torchrl.", "tensordict.", "torch.", "functools", "contextlib")


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warn_once`` that points at the first frame of the user's code."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_LIBRARIES):
        frame, level = frame.f_back, level + 1
    # warn_once adds its own frame; warnings.warn counts from warn_once's caller.
    return level + 1
