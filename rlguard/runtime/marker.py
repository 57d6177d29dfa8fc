"""``@uncopyable`` and the search for the member that keeps an object from being deep-copied.

The marker is the attribute ``__rlguard_uncopyable__ = True``, set on a class (inherited by its
subclasses) or on one instance. torchrl does not read it: under ``install()``, rlguard's runtime
runs a marked policy or network in place where torchrl would copy it only to move it or to bake
parameters in, and refuses it with a clear error where a real copy is needed. The lint rule
RLG001 (uncopyable-policy) treats ``@uncopyable`` classes as deliberately uncopyable.

The culprit is the innermost object that a failed copy (or pickling) was inside when it raised:
the lock or the file itself, however deep and however many objects the policy holds. It is named
by its best path, a Python expression through the user's own attribute names
(``policy.module[1].module[0].encoder.cfg.lock``), found by a walk that has no depth limit and
ends on cycles. The remedy then addresses the nearest class of the user's own code above it.
Nothing here parses source (no ``inspect.getsource``, no ``ast``): the runtime runs in threads.

Importing this module does not import torch.
"""

from __future__ import annotations

import copy
import heapq
import inspect
import io
import itertools
import linecache
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any, TypeVar

MARKER = "__rlguard_uncopyable__"
# A walk visits at most this many objects (scalars and strings are not visited): deep wrappers
# are followed to any depth, but an endless object graph cannot stall the constructor that asked.
_MAX_OBJECTS = 1_000_000
_CONTAINERS = (dict, list, tuple, set, frozenset)
_SCALARS = (int, float, complex, str, bytes, type(None))
# Classes of these packages are never "the user's class" that a remedy addresses.
_LIBRARY_ROOTS = frozenset({"torch", "torchrl", "tensordict", "rlguard"}) | frozenset(sys.stdlib_module_names)

# Ends every runtime message about a copy, after the remedy.
LINT_NOTE = " Lint rule RLG001 (uncopyable-policy) flags this pattern statically."

T = TypeVar("T")
# A probe copies or pickles an object, sharing the tensors given by id. On failure it returns the
# error and the objects the copy was inside when it was raised, outermost first.
Probe = Callable[[Any, "dict[int, Any]"], "tuple[Exception, list[Any]] | None"]


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

    Probes copy without tensors (they are shared into the copies), so no tensor is ever
    duplicated, and nothing is swapped into ``obj``: torch's modules stay exactly as they were,
    whatever is found.
    """
    return find_marked(obj, path) or _find_failing(obj, path, _copy_failure, "cannot be copied")


def find_unpicklable(obj: Any, path: str) -> Uncopyable | None:
    """The deepest member of ``obj`` that is marked or that multiprocessing cannot pickle; None if it pickles.

    Pickled as a worker process receives it (``multiprocessing``'s ``ForkingPickler``), except
    that tensors are left out: torch shares them through shared memory, and a probe must not
    move the caller's tensors there.
    """
    return find_marked(obj, path) or _find_failing(obj, path, _pickle_failure, "cannot be pickled")


def whole(obj: Any, path: str, error: BaseException) -> Uncopyable:
    """The object itself as the culprit, when no single member explains why its copy failed."""
    return Uncopyable(path, _type_name(obj), f"could not be copied: {type(error).__name__}: {error}", None)


def _find_failing(obj: Any, path: str, probe: Probe, verb: str) -> Uncopyable | None:
    """The innermost object whose copy (or pickling) raised, named by its best path from ``obj``.

    One probe does it: the frames of the failed copy hold the objects it was inside when it
    raised, and the innermost is the value that cannot be copied (the lock, the file), never a
    container above it, however many objects the policy holds. A walk then names that value by
    the path with the fewest private attributes: how the user reaches it
    (``policy.module[1].module[0]...``), not how the copy happened to (``_det_part``).
    """
    failure = probe(obj, _tensors(obj))
    if failure is None:
        return None
    error, inside = failure
    node = _path_to(obj, path, inside[-1] if inside else obj) or _along(obj, path, inside)
    return Uncopyable(node.path, _type_name(node.obj), f"{verb}: {type(error).__name__}: {error}", _owner(node))


def _path_to(root: Any, path: str, target: Any) -> _Node | None:
    for node in _best_first(root, path, lambda node: node.obj is not target):
        if node.obj is target:
            return node
    return None


def _along(root: Any, path: str, inside: list[Any]) -> _Node:
    """The innermost of ``inside`` that is a member of the one before (a value kept in a custom state is not)."""
    node = _Node(root, path, None)
    for obj in inside[1:]:
        for _, child_path, child in _members(node.obj, node.path):
            if child is obj:
                node = _Node(child, child_path, node)
                break
    return node


def _tensors(obj: Any) -> dict[int, Any]:
    """A module's parameters and buffers by id: probes share them, so no tensor is ever copied."""
    if not _is_module(obj):
        return {}
    return {id(tensor): tensor for tensor in itertools.chain(obj.parameters(), obj.buffers())}


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
                if id(child) not in seen and not isinstance(child, _SCALARS):
                    cost = private + name.startswith("_")
                    heapq.heappush(heap, (cost, depth + 1, next(order), _Node(child, child_path, node)))


def _members(obj: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(attribute name, path, value) of each member; dict keys and indexes count as public names.

    The path is Python that evaluates to the member: ``policy.module[1].encoder.cfg.lock``.
    """
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
                    yield child_name, _submodule_path(obj, path, child_name), child
            elif name not in ("_parameters", "_buffers"):  # tensors always copy
                yield name, f"{path}.{name}", value
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        for name, value in vars(obj).items():
            yield name, f"{path}.{name}", value


def _submodule_path(module: Any, path: str, name: str) -> str:
    from torch import nn

    if isinstance(module, (nn.ModuleList, nn.Sequential)) and name.isdigit():
        return f"{path}[{name}]"
    if isinstance(module, nn.ModuleDict):
        return f"{path}[{name!r}]"
    return f"{path}.{name}" if name.isidentifier() else f"{path}.get_submodule({name!r})"


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
    failure = _copy_failure(obj, {})
    return failure[0] if failure else None


def _copy_failure(obj: Any, tensors: dict[int, Any]) -> tuple[Exception, list[Any]] | None:
    try:
        copy.deepcopy(obj, dict(tensors))  # deepcopy's memo: an object found there is used as it is
    except Exception as error:  # any failure makes the member the culprit
        return error, _inside(error, copy.deepcopy.__code__, "x")
    return None


def _pickle_failure(obj: Any, tensors: dict[int, Any]) -> tuple[Exception, list[Any]] | None:
    """Pickle ``obj`` as a worker receives it, tensors left out; on failure, again in Python to see where."""
    import copyreg
    import pickle
    from multiprocessing.reduction import ForkingPickler

    error = _pickle_error(obj, ForkingPickler)  # the C pickler that workers get: fast when it works
    if error is None:
        return None
    # Python's pickler, with the reducers ForkingPickler adds (torch registers its own there):
    # its frames say what it was pickling when it raised.
    reducers = {**copyreg.dispatch_table, **vars(ForkingPickler)["_extra_reducers"]}
    python = type("ForkingPythonPickler", (pickle._Pickler,), {"dispatch_table": reducers})
    again = _pickle_error(obj, python)
    if again is None:  # the two picklers disagree: nothing to point at but the whole object
        return error, []
    return again, _inside(again, pickle._Pickler.save.__code__, "obj")  # type: ignore[attr-defined]


def _pickle_error(obj: Any, pickler: type) -> Exception | None:
    import torch

    class _Tensorless(pickler):
        def persistent_id(self, value: Any) -> int | None:
            return 0 if isinstance(value, torch.Tensor) else None

    try:
        _Tensorless(io.BytesIO()).dump(obj)
    except Exception as error:  # any failure makes the member the culprit
        return error
    return None


def _inside(error: BaseException, code: CodeType, name: str) -> list[Any]:
    """The local ``name`` of each frame running ``code`` between here and where ``error`` was raised."""
    found = []
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code is code:
            found.append(trace.tb_frame.f_locals[name])
        trace = trace.tb_next
    error.__traceback__ = None  # the frames hold the half-made copy
    return found


def _is_module(obj: Any) -> bool:
    # imported here, not at the top: this module must stay importable without torch
    from torch import nn

    return isinstance(obj, nn.Module)


def _marked(node: _Node) -> Uncopyable:
    obj = node.obj
    cls = obj if isinstance(obj, type) else type(obj)
    return Uncopyable(node.path, _type_name(obj), f"is marked @uncopyable{_defined_at(cls)}", _owner(node), True)


def _type_name(obj: Any) -> str:
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _defined_at(cls: type) -> str:
    """``, defined at FILE:LINE`` for ``cls``, from code objects and linecache only.

    ``inspect.getsourcelines`` parses the whole file with ``ast`` to find a class, which on
    Python 3.11 fails at random (``SystemError: AST constructor recursion depth mismatch``)
    while another thread parses too; this runs inside collectors that users build in threads.
    """
    try:
        codes = _method_codes(cls)
        filename = codes[0].co_filename if codes else getattr(sys.modules.get(cls.__module__), "__file__", None)
        line = getattr(cls, "__firstlineno__", None) or filename and _class_line(filename, cls.__name__, codes)
    except Exception:  # odd class attributes, a file that changed: the message goes without the place
        return ""
    if not filename:
        return ""
    return f", defined at {filename}:{line}" if line else f", defined in {filename}"


def _method_codes(cls: type) -> list[CodeType]:
    """The code objects of the functions written in ``cls``'s own body, earliest first."""
    codes = []
    for value in vars(cls).values():
        function = inspect.unwrap(getattr(value, "__func__", getattr(value, "fget", value)))
        code = getattr(function, "__code__", None)
        if isinstance(code, CodeType) and getattr(function, "__qualname__", "").startswith(f"{cls.__qualname__}."):
            codes.append(code)
    return sorted(codes, key=lambda code: code.co_firstlineno)


def _class_line(filename: str, name: str, codes: list[CodeType]) -> int | None:
    """The line of ``class name`` in ``filename``: the last one above its first method, else the only one."""
    pattern = re.compile(rf"\s*class\s+{re.escape(name)}\b")
    lines = [number for number, text in enumerate(linecache.getlines(filename), 1) if pattern.match(text)]
    if codes:
        lines = [number for number in lines if number <= codes[0].co_firstlineno]
        return lines[-1] if lines else None
    return lines[0] if len(lines) == 1 else None


_LIBRARIES = ("rlguard.", "torchrl.", "tensordict.", "torch.", "functools", "contextlib")


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warn_once`` that points at the first frame of the user's code."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_LIBRARIES):
        frame, level = frame.f_back, level + 1
    # warn_once adds its own frame; warnings.warn counts from warn_once's caller.
    return level + 1
