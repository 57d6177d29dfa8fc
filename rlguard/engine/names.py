"""Per-file name resolution: an import table filled during the single traversal.

This replaces libcst's Scope/QualifiedName providers, which cost several times the parse.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

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
    from rlguard.engine.traversal import iter_nodes

    written: set[int] = set()
    found = []
    for node in iter_nodes(root):  # parents come before their children
        if isinstance(node, cst.Name):
            if node.value in names and id(node) not in written:
                found.append(node)
            continue
        for target in _written_by(node):
            written.update(id(name) for name in _target_name_nodes(target))
    return found


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
