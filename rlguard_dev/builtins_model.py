"""Generate ``rlguard/engine/builtins_model.json`` from typeshed's ``builtins.pyi``: what the built-in
functions give in terms of their arguments, and which values the container methods add.

mypy ships typeshed (``mypy/typeshed/stdlib``); the stubs are read with ``ast``, never imported.
A result is a term over the call's positional arguments:

- ``["arg", [i, ...]]``: one of these arguments, as given (``max(a, b)``); ``"*"`` for ``*args``;
- ``["elem", i]``: an item of argument ``i`` (its parameter is ``Iterable[T]``, ``SupportsNext[T]``, ...);
- ``["same", i]``: what a protocol method of argument ``i`` gives (``abs``: ``SupportsAbs[T]``);
- ``["list", t]``, ``["iter", t]``, ``["tuple", [t, ...]]``: a container of ``t``;
- ``["value"]``: a plain value (``int``, ``str``, ``bool``, ...).

``T | <plain>`` reads as ``T``: the plain alternative is what an empty input gives (``sum``).

Usage: ``python -m rlguard_dev.builtins_model --write`` (or ``--check``).
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import mypy

from rlguard.engine.builtins_model import MODEL_PATH
from rlguard_dev.one_file import run

STDLIB = Path(mypy.__file__).parent / "typeshed" / "stdlib"
# Stub files the protocols and generics of builtins.pyi are defined in.
_STUBS = ("builtins.pyi", "typing.pyi", "_typeshed/__init__.pyi", "collections/abc.pyi")
# A generic whose class defines one of these gives items of its type argument.
_ITEM_METHODS = frozenset({"__iter__", "__next__", "__getitem__", "__reversed__"})
_PLAIN = frozenset({"int", "str", "bool", "float", "bytes", "complex", "None", "LiteralString"})
# The built-ins summarised: those whose result depends on what they are given.
FUNCTIONS = ("abs", "round", "max", "min", "sum", "sorted", "reversed", "iter", "next", "enumerate", "zip",
             "filter", "list", "tuple", "set", "frozenset", "len")
# The containers whose mutating methods are summarised.
CONTAINERS = ("list", "dict", "set")


def _definitions() -> tuple[dict[str, ast.ClassDef], frozenset[str]]:
    """The classes of the stubs by name, and the names bound to ``TypeVar(...)``."""
    classes: dict[str, ast.ClassDef] = {}
    variables: set[str] = set()
    for stub in _STUBS:
        tree = ast.parse((STDLIB / stub).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, node)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and _name(node.value.func) == "TypeVar":
                variables.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return classes, frozenset(variables)


def _methods(cls: ast.ClassDef) -> list[ast.FunctionDef]:
    return [node for node in ast.walk(cls) if isinstance(node, ast.FunctionDef)]


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


class _Reader:
    def __init__(self) -> None:
        self.classes, self.type_variables = _definitions()

    def generic_role(self, generic: str) -> str | None:
        """How a value of ``generic[T]`` relates to ``T``: "elem" when it gives items of ``T`` (a method
        of ``_ITEM_METHODS`` returns ``T`` or ``Iterator[T]``), "iter" when its ``__iter__`` returns ``T``
        (``SupportsIter``), "same" for a protocol whose one method returns ``T`` (``SupportsAbs``)."""
        cls = self.classes.get(generic)
        if cls is None:
            return None
        methods = [m for m in _methods(cls) if m.name.startswith("__") and m.name not in ("__init__", "__new__")]
        for method in methods:
            if method.name in _ITEM_METHODS and isinstance(method.returns, ast.Subscript) \
                    and _name(method.returns.value) == "Iterator":
                return "elem"
            if method.name in _ITEM_METHODS and isinstance(method.returns, ast.Name) \
                    and method.returns.id in self.type_variables:
                return "iter" if method.name in ("__iter__", "__reversed__") else "elem"
        return "same" if len({m.name for m in methods}) == 1 else None

    def bindings(self, params: list[ast.arg]) -> dict[str, list[Any]]:
        """Type variable -> the term it stands for, from the parameters' annotations."""
        found: dict[str, list[Any]] = {}
        for position, param in enumerate(params):
            annotation = param.annotation
            if isinstance(annotation, ast.Name) and annotation.id in self.type_variables:
                found.setdefault(annotation.id, ["arg", []])[1].append(position)
            elif isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Name) \
                    and annotation.slice.id in self.type_variables:
                role = self.generic_role(_name(annotation.value) or "")
                if role == "iter":
                    found.setdefault(annotation.slice.id, ["iter", ["elem", position]])
                elif role is not None:
                    found.setdefault(annotation.slice.id, [role, position])
        return found

    def term(self, node: ast.expr | None, variables: dict[str, list[Any]], owner: ast.ClassDef | None) -> list | None:
        if node is None:
            return None
        if isinstance(node, ast.Name):
            if node.id in variables:
                return variables[node.id]
            if node.id in _PLAIN:
                return ["value"]
            if node.id == "Self" and owner is not None:
                return self.instance(owner, [], variables)
            return None
        if isinstance(node, ast.Constant) and node.value is None:
            return ["value"]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            # ``T | Literal[0]`` (``sum`` of nothing): the plain alternative only covers an empty input.
            left, right = self.term(node.left, variables, owner), self.term(node.right, variables, owner)
            if left == right or right == ["value"]:
                return left
            return right if left == ["value"] else None
        if isinstance(node, ast.Subscript):
            generic = _name(node.value) or ""
            args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            terms = [self.term(arg, variables, owner) for arg in args]
            if generic == "list" and terms[0] is not None:
                return ["list", terms[0]]
            if generic == "tuple" and all(t is not None for t in terms):
                return ["tuple", terms]
            if generic in ("Iterator", "Generator") and terms[0] is not None:
                return ["iter", terms[0]]
            if generic == "Literal":
                return ["value"]
            cls = self.classes.get(generic)
            return self.instance(cls, args, variables) if cls is not None else None
        return None

    def instance(self, cls: ast.ClassDef, args: list[ast.expr], variables: dict[str, list[Any]]) -> list | None:
        """An instance of a generic built-in class (``zip[tuple[T1, T2]]``, ``enumerate``): the iterator
        its base ``Iterator[X]`` names, with the class's type parameters replaced by ``args``."""
        for base in cls.bases:
            if isinstance(base, ast.Subscript) and _name(base.value) == "Iterator":
                inner = dict(variables)
                if args and isinstance(base.slice, ast.Name):
                    inner[base.slice.id] = self.term(args[0], variables, None)  # type: ignore[assignment]
                element = self.term(base.slice, inner, None)
                return ["iter", element] if element is not None else None
        return None

    def overloads(self, name: str) -> list[dict[str, Any]]:
        module = ast.parse((STDLIB / "builtins.pyi").read_text(encoding="utf-8"))
        defined = [node for node in module.body if getattr(node, "name", None) == name]
        results = []
        for node in defined:
            if isinstance(node, ast.ClassDef):
                constructors = [m for m in _methods(node) if m.name == "__new__"] or \
                               [m for m in _methods(node) if m.name == "__init__"]
                results += [self.overload(m, node) for m in constructors]
            elif isinstance(node, ast.FunctionDef):
                results.append(self.overload(node, None))
        return results

    def overload(self, function: ast.FunctionDef, owner: ast.ClassDef | None) -> dict[str, Any]:
        params = [*function.args.posonlyargs, *function.args.args]
        if owner is not None:
            params = params[1:]  # cls or self
        variables = self.bindings(params)
        vararg = function.args.vararg
        if vararg is not None and isinstance(vararg.annotation, ast.Name) and vararg.annotation.id in variables \
                and variables[vararg.annotation.id][0] == "arg":
            variables[vararg.annotation.id][1].append("*")
        result = self.term(function.returns, variables, owner)
        if owner is not None and function.name == "__init__":
            result = self.instance(owner, [], variables) if owner.name not in ("list", "tuple", "set", "frozenset") \
                else None
        if result is None and owner is not None and owner.name in ("list", "tuple", "set", "frozenset"):
            element = variables.get("_T") or variables.get("_T_co")
            result = ["list", element] if element is not None else None
        required = len(params) - len(function.args.defaults)
        return {"positional": len(params), "required": required, "varargs": function.args.vararg is not None,
                "keywords": sorted(a.arg for a in function.args.kwonlyargs), "result": result}

    def mutators(self, container: str) -> dict[str, list[list[Any]]]:
        """For each method of the container (or an ancestor in the stubs) that changes it in place
        (returns None or Self) taking values: where they come from, as terms over the method's
        arguments (``["item", i]``: argument ``i``; ``["spread", i]``: each item of it; ``["keywords"]``:
        each keyword's value)."""
        value_var = "_VT" if container == "dict" else "_T"
        found: dict[str, list[list[Any]]] = {}
        defined: set[str] = set()
        for cls in self.ancestry(container):
            for method in _methods(cls):
                if method.name in defined and method.name not in found:
                    continue  # the class nearest the container defines it and adds nothing
                defined.add(method.name)
                returns = method.returns
                if not (isinstance(returns, ast.Constant) and returns.value is None) \
                        and not (isinstance(returns, ast.Name) and returns.id == "Self"):
                    continue
                for entry in self.added_by(method, value_var):
                    if entry not in found.setdefault(method.name, []):
                        found[method.name].append(entry)
        return {name: entries for name, entries in sorted(found.items()) if entries}

    def ancestry(self, name: str) -> list[ast.ClassDef]:
        order: list[ast.ClassDef] = []
        pending = [name]
        while pending:
            cls = self.classes.get(pending.pop(0))
            if cls is None or cls in order:
                continue
            order.append(cls)
            pending += [base for b in cls.bases
                        if (base := _name(b.value if isinstance(b, ast.Subscript) else b)) is not None]
        return order

    def added_by(self, method: ast.FunctionDef, value_var: str) -> list[list[Any]]:
        params = [*method.args.posonlyargs, *method.args.args][1:]
        added: list[list[Any]] = []
        for position, param in enumerate(params):
            role = self.param_role(param.annotation, value_var)
            if role is not None:
                added.append([role, position])
        for star in (method.args.vararg,):
            if star is not None and self.param_role(star.annotation, value_var) == "spread":
                added.append(["spread", "*"])
        kwargs = method.args.kwarg
        if kwargs is not None and isinstance(kwargs.annotation, ast.Name) and kwargs.annotation.id == value_var:
            added.append(["keywords"])
        return added

    def param_role(self, annotation: ast.expr | None, value_var: str) -> str | None:
        if isinstance(annotation, ast.Name) and annotation.id == value_var:
            return "item"
        if isinstance(annotation, ast.Subscript):
            generic = _name(annotation.value) or ""
            args = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            if any(isinstance(a, ast.Name) and a.id == value_var for a in args) and \
                    (self.generic_role(generic) == "elem" or generic.startswith("SupportsKeysAndGetItem")):
                return "spread"
        return None


def build() -> str:
    reader = _Reader()
    data = {
        "source": "typeshed builtins.pyi, as mypy ships it",
        "functions": {name: reader.overloads(name) for name in FUNCTIONS},
        "mutators": {container: reader.mutators(container) for container in CONTAINERS},
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    return run(argv, __doc__.splitlines()[0], MODEL_PATH, build)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
