"""The project a file belongs to, and where its first-party imports lead on disk.

The linter sees a project the way Python and a type checker do, whatever paths were given:
``rlguard check scripts/collect.py`` follows ``from pkg.models import Policy`` to
``pkg/models.py`` exactly as ``rlguard check .`` does. Only files an import reaches are read.
"""

from __future__ import annotations

import glob
import re
import os
from collections.abc import Iterable, Iterator

from rlguard.engine.index import module_name_for
from rlguard.engine.libraries import LIBRARIES, library_tree
from rlguard.engine.names import absolute_module
from rlguard.engine.prefilter import at_line_start, class_statements

_ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
_SOURCE_SUFFIXES = (".py", ".pyi")
_VENDOR_DEPTH = 3  # how deep below a project root a vendored torchrl or tensordict is looked for


def project_root(path: str) -> str:
    """The nearest folder at or above ``path`` holding a project marker.

    Without one, the folder a file's top package sits in (a loose script's own folder).
    """
    start = os.path.abspath(path)
    current = start if os.path.isdir(start) else os.path.dirname(start)
    while True:
        if any(os.path.exists(os.path.join(current, marker)) for marker in _ROOT_MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return start if os.path.isdir(start) else package_top(start)
        current = parent


def package_top(path: str) -> str:
    """The folder a file's package chain starts in: what ``sys.path`` holds to import it as named."""
    directory = os.path.dirname(os.path.abspath(path))
    module, is_package = module_name_for(path)
    depth = module.count(".") + (1 if is_package else 0) if module else 0
    for _ in range(depth):
        directory = os.path.dirname(directory)
    return directory


def vendored_library(root: str, name: str) -> tuple[str, str | None] | None:
    """A vendored copy of library ``name`` inside the project (see ``engine.libraries``): (the folder
    holding its package, its version). A package merely named like the library is not one."""
    for depth in range(_VENDOR_DEPTH + 1):
        pattern = os.path.join(root, *(["*"] * depth), name, "__init__.py")
        for init in sorted(glob.glob(pattern)):
            package = os.path.dirname(init)
            if _skipped(os.path.relpath(package, root)):
                continue
            tree = library_tree(os.path.dirname(package))
            if tree is not None and tree.library == name:
                return os.path.dirname(package), tree.version
    return None


def _skipped(relative: str) -> bool:
    """Virtual environments and build folders hold installed copies, not vendored ones."""
    parts = relative.replace(os.sep, "/").split("/")
    return any(part.startswith(".") or part in ("build", "dist", "site-packages", "venv", "node_modules") for part in parts)


class ModuleResolver:
    """Where a first-party module lives on disk, as seen from a file that imports it.

    The search follows Python's: the importing file's own top folder (a script's folder is
    ``sys.path[0]``), the project root, its ``src/`` folder, and folders holding a vendored
    torchrl or tensordict. Packages with and without ``__init__.py`` (namespace packages) resolve.
    """

    def __init__(self) -> None:
        # Per run: a long-lived process (the language server) sees files and folders come and go.
        self._found: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
        self._roots: dict[str, tuple[str, ...]] = {}
        self._vendored: dict[str, list[str]] = {}
        self._tops: dict[tuple[str, tuple[str, ...]], bool] = {}
        self._roots_near: dict[str, tuple[str, ...]] = {}  # ``search_roots`` by the path as given

    def search_roots(self, near: str) -> tuple[str, ...]:
        """The folders imports made in ``near`` are searched in, in order."""
        # Every file of a folder searches the same roots: its package chain is the folder's.
        key = os.path.dirname(near) if near.endswith((".py", ".pyi", ".ipynb")) else near
        if key not in self._roots:
            self._roots[key] = self._search_roots(near) if near else ()
        return self._roots[key]

    def _search_roots(self, near: str) -> tuple[str, ...]:
        root = project_root(near)
        if root not in self._vendored:
            self._vendored[root] = [found[0] for name in LIBRARIES if (found := vendored_library(root, name))]
        roots = [package_top(near), root, os.path.join(root, "src"), *self._vendored[root]]
        return tuple(dict.fromkeys(r for r in roots if os.path.isdir(r)))

    def resolve(self, module: str, near: str) -> tuple[str, ...]:
        """Files that define ``module`` (a module file or a package's ``__init__``), first match first."""
        roots = self._roots_near.get(near)
        if roots is None:  # the same few files ask again and again: abspath reads the working folder each time
            roots = self._roots_near[near] = self.search_roots(os.path.abspath(near) if near else near)
        key = (module, roots)
        if key not in self._found:
            top = (module.partition(".")[0], roots)
            if top not in self._tops:  # most imports name a library: one look per root settles them
                self._tops[top] = any(os.path.exists(os.path.join(root, top[0])) or os.path.exists(os.path.join(root, top[0] + ".py"))
                                      or os.path.exists(os.path.join(root, top[0] + ".pyi")) for root in roots)
            self._found[key] = _files_of(module, roots) if self._tops[top] else ()
        return self._found[key]


def _files_of(module: str, roots: Iterable[str]) -> tuple[str, ...]:
    if not module or not all(part.isidentifier() for part in module.split(".")):
        return ()
    relative = os.path.join(*module.split("."))
    for root in roots:
        # A package wins over a module of the same name, as in Python's own finder.
        for candidate in (*(os.path.join(relative, "__init__" + s) for s in _SOURCE_SUFFIXES),
                          *(relative + s for s in _SOURCE_SUFFIXES)):
            path = os.path.join(root, candidate)
            if os.path.isfile(path):
                return (os.path.normpath(path),)
    return ()


# Read through ``at_line_start``: a pattern that starts with a literal is fast to search.
FROM_IMPORT = re.compile(rb"from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)")
IMPORT = re.compile(rb"import[ \t]+([^\n#;]*)")
_MAX_REACHED = 2000  # files read to follow class bases, however large the project


def reached_by_class_bases(given: dict[str, bytes | None], resolver: ModuleResolver) -> dict[str, bytes]:
    """Sources of the files that the class statements of ``given`` reach through imports, transitively.

    The pre-filter decides from text whether a class derives from a rule's root class; a base
    defined in another file is read from that file (through re-exports too), whether or not it
    was given, so checking one file decides as checking the project does.
    """
    given_paths = {os.path.abspath(path) for path in given}
    wanted: dict[str, set[bytes]] = {}  # by absolute path: the names looked for in that file
    reached: dict[str, bytes] = {}
    queue = [(path, data, _base_words(data)) for path, data in given.items() if data is not None]
    while queue and len(reached) < _MAX_REACHED:
        path, data, names = queue.pop()
        for module, imported in _modules_providing(path, data, names | _base_words(data)):
            for found in resolver.resolve(module, path):
                key = os.path.abspath(found)
                known = wanted.setdefault(key, set())
                if key in given_paths or imported <= known:
                    continue
                known |= imported
                text = reached.get(found) or read_bytes(found)
                if text is not None:
                    reached[found] = text
                    queue.append((found, text, set(known)))
    return reached


def _base_words(data: bytes) -> set[bytes]:
    """Words in a file's class bases: ``class A(pkg.Base, Mixin)`` gives pkg, Base and Mixin."""
    return {word for _, bases in class_statements(data) for word in bases}


def _modules_providing(path: str, data: bytes, names: set[bytes]) -> list[tuple[str, set[bytes]]]:
    """(module, names to look for there) for the imports in a file that bind one of ``names``."""
    if not names:
        return []
    found: list[tuple[str, set[bytes]]] = []
    for local, imported, origin in import_bindings(path, data):
        if origin is not None:
            if local in names:
                # ``from pkg import models`` may name a submodule, whose classes are then looked for.
                found += [(origin, {imported}), (f"{origin}.{imported.decode()}", names)]
        elif local in names or imported.split(b".")[0] in names:
            found.append((imported.decode(), names))
    return found


def import_bindings(path: str, data: bytes) -> Iterator[tuple[bytes, bytes, str | None]]:
    """(local name, imported name, the absolute module a ``from`` import takes it from; None for a plain
    ``import``) of each import statement of a file, read from its text."""
    module, is_package = module_name_for(path)
    for source, imports in (match.groups() for match in at_line_start(FROM_IMPORT, data)):
        text = source.decode()
        level = len(text) - len(text.lstrip("."))
        absolute = absolute_module(text[level:] or None, level, module, is_package)
        if absolute is not None:
            for imported, local in import_aliases(imports):
                yield local, imported, absolute
    for imports in (match.group(1) for match in at_line_start(IMPORT, data)):
        for imported, local in import_aliases(imports):
            yield local, imported, None


def import_aliases(names: bytes) -> list[tuple[bytes, bytes]]:
    """(imported name, local name) pairs of an import list such as ``(a as b, c)``."""
    pairs = []
    for item in names.strip(b"() \t").replace(b"\\\n", b" ").split(b","):
        parts = item.split()
        if len(parts) == 3 and parts[1] == b"as":
            pairs.append((parts[0], parts[2]))
        elif len(parts) == 1:
            pairs.append((parts[0], parts[0].split(b".")[0]))
    return pairs


def read_bytes(path: str) -> bytes | None:
    """A file's bytes, or None when it cannot be read (the caller reports or skips it)."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None
