"""The value kinds of the engine's model of values: what an expression is (``ValueType``), the
tensor-valued parts a rule names (``Leaf``), and the conditions only the complete project index answers
(``Returns``, ``TensorAttr``, ...), with which a part is tensor-valued when the file alone cannot tell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from rlguard.engine.context import Added, Binding
    from rlguard.engine.lazy import cst


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
    # For a method: the kinds of the arguments of the call that built the receiver (``Evaluator(env)``),
    # which the members storing them hold (``Returned.given`` for ``self.<attr>``).
    built: ArgKinds = ()


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


# What a name means while a bound expression is analysed: overrides of the scope's bindings.
# None: unknown (a name bound before the first binding we know of).
_Env = dict[str, tuple["Binding", bool] | None]
# (type, conditions) of a single value, or None when unknown.
_Typed = tuple[ValueType, frozenset[Condition]] | None
# (leaf kind, conditions) of a single value, or None when it is not tensor-valued.
_Kind = tuple[LeafKind, frozenset[Condition]] | None


def _pinned(env: _Env, added: Added) -> _Env:
    """The environment an added value is read in: its names as they were bound where it was added."""
    return {**env, **dict(added.names)} if added.names else env


def holds_tensors_kind(kind: str) -> bool:
    return kind in _HOLDS_TENSORS


_MAX_CHAIN = 6  # calls followed on a project call's result
_ARITHMETIC = "<arithmetic>"  # a link of ``Returns.chain``: an operator applied to the value
ITERATED = "<iterated>"  # a link of ``Returns.chain``: the value's items taken one by one, together
# The kinds a summary assumes its parameters to have, and the argument kinds that give them.
# A container holding tensors is given as a dict ("holds-dict", whose items taken one by one are its keys)
# or as another container ("holds-list"). "fields": an instance of a class whose fields hold tensors (a
# dataclass, attrs class or NamedTuple): not tensor-valued itself, but what reads its fields is
# (``dataclasses.asdict(p)``, ``astuple``, ``vars(p)``, ``p.__dict__``, ``p._asdict()``). "env": an
# environment (an instance of a library class of kind "env"): not tensor-valued itself, but what its
# methods give is (``env.rollout(n)``, a TensorDict).
SUMMARY_KINDS = ("tensor", "tensordict", "holds-list", "holds-dict", "fields", "env")
FIELDS = "fields"
_HELD_BY_ARGUMENT = frozenset({"tensor", "tensordict", "holds-list", "holds-dict", "mixed"})
# An argument kind that is no summary kind: "mixed", a tensor or a TensorDict, which of them unknown (a
# reduction of a TensorDict's entry, ``td["next", "reward"].sum()``). A summary answers for it what it
# answers for both kinds it may be (``either_kind``), so no rule needing one of them is misled.
MIXED = "mixed"
MIXED_AS = ("tensor", "tensordict")
_ARG_KINDS = {"tensor": "tensor", "tensordict": "tensordict", "losses": "tensordict", "mixed": MIXED}
_ASSUMED = {"holds-list": ValueType("holds", container="list"), "holds-dict": ValueType("holds", container="dict"),
            "env": ValueType("object", cls="torchrl.envs.EnvBase")}


def arg_kind(value: ValueType) -> str | None:
    """The summary kind (``SUMMARY_KINDS``) an argument of this value gives its parameter; None when none."""
    if value.kind == "holds" and value.container is not None:
        return "holds-dict" if value.container == "dict" else "holds-list"
    if value.kind == "object" and value.cls is not None:
        from rlguard.engine.apimodel import model  # here: a file the cache serves loads no model

        return "env" if model().class_kind(value.cls) == "env" else None
    return _ARG_KINDS.get(value.kind)


def holds_tensors_argument(kind: str) -> bool:
    """Whether an argument of this summary kind is tensor-valued itself (not "fields", nor "env")."""
    return kind in _HELD_BY_ARGUMENT


def either_kind(results: list[str | None]) -> str | None:
    """What a summary gives for a "mixed" argument, from what it gives for each kind that may be
    (``MIXED_AS``): their kind when they agree, "mixed" when each holds tensors, else unknown."""
    if any(result not in _HOLDS_TENSORS for result in results):
        return None
    return results[0] if len(set(results)) == 1 else MIXED


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
