"""Edits for removed-API changes on environments: an assignment a property's setter now refuses, and a
``_step`` that still returns its output under ``"next"``. Pure functions of nodes; ``removed_api``
decides when they apply."""

from __future__ import annotations

from rlguard.engine.findings import Edit
from rlguard.engine.lazy import cst
from rlguard.engine.traversal import iter_nodes


def call_instead(line: cst.SimpleStatementLine, assign: cst.Assign, target: cst.Attribute, method: str,
                 guard: bool) -> Edit | None:
    """``obj.attr = v`` -> ``obj.method(v)``; ``obj.attr = name = v`` -> ``name = v`` then ``obj.method(name)``
    (the other targets keep the value). With ``guard`` (``v`` may be None, which the attribute took and the
    method refuses), the call runs under ``if v is not None:``. None when the statement shares its line with
    others, the other targets are not plain names, or a guarded value is not a name or attribute chain (it
    would be evaluated twice)."""
    if len(line.body) != 1:
        return None
    others = [t for t in assign.targets if t.target is not target]
    names = [t.target for t in others if isinstance(t.target, cst.Name)]
    if len(names) != len(others):
        return None
    value = cst.Name(names[-1].value) if names else assign.value
    if guard and not _plain(value):
        return None
    # The line's own comment stays with the call.
    call: cst.BaseStatement = line.with_changes(
        body=[cst.Expr(cst.Call(cst.Attribute(target.value, cst.Name(method)), [cst.Arg(value)]))],
        leading_lines=line.leading_lines if not others and not guard else [])
    if guard:
        test = cst.Comparison(value, [cst.ComparisonTarget(cst.IsNot(), cst.Name("None"))])
        call = cst.If(test, cst.IndentedBlock([call]), leading_lines=line.leading_lines if not others else [])
    if not others:
        return Edit(line, call)
    kept = line.with_changes(body=[assign.with_changes(targets=others)], trailing_whitespace=cst.TrailingWhitespace())
    return Edit(line, cst.FlattenSentinel([kept, call]))


def _plain(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)


def _key(node: cst.BaseExpression) -> str | None:
    value = node.evaluated_value if isinstance(node, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def under_key(literal: cst.BaseExpression, key: str) -> cst.Dict | None:
    """``{"next": {...}}``: the inner dict literal, when it is the literal's only entry."""
    if not isinstance(literal, cst.Dict) or len(literal.elements) != 1:
        return None
    element = literal.elements[0]
    if not isinstance(element, cst.DictElement) or _key(element.key) != key or not isinstance(element.value, cst.Dict):
        return None
    return element.value


def _source(call: cst.Call) -> cst.BaseExpression | None:
    """The first argument of ``TensorDict(source, batch_size)``, by position or as ``source=``."""
    for position, arg in enumerate(call.args):
        if (arg.keyword is None and position == 0 and not arg.star) or (arg.keyword and arg.keyword.value == "source"):
            return arg.value
    return None


def nested_outputs(function: cst.FunctionDef, key: str) -> tuple[list[cst.Dict], list[Edit] | None]:
    """The dict literals under ``key`` that ``function`` returns (``return TensorDict({"next": {...}}, shape)``,
    directly or through a name bound once to it), and the edits that return their entries at the root:
    the literal becomes its inner dict, and each ``name["next"]`` read in the function becomes ``name``.
    The edits are None when the name is read otherwise (passed on, or another key): the structure the
    rest of the function expects is not known."""
    nodes = list(iter_nodes(function.body))
    bound: dict[str, list[cst.BaseExpression]] = {}
    for node in nodes:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    bound.setdefault(target.target.value, []).append(node.value)
    literals: list[cst.Dict] = []
    names: set[str] = set()
    for node in nodes:
        if not isinstance(node, cst.Return) or node.value is None:
            continue
        value = node.value
        if isinstance(value, cst.Name) and len(bound.get(value.value, ())) == 1:
            names.add(value.value)
            value = bound[value.value][0]
        source = _source(value) if isinstance(value, cst.Call) else value
        if source is not None and under_key(source, key) is not None:
            literals.append(source)  # type: ignore[arg-type]  # a Dict, by ``under_key``
    if not literals:
        return [], None
    edits = [Edit(literal, under_key(literal, key)) for literal in literals]  # type: ignore[arg-type]
    reads = {id(n.value) for n in nodes if isinstance(n, cst.Subscript) and len(n.slice) == 1
             and isinstance(n.slice[0].slice, cst.Index) and _key(n.slice[0].slice.value) == key}
    returned = {id(n.value) for n in nodes if isinstance(n, cst.Return)}
    stored = {id(t.target) for n in nodes if isinstance(n, cst.Assign) for t in n.targets}
    for node in nodes:
        if isinstance(node, cst.Name) and node.value in names and id(node) not in stored | returned:
            if id(node) not in reads:
                return literals, None
    for node in nodes:
        if isinstance(node, cst.Subscript) and id(node.value) in reads and isinstance(node.value, cst.Name) \
                and node.value.value in names:
            edits.append(Edit(node, node.value))
    return literals, edits
