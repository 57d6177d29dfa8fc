"""Summaries of functions, computed while a file is walked and kept with its facts: what each
``return`` gives (``Returned``), also when a parameter is given a tensor or a TensorDict
(``Returned.given``), and which parameters make a rule's sink hold tensors (``FunctionFacts.flows``).

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
from rlguard.engine.types import _HOLDS_TENSORS, SUMMARY_KINDS, _Env, _Inference, unplaced_tensordict

if TYPE_CHECKING:
    from rlguard.engine.context import Binding, FileContext

_MAX_SUMMARY_PARAMS = 8  # parameters a summary tries kinds for


def returned_value(node: cst.BaseExpression, ctx: FileContext, params: tuple[str, ...] = ()) -> Returned:
    """What a ``return`` gives, typed in the function's own scope (``FunctionFacts.typed``): its kind,
    "holds" for a container holding tensors, and the class it is an instance of (or the project
    callable whose result it is, which the index follows). When the kind is unknown, what it is when
    one of ``params`` is given a tensor or a TensorDict (``Returned.given``)."""
    inference = _Inference(ctx, deferred=False)
    kind = _returned_kind(inference, node, {})
    given: tuple[tuple[str, str, str], ...] = ()
    considered = _parameter_bindings(ctx, params) if kind is None and _may_read_parameters(node, ctx, params) else []
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
    return Returned(kind, ctx.class_of(node), unplaced_tensordict(node, ctx), given,
                    container_kind(ctx.value_of(node), ctx))


def _may_read_parameters(node: cst.BaseExpression, ctx: FileContext, params: tuple[str, ...]) -> bool:
    """Whether ``node`` may be built from a parameter: it reads one, or a local name whose bindings (and
    what was added to them) read one, transitively. Only then can a kind assumed for a parameter change
    what it gives; most returns are built from attributes, module names and literals alone."""
    from rlguard.engine.traversal import iter_nodes  # here: the traversal imports the context, which imports this

    bindings = ctx.scopes[-1].bindings
    pending, seen = [node], _parameter_names(ctx.scopes[-1].node)  # ``self``, ``*args``: never given a kind
    while pending:
        for name in iter_nodes(pending.pop()):
            if not isinstance(name, cst.Name) or name.value in seen and name.value not in params:
                continue
            if name.value in params:
                return True
            seen.add(name.value)
            binding = bindings.get(name.value)
            while binding is not None:
                sources = _sources(binding)
                if sources is None:
                    return True  # bound by something not followed here: it may hold a parameter
                pending.extend(sources)
                binding = binding.previous
    return False


def _parameter_names(function: cst.CSTNode | None) -> set[str]:
    if not isinstance(function, cst.FunctionDef):
        return set()
    declared = function.params
    every = [*declared.posonly_params, *declared.params, *declared.kwonly_params, declared.star_arg, declared.star_kwarg]
    return {p.name.value for p in every if isinstance(p, cst.Param)}


def _sources(binding: Binding) -> list[cst.BaseExpression] | None:
    """The expressions a local binding was built from, or None when it was bound another way."""
    origin = binding.value if binding.value is not None else binding.iterated
    if origin is None and binding.unpacked is not None:
        origin = binding.unpacked[0]
    if origin is None:
        return None
    return [origin, *(added.value for added in binding.added)]


def _returned_kind(inference: _Inference, node: cst.BaseExpression, env: _Env) -> str | None:
    typed = inference.typed(node, env, 0)
    if typed is not None and not typed[1]:
        return typed[0].kind
    if inference.is_new_container(inference.ctx.value_of(node)) and any(
            leaf.certain for leaf in inference.leaves(node, env, 0, (), (), True, True)):
        return "holds"
    return None


def parameters_reaching(payload: cst.BaseExpression, ctx: FileContext, params: tuple[str, ...]) -> list[str]:
    """The parameters of the function being walked that make ``payload`` hold tensors when given them
    (a ``**kwargs`` parameter: a dict of tensors), where it holds none otherwise."""
    inference = _Inference(ctx, deferred=False)
    if any(leaf.certain for leaf in inference.leaves(payload, {}, 0, (), (), True, True)):
        return []  # tensors whatever the arguments: the rule reports the call itself
    found = []
    for param, binding in _parameter_bindings(ctx, params):
        with _assuming([(binding, "holds" if binding.opaque else "tensor")]):  # ``**kwargs`` is bound opaque
            if any(leaf.certain for leaf in inference.leaves(payload, {}, 0, (), (), True, True)):
                found.append(param)
    return found


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
