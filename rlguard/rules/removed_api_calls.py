"""Edits for removed-API changes inside calls: renamed keywords, keys of a dict the library spreads as
keywords, a policy wrapper rewritten as the policy followed by a module, and a module wrapper as the
module followed by another in a ``torch.nn.Sequential``. Pure functions of nodes;
``removed_api`` decides when they apply."""

from __future__ import annotations

from rlguard.engine.findings import Edit
from rlguard.engine.lazy import cst
from rlguard.rules.data import ApiChange


def keyword_rename(call: cst.Call, arg: cst.Arg, new: str) -> list[Edit]:
    """``f(old=x)`` -> ``f(new=x)``; none when the call passes ``new`` too (the old code then failed)."""
    if arg.keyword is None or any(a.keyword is not None and a.keyword.value == new for a in call.args):
        return []
    return [Edit(arg.keyword, cst.Name(new))]


def dict_key_rename(literal: cst.Dict, key: cst.SimpleString, new: str) -> list[Edit]:
    """``{"old": x}`` -> ``{"new": x}``, in the literal's own quotes; none when ``new`` is a key too."""
    if any(isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) and e.key.evaluated_value == new
           for e in literal.elements):
        return []
    return [Edit(key, key.with_changes(value=f"{key.prefix}{key.quote}{new}{key.quote}"))]


def string_keys(literal: cst.Dict) -> list[tuple[str, cst.SimpleString]]:
    return [(e.key.evaluated_value, e.key) for e in literal.elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
            and isinstance(e.key.evaluated_value, str)]


def wrapper_rewrite(call: cst.Call, change: ApiChange, sequential: str, module: str) -> cst.Call | None:
    """``Wrapper(policy, k=v)`` -> ``Sequential(policy, Module(spec=policy.spec.clone(), k=v))``.

    The module writes to the spec it is given: a clone keeps the policy's own spec (and its out_keys
    check) intact. None when the call does not fit: the policy is not a name, attribute chain or literal
    index (it is evaluated twice), an argument after it is positional or ``**``, or a keyword the
    module does not take."""
    args = list(call.args)
    policy_arg = next((a for a in args if a.keyword is not None and a.keyword.value == "policy"), None)
    if policy_arg is None and args and args[0].keyword is None and not args[0].star:
        policy_arg = args[0]
    if policy_arg is None or not _plain(policy_arg.value):
        return None
    rest = [a for a in args if a is not policy_arg]
    if any(a.keyword is None or a.keyword.value not in change.new_parameters for a in rest):
        return None
    policy = policy_arg.value
    spec = [a for a in rest if a.keyword is not None and a.keyword.value == "spec"]
    clone = cst.Call(cst.Attribute(cst.Attribute(policy, cst.Name("spec")), cst.Name("clone")))
    tight = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    keywords = [cst.Arg(clone, keyword=cst.Name("spec"), equal=tight)] if not spec else []
    keywords += [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in rest]
    inner = cst.Call(cst.Name(module), keywords)
    return cst.Call(cst.Name(sequential), [cst.Arg(policy), cst.Arg(inner)])


def operator_rewrite(call: cst.Call, change: ApiChange, sequential: str, module: str) -> cst.Call | None:
    """``Wrapper(net, a, k=v)`` -> ``Sequential(net, Module(a, k=v))``: the module takes the wrapper's
    other parameters in the same order (``change.new_parameters`` is ``old_parameters[1:]``). None when
    the call does not fit: ``*``/``**`` arguments, no wrapped module, or a keyword the module does not take."""
    args = list(call.args)
    first = change.old_parameters[0] if change.old_parameters else ""
    if any(a.star for a in args):
        return None
    operator = next((a for a in args if a.keyword is not None and a.keyword.value == first), None)
    if operator is None and args and args[0].keyword is None:
        operator = args[0]
    rest = [a for a in args if a is not operator]
    if operator is None or any(a.keyword is not None and a.keyword.value not in change.new_parameters for a in rest):
        return None
    if operator.keyword is not None and any(a.keyword is None for a in rest):
        return None  # ``Wrapper(a, operator=net)``: ``a`` was the wrapper's first parameter, not the module's
    inner = cst.Call(cst.Name(module), [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in rest])
    return cst.Call(cst.Name(sequential), [cst.Arg(operator.value), cst.Arg(inner)])


def _plain(expr: cst.BaseExpression) -> bool:
    """A name, attribute chain or literal index (``model[0]``): evaluating it twice reads it twice."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Subscript) and not (
                len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
                and isinstance(expr.slice[0].slice.value, (cst.Integer, cst.SimpleString))):
            return False
        expr = expr.value
    return isinstance(expr, cst.Name)


def last_module(receiver: cst.BaseExpression) -> cst.Subscript:
    """``policy`` -> ``policy[-1]``: the module a rewritten wrapper's ``.step()`` now lives on."""
    index = cst.UnaryOperation(cst.Minus(), cst.Integer("1"))
    return cst.Subscript(receiver, [cst.SubscriptElement(cst.Index(index))])
