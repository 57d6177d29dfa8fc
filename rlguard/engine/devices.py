"""Where a module's parameters are: the devices a policy was built on and moved to, as far as the file
says (``Net(device="cuda:1")``, ``net.to("cuda:1")``, ``policy.cuda(0)``, ``torch.device("cpu")``).
A device held in a variable, a conditional, or a module a function builds, is unknown."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from rlguard.engine.lazy import cst
from rlguard.engine.matching import keyword, positional

if TYPE_CHECKING:
    from rlguard.engine.context import FileContext

# Module methods that move the parameters in place (and return the module).
DEVICE_MOVES = frozenset({"to", "cuda", "cpu"})
_LITERAL_DEVICE = re.compile(r"(cpu|cuda|mps|xpu|meta)(:\d+)?")
_MAX_DEPTH = 8  # names and wrappers followed


class Placement(NamedTuple):
    """How a module expression was built: the names it was bound through (whose in-place moves count,
    wherever they are in the file) and the devices its own expression put it on (None: not a literal)."""

    names: frozenset[str]
    devices: tuple[str | None, ...]


def literal_device(expr: cst.BaseExpression, ctx: FileContext) -> str | None:
    """``"cuda:1"``, ``torch.device("cuda", 1)``, ``torch.device("cpu")`` as written ("cuda:1", "cpu"),
    through a name bound to one; None when the device is not a literal (a variable, ``"cuda" if ... else "cpu"``)."""
    expr = ctx.value_of(expr)
    if isinstance(expr, cst.SimpleString):
        text = expr.evaluated_value
    elif isinstance(expr, cst.Call) and ctx.callee(expr) == "torch.device" and 1 <= len(expr.args) <= 2 \
            and all(a.keyword is None and not a.star for a in expr.args) and isinstance(expr.args[0].value, cst.SimpleString):
        text = expr.args[0].value.evaluated_value
        if len(expr.args) == 2:
            index = expr.args[1].value
            if not isinstance(index, cst.Integer) or not isinstance(text, str) or ":" in text:
                return None
            text = f"{text}:{index.value}"
    else:
        return None
    return text if isinstance(text, str) and _LITERAL_DEVICE.fullmatch(text) else None


def parameter_device(device: str) -> str:
    """The device parameters moved to ``device`` report: a CPU tensor's device never has an index, a
    CUDA one always has (``"cuda"`` stands for the current device, as ``policy_device="cuda"`` does)."""
    return "cpu" if device.startswith("cpu") else device


def _device_of(expr: cst.BaseExpression, ctx: FileContext) -> str | None:
    literal = literal_device(expr, ctx)
    return parameter_device(literal) if literal is not None else None


def moved_to(call: cst.Call, ctx: FileContext) -> str | None:
    """Where ``x.to(d)``, ``x.cuda(i)`` or ``x.cpu()`` puts the parameters; None when not a literal."""
    assert isinstance(call.func, cst.Attribute)
    method, args = call.func.attr.value, positional(call)
    if method == "cpu":
        return "cpu"
    if method == "cuda":
        if not args:
            return "cuda"
        return f"cuda:{args[0].value.value}" if isinstance(args[0].value, cst.Integer) else None
    device = keyword(call, "device") or (args[0] if args else None)
    return _device_of(device.value, ctx) if device is not None else None


def placement(expr: cst.BaseExpression, ctx: FileContext, wrapped: Callable[[cst.Call, str], Iterable[cst.BaseExpression]],
              depth: int = 0) -> Placement | None:
    """How the module ``expr`` was built, through names, moves and the modules ``wrapped`` says a call of
    a library wrapper holds; None when that cannot be read here (a factory function, an attribute, a
    parameter): it may be anywhere."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Name):
        value = ctx.value_of(expr, depth=1)
        inner = placement(value, ctx, wrapped, depth + 1) if value is not expr else None
        return Placement(inner.names | {expr.value}, inner.devices) if inner is not None else None
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in DEVICE_MOVES:
        inner = placement(func.value, ctx, wrapped, depth + 1)
        return Placement(inner.names, inner.devices + (moved_to(expr, ctx),)) if inner is not None else None
    callee = ctx.callee(expr)
    if callee is None or not callee.rpartition(".")[2][:1].isupper():
        return None  # a function may build the module anywhere
    names: frozenset[str] = frozenset()
    placed = keyword(expr, "device")
    devices: tuple[str | None, ...] = (_device_of(placed.value, ctx),) if placed is not None else ()
    for arg in wrapped(expr, callee):
        inner = placement(arg, ctx, wrapped, depth + 1)
        if inner is None:
            return None
        names |= inner.names
        devices += inner.devices
    return Placement(names, devices)


def devices_of(built: Placement, moves: Mapping[str, list[str | None]]) -> set[str | None]:
    """The devices the parameters may be on: those placed, and every move of a name it was bound
    through (``moves``: the file's ``<name>.to(...)`` by receiver); a module built without a device and
    never moved is on the CPU."""
    moved = [*built.devices, *(device for name in built.names for device in moves.get(name, ()))]
    return set(moved) or {"cpu"}
