"""Answers to the conditions the value model leaves for the complete project index (``Leaf.when``):
what a project call gives for the arguments it passes, followed along the calls and attribute reads on
its result (``Returns``), whether a class assigns an attribute a tensor, whether its fields hold tensors.

Rules hand these conditions on with their findings (``Requirement``), and the index answers them once
every file a question reaches is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlguard.engine.apimodel import CallShape, model
from rlguard.engine.containers import views_items
from rlguard.engine.index import ANY_KIND
from rlguard.engine.class_lookup import _kind_for_shape, _method_value, _plain_state, attr_facts, may_be_project
from rlguard.engine.values import (
    _ARITHMETIC,
    FIELDS,
    ITERATED,
    MIXED,
    MIXED_AS,
    _HOLDS_TENSORS,
    _LEAF_KINDS,
    AttrTorchMethod,
    Condition,
    KindIf,
    LeafKind,
    Returns,
    Shape,
    TensorAttr,
    TensorFields,
    TorchMethod,
    ValueType,
    ArgKinds,
    arg_kind,
    either_kind,
    holds_tensors_argument,
)

if TYPE_CHECKING:
    from rlguard.engine.index import ProjectIndex


def condition_holds(condition: Condition, index: ProjectIndex, path: str) -> bool:
    """Answer a ``Leaf.when`` condition against the complete project index."""
    return condition_kind(condition, index, path) is not None


def condition_kind(condition: Condition, index: ProjectIndex, path: str) -> LeafKind | None:
    """The leaf kind a part has when its ``Leaf.when`` condition holds in the complete index; None when it
    does not hold."""
    if isinstance(condition, TensorAttr):
        facts = attr_facts(index, condition.cls, condition.attr, path)
        holds = any(fact.tensor or _returns_tensors(index, fact.callee, path) for fact in facts)
        return "tensor" if holds else None
    if isinstance(condition, TorchMethod):
        return "bulk" if index.method_owner(condition.cls, condition.method, near=path) is None else None
    if isinstance(condition, AttrTorchMethod):
        for fact in attr_facts(index, condition.cls, condition.attr, path):
            if fact.callee is not None and (
                _plain_state(fact.callee) or index.method_owner(fact.callee, condition.method, near=path) is not None
            ):
                return None
        return "bulk"
    if isinstance(condition, TensorFields):
        for _, cls in index.ancestry(condition.cls, near=path):
            if cls is not None and any(fact.tensor or _returns_tensors(index, fact.callee, cls.path)
                                       for assigned in cls.attrs.values() for fact in assigned):
                return "holds"
        return None
    value = returned_value_of(condition, index, path)
    return _LEAF_KINDS.get(value.kind) if value is not None else None


def returned_value_of(condition: Returns, index: ProjectIndex, path: str) -> ValueType | None:
    """What the call a ``Returns`` condition describes gives, asked of the complete index."""
    cls = index.get_class(condition.qualname, path)
    function = index.get_function(condition.qualname, path) if cls is None else None
    if function is not None and function.is_property != condition.attribute:
        return None  # a property called, or a method read without calling it
    members: tuple[tuple[int | str, str], ...] = ()  # of the instance the first link is called on
    if cls is not None:
        value: ValueType | None = _project_instance(index, cls.qualname, cls.path)
        members = _members_holding(index, cls.qualname, known_args(condition.args, index, path), path)
    else:
        owner = condition.qualname.rpartition(".")[0]
        given = known_args(condition.args, index, path) + _members_holding(
            index, owner, known_args(condition.built, index, path), path)
        kind = _returned_kind(index, condition.qualname, path, given)
        container = index.returned_container(condition.qualname, path) if kind == "holds" else None
        value = ValueType(kind, container=container) if kind is not None else None
    for method, shape, args in condition.chain:
        if value is None:
            return None
        value = _then_call(index, value, method, shape, known_args(args, index, path) + members, path)
        members = ()
    return value


def sink_reached(index: ProjectIndex, callee: str, args: ArgKinds,
                 path: str) -> tuple[tuple[int | str, str], str] | None:
    """((the argument, its kind), the sink) when an argument of a call of the project callable ``callee``
    (``args``: its kind, or what the index answers) reaches a rule's sink inside it
    (``ProjectIndex.reaches_sink``), the conditions on its way answered here. The kinds of the arguments
    are asked only of calls that send some argument in that position to a sink."""
    if index.reaches_sink(callee, tuple((slot, ANY_KIND) for slot, _ in args), path, lambda when, where: True) is None:
        return None
    known = known_args(args, index, path)
    reached = [index.reaches_sink(callee, each, path, lambda when, where: not when or any(
        condition_holds(condition, index, where) for condition in when)) for each in _as_each(known)] if known else []
    if not reached or None in reached:  # a "mixed" argument: the sink is reached when it is for both kinds
        return None
    first = reached[0]
    assert first is not None
    return next(arg for arg in known if arg[0] == first[0]), first[1]


def _as_each(args: tuple[tuple[int | str, str], ...]) -> list[tuple[tuple[int | str, str], ...]]:
    """The argument kinds as the callee may be given them: "mixed" ones as tensors, then as TensorDicts."""
    if all(kind != MIXED for _, kind in args):
        return [args]
    return [tuple((slot, each if kind == MIXED else kind) for slot, kind in args) for each in MIXED_AS]


def _returned_kind(index: ProjectIndex, qualname: str, path: str, args: tuple[tuple[int | str, str], ...]) -> str | None:
    """``ProjectIndex.returned_kind``, a "mixed" argument answered as both kinds it may be (``either_kind``)."""
    kinds = [index.returned_kind(qualname, path, args=each) for each in _as_each(args)]
    return kinds[0] if len(kinds) == 1 else either_kind(kinds)


def known_args(args: ArgKinds, index: ProjectIndex, path: str) -> tuple[tuple[int | str, str], ...]:
    """The argument kinds, with what project calls give asked of the index (unknown ones left out)."""
    known: list[tuple[int | str, str]] = []
    for slot, kind in args:
        if isinstance(kind, Returns):
            value = returned_value_of(kind, index, path)
            kind = _fields_of(kind, value, index, path) or (arg_kind(value) if value is not None else None) or ""
        elif isinstance(kind, KindIf):
            kind = kind.kind if any(condition_holds(c, index, path) for c in kind.when) else ""
        if kind:
            known.append((slot, kind))
    return tuple(known)


def _members_holding(index: ProjectIndex, owner: str, built: tuple[tuple[int | str, str], ...],
                     path: str) -> tuple[tuple[int | str, str], ...]:
    """("self.<attr>", kind) for the members of an instance of the project class ``owner`` that store an
    argument of a known kind (``built``) of the call that built it (``self.env = env`` of ``Evaluator(env)``)."""
    if not built or index.get_class(owner, path) is None:
        return ()
    found: list[tuple[int | str, str]] = []
    for _, cls in index.ancestry(owner, near=path):
        for attr, assigned in cls.attrs.items() if cls is not None else ():
            found += [(f"self.{attr}", kind) for slot, kind in built for fact in assigned
                      if fact.param is not None and slot in (fact.param, fact.position)]
    return tuple(found)


def _fields_of(condition: Returns, value: ValueType | None, index: ProjectIndex, path: str) -> str | None:
    """"fields" when what a project call gives is an instance of a project class whose fields hold tensors
    (``return EvalResult(mean=...)``): the class the value model typed, else the one every return builds."""
    if value is not None and value.kind != "object":
        return None
    if not condition.chain and _stores_tensors(index, condition.qualname, known_args(condition.args, index, path), path):
        return FIELDS  # ``Stats(loss=t)``: a field holds the tensor it is given, whatever its annotation says
    cls, near = (value.project, path) if value is not None and value.project is not None else (None, path)
    if cls is None and not condition.chain:
        cls, near = index.built_class(condition.qualname, path) or (None, path)
    return FIELDS if cls is not None and condition_holds(TensorFields(cls), index, near) else None


def _stores_tensors(index: ProjectIndex, qualname: str, args: tuple[tuple[int | str, str], ...], path: str) -> bool:
    """A call of the project class ``qualname`` passes a tensor-valued argument that a member stores
    (``self.loss = loss``, a dataclass field)."""
    slots = {slot for slot, kind in args if holds_tensors_argument(kind)}
    if not slots or index.get_class(qualname, path) is None:
        return False
    return any(fact.param is not None and slots & {fact.param, fact.position}
               for _, cls in index.ancestry(qualname, near=path) if cls is not None
               for assigned in cls.attrs.values() for fact in assigned)


def _project_instance(index: ProjectIndex, qualname: str, path: str) -> ValueType:
    """An instance of a project class: the first library class of its MRO the API model knows, if any."""
    base = next((name for name, facts in index.ancestry(qualname, near=path)
                 if facts is None and model().class_name(name) is not None), None)
    return ValueType("object", model().class_name(base) if base is not None else None, qualname)


def _then_call(index: ProjectIndex, value: ValueType, method: str, shape: Shape,
               args: tuple[tuple[int | str, str], ...], path: str) -> ValueType | None:
    """What ``value.method(...)`` (or ``value(...)`` for "()") gives: a project class's own method through
    the index (calling an ``nn.Module`` goes through ``forward``), else the API model."""
    if method.startswith("."):  # an attribute read: a property of a project class
        owner = index.method_owner(value.project, method[1:], near=path) if value.project is not None else None
        function = index.get_function(f"{owner}.{method[1:]}", path) if owner is not None else None
        if function is None or not function.is_property:
            return None
        kind = index.returned_kind(function.qualname, function.path)
        return ValueType(kind) if kind is not None else None
    if value.project is not None:
        wanted = ("__call__", "forward") if method == "()" else (method,)
        for name in wanted:
            if name == "forward" and model().class_kind(value.cls or "") not in ("module", "tdmodule"):
                continue
            owner = index.method_owner(value.project, name, near=path)
            function = index.get_function(f"{owner}.{name}", path) if owner is not None else None
            if function is not None and function.is_property:
                return None  # calling what a property gives
            if owner is not None:
                kind = _returned_kind(index, f"{owner}.{name}", path, args)
                return ValueType(kind) if kind is not None else None
    if method == ITERATED:  # its items, taken one by one (``[*xs]``, ``list(xs)``, ``for x in xs``)
        return _iterated(value)
    if value.kind == "holds":  # a container holding tensors, its items unknown one by one (a summary's)
        # A view or copy of its items holds them; so does an operator's result (``+`` concatenates, ``*``
        # repeats), where it does not raise. Anything else (an item, a key) is unknown.
        if method == _ARITHMETIC or (method == "copy" and views_items(method, shape)):
            return value
        return ValueType("holds", container="list") if views_items(method, shape) else None  # values, pairs
    if method == _ARITHMETIC:  # a tensor stays one; other values are left unknown
        return ValueType("tensor") if value.kind == "tensor" else None
    call_shape_ = CallShape(shape[0], dict(shape[1])) if shape is not None else None
    if method == "()":
        if value.cls is None:
            return None
        spec = model().method(value.cls, "__call__") or model().method(value.cls, "forward")
        kind = _kind_for_shape(spec, call_shape_)
        return ValueType(kind) if kind is not None else None
    return _method_value(value, method, call_shape_)


def _iterated(value: ValueType) -> ValueType | None:
    """What the items of a value taken one by one hold together: a sequence's items hold what it holds;
    a dict's and a TensorDict's are their keys; items of other containers are unknown."""
    if value.kind == "holds":
        return value._replace(container=None) if value.container in ("list", "tuple", "set") else None
    return value if value.kind in ("tensor", "tensors", "bulk") else None


def _returns_tensors(index: ProjectIndex, callee: str | None, path: str) -> bool:
    """``self.w = init_weights()``: a project function whose every return is tensor-valued."""
    return callee is not None and may_be_project(callee) and index.returned_kind(callee, path) in _HOLDS_TENSORS
