"""Tensor-valued parts in the value model: the parts of an expression that hold tensors, looking into
literals, comprehensions, name bindings, the values added to a container, and calls that hand on what
they are given (``dict(**kw)``, ``list(xs)``, ``dataclasses.asdict(stats)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlguard.engine.lazy import cst

from rlguard.engine.class_lookup import may_be_project
from rlguard.engine.containers import (
    ITEM_VIEWS,
    builtin_terms,
    comprehension_env,
    constant_index,
    container_kind,
    is_full_slice,
    positional_arg,
)
from rlguard.engine.items import _DICT_CALLS, ItemReader
from rlguard.engine.matching import method_call, positional
from rlguard.engine.values import (
    _CERTAIN,
    FIELDS,
    MAX_DEPTH,
    Leaf,
    TensorFields,
    ValueType,
    _Env,
    _Typed,
)

if TYPE_CHECKING:
    from rlguard.engine.context import Binding


# Functions that give a copy of an instance with some fields replaced.
_REPLACERS = frozenset({"dataclasses.replace", "attr.evolve", "attrs.evolve", "copy.replace"})
# Functions whose result holds the fields of the instance they are given.
_FIELD_READERS = frozenset({"dataclasses.asdict", "dataclasses.astuple", "attr.asdict", "attr.astuple",
                            "attrs.asdict", "attrs.astuple", "builtins.vars"})


class LeafFinder(ItemReader):
    def leaves(self, node: cst.BaseExpression, env: _Env, depth: int, bindings: tuple, via: tuple,
               local: bool, encodable: bool, consumed: bool = False) -> list[Leaf]:
        """The tensor-valued parts of ``node``. ``consumed``: something iterates ``node`` itself (``list(s)``),
        so that it is a set, a generator or an iterator does not keep its parts from being encoded."""
        if depth > MAX_DEPTH:
            return []
        # ``type() is`` where one type is asked: a failed isinstance on libcst's ABCs costs several times more.
        if type(node) is cst.Name:
            found = self.lookup(node.value, env)
            if found is None:
                return []
            binding, innermost = found
            local = local and innermost
            container = self.follow(node, env)
            if container is not None:
                (built, built_env, _), *added = container[1]
                found_leaves = self.leaves(built, built_env, depth + 1, bindings + (binding,), via + (node,),
                                           local, encodable, consumed)
                # ``metrics[k] = loss`` in a loop: the values added, named where they were added.
                return found_leaves + [leaf for value, value_env, _ in added for leaf in self.leaves(
                    value, value_env, depth + 1, bindings + (binding,), via + (node,), False, encodable)]
            if binding.iterated is not None and self.kind(node, env, depth) is None:
                inner_env = self.inside(node.value, binding, innermost, env)
                return self.item_leaves(binding, binding.position, inner_env, depth, bindings, via)
        if type(node) is cst.Attribute and node.attr.value == "__dict__":  # the fields of an instance
            return self.field_leaves(node.value, env, depth + 1, bindings, via) or []
        if type(node) is cst.Subscript and is_full_slice(node) and self.kind(node, env, depth) is None:
            return self.leaves(node.value, env, depth + 1, bindings, via, local, encodable)  # ``xs[:]``: a copy
        if type(node) is cst.Subscript and isinstance(node.value, cst.Name) and self.kind(node, env, depth) is None:
            index, found = constant_index(node), self.lookup(node.value.value, env)  # ``pair[1]``
            if index is not None and found is not None and found[0].iterated is not None and found[0].position is None:
                inner_env = self.inside(node.value.value, found[0], found[1], env)
                return self.item_leaves(found[0], index, inner_env, depth, bindings, via)
        if type(node) is cst.Dict:  # ``{"a": t, **summarize(batch)}``: values, and those of what is unpacked
            return [leaf for element in node.elements
                    for leaf in self.leaves(element.value, env, depth + 1, bindings, via, local, encodable)]
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            encodable = encodable and (consumed or not isinstance(node, cst.Set))
            return [leaf for element in node.elements
                    for leaf in (self.iterated_leaves(element.value, env, depth, bindings, via, encodable)
                                 if isinstance(element, cst.StarredElement)
                                 else self.leaves(element.value, env, depth + 1, bindings, via, local, encodable))]
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            inner_env = {**env, **comprehension_env(node.for_in)}
            element = node.value if isinstance(node, cst.DictComp) else node.elt
            encodable = encodable and (consumed or isinstance(node, (cst.ListComp, cst.DictComp)))
            return self.leaves(element, inner_env, depth + 1, bindings, via, local, encodable)
        if type(node) is cst.BinaryOperation and self.is_new_container(node):  # ``xs + [t]``, ``[t] * 2``
            return [leaf for operand in (node.left, node.right)
                    for leaf in self.leaves(operand, env, depth + 1, bindings, via, local, encodable)]
        kind, followed = self.kind(node, env, depth), self.followed(node, env)
        if kind is None:
            return self.passed_on(node, followed, env, depth, bindings, via, encodable, consumed)
        if followed is not None:
            local = local and followed[1]
        return [Leaf(node, kind[0], kind[1], bindings + ((followed[0],) if followed else ()), via, local, encodable)]

    def passed_on(self, node: cst.BaseExpression, followed: tuple[Binding, bool] | None, env: _Env, depth: int,
                  bindings: tuple, via: tuple, encodable: bool, consumed: bool) -> list[Leaf]:
        """The parts of a call that hands on what it is given (``asdict(row)``, ``dict(**kw)``), itself or
        through the name bound to it (``fields = asdict(row)``)."""
        if followed is not None and isinstance(node, cst.Name):
            binding, innermost = followed
            if binding.opaque or not isinstance(binding.value, cst.Call):
                return []
            inner_env = self.inside(node.value, binding, innermost, env)
            return self.call_leaves(binding.value, inner_env, depth + 1, bindings + (binding,), via + (node,),
                                    encodable, consumed) or []
        if isinstance(node, cst.Call):
            return self.call_leaves(node, env, depth, bindings, via, encodable, consumed) or []
        return []

    def is_new_container(self, node: cst.BaseExpression) -> bool:
        """A literal, a comprehension or a call that builds a new list, tuple, set or dict."""
        return container_kind(node, self.ctx) is not None

    def call_leaves(self, node: cst.Call, env: _Env, depth: int, bindings: tuple, via: tuple,
                    encodable: bool, consumed: bool = False) -> list[Leaf] | None:
        """The parts of a call that passes its arguments' items on: ``dict(a=t, **other)``, ``list(xs)``,
        ``sorted(xs)``, ``dataclasses.asdict(stats)``, ``d.values()``; None for any other call."""
        qualname = self.ctx.callee(node)
        inner: list[cst.BaseExpression] = []
        iterated: list[cst.BaseExpression] = []  # sources whose items it takes one by one
        if qualname in _DICT_CALLS:
            inner = [arg.value for arg in node.args if arg.keyword is not None or arg.star == "**"]
            first = positional_arg(node, 0)
            inner += [first] if first is not None else []
        elif qualname is not None and qualname in _FIELD_READERS:
            instance = positional_arg(node, 0)
            return self.field_leaves(instance, env, depth, bindings, via) if instance is not None else None
        elif qualname is not None:
            terms = builtin_terms(qualname, node)
            if not terms or any(not isinstance(term, list) or term[0] not in ("list", "iter") for term in terms):
                return None
            for term in terms:
                assert term is not None
                element = term[1]
                # An item of an argument, a tuple of such items (``zip``, ``enumerate``), or a plain value.
                parts = element[1] if element[0] == "tuple" else [element]
                for part in parts:
                    source = positional_arg(node, part[1]) if part[0] == "elem" else None
                    if source is None and part[0] != "value":
                        return None
                    iterated += [source] if source is not None else []
            encodable = encodable and (consumed or qualname not in ("builtins.set", "builtins.frozenset", "builtins.iter",
                                                       "builtins.reversed", "builtins.enumerate", "builtins.zip"))
        else:
            called = method_call(node)
            if called is None or called[1] not in (*ITEM_VIEWS, "_asdict") or not positional(node) == []:
                return None
            if called[1] == "_asdict":
                return self.field_leaves(called[0], env, depth, bindings, via)
            inner = [called[0]]  # a view or copy holds what its dict holds
        return [*(leaf for value in inner for leaf in self.leaves(value, env, depth + 1, bindings, via, False, encodable)),
                *(leaf for source in iterated for leaf in self.iterated_leaves(source, env, depth, bindings, via, encodable))]

    def field_leaves(self, instance: cst.BaseExpression, env: _Env, depth: int, bindings: tuple,
                     via: tuple) -> list[Leaf] | None:
        """The tensor-valued fields of an instance (``asdict(stats)``): the arguments the call that built
        it passed, and the fields its class declares or assigns tensors (asked of the index)."""
        if isinstance(instance, cst.Name):
            param = self.lookup(instance.value, env)
            if param is not None and param[0].assumed == FIELDS:  # a parameter, while a summary is computed
                return [Leaf(instance, "holds", _CERTAIN, bindings + (param[0],), via, False)]
        built = self.ctx.value_of(instance)
        if not isinstance(built, cst.Call):
            return None
        cls = self.ctx.callee(built)
        if cls in _REPLACERS and built.args and built.args[0].keyword is None:  # ``replace(stats, loss=t)``
            replaced = self.field_leaves(built.args[0].value, env, depth + 1, bindings, via)
            return [*(replaced or []), *(leaf for arg in built.args[1:]
                                         for leaf in self.leaves(arg.value, env, depth + 1, bindings, via, False, True))]
        if cls is None or not may_be_project(cls):
            return None
        found = [leaf for arg in built.args
                 for leaf in self.leaves(arg.value, env, depth + 1, bindings, via, False, True)]
        if self.deferred:
            found.append(Leaf(instance, "holds", frozenset({TensorFields(cls)}), bindings, via, False))
        return found

    def followed(self, node: cst.BaseExpression, env: _Env) -> tuple[Binding, bool] | None:
        """The binding a name leaf was read from."""
        return self.lookup(node.value, env) if isinstance(node, cst.Name) else None

    def container_type(self, node: cst.BaseExpression, env: _Env, depth: int) -> _Typed:
        """A new container (or a name bound to one) holding tensors: "holds", with its type, under the
        conditions its parts are tensor-valued under (certainly when one part is)."""
        container = container_kind(self.ctx.value_of(node), self.ctx)
        found = self.leaves(node, env, depth, (), (), True, True) if container is not None else []
        if not found:
            return None
        certain = any(leaf.certain for leaf in found)
        return ValueType("holds", container=container), _CERTAIN if certain else frozenset().union(
            *(leaf.when for leaf in found))
