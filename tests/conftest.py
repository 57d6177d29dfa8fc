from __future__ import annotations

import os

import pytest
from hypothesis import settings

# CI runs the property tests with a fixed derandomised seed, so a red run is reproducible;
# locally they explore new examples every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

from tests.helpers import Tree


@pytest.fixture
def tree(tmp_path):
    """A temporary project on disk, with ``run`` for the real CLI."""
    return Tree(str(tmp_path))
