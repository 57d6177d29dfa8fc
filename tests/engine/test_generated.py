"""Generated files (catalog, API model, removed-API table, rule pages) are compared and replaced whole."""

from __future__ import annotations

import pytest

from rlguard.engine.generated import is_current, write_generated


def test_a_file_is_written_only_when_its_text_changes(tmp_path):
    path = tmp_path / "catalog.json"
    assert not is_current(path, "{}\n")  # missing
    assert write_generated(path, "{}\n") is True
    assert is_current(path, "{}\n") and path.read_text() == "{}\n"
    assert write_generated(path, "{}\n") is False
    assert write_generated(path, '{"a": 1}\n') is True and path.read_text() == '{"a": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.json"]


def test_a_write_that_fails_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):  # fails after the temporary file is opened
        write_generated(path, "new \ud800\n")
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.json"]  # no temporary left behind
