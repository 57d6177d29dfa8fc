from __future__ import annotations

import pytest

from tests.helpers import Tree


@pytest.fixture
def tree(tmp_path):
    """A temporary project on disk, with ``run`` for the real CLI."""
    return Tree(str(tmp_path))
