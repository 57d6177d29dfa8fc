"""The project-wide index of class and factory facts.

Workers collect facts for every file they parse; the main process merges them here and
answers the rules' requirements. A class that a requirement names, in a file the
pre-filter skipped, is indexed on demand: only what can matter is ever parsed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Iterator


@dataclass
class AttrFact:
    """One ``self.<attr> = <value>`` seen in a method of a class."""

    callee: str | None  # qualified name of the call that built the value, if any
    tensor: bool = False  # the value is tensor-valued (see engine.types)


@dataclass
class ClassFacts:
    qualname: str
    path: str
    bases: tuple[str, ...]  # qualified names; unresolvable bases are kept as written
    decorators: tuple[str, ...] = ()
    methods: set[str] = field(default_factory=set)
    attrs: dict[str, list[AttrFact]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]


TUPLE = "<tuple>"  # the callee of a returned tuple; its args are keyed by position


@dataclass(frozen=True)
class Built:
    """A call that builds a value, and the calls that build its arguments.

    ``callee`` is a qualified name, ``.name`` for a method called on ``receiver``, ``[i]`` for
    item ``i`` of what ``receiver`` returns, or ``TUPLE`` for ``return a, b``.
    ``marked_by`` holds the callees of calls that took the value, by name, as their first
    argument before it was returned (``uncopyable(policy)``).
    """

    callee: str
    args: tuple[tuple[str | None, Built], ...] = ()  # (keyword or None, argument)
    receiver: Built | None = None
    marked_by: tuple[str, ...] = ()


@dataclass
class FunctionFacts:
    """A module-level function and what its ``return`` statements build."""

    qualname: str
    path: str
    returns: list[Built] = field(default_factory=list)


@dataclass
class FileFacts:
    path: str
    module: str
    imports: dict[str, str]  # local name -> qualified name, to follow re-exports
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    functions: dict[str, FunctionFacts] = field(default_factory=dict)


def module_name_for(path: str) -> tuple[str, bool]:
    """Dotted module name of a file (walking up through packages), and whether it is a package."""
    directory, filename = os.path.split(os.path.abspath(path))
    stem = filename.rsplit(".", 1)[0]
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    while os.path.isfile(os.path.join(directory, "__init__.py")) or os.path.isfile(
        os.path.join(directory, "__init__.pyi")
    ):
        directory, package = os.path.split(directory)
        parts.append(package)
        if not package:
            break
    return ".".join(reversed(parts)), is_package


Loader = Callable[[str], FileFacts | None]


class ProjectIndex:
    """Class and function facts of every linted file that matters, keyed by qualified name."""

    def __init__(self, module_files: dict[str, list[str]], loader: Loader | None = None) -> None:
        self._module_files = module_files  # module name -> candidate paths
        self._loader = loader
        self._files: dict[str, FileFacts] = {}
        self._classes: dict[str, list[ClassFacts]] = {}
        self._functions: dict[str, list[FunctionFacts]] = {}
        self._modules: dict[str, list[FileFacts]] = {}

    def __getstate__(self) -> dict:
        # Workers get the index after resolution loaded what it needed; the loader stays home.
        return {**self.__dict__, "_loader": None}

    def add(self, facts: FileFacts) -> None:
        if facts.path in self._files:
            return
        self._files[facts.path] = facts
        self._modules.setdefault(facts.module, []).append(facts)
        for qualname, cls in facts.classes.items():
            self._classes.setdefault(qualname, []).append(cls)
        for qualname, function in facts.functions.items():
            self._functions.setdefault(qualname, []).append(function)

    def _load_module(self, module: str) -> None:
        if self._loader is None:
            return
        for path in self._module_files.get(module, ()):
            if path not in self._files:
                self._files[path] = FileFacts(path, module, {})  # guards against cycles
                loaded = self._loader(path)
                del self._files[path]
                self.add(loaded or FileFacts(path, module, {}))

    def _module_facts(self, module: str) -> list[FileFacts]:
        self._load_module(module)
        return self._modules.get(module, [])

    def get_class(self, qualname: str, near: str = "") -> ClassFacts | None:
        """Facts of a class, following re-exports through package ``__init__`` imports."""
        return self._find(self._classes, qualname, near)

    def get_function(self, qualname: str, near: str = "") -> FunctionFacts | None:
        """Facts of a module-level function, following re-exports like ``get_class``."""
        return self._find(self._functions, qualname, near)

    def _find(self, table: dict[str, list[Any]], qualname: str, near: str) -> Any | None:
        for _ in range(8):  # re-export chains are short; this bounds cycles
            module, _, name = qualname.rpartition(".")
            if not module:
                return None
            facts = self._module_facts(module)
            candidates = table.get(qualname)
            if candidates:
                return _nearest(candidates, near)
            target = next((f.imports[name] for f in facts if name in f.imports), None)
            if target is None or target == qualname:
                return None
            qualname = target
        return None

    def canonical(self, qualname: str, near: str = "") -> str:
        cls = self.get_class(qualname, near)
        return cls.qualname if cls else qualname

    def ancestry(self, qualname: str, near: str = "") -> Iterator[tuple[str, ClassFacts | None]]:
        """The class and its bases, depth first, each once: (qualified name, facts if linted)."""
        seen: set[str] = set()
        stack = [(qualname, near)]
        while stack:
            name, origin = stack.pop()
            cls = self.get_class(name, origin)
            key = cls.qualname if cls else name
            if key in seen:
                continue
            seen.add(key)
            yield key, cls
            if cls is not None:
                stack.extend((base, cls.path) for base in reversed(cls.bases))

    def derives_from(self, qualname: str, roots: Callable[[str], bool], near: str = "") -> bool:
        """True when the class, or any ancestor, satisfies ``roots`` (by qualified name)."""
        return any(roots(name) for name, _ in self.ancestry(qualname, near))

    def method_owner(self, qualname: str, method: str, near: str = "") -> str | None:
        """The first class in the ancestry that defines ``method`` in the linted set."""
        for name, cls in self.ancestry(qualname, near):
            if cls is not None and method in cls.methods:
                return name
        return None

    def importers(self, qualname: str) -> list[str]:
        """Paths of the indexed files that import ``qualname`` by name (``from m import X``)."""
        return sorted(facts.path for facts in self._files.values() if qualname in facts.imports.values())


def _nearest(candidates: list[Any], near: str) -> Any:
    """Several scripts may define ``utils.Policy``: prefer the one beside the asking file."""
    if len(candidates) > 1 and near:
        directory = os.path.dirname(near)
        for cls in candidates:
            if os.path.dirname(cls.path) == directory:
                return cls
    return candidates[0]
