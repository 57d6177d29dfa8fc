"""The pipeline: files -> pre-filter -> parse -> index -> rules -> findings -> suppressions.

``check`` returns a Report; ``rlguard.fix`` builds on ``Project`` to rewrite files.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from rlguard.config import Config
    from rlguard.engine.rule_info import RuleInfo
    from rlguard.notebook import Notebook, NotebookError

from rlguard.engine.analyze import FileResult, Settings, analyze_bytes, analyze_file, engine_finding, load_checking, locate
from rlguard.engine.cache import ResultCache
from rlguard.engine.discovery import Discovery, discover, is_notebook
from rlguard.engine.findings import ENGINE_CODES, Finding, PendingFinding, Report, Span, display_path
from rlguard.engine.index import FileFacts, ProjectIndex
from rlguard.engine.libraries import LibraryTree, in_library_copy, partition, skip_notes
from rlguard.engine.callers import SinkCallers, encoded, meets
from rlguard.engine.prefilter import ClassCondition, TokenGroups, class_bases, derived_class_names, rules_needed
from rlguard.engine.project import ModuleResolver, reached_by_class_bases, read_bytes
from rlguard.engine.rule_info import declared_sinks
from rlguard.engine.standing import matches, standing, unused_findings
from rlguard.engine.target import Target
from rlguard.engine.workers import default_jobs, run_all


class RunOptions(NamedTuple):
    select: Sequence[str] | None = None  # from the command line; overrides config
    extend_select: Sequence[str] = ()  # from the command line; added to the selection
    ignore: Sequence[str] = ()
    jobs: int | None = None
    cache_dir: str | None = None
    use_cache: bool = True
    # Text that replaces a file's bytes on disk (stdin, an editor's unsaved buffer), by path. Such a
    # file need not exist; it is checked in this process.
    sources: Mapping[str, bytes] | None = None


def selected_codes(config: Config, options: RunOptions, target: Target) -> tuple[str, ...]:
    # As in ruff: --select replaces the configuration's select and extend-select; --extend-select adds
    # to whichever applies. An empty selection selects nothing: only None falls back to the default.
    if options.select is not None:
        select = [*options.select, *options.extend_select]
    else:
        select = [*(config.select if config.select is not None else ["ALL"]), *config.extend_select, *options.extend_select]
    ignore = [*config.ignore, *options.ignore]
    chosen = [r.code for r in config.rules.values() if matches(r.code, select) and not matches(r.code, ignore) and r.applies_to(target.version)]
    return tuple(chosen)


def build_settings(config: Config, codes: Sequence[str], target: Target, sources: Sequence[bytes],
                   libraries: tuple[LibraryTree, ...] = (), contents: Mapping[str, bytes | None] | None = None,
                   resolver: ModuleResolver | None = None) -> Settings:
    rules = config.rules
    options = {code: {**rules[code].default_options(), **config.rule_options.get(code, {})} for code in codes}
    # Tokens only ever narrow as torchrl grows, so the oldest version judged gives the widest filter.
    oldest = min([target.oldest, *(v for tree in libraries if (v := tree.judged_at) is not None)])
    tokens = {code: rules[code].prefilter_tokens(oldest) for code in codes}
    # A rule's class group is also met by a subclass of its roots, even through classes in other files.
    with_roots = [code for code in codes if rules[code].class_roots]
    bases_of = class_bases(sources) if with_roots else {}
    class_conditions = {code: (rules[code].class_group, rules[code].class_roots | derived_class_names(bases_of, rules[code].class_roots))
                        for code in with_roots}
    through = {code: found for code in codes if (found := rules[code].through_imports) is not None}
    callers = _through_imports(contents or {}, tokens, through, resolver, class_conditions)
    return Settings(tuple(codes), target.version, options, tokens, class_conditions, config.max_file_size, config.timeout,
                    {code: rules[code] for code in codes}, target.lowest, libraries, declared_sinks(rules.values()), callers)


def _through_imports(contents: Mapping[str, bytes | None], tokens: Mapping[str, TokenGroups],
                     through: Mapping[str, tuple[str | int, TokenGroups]], resolver: ModuleResolver | None,
                     class_conditions: Mapping[str, ClassCondition]) -> dict[str, tuple[str, ...]]:
    """The rules each file needs only because its imports reach a project definition that meets their
    ``through_imports`` (``engine.callers``): files of torchrl and tensordict themselves excepted."""
    if not through or resolver is None:
        return {}
    given = {os.path.abspath(path): data for path, data in contents.items()}
    read = functools.partial(_given_or_read, given)
    in_library = _library_files(given)
    project = [(path, data) for path, data in contents.items() if data is not None and not in_library(os.path.abspath(path))]
    sources: dict = {}  # each file read and split once, whatever rules ask
    found: dict[str, list[str]] = {}
    for code, (trigger, groups) in through.items():
        own, callers = encoded(tokens[code]), SinkCallers(groups, resolver.resolve, read, sources)
        triggered = _triggered_by(trigger, tokens[code], class_conditions.get(code))
        for path, data in project:
            if not meets(own, data) and triggered(data) and callers.calls_into_sink(path, data):
                found.setdefault(path, []).append(code)
    return {path: tuple(codes) for path, codes in found.items()}


def _triggered_by(trigger: str | int, groups: TokenGroups, condition: ClassCondition | None) -> Callable[[bytes], bool]:
    """Whether a file's text sets off a rule's ``through_imports``: it holds the trigger text, or meets the
    rule's token group of that index (a class deriving from the rule's class roots included)."""
    if isinstance(trigger, str):
        needle = trigger.encode()
        return lambda data: needle in data
    group = {"": (groups[trigger],)}
    conditions = {"": (0, condition[1])} if condition is not None and condition[0] == trigger else {}
    return lambda data: bool(rules_needed(data.decode("utf-8", "replace"), group, conditions))


def _library_files(given: Mapping[str, bytes | None]) -> Callable[[str], bool]:
    """Whether a file of the run is a module of torchrl or tensordict (``in_library_copy``), from the
    packages among the run's files: a check of the project, torchrl's own included, makes no ``stat``."""
    packages = {os.path.dirname(path) for path in given if os.path.basename(path) in ("__init__.py", "__init__.pyi")}

    def in_library(path: str) -> bool:
        directory, top = os.path.dirname(path), None
        while directory in packages:
            directory, top = os.path.split(directory)
        return top is not None and in_library_copy(top)

    return in_library


def _given_or_read(given: Mapping[str, bytes | None], path: str) -> bytes | None:
    return given[path] if path in given else read_bytes(path)


class Project:
    """One run's state: the files, their results, and the merged index."""

    __slots__ = ("config", "settings", "files", "results", "index", "skipped", "analyzed", "contents", "cache", "notebooks",
                 "notes")

    def __init__(self, config: Config, settings: Settings, files: list[str], *, skipped: list[tuple[str, str]],
                 contents: dict[str, bytes | None], cache: ResultCache | None, notebooks: dict[str, Notebook]) -> None:
        self.config = config
        self.settings = settings
        self.files = files
        self.results: list[FileResult] = []
        self.index: ProjectIndex | None = None
        self.skipped = skipped
        self.analyzed = 0  # files checked afresh in this run (the rest came from the cache)
        self.contents = contents  # as read for this run
        self.cache = cache
        self.notebooks = notebooks  # their code, checked as one module each
        self.notes: list[str] = []  # one line each for the summary (vendored libraries left out)

    def code(self, path: str) -> bytes | None:
        """The Python source of a file of this run as read for it: a notebook's code cells joined."""
        notebook = self.notebooks.get(path)
        return notebook.source if notebook is not None else self.contents.get(path)


def analyze_project(paths: Sequence[str], config: Config, options: RunOptions, target: Target) -> Project:
    sources = {display_path(path): data for path, data in (options.sources or {}).items()}
    on_disk = [p for p in paths if display_path(p) not in sources]
    # Only paths left to read are discovered: with none (stdin alone), ``discover`` would walk ``.``.
    found = discover(on_disk, config.exclude, config.root) if on_disk else Discovery()
    found.files = sorted({*(display_path(path) for path in found.files), *(p for p in map(display_path, paths) if p in sources)})
    vendored = partition(found.files, config.root, config.include_vendored)
    found.files = vendored.kept
    codes = selected_codes(config, options, target)
    contents = {path: sources[path] if path in sources else read_bytes(path) for path in found.files}
    readable, unreadable = _notebooks(contents)
    sources = {**sources, **{path: nb.source for path, nb in readable.items()}}
    resolver = ModuleResolver()
    texts = [c for c in contents.values() if c is not None]
    if any(config.rules[code].class_roots for code in codes):
        texts += reached_by_class_bases(contents, resolver).values()  # bases defined in files not given
    code = {**contents, **{path: found.source for path, found in readable.items()}}  # a notebook's cells
    settings = build_settings(config, codes, target, texts, vendored.included, code, resolver)
    cache = ResultCache(options.cache_dir or os.path.join(config.root, ".rlguard_cache"), settings.fingerprint()) if options.use_cache else None
    project = Project(config, settings, found.files, skipped=list(found.skipped), contents=contents, cache=cache,
                      notebooks=readable)
    project.notes = skip_notes(vendored.skipped, config.root)

    results: dict[str, FileResult] = {}
    todo: list[str] = []
    for path in found.files:
        data = contents[path]
        cached = cache.get(cache.key(path, data, settings.callers.get(path, ()))) if cache is not None and data is not None else None
        if cached is not None:
            results[path] = cached
        elif path in unreadable:
            results[path] = FileResult(path, [PendingFinding(engine_finding(path, "RLG000", 1, 1, str(unreadable[path])))])
        elif path in sources:
            results[path] = analyze_bytes(path, sources[path], settings, locate_all=True).result
        else:
            todo.append(path)
    fresh = run_all(functools.partial(analyze_file, settings=settings), todo, options.jobs or default_jobs(), _crashed,
                    weight=lambda path: len(contents[path] or b""), before_fork=functools.partial(load_checking, settings, [(path, contents[path]) for path in todo]))
    project.analyzed = len(todo) + sum(1 for path in found.files if path in sources)
    for path, result in zip(todo, fresh, strict=False):
        results[path] = result
        data = contents[path]
        if cache is not None and data is not None and result.skipped is None:
            cache.put(cache.key(path, data, settings.callers.get(path, ())), result)
    project.results = [results[path] for path in found.files]
    project.index = _build_index(project, cache, contents, resolver)
    return project


def _notebooks(contents: Mapping[str, bytes | None]) -> tuple[dict[str, Notebook], dict[str, NotebookError]]:
    """The notebooks among the files read into Python, and why the others cannot be read."""
    found = {path: data for path, data in contents.items() if is_notebook(path) and data is not None}
    if not found:
        return {}, {}
    from rlguard import notebook  # here: most runs check no notebook

    readable: dict[str, Notebook] = {}
    unreadable: dict[str, NotebookError] = {}
    for path, data in found.items():
        try:
            readable[path] = notebook.read(data)
        except notebook.NotebookError as error:
            unreadable[path] = error
    return readable, unreadable


def _in_cell(finding: Finding, found: Notebook) -> Finding:
    """A finding on the joined code of a notebook, placed on its cell."""
    assert finding.span is not None
    cell, line = found.locate(finding.span.line)
    shift = finding.span.line - line
    return finding._replace(cell=cell, span=finding.span._replace(line=line, end_line=finding.span.end_line - shift))


def _crashed(path: str, reason: str) -> FileResult:
    return FileResult(path, skipped=reason)


def _build_index(project: Project, cache: ResultCache | None, contents: dict[str, bytes | None],
                 resolver: ModuleResolver) -> ProjectIndex:
    def load(path: str) -> FileFacts | None:
        """Index a file a requirement reaches: skipped by the pre-filter, or not given at all.

        Only facts are kept: findings are never reported in a file that was not asked for.
        """
        data = project.code(path) if path in contents else read_bytes(path)
        if data is None or len(data) > project.settings.max_file_size:
            return None
        key = cache.key(path, data) + "-facts" if cache is not None else ""
        cached = cache.get(key) if cache is not None else None
        if cached is None:
            cached = analyze_bytes(path, data, project.settings, facts_only=True).result
            if cache is not None:
                cache.put(key, cached)
        return cached.facts

    unparsed = {r.path: data for r in project.results if not r.parsed and (data := project.code(r.path))}
    index = ProjectIndex(load, resolver.resolve, unparsed)
    for result in project.results:
        if result.facts is not None:
            index.add(result.facts)
    return index


def check(paths: Sequence[str], config: Config, options: RunOptions, target: Target,
          show_unused: bool = False) -> tuple[Report, Project]:
    project = analyze_project(paths, config, options, target)
    assert project.index is not None
    report = Report(files_checked=len(project.files), notes=project.notes)
    for result in project.results:
        report.files_parsed += result.parsed
        kept = [p.finding for p in standing(result, project.index, project.settings.options, project.config,
                                            functools.partial(_locate, project, result))]
        kept += _unknown_codes(result, project.config.rules)
        unused = unused_findings(result, project.settings.codes, project.config) if show_unused else []
        cells = project.notebooks.get(result.path)
        if cells is not None:
            kept, unused = [_in_cell(f, cells) for f in kept], [_in_cell(f, cells) for f in unused]
        report.findings.extend(kept)
        report.unused_suppressions.extend(unused)
        if result.skipped:
            project.skipped.append((result.path, result.skipped))
    report.findings.extend(_skipped(project))
    report.findings.sort(key=Finding.sort_key)
    return report, project


def _locate(project: Project, result: FileResult, standing: list[PendingFinding]) -> list[PendingFinding]:
    """Position the findings that waited on the index, by walking their file once more.

    The spans are written back to the cached result: a position does not depend on the index.
    """
    data, code = project.contents.get(result.path), project.code(result.path)
    if data is None or code is None:
        return [p._replace(finding=p.finding._replace(span=Span(1, 1, 1, 1))) for p in standing]
    located = locate(analyze_bytes(result.path, code, project.settings, project.index, parameter_kinds=False), standing)
    spans = {p.report: p.finding.span for p in located}
    result.pending = [p._replace(finding=p.finding._replace(span=spans[p.report])) if p.report in spans else p
                      for p in result.pending]
    if project.cache is not None:
        project.cache.put(project.cache.key(result.path, data, project.settings.callers.get(result.path, ())), result)
    return located


def _skipped(project: Project) -> list[Finding]:
    """A file the run could not check is a finding (RLG998), so every format and the exit code show
    it: a clean report must mean the files were checked. ``per-file-ignores`` may silence it."""
    return [engine_finding(display_path(path), "RLG998", 1, 1, f"not checked: {reason}")
            for path, reason in project.skipped
            if not matches("RLG998", project.config.ignored_codes(path))]


def _unknown_codes(result: FileResult, rules: Mapping[str, RuleInfo]) -> list[Finding]:
    """A suppression naming an rlguard code that does not exist is a mistake worth reporting."""
    known = set(rules) | set(ENGINE_CODES)
    return [
        engine_finding(result.path, "RLG100", s.line, 1, f"suppression names unknown rule code {code}")
        for s in result.suppressions for code in sorted(s.codes or ()) if code.startswith("RLG") and code not in known
    ]
