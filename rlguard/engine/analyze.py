"""Check one file: decode, pre-filter, parse, one walk with every needed rule, positions.

This runs in worker processes; it returns plain data (no CST) so results can travel and be cached.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, NamedTuple
from collections.abc import Iterator, Mapping, Sequence

from rlguard.engine.lazy import cst

from rlguard.engine.findings import ENGINE_CODES, Finding, FixSummary, PendingFinding, Span
from rlguard.engine.hashing import new_hash

if TYPE_CHECKING:
    from rlguard.engine.context import FileContext
    from rlguard.engine.index import FileFacts, ProjectIndex
    from rlguard.engine.libraries import LibraryTree
    from rlguard.engine.parse import ParseError, Source
    from rlguard.engine.prefilter import ClassCondition, TokenGroups
    from rlguard.engine.rule_api import Report, Rule
    from rlguard.engine.rule_info import RuleInfo
    from rlguard.engine.suppress import Suppression

# A run served from the cache needs only the result types: what reads a file (decoding,
# suppressions, the time limit) is imported where a file is analysed, and what only a parsed
# file needs (the file context, the walk, positions) in ``_check_module``.


class Settings(NamedTuple):
    """Everything that decides a file's verdict besides its content (part of the cache key)."""

    codes: tuple[str, ...]  # selected rules
    target: tuple[int, ...]
    options: Mapping[str, Mapping[str, Any]]  # per rule, defaults filled in
    tokens: Mapping[str, TokenGroups]  # pre-filter groups per rule
    class_conditions: Mapping[str, ClassCondition]  # per rule: (group, class names whose subclasses meet it)
    max_file_size: int = 10_000_000
    timeout: float = 120.0  # CPU seconds per file; a file over it is reported skipped, never cached
    # The selected rules, handed over by the caller (their metadata pickles to workers; a rule's
    # class is imported where a file needs it).
    rules: Mapping[str, RuleInfo] = {}  # shared by every default Settings: read only
    oldest: tuple[int, ...] | None = None  # a pin's lowest admitted torchrl, for behaviour only old releases have
    # Vendored copies of torchrl or tensordict checked in this run (``include-vendored``): their files
    # are judged at the copy's own version, and never rewritten.
    libraries: tuple[LibraryTree, ...] = ()
    # Every known rule's sinks (``Rule.sinks``), selected or not: the facts kept about them are then the
    # same in every run. They come from the catalog, which the cache's code stamp covers.
    sinks: Mapping[str, tuple[str, ...]] = {}
    # Per file (as given), the rules with sinks it needs only because it calls, through its imports, a
    # project definition that reaches one (``engine.callers``). Part of each file's cache key instead.
    callers: Mapping[str, tuple[str, ...]] = {}

    def fingerprint(self) -> str:
        return new_hash(repr((self.codes, self.target, self.oldest, sorted((k, sorted(v.items())) for k, v in self.options.items()),
                                    sorted(self.tokens.items()), sorted((k, v[0], sorted(v[1])) for k, v in self.class_conditions.items()),
                                    self.max_file_size, self.libraries)).encode()).hexdigest()

    def versions_for(self, path: str) -> tuple[LibraryTree | None, tuple[int, ...], tuple[int, ...] | None]:
        """(the vendored tree holding ``path``, if any; the torchrl it is judged at; the oldest one)."""
        if self.libraries:
            from rlguard.engine.libraries import judged_at

            tree = judged_at(path, self.libraries)
            if tree is not None:
                version = tree.judged_at
                return (tree, version, version) if version is not None else (tree, self.target, self.oldest)
        return None, self.target, self.oldest


class FileResult:
    """What checking one file gave: plain data, pickled into the cache and back from workers."""

    __slots__ = ("path", "pending", "facts", "suppressions", "parsed", "skipped")

    def __init__(self, path: str, pending: list[PendingFinding] | None = None, facts: FileFacts | None = None,
                 suppressions: list[Suppression] | None = None, parsed: bool = False, skipped: str | None = None) -> None:
        self.path = path
        self.pending = [] if pending is None else pending
        self.facts = facts
        self.suppressions = [] if suppressions is None else suppressions
        self.parsed = parsed
        self.skipped = skipped  # a reason, when the file was not checked at all


class Analysis:
    """A file's result plus the in-memory pieces the fixer needs."""

    __slots__ = ("result", "source", "module", "reports")

    def __init__(self, result: FileResult, source: Source | None = None, module: cst.Module | None = None,
                 reports: list[tuple[type[Rule], Report]] | None = None) -> None:
        self.result = result
        self.source = source
        self.module = module
        self.reports = [] if reports is None else reports


def engine_finding(path: str, code: str, line: int, column: int, message: str) -> Finding:
    return Finding(path, Span(line, column, line, column), code, ENGINE_CODES[code], message)


class FileTimeout(BaseException):  # not Exception: no broad handler may swallow it
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[list[bool]]:
    """Raise FileTimeout after ``seconds`` of this process's CPU time (main thread only; elsewhere no
    limit is enforced). CPU time, not wall time: a loaded machine must not change which files are
    checked, so the verdict of a run never depends on what else the machine is doing.

    Yields a flag that turns true when the limit fired: libcst code that is interrupted may
    raise something else from a ``finally`` block, which must still count as the timeout.
    """
    try:  # the C module: ``signal`` also builds its enums, a millisecond of a one-file run
        import _signal as signal
    except ImportError:  # pragma: no cover - an interpreter without it
        import signal

    fired = [False]

    def expire(_signum, _frame):
        fired[0] = True
        raise FileTimeout

    try:
        armed = seconds > 0 and hasattr(signal, "setitimer")
        previous = signal.signal(signal.SIGVTALRM, expire) if armed else None
    except ValueError:  # not the main thread, where signals cannot be handled
        armed = False
    if not armed:
        yield fired
        return
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)  # counts user CPU time, which parsing and rules spend
    try:
        yield fired
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def load_checking(settings: Settings, files: Sequence[tuple[str, bytes | None]]) -> None:
    """Import what checking a file takes: called before worker processes fork from this one, each
    worker starts with it instead of importing it again, and this process has it for what comes after
    (facts of files the index reaches, positions). Only when one of ``files`` will be parsed (the
    pre-filter asked here, largest first, until one is): a run of files it clears imports no libcst."""
    by_size = sorted(((path, data) for path, data in files if data is not None), key=lambda file: -len(file[1]))
    if not any(_needed(path, data.decode("utf-8", "replace"), settings) for path, data in by_size):
        return
    cst.CSTNode  # noqa: B018  # the first use imports libcst (``engine.lazy``)
    import rlguard.engine.context
    import rlguard.engine.parse
    import rlguard.engine.positions
    import rlguard.engine.prefilter
    import rlguard.engine.suppress
    import rlguard.engine.traversal  # noqa: F401

    for code in settings.codes:
        settings.rules[code].load()


def analyze_file(path: str, settings: Settings, index: ProjectIndex | None = None) -> FileResult:
    timed_out = FileResult(path, skipped=f"took more than the per-file limit of {settings.timeout:g} s of CPU time (`timeout`)")
    try:
        with time_limit(settings.timeout) as fired:
            result = _analyze_file(path, settings, index)
    except FileTimeout:
        return timed_out
    return timed_out if fired[0] else result


def _analyze_file(path: str, settings: Settings, index: ProjectIndex | None) -> FileResult:
    try:
        with open(path, "rb") as handle:
            data = handle.read(settings.max_file_size + 1)
    except OSError as error:
        return FileResult(path, skipped=f"cannot read: {error.strerror or error}")
    if len(data) > settings.max_file_size:
        return FileResult(path, skipped=f"larger than `max-file-size` ({settings.max_file_size} bytes)")
    return analyze_bytes(path, data, settings, index).result


def analyze_bytes(path: str, data: bytes, settings: Settings, index: ProjectIndex | None = None,
                  facts_only: bool = False, locate_all: bool = False, parameter_kinds: bool = True) -> Analysis:
    """Check one file's bytes. ``locate_all`` positions every report in the one codegen pass, also
    those that wait on the index: right for text checked in this process (stdin, an editor buffer),
    which would otherwise be parsed and walked a second time to locate them. Without
    ``parameter_kinds`` the summaries leave out what each return gives when a parameter is given a
    tensor (``Returned.given``): only the index reads that, so a second walk that places findings
    needs none of it."""
    from rlguard.engine.parse import ParseError, decode, parse, syntax_error

    decoded = decode(data)
    if isinstance(decoded, ParseError):
        return _parse_error(path, decoded)
    codes = [] if facts_only else _needed(path, decoded.text, settings)
    if not codes and not facts_only:
        # No rule needs the CST, but a syntax error is still reported: Python's own parser
        # is an order of magnitude cheaper than libcst's.
        error = syntax_error(decoded.text)
        if error:
            return _parse_error(path, error)
        suppressions = _find_suppressions(decoded.text) if _names_rule_codes(decoded.text) else []
        return Analysis(FileResult(path, suppressions=suppressions), decoded)
    module = parse(decoded)
    if isinstance(module, ParseError):
        return _parse_error(path, module)
    try:
        return _check_module(path, decoded, module, codes, settings, index, locate_all, parameter_kinds)
    except RecursionError:
        return _internal_error(path, decoded, "too deeply nested to analyse")
    except Exception as error:  # a rule bug must not end the run: report it on this file
        return _internal_error(path, decoded, f"internal error ({type(error).__name__}: {error}); please report it")


def _needed(path: str, text: str, settings: Settings) -> list[str]:
    """The rules the file needs: by its own text, or for a sink its imports reach."""
    from rlguard.engine.prefilter import rules_needed

    groups = _token_groups_for(path, settings)
    codes = rules_needed(text, groups, settings.class_conditions)
    extra = settings.callers.get(path, ())
    return [code for code in groups if code in codes or code in extra] if extra else codes


def _token_groups_for(path: str, settings: Settings) -> Mapping[str, TokenGroups]:
    """The pre-filter groups of the rules that apply where the file is: some say nothing inside a
    copy of torchrl or tensordict, and are not even matched there."""
    if all(settings.rules[code].library_copies for code in settings.tokens):
        return settings.tokens
    from rlguard.engine.index import module_name_for
    from rlguard.engine.libraries import in_library_copy

    if not in_library_copy(module_name_for(path)[0]):
        return settings.tokens
    return {code: groups for code, groups in settings.tokens.items() if settings.rules[code].library_copies}


def _parse_error(path: str, error: ParseError) -> Analysis:
    finding = engine_finding(path, "RLG000", error.line, error.column, error.message)
    return Analysis(FileResult(path, [PendingFinding(finding)], parsed=False))


def _internal_error(path: str, source: Source, message: str) -> Analysis:
    finding = engine_finding(path, "RLG999", 1, 1, message)
    return Analysis(FileResult(path, [PendingFinding(finding)], suppressions=_find_suppressions(source.text), parsed=True), source)


def _check_module(path: str, source: Source, module: cst.Module, codes: Sequence[str], settings: Settings,
                  index: ProjectIndex | None, locate_all: bool = False, parameter_kinds: bool = True) -> Analysis:
    from rlguard.engine.context import FileContext
    from rlguard.engine.index import module_name_for
    from rlguard.engine.traversal import bookkeeping, walk

    module_name, is_package = module_name_for(path)
    tree, target, oldest = settings.versions_for(path)
    ctx = FileContext(path, module_name, is_package, target, settings.options, index, oldest=oldest, sinks=settings.sinks)
    ctx.declare_definitions(module)
    rules = [settings.rules[code].load()(ctx) for code in codes if tree is None or settings.rules[code].applies_to(target)]
    ctx.parameter_kinds = parameter_kinds
    on_visit, on_leave = bookkeeping(ctx)
    for rule in rules:
        _register(rule, on_visit, on_leave)
    walk(module, on_visit, on_leave)

    reports = _at_versions(ctx, [(type(rule), report) for rule in rules for report in rule.reports])
    if tree is not None:  # a vendored library is the library's code: reported, never rewritten
        for _, report in reports:
            report.fix = None
    # Positions cost a codegen pass over the whole file. Reports that wait on the index are
    # usually dropped by it, so they are located later, and only if they stand (see ``locate``).
    definite = [report.node for _, report in reports if locate_all or not report.requires]
    from rlguard.engine.positions import spans_for

    spans = spans_for(module, definite, source.text) if definite else {}
    pending = [_pending(path, rule, report, number, spans) for number, (rule, report) in enumerate(reports)]
    suppressions = _find_suppressions(source.text) if pending or _names_rule_codes(source.text) else []
    result = FileResult(path, pending, ctx.facts, suppressions, parsed=True)
    return Analysis(result, source, module, reports)


NO_FIX_IN_COMPAT = ("; no automatic fix: this code is a branch of a shim, guard or version gate that runs on other "
                    "torchrl versions, and rewriting it would break them")


def _at_versions(ctx: FileContext, reports: list[tuple[type[Rule], Report]]) -> list[tuple[type[Rule], Report]]:
    """The reports whose problem happens where their code runs at an admitted torchrl version; fixes
    inside compatibility branches withheld (but for the rule that removes dead compatibility code)."""
    if not any(report.breaks is not None or report.fix is not None for _, report in reports):
        return reports
    versions = ctx.versions
    kept = []
    for rule, report in reports:
        if report.breaks is not None and not versions.stands(report.node, report.breaks):
            continue
        if report.fix is not None and not rule.rewrites_compat_code \
                and any(versions.branch(edit.old).compat for edit in report.fix.edits):
            report.fix, report.remedy = None, report.remedy + NO_FIX_IN_COMPAT
        kept.append((rule, report))
    return kept


def _find_suppressions(text: str) -> list[Suppression]:
    from rlguard.engine.suppress import find_suppressions  # here: most files name no rlguard code

    return find_suppressions(text)


def _names_rule_codes(text: str) -> bool:
    """Suppressions naming rlguard codes are read in every file, so unknown codes get reported."""
    return "RLG" in text and ("noqa" in text or "rlguard:" in text)


def _register(rule: Rule, on_visit: dict, on_leave: dict) -> None:
    for attribute in dir(type(rule)):
        prefix, _, node_name = attribute.partition("_")
        if prefix in ("visit", "leave") and node_name and hasattr(cst, node_name):
            table = on_visit if prefix == "visit" else on_leave
            handlers = table.setdefault(getattr(cst, node_name), [])
            # Visits run after the engine's bookkeeping; leaves run before it.
            handlers.append(getattr(rule, attribute)) if prefix == "visit" else handlers.insert(0, getattr(rule, attribute))


def _pending(path: str, rule: type[Rule], report: Report, number: int, spans: dict[int, Span]) -> PendingFinding:
    span = spans.get(id(report.node))
    fix = FixSummary(report.fix.applicability, report.fix.description) if report.fix else None
    return PendingFinding(Finding(path, span, rule.code, rule.name, report.message, fix, report.remedy), report.requires, number)


def locate(analysis: Analysis, findings: Sequence[PendingFinding]) -> list[PendingFinding]:
    """The same pending findings with a span each, from the analysis's parsed module."""
    from rlguard.engine.positions import spans_for

    wanted = [analysis.reports[p.report][1].node for p in findings if p.finding.span is None]
    source = analysis.source.text if analysis.source is not None else None
    spans = spans_for(analysis.module, wanted, source) if wanted and analysis.module is not None else {}
    located = []
    for p in findings:
        if p.finding.span is None:
            span = spans.get(id(analysis.reports[p.report][1].node), Span(1, 1, 1, 1))
            p = p._replace(finding=p.finding._replace(span=span))
        located.append(p)
    return located
