"""Call syntax: keyword and positional arguments, ``**kwargs``, ``None``, method calls, and the shape of
a call (what it passes) that chooses among a function's overloads.

Used by the engine and by several rules; nothing here is specific to one rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlguard.engine.lazy import cst

from rlguard.engine.apimodel import CallShape

if TYPE_CHECKING:
    from rlguard.engine.values import Shape


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == name), None)


def positional(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def is_none(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def method_call(node: cst.CSTNode) -> tuple[cst.BaseExpression, str] | None:
    """(receiver, method) for ``receiver.method(...)``."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.value, node.func.attr.value
    return None


def call_shape(call: cst.Call) -> CallShape | None:
    """What a call passes, for choosing among overloads; None when ``*args`` hides it."""
    if any(arg.star for arg in call.args):
        return None
    keywords = {arg.keyword.value: _bool_literal(arg.value) for arg in call.args if arg.keyword is not None}
    return CallShape(len(positional(call)), keywords)


def _bool_literal(node: cst.BaseExpression) -> bool | None:
    return {"True": True, "False": False}.get(node.value) if isinstance(node, cst.Name) else None


def frozen_shape(call: cst.Call) -> Shape:
    shape = call_shape(call)
    return (shape.positional, tuple(sorted(shape.keywords.items()))) if shape is not None else None
