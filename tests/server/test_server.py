"""`rlguard server` driven end to end by a real LSP client over stdio (pytest-lsp), as an editor drives it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from rlguard.rules import RULES
from tests.helpers import OLD_IMPORT

pytest.importorskip("pygls")

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "rlguard", "server"])


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient):
    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:  # as an editor accepts the pyproject.toml watcher
        lsp_client.registrations = [r.method for r in params.registrations]

    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code")))
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # the project root, where the cache goes
    (tmp_path / "pyproject.toml").write_text("[tool.rlguard]\n")
    return tmp_path


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (ASCII text here: UTF-16 offsets are code points) from the last to the first."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        return starts[position.line] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


async def open_document(client: LanguageClient, path: Path, text: str) -> list[types.Diagnostic]:
    path.write_text(text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[path.as_uri()])


async def change(client: LanguageClient, path: Path, text: str, version: int) -> list[types.Diagnostic]:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics[path.as_uri()])


async def actions(client: LanguageClient, path: Path, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    found = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic])))
    return [a for a in found or [] if isinstance(a, types.CodeAction)]


@pytest.mark.asyncio
async def test_open_fix_and_clear(client: LanguageClient, project: Path):
    path = project / "train.py"
    text = "import os\n" + OLD_IMPORT
    [diagnostic] = await open_document(client, path, text)
    assert diagnostic.code == "RLG006" and diagnostic.source == "rlguard"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.code_description.href.endswith("/rules/RLG006/")
    assert diagnostic.range.start == types.Position(line=1, character=31)
    assert diagnostic.message.splitlines()[1].startswith("Use `Collector`")  # the remedy, below the message

    fix = next(a for a in await actions(client, path, diagnostic) if a.title.startswith("Fix RLG006"))
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    fixed = apply(text, fix.edit.changes[path.as_uri()])
    assert fixed == "import os\nfrom torchrl.collectors import Collector\n"
    assert await change(client, path, fixed, 2) == []  # the fix applied in the buffer clears the finding

    # Edit again, unsaved: the buffer's text counts, not the file on disk.
    assert [d.code for d in await change(client, path, fixed + OLD_IMPORT, 3)] == ["RLG006"]


@pytest.mark.asyncio
async def test_suppress_fix_all_and_hover(client: LanguageClient, project: Path):
    path = project / "two.py"
    text = OLD_IMPORT + "from torchrl.collectors import MultiSyncDataCollector\n"
    diagnostics = await open_document(client, path, text)
    assert [d.code for d in diagnostics] == ["RLG006", "RLG006"]

    titles = {a.title: a for a in await actions(client, path, diagnostics[0])}
    suppress = titles["Suppress RLG006 on this line"]
    suppressed = apply(text, suppress.edit.changes[path.as_uri()])
    assert suppressed.splitlines()[0] == OLD_IMPORT.rstrip() + "  # noqa: RLG006"
    assert len(await change(client, path, suppressed, 2)) == 1  # only the other line still reports

    await change(client, path, text, 3)
    fix_all = titles["Fix all safe rlguard findings in this file"]
    assert fix_all.kind == "source.fixAll.rlguard"
    assert apply(text, fix_all.edit.changes[path.as_uri()]) == (
        "from torchrl.collectors import Collector\nfrom torchrl.collectors import MultiSyncCollector\n")

    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=diagnostics[0].range.start))
    assert hover is not None and hover.contents.value.startswith("# RLG006 removed-collector-name")


@pytest.mark.asyncio
async def test_unsafe_fix_is_marked(client: LanguageClient, project: Path):
    rule, example = next((r, e) for r in RULES for e in r.invalid if e.unsafe and not e.files and not e.options)
    path = project / "unsafe.py"
    diagnostics = await open_document(client, path, example.code)
    diagnostic = next(d for d in diagnostics if d.code == rule.code)
    [fix] = [a for a in await actions(client, path, diagnostic) if a.title.startswith(f"Fix {rule.code}")]
    assert fix.kind == "quickfix.unsafe" and not fix.is_preferred and "(unsafe" in fix.title
    assert apply(example.code, fix.edit.changes[path.as_uri()]) == example.fixed


@pytest.mark.asyncio
async def test_configuration_reloads_when_pyproject_changes(client: LanguageClient, project: Path):
    path = project / "train.py"
    assert len(await open_document(client, path, OLD_IMPORT)) == 1
    assert client.registrations == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]  # the server asked to watch pyproject.toml
    (project / "pyproject.toml").write_text('[tool.rlguard]\nignore = ["RLG006"]\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=(project / "pyproject.toml").as_uri(), type=types.FileChangeType.Changed)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[path.as_uri()]) == []


@pytest.mark.asyncio
async def test_findings_that_need_another_file_read_it_from_disk(client: LanguageClient, project: Path):
    (project / "robot").mkdir()
    (project / "robot" / "__init__.py").write_text("")
    (project / "robot" / "models.py").write_text(
        "import threading\n\nfrom torch import nn\n\n\nclass LockedNet(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.lock = threading.Lock()\n")
    text = "import copy\n\nfrom robot.models import LockedNet\n\ncopy.deepcopy(LockedNet())\n"
    [diagnostic] = await open_document(client, project / "robot" / "use.py", text)
    assert diagnostic.code == "RLG001" and "robot/models.py:9" in diagnostic.message


def test_the_server_never_imports_torch():
    probe = "import sys, rlguard.server; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchrl', 'tensordict')))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_without_the_lsp_extra_one_line_says_what_to_install():
    probe = "import sys; sys.modules['pygls'] = None; from rlguard.cli import main; sys.exit(main(['server']))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "needs `rlguard[lsp]`" in done.stderr
