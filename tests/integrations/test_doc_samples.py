"""Sample output in the docs is the real output: each ```console block that runs `rlguard` is rerun here.

After a deliberate change to the output, regenerate the blocks with

    RLGUARD_UPDATE_SAMPLES=1 python -m pytest tests/integrations/test_doc_samples.py
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.integrations.conftest import CHECKOUT

BLOCK = re.compile(r"```console\n\$ (rlguard [^\n]*)\n(.*?)```", re.S)
PAGES = [CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").glob("*.md"))]
SAMPLES = [(page, match.group(1)) for page in PAGES for match in BLOCK.finditer(page.read_text())]


def real_output(command: str) -> str:
    args = shlex.split(command)[1:]
    if args and args[0] in ("check", "fix"):
        args.insert(1, "--no-cache")  # the same output, without writing a cache into the checkout
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    done = subprocess.run([sys.executable, "-m", "rlguard", *args], cwd=CHECKOUT, capture_output=True, text=True,
                          env=env, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def test_the_docs_have_samples():
    assert any(page.name == "index.md" for page, _ in SAMPLES)


@pytest.mark.parametrize("page, command", SAMPLES, ids=[f"{p.name}: {c}" for p, c in SAMPLES])
def test_sample_output_is_what_the_command_prints(page, command):
    text = page.read_text()
    shown = next(m for m in BLOCK.finditer(text) if m.group(1) == command)
    actual = real_output(command)
    if os.environ.get("RLGUARD_UPDATE_SAMPLES") == "1":
        page.write_text(text[:shown.start(2)] + actual + text[shown.end(2):])
        return
    assert shown.group(2) == actual, (f"{page.name}: the sample of `{command}` is stale; regenerate it with "
                                      "RLGUARD_UPDATE_SAMPLES=1 python -m pytest tests/integrations/test_doc_samples.py")
