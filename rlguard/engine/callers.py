"""Which files call, through their imports, a project function or class that reaches a rule's sink.

A rule with sinks (``Rule.sinks``) reports a value handed to a project function that passes it on to
the sink, at the call: ``log_json(step, grad_norm=norm)`` in ``train.py``, when ``logutil.log_json``
dumps its ``**metrics``. The caller never names the sink, so its own text would keep the rule off it.
This decides from text alone, as the pre-filter does, and reads only the files the caller's imports
reach, so checking one file decides as checking the project does. It over-approximates: the rule
still reports only what the index confirms. torchrl and tensordict are libraries here, also where their
source is the project (a checkout, a vendored copy): their modules are neither callers nor followed,
and only their files that name the sink are checked for it.

A definition reaches the sink when its own text, with its file's imports, meets the rule's token
groups, or when it calls a definition that does (in its file, imported, or a method of its own class),
up to ``_MAX_DEPTH`` calls deep; a class also when its bases name what the groups ask for, itself or
through bases of the project (``class StatefulHook(TrainerHookBase)``). Text inside a function that starts a line at column 0 (a multi-line
string) ends the function early: that part is not read.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator, Mapping

from rlguard.engine.libraries import in_library_copy
from rlguard.engine.prefilter import TokenGroups, at_line_start
from rlguard.engine.project import FROM_IMPORT, IMPORT, import_bindings

_DEFINITION = re.compile(rb"(def|class)[ \t]+(\w+)")
_TOP_LEVEL = re.compile(rb"\n[^\s#)\]}]")  # a line that starts a module-level statement
_METHOD = re.compile(rb"\n([ \t]+)(?:async[ \t]+)?def[ \t]+(\w+)")
_METHOD_CALL = re.compile(rb"\.(\w+)[ \t]*\(")
_CALL = re.compile(rb"(\w+)[ \t]*\(")
_SELF_CALL = re.compile(rb"self\.(\w+)[ \t]*\(")
_ATTRIBUTE_CALL = re.compile(rb"(\w+)\.(\w+)[ \t]*\(")
_HEADER = re.compile(rb"class[ \t]+\w+[ \t]*\(([^)]*)\)")
_WORD = re.compile(rb"\w+")
_CONSTRUCTION = (b"__init__", b"__call__")  # a class a caller builds, and calls as a module does
_MAX_DEPTH = 2  # calls followed from a definition the caller imports
_MAX_REEXPORTS = 8  # ``from .sub import f`` hops followed to where ``f`` is defined

Resolve = Callable[[str, str], tuple[str, ...]]
Read = Callable[[str], "bytes | None"]


class _Source:
    """One file's text, read for its imports and its module-level definitions."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        self._imports: dict[bytes, tuple[str, bytes | None]] | None = None
        self._import_text: bytes | None = None
        self._methods: dict[bytes, dict[bytes, bytes]] = {}
        self._texts: dict[bytes, bytes] = {}

    @property
    def imports(self) -> dict[bytes, tuple[str, bytes | None]]:
        """Local name -> (absolute module, the name imported from it; None when the name is the module)."""
        if self._imports is None:
            self._imports = dict(_imports(self.path, self.data))
        return self._imports

    @property
    def import_text(self) -> bytes:
        """The file's import statements: a definition that calls ``dumps`` may import ``json`` there."""
        if self._import_text is None:
            self._import_text = b"\n" + b"\n".join(m.group(0) for pattern in (FROM_IMPORT, IMPORT)
                                                    for m in at_line_start(pattern, self.data))
        return self._import_text

    def definition(self, name: bytes) -> tuple[bytes, bytes] | None:
        """(``def`` or ``class``, its text) of the module-level definition of ``name``."""
        found = self.definitions.get(name)
        if found is None:
            return None
        if name not in self._texts:
            self._texts[name] = self.data[found[1]:found[2]]
        return found[0], self._texts[name]

    def reexports(self, name: bytes) -> bool:
        """Whether ``name`` is imported here (a package's ``__init__`` handing on a name) but not defined."""
        return name in self.imports and self.definition(name) is None

    @functools.cached_property
    def definitions(self) -> dict[bytes, tuple[bytes, int, int]]:
        """Module-level ``def`` and ``class`` statements: name -> (kind, start, end)."""
        return _definitions(self.data)

    def methods(self, name: bytes, text: bytes) -> dict[bytes, bytes]:
        if name not in self._methods:
            self._methods[name] = _methods(text)
        return self._methods[name]


def _imports(path: str, data: bytes) -> Iterator[tuple[bytes, tuple[str, bytes | None]]]:
    """The project's names and modules a file imports (torchrl's and tensordict's are left out)."""
    for local, imported, origin in import_bindings(path, data):
        if origin is not None:
            if not in_library_copy(origin):
                yield local, (origin, imported)
        elif not (local == imported.split(b".")[0] and b"." in imported) and not in_library_copy(imported.decode()):
            yield local, (imported.decode(), None)  # ``import a.b`` binds ``a``: its attribute calls are not followed


def _definitions(data: bytes) -> dict[bytes, tuple[bytes, int, int]]:
    """Module-level ``def`` and ``class`` statements: name -> (kind, start, end of the statement)."""
    starts = [m.start() + 1 for m in _TOP_LEVEL.finditer(data)]
    found: dict[bytes, tuple[bytes, int, int]] = {}
    for match in _DEFINITION.finditer(data):
        start = match.start()
        line = data.rfind(b"\n", 0, start) + 1
        if data[line:start] not in (b"", b"async "):
            continue
        after = bisect.bisect_right(starts, start)
        end = starts[after] if after < len(starts) else len(data)
        found[match.group(2)] = (match.group(1), line, end)
    return found


def _continues_word(data: bytes, start: int) -> bool:
    """Whether the match at ``start`` is the tail of a longer name or attribute (``x.owner.f(``)."""
    return start > 0 and (data[start - 1:start].isalnum() or data[start - 1:start] in (b"_", b"."))


def _methods(block: bytes) -> dict[bytes, bytes]:
    """The methods of a class statement's text: name -> its text."""
    found: dict[bytes, bytes] = {}
    matches = list(_METHOD.finditer(block))
    if not matches:
        return found
    indent = len(matches[0].group(1))
    for match in matches:
        if len(match.group(1)) != indent:
            continue
        ends = re.compile(rb"\n[ \t]{0,%d}[^\s#)\]}]" % indent)
        end = ends.search(block, match.end())
        found[match.group(2)] = block[match.start():end.start() if end else len(block)]
    return found


Encoded = list[list[tuple[bytes, ...]]]


def encoded(groups: TokenGroups) -> Encoded:
    """Token groups as bytes, each token a tuple of the parts it needs."""
    return [[(t.encode(),) if isinstance(t, str) else tuple(p.encode() for p in t) for t in group] for group in groups]


def meets(groups: Encoded, text: bytes, imports: bytes = b"") -> bool:
    """Whether ``text`` meets every token group; with ``imports`` (its file's import statements), each
    token may take all but one of its parts from those (``from json import dumps``, then ``dumps(x)``)."""
    return all(any(all(part in text or part in imports for part in token) and any(part in text for part in token)
                   for token in group) for group in groups)


class SinkCallers:
    """For one rule's token groups: whether a file calls a project definition that reaches its sink."""

    def __init__(self, groups: TokenGroups, resolve: Resolve, read: Read,
                 sources: dict[str, _Source | None] | None = None) -> None:
        self._groups = encoded(groups)
        self._resolve = resolve
        self._read = read
        self._sources = sources if sources is not None else {}  # shared by the rules of a run: read once
        self._memo: dict[tuple[str, bytes, bytes | None], tuple[bool, int]] = {}
        self._near: dict[str, bool] = {}
        self._seen_calls: dict[bytes, _Calls] = {}

    def meets(self, text: bytes, imports: bytes = b"") -> bool:
        return meets(self._groups, text, imports)

    def calls_into_sink(self, path: str, data: bytes) -> bool:
        """Whether the file uses an imported project function or class that reaches the sink."""
        source = self._sources.get(path)
        if source is None or source.data is not data:
            source = self._sources[path] = _Source(path, data)
        return any(self._uses_reaching(source, local, data, _MAX_DEPTH) for local in source.imports)

    def _uses_reaching(self, source: _Source, local: bytes, caller: bytes, depth: int) -> bool:
        """Whether ``caller`` (a file, or a definition in ``source``) reaches the sink through what
        ``source`` imports as ``local``: a function, a class it builds or whose methods it calls, or a
        module whose functions it calls."""
        module, imported = source.imports[local]
        target = self._module_alias(source, local)
        if target is not None:
            called = _attribute_calls(caller, local)
            return any(self._reaches(file, name, None, depth) for file in self._resolve(target, source.path) for name in called)
        assert imported is not None
        for file in self._resolve(module, source.path):
            if self._reaches(file, imported, None, depth) or self._bases_meet(file, imported, depth):
                return True
            methods = self._class_methods(file, imported)
            members = {*_CONSTRUCTION, *self._calls(caller).methods} if methods else ()
            if any(self._reaches(file, imported, member, depth) for member in methods.keys() & members):
                return True
        return False

    def _bases_meet(self, path: str, name: bytes, depth: int, hops: int = 0) -> bool:
        """Whether the class ``name`` of ``path`` names in its bases what the groups ask for
        (``class StatefulHook(TrainerHookBase)``), itself or through a base of the project."""
        source = self._source(path)
        if source is None or hops > _MAX_REEXPORTS:
            return False
        definition = source.definition(name)
        if definition is None:
            bound = source.imports.get(name)
            return bound is not None and bound[1] is not None and any(
                self._bases_meet(file, bound[1], depth, hops + 1) for file in self._resolve(bound[0], path))
        kind, text = definition
        header = _HEADER.match(text)
        if kind != b"class" or header is None:
            return False
        if self.meets(header.group(1), source.import_text):
            return True
        return depth > 0 and any(self._bases_meet(path, base, depth - 1, hops) if source.definition(base) is not None
                                 else (base in source.imports and self._uses_base(source, base, depth - 1))
                                 for base in _WORD.findall(header.group(1)))

    def _uses_base(self, source: _Source, base: bytes, depth: int) -> bool:
        module, imported = source.imports[base]
        return imported is not None and any(self._bases_meet(file, imported, depth) for file in self._resolve(module, source.path))

    def _near_sink(self, path: str) -> bool:
        """Whether a file meets the tokens or imports from one that does: only such files are read
        for definitions (a chain through files that do neither is not followed)."""
        if path not in self._near:
            self._near[path] = False
            source = self._source(path)
            self._near[path] = source is not None and (self.meets(source.data) or any(
                (found := self._source(file)) is not None and self.meets(found.data)
                for module, _ in source.imports.values() for file in self._resolve(module, path)))
        return self._near[path]

    def _class_methods(self, path: str, name: bytes, hops: int = 0) -> dict[bytes, bytes]:
        """The methods of the class ``name`` defined in, or re-exported by, ``path``."""
        source = self._source(path)
        if source is None or not (source.reexports(name) or self._near_sink(path)):
            return {}
        definition = source.definition(name)
        if definition is None:
            bound = source.imports.get(name)
            if bound is None or bound[1] is None or hops >= _MAX_REEXPORTS:
                return {}
            return next((found for file in self._resolve(bound[0], path)
                         if (found := self._class_methods(file, bound[1], hops + 1))), {})
        kind, text = definition
        return source.methods(name, text) if kind == b"class" else {}

    def _is_module(self, module: str, name: bytes, near: str) -> bool:
        return bool(self._resolve(f"{module}.{name.decode()}", near))

    def _source(self, path: str) -> _Source | None:
        if path not in self._sources:
            data = self._read(path)
            self._sources[path] = _Source(path, data) if data is not None else None
        return self._sources[path]

    def _reaches(self, path: str, name: bytes, member: bytes | None, depth: int, hops: int = 0) -> bool:
        """Whether the definition of ``name`` in ``path`` reaches the sink: the function itself (``member``
        None), or the method ``member`` of the class."""
        key = (path, name, member)
        known = self._memo.get(key)  # (reached, the depth it was asked at)
        if known is not None and (known[0] or known[1] >= depth):
            return known[0]
        self._memo[key] = (False, depth)  # a cycle reaches nothing new
        reached = self._reach(path, name, member, depth, hops)
        self._memo[key] = (reached, depth)
        return reached

    def _reach(self, path: str, name: bytes, member: bytes | None, depth: int, hops: int) -> bool:
        source = self._source(path)
        if source is None or not (source.reexports(name) or self._near_sink(path)):
            return False
        definition = source.definition(name)
        if definition is None:  # re-exported: follow the import that binds it
            bound = source.imports.get(name)
            if bound is None or bound[1] is None or hops >= _MAX_REEXPORTS:
                return False
            module, imported = bound[0], bound[1]
            return any(self._reaches(file, imported, member, depth, hops + 1) for file in self._resolve(module, path))
        kind, text = definition
        if (kind == b"def") != (member is None):
            return False
        if member is None:
            return self._body_reaches(source, text, depth, {})
        methods = source.methods(name, text)
        return member in methods and self._body_reaches(source, methods[member], depth, methods)

    def _body_reaches(self, source: _Source, body: bytes, depth: int, methods: Mapping[bytes, bytes]) -> bool:
        if self.meets(body, source.import_text):
            return True
        if depth <= 0:
            return False
        calls = self._calls(body)
        for name in calls.names.intersection(source.definitions):
            if any(self._reaches(source.path, name, member, depth - 1) for member in (None, b"__init__")):
                return True
        if any(self._uses_reaching(source, local, body, depth - 1)
               for local in (calls.names | calls.owners).intersection(source.imports)):
            return True
        return any(self._body_reaches(source, methods[name], depth - 1, methods) for name in calls.own.intersection(methods))

    def _calls(self, text: bytes) -> _Calls:
        found = self._seen_calls.get(text)
        if found is None:
            found = self._seen_calls[text] = _Calls(text)
        return found

    def _module_alias(self, source: _Source, local: bytes) -> str | None:
        """The module ``local`` names in a file (``import pkg.logutil as log``, ``from pkg import logutil``)."""
        bound = source.imports.get(local)
        if bound is None:
            return None
        module, imported = bound
        if imported is None:
            return module
        if any((found := self._source(file)) is not None and (imported in found.imports or found.definition(imported))
               for file in self._resolve(module, source.path)):
            return None  # a name the module defines or imports, not a submodule
        return f"{module}.{imported.decode()}" if self._is_module(module, imported, source.path) else None


def _attribute_calls(text: bytes, owner: bytes) -> set[bytes]:
    pattern = re.compile(re.escape(owner) + rb"\.(\w+)[ \t]*\(")  # a literal first: quick to search
    return {m.group(1) for m in pattern.finditer(text) if not _continues_word(text, m.start())}


class _Calls:
    """The calls a text makes, by what they name, each read when first asked: ``f(``, ``owner.attr(``,
    ``.method(``, ``self.method(``."""

    def __init__(self, text: bytes) -> None:
        self.text = text

    @functools.cached_property
    def names(self) -> set[bytes]:
        return {m.group(1) for m in _CALL.finditer(self.text)}

    @functools.cached_property
    def owners(self) -> set[bytes]:
        return {m.group(1) for m in _ATTRIBUTE_CALL.finditer(self.text)}

    @functools.cached_property
    def methods(self) -> set[bytes]:
        return {m.group(1) for m in _METHOD_CALL.finditer(self.text)}

    @functools.cached_property
    def own(self) -> set[bytes]:
        return {m.group(1) for m in _SELF_CALL.finditer(self.text)}
