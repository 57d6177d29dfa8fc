"""Summaries of functions, computed while a file is walked and kept with its facts: what each
``return`` gives (``Returned``), also when a parameter is given a tensor or a TensorDict
(``Returned.given``), and which parameters, given which kinds, make a rule's sink hold tensors
(``FunctionFacts.flows``).

A parameter is given a kind on the binding it made (``Binding.assumed``), so a name rebound in the body
reads its new value.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING
from collections.abc import Iterator

from rlguard.engine.lazy import cst

from rlguard.engine.containers import container_kind
from rlguard.engine.index import Returned
from rlguard.engine.inference import _Inference
from rlguard.engine.tensordicts import unplaced_tensordict
from rlguard.engine.values import _HOLDS_TENSORS, SUMMARY_KINDS, Condition, Leaf, _Env

if TYPE_CHECKING:
    from rlguard.engine.context import Binding, FileContext

_MAX_SUMMARY_PARAMS = 8  # parameters a summary tries kinds for


def returned_value(node: cst.BaseExpression, ctx: FileContext, params: tuple[str, ...] = ()) -> Returned:
    """What a ``return`` gives, typed in the function's own scope (``FunctionFacts.typed``): its kind,
    "holds" for a container holding tensors, and the class it is an instance of (or the project
    callable whose result it is, which the index follows). When the kind is unknown, what it is when
    one of ``params`` is given a tensor or a TensorDict (``Returned.given``)."""
    inference = _Inference(ctx, deferred=False)
    considered = _parameter_bindings(ctx, params)
    members = _constructor_members(ctx) if ctx.parameter_kinds else []
    inference.watched = frozenset(id(binding) for _, binding in considered)
    inference.watched_members = frozenset(members)
    kind = _returned_kind(inference, node, {})
    given: tuple[tuple[str, str, str], ...] = ()
    # The passes that assume kinds for parameters (or members) read what this one read until they read a
    # parameter's binding (a member): where this pass read none, they give what it gave.
    if kind is not None or not inference.read_watched:
        considered = []
    for assumed in SUMMARY_KINDS if considered else ():
        # One pass with every parameter given the kind first: most returns hold no tensor even then.
        with _assuming([(binding, assumed) for _, binding in considered]):
            if _returned_kind(inference, node, {}) not in _HOLDS_TENSORS:
                continue
        for param, binding in considered:
            with _assuming([(binding, assumed)]):
                found = _returned_kind(inference, node, {})
            if found in _HOLDS_TENSORS:
                given += ((param, assumed, found),)
    if kind is None and inference.read_members:
        given += _members_given(inference, node, members)
    return Returned(kind, ctx.class_of(node), unplaced_tensordict(node, ctx), given,
                    container_kind(ctx.value_of(node), ctx))


def _members_given(inference: _Inference, node: cst.BaseExpression, members: list[str]) -> tuple[tuple[str, str, str], ...]:
    """In a method, (``self.<attr>``, kind, what the return then is) for the members the class stores a
    constructor's parameter in (``self.env = env``), given a value of a summary kind: what the return
    gives for an instance built with such an argument (``Evaluator(env).run(policy)``)."""
    ctx = inference.ctx
    given: tuple[tuple[str, str, str], ...] = ()
    for assumed in SUMMARY_KINDS:
        with _assuming_members(ctx, dict.fromkeys(members, assumed)):  # all at once first: most give nothing
            if _returned_kind(inference, node, {}) not in _HOLDS_TENSORS:
                continue
        for member in members:
            with _assuming_members(ctx, {member: assumed}):
                found = _returned_kind(inference, node, {})
            if found in _HOLDS_TENSORS:
                given += ((f"self.{member}", assumed, found),)
    return given


def _constructor_members(ctx: FileContext) -> list[str]:
    """The members the class of the method being walked (seen so far) stores a constructor parameter in."""
    cls = ctx.method_class()
    if cls is None:
        return []
    return sorted(attr for attr, facts in cls.attrs.items() if any(fact.param is not None for fact in facts))[
        :_MAX_SUMMARY_PARAMS]


@contextmanager
def _assuming_members(ctx: FileContext, kinds: dict[str, str]) -> Iterator[None]:
    """Members of ``self`` taken, for a while, to hold values of these kinds (``FileContext.assumed_members``)."""
    ctx.assumed_members = kinds
    try:
        yield
    finally:
        ctx.assumed_members = {}


def _returned_kind(inference: _Inference, node: cst.BaseExpression, env: _Env) -> str | None:
    typed = inference.typed(node, env, 0)
    if typed is not None and not typed[1]:
        return typed[0].kind
    if inference.is_new_container(inference.ctx.value_of(node)) and any(
            leaf.certain for leaf in inference.leaves(node, env, 0, (), (), True, True)):
        return "holds"
    return None


def parameters_reaching(payload: cst.BaseExpression, ctx: FileContext,
                        params: tuple[str, ...]) -> list[tuple[str, str, frozenset[Condition]]]:
    """(parameter, kind, conditions) for the parameters of the function being walked that make ``payload``
    hold tensors when given a value of that kind (``SUMMARY_KINDS``; a ``**kwargs`` parameter:
    "holds-dict", a dict of tensors), where it holds none otherwise: certainly (no conditions), or when one
    of the conditions the value gained on its way holds (``scale(x)``: what a project call gives it)."""
    inference = _Inference(ctx, deferred=True)
    unassumed = inference.leaves(payload, {}, 0, (), (), True, True)
    if any(leaf.certain for leaf in unassumed):
        return []  # tensors whatever the arguments: the rule reports the call itself
    known = frozenset().union(*(leaf.when for leaf in unassumed))  # the rule asks about these itself
    considered = _parameter_bindings(ctx, params)
    found: list[tuple[str, str, frozenset[Condition]]] = []
    for assumed in SUMMARY_KINDS:
        kinds = [(binding, "holds-dict" if binding.opaque else assumed) for _, binding in considered]
        with _assuming(kinds):  # one pass with every parameter given the kind first: most payloads hold none
            if _reaching(inference.leaves(payload, {}, 0, (), (), True, True), known) is None:
                continue
        for (param, binding), (_, kind) in zip(considered, kinds, strict=True):
            with _assuming([(binding, kind)]):  # ``**kwargs`` is bound opaque: a dict of what the keywords pass
                when = _reaching(inference.leaves(payload, {}, 0, (), (), True, True), known)
            if when is not None and (param, kind, when) not in found:
                found.append((param, kind, when))
    return found


def _reaching(leaves: list[Leaf], known: frozenset[Condition]) -> frozenset[Condition] | None:
    """The conditions under which these parts hold tensors because of an assumed parameter: none when
    one certainly does; None when none does, or only under conditions that hold whatever it is given."""
    if any(leaf.certain for leaf in leaves):
        return frozenset()
    gained = frozenset().union(*(leaf.when for leaf in leaves)) - known
    return gained or None


def _parameter_bindings(ctx: FileContext, params: tuple[str, ...]) -> list[tuple[str, Binding]]:
    """The bindings the parameters made on entry (a name rebound since reads its new value, and reaches
    the parameter only through ``x = f(x)``), for the first few parameters."""
    found = []
    for param in params[:_MAX_SUMMARY_PARAMS]:
        binding = ctx.lookup(param)
        while binding is not None and binding.previous is not None:
            binding = binding.previous
        if binding is not None and binding.value is None and binding.iterated is None and binding.unpacked is None:
            found.append((param, binding))
    return found


@contextmanager
def _assuming(kinds: list[tuple[Binding, str]]) -> Iterator[None]:
    """Parameters taken, for a while, to receive values of these kinds (``Binding.assumed``)."""
    for binding, kind in kinds:
        binding.assumed = kind
    try:
        yield
    finally:
        for binding, _ in kinds:
            binding.assumed = None
