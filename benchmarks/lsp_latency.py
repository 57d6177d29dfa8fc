"""`rlguard server`: the time from an edit (didChange) to its diagnostics, on a 2,000-line file.

A real LSP client (pygls) drives the server over stdio, as an editor does. Each round edits one
line and waits for the diagnostics of that version. The server waits ``DEBOUNCE_S`` after the
last keystroke before it checks, so the table shows that wait and the checking time beside it.
Also timed in the same run: `rlguard check` of the same file from the command line, for scale.
Never a timed test: it prints a table and writes JSON.

    python benchmarks/lsp_latency.py                  # 2,000 lines, 20 edits
    python benchmarks/lsp_latency.py --lines 5000 --edits 40 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rlguard.server import DEBOUNCE_S  # noqa: E402

HEADER = (
    "import json\n\nimport torch\nfrom tensordict import TensorDict\n"
    "from torchrl.collectors import SyncDataCollector\nfrom torchrl.envs import Transform\n\n\n"
)
BLOCK = (
    "class Scale{n}(Transform):\n"
    "    def _call(self, tensordict):\n"
    "        out = TensorDict({{\"obs\": tensordict[\"obs\"] * {n}}}, batch_size=tensordict.batch_size)\n"
    "        return out\n\n\n"
    "def log_{n}(stats):\n"
    "    total = torch.zeros(())\n"
    "    for value in stats:\n"
    "        total = total + value\n"
    "    print(json.dumps({{\"total\": total.item(), \"step\": {n}}}))\n"
    "    return total\n\n\n"
)


def source(lines: int) -> str:
    """A file of about ``lines`` lines of TorchRL code, with findings of several rules."""
    text, n = HEADER, 0
    while text.count("\n") < lines:
        text += BLOCK.format(n=n)
        n += 1
    return text


async def measure(path: Path, text: str, edits: int) -> list[float]:
    client = LanguageClient("lsp-latency", "1")
    versions: dict[int, asyncio.Future] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: types.PublishDiagnosticsParams) -> None:
        future = versions.get(params.version) if params.version is not None else None
        if future is not None and not future.done():
            future.set_result(time.perf_counter())

    await client.start_io(sys.executable, "-m", "rlguard", "server")
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities(),
                                                         root_uri=path.parent.as_uri()))
    client.initialized(types.InitializedParams())
    uri = path.as_uri()
    versions[1] = asyncio.get_running_loop().create_future()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await versions[1]  # the first check also fills the cache for the rest of the folder
    latencies = []
    lines = text.splitlines(keepends=True)
    for version in range(2, edits + 2):
        lines[-2] = f"# edit {version}\n"
        versions[version] = asyncio.get_running_loop().create_future()
        start = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="".join(lines))]))
        latencies.append(await versions[version] - start)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return latencies


def cli_seconds(path: Path, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", str(path)], capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / ".git").mkdir()
        path = Path(root) / "train.py"
        text = source(args.lines)
        path.write_text(text)
        latencies = asyncio.run(measure(path, text, args.edits))
        cli = cli_seconds(path)
    ordered = sorted(latencies)
    figures = {
        "lines": text.count("\n"), "edits": len(latencies), "debounce_s": DEBOUNCE_S,
        "median_s": statistics.median(latencies), "p90_s": ordered[int(0.9 * (len(ordered) - 1))],
        "max_s": ordered[-1], "check_after_debounce_median_s": statistics.median(latencies) - DEBOUNCE_S,
        "cli_check_no_cache_s": cli,
    }
    print(f"change -> diagnostics on a {figures['lines']}-line file, {figures['edits']} edits")
    for key in ("median_s", "p90_s", "max_s", "debounce_s", "check_after_debounce_median_s", "cli_check_no_cache_s"):
        print(f"  {key:<32} {figures[key]:.3f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
