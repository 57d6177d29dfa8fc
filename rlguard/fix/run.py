"""Fix one file in memory to a fixpoint, verifying every pass; the caller writes the result."""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rlguard.engine.analyze import Analysis, Settings, analyze_bytes, locate
from rlguard.engine.findings import Finding, Fix
from rlguard.engine.index import ProjectIndex
from rlguard.engine.lazy import cst
from rlguard.engine.libraries import tree_of
from rlguard.engine.parse import ParseError, decode, parse
from rlguard.fix.apply import apply_fixes, non_overlapping

if TYPE_CHECKING:
    from rlguard.config import Config  # the fixer is handed one; it reads no configuration itself

MAX_PASSES = 4  # fixes that enable further fixes settle within a couple of passes

NO_FIX = "no automatic fix"
UNSAFE = "unsafe fix; apply with --unsafe-fixes"
FAILED = "the fix failed verification and was not applied"


@dataclass
class FileFix:
    path: str
    original: bytes | None = None
    fixed: bytes | None = None  # None when nothing changed
    applied: Counter = field(default_factory=Counter)  # rule code -> fixes applied
    remaining: list[tuple[Finding, str]] = field(default_factory=list)  # (finding, why it was not fixed)
    error: str | None = None


@dataclass(frozen=True)
class FixRequest:
    settings: Settings
    index: ProjectIndex | None
    unsafe: bool
    config: Config  # for per-file-ignores
    unused_noqa: bool = False  # also take unused codes out of suppression comments (RLG100)


def standing_findings(analysis: Analysis, request: FixRequest) -> list[tuple[Finding, Fix | None]]:
    """The findings that stand (the engine's one answer, as ``check`` gives it), with their fixes."""
    from rlguard.engine.standing import standing

    kept = standing(analysis.result, request.index, request.settings.options, request.config,
                    functools.partial(locate, analysis))
    # Engine findings (RLG000/RLG999) come from no rule's report, and have no fix.
    return [(p.finding, analysis.reports[p.report][1].fix if p.report >= 0 else None) for p in kept]


def fix_file(path: str, request: FixRequest) -> FileFix:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return FileFix(path, error=f"cannot read: {error.strerror or error}")
    return fix_bytes(path, data, request)


def fix_bytes(path: str, data: bytes, request: FixRequest) -> FileFix:
    """Fix ``data`` as the content of ``path`` (which need not exist: stdin, an editor buffer)."""
    outcome = FileFix(path, original=data)
    if tree_of(path, request.config.root) is not None:  # a vendored library is its authors' code
        return outcome
    current = data
    failed: set[str] = set()
    for _ in range(MAX_PASSES):
        analysis = analyze_bytes(path, current, request.settings, request.index)
        standing = standing_findings(analysis, request)
        wanted = [fix for finding, fix in standing if fix and (fix.applicability == "safe" or request.unsafe) and finding.code not in failed]
        if not wanted or analysis.module is None or analysis.source is None:
            break
        chosen = non_overlapping(wanted, analysis.module)
        new_bytes = _render(analysis.module, analysis.source.encoding, chosen)
        if new_bytes is None or not _verified(path, new_bytes, standing, chosen, request):
            failed.update(_failing_codes(path, analysis, standing, chosen, request))
            continue
        outcome.applied.update(_codes_of(standing, chosen, count=True))
        current = new_bytes
    if request.unused_noqa:
        current = _without_unused_noqa(path, current, request, outcome.applied)
    final = analyze_bytes(path, current, request.settings, request.index)
    for finding, fix in standing_findings(final, request):
        reason = FAILED if finding.code in failed else NO_FIX if fix is None else UNSAFE
        outcome.remaining.append((finding, reason))
    if request.unused_noqa:  # what the RLG100 fix could not take out (a bare noqa, or a failed verification)
        from rlguard.engine.standing import unused_findings

        outcome.remaining += [(finding, NO_FIX if finding.fix is None else FAILED)
                              for finding in unused_findings(final.result, request.settings.codes, request.config)]
    if current != outcome.original:
        outcome.fixed = current
    return outcome


def _without_unused_noqa(path: str, data: bytes, request: FixRequest, applied: Counter) -> bytes:
    """``data`` without the suppression codes that silence nothing (RLG100's fix), once the rules'
    fixes are in: verified like them, it must leave every finding as it was, neither silenced nor bared."""
    import tokenize

    from rlguard.engine.standing import unused_suppressions
    from rlguard.fix.noqa import remove_codes

    analysis = analyze_bytes(path, data, request.settings, request.index)
    before = standing_findings(analysis, request)  # marks what each suppression silences
    unused = [(s, codes) for s, codes in unused_suppressions(analysis.result, request.settings.codes, request.config) if codes]
    if not unused or analysis.source is None:
        return data
    try:
        text, removed = remove_codes(analysis.source.text, unused)
    except (tokenize.TokenError, SyntaxError):
        return data
    new = text.encode(analysis.source.encoding)
    decoded = decode(new)
    if isinstance(decoded, ParseError) or isinstance(parse(decoded), ParseError):
        return data
    after = standing_findings(analyze_bytes(path, new, request.settings, request.index), request)
    if Counter(f.code for f, _ in after) != Counter(f.code for f, _ in before):
        return data
    applied["RLG100"] += removed
    return new


def _render(module: cst.Module, encoding: str, fixes: list[Fix]) -> bytes | None:
    try:
        return apply_fixes(module, fixes).code.encode(encoding)
    except Exception:  # an edit libcst cannot render counts as a failed verification
        return None


def _failing_codes(path: str, analysis: Analysis, standing: list, chosen: list[Fix], request: FixRequest) -> set[str]:
    """The rules whose fixes fail verification applied alone: one rule's broken fix must not keep
    another rule's good fixes out of the file. All of them if each passes alone but not together."""
    assert analysis.module is not None and analysis.source is not None
    codes = _codes_of(standing, chosen)
    failing = set()
    for code in sorted(codes):
        alone = [fix for fix in chosen if code in _codes_of(standing, [fix])]
        rendered = _render(analysis.module, analysis.source.encoding, alone)
        if rendered is None or not _verified(path, rendered, standing, alone, request):
            failing.add(code)
    return failing or codes


def _codes_of(standing, chosen: list[Fix], count: bool = False):
    codes = [finding.code for finding, fix in standing if fix is not None and any(fix is c for c in chosen)]
    return Counter(codes) if count else set(codes)


def _verified(path: str, new: bytes, before: list, chosen: list[Fix], request: FixRequest) -> bool:
    """The fixed code parses, and each fixed finding is gone (no rule re-finds it)."""
    decoded = decode(new)
    if isinstance(decoded, ParseError) or isinstance(parse(decoded), ParseError):
        return False
    after = analyze_bytes(path, new, request.settings, request.index)
    counts_before = Counter(finding.code for finding, _ in before)
    counts_after = Counter(finding.code for finding, _ in standing_findings(after, request))
    fixed = _codes_of(before, chosen, count=True)
    return all(counts_after[code] <= counts_before[code] - n for code, n in fixed.items())
