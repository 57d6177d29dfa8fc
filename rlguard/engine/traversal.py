"""One lean walk per file: the engine's own bookkeeping plus every selected rule's visitors.

libcst's generic visitor rebuilds children and dispatches through getattr for every node;
this walker only follows fields that can hold code (not whitespace or punctuation) and
calls a handler only for the node types someone registered.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Iterable
from typing import Any

from rlguard.engine.lazy import cst

from rlguard.engine.context import FileContext

# A handler takes the node type it is registered under in a dispatch table; that pairing of key and
# parameter type cannot be spelled in the table's type, so the parameter is Any.
Handler = Callable[[Any], None]

_NON_CODE_FIELDS = frozenset(
    {
        "lpar", "rpar", "leading_lines", "lines_after_decorators", "header", "footer", "comma",
        "semicolon", "newline", "trailing_whitespace", "equal", "colon", "dot", "star", "operator",
        "lbracket", "rbracket", "lbrace", "rbrace", "arrow", "asynchronous", "relative", "default_indent",
        "default_newline", "encoding", "has_trailing_newline", "whitespace", "first_line",
    }
)


@functools.cache  # a function, not a constant: libcst loads on first use (engine/lazy.py)
def _non_code_types() -> tuple[type, ...]:
    return (cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline, cst.Comment)


_PLAIN_VALUES = (str, bool, int)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _code_fields(node_type: type) -> tuple[str, ...]:
    fields = _FIELDS.get(node_type)
    if fields is None:
        try:
            hints = typing.get_type_hints(node_type)
        except Exception:  # an unresolvable annotation: keep every field
            hints = {}
        fields = tuple(
            f.name
            for f in dataclasses.fields(node_type)
            if f.name not in _NON_CODE_FIELDS and not f.name.startswith("whitespace")
            and hints.get(f.name) not in _PLAIN_VALUES  # `Name.value: str` never holds code
        )
        _FIELDS[node_type] = fields
    return fields


class _ValueKinds(dict):
    """What a field value of a given concrete type is to the walk: a code node, a sequence, or
    neither. Looked up by ``type(value)``: libcst's bases are ABCs, whose isinstance checks
    dominated the walk."""

    def __missing__(self, value_type: type) -> int:
        if value_type is tuple or value_type is list:
            kind = _SEQUENCE
        elif issubclass(value_type, cst.CSTNode) and not issubclass(value_type, _non_code_types()):
            kind = _CODE
        else:
            kind = _OTHER
        self[value_type] = kind
        return kind


_OTHER, _CODE, _SEQUENCE = 0, 1, 2
_KINDS = _ValueKinds()


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The code-bearing children of a node, in source order."""
    found: list[cst.CSTNode] = []
    kinds = _KINDS
    fields = _FIELDS.get(type(node))
    if fields is None:  # not ``or``: a leaf's fields are an empty tuple, computed once like the rest
        fields = _code_fields(type(node))
    for name in fields:
        value = getattr(node, name)
        kind = kinds[type(value)]
        if kind == _CODE:
            found.append(value)
        elif kind == _SEQUENCE and value and kinds[type(value[0])] == _CODE:
            found.extend(value)  # a field's sequence holds one kind of node: code, or punctuation
    return found


def iter_nodes(root: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """Every code-bearing node under root (root included), depth first, source order."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        found = children(node)
        found.reverse()
        stack.extend(found)


def walk(root: cst.CSTNode, on_visit: dict[type, list[Handler]], on_leave: dict[type, list[Handler]]) -> None:
    """Depth-first, source-order walk calling the registered handlers; iterative, so deep nesting is safe.

    A node whose leave handlers are due is pushed back wrapped in a one-item tuple."""
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if type(node) is tuple:
            for handler in on_leave[type(node[0])]:
                handler(node[0])
            continue
        node_type = type(node)
        handlers = on_visit.get(node_type)
        if handlers:
            for handler in handlers:
                handler(node)
        if node_type in on_leave:
            stack.append((node,))
        found = children(node)
        found.reverse()
        stack.extend(found)


def bookkeeping(ctx: FileContext) -> tuple[dict[type, list[Handler]], dict[type, list[Handler]]]:
    """The engine's own handlers that keep ``ctx`` current. Visits run before rules, leaves after."""

    def assign(node: cst.Assign) -> None:
        for target in node.targets:
            ctx.bind(target.target, node.value)

    def ann_assign(node: cst.AnnAssign) -> None:
        ctx.bind(node.target, node.value, node.annotation.annotation)

    def opaque_target(node: cst.CompFor) -> None:
        ctx.bind_opaque(node.target)

    def for_loop(node: cst.For) -> None:
        ctx.bind_iterated(node.target, node.iter)

    def with_item(node: cst.WithItem) -> None:
        if node.asname is not None:
            ctx.bind_opaque(node.asname.name)

    def except_handler(node: cst.ExceptHandler) -> None:
        if node.name is not None:
            ctx.bind_opaque(node.name.name)

    def named_expr(node: cst.NamedExpr) -> None:
        ctx.bind(node.target, node.value)

    def leave_scope(_node: cst.CSTNode) -> None:
        ctx.leave_scope()

    # Statements and expressions whose parts run on some paths only (``FileContext.enter_branch``).
    branching = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match, cst.IfExp, cst.BooleanOperation)
    visits: dict[type, list[Handler]] = {
        cst.Import: [ctx.imports.add_import],
        cst.ImportFrom: [ctx.imports.add_import_from],
        cst.ClassDef: [ctx.enter_class],
        cst.FunctionDef: [ctx.enter_function],
        cst.Lambda: [ctx.enter_lambda],
        cst.For: [for_loop],
        cst.Call: [ctx.record_mutation, ctx.record_flow],
        cst.CompFor: [opaque_target],
        cst.WithItem: [with_item],
        cst.ExceptHandler: [except_handler],
        cst.Return: [ctx.record_return],
        cst.Yield: [ctx.record_yield],
    }
    for statement in branching:  # before the other handlers of a ``for``: its target binds inside the loop
        visits[statement] = [ctx.enter_branch, *visits.get(statement, ())]
    leaves: dict[type, list[Handler]] = {
        cst.ClassDef: [leave_scope],
        cst.FunctionDef: [leave_scope],
        cst.Lambda: [leave_scope],
        cst.Assign: [assign],
        cst.AnnAssign: [ann_assign],
        cst.AugAssign: [ctx.record_augmented],
        cst.NamedExpr: [named_expr],
    }
    for statement in branching:
        leaves[statement] = [*leaves.get(statement, ()), ctx.leave_branch]
    return visits, leaves
