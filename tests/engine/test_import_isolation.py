"""The linter never imports torch, torchrl or tensordict: not on import, not while checking."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROBE = """
import sys
import rlguard, rlguard.cli
from rlguard.cli import main
code = main(["check", "--no-cache", "--jobs", "1", sys.argv[1]])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "torchrl", "tensordict"))
print("HEAVY:" + ",".join(heavy))
"""


def test_check_on_the_examples_imports_no_torch():
    result = subprocess.run([sys.executable, "-c", PROBE, os.path.join(ROOT, "examples")], capture_output=True, text=True)
    assert "HEAVY:" in result.stdout, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "HEAVY:"
