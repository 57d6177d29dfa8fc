"""TensorDicts built without a device: ``TensorDict(...)`` or ``TensorDict.from_dict(...)`` with no
``device=``, followed through names and the methods that keep the device (RLG004 and the summaries)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlguard.engine.lazy import cst

from rlguard.engine.apimodel import model
from rlguard.engine.matching import has_star_kwargs, is_none, keyword, method_call, positional
from rlguard.engine.values import MAX_DEPTH

if TYPE_CHECKING:
    from rlguard.engine.context import FileContext


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
