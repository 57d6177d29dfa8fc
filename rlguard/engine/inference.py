"""Expression typing: what a single value is (a tensor, a TensorDict, an object of a class, what a
project call gives), and the entry points rules and the engine ask (``tensor_leaves``, ``is_tensor_valued``,
``argument_kinds``, ``annotated_tensors``).

An expression is tensor-valued when it evaluates to a torch tensor or to a value holding tensors: a
dict, list, tuple or comprehension of them, the tuple ``torch.sort`` returns, ``model.parameters()``, a
``state_dict()``, a TensorDict or one of its entries, what a module gives for tensors. ``tensor_leaves``
finds the parts that hold them, following names to what they were bound to, so a rule can name them
and a fix can convert them. What library calls give is read from the API model (``engine/apimodel.json``,
generated from torch, tensordict and torchrl): an expression it cannot type is unknown, and never a
tensor.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rlguard.engine.lazy import cst

from rlguard.engine.class_lookup import (
    ClassLookup,
    _bulk_methods,
    _kind_of_call,
    may_be_project,
)
from rlguard.engine.containers import builtin_terms, constant_index, is_full_slice, literal_item
from rlguard.engine.items import _combine_alternatives
from rlguard.engine.leaves import LeafFinder
from rlguard.engine.matching import frozen_shape, method_call, positional
from rlguard.engine.values import (
    _ARITHMETIC,
    _ASSUMED,
    _CERTAIN,
    _HOLDS_TENSORS,
    _LEAF_KINDS,
    _MAX_CHAIN,
    FIELDS,
    MAX_DEPTH,
    ArgKinds,
    Condition,
    KindIf,
    Leaf,
    Returns,
    Shape,
    ValueType,
    _as_tensor,
    _either,
    _Env,
    _Kind,
    _Typed,
    arg_kind,
)

if TYPE_CHECKING:
    from rlguard.engine.context import FileContext

# Operators (libcst's node names: libcst loads on first use) that give a new container holding both
# operands' items, by the container type.
_CONTAINER_OPERATORS = {"list": ("Add", "Multiply"), "tuple": ("Add", "Multiply"), "dict": ("BitOr",), "set": ("BitOr",)}


# What one item of a value is (``x[i]``, ``td["key"]``): an item of a TensorDict is an entry of it, a
# tensor or a nested TensorDict (or non-tensor data); of a loss's output, a tensor.
_ITEM_KINDS = {"tensor": "tensor", "tensors": "tensor", "tensordict": "entry", "losses": "mixed",
               "mixed": "mixed", "entry": "entry"}
_COPIES = frozenset({"builtins.list", "builtins.tuple", "builtins.sorted", "builtins.dict"})


def tensor_leaves(node: cst.BaseExpression, ctx: FileContext, *, deferred: bool = False) -> list[Leaf]:
    """The tensor-valued parts of ``node``, looking into literals, comprehensions and name bindings.

    Without ``deferred``, facts not yet known (``self.x`` assigned later in the class, a method a
    linted class may define) count as not tensor-valued. With it, such parts are returned with the
    conditions (``Leaf.when``) that the complete index answers through ``condition_holds``.
    """
    return _Inference(ctx, deferred).leaves(node, {}, 0, (), (), True, True)


def argument_kinds(call: cst.Call, ctx: FileContext) -> ArgKinds:
    """(position or keyword, summary kind) of the arguments of a call that are tensors or TensorDicts, or
    containers holding them (``SUMMARY_KINDS``): certainly, or as the index answers (what a project call
    gives, ``engine.conditions.known_args``)."""
    return _Inference(ctx, deferred=True).arg_kinds(call, {}, 0)


def annotated_tensors(annotation: cst.BaseExpression, ctx: FileContext) -> bool:
    """An annotation that promises a tensor-valued value (``torch.Tensor``, ``dict[str, Tensor]``)."""
    declared = _Inference(ctx, deferred=False).annotation_type(annotation)
    return declared is not None and declared.kind in _HOLDS_TENSORS


def is_tensor_valued(node: cst.BaseExpression, ctx: FileContext) -> bool:
    """Whether ``node`` certainly evaluates to a tensor or to a value holding tensors."""
    return any(leaf.certain for leaf in tensor_leaves(node, ctx))


class _Inference(LeafFinder, ClassLookup):
    def kind(self, node: cst.BaseExpression, env: _Env, depth: int) -> _Kind:
        """The leaf kind of a non-container expression, or None when it holds no tensor (or is unknown)."""
        typed = self.typed(node, env, depth)
        if typed is None or typed[0].kind not in _LEAF_KINDS:
            return None
        return _LEAF_KINDS[typed[0].kind], typed[1]

    def typed(self, node: cst.BaseExpression, env: _Env, depth: int) -> _Typed:
        """What a single value is, with the conditions under which it is; None when unknown."""
        if depth > MAX_DEPTH:
            return None
        # Exact types first: a failed isinstance on libcst's ABCs costs several times a ``type() is``.
        if type(node) is cst.Name:
            return self.name_type(node, env, depth)
        if type(node) is cst.Call:
            return self.call_type(node, env, depth)
        if type(node) is cst.Subscript:
            return self.subscript_type(node, env, depth)
        if type(node) is cst.Attribute:
            return self.attribute_type(node, env, depth)
        if type(node) is cst.BinaryOperation:
            if isinstance(node.operator, cst.Modulo) and isinstance(
                    node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                return None  # "%s" % t is a string
            sides = [self.typed(side, env, depth + 1) for side in (node.left, node.right)]  # each typed once
            return _either(*(_tensor_of(side) for side in sides)) or _arithmetic_on_returned(sides) \
                or _container_operation(node.operator, sides)
        if type(node) is cst.UnaryOperation:
            return None if isinstance(node.operator, cst.Not) else _as_tensor(self.tensor(node.expression, env, depth))
        if type(node) is cst.Comparison:
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
                return None
            operands = [node.left, *(c.comparator for c in node.comparisons)]
            return _either(*(self.tensor(operand, env, depth) for operand in operands))
        if type(node) is cst.IfExp:
            body, orelse = self.tensor(node.body, env, depth), self.tensor(node.orelse, env, depth)
            return (ValueType("tensor"), _CERTAIN) if body == _CERTAIN and orelse == _CERTAIN else None
        return None

    def returned_operand(self, operands: tuple[cst.BaseExpression, ...], env: _Env, depth: int) -> _Typed:
        """``scale(x) * 2``: arithmetic on what a project call gives is a tensor when that is one."""
        return _arithmetic_on_returned([self.typed(operand, env, depth + 1) for operand in operands])

    def tensor(self, node: cst.BaseExpression, env: _Env, depth: int) -> frozenset[Condition] | None:
        """The conditions under which ``node`` is one tensor (empty: certainly), or None if it is not."""
        return _tensor_of(self.typed(node, env, depth + 1))

    def name_type(self, node: cst.Name, env: _Env, depth: int) -> _Typed:
        found = self.lookup(node.value, env)
        if found is None:
            return None
        binding, innermost = found
        if binding.annotation is not None:
            annotated = self.annotation_type(binding.annotation)
            if annotated is not None:
                return annotated, _CERTAIN
        inner_env = self.inside(node.value, binding, innermost, env)
        if self.watched and id(binding) in self.watched:
            self.read_watched = True
        if binding.assumed is not None:  # a parameter, while a summary is computed
            return _ASSUMED.get(binding.assumed, ValueType(binding.assumed)), _CERTAIN
        if binding.iterated is not None:
            if binding.position is not None:
                return self.unpacked_item(binding.iterated, binding.position, inner_env, depth + 1)
            return self.element_type(binding.iterated, inner_env, depth + 1)
        if binding.unpacked is not None and isinstance(binding.unpacked[0], (cst.Tuple, cst.List)):
            item = literal_item(*binding.unpacked)  # ``a, b = torch.ones(2), torch.zeros(2)``
            return self.typed(item, inner_env, depth + 1) if item is not None else None
        if binding.value is None or binding.opaque or self.is_new_container(binding.value):
            return None
        return self.typed(binding.value, inner_env, depth + 1)

    def call_type(self, node: cst.Call, env: _Env, depth: int) -> _Typed:
        qualname = self.ctx.callee(node)
        if qualname is not None:
            return self.function_type(qualname, node, env, depth)
        called = method_call(node)
        if called is not None:
            receiver, method = called
            if method in _bulk_methods() and self.is_self_or_attr(receiver, env):
                return self.bulk_type(receiver, method, env)
            if method == "get":
                read = self.entry_read(receiver, node, env, depth)
                if read is not None:
                    return read
            typed = self.typed(receiver, env, depth + 1)
            if typed is not None and typed[0].kind == "returned":  # a project call's result: the index follows on
                return self.chained(typed, method, node, env, depth)
            if typed is not None:
                found = self.method_type(typed[0], method, node)
                if found is not None:
                    return found, typed[1]
                # ``net.weights()`` on a project class deriving from a library one: its own method's result.
                if typed[0].project or not typed[1]:
                    return self.project_call(f"{typed[0].project}.{method}", node, env, depth, receiver) \
                        if typed[0].project else None
            if method in _bulk_methods():
                return self.bulk_type(receiver, method, env)
            owner = self.project_instance(receiver, env) if self.deferred else None
            if owner is not None:  # ``self.weights()``, ``Agent().weights()``: what the method returns
                return self.project_call(f"{owner}.{method}", node, env, depth, receiver)
        inlined = self.inlined_call(node, env, depth)
        if inlined is not None:
            return inlined
        callable_ = self.attr_object(node.func) or self.typed(node.func, env, depth + 1)
        if callable_ is not None and callable_[0].kind == "returned":  # ``make_net()(x)``, ``ValueNet()(x)``
            return self.chained(callable_, "()", node, env, depth)
        if callable_ is not None and callable_[0].project is not None:
            own = self.own_call(callable_[0], node, env, depth)
            if own is not None:
                return own
        if callable_ is not None and callable_[0].kind == "object":
            found = self.object_call(callable_[0], node, env, depth)
            return (found, callable_[1]) if found is not None else None
        return None

    def function_type(self, qualname: str, node: cst.Call, env: _Env, depth: int) -> _Typed:
        if qualname in _COPIES:  # list(model.parameters()), dict(state), sorted(losses)
            args = positional(node)
            inner = self.typed(args[0].value, env, depth + 1) if len(args) == 1 else None
            if inner is not None and inner[0].kind in ("tensors", "tensor_iter", "bulk"):
                return ValueType("bulk" if inner[0].kind == "tensor_iter" else inner[0].kind), inner[1]
        terms = builtin_terms(qualname, node)
        if terms is not None:  # ``max(losses)``, ``abs(t)``, ``sorted(xs)``: from typeshed's stubs
            return _combine_alternatives([self.term_type(term, node, env, depth) for term in terms])
        spec = self.model.function(qualname)
        if isinstance(spec, str) and spec.startswith("@"):
            value = self.instance(spec[1:])
            return (value, _CERTAIN) if value is not None else None
        if spec is None:
            return self.static_type(qualname, node) or self.project_call(qualname, node, env, depth)
        kind = _kind_of_call(spec, node)
        return (ValueType(kind), _CERTAIN) if kind is not None else None

    def static_type(self, qualname: str, node: cst.Call) -> _Typed:
        """A project class built (``Net()``), or a class's own method called (``TensorDict.from_dict(...)``)."""
        if self.project_class(qualname) is not None:
            value = self.instance(qualname)
            return (value, _CERTAIN) if value is not None else None
        owner, _, method = qualname.rpartition(".")
        cls = self.instance(owner) if self.model.class_name(owner) is not None else None
        found = self.method_type(cls, method, node) if cls is not None else None
        return (found, _CERTAIN) if found is not None else None

    def project_call(self, qualname: str, node: cst.Call, env: _Env, depth: int,
                     receiver: cst.BaseExpression | None = None) -> _Typed:
        """What a call of a project function or method gives: asked of the complete index (deferred only),
        with the kinds of the arguments it passes, and for a method, of those the call that built its
        receiver passed (``Evaluator(env)``: the members storing them hold them)."""
        if not self.deferred or not may_be_project(qualname):
            return None
        built = self.ctx.value_of(receiver) if receiver is not None else None
        built_kinds = self.arg_kinds(built, env, depth + 1) if isinstance(built, cst.Call) \
            and self.ctx.callee(built) is not None else ()
        return ValueType("returned"), frozenset({Returns(qualname, self.arg_kinds(node, env, depth), built=built_kinds)})

    def inlined_call(self, node: cst.Call, env: _Env, depth: int) -> _Typed:
        """Calling a name bound to a lambda (its body, with the parameters given the arguments' kinds) or
        to ``functools.partial(f, ...)`` (``f`` called with the bound arguments, then these)."""
        if not isinstance(node.func, cst.Name) or depth > MAX_DEPTH:
            return None
        found = self.lookup(node.func.value, env)
        if found is None or found[0].opaque or found[0].value is None:
            return None
        bound, inner_env = found[0].value, self.inside(node.func.value, found[0], found[1], env)
        if isinstance(bound, cst.Call) and self.ctx.callee(bound) == "functools.partial" and bound.args \
                and bound.args[0].keyword is None and not bound.args[0].star:
            given, bound_args = list(node.args), list(bound.args[1:])
            if any(arg.star for arg in (*given, *bound_args)):
                return None
            keywords = {arg.keyword.value for arg in given if arg.keyword is not None}
            merged = cst.Call(func=bound.args[0].value, args=[  # what the partial passes: its own arguments first
                *(a for a in bound_args if a.keyword is None), *(a for a in given if a.keyword is None),
                *(a for a in bound_args if a.keyword is not None and a.keyword.value not in keywords),
                *(a for a in given if a.keyword is not None)])
            return self.typed(merged, inner_env, depth + 1)
        if isinstance(bound, cst.Lambda) and not any(arg.star or arg.keyword for arg in node.args):
            from rlguard.engine.context import Binding  # context imports this module at load time

            params = bound.params.params
            if isinstance(bound.params.star_arg, (cst.Param, cst.ParamStar)) or bound.params.kwonly_params \
                    or bound.params.star_kwarg is not None or len(params) != len(node.args):
                return None
            lambda_env, passed = dict(inner_env), set[Condition]()
            for param, arg in zip(params, node.args, strict=True):
                typed = self.typed(arg.value, env, depth + 1)
                kind = typed[0].kind if typed is not None else None
                if typed is not None and typed[1]:  # a kind under conditions: the result is under them too
                    passed |= typed[1]
                    kind = "tensor" if kind == "returned" else kind  # what a project call gives: taken as a tensor
                lambda_env[param.name.value] = (Binding(assumed=kind), True) if kind is not None else None
            result = self.typed(bound.body, lambda_env, depth + 1)
            return (result[0], result[1] | passed) if result is not None else None
        return None

    def chained(self, typed: _Typed, method: str, node: cst.Call, env: _Env, depth: int) -> _Typed:
        """A call on what a project call gives (``make_net()(x).mean()``): the index follows the chain."""
        return self.chained_link(typed, (method, frozen_shape(node), self.arg_kinds(node, env, depth)))

    def chained_link(self, typed: _Typed, link: tuple[str, Shape, ArgKinds]) -> _Typed:
        """What a project call gives, followed by one more call or attribute read (``Returns.chain``)."""
        assert typed is not None
        conditions = [c for c in typed[1] if isinstance(c, Returns)]
        if len(conditions) != 1 or len(typed[1]) != 1 or len(conditions[0].chain) >= _MAX_CHAIN:
            return None
        first = conditions[0]
        return ValueType("returned"), frozenset({replace(first, chain=first.chain + (link,))})

    def own_call(self, value: ValueType, node: cst.Call, env: _Env, depth: int) -> _Typed:
        """Calling an instance of a project class of this file that defines ``__call__``, or an ``nn.Module``
        subclass defining ``forward``: what that method returns."""
        assert value.project is not None
        if self.overridden(value, "__call__"):
            return self.project_call(f"{value.project}.__call__", node, env, depth)
        if self.overridden(value, "forward") and self.model.class_kind(value.cls or "") in ("module", "tdmodule"):
            return self.project_call(f"{value.project}.forward", node, env, depth)
        return None

    def arg_kinds(self, node: cst.Call, env: _Env, depth: int) -> ArgKinds:
        """(position or keyword, kind) of a call's arguments that are certainly tensors or TensorDicts."""
        found: list[tuple[int | str, str | Returns | KindIf]] = []
        position = 0
        for arg in node.args:
            if arg.star:
                break  # later positions are unknown
            typed = self.typed(arg.value, env, depth + 1) or self.container_type(arg.value, env, depth + 1)
            kind: str | Returns | KindIf | None = arg_kind(typed[0]) if typed is not None and not typed[1] else None
            condition = next(iter(typed[1])) if typed is not None and len(typed[1]) == 1 else None
            if typed is not None and typed[0].kind == "returned" and isinstance(condition, Returns):
                kind = condition  # what a project call gives: the index answers it
            elif typed is not None and typed[1] and arg_kind(typed[0]) is not None:  # ``[scale(t)]``, ``half(scale(t))``
                kind = KindIf(arg_kind(typed[0]) or "", typed[1])
            elif typed is not None and typed[0].kind == "object" and typed[0].project is not None:
                kind = self.fields_kind(arg.value, env, depth)
            slot: int | str = arg.keyword.value if arg.keyword is not None else position
            if kind is not None:
                found.append((slot, kind))
            position += arg.keyword is None
        return tuple(found)

    def fields_kind(self, node: cst.BaseExpression, env: _Env, depth: int) -> str | KindIf | None:
        """"fields" for an instance of a project class whose fields hold tensors: certainly (the call that
        built it was given one), or when the class declares or assigns one (``TensorFields``)."""
        fields = self.field_leaves(node, env, depth + 1, (), ()) or []
        if any(leaf.certain for leaf in fields):
            return FIELDS
        return KindIf(FIELDS, frozenset().union(*(leaf.when for leaf in fields))) if fields else None

    def object_call(self, value: ValueType, node: cst.Call, env: _Env, depth: int) -> ValueType | None:
        """Calling an object: a TensorDict module or a loss gives a TensorDict; another module given
        tensors gives tensors (``net(x)``)."""
        if value.cls is None or self.overridden(value, "__call__"):
            return None
        spec = self.model.method(value.cls, "__call__")
        if spec is None and not self.overridden(value, "forward"):
            spec = self.model.method(value.cls, "forward")
        kind = _kind_of_call(spec, node) if spec is not None else None
        if kind == "tensordict" and self.model.class_kind(value.cls) == "loss":
            return ValueType("losses")
        if kind is not None:
            return ValueType(kind)
        if self.model.class_kind(value.cls) == "module" and any(
                self.holds_tensors(arg.value, env, depth) for arg in node.args):
            return ValueType("mixed")
        return None

    def holds_tensors(self, node: cst.BaseExpression, env: _Env, depth: int) -> bool:
        typed = self.typed(node, env, depth + 1)
        return typed is not None and not typed[1] and typed[0].kind in _HOLDS_TENSORS

    def subscript_type(self, node: cst.Subscript, env: _Env, depth: int) -> _Typed:
        index = constant_index(node)
        if index is not None and isinstance(node.value, cst.Name):  # ``pair[1] for pair in enumerate(xs)``
            found = self.lookup(node.value.value, env)
            if found is not None and found[0].iterated is not None and found[0].position is None:
                inner_env = self.inside(node.value.value, found[0], found[1], env)
                return self.unpacked_item(found[0].iterated, index, inner_env, depth + 1)
        inner = self.typed(node.value, env, depth + 1)
        if inner is None:
            return None
        if is_full_slice(node) and inner[0].kind in ("tensor", "tensors", "tensordict", "returned", "holds"):
            return inner  # ``x[:]``: the same kind of value (a project call's: the index answers it)
        if any(isinstance(element.slice, cst.Slice) for element in node.slice):
            # A part of a tensor, or of a list whose every item is one (``sorted(xs)[:3]``), is the same
            # kind; a part of anything else may leave its tensors out. Never one item.
            return inner if inner[0].kind in ("tensor", "tensors", "tensordict") else None
        element = _ITEM_KINDS.get(inner[0].kind)
        return (ValueType(element), inner[1]) if element else None

    def entry_read(self, receiver: cst.BaseExpression, node: cst.Call, env: _Env, depth: int) -> _Typed:
        """``td.get(key)``, an entry read as ``td[key]`` reads it; with a default (which it may give
        instead), unknown."""
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return None
        inner = self.typed(receiver, env, depth + 1)
        if inner is None or inner[0].kind not in ("tensordict", "losses"):
            return None
        return ValueType(_ITEM_KINDS[inner[0].kind]), inner[1]


def _tensor_of(typed: _Typed) -> frozenset[Condition] | None:
    """The conditions under which a value of this type is one tensor (empty: certainly); None if it is not."""
    return typed[1] if typed and typed[0].kind == "tensor" else None


def _arithmetic_on_returned(operands: list[_Typed]) -> _Typed:
    """An operator applied to what a project call gives (``scale(x) * 2``): a tensor when that is one,
    which the index answers (``Returns.chain``)."""
    for typed in operands:
        if typed is not None and typed[0].kind == "returned":
            conditions = [c for c in typed[1] if isinstance(c, Returns)]
            if len(conditions) == 1 and len(typed[1]) == 1 and len(conditions[0].chain) < _MAX_CHAIN:
                first = conditions[0]
                return ValueType("returned"), frozenset(
                    {replace(first, chain=first.chain + ((_ARITHMETIC, None, ()),), attribute=False)})
    return None


def _container_operation(operator: cst.BaseBinaryOp, operands: list[_Typed]) -> _Typed:
    """``xs * 2``, ``xs + ys``, ``d | e`` where an operand is a container holding tensors that is not built
    here (a parameter given one, while a summary is computed): a container of that type holding them."""
    for typed in operands:
        if typed is not None and typed[0].kind == "holds" and \
                type(operator).__name__ in _CONTAINER_OPERATORS.get(typed[0].container or "", ()):
            return typed
    return None
