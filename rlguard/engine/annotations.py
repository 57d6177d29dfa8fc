"""What annotations spell: the strings in them that are types (forward references), and the types a
union admits. Read by the value model and by the rules that check names in annotations."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from rlguard.engine.lazy import cst

from rlguard.engine.names import dotted_name

if TYPE_CHECKING:
    from rlguard.engine.context import FileContext


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
                for position, subscript in enumerate(node.slice):
                    if isinstance(subscript.slice, cst.Index):
                        walk(subscript.slice.value, not (origin == "Annotated" and position > 0))
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
