"""Per-file name resolution: an import table filled during the single traversal.

This replaces libcst's Scope/QualifiedName providers, which cost several times the parse.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator

from rlguard.engine.lazy import cst

_BUILTINS = frozenset(dir(builtins))


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    # ``type(...) is``: libcst's nodes are ABCs, whose isinstance checks cost several times more, and
    # this runs for nearly every call and name of a file; nothing subclasses ``Name`` or ``Attribute``.
    if type(node) is cst.Name:
        return node.value
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def module_of_import_from(node: cst.ImportFrom, current_module: str, is_package: bool) -> str | None:
    """The absolute module an ImportFrom reads from, resolving leading dots."""
    base = dotted_name(node.module) if node.module is not None else None
    return absolute_module(base, len(node.relative), current_module, is_package)


def absolute_module(base: str | None, level: int, current_module: str, is_package: bool) -> str | None:
    """``from <level dots><base> import ...`` in ``current_module``, as an absolute module name."""
    if level == 0:
        return base
    parts = current_module.split(".") if current_module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)]
    if base:
        parts.append(base)
    return ".".join(parts) or None


class ImportTable:
    """Maps local names to the fully qualified names they were imported as."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.is_package = is_package
        self.names: dict[str, str] = {}

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.names[alias.asname.name.value] = full
            else:
                # ``import a.b`` binds ``a``; ``a.b.x`` then resolves through it.
                head = full.split(".")[0]
                self.names[head] = head

    def add_import_from(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        source = module_of_import_from(node, self.module, self.is_package)
        if source is None:
            return
        for alias in node.names:
            imported = dotted_name(alias.name)
            if imported is None:
                continue
            local = imported
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.names[local] = f"{source}.{imported}"

    def add_local_definition(self, name: str) -> None:
        """A module-level class or function: its name means ``module.name`` here, as elsewhere."""
        self.names[name] = f"{self.module}.{name}" if self.module else name

    def resolve_dotted(self, dotted: str) -> str | None:
        head, _, rest = dotted.partition(".")
        target = self.names.get(head)
        if target is None:
            if head in _BUILTINS:
                target = f"builtins.{head}"
            else:
                return None
        return f"{target}.{rest}" if rest else target

    def resolve(self, node: cst.CSTNode) -> str | None:
        """The qualified name of a Name/Attribute expression, if it comes from an import."""
        dotted = dotted_name(node)
        return self.resolve_dotted(dotted) if dotted else None

    def imports_any(self, wanted: Callable[[str], bool]) -> bool:
        """Whether the file imports a name whose qualified name is ``wanted``."""
        return any(map(wanted, self.names.values()))


def loaded_names(root: cst.CSTNode, names: frozenset[str]) -> list[cst.Name]:
    """Every read of one of ``names`` under ``root``: not assignment targets, attributes, keywords,
    parameters, imports or definitions. Reads inside nested functions count (they may be closures)."""
    return [node for node in _reads(root) if node.value in names]


def read_names(root: cst.CSTNode) -> set[str]:
    """The names read under ``root``, as ``loaded_names`` counts reads."""
    return {node.value for node in _reads(root)}


def _reads(root: cst.CSTNode) -> Iterator[cst.Name]:
    from rlguard.engine.traversal import iter_nodes

    written: set[int] = set()
    for node in iter_nodes(root):  # parents come before their children
        if isinstance(node, cst.Name):
            if id(node) not in written:
                yield node
            continue
        for target in _written_by(node):
            written.update(id(name) for name in _target_name_nodes(target))


def module_reads(statement: cst.CSTNode) -> tuple[set[str], set[str]]:
    """The names a top-level statement reads from the module's namespace: when it runs, and later, when
    the functions, lambdas and generator expressions it makes run (read in one and bound nowhere in it,
    or declared ``global`` there). A name bound anywhere in such a function (a nested function's local, a
    comprehension's variable) counts as its local throughout; a class body's names count as module reads."""
    now: set[str] = set()
    later: set[str] = set()
    written: set[int] = set()
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            if id(node) not in written:
                now.add(node.value)
            continue
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.GeneratorExp)):
            bound = {name for inner in _iter(node) for name in _binds(inner, changes=False)}
            declared = {item.name.value for inner in _iter(node) if isinstance(inner, cst.Global) for item in inner.names}
            later |= read_names(node if isinstance(node, cst.GeneratorExp) else node.body) - (bound - declared)
            stack.extend(_evaluated_where_defined(node))
            continue
        for target in _written_by(node):
            written.update(id(name) for name in _target_name_nodes(target))
        stack.extend(_children(node))
    return now, later


def _evaluated_where_defined(node: cst.FunctionDef | cst.Lambda | cst.GeneratorExp) -> list[cst.CSTNode]:
    """A function's decorators, defaults and annotations; a lambda's defaults (a generator: nothing
    counted here, its first iterable is counted as read later)."""
    if isinstance(node, cst.GeneratorExp):
        return []
    params = node.params
    found: list[cst.CSTNode] = []
    for param in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg):
        if isinstance(param, cst.Param):
            found += [part for part in (param.default, param.annotation) if part is not None]
    if isinstance(node, cst.FunctionDef):
        found += [decorator.decorator for decorator in node.decorators]
        found += [node.returns] if node.returns is not None else []
    return found


def module_bindings(statement: cst.CSTNode) -> set[str]:
    """The module-level names a top-level statement binds, rebinds, deletes or changes in place
    (``x += 1``, ``x.a = 1``, ``x[i] = 1``), with those its functions declare ``global``; ``*`` for a
    star import, whose names are unknown here."""
    found: set[str] = set()
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            found.add(node.name.value)
            found.update(item.name.value for inner in _iter(node) if isinstance(inner, cst.Global) for item in inner.names)
            continue
        if isinstance(node, cst.Lambda):
            continue
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            found.add("*")
        if not isinstance(node, cst.CompFor):  # a comprehension's variable stays in it
            found.update(_binds(node, changes=True))
        stack.extend(_children(node))
    return found


def _binds(node: cst.CSTNode, changes: bool) -> list[str]:
    """The names ``node`` binds in its scope (a keyword or an attribute's name is no binding); with
    ``changes``, also the name whose value ``x.a = ...`` or ``x[i] = ...`` changes in place."""
    if isinstance(node, cst.ImportAlias):
        return [node.evaluated_alias or node.evaluated_name.split(".")[0]]
    if isinstance(node, (cst.Attribute, cst.Arg)):
        return []
    targets = [*_written_by(node), *_changed_by(node)]
    if changes:
        return [name for target in targets for name in _target_roots(target)]
    return [name.value for target in targets for name in _target_name_nodes(target)]


def _changed_by(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Targets that ``_written_by`` leaves out: augmented assignments and ``del``."""
    if isinstance(node, cst.AugAssign):
        return [node.target]
    if isinstance(node, cst.Del):
        return [node.target]
    return []


def _target_roots(target: cst.CSTNode) -> list[str]:
    """The names a target binds, and the name whose value ``x.a = ...`` or ``x[i] = ...`` changes."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_roots(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_roots(target.value)
    while isinstance(target, (cst.Attribute, cst.Subscript)):
        target = target.value
    return [target.value] if isinstance(target, cst.Name) else []


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    from rlguard.engine.traversal import children

    return children(node)


def _iter(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    from rlguard.engine.traversal import iter_nodes

    return iter(iter_nodes(node))


def _written_by(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of ``node`` that name something rather than read it."""
    if isinstance(node, cst.Attribute):
        return [node.attr]
    if isinstance(node, cst.Arg):
        return [node.keyword] if node.keyword is not None else []
    if isinstance(node, (cst.Param, cst.FunctionDef, cst.ClassDef)):
        return [node.name]
    if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
        return [node.target]
    if isinstance(node, cst.AsName):
        return [node.name]
    if isinstance(node, cst.ImportAlias):
        dotted: list[cst.CSTNode] = []
        part: cst.CSTNode = node.name
        while isinstance(part, cst.Attribute):
            dotted.append(part.attr)
            part = part.value
        return [*dotted, part]
    if isinstance(node, (cst.Global, cst.Nonlocal)):
        return [item.name for item in node.names]
    return []


def _target_name_nodes(target: cst.CSTNode) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_name_nodes(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_name_nodes(target.value)
    return []
