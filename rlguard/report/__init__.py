"""Reporters: pure functions from findings to text. They format; they never judge."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from rlguard.engine.findings import Report

Formatter = Callable[[Report], str]

_MODULES = {"text": "text", "json": "json_format", "github": "github", "sarif": "sarif"}
FORMATS = tuple(_MODULES)


def formatter(name: str) -> Formatter:
    """The ``render`` of one output format. Only that reporter's module is imported: a run that
    prints text never loads SARIF's (which reads every rule's documentation)."""
    return importlib.import_module(f"{__name__}.{_MODULES[name]}").render
