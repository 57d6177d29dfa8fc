"""``rlguard server``: a language server over stdio, a thin layer over the engine ``check`` runs.

- Diagnostics on open, on change (debounced) and on save. The open buffer's text replaces its
  file; the other files of its folder are read from disk (and from the result cache), so findings
  that depend on classes in other files still stand.
- Code actions: "Fix RLGxxx" per fixable finding (unsafe fixes say so, under the kind
  ``quickfix.unsafe``), "Fix all safe rlguard findings" (``source.fixAll.rlguard``), and
  "Suppress RLGxxx on this line". Edits come from the fixer, never from the server.
- Hover on a finding shows its rule's page; configuration is re-read on every run, so a
  changed ``pyproject.toml`` applies at once, and open documents are re-checked when one changes.

Positions: rlguard counts columns in code points, LSP in UTF-16 code units; ``_utf16`` converts.
The server imports pygls (the ``lsp`` extra) and never torch.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from rlguard import __version__
from rlguard.config import ConfigError, clear_config_cache, config_for, project_root
from rlguard.docs import explain, rule_url
from rlguard.engine.findings import Finding
from rlguard.engine.runner import Project, RunOptions, check
from rlguard.engine.target import resolve_target
from rlguard.fix.run import FixRequest, fix_bytes
from rlguard.fix.edits import own_edits, text_edits

DEBOUNCE_S = 0.15  # a burst of keystrokes is checked once
FIX_ALL = "source.fixAll.rlguard"
UNSAFE_FIX = "quickfix.unsafe"


@dataclass
class Checked:
    """One document's last run: its text, its findings, and the project state the fixer needs."""

    text: str
    findings: list[Finding]
    project: Project | None
    version: int | None = None  # the document version checked, sent with its diagnostics


class RlguardServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("rlguard", __version__)
        self.checked: dict[str, Checked] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}


server = RlguardServer()


def lint(path: str, text: str) -> Checked:
    """The findings of ``path`` with ``text`` as its content: the same run as ``rlguard check``."""
    clear_config_cache()  # a pyproject.toml edited since the last run applies now
    config = config_for(path)
    if config.excludes(path):
        return Checked(text, [], None)
    target = resolve_target(None, config.target_torchrl, config.root)
    cache_dir = os.path.join(project_root(config.root) or config.root, ".rlguard_cache")
    options = RunOptions(jobs=1, cache_dir=cache_dir, sources={path: text.encode("utf-8")})
    folder = os.path.dirname(os.path.abspath(path))
    report, project = check([folder, path], config, options, target)
    mine = [f for f in report.findings if os.path.abspath(f.path) == os.path.abspath(path)]
    return Checked(text, mine, project)


def _utf16(line_text: str, column: int) -> int:
    """An LSP character offset (UTF-16 code units) from a 1-based code-point column."""
    return len(line_text[: max(column - 1, 0)].encode("utf-16-le")) // 2


def _position(lines: list[str], line: int, column: int) -> lsp.Position:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return lsp.Position(line=max(line - 1, 0), character=_utf16(text, column))


def _range(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> lsp.Range:
    return lsp.Range(start=_position(lines, *start), end=_position(lines, *end))


def diagnostic(finding: Finding, lines: list[str]) -> lsp.Diagnostic:
    span = finding.span
    assert span is not None, "findings are located before they are reported"
    message = f"{finding.message}\n{finding.remedy_sentence}" if finding.remedy else finding.message
    return lsp.Diagnostic(
        range=_range(lines, (span.line, span.column), (span.end_line, span.end_column)),
        message=message,
        severity=lsp.DiagnosticSeverity.Error if finding.code in ("RLG000", "RLG999") else lsp.DiagnosticSeverity.Warning,
        code=finding.code,
        code_description=lsp.CodeDescription(href=rule_url(finding.code)),
        source="rlguard",
        data={"name": finding.name, "fix": finding.fix.applicability if finding.fix else None},
    )


def _lines(text: str) -> list[str]:
    return text.splitlines() or [""]


def _path(uri: str) -> str | None:
    path = to_fs_path(uri)
    return path if path and path.endswith((".py", ".pyi")) else None


def publish(ls: RlguardServer, uri: str, checked: Checked) -> None:
    lines = _lines(checked.text)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
        uri=uri, diagnostics=[diagnostic(f, lines) for f in checked.findings], version=checked.version))


async def refresh(ls: RlguardServer, uri: str) -> None:
    path = _path(uri)
    if path is None:
        return
    document = ls.workspace.get_text_document(uri)
    text, version = document.source, document.version
    try:
        checked = await asyncio.get_running_loop().run_in_executor(None, lint, path, text)
    except ConfigError as error:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"rlguard: {error}"))
        return
    if ls.workspace.get_text_document(uri).source != text:
        return  # edited meanwhile: the debounced run for the newer text publishes
    checked.version = version
    ls.checked[uri] = checked
    publish(ls, uri, checked)


def schedule(ls: RlguardServer, uri: str, delay: float) -> None:
    loop = asyncio.get_running_loop()
    if uri in ls.pending:
        ls.pending.pop(uri).cancel()
    ls.pending[uri] = loop.call_later(delay, lambda: loop.create_task(refresh(ls, uri)))


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: RlguardServer, params: lsp.DidOpenTextDocumentParams) -> None:
    await refresh(ls, params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: RlguardServer, params: lsp.DidChangeTextDocumentParams) -> None:
    schedule(ls, params.text_document.uri, DEBOUNCE_S)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: RlguardServer, params: lsp.DidSaveTextDocumentParams) -> None:
    await refresh(ls, params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: RlguardServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.checked.pop(uri, None)
    if uri in ls.pending:
        ls.pending.pop(uri).cancel()
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: RlguardServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    """A pyproject.toml changed: every open document is checked again under the new configuration."""
    if any(change.uri.endswith("pyproject.toml") for change in params.changes):
        for uri in list(ls.checked):
            schedule(ls, uri, 0)


@server.feature(lsp.INITIALIZED)
def initialized(ls: RlguardServer, params: lsp.InitializedParams) -> None:
    watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
    if watched and watched.dynamic_registration:
        options = lsp.DidChangeWatchedFilesRegistrationOptions(
            watchers=[lsp.FileSystemWatcher(glob_pattern="**/pyproject.toml")])
        ls.client_register_capability(lsp.RegistrationParams(registrations=[
            lsp.Registration(id="rlguard-pyproject", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)]))


def _fix_request(checked: Checked, unsafe: bool) -> FixRequest | None:
    project = checked.project
    return None if project is None else FixRequest(project.settings, project.index, unsafe, project.config)


def _edits(before: str, after: str) -> list[lsp.TextEdit]:
    lines = _lines(before)
    return [lsp.TextEdit(range=_range(lines, (e.line, e.column), (e.end_line, e.end_column)), new_text=e.text)
            for e in text_edits(before, after)]


def _one_fix(path: str, checked: Checked, finding: Finding) -> list[lsp.TextEdit]:
    """The edits of this finding's own fix, as the fixer renders it."""
    request = _fix_request(checked, unsafe=True)
    if request is None:
        return []
    found = own_edits(path, checked.text.encode("utf-8"), request,
                      lambda candidate: (candidate.code, candidate.span) == (finding.code, finding.span))
    lines = _lines(checked.text)
    return [lsp.TextEdit(range=_range(lines, (e.line, e.column), (e.end_line, e.end_column)), new_text=e.text)
            for edits in found.values() for e in edits]


def _fix_all(path: str, checked: Checked) -> list[lsp.TextEdit]:
    request = _fix_request(checked, unsafe=False)
    if request is None:
        return []
    outcome = fix_bytes(path, checked.text.encode("utf-8"), request)
    return _edits(checked.text, outcome.fixed.decode("utf-8")) if outcome.fixed else []


def _suppress(checked: Checked, finding: Finding) -> list[lsp.TextEdit]:
    """``# noqa: RLGxxx`` at the end of the finding's line, merged into a noqa already there, as
    ``rlguard check --add-noqa`` writes it; none where the line ends inside a string."""
    import tokenize

    from rlguard.fix.noqa import add_noqa

    try:
        text, changed, _ = add_noqa(checked.text, {finding.line: {finding.code}})
    except (tokenize.TokenError, SyntaxError):
        return []
    return _edits(checked.text, text) if changed else []


def _overlaps(finding: Finding, start: lsp.Position, end: lsp.Position) -> bool:
    assert finding.span is not None, "findings are located before they are reported"
    return finding.span.line - 1 <= end.line and finding.span.end_line - 1 >= start.line


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
    code_action_kinds=[lsp.CodeActionKind.QuickFix, UNSAFE_FIX, FIX_ALL]))
def code_action(ls: RlguardServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    checked, path = ls.checked.get(uri), _path(uri)
    if checked is None or path is None or ls.workspace.get_text_document(uri).source != checked.text:
        return []  # stale: the edit in flight gets fresh diagnostics and actions
    wanted = params.context.only
    actions: list[lsp.CodeAction] = []
    for finding in [f for f in checked.findings if _overlaps(f, params.range.start, params.range.end)]:
        if finding.fix is not None and (not wanted or any(str(k).startswith("quickfix") for k in wanted)):
            actions.extend(_fix_action(uri, path, checked, finding))
        suppress = _suppress(checked, finding) if not wanted or lsp.CodeActionKind.QuickFix in wanted else []
        if suppress:
            actions.append(_action(f"Suppress {finding.code} on this line", lsp.CodeActionKind.QuickFix, uri, suppress))
    if (not wanted or FIX_ALL in wanted or lsp.CodeActionKind.SourceFixAll in wanted) and \
            any(f.fix and f.fix.applicability == "safe" for f in checked.findings):
        edits = _fix_all(path, checked)
        if edits:
            actions.append(_action("Fix all safe rlguard findings in this file", FIX_ALL, uri, edits))
    return actions


def _fix_action(uri: str, path: str, checked: Checked, finding: Finding) -> list[lsp.CodeAction]:
    assert finding.fix is not None
    edits = _one_fix(path, checked, finding)
    if not edits:
        return []
    safe = finding.fix.applicability == "safe"
    title = f"Fix {finding.code}: {finding.fix.description}" + ("" if safe else " (unsafe: review the change)")
    action = _action(title, lsp.CodeActionKind.QuickFix if safe else UNSAFE_FIX, uri, edits)
    action.is_preferred = safe
    return [action]


def _action(title: str, kind: Any, uri: str, edits: list[lsp.TextEdit]) -> lsp.CodeAction:
    return lsp.CodeAction(title=title, kind=kind, edit=lsp.WorkspaceEdit(changes={uri: edits}))


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: RlguardServer, params: lsp.HoverParams) -> lsp.Hover | None:
    checked = ls.checked.get(params.text_document.uri)
    if checked is None:
        return None
    position = params.position
    for finding in checked.findings:
        if _overlaps(finding, position, position):
            page = explain(finding.code)
            if page:
                return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=page))
    return None


def main() -> int:
    server.start_io()
    return 0
