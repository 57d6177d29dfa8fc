"""The fix of RLG009: the module-level code from the first statement that starts workers on goes under
``if __name__ == "__main__":``, where a worker that imports the module again does not run it.

A spawned worker imports the main module by name and finds there, by name, what it was sent: the
functions and classes pickled by reference (an env factory, a policy's class, a function a module
wraps) and the module-level names their code reads. So the fix keeps at module level every definition
that does not need the moved code (definitions after the first start are hoisted above the guard), and is
offered only where nothing that stays refers to a name the moved code binds, and no function or class
the moved code defines is used by the code that starts the workers. The rule reports; this module plans.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from rlguard.engine.findings import Edit, Fix
from rlguard.engine.lazy import cst
from rlguard.engine.names import module_bindings, module_reads
from rlguard.engine.traversal import children, iter_nodes


def main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either side)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides) and \
        any(isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__" for s in sides)


class _Statement(NamedTuple):
    node: cst.BaseStatement
    binds: set[str]  # module-level names it binds or changes in place
    reads: set[str]  # every name it reads, now or later
    later: set[str]  # names its functions, lambdas and generators read when they run
    defines: set[str]  # the functions and classes it defines at module level

    @property
    def definition(self) -> bool:
        """A ``def``, a ``class`` or an import: it runs nothing of the program's own."""
        node = self.node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return True
        return isinstance(node, cst.SimpleStatementLine) and all(
            isinstance(small, cst.Import) or isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar)
            for small in node.body)


def _facts(node: cst.BaseStatement) -> _Statement:
    defines = {n.name.value for n in _module_level_definitions(node)}
    now, later = module_reads(node)
    return _Statement(node, module_bindings(node), now | later, later, defines)


def _module_level_definitions(node: cst.CSTNode) -> list[cst.FunctionDef | cst.ClassDef]:
    """The ``def`` and ``class`` statements of a top-level statement, outside functions and classes."""
    found: list[cst.FunctionDef | cst.ClassDef] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            found.append(current)
        else:
            stack.extend(children(current))
    return found


def plan(module: cst.Module, starts: Sequence[cst.CSTNode]) -> Fix | str:
    """The fix for a module whose ``starts`` (reported calls) start workers at module level, or why
    there is none (a phrase the rule puts in its remedy)."""
    wanted = {id(node) for node in starts}
    statements = [_facts(node) for node in module.body]
    at = [i for i, s in enumerate(statements) if any(id(n) in wanted for n in iter_nodes(s.node))]
    moved, bound = _to_move(statements, at[0])
    reason = _unsound(statements, moved, at[-1], bound)
    return reason or _fix(module, statements, at[0], moved)


def _to_move(statements: list[_Statement], first: int) -> tuple[set[int], set[str]]:
    """The statements to put under the guard, and the names they bind that nothing kept binds alike:
    everything from ``first`` on but the definitions that need none of it."""
    same = _imported_alike(statements)
    # A definition hoisted above code that used another binding of its name would change what that code
    # sees: only a name bound once in the file (or only by imports of one thing) is hoisted.
    bindings = Counter(name for s in statements for name in s.binds - same)
    moved = {i for i in range(first, len(statements))
             if not statements[i].definition or any(bindings[name] > 1 for name in statements[i].binds - same)}
    while True:
        kept = set().union(*(s.binds for i, s in enumerate(statements) if i not in moved))
        # a name imported again under the guard is the one imported above it
        bound = set().union(*(statements[i].binds for i in moved)) - (same & kept)
        more = {i for i in range(first, len(statements)) if i not in moved
                and (statements[i].reads | statements[i].binds) & bound}
        if not more:
            return moved, bound
        moved |= more


def _fix(module: cst.Module, statements: list[_Statement], first: int, moved: set[int]) -> Fix:
    """The hoisted definitions in the first start's place, then the guard over the moved statements."""
    hoisted = [statements[i].node for i in range(first, len(statements)) if i not in moved]
    slot = _blank_prefix(_leading(statements[first].node))  # the blank lines above the first start
    if hoisted:
        own = _leading(hoisted[0])
        hoisted[0] = hoisted[0].with_changes(leading_lines=max(slot, _blank_prefix(own), key=len) + own[len(_blank_prefix(own)):])
    before = hoisted[-1] if hoisted else module.body[first - 1] if first else None
    after_definition = isinstance(before, (cst.FunctionDef, cst.ClassDef))
    above = [cst.EmptyLine(indent=False)] * (2 if after_definition else 1) if hoisted or after_definition else slot
    guard = _guard(module, [statements[i].node for i in sorted(moved)], above)
    edits = [Edit(statements[first].node, cst.FlattenSentinel([*hoisted, guard]))]
    edits += [Edit(statements[i].node, cst.RemovalSentinel.REMOVE) for i in range(first + 1, len(statements))]
    kept = f" ({len(hoisted)} definition{'s' if len(hoisted) > 1 else ''} after it kept above the guard)" if hoisted else ""
    return Fix("unsafe", "Put the module-level code from the first worker start on under "
               f"`if __name__ == \"__main__\":`{kept}; unsafe: names other modules import from this one move under "
               "the guard, and what the moved code changes through a method call the workers do not see",
               tuple(edits))


def _imported_alike(statements: list[_Statement]) -> set[str]:
    """The names every binding of which imports the same thing (a notebook's cells import again)."""
    found: dict[str, set[str | None]] = {}
    for statement in statements:
        imported = _import_targets(statement.node)
        for name in statement.binds:
            found.setdefault(name, set()).add(imported.get(name))
    return {name for name, targets in found.items() if len(targets) == 1 and None not in targets}


def _import_targets(node: cst.BaseStatement) -> dict[str, str]:
    """An import line's names, each with what it binds it to."""
    found: dict[str, str] = {}
    for small in node.body if isinstance(node, cst.SimpleStatementLine) else ():
        if isinstance(small, cst.Import):
            for alias in small.names:
                dotted = alias.evaluated_name
                found[alias.evaluated_alias or dotted.split(".")[0]] = dotted  # ``import a.b`` also loads a.b
        elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            source = "." * len(small.relative) + (cst.Module([]).code_for_node(small.module) if small.module else "")
            found.update((alias.evaluated_alias or alias.evaluated_name, f"{source}:{alias.evaluated_name}") for alias in small.names)
    return found


def _unsound(statements: list[_Statement], moved: set[int], last: int, bound: set[str]) -> str:
    """Why moving ``moved`` would break a worker, or ``""``."""
    if "*" in bound:
        return "the code to move has a `from ... import *`, whose names the fix cannot list"
    for statement in (s for i, s in enumerate(statements) if i not in moved):
        needed = sorted(statement.later & bound)
        if needed:
            return (f"{_label(statement)} stays at module level for the workers and reads `{needed[0]}`, "
                    "which the code to move binds or changes: a worker running it would not see that")
    defined = set().union(*(statements[i].defines for i in moved))
    for i in sorted(moved):
        own = statements[i].defines if statements[i].definition else set()  # a recursive function reads itself
        used = sorted(statements[i].reads & (defined - own)) if i <= last else []
        if used:
            return (f"`{used[0]}` is defined in the code to move and used where the workers start: pickled "
                    "by name, a worker would not find it")
    return ""


def _label(statement: _Statement) -> str:
    if statement.defines:
        return ", ".join(f"`{name}`" for name in sorted(statement.defines))
    return "a module-level lambda or generator"


def _guard(module: cst.Module, moved: list[cst.BaseStatement], above: list[cst.EmptyLine]) -> cst.If:
    """``if __name__ == "__main__":`` over ``moved``, an existing guard's body spliced in, with ``above``
    over it; blank lines between the statements stay blank rather than indented."""
    body: list[cst.BaseStatement] = []
    for node in moved:
        if isinstance(node, cst.If) and main_guard(node.test) and node.orelse is None and isinstance(node.body, cst.IndentedBlock):
            inner = node.body.body
            body += [inner[0].with_changes(leading_lines=[*node.leading_lines, *_leading(inner[0])]), *inner[1:]]
        else:
            body.append(node)
    body = [node.with_changes(leading_lines=[line.with_changes(indent=False) if line.comment is None else line
                                             for line in _leading(node)]) for node in body]
    lines = _leading(body[0])
    body[0] = body[0].with_changes(leading_lines=lines[len(_blank_prefix(lines)):])
    test = cst.parse_expression('__name__ == "__main__"', config=module.config_for_parsing)
    return cst.If(test=test, body=cst.IndentedBlock(body=body), leading_lines=above)


def _blank_prefix(lines: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """The blank lines before the first comment line."""
    return lines[:next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))]


def _leading(node: cst.BaseStatement) -> list[cst.EmptyLine]:
    """The blank and comment lines above a statement (every statement kind has them)."""
    assert isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    return list(node.leading_lines)
