"""What may reach a rule's place: the classes a class may derive from, the value a name bound once
holds, the TensorDict a chain of calls hands back, the callables a library is handed, the class a
member holds, and (``ProjectIndex.argument_reaches``) the library callable an argument of a project
function is passed on to.

Rules state their root class, their sink or their receiver and ask these; none follows values itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from collections.abc import Callable, Iterable, Iterator, Mapping

from rlguard.engine.lazy import cst

from rlguard.engine.apimodel import model
from rlguard.engine.types import attr_facts, keyword, positional

if TYPE_CHECKING:
    from rlguard.engine.context import FileContext, Shadow
    from rlguard.engine.index import ClassFacts, FunctionFacts, ProjectIndex

# Library packages none of whose classes derive from a class of torchrl: a base from one of them ends
# the search with "no".
_NEVER_DERIVING = ("builtins.", "abc.", "typing.", "collections.", "enum.", "torch.", "tensordict.", "numpy.")
_MAX_BASES_DEPTH = 16
_MAX_BOUND_DEPTH = 4
_MAX_ORIGIN_DEPTH = 16  # names, calls and items followed back to where a value was made
# Methods of a tensor or TensorDict that may give it another device: what they give is not the receiver.
_DEVICE_METHODS = frozenset({"to", "cuda", "cpu"})


def argument_slots(call: cst.Call) -> list[tuple[int | str, cst.BaseExpression]]:
    """(slot, value) of a call's arguments, the slot a position, a keyword, or "**" for ``**mapping``;
    positions after a ``*args`` are unknown and left out."""
    found: list[tuple[int | str, cst.BaseExpression]] = []
    position, starred = 0, False
    for arg in call.args:
        if arg.star == "*":
            starred = True
        elif arg.star == "**":
            found.append(("**", arg.value))
        elif arg.keyword is not None:
            found.append((arg.keyword.value, arg.value))
        elif not starred:
            found.append((position, arg.value))
            position += 1
    return found


def may_derive_from(classes: Mapping[str, ClassFacts], qualname: str, roots: Callable[[str], bool],
                    depth: int = 0) -> bool:
    """False when the class provably derives from no class of torchrl ``roots`` accepts: every base, followed
    through ``classes`` (the file's own), is a library class of a package that has none. The file-local
    answer that spares the index (and the file a position pass) a question about the many classes that
    cannot be one; True is only "maybe", which the index decides (``ProjectIndex.derives_from``)."""
    cls = classes.get(qualname)
    if cls is None or depth > _MAX_BASES_DEPTH:
        return True
    for base in cls.bases:
        if roots(base):
            return True
        if base in classes:
            if may_derive_from(classes, base, roots, depth + 1):
                return True
        elif base != "?" and not base.startswith(_NEVER_DERIVING):
            return True
    return False


def bound_once(node: cst.BaseExpression, ctx: FileContext) -> cst.BaseExpression:
    """The expression behind a name bound once, in its scope or the module (``out = build(td); return
    out``, ``DEST = "post_steps"``), through a few such names. A name bound on several paths, by a loop
    or by unpacking may hold another value: it is left as it is; so is a module-level name a function
    reads, when the module binds it again further down or a function declares it ``global``."""
    for _ in range(_MAX_BOUND_DEPTH):
        binding = ctx.lookup(node.value) if isinstance(node, cst.Name) else None
        if binding is None or binding.opaque or binding.value is None or binding.previous is not None:
            break
        assert isinstance(node, cst.Name)
        if not ctx.at_module_level and ctx.scopes[0].bindings.get(node.value) is binding \
                and ctx.rebound_at_module_level(node.value):
            break
        node = binding.value
    return node


def tensordict_receiver(node: cst.BaseExpression) -> cst.BaseExpression:
    """The TensorDict a chain of its methods hands back unmoved: ``build(td).update(rest).clone()`` is
    what ``build(td)`` gives, on the same device (or none). Which methods give their receiver's kind
    comes from the API model (``update`` and ``set`` return the TensorDict itself); a move
    (``.to(...)``, ``.cuda()``) or any other method ends the chain where it is."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        method = node.func.attr.value
        if method in _DEVICE_METHODS or model().method("tensordict.TensorDictBase", method) != "self":
            break
        node = node.func.value
    return node


def moves_device(call: cst.Call, ctx: FileContext) -> bool:
    """``x.cuda()``, ``x.cpu()``, ``x.to(device)``: what it gives is on a device; not ``x.to(torch.float32)``
    or ``x.to(dtype=...)``."""
    method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
    if method != "to":
        return method in _DEVICE_METHODS
    if keyword(call, "device") is not None:
        return True
    args = positional(call)
    first = ctx.qualname(args[0].value) if args else None
    return bool(args) and not (first is not None and first.startswith("torch.") and first != "torch.device")


def called_callables(value: cst.BaseExpression, ctx: FileContext, spreads: Callable[[str], bool],
                     depth: int = 0) -> Iterator[tuple[str, cst.BaseExpression | str]]:
    """What a library will call when it is handed ``value``, as ("function", name), ("lambda", node) or
    ("instance", class): a function, a lambda, the function a ``functools.partial`` wraps, the
    ``__call__`` of an instance, and each callable passed to a class ``spreads`` accepts (``Compose(a, b)``)."""
    value = ctx.value_of(value)
    if isinstance(value, cst.Name):
        yield "function", value.value
    elif isinstance(value, cst.Lambda):
        yield "lambda", value
    elif isinstance(value, cst.Call) and depth < _MAX_BOUND_DEPTH:
        callee = ctx.callee(value) or ""
        args = [arg.value for arg in value.args if arg.keyword is None and not arg.star]
        if callee == "functools.partial" and args:
            yield from called_callables(args[0], ctx, spreads, depth + 1)
        elif spreads(callee):
            for arg in args:
                yield from called_callables(arg, ctx, spreads, depth + 1)
        elif callee:
            yield "instance", callee


def member_class(index: ProjectIndex, cls: str, attr: str, near: str) -> str | None:
    """The one class ``self.<attr>`` of class ``cls`` holds: every assignment along the MRO builds it (or
    calls one factory of the project that builds it); None when unknown or they differ."""
    callees = {fact.callee for fact in attr_facts(index, cls, attr, near)}
    if len(callees) != 1 or None in callees:  # none, or several
        return None
    callee = callees.pop()
    assert callee is not None
    built = index.built_class(callee, near)
    return built[0] if built else callee


def origin_calls(node: cst.BaseExpression, ctx: FileContext, known: Callable[[cst.Call], bool],
                 ends: Callable[[cst.Call], bool], through: Callable[[cst.Call], cst.BaseExpression | None],
                 shadow: Shadow | None = None, depth: int = 0) -> list[cst.Call]:
    """The ``known`` calls whose value ``node`` may be, or be derived from: through names (as bound
    where they are read, ``x = x.select(...)`` reading the previous ``x``), methods called on a value,
    items taken from it, the items of a tuple or list, both branches of ``a if c else b``, and what
    ``through`` says a call passes on (``torch.stack(tds)``: ``tds``). A method call ``ends`` accepts
    (a move to a device) gives nothing."""
    shadow = shadow or {}
    while depth <= _MAX_ORIGIN_DEPTH:
        if isinstance(node, cst.Call) and not known(node) and (passed := through(node)) is not None:
            node, depth = passed, depth + 1
        elif isinstance(node, cst.Call) and not known(node) and isinstance(node.func, cst.Attribute):
            if ends(node):
                return []
            node = node.func.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            break
    if isinstance(node, cst.Call):
        return [node] if known(node) else []
    found: list[cst.Call] = []
    if isinstance(node, cst.Name) and depth < _MAX_ORIGIN_DEPTH:
        binding, inner = ctx.binding_in(node.value, shadow)
        if binding is not None and not binding.opaque and binding.value is not None:
            found += origin_calls(binding.value, ctx, known, ends, through, inner, depth + 1)
    elif isinstance(node, (cst.Tuple, cst.List)):
        for element in node.elements:
            found += origin_calls(element.value, ctx, known, ends, through, shadow, depth + 1)
    elif isinstance(node, cst.IfExp):
        for branch in (node.body, node.orelse):
            found += origin_calls(branch, ctx, known, ends, through, shadow, depth + 1)
    return found


def returned_methods(functions: Mapping[str, FunctionFacts], cls: str, roots: Iterable[str]) -> set[str]:
    """``roots`` and the methods of class ``cls`` whose result they return, directly or through one
    another (``return self._select(td)``), as the file's function summaries say (``Returned.built``)."""
    prefix = cls + "."
    found = set(roots)
    frontier = list(found)
    while frontier:
        facts = functions.get(prefix + frontier.pop())
        for returned in facts.typed if facts is not None else ():
            built = returned.built or ""
            helper = built[len(prefix):] if built.startswith(prefix) else ""
            if helper and "." not in helper and helper not in found:
                found.add(helper)
                frontier.append(helper)
    return found
