"""What rules know about the file being walked: names, scopes, bindings, enclosing class.

The traversal keeps this up to date as it walks, so every rule shares one resolution
instead of re-deriving it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Sequence

import libcst as cst

from rlguard.engine.index import TUPLE, AttrFact, Built, ClassFacts, FileFacts, FunctionFacts, ProjectIndex
from rlguard.engine.names import ImportTable, dotted_name
from rlguard.engine.types import is_tensor_valued, literal_items

_MAX_BUILT_DEPTH = 6  # names followed plus calls nested, in what one ``return`` builds


@dataclass
class Binding:
    """The latest thing a name was bound to in a scope, in source order."""

    value: cst.BaseExpression | None = None  # the assigned expression, when simple
    annotation: cst.BaseExpression | None = None  # a parameter's or variable's annotation
    opaque: bool = False  # bound by something we do not model (loop target, unpacking, ...)
    # The binding this one replaced in the same scope: what the name meant while ``value`` was
    # evaluated (``x = x.mean()`` reads the previous ``x``).
    previous: Binding | None = None
    # ``actor, critic = make_models()``: the unpacked expression and this name's position in it.
    # Such a binding stays opaque; only readers that understand positions follow it.
    unpacked: tuple[cst.BaseExpression, int] | None = None
    # ``for x in iterated``: the loop binds each item (the binding stays opaque).
    iterated: cst.BaseExpression | None = None
    # ``items.append(value)`` after ``items = [...]``: the values appended to the list.
    added: list[cst.BaseExpression] = field(default_factory=list)


@dataclass
class Scope:
    kind: str  # "module", "class" or "function"
    node: cst.CSTNode | None
    bindings: dict[str, Binding] = field(default_factory=dict)
    class_facts: ClassFacts | None = None  # for class scopes
    self_name: str | None = None  # for methods: the first parameter's name


class FileContext:
    """Per-file state shared by all rules during the single traversal."""

    def __init__(
        self,
        path: str,
        module: str,
        is_package: bool,
        target: tuple[int, ...],
        options: dict[str, dict[str, Any]],
        index: ProjectIndex | None = None,
    ) -> None:
        self.path = path
        self.target = target
        self.options = options  # rule code -> its configured options
        self.index = index  # complete only in the fix pass; rules use requirements otherwise
        self.imports = ImportTable(module, is_package)
        self.scopes: list[Scope] = [Scope("module", None)]
        self.facts = FileFacts(path, module, self.imports.names)
        self._callees_taking: dict[tuple[int, str], tuple[str, ...]] = {}

    # ----- queries for rules -----
    @property
    def module(self) -> str:
        return self.imports.module

    def lookup(self, name: str) -> Binding | None:
        """The binding of a name as seen from the current scope (class scopes are not enclosing)."""
        innermost = len(self.scopes) - 1
        for position in range(innermost, -1, -1):
            scope = self.scopes[position]
            if scope.kind == "class" and position != innermost:
                continue
            if name in scope.bindings:
                return scope.bindings[name]
        return None

    def qualname(self, node: cst.CSTNode) -> str | None:
        """Fully qualified name of a Name/Attribute, unless its head is a local variable."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head = dotted.partition(".")[0]
        if self.lookup(head) is not None:
            return None  # a local name: a parameter or assignment, even one shadowing an import
        return self.imports.resolve_dotted(dotted)

    def callee(self, node: cst.CSTNode) -> str | None:
        """Qualified name of the function a Call calls."""
        return self.qualname(node.func) if isinstance(node, cst.Call) else None

    def value_of(self, node: cst.BaseExpression, depth: int = 4) -> cst.BaseExpression:
        """Follow simple name bindings (``x = expr``) to the expression behind a name."""
        while depth and isinstance(node, cst.Name):
            binding = self.lookup(node.value)
            if binding is None or binding.value is None:
                break
            node = binding.value
            depth -= 1
        return node

    @property
    def current_class(self) -> ClassFacts | None:
        """The class whose body (or method) the traversal is in."""
        for scope in reversed(self.scopes):
            if scope.class_facts is not None:
                return scope.class_facts
        return None

    @property
    def current_function(self) -> cst.FunctionDef | None:
        for scope in reversed(self.scopes):
            if scope.kind == "function":
                return scope.node  # type: ignore[return-value]
        return None

    def self_name(self) -> str | None:
        """Name of ``self`` when directly inside a method."""
        scope = self.scopes[-1]
        if scope.kind == "function" and len(self.scopes) >= 2 and self.scopes[-2].kind == "class":
            return scope.self_name
        return None

    def is_self_attr(self, node: cst.CSTNode) -> str | None:
        """``attr`` when node is ``self.attr`` inside a method, else None."""
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and self.current_class is not None
        ):
            for scope in reversed(self.scopes):
                if scope.kind == "function" and scope.self_name == node.value.value:
                    return node.attr.value
        return None

    # ----- updates, called by the traversal -----
    def declare_definitions(self, module: cst.Module) -> None:
        """Module-level classes and functions, known before the walk: a function body may use
        one defined further down, since it runs after the whole module was executed."""
        for statement in module.body:
            if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
                self.imports.add_local_definition(statement.name.value)

    def enter_class(self, node: cst.ClassDef) -> None:
        outer = self.current_class
        prefix = outer.qualname if outer is not None else self.module
        qualname = f"{prefix}.{node.name.value}" if prefix else node.name.value
        bases = tuple(self._base_name(arg.value) for arg in node.bases if arg.keyword is None)
        decorators = tuple(self.qualname(d.decorator) or dotted_name(d.decorator) or "" for d in node.decorators)
        facts = ClassFacts(qualname, self.path, bases, decorators)
        self.facts.classes[qualname] = facts
        if outer is None and len(self.scopes) == 1:
            self.imports.add_local_definition(node.name.value)
        self.scopes[-1].bindings.pop(node.name.value, None)
        self.scopes.append(Scope("class", node, class_facts=facts))

    def _base_name(self, expr: cst.BaseExpression) -> str:
        if isinstance(expr, cst.Subscript):  # Generic[T], Base[...]
            expr = expr.value
        return self.qualname(expr) or dotted_name(expr) or "?"

    def enter_function(self, node: cst.FunctionDef) -> None:
        enclosing = self.scopes[-1]
        if enclosing.kind == "class" and enclosing.class_facts is not None:
            enclosing.class_facts.methods.add(node.name.value)
        if len(self.scopes) == 1:
            self.imports.add_local_definition(node.name.value)
            enclosing.bindings.pop(node.name.value, None)
        else:
            enclosing.bindings[node.name.value] = Binding(opaque=True)
        scope = Scope("function", node)
        params = node.params
        ordered = [*params.posonly_params, *params.params]
        if enclosing.kind == "class" and ordered and not _is_static(node):
            scope.self_name = ordered[0].name.value
        for param in (*ordered, *params.kwonly_params):
            scope.bindings[param.name.value] = Binding(annotation=param.annotation.annotation if param.annotation else None)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bindings[star.name.value] = Binding(opaque=True)
        self.scopes.append(scope)

    def leave_scope(self) -> None:
        self.scopes.pop()

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None, annotation=None) -> None:
        """Record an assignment target: names in the current scope, ``self.x`` in class facts."""
        if isinstance(target, cst.Name):
            bindings = self.scopes[-1].bindings
            bindings[target.value] = Binding(value=value, annotation=annotation, previous=bindings.get(target.value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            positional = value is not None and not has_starred(target.elements)
            for position, element in enumerate(target.elements):
                self.bind_opaque(element.value)
                if positional and isinstance(element.value, cst.Name):
                    self.scopes[-1].bindings[element.value.value].unpacked = (value, position)
        elif value is not None:
            attr = self.is_self_attr(target)
            if attr is not None:
                self._record_attr(attr, value)

    def record_return(self, node: cst.Return) -> None:
        """What a module-level function returns, when calls build it: for factories in the index."""
        if node.value is None or len(self.scopes) != 2 or self.scopes[1].kind != "function":
            return
        function = self.scopes[1].node
        assert isinstance(function, cst.FunctionDef)
        if isinstance(node.value, (cst.Tuple, cst.List)):  # return actor, critic
            if has_starred(node.value.elements):
                return
            items = ((str(i), self.built(e.value, marks_in=function)) for i, e in enumerate(node.value.elements))
            built: Built | None = Built(TUPLE, tuple((i, b) for i, b in items if b is not None))
        else:
            built = self.built(node.value, marks_in=function)
        if built is None:
            return
        name = function.name.value
        qualname = f"{self.module}.{name}" if self.module else name
        facts = self.facts.functions.setdefault(qualname, FunctionFacts(qualname, self.path))
        if built not in facts.returns:  # ``return net`` on several branches is one fact
            facts.returns.append(built)

    def built(self, expr: cst.BaseExpression, depth: int = 0, shadow: dict[str, Binding | None] | None = None,
              marks_in: cst.FunctionDef | None = None) -> Built | None:
        """The calls that build ``expr``, following simple name bindings; None if not a call.

        A value reached through a name records the calls in ``marks_in`` that took that name.
        """
        shadow = shadow or {}
        named = expr.value if isinstance(expr, cst.Name) else None
        found = self._built(expr, depth, shadow, marks_in)
        if found is not None and named is not None and marks_in is not None:
            key = (id(marks_in), named)  # one scan of the body per name, however many returns
            if key not in self._callees_taking:
                self._callees_taking[key] = _callees_taking(self, marks_in, named)
            found = dataclasses.replace(found, marked_by=self._callees_taking[key])
        return found

    def _built(self, expr: cst.BaseExpression, depth: int, shadow: dict[str, Binding | None],
               marks_in: cst.FunctionDef | None) -> Built | None:
        while isinstance(expr, cst.Name) and depth <= _MAX_BUILT_DEPTH:
            binding = shadow[expr.value] if expr.value in shadow else self.lookup(expr.value)
            if binding is not None and binding.unpacked is not None:
                source, position = binding.unpacked
                if not isinstance(source, (cst.Tuple, cst.List)):  # item ``position`` of what a call returns
                    inner = self.built(source, depth + 1, shadow, marks_in)
                    return Built(f"[{position}]", receiver=inner) if inner is not None else None
                item = literal_item(source, position)
                if item is None:
                    return None
                expr, depth = item, depth + 1
                continue
            if binding is None or binding.opaque or binding.value is None:
                return None
            # ``policy = policy.to(device)`` reads the previous ``policy``.
            shadow = {**shadow, expr.value: binding.previous}
            expr, depth = binding.value, depth + 1
        if not isinstance(expr, cst.Call) or depth > _MAX_BUILT_DEPTH:
            return None
        callee, receiver = self.callee(expr), None
        if callee is None:  # a method of a value: ``policy.to(device)``
            if not isinstance(expr.func, cst.Attribute):
                return None
            receiver = self.built(expr.func.value, depth + 1, shadow, marks_in)
            if receiver is None:
                return None
            callee = "." + expr.func.attr.value
        args = []
        for arg in expr.args:
            if arg.star:
                continue
            keyword = arg.keyword.value if arg.keyword is not None else None
            for element in literal_items(arg.value):
                inner = self.built(element, depth + 1, shadow, marks_in)
                if inner is not None:
                    args.append((keyword, inner))
        return Built(callee, tuple(args), receiver)

    def bind_opaque(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.scopes[-1].bindings[target.value] = Binding(opaque=True)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind_opaque(element.value)
        elif isinstance(target, cst.StarredElement):
            self.bind_opaque(target.value)

    def _record_attr(self, attr: str, value: cst.BaseExpression) -> None:
        resolved = self.value_of(value)
        cls = self.current_class
        assert cls is not None
        # A generator expression has no callee; it is recorded as "<generator>" (they cannot be copied).
        callee = "<generator>" if isinstance(resolved, cst.GeneratorExp) else self.callee(resolved)
        cls.attrs.setdefault(attr, []).append(AttrFact(callee=callee, tensor=is_tensor_valued(resolved, self)))


def has_starred(elements: Sequence[cst.BaseElement]) -> bool:
    return any(isinstance(element, cst.StarredElement) for element in elements)


def literal_item(source: cst.BaseExpression, position: int) -> cst.BaseExpression | None:
    """Item ``position`` of a tuple or list literal; None where a starred item hides positions."""
    if not isinstance(source, (cst.Tuple, cst.List)) or has_starred(source.elements):
        return None
    return source.elements[position].value if position < len(source.elements) else None


def _callees_taking(ctx: FileContext, function: cst.FunctionDef, name: str) -> tuple[str, ...]:
    """Callees of the calls in ``function`` whose first argument is the name ``name``."""
    from rlguard.engine.traversal import iter_nodes  # the traversal imports this module

    found = []
    for node in iter_nodes(function.body):
        if isinstance(node, cst.Call) and node.args and node.args[0].keyword is None:
            first = node.args[0].value
            if isinstance(first, cst.Name) and first.value == name:
                callee = ctx.callee(node)
                if callee is not None:
                    found.append(callee)
    return tuple(dict.fromkeys(found))


def _is_static(node: cst.FunctionDef) -> bool:
    return any(dotted_name(d.decorator) in ("staticmethod", "classmethod") for d in node.decorators)
