"""Shared matching helpers: call names, keyword arguments, tensor-valued inference.

Used by the engine (context, index) and by several rules; nothing here is specific to one rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple
from collections.abc import Iterator

from rlguard.engine.lazy import cst

from rlguard.engine.names import dotted_name

if TYPE_CHECKING:
    from rlguard.engine.context import Binding, FileContext
    from rlguard.engine.index import AttrFact, ProjectIndex


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == name), None)


def positional(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def is_none(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def method_call(node: cst.CSTNode) -> tuple[cst.BaseExpression, str] | None:
    """(receiver, method) for ``receiver.method(...)``."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.value, node.func.attr.value
    return None


# ----------------------------------------------------------------------------------------------
# Tensor-valued inference.
#
# An expression is tensor-valued when it evaluates to a torch tensor or to a value holding
# tensors: a dict, list, tuple or comprehension of them, the tuple ``torch.sort`` returns,
# ``model.parameters()``, a ``state_dict()``. ``tensor_leaves`` finds the parts that hold them,
# following names to what they were bound to, so a rule can name them and a fix can convert them.
# The vocabulary is an allow-list: an unknown call or method is never a tensor.

# torch.<name>(...) returning one tensor (factories and math).
TENSOR_FUNCTIONS = frozenset(
    """tensor as_tensor asarray from_numpy frombuffer scalar_tensor zeros ones empty full rand randn randint
    randperm arange range linspace logspace eye zeros_like ones_like empty_like full_like rand_like randn_like
    randint_like empty_strided as_strided complex polar stack cat concat concatenate hstack vstack dstack
    column_stack row_stack exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square abs absolute sum nansum mean
    nanmean prod std var logsumexp logcumsumexp amax amin argmax argmin argsort msort all any count_nonzero
    where clamp clip clamp_min clamp_max sigmoid tanh relu softmax log_softmax matmul mm bmm mv einsum outer
    inner dot vdot tensordot kron cross flatten ravel reshape squeeze unsqueeze transpose swapaxes swapdims
    permute movedim moveaxis t flip fliplr flipud roll rot90 narrow select take take_along_dim cumsum cumprod
    diff sin cos tan asin acos atan atan2 arcsin arccos arctan arctan2 sinh cosh asinh acosh atanh pow
    float_power floor ceil round trunc frac fix sign sgn signbit neg negative reciprocal add sub subtract mul
    multiply div divide true_divide floor_divide remainder fmod fmax fmin minimum maximum lerp hypot logaddexp
    erf erfc erfinv lgamma digamma exp2 xlogy nan_to_num isnan isinf isfinite isclose eq ne gt ge lt le
    greater less logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_xor
    bitwise_not multinomial normal bernoulli poisson gather scatter scatter_add scatter_reduce index_select
    index_add index_copy index_fill masked_select masked_fill masked_scatter nonzero argwhere tril triu diag
    diagonal diag_embed diagflat block_diag cdist norm dist renorm trace det logdet inverse pinverse
    matrix_power matrix_exp cholesky quantile nanquantile corrcoef cov bincount histc bucketize searchsorted
    unique cartesian_prod combinations repeat_interleave tile broadcast_to expand_copy clone detach addmm
    addmv addbmm baddbmm addcmul addcdiv atleast_1d atleast_2d atleast_3d heaviside deg2rad rad2deg
    view_as_real view_as_complex real imag conj angle softplus sigmoid_ relu_ dropout celu selu rrelu
    threshold prelu""".split()
)
# torch.<name>(...) returning a tuple of tensors.
TENSOR_TUPLE_FUNCTIONS = frozenset(
    """sort topk chunk split unbind tensor_split hsplit vsplit dsplit kthvalue mode cummax cummin aminmax
    frexp std_mean var_mean meshgrid broadcast_tensors histogram histogramdd lu_unpack slogdet geqrf qr svd
    lstsq triangular_solve lobpcg pca_lowrank svd_lowrank""".split()
)
# Reductions that return (values, indices) when given a dimension: ``torch.max(x, 1)``.
DIM_REDUCTIONS = frozenset({"max", "min", "median", "nanmedian"})
# Calls returning a tuple when one of these keywords is passed.
TUPLE_KEYWORDS = frozenset({"return_inverse", "return_counts", "as_tuple", "return_indices"})
TENSOR_CLASSES = frozenset(
    """Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor ShortTensor CharTensor
    ByteTensor BoolTensor""".split()
)
# Modules whose public functions return tensors, with those that return a tuple of them.
TENSOR_MODULES: dict[str, frozenset[str]] = {
    "torch.nn.functional": frozenset({"multi_head_attention_forward"}),
    "torch.linalg": frozenset(
        """eig eigh svd qr slogdet lstsq lu lu_factor lu_factor_ex inv_ex cholesky_ex solve_ex ldl_factor
        ldl_factor_ex""".split()
    ),
    "torch.special": frozenset(),
    "torch.fft": frozenset(),
}
# Methods that, on a tensor, return a tensor.
TENSOR_METHODS = frozenset(
    """sum nansum mean nanmean max min median nanmedian std var prod amax amin all any logsumexp detach cpu
    cuda clone to float double half bfloat16 long int short bool byte char cfloat type_as contiguous
    pin_memory requires_grad_ detach_ abs exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square pow reshape
    reshape_as view view_as flatten ravel squeeze unsqueeze permute transpose swapaxes movedim t flip roll
    narrow select expand expand_as repeat repeat_interleave tile broadcast_to argmax argmin argsort softmax
    log_softmax sigmoid tanh relu clamp clip clamp_min clamp_max round floor ceil trunc frac sign sgn neg
    reciprocal cumsum cumprod diff norm renorm add sub mul div true_divide floor_divide remainder fmod
    matmul mm bmm mv dot outer lerp maximum minimum eq ne gt ge lt le isnan isinf isfinite logical_not
    logical_and logical_or masked_fill masked_select masked_scatter gather scatter scatter_add index_select
    index_add index_fill index_copy take nonzero argwhere tril triu diag diagonal trace det inverse
    pinverse nan_to_num sin cos tan asin acos atan sinh cosh atanh erf erfinv lgamma digamma unique
    bincount histc quantile nanquantile count_nonzero add_ sub_ mul_ div_ clamp_ zero_ fill_ copy_
    normal_ uniform_ exponential_ bernoulli_ abs_ neg_ sqrt_ exp_ log_ pow_ masked_fill_ scatter_
    scatter_add_ index_add_ index_fill_ index_copy_ unsqueeze_ squeeze_ t_ transpose_ resize_ apply_
    map_ float_ sigmoid_ tanh_ relu_ round_ floor_ ceil_ clip_ nan_to_num_ cumsum_ logit softplus""".split()
)
TENSOR_TUPLE_METHODS = frozenset(
    """sort topk chunk split unbind tensor_split hsplit vsplit dsplit kthvalue mode cummax cummin aminmax
    frexp slogdet qr svd lstsq triangular_solve""".split()
)
# Attributes of a tensor that are tensors (``grad`` may be None, so it is not one of them).
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
# Fields of the named tuples torch returns (``torch.max(x, 1).values``).
TENSOR_TUPLE_FIELDS = frozenset({"values", "indices", "eigenvalues", "eigenvectors", "U", "S", "Vh", "Q", "R"})
# Methods that return many tensors at once (a generator or a dict of them), whatever the receiver.
BULK_TENSOR_METHODS = frozenset({"parameters", "named_parameters", "state_dict", "buffers", "named_buffers"})
# Classes whose ``state_dict()`` holds plain Python values (step counts, learning rates).
PLAIN_STATE_PREFIXES = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.SWALR")
TENSOR_ANNOTATIONS = frozenset(
    {"torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor", "torch.nn.Parameter",
     "torch.nn.parameter.Parameter"}
)

MAX_DEPTH = 12

# "tensor": one tensor (``.tolist()`` converts it); "tensors": a tuple of tensors (``torch.sort``,
# ``x.chunk(2)``, ``x.max(dim=0)``); "bulk": many tensors of a model (``parameters()``, ``state_dict()``).
LeafKind = Literal["tensor", "tensors", "bulk"]
# A question only the complete project index answers (see ``condition_holds``):
#   ("tensor-attr", class, attr): the class (or the first ancestor assigning it) assigns ``self.attr``
#       a tensor-valued expression;
#   ("bulk-method", class, method): no linted class in the class's ancestry defines ``method`` (so it
#       is torch's, and holds tensors);
#   ("bulk-attr-method", class, attr, method): the same for the classes ``self.attr`` is built from.
Condition = tuple[str, ...]
_CERTAIN: frozenset[Condition] = frozenset()


class Leaf(NamedTuple):
    """One tensor-valued part of an expression."""

    node: cst.BaseExpression  # the expression to name or convert
    kind: LeafKind
    when: frozenset[Condition] = _CERTAIN  # tensor-valued only if one of these holds; empty: certainly
    bindings: tuple[Binding, ...] = ()  # name bindings followed to reach the leaf, outermost first
    via: tuple[cst.Name, ...] = ()  # references to the containers followed (``m`` in ``m = {"a": t}; dumps(m)``)
    local: bool = True  # every binding followed is in the innermost scope
    encodable: bool = True  # only inside containers JSON encodes (not a set or a generator)

    @property
    def certain(self) -> bool:
        return not self.when


def tensor_leaves(node: cst.BaseExpression, ctx: FileContext, *, deferred: bool = False) -> list[Leaf]:
    """The tensor-valued parts of ``node``, looking into literals, comprehensions and name bindings.

    Without ``deferred``, facts not yet known (``self.x`` assigned later in the class, a method a
    linted class may define) count as not tensor-valued. With it, such parts are returned with the
    conditions (``Leaf.when``) that the complete index answers through ``condition_holds``.
    """
    return _Inference(ctx, deferred).leaves(node, {}, 0, (), (), True, True)


def is_tensor_valued(node: cst.BaseExpression, ctx: FileContext) -> bool:
    """Whether ``node`` certainly evaluates to a tensor or to a value holding tensors."""
    return any(leaf.certain for leaf in tensor_leaves(node, ctx))


def condition_holds(condition: Condition, index: ProjectIndex, path: str) -> bool:
    """Answer a ``Leaf.when`` condition against the complete project index."""
    kind = condition[0]
    if kind == "tensor-attr":
        return any(fact.tensor for fact in _attr_facts(index, condition[1], condition[2], path))
    if kind == "bulk-method":
        return index.method_owner(condition[1], condition[2], near=path) is None
    if kind == "bulk-attr-method":
        for fact in _attr_facts(index, condition[1], condition[2], path):
            if fact.callee is not None and (
                fact.callee.startswith(PLAIN_STATE_PREFIXES)
                or index.method_owner(fact.callee, condition[3], near=path) is not None
            ):
                return False
        return True
    return False


def _attr_facts(index: ProjectIndex, cls: str, attr: str, path: str) -> list[AttrFact]:
    """Assignments of ``self.attr`` in the first class of the ancestry that makes any."""
    for _, facts in index.ancestry(cls, near=path):
        if facts is not None and attr in facts.attrs:
            return facts.attrs[attr]
    return []


# What a name means while a bound expression is analysed: overrides of the scope's bindings.
# None: unknown (a comprehension variable, a name bound before the first binding we know of).
_Env = dict[str, tuple["Binding", bool] | None]
# (kind, conditions) of a single value, or None when it is not tensor-valued.
_Kind = tuple[LeafKind, frozenset[Condition]] | None


class _Inference:
    def __init__(self, ctx: FileContext, deferred: bool) -> None:
        self.ctx = ctx
        self.deferred = deferred

    # ----- names -----
    def lookup(self, name: str, env: _Env) -> tuple[Binding, bool] | None:
        """(binding, whether it is in the innermost scope) for a name, honouring ``env``."""
        if name in env:
            return env[name]
        return self.ctx.find_binding(name)

    @staticmethod
    def inside(name: str, binding: Binding, local: bool, env: _Env) -> _Env:
        """The environment in which ``binding.value`` was evaluated: ``x = x.mean()`` reads the old ``x``."""
        return {**env, name: (binding.previous, local) if binding.previous is not None else None}

    def is_annotated_tensor(self, binding: Binding) -> bool:
        annotated = annotated_type(binding.annotation) if binding.annotation is not None else None
        return annotated is not None and self.ctx.qualname(annotated) in TENSOR_ANNOTATIONS

    # ----- containers -----
    def leaves(self, node: cst.BaseExpression, env: _Env, depth: int, bindings: tuple, via: tuple,
               local: bool, encodable: bool) -> list[Leaf]:
        if depth > MAX_DEPTH:
            return []
        if isinstance(node, cst.Name):
            found = self.lookup(node.value, env)
            if found is None:
                return []
            binding, innermost = found
            local = local and innermost
            if self.is_annotated_tensor(binding):
                return [Leaf(node, "tensor", _CERTAIN, bindings + (binding,), via, local, encodable)]
            if binding.value is None or binding.opaque:
                return []
            inner_env = self.inside(node.value, binding, innermost, env)
            if _is_container(binding.value):
                return self.leaves(binding.value, inner_env, depth + 1, bindings + (binding,), via + (node,),
                                   local, encodable)
            kind = self.kind(binding.value, inner_env, depth + 1)
            return [Leaf(node, kind[0], kind[1], bindings + (binding,), via, local, encodable)] if kind else []
        if isinstance(node, cst.Dict):
            return [leaf for element in node.elements if isinstance(element, cst.DictElement)
                    for leaf in self.leaves(element.value, env, depth + 1, bindings, via, local, encodable)]
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            encodable = encodable and not isinstance(node, cst.Set)
            return [leaf for element in node.elements
                    for leaf in self.leaves(element.value, env, depth + 1, bindings, via, local, encodable)]
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            inner_env = {**env, **{name: None for name in _comprehension_names(node.for_in)}}
            element = node.value if isinstance(node, cst.DictComp) else node.elt
            encodable = encodable and isinstance(node, (cst.ListComp, cst.DictComp))
            return self.leaves(element, inner_env, depth + 1, bindings, via, local, encodable)
        kind = self.kind(node, env, depth)
        return [Leaf(node, kind[0], kind[1], bindings, via, local, encodable)] if kind else []

    # ----- single values -----
    def kind(self, node: cst.BaseExpression, env: _Env, depth: int) -> _Kind:
        """Whether a non-container expression is a tensor, a tuple of tensors, many tensors, or none."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(node, cst.Name):
            found = self.lookup(node.value, env)
            if found is None:
                return None
            binding, innermost = found
            if self.is_annotated_tensor(binding):
                return "tensor", _CERTAIN
            if binding.value is None or binding.opaque or _is_container(binding.value):
                return None
            return self.kind(binding.value, self.inside(node.value, binding, innermost, env), depth + 1)
        if isinstance(node, cst.Call):
            return self.call_kind(node, env, depth)
        if isinstance(node, cst.Subscript):
            inner = self.kind(node.value, env, depth + 1)
            return ("tensor", inner[1]) if inner and inner[0] in ("tensor", "tensors") else None
        if isinstance(node, cst.Attribute):
            return self.attribute_kind(node, env, depth)
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                return None  # "%s" % t is a string
            return _either(self.tensor(node.left, env, depth), self.tensor(node.right, env, depth))
        if isinstance(node, cst.UnaryOperation):
            return None if isinstance(node.operator, cst.Not) else _as_tensor(self.tensor(node.expression, env, depth))
        if isinstance(node, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
                return None
            operands = [node.left, *(c.comparator for c in node.comparisons)]
            return _either(*(self.tensor(operand, env, depth) for operand in operands))
        if isinstance(node, cst.IfExp):
            body, orelse = self.tensor(node.body, env, depth), self.tensor(node.orelse, env, depth)
            return ("tensor", _CERTAIN) if body == _CERTAIN and orelse == _CERTAIN else None
        return None

    def tensor(self, node: cst.BaseExpression, env: _Env, depth: int) -> frozenset[Condition] | None:
        """The conditions under which ``node`` is one tensor (empty: certainly), or None if it is not."""
        kind = self.kind(node, env, depth + 1)
        return kind[1] if kind and kind[0] == "tensor" else None

    def call_kind(self, node: cst.Call, env: _Env, depth: int) -> _Kind:
        qualname = self.ctx.callee(node)
        if qualname is not None:
            kind = _function_kind(qualname, node)
            return (kind, _CERTAIN) if kind else None
        called = method_call(node)
        if called is None:
            return None
        receiver, method = called
        if method in BULK_TENSOR_METHODS:
            return self.bulk_kind(receiver, method, env)
        when = self.tensor(receiver, env, depth)
        if when is None:
            return None
        kind = _method_kind(method, node)
        return (kind, when) if kind else None

    def attribute_kind(self, node: cst.Attribute, env: _Env, depth: int) -> _Kind:
        attr = self.ctx.is_self_attr(node)
        if attr is not None and node.value.value not in env:  # type: ignore[attr-defined]
            cls = self.ctx.current_class
            if cls is None:
                return None
            if self.deferred:
                return "tensor", frozenset({("tensor-attr", cls.qualname, attr)})
            return ("tensor", _CERTAIN) if any(f.tensor for f in cls.attrs.get(attr, ())) else None
        name = node.attr.value
        if name in TENSOR_ATTRIBUTES:
            return _as_tensor(self.tensor(node.value, env, depth))
        if name in TENSOR_TUPLE_FIELDS:
            inner = self.kind(node.value, env, depth + 1)
            return ("tensor", inner[1]) if inner and inner[0] == "tensors" else None
        return None

    def bulk_kind(self, receiver: cst.BaseExpression, method: str, env: _Env) -> _Kind:
        """``x.state_dict()``: many tensors, unless ``x`` is known to hold plain values."""
        cls = self.ctx.current_class
        if isinstance(receiver, cst.Name) and cls is not None and receiver.value not in env \
                and self.ctx.is_self(receiver.value):
            if self.deferred:
                return "bulk", frozenset({("bulk-method", cls.qualname, method)})
            return None if method in cls.methods else ("bulk", _CERTAIN)
        attr = self.ctx.is_self_attr(receiver)
        if attr is not None and cls is not None:
            facts = cls.attrs.get(attr, ())
            if any(f.callee is not None and f.callee.startswith(PLAIN_STATE_PREFIXES) for f in facts):
                return None
            if self.deferred:
                return "bulk", frozenset({("bulk-attr-method", cls.qualname, attr, method)})
            return "bulk", _CERTAIN
        built = self.constructor(receiver, env)
        if built is not None:
            if built.startswith(PLAIN_STATE_PREFIXES):
                return None
            if self.deferred and not built.startswith("torch."):
                return "bulk", frozenset({("bulk-method", built, method)})
        return "bulk", _CERTAIN

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


def _is_container(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Dict, cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp,
                             cst.GeneratorExp))


def _comprehension_names(comp_for: cst.CompFor | None) -> list[str]:
    names: list[str] = []
    while comp_for is not None:
        names.extend(_target_names(comp_for.target))
        comp_for = comp_for.inner_for_in
    return names


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def _as_tensor(when: frozenset[Condition] | None) -> _Kind:
    return ("tensor", when) if when is not None else None


def _either(*whens: frozenset[Condition] | None) -> _Kind:
    """One tensor when any operand is: certainly if one certainly is, else under any operand's conditions."""
    known = [when for when in whens if when is not None]
    if not known:
        return None
    if any(not when for when in known):
        return "tensor", _CERTAIN
    return "tensor", frozenset().union(*known)


def _returns_tuple(name: str, call: cst.Call) -> bool:
    """Calls of ``max``/``min``/``median`` with a dimension, or with a flag asking for a tuple."""
    if any(arg.keyword is not None and arg.keyword.value in TUPLE_KEYWORDS and not _is_false(arg.value)
           for arg in call.args):
        return True
    if name == "where" and len(call.args) == 1:
        return True  # torch.where(condition) is torch.nonzero(condition, as_tuple=True)
    return False


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _function_kind(qualname: str, call: cst.Call) -> LeafKind | None:
    module, _, name = qualname.rpartition(".")
    if module == "torch":
        if name in TENSOR_TUPLE_FUNCTIONS or _returns_tuple(name, call):
            return "tensors"
        if name in DIM_REDUCTIONS:
            # torch.max(x) is a tensor; torch.max(x, 1) a tuple; torch.max(x, y) a tensor again.
            return "tensor" if len(call.args) == 1 and call.args[0].keyword is None else "tensors"
        if name in TENSOR_FUNCTIONS or name in TENSOR_CLASSES:
            return "tensor"
        return None
    if qualname in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return "tensor"
    tuples = TENSOR_MODULES.get(module)
    if tuples is not None and not name.startswith(("_", "has_", "handle_")) and name[:1].islower():
        return "tensors" if name in tuples or _returns_tuple(name, call) else "tensor"
    return None


def _method_kind(method: str, call: cst.Call) -> LeafKind | None:
    """What ``t.<method>(...)`` gives on a tensor ``t``."""
    if method in TENSOR_TUPLE_METHODS or _returns_tuple(method, call):
        return "tensors"
    if method in DIM_REDUCTIONS:
        return "tensors" if call.args else "tensor"
    if method in TENSOR_METHODS:
        return "tensor"
    return None


class ForwardReference(NamedTuple):
    """A string in an annotation that spells a type, and the expression it spells."""

    literal: cst.SimpleString
    expression: cst.BaseExpression


def forward_references(annotation: cst.BaseExpression) -> list[ForwardReference]:
    """The strings of an annotation that are types: the annotation itself, or a type argument.

    ``Literal[...]`` values and ``Annotated[...]`` metadata are strings, not types. A string
    with escapes or prefixes, or one that is not an expression, is left out.
    """
    found: list[ForwardReference] = []

    def walk(node: cst.BaseExpression, is_type: bool) -> None:
        if isinstance(node, cst.SimpleString):
            expression = _parse_reference(node) if is_type else None
            if expression is not None:
                found.append(ForwardReference(node, expression))
        elif isinstance(node, cst.Subscript):
            origin = (dotted_name(node.value) or "").rpartition(".")[2]
            if origin != "Literal":
                for position, element in enumerate(node.slice):
                    if isinstance(element.slice, cst.Index):
                        walk(element.slice.value, not (origin == "Annotated" and position > 0))
        elif isinstance(node, cst.BinaryOperation):  # X | "Y"
            walk(node.left, True)
            walk(node.right, True)
        elif isinstance(node, (cst.List, cst.Tuple)):  # Callable[["X"], "Y"]
            for element in node.elements:
                walk(element.value, True)

    walk(annotation, True)
    return found


def annotated_type(annotation: cst.BaseExpression) -> cst.BaseExpression | None:
    """The type an annotation spells: a string annotation's parsed content, else itself."""
    return _parse_reference(annotation) if isinstance(annotation, cst.SimpleString) else annotation


_UNIONS = frozenset({"typing.Optional", "typing.Union", "typing_extensions.Optional", "typing_extensions.Union"})


def type_alternatives(annotation: cst.BaseExpression, ctx: FileContext, depth: int = 0) -> list[cst.BaseExpression]:
    """The types an annotation admits: the members of ``Optional[...]``, ``Union[...]`` and
    ``X | Y``, or the annotation itself; strings read as the types they spell."""
    spelled = annotated_type(annotation)
    if spelled is None or depth > 4:
        return []
    if isinstance(spelled, cst.Subscript) and ctx.qualname(spelled.value) in _UNIONS:
        members = [element.slice.value for element in spelled.slice if isinstance(element.slice, cst.Index)]
    elif isinstance(spelled, cst.BinaryOperation) and isinstance(spelled.operator, cst.BitOr):
        members = [spelled.left, spelled.right]
    else:
        return [spelled]
    return [alternative for member in members for alternative in type_alternatives(member, ctx, depth + 1)]


def _parse_reference(literal: cst.SimpleString) -> cst.BaseExpression | None:
    if literal.prefix or "\\" in literal.raw_value:
        return None
    try:
        return cst.parse_expression(literal.raw_value)
    except cst.ParserSyntaxError:
        return None


def literal_items(value: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """What an argument passes: itself, or the items of a list, tuple or dict literal."""
    if isinstance(value, (cst.List, cst.Tuple)):
        yield from (e.value for e in value.elements if isinstance(e, cst.Element))
    elif isinstance(value, cst.Dict):
        yield from (e.value for e in value.elements if isinstance(e, cst.DictElement))
    else:
        yield value


def loaded_names(root: cst.CSTNode, names: frozenset[str]) -> list[cst.Name]:
    """Every read of one of ``names`` under ``root``: not assignment targets, attributes, keywords,
    parameters, imports or definitions. Reads inside nested functions count (they may be closures)."""
    from rlguard.engine.traversal import iter_nodes

    written: set[int] = set()
    found = []
    for node in iter_nodes(root):  # parents come before their children
        if isinstance(node, cst.Name):
            if node.value in names and id(node) not in written:
                found.append(node)
            continue
        for target in _written_by(node):
            written.update(id(name) for name in _target_name_nodes(target))
    return found


def _written_by(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of ``node`` that name something rather than read it."""
    if isinstance(node, cst.Attribute):
        return [node.attr]
    if isinstance(node, cst.Arg):
        return [node.keyword] if node.keyword is not None else []
    if isinstance(node, (cst.Param, cst.FunctionDef, cst.ClassDef)):
        return [node.name]
    if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
        return [node.target]
    if isinstance(node, cst.AsName):
        return [node.name]
    if isinstance(node, cst.ImportAlias):
        dotted: list[cst.CSTNode] = []
        part: cst.CSTNode = node.name
        while isinstance(part, cst.Attribute):
            dotted.append(part.attr)
            part = part.value
        return [*dotted, part]
    if isinstance(node, (cst.Global, cst.Nonlocal)):
        return [item.name for item in node.names]
    return []


def _target_name_nodes(target: cst.CSTNode) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_name_nodes(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_name_nodes(target.value)
    return []
