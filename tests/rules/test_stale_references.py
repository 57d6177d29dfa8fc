"""The old-tree measure (``rlguard_dev.stale_references``) on a tree whose answers are known."""

from __future__ import annotations

import pytest

pytest.importorskip("torchrl")

from rlguard_dev.stale_references import measure  # noqa: E402


def test_it_counts_failing_imports_and_finds_the_one_rlguard_cannot_know(tmp_path):
    (tmp_path / "train.py").write_text(
        "from torchrl.collectors import SyncDataCollector\n"  # removed in 0.13: flagged
        "from torchrl.envs import PendulumEnv\n"  # works
        "from torchrl.data import NoSuchNameInAnyRelease\n"  # fails, but no release had it
        "import tensordict.nn\n"  # works
    )
    lines = measure(str(tmp_path))
    assert lines[0].endswith(": 4 imports of torchrl/tensordict, 2 fail here, 1 flagged, 1 not flagged")
    assert lines[1:] == ["  not flagged: train.py:3 torchrl.data.NoSuchNameInAnyRelease"]
