"""The command line of a generator that writes one data file: ``--write`` it, ``--check`` that the shipped
file is current (exit 1 when stale), or print it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from rlguard.engine.generated import is_current, write_generated


def run(argv: list[str], description: str, path: Path, build: Callable[[], str]) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--check", action="store_true")
    options = parser.parse_args(argv)
    text = build()
    if options.write:
        write_generated(path, text)
        return 0
    if options.check:
        return 0 if is_current(path, text) else 1
    sys.stdout.write(text)
    return 0
