"""Shared matching helpers: call names, keyword arguments, tensor-valued inference.

Used by the engine (context, index) and by several rules; nothing here is specific to one rule.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal, NamedTuple

from rlguard.engine.lazy import cst

from rlguard.engine.apimodel import TENSOR, TENSORDICT, CallShape, model, select
from rlguard.engine.builtins_model import Term
from rlguard.engine.annotations import annotated_type
from rlguard.engine.containers import (
    ITEM_VIEWS,
    builtin_terms,
    combined_kind,
    comprehension_env,
    constant_index,
    container_kind,
    is_full_slice,
    item_kind,
    literal_item,
    positional_arg,
    term_args,
    value_kind,
)

if TYPE_CHECKING:
    from rlguard.engine.context import Added, Binding, FileContext
    from rlguard.engine.index import AttrFact, ClassFacts, ProjectIndex


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


# ----------------------------------------------------------------------------------------------
# Tensor-valued inference.
#
# An expression is tensor-valued when it evaluates to a torch tensor or to a value holding
# tensors: a dict, list, tuple or comprehension of them, the tuple ``torch.sort`` returns,
# ``model.parameters()``, a ``state_dict()``, a TensorDict or one of its entries, what a module
# gives for tensors. ``tensor_leaves`` finds the parts that hold them, following names to what
# they were bound to, so a rule can name them and a fix can convert them.
# What library calls give is read from the API model (``engine/apimodel.json``, generated from
# torch, tensordict and torchrl): an expression it cannot type is unknown, and never a tensor.

MAX_DEPTH = 24  # nested steps followed: names, containers, items, calls

# "tensor": one tensor (``.tolist()`` converts it); "tensors": a tuple of tensors (``torch.sort``,
# ``x.chunk(2)``, ``x.max(dim=0)``); "bulk": many tensors at once (``parameters()``, ``state_dict()``,
# ``td.to_dict()``); "tensordict": a TensorDict; "mixed": a tensor or something holding tensors, which
# of them unknown (an entry of a loss's output, what a module returns, an item of ``parameters()``).
# Not leaves: "entry", an entry of another TensorDict (it may hold non-tensor data, a string), which
# becomes "mixed" once a tensor method is called on it; "losses", the TensorDict a loss returns (a
# TensorDict whose entries are tensors).
# "holds": a container holding tensors, as a project function returns it (``return {"w": w}``).
LeafKind = Literal["tensor", "tensors", "bulk", "tensordict", "mixed", "holds"]


# Questions only the complete project index answers (see ``condition_kind``): typed requirements that
# a rule hands on with its finding, and that the cache keeps as they are.
@dataclass(frozen=True)
class TensorAttr:
    """The class (or the first ancestor assigning it) assigns ``self.<attr>`` a tensor-valued expression."""

    cls: str
    attr: str


@dataclass(frozen=True)
class TorchMethod:
    """No class of the project in the class's MRO defines ``method``: it is torch's, and holds tensors."""

    cls: str
    method: str


@dataclass(frozen=True)
class AttrTorchMethod:
    """The same as ``TorchMethod`` for the classes ``self.<attr>`` of ``cls`` is built from."""

    cls: str
    attr: str
    method: str


@dataclass(frozen=True)
class KindIf:
    """An argument of a summary kind (``SUMMARY_KINDS``) when one of the conditions holds (``[scale(t)]``:
    a list holding tensors when ``scale`` gives one)."""

    kind: str
    when: frozenset[Condition]


# A call as the value model keeps it: (positional count, keywords with their True/False literal or None).
Shape = tuple[int, tuple[tuple[str, bool | None], ...]] | None
# (position or keyword, kind) of the arguments of a call whose kind is known: a kind, or what a project
# call gives (``scale(scale(x))``), which the index answers first.
ArgKinds = tuple[tuple[int | str, "str | Returns | KindIf"], ...]


@dataclass(frozen=True)
class Returns:
    """A call of the project function, method or class ``qualname`` (passing ``args``), followed by the
    calls in ``chain`` on its result, gives a tensor-valued value of one kind (see ``returned_value``).

    Each link of ``chain`` is (method, shape, args); the method "()" calls the value itself
    (``ValueNet()(obs)``, which goes through ``forward``)."""

    qualname: str
    args: ArgKinds = ()
    chain: tuple[tuple[str, Shape, ArgKinds], ...] = ()
    attribute: bool = False  # ``qualname`` is read as an attribute (a property), not called


@dataclass(frozen=True)
class TensorFields:
    """A field of the project class (declared in its body or assigned in a method, along its MRO) is
    tensor-valued: ``dataclasses.asdict`` of an instance holds tensors."""

    cls: str


Condition = TensorAttr | TorchMethod | AttrTorchMethod | Returns | TensorFields
_CERTAIN: frozenset[Condition] = frozenset()
# API model kinds that are leaves, and the leaf kind each gives.
_LEAF_KINDS: dict[str, LeafKind] = {
    "tensor": "tensor", "tensors": "tensors", "tensor_iter": "bulk", "bulk": "bulk", "tensordict": "tensordict",
    "mixed": "mixed", "losses": "tensordict", "holds": "holds",
    "returned": "mixed",  # what a project callable returns: its kind comes from the index (``condition_kind``)
}
_HOLDS_TENSORS = frozenset(_LEAF_KINDS)
_SEQUENCE_TYPES = frozenset({"builtins.list", "builtins.tuple", "typing.List", "typing.Tuple", "typing.Sequence",
                             "collections.abc.Sequence", "typing.Iterable", "collections.abc.Iterable"})
_MAPPING_TYPES = frozenset({"builtins.dict", "typing.Dict", "typing.Mapping", "collections.abc.Mapping",
                            "typing.OrderedDict", "collections.OrderedDict"})
_COPIES = frozenset({"builtins.list", "builtins.tuple", "builtins.sorted", "builtins.dict"})


class Leaf(NamedTuple):
    """One tensor-valued part of an expression."""

    node: cst.BaseExpression  # the expression to name or convert
    kind: LeafKind
    when: frozenset[Condition] = _CERTAIN  # tensor-valued only if one of these holds; empty: certainly
    bindings: tuple[Binding, ...] = ()  # name bindings followed to reach the leaf, outermost first
    via: tuple[cst.Name, ...] = ()  # references to the containers followed (``m`` in ``m = {"a": t}; dumps(m)``)
    local: bool = True  # every binding followed is in the innermost scope (and the leaf is written there)
    encodable: bool = True  # only inside containers JSON encodes (not a set or a generator)

    @property
    def certain(self) -> bool:
        return not self.when


class ValueType(NamedTuple):
    """What an expression is: an API model kind, or ``object`` of a class (``cls``, its model name)."""

    kind: str
    cls: str | None = None  # for objects: the nearest class the API model knows
    project: str | None = None  # for objects of a project class: its qualified name
    container: str | None = None  # for "holds": the type of container ("dict", "list", ...), when known


def tensor_leaves(node: cst.BaseExpression, ctx: FileContext, *, deferred: bool = False) -> list[Leaf]:
    """The tensor-valued parts of ``node``, looking into literals, comprehensions and name bindings.

    Without ``deferred``, facts not yet known (``self.x`` assigned later in the class, a method a
    linted class may define) count as not tensor-valued. With it, such parts are returned with the
    conditions (``Leaf.when``) that the complete index answers through ``condition_holds``.
    """
    return _Inference(ctx, deferred).leaves(node, {}, 0, (), (), True, True)


def argument_kinds(call: cst.Call, ctx: FileContext) -> tuple[tuple[int | str, str], ...]:
    """(position or keyword, kind) of the arguments of a call that are certainly tensors or TensorDicts."""
    return tuple((slot, kind) for slot, kind in _Inference(ctx, deferred=False).arg_kinds(call, {}, 0)
                 if isinstance(kind, str) and kind in _ARG_KINDS.values())


def annotated_tensors(annotation: cst.BaseExpression, ctx: FileContext) -> bool:
    """An annotation that promises a tensor-valued value (``torch.Tensor``, ``dict[str, Tensor]``)."""
    declared = _Inference(ctx, deferred=False).annotation_type(annotation)
    return declared is not None and declared.kind in _HOLDS_TENSORS


def is_tensor_valued(node: cst.BaseExpression, ctx: FileContext) -> bool:
    """Whether ``node`` certainly evaluates to a tensor or to a value holding tensors."""
    return any(leaf.certain for leaf in tensor_leaves(node, ctx))


def may_be_project(qualname: str) -> bool:
    """A callable that may be the project's own: not a builtin, nor of the standard library or a
    library the API model covers (those are typed by the model, or unknown)."""
    top = qualname.partition(".")[0]
    return top not in _NOT_PROJECT and top not in sys.stdlib_module_names and not qualname.startswith("<")


_NOT_PROJECT = frozenset({"builtins", "torch", "tensordict", "torchrl", "numpy", "typing_extensions"})


# Methods of a TensorDict that give a TensorDict on the same device as the receiver (None stays None).
_KEEPS_DEVICE = frozenset({"clone", "select", "exclude", "copy", "contiguous", "detach", "unsqueeze", "squeeze",
                           "reshape", "view", "flatten_keys", "unflatten_keys"})


def unplaced_tensordict(node: cst.BaseExpression, ctx: FileContext, depth: int = 0) -> bool:
    """Whether ``node`` certainly is a TensorDict built right here with no device: ``TensorDict(...)`` or
    ``TensorDict.from_dict(...)`` without ``device=`` (or with ``device=None``), through names bound once
    in the scope and methods that keep the device (``.clone()``, ``.select(...)``). A ``.to(...)``, a
    ``**kwargs`` that may carry a device, a name bound twice: not certain, so False."""
    while isinstance(node, cst.Name) and depth <= MAX_DEPTH:
        binding = ctx.lookup(node.value)
        if binding is None or binding.opaque or binding.value is None or binding.previous is not None:
            return False
        node, depth = binding.value, depth + 1
    if not isinstance(node, cst.Call) or depth > MAX_DEPTH:
        return False
    called = method_call(node)
    callee = ctx.callee(node)
    if callee is None and called is not None:
        return called[1] in _KEEPS_DEVICE and unplaced_tensordict(called[0], ctx, depth + 1)
    if callee is None or has_star_kwargs(node) or any(arg.star for arg in node.args):
        return False
    owner, _, method = callee.rpartition(".")
    device = keyword(node, "device")
    if device is not None:
        return is_none(device.value)
    if is_tensordict_class(callee):
        args = positional(node)
        return len(args) < 3 or is_none(args[2].value)
    return method == "from_dict" and is_tensordict_class(owner) and len(positional(node)) <= 1


# torchrl.data exported TensorDict in torchrl's first releases, before tensordict was its own package.
_OLD_TENSORDICT_PATHS = frozenset({"torchrl.data.TensorDict"})


def is_tensordict_class(qualname: str) -> bool:
    """The ``TensorDict`` class itself (not another TensorDict type), under any of its import paths."""
    if qualname in _OLD_TENSORDICT_PATHS:
        return True
    return qualname.startswith("tensordict.") and model().class_name(qualname) == model().class_name("tensordict.TensorDict")


def attr_facts(index: ProjectIndex, cls: str, attr: str, path: str) -> list[AttrFact]:
    """Assignments of ``self.attr`` in the first class of the ancestry that makes any."""
    for _, facts in index.ancestry(cls, near=path):
        if facts is not None and attr in facts.attrs:
            return facts.attrs[attr]
    return []


def _plain_state(qualname: str) -> bool:
    """Objects of the class hold plain values in ``state_dict()`` (a learning-rate scheduler)."""
    return model().method(qualname, "state_dict") == "value"


@cache
def _bulk_methods() -> frozenset[str]:
    """Methods of ``nn.Module`` that return many tensors at once: whatever the receiver, these are taken to."""
    return model().methods_of_kind("torch.nn.Module", frozenset({"tensor_iter", "bulk"}))


def call_shape(call: cst.Call) -> CallShape | None:
    """What a call passes, for choosing among overloads; None when ``*args`` hides it."""
    if any(arg.star for arg in call.args):
        return None
    keywords = {arg.keyword.value: _bool_literal(arg.value) for arg in call.args if arg.keyword is not None}
    return CallShape(len(positional(call)), keywords)


def _bool_literal(node: cst.BaseExpression) -> bool | None:
    return {"True": True, "False": False}.get(node.value) if isinstance(node, cst.Name) else None


def _kind_of_call(spec: object, call: cst.Call) -> str | None:
    return _kind_for_shape(spec, call_shape(call))


def _kind_for_shape(spec: object, shape: CallShape | None) -> str | None:
    if shape is None:
        return spec if isinstance(spec, str) else None
    return select(spec, shape)


def _method_value(receiver: ValueType, method: str, shape: CallShape | None) -> ValueType | None:
    """What ``receiver.method(...)`` gives, by the API model, for a receiver of a library type."""
    if receiver.kind == "object":
        if receiver.cls is None:
            return None
        kind = _kind_for_shape(model().method(receiver.cls, method), shape)
        if kind == "self":
            return receiver
        return ValueType(kind) if kind is not None else None
    if receiver.kind in ("mixed", "entry"):  # a tensor or a TensorDict: the result holds tensors if it does for both
        as_tensor = _method_value(ValueType("tensor"), method, shape)
        if as_tensor is None or as_tensor.kind not in _HOLDS_TENSORS:
            return None
        as_tensordict = _method_value(ValueType("tensordict"), method, shape)
        return as_tensor if as_tensor == as_tensordict else ValueType("mixed")
    cls = receiver.cls or {"tensor": TENSOR, "tensordict": TENSORDICT, "losses": TENSORDICT}.get(receiver.kind)
    if cls is None:
        return None
    kind = _kind_for_shape(model().method(cls, method), shape)
    if kind == "self":
        return receiver
    return ValueType(kind) if kind is not None else None


def frozen_shape(call: cst.Call) -> Shape:
    shape = call_shape(call)
    return (shape.positional, tuple(sorted(shape.keywords.items()))) if shape is not None else None


# What a name means while a bound expression is analysed: overrides of the scope's bindings.
# None: unknown (a name bound before the first binding we know of).
_Env = dict[str, tuple["Binding", bool] | None]
# (type, conditions) of a single value, or None when unknown.
_Typed = tuple[ValueType, frozenset[Condition]] | None
# (leaf kind, conditions) of a single value, or None when it is not tensor-valued.
_Kind = tuple[LeafKind, frozenset[Condition]] | None


class _Inference:
    def __init__(self, ctx: FileContext, deferred: bool) -> None:
        self.ctx = ctx
        self.deferred = deferred
        self.model = model()

    # ----- names -----
    def lookup(self, name: str, env: _Env) -> tuple[Binding, bool] | None:
        """(binding, whether it is in the innermost scope) for a name, honouring ``env``."""
        if name in env:
            return env[name]
        return self.ctx.find_binding(name)

    @staticmethod
    def inside(name: str, binding: Binding, local: bool, env: _Env) -> _Env:
        """The environment in which ``binding.value`` was evaluated: ``x = x.mean()`` reads the old ``x``."""
        return {**env, name: (binding.previous, local) if binding.previous is not None else None}

    def annotation_type(self, annotation: cst.BaseExpression, depth: int = 0) -> ValueType | None:
        """What an annotation promises: ``Tensor``, ``TensorDictBase``, ``LSTMModule``, ``Dict[str, List[Tensor]]``."""
        spelled = annotated_type(annotation)
        if spelled is None or depth > 4:
            return None
        if isinstance(spelled, cst.Subscript):
            origin = self.ctx.qualname(spelled.value)
            args = [e.slice.value for e in spelled.slice if isinstance(e.slice, cst.Index)]
            if origin in _SEQUENCE_TYPES and args:
                items = [self.annotation_type(arg, depth + 1) for arg in args if not _is_ellipsis(arg)]
                holds = items and all(item is not None and item.kind in _HOLDS_TENSORS for item in items)
                return ValueType("tensors") if holds else None
            if origin in _MAPPING_TYPES and len(args) == 2:
                item = self.annotation_type(args[1], depth + 1)
                return ValueType("bulk") if item is not None and item.kind in _HOLDS_TENSORS else None
            return None
        qualname = self.ctx.qualname(spelled)
        return self.instance(qualname) if qualname is not None else None

    def instance(self, qualname: str) -> ValueType | None:
        """An object of a class: a library class the model knows, or a project class deriving from one."""
        own = self.model.class_name(qualname)
        if own is not None:
            kind = self.model.class_kind(own)
            return ValueType(kind if kind in ("tensor", "tensordict") else "object", own)
        base = self.modelled_base(qualname)
        return ValueType("object", base, qualname) if base is not None else None

    def modelled_base(self, qualname: str) -> str | None:
        """The first library class the model knows in a project class's ancestry (same file, or the index)."""
        pending, seen = [qualname], set[str]()
        while pending:
            name = pending.pop(0)
            if name in seen or len(seen) > 32:
                continue
            seen.add(name)
            own = self.model.class_name(name)
            if own is not None:
                return own
            facts = self.project_class(name)
            if facts is not None:
                pending = [*facts.bases, *pending]
        return None

    def project_class(self, qualname: str) -> ClassFacts | None:
        """A class of this file. Other files' classes are the index's to answer, through conditions: the
        walk answers alike whether or not an index is at hand (the passes that place and fix findings
        have one, the check has not), so every pass makes the same reports."""
        return self.ctx.facts.classes.get(qualname)

    def overridden(self, value: ValueType, method: str) -> bool:
        """A project class between the object's class and the modelled base defines ``method``."""
        pending, seen = [value.project] if value.project else [], set()
        while pending:
            name = pending.pop(0)
            facts = None if name in seen or self.model.class_name(name) else self.project_class(name)
            seen.add(name)
            if facts is not None:
                if method in facts.methods:
                    return True
                pending.extend(facts.bases)
        return False

    # ----- containers -----
    def leaves(self, node: cst.BaseExpression, env: _Env, depth: int, bindings: tuple, via: tuple,
               local: bool, encodable: bool, consumed: bool = False) -> list[Leaf]:
        """The tensor-valued parts of ``node``. ``consumed``: something iterates ``node`` itself (``list(s)``),
        so that it is a set, a generator or an iterator does not keep its parts from being encoded."""
        if depth > MAX_DEPTH:
            return []
        if isinstance(node, cst.Name):
            found = self.lookup(node.value, env)
            if found is None:
                return []
            binding, innermost = found
            local = local and innermost
            if binding.value is not None and self.is_new_container(binding.value) and not binding.opaque:
                inner_env = self.inside(node.value, binding, innermost, env)
                found_leaves = self.leaves(binding.value, inner_env, depth + 1, bindings + (binding,), via + (node,),
                                           local, encodable, consumed)
                # ``metrics[k] = loss`` in a loop: the values added, named where they were added.
                return found_leaves + [leaf for added in binding.added for leaf in self.leaves(
                    added.value, _pinned(env, added), depth + 1, bindings + (binding,), via + (node,), False, encodable)]
            if binding.iterated is not None and self.kind(node, env, depth) is None:
                inner_env = self.inside(node.value, binding, innermost, env)
                return self.item_leaves(binding, binding.position, inner_env, depth, bindings, via)
        if isinstance(node, cst.Subscript) and is_full_slice(node) and self.kind(node, env, depth) is None:
            return self.leaves(node.value, env, depth + 1, bindings, via, local, encodable)  # ``xs[:]``: a copy
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and self.kind(node, env, depth) is None:
            index, found = constant_index(node), self.lookup(node.value.value, env)  # ``pair[1]``
            if index is not None and found is not None and found[0].iterated is not None and found[0].position is None:
                inner_env = self.inside(node.value.value, found[0], found[1], env)
                return self.item_leaves(found[0], index, inner_env, depth, bindings, via)
        if isinstance(node, cst.Dict):  # ``{"a": t, **summarize(batch)}``: values, and those of what is unpacked
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
        if isinstance(node, cst.BinaryOperation) and self.is_new_container(node):  # ``xs + [t]``, ``[t] * 2``
            return [leaf for operand in (node.left, node.right)
                    for leaf in self.leaves(operand, env, depth + 1, bindings, via, local, encodable)]
        kind, followed = self.kind(node, env, depth), self.followed(node, env)
        if kind is None:
            return self.passed_on(node, followed, env, depth, bindings, via, encodable, consumed)
        if followed is not None:
            local = local and followed[1]
        return [Leaf(node, kind[0], kind[1], bindings + ((followed[0],) if followed else ()), via, local, encodable)]

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

    def items(self, node: cst.BaseExpression, env: _Env, depth: int, values: bool) -> list[list[Leaf]] | None:
        """Per item of a container (per value of a dict, with ``values``; a dict's items are otherwise its
        keys): its tensor-valued parts; None when unknown."""
        if depth > MAX_DEPTH:
            return None
        leaves = self.leaves
        if isinstance(node, cst.Name):
            bound = self.lookup(node.value, env)
            if bound is None:
                return None
            binding, innermost = bound
            if binding.opaque or binding.value is None or not self.is_new_container(binding.value):
                return None
            inner = self.items(binding.value, self.inside(node.value, binding, innermost, env), depth + 1, values)
            if inner is None:
                return None
            for added in binding.added:
                added_env = _pinned(env, added)
                more = self.items(added.value, added_env, depth + 1, values) if added.spread \
                    else [leaves(added.value, added_env, depth + 1, (), (), False, True)]
                if more is None:
                    return None
                inner += more
            return inner
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

    # ----- items of containers -----
    def element_type(self, iterated: cst.BaseExpression, env: _Env, depth: int) -> _Typed:
        """What one item of ``iterated`` is: what ``for x in iterated`` binds, what ``max(iterated)`` gives."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(iterated, cst.Name):
            found = self.lookup(iterated.value, env)
            if found is None:
                return None
            binding, innermost = found
            if binding.value is not None and not binding.opaque and self.is_new_container(binding.value):
                if container_kind(binding.value, self.ctx) == "dict":
                    return None  # a dict's items are its keys
                inner_env = self.inside(iterated.value, binding, innermost, env)
                parts = [self.element_type(binding.value, inner_env, depth + 1) if binding.value is not None else None]
                parts += [self.element_type(a.value, _pinned(env, a), depth + 1) if a.spread
                          else self.typed(a.value, _pinned(env, a), depth + 1) for a in binding.added]
                return _combine(parts)
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
        if isinstance(node, cst.Name):
            found = self.lookup(node.value, env)
            if found is None:
                return None
            binding, innermost = found
            if binding.value is not None and not binding.opaque and self.is_new_container(binding.value):
                inner_env = self.inside(node.value, binding, innermost, env)
                parts = [self.dict_value(binding.value, inner_env, depth + 1)]
                parts += [self.dict_value(a.value, _pinned(env, a), depth + 1) if a.spread
                          else self.typed(a.value, _pinned(env, a), depth + 1) for a in binding.added]
                return _combine(parts)
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

    def followed(self, node: cst.BaseExpression, env: _Env) -> tuple[Binding, bool] | None:
        """The binding a name leaf was read from."""
        return self.lookup(node.value, env) if isinstance(node, cst.Name) else None

    # ----- single values -----
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
        if isinstance(node, cst.Name):
            return self.name_type(node, env, depth)
        if isinstance(node, cst.Call):
            return self.call_type(node, env, depth)
        if isinstance(node, cst.Subscript):
            return self.subscript_type(node, env, depth)
        if isinstance(node, cst.Attribute):
            return self.attribute_type(node, env, depth)
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Modulo) and isinstance(
                    node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                return None  # "%s" % t is a string
            return _either(self.tensor(node.left, env, depth), self.tensor(node.right, env, depth)) \
                or self.returned_operand((node.left, node.right), env, depth)
        if isinstance(node, cst.UnaryOperation):
            return None if isinstance(node.operator, cst.Not) else _as_tensor(self.tensor(node.expression, env, depth))
        if isinstance(node, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
                return None
            operands = [node.left, *(c.comparator for c in node.comparisons)]
            return _either(*(self.tensor(operand, env, depth) for operand in operands))
        if isinstance(node, cst.IfExp):
            body, orelse = self.tensor(node.body, env, depth), self.tensor(node.orelse, env, depth)
            return (ValueType("tensor"), _CERTAIN) if body == _CERTAIN and orelse == _CERTAIN else None
        return None

    def returned_operand(self, operands: tuple[cst.BaseExpression, ...], env: _Env, depth: int) -> _Typed:
        """``scale(x) * 2``: arithmetic on what a project call gives is a tensor when that is one."""
        for operand in operands:
            typed = self.typed(operand, env, depth + 1)
            if typed is not None and typed[0].kind == "returned":
                conditions = [c for c in typed[1] if isinstance(c, Returns)]
                if len(conditions) == 1 and len(typed[1]) == 1 and len(conditions[0].chain) < _MAX_CHAIN:
                    first = conditions[0]
                    return ValueType("returned"), frozenset(
                        {Returns(first.qualname, first.args, first.chain + ((_ARITHMETIC, None, ()),))})
        return None

    def tensor(self, node: cst.BaseExpression, env: _Env, depth: int) -> frozenset[Condition] | None:
        """The conditions under which ``node`` is one tensor (empty: certainly), or None if it is not."""
        typed = self.typed(node, env, depth + 1)
        return typed[1] if typed and typed[0].kind == "tensor" else None

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
            typed = self.typed(receiver, env, depth + 1)
            if typed is not None and typed[0].kind == "returned":  # a project call's result: the index follows on
                return self.chained(typed, method, node, env, depth)
            if typed is not None:
                found = self.method_type(typed[0], method, node)
                if found is not None:
                    return found, typed[1]
                # ``net.weights()`` on a project class deriving from a library one: its own method's result.
                if typed[0].project or not typed[1]:
                    return self.project_call(f"{typed[0].project}.{method}", node, env, depth) \
                        if typed[0].project else None
            if method in _bulk_methods():
                return self.bulk_type(receiver, method, env)
            owner = self.project_instance(receiver, env) if self.deferred else None
            if owner is not None:  # ``self.weights()``, ``Agent().weights()``: what the method returns
                return self.project_call(f"{owner}.{method}", node, env, depth)
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

    def project_call(self, qualname: str, node: cst.Call, env: _Env, depth: int) -> _Typed:
        """What a call of a project function or method gives: asked of the complete index (deferred only),
        with the kinds of the arguments it passes."""
        if not self.deferred or not may_be_project(qualname):
            return None
        return ValueType("returned"), frozenset({Returns(qualname, self.arg_kinds(node, env, depth))})

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
        return ValueType("returned"), frozenset({Returns(first.qualname, first.args, first.chain + (link,),
                                                         first.attribute)})

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
            slot: int | str = arg.keyword.value if arg.keyword is not None else position
            if kind is not None:
                found.append((slot, kind))
            position += arg.keyword is None
        return tuple(found)

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

    def method_type(self, receiver: ValueType, method: str, node: cst.Call) -> ValueType | None:
        """What ``receiver.method(...)`` gives."""
        if receiver.kind == "object" and (receiver.cls is None or self.overridden(receiver, method)):
            return None
        return _method_value(receiver, method, call_shape(node))

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
        if is_full_slice(node) and inner[0].kind in ("tensor", "tensors", "tensordict", "returned"):
            return inner  # ``x[:]``: the same kind of value (a project call's: the index answers it)
        if any(isinstance(element.slice, cst.Slice) for element in node.slice):
            # A part of a tensor, or of a list whose every item is one (``sorted(xs)[:3]``), is the same
            # kind; a part of anything else may leave its tensors out. Never one item.
            return inner if inner[0].kind in ("tensor", "tensors", "tensordict") else None
        element = {"tensor": "tensor", "tensors": "tensor", "tensordict": "entry", "losses": "mixed",
                   "mixed": "mixed", "entry": "entry"}.get(inner[0].kind)
        return (ValueType(element), inner[1]) if element else None

    def attribute_type(self, node: cst.Attribute, env: _Env, depth: int) -> _Typed:
        attr = self.ctx.is_self_attr(node)
        if attr is not None and node.value.value not in env:  # type: ignore[attr-defined]
            cls = self.ctx.current_class
            if cls is None:
                return None
            if self.deferred:  # an attribute the class assigns a tensor, or a property that gives one
                return ValueType("tensor"), frozenset({TensorAttr(cls.qualname, attr),
                                                       Returns(f"{cls.qualname}.{attr}", attribute=True)})
            return (ValueType("tensor"), _CERTAIN) if any(f.tensor for f in cls.attrs.get(attr, ())) else None
        name = node.attr.value
        inner = self.typed(node.value, env, depth + 1)
        if inner is not None and inner[0].kind == "returned":  # ``Stats().summary``: the index reads on
            return self.chained_link(inner, ("." + name, None, ()))
        if inner is None:
            owner = self.project_instance(node.value, env) if self.deferred else None
            if owner is not None and may_be_project(owner):  # ``stats.summary``: a property of a project class
                return ValueType("returned"), frozenset({Returns(f"{owner}.{name}", attribute=True)})
            return None
        if inner[0].kind == "tensor" and self.model.attribute(TENSOR, name) == "tensor":
            return ValueType("tensor"), inner[1]
        if inner[0].kind == "tensors" and name in self.model.tuple_fields:
            return ValueType("tensor"), inner[1]
        return None

    def attr_object(self, node: cst.BaseExpression) -> _Typed:
        """``self.net``, when every assignment of it in the class seen so far builds one object type."""
        attr = self.ctx.is_self_attr(node)
        cls = self.ctx.current_class
        if attr is None or cls is None:
            return None
        facts = cls.attrs.get(attr, ())
        callees = {fact.callee for fact in facts}
        callee = callees.pop() if len(callees) == 1 else None
        value = self.instance(callee) if callee is not None else None
        return (value, _CERTAIN) if value is not None and value.kind == "object" else None

    def project_instance(self, receiver: cst.BaseExpression, env: _Env) -> str | None:
        """The class of ``self``, or the project class or factory a receiver is built by."""
        if isinstance(receiver, cst.Name) and receiver.value in env:
            return None  # a comprehension's or an older binding's value: unknown
        instance = self.ctx.instance_of(receiver)
        if instance is not None and instance.kind == "self-attr" and instance.attr is not None:
            cls = self.ctx.current_class  # ``self.tracker = Tracker()`` in another method of the class
            callees = {fact.callee for fact in cls.attrs.get(instance.attr, ())} if cls is not None else set()
            return callees.pop() if len(callees) == 1 and None not in callees else None
        if instance is not None and instance.kind == "annotated" and len(instance.names) == 1:
            return instance.names[0]  # ``def save(c: Child)``
        if instance is None or instance.kind not in ("self", "built"):
            return None
        return instance.names[0]

    def is_self_or_attr(self, receiver: cst.BaseExpression, env: _Env) -> bool:
        if isinstance(receiver, cst.Name):
            return receiver.value not in env and self.ctx.is_self(receiver.value)
        return self.ctx.is_self_attr(receiver) is not None

    def bulk_type(self, receiver: cst.BaseExpression, method: str, env: _Env) -> _Typed:
        """``x.state_dict()``: many tensors, unless ``x`` is known to hold plain values."""
        cls = self.ctx.current_class
        bulk = ValueType("bulk")
        if isinstance(receiver, cst.Name) and cls is not None and receiver.value not in env \
                and self.ctx.is_self(receiver.value):
            if self.deferred:
                return bulk, frozenset({TorchMethod(cls.qualname, method)})
            return None if method in cls.methods else (bulk, _CERTAIN)
        attr = self.ctx.is_self_attr(receiver)
        if attr is not None and cls is not None:
            facts = cls.attrs.get(attr, ())
            if any(f.callee is not None and _plain_state(f.callee) for f in facts):
                return None
            if self.deferred:
                return bulk, frozenset({AttrTorchMethod(cls.qualname, attr, method)})
            return bulk, _CERTAIN
        built = self.constructor(receiver, env)
        if built is not None:
            if _plain_state(built):
                return None
            if self.deferred and not built.startswith("torch."):
                return bulk, frozenset({TorchMethod(built, method)})
        return bulk, _CERTAIN

    def constructor(self, node: cst.BaseExpression, env: _Env) -> str | None:
        """The qualified name of the call a name was bound to (``sched = StepLR(...)``)."""
        for _ in range(4):
            if not isinstance(node, cst.Name):
                break
            found = self.lookup(node.value, env)
            if found is None or found[0].value is None:
                return None
            node = found[0].value
        return self.ctx.callee(node) if isinstance(node, cst.Call) else None


def _pinned(env: _Env, added: Added) -> _Env:
    """The environment an added value is read in: its names as they were bound where it was added."""
    return {**env, **dict(added.names)} if added.names else env


def holds_tensors_kind(kind: str) -> bool:
    return kind in _HOLDS_TENSORS


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
_MAX_CHAIN = 6  # calls followed on a project call's result
_ARITHMETIC = "<arithmetic>"  # a link of ``Returns.chain``: an operator applied to the value
ITERATED = "<iterated>"  # a link of ``Returns.chain``: the value's items taken one by one, together
# The kinds a summary assumes its parameters to have, and the argument kinds that give them.
# A container holding tensors is given as a dict ("holds-dict", whose items taken one by one are its keys)
# or as another container ("holds-list").
SUMMARY_KINDS = ("tensor", "tensordict", "holds-list", "holds-dict")
_ARG_KINDS = {"tensor": "tensor", "tensordict": "tensordict", "losses": "tensordict"}
_ASSUMED = {"holds-list": ValueType("holds", container="list"), "holds-dict": ValueType("holds", container="dict")}


def arg_kind(value: ValueType) -> str | None:
    """The summary kind (``SUMMARY_KINDS``) an argument of this value gives its parameter; None when none."""
    if value.kind == "holds" and value.container is not None:
        return "holds-dict" if value.container == "dict" else "holds-list"
    return _ARG_KINDS.get(value.kind)
# Calls that build a dict from their arguments' items and their keywords.
_DICT_CALLS = frozenset({"builtins.dict", "collections.OrderedDict"})
# Functions that give a copy of an instance with some fields replaced.
_REPLACERS = frozenset({"dataclasses.replace", "attr.evolve", "attrs.evolve", "copy.replace"})
# Functions whose result holds the fields of the instance they are given.
_FIELD_READERS = frozenset({"dataclasses.asdict", "dataclasses.astuple", "attr.asdict", "attr.astuple",
                            "attrs.asdict", "attrs.astuple", "builtins.vars"})


def _is_ellipsis(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Ellipsis)


def _as_tensor(when: frozenset[Condition] | None) -> _Typed:
    return (ValueType("tensor"), when) if when is not None else None


def _either(*whens: frozenset[Condition] | None) -> _Typed:
    """One tensor when any operand is: certainly if one certainly is, else under any operand's conditions."""
    known = [when for when in whens if when is not None]
    if not known:
        return None
    if any(not when for when in known):
        return ValueType("tensor"), _CERTAIN
    return ValueType("tensor"), frozenset().union(*known)
