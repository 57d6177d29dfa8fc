"""Facts about members read while a class is walked (``AttrFact``): which constructor parameter a member
stores, which assignments set a member lazily, and which class-body annotations are dataclass fields.
``engine/members.py`` reads them from the index."""

from __future__ import annotations

from rlguard.engine.lazy import cst
from rlguard.engine.names import dotted_name

# Methods that run when an instance is built (or rebuilt from a copy): members they set are there at once.
CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__", "__attrs_post_init__", "__setstate__"})
# Decorators and bases that turn class-body annotations into constructor parameters.
_FIELD_DECORATORS = frozenset({"dataclasses.dataclass", "attr.s", "attr.attrs", "attr.define", "attr.frozen",
                               "attr.mutable", "attrs.define", "attrs.frozen", "attrs.mutable", "pydantic.dataclasses.dataclass"})
_FIELD_BASES = frozenset({"typing.NamedTuple"})
_KWARGS_READS = frozenset({"get", "pop", "setdefault"})  # ``options.get("guard")``


def stored_parameter(method: cst.FunctionDef, value: cst.BaseExpression) -> tuple[str, int | None] | None:
    """(parameter, position) when ``value`` is a parameter of the constructor ``method`` as given: the
    name itself (or ``name or default``; position: which positional argument fills it; None for keyword-only), or
    ``options["guard"]`` / ``options.get("guard")`` of its ``**options`` (a keyword only)."""
    params = method.params
    if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or):
        value = value.left  # ``guard or nullcontext()``: the argument, when one is given
    if isinstance(value, cst.Name):
        positional = [p.name.value for p in (*params.posonly_params, *params.params)][1:]  # without self
        if value.value in positional:
            return value.value, positional.index(value.value)
        if value.value in {p.name.value for p in params.kwonly_params}:
            return value.value, None
        return None
    kwargs = params.star_kwarg.name.value if isinstance(params.star_kwarg, cst.Param) else None
    key = keyword_read(value, kwargs) if kwargs is not None else None
    return (key, None) if key is not None else None


def forwarded(method: cst.FunctionDef, call: cst.BaseExpression) -> tuple[tuple[int | str, str, int | None], ...]:
    """What a call in the constructor ``method`` passes on of the constructor's own parameters: (slot
    in the call, parameter, position that fills the parameter), slot ``"**"`` for ``**kwargs`` passed
    on whole (``self.net = Inner(guard, **kwargs)``)."""
    if not isinstance(call, cst.Call):
        return ()
    kwargs = method.params.star_kwarg.name.value if isinstance(method.params.star_kwarg, cst.Param) else None
    found: list[tuple[int | str, str, int | None]] = []
    for position, arg in enumerate(call.args):
        if arg.star == "*":
            break
        if arg.star == "**":
            if kwargs is not None and dotted_name(arg.value) == kwargs:
                found.append(("**", kwargs, None))
            continue
        stored = stored_parameter(method, arg.value)
        if stored is not None:
            found.append((arg.keyword.value if arg.keyword is not None else position, *stored))
    return tuple(found)


def keyword_read(value: cst.BaseExpression, kwargs: str) -> str | None:
    """``"guard"`` for ``kwargs["guard"]`` and ``kwargs.get("guard", ...)``."""
    if isinstance(value, cst.Subscript) and dotted_name(value.value) == kwargs and len(value.slice) == 1:
        index = value.slice[0].slice
        key = index.value if isinstance(index, cst.Index) else None
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in _KWARGS_READS and dotted_name(value.func.value) == kwargs and value.args:
        key = value.args[0].value
    else:
        return None
    text = key.evaluated_value if isinstance(key, cst.SimpleString) else None
    return text if isinstance(text, str) else None


def lazily_set(method: cst.FunctionDef, self_name: str) -> frozenset[int]:
    """Ids of the values ``method`` assigns to ``self.<attr>`` under a test that ``attr`` is unset
    (``if self._lock is None:``, ``if not hasattr(self, "_lock"):``): first use creates the member.
    Constructors set their members at once."""
    from rlguard.engine.traversal import iter_nodes  # the traversal imports the context, which imports this

    if method.name.value in CONSTRUCTORS:
        return frozenset()
    found: set[int] = set()
    for node in iter_nodes(method.body):
        if type(node) is not cst.If:  # not isinstance: it fails for nearly every node, slowly on libcst's ABCs
            continue
        tested = _tested_attrs(node.test, self_name)
        for inner in iter_nodes(node.body) if tested else ():
            if isinstance(inner, cst.Assign) and any(_self_attr(t.target, self_name) in tested for t in inner.targets):
                found.add(id(inner.value))
            elif isinstance(inner, cst.AnnAssign) and inner.value is not None \
                    and _self_attr(inner.target, self_name) in tested:
                found.add(id(inner.value))
    return frozenset(found)


def _tested_attrs(test: cst.BaseExpression, self_name: str) -> set[str]:
    """The attributes of ``self`` a test reads: ``self.x``, and ``hasattr``/``getattr(self, "x", ...)``."""
    from rlguard.engine.traversal import iter_nodes

    found = set()
    for node in iter_nodes(test):
        attr = _self_attr(node, self_name)
        if attr is not None:
            found.add(attr)
        elif isinstance(node, cst.Call) and dotted_name(node.func) in ("hasattr", "getattr") and len(node.args) >= 2 \
                and dotted_name(node.args[0].value) == self_name and isinstance(node.args[1].value, cst.SimpleString):
            name = node.args[1].value.evaluated_value
            if isinstance(name, str):
                found.add(name)
    return found


def _self_attr(node: cst.CSTNode, self_name: str) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == self_name:
        return node.attr.value
    return None


def has_fields(decorators: tuple[str, ...], bases: tuple[str, ...]) -> bool:
    """Class-body annotations of this class are constructor parameters (a dataclass, attrs class, NamedTuple)."""
    return bool(_FIELD_DECORATORS.intersection(decorators) or _FIELD_BASES.intersection(bases))


def field_default(value: cst.BaseExpression | None, field_call: str | None) -> cst.BaseExpression | None:
    """The expression that builds a field's default: the value itself, or the body of the lambda (or the
    callable) ``field(default_factory=...)`` is given; None when there is none."""
    if value is None:
        return None
    if not isinstance(value, cst.Call) or field_call not in ("dataclasses.field", "attr.ib", "attrs.field", "attr.field"):
        return value
    for arg in value.args:
        if arg.keyword is not None and arg.keyword.value in ("default", "factory", "default_factory"):
            if arg.keyword.value == "default":
                return arg.value
            factory = arg.value
            return factory.body if isinstance(factory, cst.Lambda) else cst.Call(func=factory)
    return None
