"""Shared matching helpers: call names, keyword arguments, tensor-valued inference.

Used by several rules and by the engine's index; nothing here is specific to one rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Optional

import libcst as cst

if TYPE_CHECKING:
    from rlguard.engine.context import FileContext

# torch functions that return tensors (factories and math); anything else under torch.*
# (is_available, device_count, manual_seed, ...) returns plain Python values or None.
TENSOR_FUNCTIONS = frozenset(
    """tensor as_tensor asarray from_numpy zeros ones empty full rand randn randint randperm arange
    linspace logspace eye zeros_like ones_like empty_like full_like rand_like randn_like randint_like
    stack cat concat concatenate hstack vstack dstack exp log log2 log10 log1p expm1 sqrt rsqrt abs
    sum mean median mode std var prod max min amax amin argmax argmin sort topk where clamp clip sigmoid
    tanh relu softmax log_softmax matmul mm bmm einsum outer dot flatten reshape squeeze unsqueeze
    transpose permute cumsum cumprod sin cos tan pow floor ceil round sign neg multinomial normal
    bernoulli poisson gather index_select masked_select nonzero tril triu diag cdist norm dist
    lerp minimum maximum logsumexp bincount unique chunk split""".split()
)
TENSOR_MODULE_PREFIXES = ("torch.nn.functional.", "torch.distributions.")
# Methods that, on a tensor, return a tensor.
TENSOR_METHODS = frozenset(
    """sum mean max min std var prod median detach cpu cuda clone to float double half bfloat16 long int
    short bool byte abs exp log sqrt pow reshape view view_as flatten squeeze unsqueeze permute transpose
    t contiguous argmax argmin softmax log_softmax clamp clip round cumsum cumprod norm add sub mul div
    matmul neg sign floor ceil expand expand_as repeat masked_fill gather index_select pin_memory
    type_as requires_grad_ detach_ float_ sigmoid tanh relu sin cos unbind chunk split amax amin""".split()
)
# Methods that return many tensors at once, whatever the receiver.
BULK_TENSOR_METHODS = frozenset({"parameters", "named_parameters", "state_dict", "buffers", "named_buffers"})
TENSOR_ANNOTATIONS = frozenset({"torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.nn.Parameter"})

LeafKind = Literal["tensor", "bulk"]


def keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    return next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == name), None)


def positional(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def is_none(node: Optional[cst.CSTNode]) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def method_call(node: cst.CSTNode) -> Optional[tuple[cst.BaseExpression, str]]:
    """(receiver, method) for ``receiver.method(...)``."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.value, node.func.attr.value
    return None


def tensor_leaves(node: cst.BaseExpression, ctx: "FileContext", depth: int = 0) -> list[tuple[cst.BaseExpression, LeafKind]]:
    """The tensor-valued parts of an expression, looking into literals and simple bindings.

    ``bulk`` leaves are many tensors at once (``parameters()``, ``state_dict()``).
    """
    if depth > 8:
        return []
    if isinstance(node, cst.Name):
        binding = ctx.lookup(node.value)
        if binding is None:
            return []
        if binding.annotation is not None and ctx.qualname(binding.annotation) in TENSOR_ANNOTATIONS:
            return [(node, "tensor")]
        if binding.value is None:
            return []
        inner = tensor_leaves(binding.value, ctx, depth + 1)
        # A bound scalar tensor is converted where it is used; a bound container keeps its leaves.
        return [(node, kind) for _, kind in inner[:1]] if inner and _is_single_value(binding.value) else inner
    if isinstance(node, (cst.Dict,)):
        return [leaf for el in node.elements if isinstance(el, cst.DictElement) for leaf in tensor_leaves(el.value, ctx, depth + 1)]
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return [leaf for el in node.elements for leaf in tensor_leaves(el.value, ctx, depth + 1)]
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return [(node, kind) for _, kind in tensor_leaves(node.elt, ctx, depth + 1)[:1]]
    if isinstance(node, cst.DictComp):
        return [(node, kind) for _, kind in tensor_leaves(node.value, ctx, depth + 1)[:1]]
    kind = _value_kind(node, ctx, depth)
    return [(node, kind)] if kind else []


def is_tensor_valued(node: cst.BaseExpression, ctx: "FileContext") -> bool:
    return bool(tensor_leaves(node, ctx))


def _is_single_value(node: cst.BaseExpression) -> bool:
    return not isinstance(node, (cst.Dict, cst.List, cst.Tuple, cst.Set))


def _value_kind(node: cst.BaseExpression, ctx: "FileContext", depth: int) -> Optional[LeafKind]:
    """Whether a non-container expression is a tensor, many tensors, or neither."""
    if isinstance(node, cst.Call):
        qualname = ctx.callee(node)
        if qualname is not None:
            return _function_kind(qualname)
        called = method_call(node)
        if called is None:
            return None
        receiver, method = called
        if method in BULK_TENSOR_METHODS:
            return "bulk"
        if method in TENSOR_METHODS and _is_tensor(receiver, ctx, depth):
            return "tensor"
        return None
    if isinstance(node, cst.Subscript):
        return "tensor" if _is_tensor(node.value, ctx, depth) else None
    if isinstance(node, cst.BinaryOperation):
        return "tensor" if _is_tensor(node.left, ctx, depth) or _is_tensor(node.right, ctx, depth) else None
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        return "tensor" if _is_tensor(node.expression, ctx, depth) else None
    attr = ctx.is_self_attr(node)
    if attr is not None:
        cls = ctx.current_class
        facts = cls.attrs.get(attr, []) if cls is not None else []
        return "tensor" if any(f.tensor for f in facts) else None
    return None


def _function_kind(qualname: str) -> Optional[LeafKind]:
    module, _, name = qualname.rpartition(".")
    if module == "torch" and name in TENSOR_FUNCTIONS:
        return "tensor"
    if qualname.startswith(TENSOR_MODULE_PREFIXES) or qualname == "torch.nn.Parameter":
        return "tensor"
    return None


def _is_tensor(node: cst.BaseExpression, ctx: "FileContext", depth: int) -> bool:
    return any(kind == "tensor" for _, kind in tensor_leaves(node, ctx, depth + 1))
