"""Which findings of a file stand: the one answer ``check``, ``fix``, the language server and SARIF's
fixes all use.

A rule runs only if ``select``, ``ignore`` and the target version chose it (``Settings.codes``); of
what the chosen rules report, a finding stands when the project index confirms it (if it waits on
the index), ``per-file-ignores`` does not switch its code off for the file, and no suppression
comment silences it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlguard.config import Config
    from rlguard.engine.analyze import FileResult
    from rlguard.engine.findings import Finding, PendingFinding
    from rlguard.engine.index import ProjectIndex

# Gives each pending finding a span, from a parsed module (the fixer's) or by walking the file again.
Locator = Callable[[list["PendingFinding"]], list["PendingFinding"]]


def matches(code: str, patterns: Sequence[str]) -> bool:
    """Whether a code is selected by any of ``patterns``: ``ALL``, the code itself, or a prefix of it."""
    return any(p == "ALL" or code.startswith(p) for p in patterns)


def standing(result: FileResult, index: ProjectIndex | None, options: Mapping[str, Mapping[str, Any]],
             config: Config, locate: Locator) -> list[PendingFinding]:
    """The pending findings of ``result`` that stand, located, in the order the file reported them.

    Without an index (a file fixed on its own), a finding that waits on the index stands as reported.
    """
    ignored_here = config.ignored_codes(result.path)
    kept = [pending._replace(finding=finding) for pending in result.pending
            if (finding := resolve(pending, index, options) if index is not None else pending.finding) is not None
            and not matches(finding.code, ignored_here)]
    if any(p.finding.span is None for p in kept):
        kept = locate(kept)
    return [p for p in kept if not suppressed(p.finding, result)]


def resolve(pending: PendingFinding, index: ProjectIndex, options: Mapping[str, Mapping[str, Any]]) -> Finding | None:
    """A pending finding stands if it has no requirement or one of them holds."""
    from rlguard.engine.rule_info import registered_rules

    finding = pending.finding
    if not pending.requires:
        return finding
    rule = next(r for r in registered_rules() if r.code == finding.code).load()
    for requirement in pending.requires:
        answer = rule.resolve(requirement, index, finding.path, options.get(finding.code, {}))
        if answer is not None:
            message, remedy = finding.message, finding.remedy
            for key, value in answer.items():
                message, remedy = message.replace("{" + key + "}", value), remedy.replace("{" + key + "}", value)
            return finding._replace(message=message, remedy=remedy)
    return None


def suppressed(finding: Finding, result: FileResult) -> bool:
    """Whether a suppression comment of the file silences the finding (and marks that comment used)."""
    if not result.suppressions:  # most files have none: no need to load the suppression reader
        return False
    from rlguard.engine.suppress import is_suppressed

    return is_suppressed(finding.code, finding.line, result.suppressions)
