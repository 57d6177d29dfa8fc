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
    from rlguard.engine.rule_info import RuleInfo
    from rlguard.engine.suppress import Suppression

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
            if (finding := resolve(pending, index, options, config.rules) if index is not None else pending.finding) is not None
            and not matches(finding.code, ignored_here)]
    if any(p.finding.span is None for p in kept):
        kept = locate(kept)
    return [p for p in kept if not suppressed(p.finding, result)]


def resolve(pending: PendingFinding, index: ProjectIndex, options: Mapping[str, Mapping[str, Any]],
            rules: Mapping[str, RuleInfo]) -> Finding | None:
    """A pending finding stands if it has no requirement or one of them holds (its rule, one of the
    ``rules`` the configuration handed the run, answers)."""
    finding = pending.finding
    if not pending.requires:
        return finding
    rule = rules[finding.code].load()
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


def unused_suppressions(result: FileResult, codes: Sequence[str], config: Config) -> list[tuple[Suppression, frozenset[str] | None]]:
    """The suppressions of ``result`` that silenced nothing, with their unused rlguard codes (None for
    a bare ``noqa``). Call it after ``standing``, which marks what each suppression silenced.

    Only a rule that ran on the file (``codes``, the selected ones, less ``per-file-ignores``) can
    show a suppression of it to be unused: one switched off by --select, --ignore, per-file-ignores
    or the target version might still need it. A bare ``noqa`` covers every rule, so it is unused
    only when every rule ran. Other tools' codes (``F401``) are never judged.
    """
    from rlguard.engine.findings import ENGINE_CODES

    ignored_here = config.ignored_codes(result.path)
    ran = {code for code in (*codes, *ENGINE_CODES) if not matches(code, ignored_here)}
    found: list[tuple[Suppression, frozenset[str] | None]] = []
    for suppression in result.suppressions:
        if suppression.codes is None:
            if not suppression.used and ran >= set(config.rules):
                found.append((suppression, None))
            continue
        unused = frozenset(code for code in suppression.codes - suppression.used if code.startswith("RLG") and code in ran)
        if unused:
            found.append((suppression, unused))
    return found


def unused_findings(result: FileResult, codes: Sequence[str], config: Config) -> list[Finding]:
    """The unused suppressions of ``result`` as RLG100 findings, one per unused code. A code has a
    fix that takes it out (``rlguard fix --show-unused-noqa``); a bare ``noqa`` has none: other
    tools may rely on it."""
    from rlguard.engine.analyze import engine_finding
    from rlguard.engine.findings import FixSummary

    found = []
    for suppression, unused in unused_suppressions(result, codes, config):
        if unused is None:
            found.append(engine_finding(result.path, "RLG100", suppression.line, 1, "unused blanket `noqa`"))
            continue
        for code in sorted(unused):
            finding = engine_finding(result.path, "RLG100", suppression.line, 1, f"unused suppression of {code}")
            found.append(finding._replace(fix=FixSummary("safe", f"remove `{code}` from the suppression")))
    return found
