"""Classes and attributes in the value model: what an annotation or a constructor makes (a library class
the API model knows, or a project class deriving from one), which methods a project class overrides,
what an attribute or a library method gives, and whether a name is the project's own.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING

from rlguard.engine.lazy import cst

from rlguard.engine.annotations import annotated_type
from rlguard.engine.apimodel import TENSOR, TENSORDICT, CallShape, model, select
from rlguard.engine.matching import call_shape
from rlguard.engine.reader import Reader
from rlguard.engine.values import (
    _ASSUMED,
    _CERTAIN,
    _HOLDS_TENSORS,
    AttrTorchMethod,
    Returns,
    TensorAttr,
    TorchMethod,
    ValueType,
    _Env,
    _Typed,
)

if TYPE_CHECKING:
    from rlguard.engine.index import AttrFact, ClassFacts, ProjectIndex


def may_be_project(qualname: str) -> bool:
    """A callable that may be the project's own: not a builtin, nor of the standard library or a
    library the API model covers (those are typed by the model, or unknown)."""
    top = qualname.partition(".")[0]
    return top not in _NOT_PROJECT and top not in sys.stdlib_module_names and not qualname.startswith("<")


_NOT_PROJECT = frozenset({"builtins", "torch", "tensordict", "torchrl", "numpy", "typing_extensions"})


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


_SEQUENCE_TYPES = frozenset({"builtins.list", "builtins.tuple", "typing.List", "typing.Tuple", "typing.Sequence",
                             "collections.abc.Sequence", "typing.Iterable", "collections.abc.Iterable"})
_MAPPING_TYPES = frozenset({"builtins.dict", "typing.Dict", "typing.Mapping", "collections.abc.Mapping",
                            "typing.OrderedDict", "collections.OrderedDict"})


def _is_ellipsis(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Ellipsis)


class ClassLookup(Reader):
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

    def method_type(self, receiver: ValueType, method: str, node: cst.Call) -> ValueType | None:
        """What ``receiver.method(...)`` gives."""
        if receiver.kind == "object" and (receiver.cls is None or self.overridden(receiver, method)):
            return None
        return _method_value(receiver, method, call_shape(node))

    def attribute_type(self, node: cst.Attribute, env: _Env, depth: int) -> _Typed:
        attr = self.ctx.is_self_attr(node)
        if attr is not None and node.value.value not in env:  # type: ignore[attr-defined]
            cls = self.ctx.current_class
            if cls is None:
                return None
            if attr in self.watched_members:
                self.read_members = True
            assumed = self.ctx.assumed_members.get(attr)
            if assumed is not None:  # a member holding a constructor's argument, while a summary is computed
                return _ASSUMED.get(assumed, ValueType(assumed)), _CERTAIN
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
