"""Fixtures shared by every runtime test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rlguard.runtime import errors, uninstall


@pytest.fixture(autouse=True)
def _fresh_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test sees its own warn-once warnings, and leaves torchrl unpatched behind it."""
    monkeypatch.setattr(errors, "_warned", set())
    yield
    uninstall()
