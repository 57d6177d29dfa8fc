"""Fix one file in memory to a fixpoint, verifying every pass; the caller writes the result."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rlguard.config import Config
from rlguard.engine.analyze import Analysis, Settings, analyze_bytes, locate
from rlguard.engine.findings import Finding, Fix
from rlguard.engine.index import ProjectIndex
from rlguard.engine.lazy import cst
from rlguard.engine.libraries import tree_of
from rlguard.engine.parse import ParseError, decode, parse
from rlguard.engine.suppress import is_suppressed
from rlguard.fix.apply import apply_fixes, non_overlapping

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


def standing_findings(analysis: Analysis, request: FixRequest) -> list[tuple[Finding, Fix | None]]:
    """Findings that survive requirements, suppressions and per-file ignores, with their fixes."""
    from rlguard.engine.runner import resolve

    result = analysis.result
    ignored = request.config.ignored_codes(result.path)
    kept = []
    fixes = [report.fix for _, report in analysis.reports]
    fixes += [None] * (len(result.pending) - len(fixes))  # engine findings (RLG000/RLG999) have no report
    for pending, fix in zip(result.pending, fixes, strict=False):
        finding = resolve(pending, request.index, request.settings.options) if request.index else pending.finding
        if finding is None or any(finding.code.startswith(c) for c in ignored):
            continue
        kept.append((pending._replace(finding=finding), fix))
    located = locate(analysis, [pending for pending, _ in kept])
    return [(pending.finding, fix) for pending, (_, fix) in zip(located, kept, strict=False)
            if not is_suppressed(pending.finding.code, pending.finding.line, result.suppressions)]


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
            failed.update(_codes_of(standing, chosen))
            continue
        outcome.applied.update(_codes_of(standing, chosen, count=True))
        current = new_bytes
    final = analyze_bytes(path, current, request.settings, request.index)
    for finding, fix in standing_findings(final, request):
        reason = FAILED if finding.code in failed else NO_FIX if fix is None else UNSAFE
        outcome.remaining.append((finding, reason))
    if current != outcome.original:
        outcome.fixed = current
    return outcome


def _render(module: cst.Module, encoding: str, fixes: list[Fix]) -> bytes | None:
    try:
        return apply_fixes(module, fixes).code.encode(encoding)
    except Exception:  # an edit libcst cannot render counts as a failed verification
        return None


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
