"""Defaults that changed between releases (``data.CHANGED_DEFAULTS``), in code written before the change.

``ParallelEnv``'s workers were daemonic up to torchrl 0.10 and are not from 0.11; ``DiscreteSACLoss`` read its
Q-values at "state_value" up to 0.1 and at ``tensor_keys.action_value`` ("action_value") from 0.2. Code that
relies on the old default runs on the new release and means something else. Passing the old value keeps its
meaning, but only code written for the old release relied on it: modern code means the new default.

When a file was written is not in the file, only bounds on it. A file holding a use of an API that fails from
release R on (a removed name, module or keyword, a parameter made keyword-only: the stale references RLG006 and
RLG007 report, where they stand at the target) ran, as written, only on releases before R: if R is at most the
change's release, its author ran it with the old default. That is the one evidence taken. A pin is not: one
whose lowest release is the change's or later says the code is judged on the new default only, and one that
admits older releases says the code must run on both sides, where the old value cannot be passed (the keyword
and ``set_keys`` are newer than the old default). So a finding needs a stale reference dating the file before
the change, a target at or after the change, and no pin bounding the code to releases from the change on.
"""

from __future__ import annotations

from typing import NamedTuple

from rlguard.engine.lazy import cst

from rlguard.engine.call_edits import keyword_edit
from rlguard.engine.findings import Edit, Fix
from rlguard.engine.target import version_text
from rlguard.rules.data import ApiChange, ChangedDefault


class DefaultUse(NamedTuple):
    """A call of a class whose default changed, relying on that default."""

    call: cst.Call
    change: ChangedDefault
    # A key: the ``<target> = Loss(...)`` line the ``set_keys`` call goes after, and the target (None: not built
    # into a name, so no fix).
    line: cst.SimpleStatementLine | None = None
    target: cst.BaseExpression | None = None


def relies_on_default(call: cst.Call, change: ChangedDefault) -> bool:
    """The call leaves the parameter to its default: it neither names it nor spreads a ``**`` mapping."""
    return not any(arg.star == "**" or (arg.keyword is not None and arg.keyword.value == change.name) for arg in call.args)


def assigned_target(line: cst.SimpleStatementLine | None, call: cst.Call) -> cst.BaseExpression | None:
    """``loss = Loss(...)`` or ``self.loss = Loss(...)`` alone on ``line``: the target the call is built into."""
    if line is None or len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
        return None
    assign = line.body[0]
    if assign.value is not call or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    return target if isinstance(target, (cst.Name, cst.Attribute)) else None


def dated_by(stale: list[ApiChange]) -> ApiChange | None:
    """Of the stale references that stand, the one that fails from the earliest release: the file ran only on
    releases before it."""
    return min(stale, key=lambda c: c.breaks_in or (10**6,), default=None)


def dated_before(stale: list[ApiChange], since: tuple[int, ...], target: tuple[int, ...],
                 lowest: tuple[int, ...] | None) -> ApiChange | None:
    """The stale reference (of those that stand) dating the file before torchrl ``since``, where the target is
    at or after it and no pin's lowest release (``lowest``) bounds the code to releases from it on."""
    if target < since or (lowest is not None and lowest >= since):
        return None
    dated = dated_by(stale)
    return dated if dated is not None and (dated.breaks_in or (0,)) <= since else None


def written_before(dated: ApiChange, since: tuple[int, ...], target: tuple[int, ...]) -> str:
    """Why the file was written for torchrl before ``since``: the reference ``dated`` dates it."""
    reference = dated.qualname if dated.kind == "module" else dated.name
    return (f"this file was written for torchrl before {version_text(since)}: it uses `{reference}`, which fails "
            f"from {dated.module.split('.')[0]} {version_text(dated.breaks_in or (0,))} (the target is "
            f"{version_text(target)})")


def texts(use: DefaultUse, dated: ApiChange, target: tuple[int, ...]) -> tuple[str, str]:
    """The message and the remedy."""
    change, since = use.change, version_text(use.change.changed_in)
    why = written_before(dated, use.change.changed_in, target)
    if change.kind == "parameter":
        head = (f"`{change.cls}(...)` defaults to `{change.name}={change.new}` since torchrl {since}; this file "
                f"predates it and ran with `{change.name}={change.old}`")
        remedy = f"pass `{change.name}={change.old}` to keep its meaning; {why}"
    else:
        head = (f"`{change.cls}` reads `{change.name}` at {change.new} since torchrl {since}; this file predates it: "
                f"the loss read {change.old}")
        remedy = f"call `.set_keys({change.name}={change.old})` on the loss to keep its meaning; {why}"
    return head, remedy + (f" ({change.note})" if change.note else "")


def fix(use: DefaultUse) -> Fix | None:
    """Pass the old value: as the keyword, or with ``set_keys`` right after the line building the loss (an edit
    that keeps the line first: the fixer composes it with other fixes inside the line, such as a keyword made
    keyword-only, whose edit would otherwise win and leave the file undated on the next pass)."""
    change = use.change
    value = cst.parse_expression(change.old)
    if change.kind == "parameter":
        return Fix("unsafe", f"Pass `{change.name}={change.old}`, the default before torchrl {version_text(change.changed_in)}",
                   (keyword_edit(use.call, change.name, value),))
    if use.line is None or use.target is None:
        return None
    owner = cst.Module([]).code_for_node(use.target)
    added = cst.parse_statement(f"{owner}.set_keys({change.name}={change.old})\n")
    return Fix("unsafe", f"Set `{change.name}` back to {change.old}, its key before torchrl {version_text(change.changed_in)}",
               (Edit(use.line, cst.FlattenSentinel([use.line, added])),))
