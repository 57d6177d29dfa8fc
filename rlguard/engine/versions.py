"""Which torchrl versions run each line: try/except shims, hasattr guards, version gates, TYPE_CHECKING.

Code written for several torchrl releases says so in its own control flow: ``try: from torchrl.data
import Composite`` with an ``except ImportError`` fallback, ``if hasattr(torchrl.collectors,
"Collector"):``, ``if Version(torchrl.__version__) >= Version("0.11"):``. A finding about a version
(a removed name, a method that raises from some release on) stands only where the code runs at a
version the target admits. This module answers that once per file, for every rule: a map from each
guarded block to the versions it runs at (a predicate on a version tuple) and the kind of guard.

Versions are one axis: torchrl and tensordict are released in lockstep (tensordict 0.x pairs with
torchrl 0.x), so a gate on ``tensordict.__version__`` and a tensordict removal are judged on it too.
When a name exists is read from the removed-API table: a table name until its removal, a name the
table gives as a replacement from the release that first pointed to it (deprecated the old name, or
removed it), any other torchrl or tensordict name on every release.
"""

from __future__ import annotations

import bisect
import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Breaks
from rlguard.engine.names import ImportTable, dotted_name, module_of_import_from
from rlguard.engine.target import known_releases, parse_version, removed_api_table, version_text
from rlguard.engine.traversal import iter_nodes

Version = tuple[int, ...]
Predicate = Callable[[Version], bool]
LIBRARIES = ("torchrl", "tensordict")


def _always(_version: Version) -> bool:
    return True


def _padded(version: Version) -> Version:
    return (tuple(version) + (0, 0, 0))[:3]


# ----- when a torchrl or tensordict name exists -----

@functools.cache
def _lifetimes() -> tuple[dict[str, Version], dict[str, Version]]:
    """(first release with the name, first release without it) per qualified name, from the table."""
    since: dict[str, Version] = {}
    until: dict[str, Version] = {}
    for entry in removed_api_table()["entries"]:
        if entry["kind"] not in ("name", "method"):
            continue
        qualname = f"{entry['module']}.{entry['name']}"
        if entry["removed_in"] and entry.get("found") != "raises":  # a class that only raises when built still imports
            until[qualname] = _padded(parse_version(entry["removed_in"]))
        pointed = entry["deprecated_in"] or entry["removed_in"]
        if pointed and _library(entry["replacement"]) and entry["replacement"].replace(".", "").isidentifier():
            first = _padded(parse_version(pointed))
            since[entry["replacement"]] = min(first, since.get(entry["replacement"], first))
    return since, until


def dated_names() -> frozenset[tuple[str, str]]:
    """(name, last part of its module) for every name whose first or last release the table knows:
    the only names a shim or ``hasattr`` guard can be decided on, and what any use of one spells."""
    since, until = _lifetimes()
    return frozenset((module.rpartition(".")[2], name) for module, _, name in
                     (qualname.rpartition(".") for qualname in (*since, *until)))


def exists(qualname: str, version: Version) -> bool:
    """Whether ``from <module> import <name>`` (or the attribute) works at ``version``."""
    since, until = _lifetimes()
    version = _padded(version)
    return version >= since.get(qualname, (0, 0, 0)) and version < until.get(qualname, (10**6,))


def _leaves(statements: Sequence[cst.BaseStatement]) -> bool:
    """Whether a block always leaves the block around it: it ends in ``return``, ``raise``, ``continue`` or ``break``."""
    last = statements[-1] if statements else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _library(qualname: str | None) -> bool:
    return qualname is not None and qualname.split(".")[0] in LIBRARIES


# ----- the blocks of a file and the versions they run at -----

class Branch(NamedTuple):
    """Where a node is: the versions its block runs at, and what guards it."""

    runs: Predicate
    kind: str  # "always", "try", "except", "else", "gate", "hasattr", "type-checking"
    guard: cst.CSTNode | None  # the If or Try that decides it
    compat: bool  # a branch of compatibility code: a gate, a hasattr guard, or an import shim
    # In a try body: the statement of that body holding the node, and each handler's (exceptions
    # caught, None for all; names its body binds).
    statement: cst.BaseStatement | None = None
    handlers: tuple[tuple[frozenset[str] | None, frozenset[str]], ...] = ()


ANYWHERE = Branch(_always, "always", None, False)


class Guard(NamedTuple):
    """An If or Try whose branches depend on the version: each branch's statements and predicate."""

    node: cst.If | cst.Try
    kind: str  # "try", "gate", "hasattr"
    branches: tuple[tuple[str, Sequence[cst.BaseStatement], Predicate], ...]  # (label, statements, runs)
    parent: Sequence[cst.BaseStatement]  # the block holding the guard


class VersionMap:
    """The versions each guarded block of one module runs at. Built after the walk, when the file's
    imports and module-level bindings are complete; nodes are matched by identity."""

    def __init__(self, module: cst.Module, imports: ImportTable, bindings: Callable[[str], cst.BaseExpression | None],
                 oldest: Version, newest: Version) -> None:
        self._imports, self._bindings = imports, bindings
        self.oldest, self.newest = _padded(oldest), _padded(newest)
        self._points = {_padded(v) for v in known_releases()} | {self.oldest, self.newest}
        self._blocks: list[tuple[Sequence[cst.CSTNode], Branch]] = []  # statements, or a conditional's expression
        self.guards: list[Guard] = []
        self._statements(module.body, ANYWHERE)
        self._by_node: dict[int, Branch] | None = None

    # ----- questions -----
    def branch(self, node: cst.CSTNode) -> Branch:
        if self._by_node is None:
            self._by_node = {}
            for statements, branch in self._blocks:  # outer blocks first: inner ones overwrite them
                for statement in statements:
                    inner = branch._replace(statement=statement) if branch.handlers and isinstance(statement, cst.BaseStatement) else branch
                    for child in iter_nodes(statement):
                        self._by_node[id(child)] = inner
        return self._by_node.get(id(node), ANYWHERE)

    def admitted(self) -> list[Version]:
        """The versions judged: known releases within [oldest, newest], and both ends."""
        return sorted(p for p in self._points if self.oldest <= p <= self.newest)

    def below_oldest(self) -> list[Version]:
        return sorted(p for p in self._points if p < self.oldest)

    def stands(self, node: cst.CSTNode, breaks: Breaks) -> bool:
        """Whether a problem that ``breaks`` describes happens where ``node`` runs, at an admitted version."""
        branch = self.branch(node)
        if breaks.raises is not None and handled(branch, breaks.raises):
            return False
        since = _padded(breaks.since)
        return any(version >= since and branch.runs(version) for version in self.admitted())

    # ----- building -----
    def _statements(self, body: Sequence[cst.BaseStatement], within: Branch) -> None:
        for position, statement in enumerate(body):
            if isinstance(statement, cst.If):
                after = self._if(statement, body, within)
                if after is not None:  # ``if guard: return ...``: the rest of the block is its ``else``
                    self._add(body[position + 1:], after)
                    return
            elif isinstance(statement, cst.Try):
                self._try(statement, body, within)
            elif isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:  # ``X = A if hasattr(m, "A") else B``, ``return A if ... else B``
                    value = getattr(small, "value", None)
                    if isinstance(value, cst.IfExp):
                        self._if_expression(value, within)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef, cst.With, cst.For, cst.While)):
                self._statements(block_statements(statement.body), within)
                if isinstance(statement, (cst.For, cst.While)) and statement.orelse is not None:
                    self._statements(block_statements(statement.orelse.body), within)

    def _add(self, statements: Sequence[cst.BaseStatement], branch: Branch) -> None:
        if branch is not ANYWHERE:
            self._blocks.append((statements, branch))
        self._statements(statements, branch)

    def _if(self, node: cst.If, parent: Sequence[cst.BaseStatement], within: Branch) -> Branch | None:
        """Map the branches of ``node``; when it decides on the version and its body always leaves the
        block (``return``, ``raise``, ``continue``, ``break``) with no ``else``, the branch that the
        statements after it run in."""
        orelse = node.orelse
        rest: Sequence[cst.BaseStatement] = () if orelse is None else (orelse,) if isinstance(orelse, cst.If) \
            else block_statements(orelse.body)
        if self._type_checking(node.test):
            self._add(block_statements(node.body), within._replace(kind="type-checking", guard=node, handlers=()))
            self._add(rest, within)
            return None
        test = self._condition(node.test)
        if test is None:
            self._add(block_statements(node.body), within)
            self._add(rest, within)
            return None
        kind, holds = test
        outer = within.runs
        yes: Predicate = lambda v: outer(v) and holds(v)  # noqa: E731
        no: Predicate = lambda v: outer(v) and not holds(v)  # noqa: E731
        self.guards.append(Guard(node, kind, (("if", block_statements(node.body), yes), ("else", rest, no)), parent))
        self._add(block_statements(node.body), Branch(yes, kind, node, True))
        self._add(rest, Branch(no, kind, node, True))
        return Branch(no, kind, node, True) if orelse is None and _leaves(block_statements(node.body)) else None

    def _if_expression(self, node: cst.IfExp, within: Branch) -> None:
        """A conditional expression assigned or returned, as a gate's two branches (no RLG008 guard:
        its fix rewrites statements)."""
        test = self._condition(node.test)
        if test is None:
            return
        kind, holds = test
        outer = within.runs
        self._blocks.append(((node.body,), Branch(lambda v: outer(v) and holds(v), kind, None, True)))
        self._blocks.append(((node.orelse,), Branch(lambda v: outer(v) and not holds(v), kind, None, True)))

    def _try(self, node: cst.Try, parent: Sequence[cst.BaseStatement], within: Branch) -> None:
        body = block_statements(node.body)
        failures = self._failures(body)
        guard = bool(failures)  # the body reads library names: which branch runs is known per version
        handlers = tuple((_caught(h), _bound(block_statements(h.body))) for h in node.handlers)
        # An import shim, even for another package, is compatibility code: fixes keep out of it.
        shim = guard or (_imports(body) and any(_catches(caught, "ImportError") for caught, _ in handlers))
        outer = within.runs
        self._add(body, Branch(outer, "try", node, shim or within.compat, handlers=handlers))
        fine = outer if failures is None else _raising(outer, failures, None, (), negate=True)
        # For the guard, the try body counts where it completes: elsewhere a handler takes over.
        branches: list[tuple[str, Sequence[cst.BaseStatement], Predicate]] = [("try", body, fine)]
        earlier: list[frozenset[str] | None] = []
        for handler, (caught, _) in zip(node.handlers, handlers, strict=True):
            runs = outer if failures is None else _raising(outer, failures, caught, tuple(earlier))
            earlier.append(caught)
            self._add(block_statements(handler.body), Branch(runs, "except", node, shim or within.compat))
            branches.append(("except", block_statements(handler.body), runs))
        if node.orelse is not None:
            self._add(block_statements(node.orelse.body), Branch(fine, "else", node, shim or within.compat))
        if node.finalbody is not None:
            self._add(block_statements(node.finalbody.body), within)
        if guard:
            self.guards.append(Guard(node, "try", tuple(branches), parent))

    # ----- what a try body raises, and where -----
    def _failures(self, body: Sequence[cst.BaseStatement]) -> list[tuple[str, Predicate]] | None:
        """(exception, versions where it is raised) for each statement of a try body, or None when a
        statement may raise at versions this map cannot tell (anything but library imports and names)."""
        found: list[tuple[str, Predicate]] = []
        for statement in body:
            if not isinstance(statement, cst.SimpleStatementLine):
                return None
            for small in statement.body:
                failure = self._failure(small)
                if failure is None:
                    return None
                found.extend(failure)
        return found

    def _failure(self, small: cst.BaseSmallStatement) -> list[tuple[str, Predicate]] | None:
        if isinstance(small, cst.Pass) or (isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)):
            return []
        if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            module = module_of_import_from(small, self._imports.module, self._imports.is_package)
            if not _library(module) or small.relative:
                return None
            names = [dotted_name(alias.name) for alias in small.names]
            return [("ImportError", _missing(f"{module}.{name}")) for name in names]
        if isinstance(small, cst.Import):
            names = [dotted_name(alias.name) for alias in small.names]
            return [] if all(name in LIBRARIES for name in names) else None
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
            if _constant(small.value):  # ``HAS_NEW_API = True``
                return []
            qualname = self._imports.resolve(small.value)
            if isinstance(small.value, cst.Attribute) and _library(qualname):
                return [("AttributeError", _missing(str(qualname)))]
        return None

    # ----- conditions -----
    def _type_checking(self, test: cst.BaseExpression) -> bool:
        return self._imports.resolve(test) in ("typing.TYPE_CHECKING", "typing_extensions.TYPE_CHECKING")

    def _condition(self, test: cst.BaseExpression) -> tuple[str, Predicate] | None:
        """("gate" or "hasattr", the versions where ``test`` is true), when it depends on the version only."""
        evaluator = _Evaluator(self._imports, self._bindings)
        value = evaluator.value(test)
        if value is None or not evaluator.sources:
            return None
        self._points |= evaluator.points
        points = sorted(self._points | {(0, 0, 0)})
        try:
            table = {point: bool(value(point)) for point in points}
        except Exception:  # the expression fails or is not a version question at some version
            return None
        # Between the points evaluated, the answer at the point below: this gate's own thresholds are among them.
        def holds(version: Version) -> bool:
            return table[points[bisect.bisect_right(points, _padded(version)) - 1]]

        return ("hasattr" if "hasattr" in evaluator.sources else "gate"), holds


def handled(branch: Branch, raises: str) -> bool:
    """A statement of a try body that raises ``raises``, when a handler catching it binds every name
    the statement binds: the failure is the one the author expected, and the handler's own code is
    judged where it runs."""
    if branch.statement is None:
        return False
    names = _bound((branch.statement,))
    return bool(names) and any(_catches(caught, raises) and names <= bound for caught, bound in branch.handlers)


_CATCHERS = {"ImportError": {"ImportError"}, "ModuleNotFoundError": {"ModuleNotFoundError", "ImportError"}, "AttributeError": {"AttributeError"}, "RuntimeError": {"RuntimeError"}}
_BROAD = {"Exception", "BaseException"}


def _catches(caught: frozenset[str] | None, raises: str) -> bool:
    """A handler catching ``caught`` (None: a bare ``except:``) catches ``raises``. ModuleNotFoundError
    does not catch a removed name: ``from m import gone`` raises a plain ImportError."""
    return caught is None or bool(caught & (_CATCHERS.get(raises, {raises}) | _BROAD))


def _caught(handler: cst.ExceptHandler) -> frozenset[str] | None:
    if handler.type is None:
        return None
    kinds = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return frozenset((dotted_name(kind) or "").rpartition(".")[2] for kind in kinds)


def _imports(body: Sequence[cst.BaseStatement]) -> bool:
    return any(isinstance(statement, cst.SimpleStatementLine) and
               any(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body) for statement in body)


def _constant(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.SimpleString, cst.Integer, cst.Float)) or \
        (isinstance(value, cst.Name) and value.value in ("None", "True", "False"))


def _missing(qualname: str) -> Predicate:
    return lambda version: not exists(qualname, version)


def _raising(outer: Predicate, failures: list[tuple[str, Predicate]], caught: frozenset[str] | None,
             earlier: tuple[frozenset[str] | None, ...], negate: bool = False) -> Predicate:
    """Where a handler catching ``caught`` runs (after handlers ``earlier``), or with ``negate`` where
    the try body raises nothing (its ``else``)."""
    def fails(version: Version) -> bool:
        return any(happens(version) for raises, happens in failures
                   if negate or (_catches(caught, raises) and not any(_catches(e, raises) for e in earlier)))

    return (lambda v: outer(v) and not fails(v)) if negate else (lambda v: outer(v) and fails(v))


def block_statements(block: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    """A block's statements; a one-line suite (``if TYPE_CHECKING: import x``) as one statement line
    holding the same nodes."""
    if isinstance(block, cst.IndentedBlock):
        return block.body
    return (cst.SimpleStatementLine(body=block.body),) if isinstance(block, cst.SimpleStatementSuite) else ()


def _bound(statements: Sequence[cst.BaseStatement]) -> frozenset[str]:
    """The names a block binds at its own level (nested blocks of ifs and trys included) to something
    other than a constant."""
    names: set[str] = set()
    for statement in statements:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                names |= _small_bound(small)
        elif isinstance(statement, (cst.If, cst.Try)):
            names |= _bound(block_statements(statement.body))
    return frozenset(names)


def _small_bound(small: cst.BaseSmallStatement) -> set[str]:
    if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
        return {(a.evaluated_alias or a.evaluated_name) for a in small.names}
    if isinstance(small, cst.Import):
        return {a.evaluated_alias or a.evaluated_name.split(".")[0] for a in small.names}
    if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None and _constant(small.value):
        return set()  # ``Name = None`` in a handler is no replacement: a later use still fails
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
        [small.target] if isinstance(small, cst.AnnAssign) else []
    return {t.value for t in targets if isinstance(t, cst.Name)}


# ----- evaluating a condition at a version -----

_VERSION_SOURCES = {f"{library}.__version__" for library in LIBRARIES} | {
    f"{library}.version.__version__" for library in LIBRARIES}
_METADATA = frozenset({"importlib.metadata.version", "importlib_metadata.version"})
_PARSERS = frozenset({"packaging.version.Version", "packaging.version.parse", "pkg_resources.parse_version",
                      "distutils.version.LooseVersion", "distutils.version.StrictVersion", "looseversion.LooseVersion"})
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {}


def _comparisons() -> dict[type, Callable[[Any, Any], Any]]:
    if not _COMPARE:
        _COMPARE.update({
            cst.LessThan: operator.lt, cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
            cst.GreaterThanEqual: operator.ge, cst.Equal: operator.eq, cst.NotEqual: operator.ne,
            cst.Is: operator.is_, cst.IsNot: operator.is_not,
        })
    return _COMPARE


class _Parsed(tuple):
    """A parsed version (``Version(...)``): compares as its release numbers, padded to three."""


_PRESENT = object()  # what ``getattr(module, "name", None)`` gives where the name exists
_Value = Callable[[Version], Any]


class _Evaluator:
    """Turns an expression into a function of the torchrl version, when it reads only the version
    (``__version__``, ``importlib.metadata.version``), whether library names exist (``hasattr``,
    ``getattr(..., default)``), and literals. ``sources`` says which of them it read."""

    def __init__(self, imports: ImportTable, bindings: Callable[[str], cst.BaseExpression | None]) -> None:
        self._imports, self._bindings = imports, bindings
        self.sources: set[str] = set()
        self.points: set[Version] = set()
        self._depth = 0

    def value(self, node: cst.BaseExpression) -> _Value | None:
        handler = getattr(self, f"_{type(node).__name__}", None)
        return handler(node) if handler is not None else None

    def _SimpleString(self, node: cst.SimpleString) -> _Value | None:
        text = node.evaluated_value
        if isinstance(text, str) and text[:1].isdigit():
            self.points.add(_padded(parse_version(text)))
        return lambda _v: text

    def _Integer(self, node: cst.Integer) -> _Value:
        number = int(node.value, 0)
        return lambda _v: number

    def _Tuple(self, node: cst.Tuple) -> _Value | None:
        parts = [self.value(e.value) for e in node.elements if not isinstance(e, cst.StarredElement)]
        if len(parts) != len(node.elements) or any(p is None for p in parts):
            return None
        if all(isinstance(e.value, cst.Integer) for e in node.elements):
            self.points.add(_padded(tuple(int(e.value.value, 0) for e in node.elements)))  # type: ignore[attr-defined]
        return lambda v: tuple(p(v) for p in parts)  # type: ignore[misc]

    def _Name(self, node: cst.Name) -> _Value | None:
        if node.value in ("None", "True", "False"):
            constant = {"None": None, "True": True, "False": False}[node.value]
            return lambda _v: constant
        qualname = self._imports.resolve(node)
        if qualname in _VERSION_SOURCES:
            return self._version_text(qualname)
        bound = self._bindings(node.value)
        if bound is None or self._depth > 4:
            return None
        self._depth += 1
        try:
            return self.value(bound)
        finally:
            self._depth -= 1

    def _Attribute(self, node: cst.Attribute) -> _Value | None:
        qualname = self._imports.resolve(node)
        if qualname in _VERSION_SOURCES:
            return self._version_text(qualname)
        inner = self.value(node.value)
        if inner is None:
            return None
        attribute = node.attr.value
        return lambda v: _attribute(inner(v), attribute)

    def _version_text(self, source: str) -> _Value:
        self.sources.add("version")
        return version_text

    def _GeneratorExp(self, node: cst.GeneratorExp) -> _Value | None:
        """``(int(x) for x in version.split("."))``, as unpacking into names reads it: a tuple."""
        return self._conversion("tuple", node)

    def _Subscript(self, node: cst.Subscript) -> _Value | None:
        inner = self.value(node.value)
        if inner is None or len(node.slice) != 1:
            return None
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            key = self.value(index.value)
            return None if key is None else (lambda v: inner(v)[key(v)])
        if not isinstance(index, cst.Slice) or index.step is not None:
            return None
        bounds = [None if part is None else self.value(part) for part in (index.lower, index.upper)]
        if any(b is None for b, part in zip(bounds, (index.lower, index.upper), strict=True) if part is not None):
            return None
        lower, upper = bounds
        return lambda v: inner(v)[(lower(v) if lower else None):(upper(v) if upper else None)]

    def _Call(self, node: cst.Call) -> _Value | None:
        args = [a for a in node.args if a.keyword is None and not a.star]
        callee = self._imports.resolve(node.func)
        if callee in _METADATA and len(args) == 1 and isinstance(args[0].value, cst.SimpleString) \
                and args[0].value.evaluated_value in LIBRARIES:
            return self._version_text("metadata")
        if callee in _PARSERS and len(args) == 1:
            text = self.value(args[0].value)
            return None if text is None else (lambda v: _Parsed(_padded(parse_version(text(v)))))
        if callee in ("builtins.hasattr", "builtins.getattr") and len(args) in (2, 3):
            return self._existence(callee, args)
        if callee in ("builtins.int", "builtins.str", "builtins.tuple") and len(args) == 1:
            return self._conversion(callee.rpartition(".")[2], args[0].value)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "split":
            inner = self.value(node.func.value)
            separator = self.value(args[0].value) if args else (lambda _v: None)
            return None if inner is None or separator is None else (lambda v: inner(v).split(separator(v)))
        return None

    def _existence(self, callee: str, args: list[cst.Arg]) -> _Value | None:
        owner = self._imports.resolve(args[0].value)
        name = args[1].value
        if not _library(owner) or not isinstance(name, cst.SimpleString) or not isinstance(name.evaluated_value, str):
            return None
        qualname = f"{owner}.{name.evaluated_value}"
        self.sources.add("hasattr")
        if callee == "builtins.hasattr":
            return lambda v: exists(qualname, v)
        default = self.value(args[2].value) if len(args) == 3 else None
        if default is None:
            return None
        return lambda v: _PRESENT if exists(qualname, v) else default(v)

    def _conversion(self, kind: str, argument: cst.BaseExpression) -> _Value | None:
        if kind == "tuple" and isinstance(argument, cst.GeneratorExp) and len(argument.for_in.ifs) == 0 \
                and argument.for_in.inner_for_in is None and isinstance(argument.for_in.target, cst.Name) \
                and isinstance(argument.elt, cst.Call) and self._imports.resolve(argument.elt.func) == "builtins.int" \
                and len(argument.elt.args) == 1 \
                and dotted_name(argument.elt.args[0].value) == argument.for_in.target.value:
            items = self.value(argument.for_in.iter)
            return None if items is None else (lambda v: tuple(int(x) for x in items(v)))
        if isinstance(argument, cst.GeneratorExp):
            return None  # any other generator is unknown (``value`` of one asks this very conversion)
        inner = self.value(argument)
        convert: Callable[[Any], Any] = {"int": int, "str": str, "tuple": tuple}[kind]
        return None if inner is None else (lambda v: convert(inner(v)))

    def _Comparison(self, node: cst.Comparison) -> _Value | None:
        left = self.value(node.left)
        steps = [(type(c.operator), self.value(c.comparator)) for c in node.comparisons]
        known = [(kind, value) for kind, value in steps if value is not None and kind in _comparisons()]
        if left is None or len(known) != len(steps):
            return None
        first = left

        def compare(v: Version) -> bool:
            current = first(v)
            for kind, value in known:
                following = value(v)
                if not _comparisons()[kind](current, following):
                    return False
                current = following
            return True

        return compare

    def _BooleanOperation(self, node: cst.BooleanOperation) -> _Value | None:
        left, right = self.value(node.left), self.value(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.operator, cst.And):
            return lambda v: left(v) and right(v)
        return lambda v: left(v) or right(v)

    def _UnaryOperation(self, node: cst.UnaryOperation) -> _Value | None:
        inner = self.value(node.expression)
        return None if inner is None or not isinstance(node.operator, cst.Not) else (lambda v: not inner(v))


def _attribute(value: Any, name: str) -> Any:
    if isinstance(value, _Parsed) and name in ("major", "minor", "micro"):
        return value[("major", "minor", "micro").index(name)]
    if isinstance(value, _Parsed) and name in ("release", "base_version", "public"):
        return tuple(value) if name == "release" else version_text(value)
    raise AttributeError(name)
