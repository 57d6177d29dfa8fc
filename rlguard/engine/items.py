"""Items of containers in the value model: what one item of a container is (``for x in xs``, ``max(xs)``),
one value of a dict, one part of an unpacked item, and per item the tensor-valued parts. A name bound to a
new container is followed once (``follow``) to what built it and to what was added to it since.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlguard.engine.lazy import cst

from rlguard.engine.builtins_model import Term
from rlguard.engine.containers import (
    builtin_terms,
    combined_kind,
    comprehension_env,
    container_kind,
    item_kind,
    positional_arg,
    term_args,
    value_kind,
)
from rlguard.engine.matching import method_call
from rlguard.engine.reader import Reader
from rlguard.engine.values import (
    _CERTAIN,
    _HOLDS_TENSORS,
    ITERATED,
    MAX_DEPTH,
    Leaf,
    ValueType,
    _Env,
    _pinned,
    _Typed,
)

if TYPE_CHECKING:
    from rlguard.engine.context import Binding


def _combine(parts: list[_Typed]) -> _Typed:
    """One value for items of these types (``combined_kind``), under all their conditions; None when any
    is unknown. A container with no items gives "empty", which holds nothing and joins any other kind."""
    if any(part is None for part in parts):
        return None
    known = [part for part in parts if part is not None and part[0].kind != "empty"]
    if not known:
        return ValueType("empty"), _CERTAIN
    kind = combined_kind([part[0].kind for part in known])
    if kind is None:
        return None
    return ValueType(kind), frozenset().union(*(part[1] for part in known))


def _combine_alternatives(found: list[_Typed]) -> _Typed:
    """The value of a call whose fitting overloads give these: the one kind they agree on, ignoring
    overloads whose result holds no tensor (``sum``'s overload for ``bool`` items)."""
    holding = [typed for typed in found if typed is not None and typed[0].kind in _HOLDS_TENSORS]
    if not holding or any(typed[0] != holding[0][0] for typed in holding):
        return None
    return holding[0]


_NOT_A_CONTAINER_CALL = object()

# Calls that build a dict from their arguments' items and their keywords.
_DICT_CALLS = frozenset({"builtins.dict", "collections.OrderedDict"})


class ItemReader(Reader):
    def follow(self, node: cst.BaseExpression,
               env: _Env) -> tuple[Binding, list[tuple[cst.BaseExpression, _Env, bool]]] | None:
        """A name bound to a new container: its binding, and where its items come from, each with the
        environment it is read in and whether it is a container whose items it gives (the expression that
        built it, ``xs.extend(ys)``, ``d.update(e)``) or one item added (``xs.append(t)``, ``d[k] = t``).
        None for anything else."""
        if not isinstance(node, cst.Name):
            return None
        found = self.lookup(node.value, env)
        if found is None:
            return None
        binding, innermost = found
        if binding.value is None or binding.opaque or not self.is_new_container(binding.value):
            return None
        built = (binding.value, self.inside(node.value, binding, innermost, env), True)
        return binding, [built, *((added.value, _pinned(env, added), added.spread) for added in binding.added)]

    def element_type(self, iterated: cst.BaseExpression, env: _Env, depth: int) -> _Typed:
        """What one item of ``iterated`` is: what ``for x in iterated`` binds, what ``max(iterated)`` gives."""
        if depth > MAX_DEPTH:
            return None
        followed = self.follow(iterated, env)
        if followed is not None:
            if container_kind(followed[0].value, self.ctx) == "dict":
                return None  # a dict's items are its keys
            return _combine([self.element_type(source, source_env, depth + 1) if whole
                             else self.typed(source, source_env, depth + 1) for source, source_env, whole in followed[1]])
        if isinstance(iterated, (cst.List, cst.Tuple, cst.Set)):
            return _combine([self.element_type(e.value, env, depth + 1) if isinstance(e, cst.StarredElement)
                             else self.typed(e.value, env, depth + 1) for e in iterated.elements])
        if isinstance(iterated, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.typed(iterated.elt, {**env, **comprehension_env(iterated.for_in)}, depth + 1)
        if isinstance(iterated, (cst.Dict, cst.DictComp)):
            return None
        if isinstance(iterated, cst.Call):
            item = self.call_items(iterated, env, depth)
            if item is not _NOT_A_CONTAINER_CALL:
                return item  # type: ignore[return-value]
        typed = self.typed(iterated, env, depth)
        if typed is None:
            return None
        value, when = typed
        if value.kind == "object" and value.cls is not None and not self.overridden(value, "__iter__"):
            element = {"td_iter": "tensordict", "tensor_iter": "mixed"}.get(self.model.method(value.cls, "__iter__"))
        else:
            element = item_kind(value.kind)
        return (ValueType(element), when) if element else None

    def call_items(self, call: cst.Call, env: _Env, depth: int) -> _Typed | object:
        """One item of what a container-making call gives (``sorted(xs)``, ``d.values()``, ``zip(a, b)``'s
        tuples are not single items); ``_NOT_A_CONTAINER_CALL`` for other calls."""
        qualname = self.ctx.callee(call)
        if qualname is not None:
            terms = builtin_terms(qualname, call)
            if terms is None:
                return _NOT_A_CONTAINER_CALL
            return _combine_alternatives([self.term_item(term, call, env, depth) for term in terms])
        called = method_call(call)
        if called is not None and called[1] == "values" and not call.args:
            return self.dict_value(called[0], env, depth + 1)
        return _NOT_A_CONTAINER_CALL

    def term_item(self, term: Term | None, call: cst.Call, env: _Env, depth: int) -> _Typed:
        """One item of the container a typeshed term describes."""
        if term is None or term[0] not in ("list", "iter"):
            return None
        return self.term_type(term[1], call, env, depth)

    def term_type(self, term: Term | None, call: cst.Call, env: _Env, depth: int) -> _Typed:
        """The value a typeshed term describes, for this call's arguments."""
        if term is None or term[0] == "value" or depth > MAX_DEPTH:
            return None
        if term[0] == "arg":
            return _combine([self.typed(arg, env, depth + 1) for arg in term_args(term, call)])
        source = positional_arg(call, term[1]) if term[0] in ("elem", "same") else None
        if term[0] == "elem" and source is not None:
            return self.element_type(source, env, depth + 1)
        if term[0] == "same" and source is not None:  # ``abs(t)``, ``round(t)``: a tensor's own dunder
            typed = self.typed(source, env, depth + 1)
            if typed is not None and typed[0].kind == "returned":
                return self.returned_operand((source,), env, depth)
            return typed if typed is not None and typed[0].kind == "tensor" else None
        if term[0] in ("list", "iter"):
            item = self.term_type(term[1], call, env, depth + 1)
            return (ValueType("tensors"), item[1]) if item is not None and item[0].kind == "tensor" else None
        return None

    def dict_value(self, node: cst.BaseExpression, env: _Env, depth: int) -> _Typed:
        """What one value of a dict is: ``d.values()``, ``for k, v in d.items()``."""
        if depth > MAX_DEPTH:
            return None
        followed = self.follow(node, env)
        if followed is not None:
            return _combine([self.dict_value(source, source_env, depth + 1) if whole
                             else self.typed(source, source_env, depth + 1) for source, source_env, whole in followed[1]])
        if isinstance(node, cst.Dict):
            return _combine([self.dict_value(e.value, env, depth + 1) if isinstance(e, cst.StarredDictElement)
                             else self.typed(e.value, env, depth + 1) for e in node.elements])
        if isinstance(node, cst.DictComp):
            return self.typed(node.value, {**env, **comprehension_env(node.for_in)}, depth + 1)
        if isinstance(node, cst.Call) and self.ctx.callee(node) in _DICT_CALLS:
            parts = [self.dict_value(arg.value, env, depth + 1) if arg.star == "**" or arg.keyword is None
                     else self.typed(arg.value, env, depth + 1) for arg in node.args]
            return _combine(parts)
        typed = self.typed(node, env, depth)
        element = value_kind(typed[0].kind) if typed is not None else None
        return (ValueType(element), typed[1]) if typed is not None and element else None

    def unpacked_item(self, iterated: cst.BaseExpression, position: int, env: _Env, depth: int) -> _Typed:
        """Item ``position`` of each item of ``iterated``: ``for k, v in d.items()``, ``enumerate(xs)``, ``zip(a, b)``."""
        if not isinstance(iterated, cst.Call) or depth > MAX_DEPTH:
            return None
        called = method_call(iterated)
        if called is not None and called[1] == "items" and not iterated.args:
            return self.dict_value(called[0], env, depth + 1) if position == 1 else None
        qualname = self.ctx.callee(iterated)
        terms = builtin_terms(qualname, iterated) if qualname is not None else None
        if not terms:
            return None
        found = []
        for term in terms:
            if term is None or term[0] not in ("list", "iter") or term[1][0] != "tuple" or position >= len(term[1][1]):
                return None
            found.append(self.term_type(term[1][1][position], iterated, env, depth + 1))
        return _combine_alternatives(found)

    def items(self, node: cst.BaseExpression, env: _Env, depth: int, values: bool) -> list[list[Leaf]] | None:
        """Per item of a container (per value of a dict, with ``values``; a dict's items are otherwise its
        keys): its tensor-valued parts; None when unknown."""
        if depth > MAX_DEPTH:
            return None
        leaves = self.leaves
        if isinstance(node, cst.Name):
            followed = self.follow(node, env)
            if followed is None:
                return None
            per_item: list[list[Leaf]] = []
            for source, source_env, whole in followed[1]:
                more = self.items(source, source_env, depth + 1, values) if whole \
                    else [leaves(source, source_env, depth + 1, (), (), False, True)]
                if more is None:
                    return None
                per_item += more
            return per_item
        is_dict = container_kind(node, self.ctx) == "dict"
        if is_dict and not values:
            return [[]]
        if isinstance(node, cst.Dict):
            per_value: list[list[Leaf]] = []
            for entry in node.elements:
                more = [leaves(entry.value, env, depth + 1, (), (), False, True)] \
                    if isinstance(entry, cst.DictElement) else self.items(entry.value, env, depth + 1, True)
                if more is None:
                    return None
                per_value += more
            return per_value
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            found: list[list[Leaf]] = []
            for item in node.elements:
                more = self.items(item.value, env, depth + 1, False) if isinstance(item, cst.StarredElement) \
                    else [leaves(item.value, env, depth + 1, (), (), False, True)]
                if more is None:
                    return None
                found += more
            return found
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            produced = node.value if isinstance(node, cst.DictComp) else node.elt
            return [leaves(produced, {**env, **comprehension_env(node.for_in)}, depth + 1, (), (), False, True)]
        if isinstance(node, cst.Call):
            return self.call_items_leaves(node, env, depth, values)
        return None

    def call_items_leaves(self, node: cst.Call, env: _Env, depth: int, values: bool) -> list[list[Leaf]] | None:
        """Per item of what a call gives: ``d.values()``, ``sorted(xs)``, ``dict(a=t, **other)``."""
        called = method_call(node)
        if called is not None and called[1] == "values" and not node.args:
            return self.items(called[0], env, depth + 1, True)
        qualname = self.ctx.callee(node)
        if qualname in _DICT_CALLS:
            found: list[list[Leaf]] = []
            for arg in node.args:
                more = self.items(arg.value, env, depth + 1, True) if arg.keyword is None \
                    else [self.leaves(arg.value, env, depth + 1, (), (), False, True)]
                if more is None:
                    return None
                found += more
            return found
        terms = builtin_terms(qualname, node) if qualname is not None else None
        if not terms or len({repr(term) for term in terms}) != 1 or terms[0] is None:
            return None
        term = terms[0]
        if term[0] not in ("list", "iter") or term[1][0] != "elem":
            return None
        source = positional_arg(node, term[1][1])
        return self.items(source, env, depth + 1, False) if source is not None else None

    def iterated_items(self, iterated: cst.BaseExpression, position: int | None, env: _Env,
                       depth: int) -> list[list[Leaf]] | None:
        """Per item that iterating ``iterated`` binds (item ``position`` of each, when it is unpacked): its
        tensor-valued parts; None when unknown."""
        if position is None:
            return self.items(iterated, env, depth, values=False)
        if not isinstance(iterated, cst.Call):
            return None
        called = method_call(iterated)
        if called is not None and called[1] == "items" and not iterated.args:
            return self.items(called[0], env, depth, values=True) if position == 1 else [[]]
        qualname = self.ctx.callee(iterated)
        terms = builtin_terms(qualname, iterated) if qualname is not None else None
        if not terms or len({repr(term) for term in terms}) != 1:
            return None
        term = terms[0]
        if term is None or term[0] != "iter" or term[1][0] != "tuple" or position >= len(term[1][1]):
            return None
        part = term[1][1][position]
        if part[0] == "value":
            return [[]]
        source = positional_arg(iterated, part[1]) if part[0] == "elem" else None
        return self.items(source, env, depth + 1, values=False) if source is not None else None

    def item_leaves(self, binding: Binding, position: int | None, env: _Env, depth: int, bindings: tuple,
                    via: tuple) -> list[Leaf]:
        """The parts of an item an iteration binds (item ``position`` of it, when unpacked): ``for k, row in
        rows.items()``, a row holds tensors when every row does; a comprehension without ``if`` takes every
        item, so what it builds holds what any item holds."""
        assert binding.iterated is not None
        items = self.iterated_items(binding.iterated, position, env, depth + 1)
        if items is None and binding.every_item:  # the whole source's parts
            source = self.iteration_source(binding.iterated, position)
            items = [self.source_leaves(*source, env, depth + 1)] if source is not None else None
        if not items or not (all(items) or binding.every_item):
            return []
        return [leaf._replace(local=False, bindings=bindings + leaf.bindings, via=via + leaf.via)
                for item in items for leaf in item]

    def iteration_source(self, iterated: cst.BaseExpression,
                         position: int | None) -> tuple[cst.BaseExpression, bool] | None:
        """The container whose items (or values) an iteration binds, and whether they are its items taken
        one by one (not a dict's values): ``d`` of ``d.items()`` at position 1, ``xs`` of ``enumerate(xs)``
        at 1, of ``zip(ws, xs)`` at 1, of ``for x in xs``; None when unknown."""
        called = method_call(iterated)
        if called is not None and called[1] in ("items", "values") and not iterated.args:  # type: ignore[attr-defined]
            return (called[0], False) if (position == 1) == (called[1] == "items") else None
        if position is None:
            return iterated, True
        qualname = self.ctx.callee(iterated) if isinstance(iterated, cst.Call) else None
        terms = builtin_terms(qualname, iterated) if qualname is not None else None  # type: ignore[arg-type]
        if not terms or len({repr(term) for term in terms}) != 1 or terms[0] is None:
            return None
        term = terms[0]
        if term[0] != "iter" or term[1][0] != "tuple" or position >= len(term[1][1]):
            return None
        part = term[1][1][position]
        source = positional_arg(iterated, part[1]) if part[0] == "elem" else None  # type: ignore[arg-type]
        return (source, True) if source is not None else None

    def source_leaves(self, source: cst.BaseExpression, by_iteration: bool, env: _Env, depth: int) -> list[Leaf]:
        """The parts of what ``iteration_source`` found: its items' when ``by_iteration``, else its own."""
        if by_iteration:
            return self.iterated_leaves(source, env, depth, (), (), True)
        return self.leaves(source, env, depth, (), (), False, True)

    def iterated_leaves(self, source: cst.BaseExpression, env: _Env, depth: int, bindings: tuple, via: tuple,
                        encodable: bool) -> list[Leaf]:
        """The parts the items of ``source`` hold together, taken one by one (``[*xs]``, ``list(xs)``, ``for x
        in xs``): a dict's items are its keys; what a project call gives, the index iterates (``ITERATED``)."""
        typed = self.typed(source, env, depth + 1)
        if container_kind(self.ctx.value_of(source), self.ctx) == "dict" or (typed and typed[0].container == "dict"):
            return []
        found = self.leaves(source, env, depth + 1, bindings, via, False, encodable, consumed=True)
        if typed is None or typed[0].kind != "returned":
            return found
        iterated = self.chained_link(typed, (ITERATED, None, ()))
        return [leaf._replace(kind="mixed", when=iterated[1]) for leaf in found] if iterated is not None else []
