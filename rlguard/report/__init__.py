"""Reporters: pure functions from findings to text. They format; they never judge."""

from __future__ import annotations

from collections.abc import Callable

from rlguard.engine.findings import Report
from rlguard.report import github, json_format, sarif, text

Formatter = Callable[[Report], str]

FORMATS: dict[str, Formatter] = {
    "text": text.render,
    "json": json_format.render,
    "github": github.render,
    "sarif": sarif.render,
}
