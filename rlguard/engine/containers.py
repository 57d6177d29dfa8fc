"""Containers in the value model: what a list, tuple, set or dict holds, and what iterating one binds.

A container's items are read from where it is built (literals, comprehensions, ``dict(...)``, ``list(...)``,
``*``/``**`` unpacking) and from the mutations made after (``Added``: ``d[k] = v``, ``.append``,
``.extend``, ``.update``, ``+=``). What built-in functions do with items (``max``, ``sorted``, ``zip``,
``enumerate``, ...) and which container methods add items come from typeshed's stubs, generated into
``builtins_model.json``. An item is known only when every item is: one unknown item leaves it unknown.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any
from collections.abc import Iterator

from rlguard.engine.lazy import cst

from rlguard.engine.builtins_model import Term, builtin_results, list_builders, mutation
from rlguard.engine.values import holds_tensors_kind

if TYPE_CHECKING:
    from rlguard.engine.context import Added, FileContext
    from rlguard.engine.values import _Env

# Kinds of the API model whose items are tensors, and what one item is.
_ITEM_OF_KIND = {"tensor": "tensor", "tensors": "tensor", "tensor_iter": "mixed", "td_iter": "tensordict"}
# Kinds a dict's values have, for kinds that are dicts.
_VALUE_OF_KIND = {"bulk": "tensor", "tensordict": "entry", "losses": "mixed"}
_CONTAINER_BUILTINS = {"builtins.dict": "dict", "builtins.list": "list", "builtins.set": "set",
                       "builtins.tuple": "tuple", "builtins.frozenset": "set", "collections.OrderedDict": "dict",
                       "collections.defaultdict": "dict", "dataclasses.asdict": "dict", "dataclasses.astuple": "tuple",
                       "attr.asdict": "dict", "attr.astuple": "tuple", "attrs.asdict": "dict", "attrs.astuple": "tuple"}
_CONTAINER_NAMES = frozenset(name.rpartition(".")[2] for name in _CONTAINER_BUILTINS)
# Methods of a container that give, without arguments, a view or a shallow copy of its items (a dict's
# values among them): what they give holds what the container holds.
ITEM_VIEWS = frozenset({"values", "items", "copy"})


def container_kind(node: cst.BaseExpression | None, ctx: FileContext, depth: int = 0) -> str | None:
    """"list", "dict", "set" or "tuple" for an expression that builds a new container of that type: a
    literal, a comprehension, a call of the type (``dict()``, ``list(xs)``, ``OrderedDict()``) or of a
    function that gives a new one (``sorted(xs)``, ``dataclasses.asdict(row)``), a container's copy
    (``d.copy()``, ``xs[:]``), or a sequence concatenated or repeated (``xs + [t]``,
    ``[t] * 2``)."""
    # Exact types, not isinstance: libcst's nodes are ABCs, and this runs for most expressions rules read.
    literal = _literal_kinds().get(type(node))
    if literal is not None:
        return literal
    if type(node) is cst.BinaryOperation and isinstance(node.operator, (cst.Add, cst.Multiply)) and depth < 4:
        kinds = {container_kind(ctx.value_of(operand), ctx, depth + 1) for operand in (node.left, node.right)}
        sequences = kinds & {"list", "tuple"}
        return sequences.pop() if len(sequences) == 1 else None
    if type(node) is cst.Subscript and is_full_slice(node) and depth < 4:  # ``xs[:]``: a copy
        return container_kind(ctx.value_of(node.value), ctx, depth + 1)
    if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value == "copy" \
            and not node.args and depth < 4:  # ``d.copy()``: a new container of the same type
        return container_kind(ctx.value_of(node.func.value), ctx, depth + 1)
    if type(node) is cst.Call:
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if last not in _CONTAINER_NAMES and last not in list_builders():  # most calls: no need to resolve
            return None
        callee = ctx.callee(node) or ""
        if callee.startswith("builtins.") and callee[len("builtins."):] in list_builders():
            return "list"
        return _CONTAINER_BUILTINS.get(callee)
    return None


@functools.cache  # a function, not a constant: libcst loads on first use (engine/lazy.py)
def _literal_kinds() -> dict[type, str]:
    return {cst.List: "list", cst.ListComp: "list", cst.Dict: "dict", cst.DictComp: "dict", cst.Set: "set",
            cst.SetComp: "set", cst.Tuple: "tuple"}


def mutation_added(kind: str, method: str, call: cst.Call) -> list[Added]:
    """The values ``container.method(...)`` adds to a container of ``kind`` (from typeshed's stubs)."""
    from rlguard.engine.context import Added  # context imports the value model at load time

    if any(arg.star for arg in call.args):
        return []
    positional = [arg.value for arg in call.args if arg.keyword is None]
    added = []
    for entry in mutation(kind, method):
        if entry[0] == "keywords":
            added += [Added(arg.value) for arg in call.args if arg.keyword is not None]
        elif entry[1] == "*":
            added += [Added(value, spread=True) for value in positional]
        elif entry[1] < len(positional):
            added.append(Added(positional[entry[1]], spread=entry[0] == "spread"))
    return added


def assigned_item(kind: str, target: cst.Subscript, value: cst.BaseExpression) -> Added | None:
    """``container[key] = value``: the value the container gains (each item of it for a slice)."""
    from rlguard.engine.context import Added

    entries = mutation(kind, "__setitem__")
    is_slice = any(isinstance(element.slice, cst.Slice) for element in target.slice)
    wanted = "spread" if is_slice else "item"
    return Added(value, spread=is_slice) if any(entry[0] == wanted for entry in entries) else None


def augmented(kind: str, operator: cst.BaseAugOp, value: cst.BaseExpression) -> Added | None:
    """``container += value`` (``|=`` for dicts): the values it gains, or None for another operator."""
    from rlguard.engine.context import Added

    method = {cst.AddAssign: "__iadd__", cst.BitOrAssign: "__ior__"}.get(type(operator))
    if method is None:
        return None
    return Added(value, spread=True) if mutation(kind, method) else None


def builtin_terms(qualname: str, call: cst.Call) -> list[Term | None] | None:
    """The typeshed terms of a built-in function's call; None for any other call, or one whose
    ``*args`` hides what it passes."""
    if not qualname.startswith("builtins.") or any(arg.star for arg in call.args):
        return None
    positional = sum(1 for arg in call.args if arg.keyword is None)
    keywords = frozenset(arg.keyword.value for arg in call.args if arg.keyword is not None)
    terms = builtin_results(qualname[len("builtins."):], positional, keywords)
    return terms or None


def term_args(term: Term, call: cst.Call) -> list[cst.BaseExpression]:
    """The arguments an ``["arg", [positions]]`` term may be."""
    positional = [arg.value for arg in call.args if arg.keyword is None]
    chosen = []
    for position in term[1]:
        if position == "*":
            chosen += positional[max(p for p in term[1] if p != "*") + 1:]
        elif position < len(positional):
            chosen.append(positional[position])
    return chosen


def positional_arg(call: cst.Call, position: int) -> cst.BaseExpression | None:
    positional = [arg.value for arg in call.args if arg.keyword is None]
    return positional[position] if position < len(positional) else None


def item_kind(kind: str) -> str | None:
    """What one item of a value of an API-model kind is."""
    return _ITEM_OF_KIND.get(kind)


def value_kind(kind: str) -> str | None:
    """What one value of a dict of an API-model kind is (``state_dict()``: tensors)."""
    return _VALUE_OF_KIND.get(kind)


def views_items(method: str, shape: tuple[int, tuple] | None) -> bool:
    """Whether ``container.method(...)``, called with this shape (positional count, keywords), gives a
    view or a shallow copy of the container's items: it holds what the container holds."""
    return method in ITEM_VIEWS and shape == (0, ())


def combined_kind(kinds: list[Any]) -> str | None:
    """One kind for items of these kinds: theirs when they agree, "mixed" when all hold tensors, else None."""
    if not kinds or any(kind is None for kind in kinds):
        return None
    if all(kind == kinds[0] for kind in kinds):
        return kinds[0]
    return "mixed" if all(holds_tensors_kind(kind) for kind in kinds) else None


def is_full_slice(node: cst.Subscript) -> bool:
    """``x[:]``: every item of ``x``, in a copy of the same type."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Slice):
        return False
    part = node.slice[0].slice
    return part.lower is None and part.upper is None and part.step is None


def constant_index(node: cst.Subscript) -> int | None:
    """``i`` of ``x[i]`` for a non-negative integer literal."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    return int(value.value) if isinstance(value, cst.Integer) and value.value.isdigit() else None


def comprehension_env(comp_for: cst.CompFor | None) -> _Env:
    """The names a comprehension binds: a plain name iterates its ``in`` part; others are unknown."""
    from rlguard.engine.context import Binding  # context imports this module at load time

    env: _Env = {}
    every = not _has_filters(comp_for)
    while comp_for is not None:
        target = comp_for.target
        if isinstance(target, cst.Name):
            env[target.value] = (Binding(opaque=True, iterated=comp_for.iter, every_item=every), True)
        else:
            env.update({name: None for name in _target_names(target)})
            if isinstance(target, (cst.Tuple, cst.List)) and not any(
                    isinstance(e, cst.StarredElement) for e in target.elements):
                env.update({e.value.value: (Binding(opaque=True, iterated=comp_for.iter, position=i,
                                                    every_item=every), True)
                            for i, e in enumerate(target.elements) if isinstance(e.value, cst.Name)})
        comp_for = comp_for.inner_for_in
    return env


def _has_filters(comp_for: cst.CompFor | None) -> bool:
    while comp_for is not None:
        if comp_for.ifs:
            return True
        comp_for = comp_for.inner_for_in
    return False


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def literal_item(source: cst.BaseExpression, position: int) -> cst.BaseExpression | None:
    """Item ``position`` of a tuple or list literal; None where a starred item hides positions."""
    if not isinstance(source, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in source.elements):
        return None
    return source.elements[position].value if position < len(source.elements) else None


def literal_items(value: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """What an argument passes: itself, or the items of a list, tuple or dict literal."""
    if isinstance(value, (cst.List, cst.Tuple)):
        yield from (e.value for e in value.elements if isinstance(e, cst.Element))
    elif isinstance(value, cst.Dict):
        yield from (e.value for e in value.elements if isinstance(e, cst.DictElement))
    else:
        yield value
