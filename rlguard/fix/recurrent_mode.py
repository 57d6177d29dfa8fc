"""The fixes of RLG002 (``x.set_recurrent_mode(...)``, removed in torchrl 0.8): where each call can be
rewritten, and into what.

The rule finds the calls and says why each receiver is a recurrent module; this module needs the whole
parsed file (parents, later statements, every use of a name) to plan what replaces them. It never
judges: it only proposes the edits of calls the rule already reported, and what the rule should tell
the user to do by hand where no fix is safe to offer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeAlias

from rlguard.engine.findings import Edit, Fix, Requirement
from rlguard.engine.lazy import cst
from rlguard.engine.traversal import children, iter_nodes

METHOD = "set_recurrent_mode"

Block: TypeAlias = "cst.IndentedBlock | cst.Module"

# What the rule should tell the user to do by hand (it holds the wording).
REMOVE = "remove"  # the statement did nothing: delete it
VALUE = "value"  # the value was a recurrent copy: use the module itself
MANUAL = "manual"  # anything else: migrate to the context manager
FALSE = "false"  # a ``set_recurrent_mode(False)`` statement: delete it
SUPER = "super"  # ``super().set_recurrent_mode(...)``: the parent method is gone


# Named tuples, not dataclasses: every run imports this module, and a dataclass costs ~0.5 ms to create.
class Site(NamedTuple):
    """One reported call."""

    call: cst.Call
    receiver: cst.BaseExpression
    mode: bool | None  # the literal mode argument; None when not a literal
    scope: cst.FunctionDef | None  # the enclosing function; None at module level
    in_class_body: bool
    super_call: bool  # ``super().set_recurrent_mode(...)``
    # What the finding needs from other files; calls on one receiver pair up only when these agree.
    requires: tuple[Requirement, ...] = ()


class Plan(NamedTuple):
    """What becomes of a site: the remedy the message gives, and the fix, if one is safe to offer."""

    remedy: str = MANUAL
    fix: Fix | None = None


class Knowledge(NamedTuple):
    """What the planner needs to know of the file and of torchrl; the rule supplies it."""

    resolve: Callable[[cst.BaseExpression], str | None]  # the qualified name an expression refers to
    context_managers: frozenset[str]  # ``set_recurrent_mode`` the context manager, under its import paths
    is_loss: Callable[[str], bool]  # a torchrl loss class: it runs recurrent mode by itself
    is_wrapper: Callable[[str], bool]  # a module class that holds and calls the modules it is given
    mode_independent: frozenset[str] = frozenset()  # methods whose result ignores the mode


def plan_fixes(module: cst.Module, sites: list[Site], knowledge: Knowledge) -> list[Plan]:
    """The fix and the by-hand remedy of each site of ``module``, in order."""
    planner = _Planner(module, sites, knowledge)
    planner.plan()
    return [planner.plans.get(id(site), Plan()) for site in sites]


def code_text(node: cst.CSTNode) -> str:
    """The source of ``node`` on one line."""
    return " ".join(cst.Module([]).code_for_node(node).split())


def short_text(node: cst.CSTNode, limit: int) -> str:
    """The source of ``node``, or ``...`` when longer than ``limit``."""
    text = code_text(node)
    return text if len(text) <= limit else "..."


def is_recurrent_context(node: cst.CSTNode, knowledge: Knowledge) -> bool:
    """``with set_recurrent_mode(True):`` (any alias, default or "recurrent" mode)."""
    if not isinstance(node, cst.With) or len(node.items) != 1:
        return False
    item = node.items[0].item
    if not isinstance(item, cst.Call) or knowledge.resolve(item.func) not in knowledge.context_managers:
        return False
    if not item.args:
        return True
    value = item.args[0].value
    return len(item.args) == 1 and (
        (isinstance(value, cst.Name) and value.value == "True")
        or (isinstance(value, cst.SimpleString) and value.evaluated_value == "recurrent")
    )


def _comment_lines(statement: cst.SimpleStatementLine) -> list[cst.EmptyLine]:
    """The leading lines of a removed statement, plus its end-of-line comment as a line of its own."""
    lines = list(statement.leading_lines)
    comment = statement.trailing_whitespace.comment
    if comment is not None:
        lines.append(cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=comment))
    return lines


def _statement_form_comment(call: str, receiver: str, closed: bool) -> list[cst.EmptyLine]:
    """The lines the statement-form fix leaves where the call was."""
    lines = [f"rlguard: removed `{call}`: on torchrl < 0.8 it returned a recurrent copy",
             f"and left `{receiver}` unchanged, so it did nothing; torchrl >= 0.8 removed the method."]
    if closed:
        lines.append(f"Its matching `{receiver}.{METHOD}(False)` below, a no-op too, is removed as well.")
    lines += ["If whole sequences were meant, wrap the calls that pass them (a time dimension, e.g. sampled",
              f"trajectories) in `with {METHOD}(True):` (from torchrl.modules); single steps must not be."]
    return _comment_block(lines)


def _comment_block(lines: list[str]) -> list[cst.EmptyLine]:
    return [cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=cst.Comment(f"# {line}"))
            for line in lines]


def _value_form_comment(call: str, receiver: str, called: list[str], loss: bool) -> list[cst.EmptyLine]:
    """The lines the value-form fix leaves above the rewritten statement."""
    lines = [f"rlguard: was `{call}`, a recurrent copy; torchrl >= 0.8 removed the method, so `{receiver}`",
             "itself is used here and runs step by step."]
    if called:
        names = ", ".join(f"`{n}`" for n in called)
        lines.append(f"Check the calls of {names}: those on whole sequences (a time dimension, e.g. sampled")
        lines.append(f"trajectories) need `with {METHOD}(True):`; single steps (env.reset(), rollouts) must not.")
    elif loss:
        lines.append("The torchrl loss it reaches switches to recurrent mode by itself.")
    else:
        lines.append(f"Check its uses: calls on whole sequences need `with {METHOD}(True):`.")
    return _comment_block(lines)


class _Planner:
    """Works out the fixes of one file's findings; needs the whole module (parents, later statements)."""

    def __init__(self, module: cst.Module, standing: list[Site], knowledge: Knowledge) -> None:
        self.module = module
        self.standing = standing
        self.knowledge = knowledge
        self.parents: dict[int, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            for child in children(node):
                self.parents[id(child)] = node
                stack.append(child)
        self._positions: dict[int, dict[int, int]] = {}
        self._names: dict[int, dict[str, list[cst.Name]]] = {}
        self.plans: dict[int, Plan] = {}  # by id of the site

    def plan(self) -> None:
        bare: dict[int, Site] = {}
        for cand in self.standing:
            statement = self._bare_statement(cand)
            if statement is not None:
                bare[id(statement)] = cand
        consumed: set[int] = set()
        for cand in self.standing:
            statement = self._bare_statement(cand)
            if statement is not None:
                if id(cand) not in consumed:
                    self._statement_form(cand, statement, bare, consumed)
            elif cand.super_call:
                self.plans[id(cand)] = Plan(SUPER)
            else:
                self.plans[id(cand)] = Plan(MANUAL)
                if cand.mode is True and not cand.in_class_body:
                    self._value_form(cand)

    # ----- structure -----
    def _parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(id(node))

    def _position(self, block: Block, statement: cst.CSTNode) -> int:
        positions = self._positions.get(id(block))
        if positions is None:
            positions = self._positions[id(block)] = {id(s): i for i, s in enumerate(block.body)}
        return positions.get(id(statement), -1)

    def _bare_statement(self, cand: Site) -> cst.SimpleStatementLine | None:
        """The statement line, when the call is a whole statement of its own in a block."""
        expr = self._parent(cand.call)
        if not isinstance(expr, cst.Expr) or expr.value is not cand.call:
            return None
        line = self._parent(expr)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        return line if isinstance(self._parent(line), (cst.IndentedBlock, cst.Module)) else None

    # ----- statement form -----
    def _statement_form(self, opener: Site, line: cst.SimpleStatementLine, bare: dict[int, Site],
                        consumed: set[int]) -> None:
        """The old method returned a copy and left the module as it was, so a bare statement did nothing:
        the fix removes it (and its matching ``False`` statement) and says so at the site. Wrapping the
        following statements in ``with set_recurrent_mode(True):`` is not offered: that changes what
        they compute, and raises ValueError on single steps (recurrent mode needs a time dimension)."""
        if opener.super_call:
            self.plans[id(opener)] = Plan(SUPER)
            return
        if opener.mode is not True:
            self.plans[id(opener)] = Plan(FALSE if opener.mode is False else MANUAL)
            return
        block = self._parent(line)
        assert isinstance(block, (cst.IndentedBlock, cst.Module))
        body = list(block.body)
        at = self._position(block, line)
        key = code_text(opener.receiver)
        # The first later bare call on the same receiver closes the region when it is ``False``.
        closing = next((c for s in body[at + 1:] if (c := bare.get(id(s))) is not None and code_text(c.receiver) == key),
                       None)
        if closing is not None and (closing.mode is not False or closing.requires != opener.requires
                                    or id(closing) in consumed):
            closing = None
        closing_at = body.index(self._statement(closing)) if closing is not None else len(body)
        if closing is not None and closing_at == len(body) - 1 \
                and any(e.comment is not None for e in _comment_lines(self._statement(closing))):
            closing = None  # its comments would have no statement to stay with: it keeps its own finding
        removed = [line] if closing is None else [line, self._statement(closing)]
        kept = [i for i, s in enumerate(body) if i > at and all(s is not r for r in removed)]
        if not kept:
            self.plans[id(opener)] = Plan(REMOVE)  # removing the last statement of the block would leave it empty
            return
        comment = _statement_form_comment(short_text(opener.call, 60), short_text(opener.receiver, 40), closing is not None)
        moved: dict[int, list[cst.EmptyLine]] = {kept[0]: [*_comment_lines(line), *comment]}
        after = next((i for i in kept if i > closing_at), None)
        if closing is not None and after is not None:
            moved[after] = [*moved.get(after, []), *_comment_lines(removed[1])]
        edits = [Edit(r, cst.RemovalSentinel.REMOVE) for r in removed]
        for index, lines in moved.items():
            following = body[index]
            assert isinstance(following, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
            edits.append(Edit(following, following.with_changes(leading_lines=[*lines, *following.leading_lines])))
        recv = short_text(opener.receiver, 40)
        also = f" and the matching `{recv}.{METHOD}(False)`" if closing is not None else ""
        fix = Fix(
            "unsafe",
            f"Remove `{short_text(opener.call, 60)}`{also}: on torchrl < 0.8 the method returned a recurrent copy and "
            f"left `{recv}` unchanged, so the statement did nothing, and torchrl >= 0.8 removed it. A comment at "
            f"the site says what to check. Unsafe: if whole sequences were meant, the calls that pass them need "
            f"`with {METHOD}(True):`, and rlguard cannot tell which do.",
            tuple(edits),
        )
        self.plans[id(opener)] = Plan(REMOVE, fix)
        consumed.add(id(opener))
        if closing is not None:
            self.plans[id(closing)] = Plan(FALSE, fix)
            consumed.add(id(closing))

    def _statement(self, cand: Site) -> cst.SimpleStatementLine:
        line = self._parent(self._parent(cand.call))  # type: ignore[arg-type]
        assert isinstance(line, cst.SimpleStatementLine)
        return line

    # ----- value form -----
    def _value_form(self, cand: Site) -> None:
        """Upstream's own rewrite: the module itself replaces the recurrent copy, and the calls stay as
        they are. Wrapping them in ``with set_recurrent_mode(True):`` is not offered: recurrent mode
        needs a time dimension, and a call like ``policy(env.reset())`` has none (ValueError on 0.8+).
        A comment at the site says what changed and what to check."""
        scope: cst.CSTNode = cand.scope if cand.scope is not None else self.module
        found = self._flow(cand.call, scope, 0)
        statement = self._statement_of(cand.call)
        if found is None or statement is None:
            return
        _wraps, loss, called = found
        recv = short_text(cand.receiver, 40)
        comments = _value_form_comment(short_text(cand.call, 60), recv, called, loss)
        fixed = statement.deep_replace(cand.call, cand.receiver)
        assert isinstance(fixed, cst.SimpleStatementLine)
        fixed = fixed.with_changes(leading_lines=[*statement.leading_lines, *comments])
        parts = [
            (f"Replace `{short_text(cand.call, 60)}` with `{recv}` itself, as upstream's tutorials did: the old method "
             f"returned a recurrent copy of `{recv}` sharing its weights, and torchrl >= 0.8 switches the mode "
             f"with the `{METHOD}` context manager instead. A comment at the site says what to check.")
        ]
        if called:
            parts.append(f"Calls of {', '.join(f'`{n}`' for n in called)} are left as they are: those that pass "
                         f"whole sequences need `with {METHOD}(True):`, and rlguard cannot tell which do.")
        if loss:
            parts.append("Passing it to a torchrl loss needs no wrap: losses run in recurrent mode by themselves.")
        parts.append("Unsafe: the value is now the module itself, not a copy, and it runs step by step.")
        self.plans[id(cand)] = Plan(VALUE, Fix("unsafe", " ".join(parts), (Edit(statement, fixed),)))

    def _flow(self, node: cst.CSTNode, scope: cst.CSTNode, depth: int):
        """Where the recurrent value ``node`` goes: (statements to wrap, reaches a loss, names called),
        or None when it goes anywhere the fix cannot follow."""
        parent = self._parent(node)
        if isinstance(parent, cst.Arg) and parent.value is node and not parent.star:
            call = self._parent(parent)
            if not isinstance(call, cst.Call):
                return None
            callee = self.knowledge.resolve(call.func)
            if callee is not None and self.knowledge.is_loss(callee):
                return [], True, []
            if callee is not None and self.knowledge.is_wrapper(callee):
                return self._flow(call, scope, depth)
            return None
        if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1 \
                and isinstance(parent.targets[0].target, cst.Name) and depth < 4:
            return self._holder(parent, scope, depth + 1)
        return None

    def _holder(self, assign: cst.Assign, scope: cst.CSTNode, depth: int):
        """Uses of the name an assignment binds the recurrent value to (see ``_flow``)."""
        target = assign.targets[0].target
        assert isinstance(target, cst.Name)
        line = self._parent(assign)
        block = self._parent(line) if line is not None else None
        if not isinstance(line, cst.SimpleStatementLine) or not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None
        at = self._position(block, line)
        wraps: list[tuple[Block, cst.SimpleStatementLine]] = []
        loss = False
        called = False
        names: list[str] = []
        for use in self._occurrences(scope, target.value):
            if use is target:
                continue
            parent = self._parent(use)
            if isinstance(parent, cst.Attribute) and parent.attr is use:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is use:
                continue
            if isinstance(parent, cst.Call) and parent.func is use:
                statement = self._statement_of(parent)
                if statement is None or any(isinstance(n, cst.Yield) for n in iter_nodes(statement)):
                    return None
                holder = self._parent(statement)
                if holder is block and self._position(block, statement) > at:
                    if not self._in_recurrent_context(block):
                        wraps.append((block, statement))
                elif not self._already_wrapped(holder, block, at):
                    return None
                called = True
                continue
            if isinstance(parent, cst.Attribute) and parent.value is use:
                call = self._parent(parent)
                if parent.attr.value in self.knowledge.mode_independent and isinstance(call, cst.Call) \
                        and call.func is parent:
                    continue
                return None
            if isinstance(parent, cst.Arg) and parent.value is use:
                more = self._flow(use, scope, depth)
                if more is None:
                    return None
                wraps += more[0]
                loss = loss or more[1]
                names += [n for n in more[2] if n not in names]
                continue
            return None
        return wraps, loss, ([target.value] if called else []) + names

    def _occurrences(self, scope: cst.CSTNode, name: str) -> list[cst.Name]:
        names = self._names.get(id(scope))
        if names is None:
            names = self._names[id(scope)] = {}
            for node in iter_nodes(scope):
                if isinstance(node, cst.Name):
                    names.setdefault(node.value, []).append(node)
        return names.get(name, [])

    def _statement_of(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The statement line that runs ``node`` when it runs, unless a def, lambda or generator delays it."""
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(current, cst.SimpleStatementLine):
            if isinstance(current, (cst.Lambda, cst.GeneratorExp, cst.FunctionDef, cst.ClassDef,
                                    cst.BaseCompoundStatement, cst.SimpleStatementSuite)):
                return None
            current = self._parent(current)
        return current

    def _in_recurrent_context(self, block: Block) -> bool:
        """The block runs inside ``with set_recurrent_mode(True):`` (in the same function)."""
        node: cst.CSTNode | None = block
        while node is not None and not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
            if is_recurrent_context(node, self.knowledge):
                return True
            node = self._parent(node)
        return False

    def _already_wrapped(self, holder: cst.CSTNode | None, block: Block, at: int) -> bool:
        """The call sits directly in a later ``with set_recurrent_mode(True):`` of the same block."""
        statement = self._parent(holder) if isinstance(holder, cst.IndentedBlock) else None
        return (
            statement is not None
            and is_recurrent_context(statement, self.knowledge)
            and self._parent(statement) is block
            and self._position(block, statement) > at
        )
