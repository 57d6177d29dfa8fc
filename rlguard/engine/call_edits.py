"""Edits of a call's arguments that a rule's fix proposes, shared so that every fix keeps a call's
layout the same way."""

from __future__ import annotations

from typing import Any

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Edit
from rlguard.engine.types import keyword, positional


def keyword_edit(call: cst.Call, name: str, value: cst.BaseExpression, position: int | None = None) -> Edit:
    """Set the keyword ``name`` of a call to ``value``: replace the value written for it (by keyword, or
    at ``position`` when the callee also takes it positionally), or append the keyword after the last
    argument, keeping the call's layout (one argument a line, a trailing comma)."""
    written = keyword(call, name)
    if written is not None:
        return Edit(written.value, value)
    args = positional(call)
    if position is not None and len(args) > position:
        return Edit(args[position].value, value)
    new = cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if not call.args:
        return Edit(call, call.with_changes(args=[new]))
    last = call.args[-1]
    separator = _separator(call)
    if isinstance(last.comma, cst.Comma):
        # A trailing comma stays trailing: the new argument takes it, and its own line if the call has one per line.
        closing = last.comma.whitespace_after
        if isinstance(closing, cst.ParenthesizedWhitespace) and isinstance(separator, cst.ParenthesizedWhitespace):
            kept = last.comma.with_changes(whitespace_after=closing.with_changes(indent=separator.indent, last_line=separator.last_line))
            trailing = cst.Comma(whitespace_after=closing.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=()))
            new = new.with_changes(comma=trailing, whitespace_after_arg=last.whitespace_after_arg)
            last = last.with_changes(comma=kept, whitespace_after_arg=cst.SimpleWhitespace(""))
        else:
            new = new.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
            last = last.with_changes(comma=cst.Comma(whitespace_after=separator), whitespace_after_arg=cst.SimpleWhitespace(""))
    else:
        new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(comma=cst.Comma(whitespace_after=separator), whitespace_after_arg=cst.SimpleWhitespace(""))
    return Edit(call.args[-1], cst.FlattenSentinel([last, new]))


def _separator(call: cst.Call) -> cst.SimpleWhitespace | cst.ParenthesizedWhitespace:
    """The whitespace that goes before a new argument: a new line when the arguments have one each."""
    before: Any = call.whitespace_before_args
    if len(call.args) >= 2 and isinstance(call.args[-2].comma, cst.Comma):
        before = call.args[-2].comma.whitespace_after
    if isinstance(before, cst.ParenthesizedWhitespace):
        return before.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    return cst.SimpleWhitespace(" ")
