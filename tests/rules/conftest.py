"""Fixtures of the rule tests."""

from __future__ import annotations

import subprocess

import pytest

from rlguard_dev import upgrade_table


@pytest.fixture(scope="session")
def release_wheels() -> str:
    """The git-ignored folder holding every release wheel the removed-API table was read from,
    downloaded with pip on first use (about 30 MB, a few seconds): CI runs the checks that need them."""
    cache = upgrade_table.DEFAULT_CACHE
    if upgrade_table.missing_wheels(cache):
        try:
            upgrade_table.download(cache)
        except (OSError, subprocess.CalledProcessError) as error:
            pytest.fail(f"cannot download the release wheels into {cache} ({error}); "
                        "`python -m rlguard_dev.upgrade_table --check` fetches them with pip")
    return cache
