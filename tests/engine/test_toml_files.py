"""TOML files read once per process and kept beside the project's cache between runs (``engine/toml_files.py``)."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys

import pytest

from rlguard.engine import toml_files
from rlguard.engine.toml_files import CACHE_FOLDER, TomlError, read_toml

PYPROJECT = '[project]\nname = "p"\ndependencies = ["torchrl==0.14.1"]\n\n[tool.rlguard]\nselect = ["RLG001"]\n'


@pytest.fixture(autouse=True)
def _settled(monkeypatch):
    """A file written by a test counts as changed long enough ago (its change time cannot be set back)."""
    monkeypatch.setattr(toml_files, "_SETTLED_NS", -10**12)


def _project(tmp_path, text=PYPROJECT, cache=True):
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    if cache:
        (tmp_path / CACHE_FOLDER).mkdir(exist_ok=True)
    toml_files._documents.clear()  # as a new process
    return str(path)


def _kept(tmp_path):
    return tmp_path / CACHE_FOLDER / "pyproject.toml.marshal"


def test_a_settled_file_is_kept_and_a_new_process_reads_it_without_tomllib(tmp_path):
    path = _project(tmp_path)
    document = read_toml(path)
    assert document["tool"]["rlguard"]["select"] == ["RLG001"] and _kept(tmp_path).is_file()
    probe = ("import sys; from rlguard.engine.toml_files import read_toml; "
             f"d = read_toml({path!r}); print(d['project']['dependencies'], 'tomllib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['torchrl==0.14.1'] False"


def test_a_changed_file_is_read_again(tmp_path):
    path = _project(tmp_path)
    read_toml(path)
    _project(tmp_path, PYPROJECT.replace('"RLG001"', '"RLG003", "RLG004"'))  # the size tells it apart
    assert read_toml(path)["tool"]["rlguard"]["select"] == ["RLG003", "RLG004"]
    _project(tmp_path, PYPROJECT.replace('"RLG001"', '"RLG005", "RLG006"'))
    os.utime(path, ns=(1, 10**18))  # the same size: its modification time tells it apart
    assert read_toml(path)["tool"]["rlguard"]["select"] == ["RLG005", "RLG006"]


def test_a_file_changed_just_now_is_not_kept(tmp_path, monkeypatch):
    """Two changes within the clock's granularity could leave the same times: not trusted yet."""
    monkeypatch.setattr(toml_files, "_SETTLED_NS", 2_000_000_000)
    path = _project(tmp_path)
    assert read_toml(path)["project"]["name"] == "p"
    assert not _kept(tmp_path).exists()


@pytest.mark.parametrize("garbage", [b"", b"not marshal", b"\xe9\x00\x00"])
def test_a_corrupt_kept_file_is_parsed_again(tmp_path, garbage):
    path = _project(tmp_path)
    _kept(tmp_path).write_bytes(garbage)
    assert read_toml(path)["project"]["name"] == "p"


def test_a_kept_file_of_another_path_is_not_used(tmp_path):
    path = _project(tmp_path)
    read_toml(path)
    moved = tmp_path / "moved"
    moved.mkdir()
    os.replace(tmp_path / CACHE_FOLDER, moved / CACHE_FOLDER)
    os.replace(path, moved / "pyproject.toml")
    (moved / "pyproject.toml").write_text(PYPROJECT.replace('"p"', '"q"'))
    toml_files._documents.clear()
    assert read_toml(str(moved / "pyproject.toml"))["project"]["name"] == "q"


def test_dates_are_not_kept_but_read(tmp_path):
    path = _project(tmp_path, PYPROJECT + "[tool.other]\nwhen = 2024-01-02\n")
    assert read_toml(path)["tool"]["other"]["when"] == datetime.date(2024, 1, 2)
    assert not _kept(tmp_path).exists()


def test_nothing_is_written_without_the_projects_cache_folder(tmp_path):
    path = _project(tmp_path, cache=False)
    read_toml(path)
    assert os.listdir(tmp_path) == ["pyproject.toml"]


@pytest.mark.parametrize("text, message", [("[project\n", "Expected ']'"), (None, "No such file")])
def test_unreadable_files_raise_with_the_reason(tmp_path, text, message):
    path = _project(tmp_path, text) if text is not None else str(tmp_path / "missing.toml")
    with pytest.raises(TomlError, match=message):
        read_toml(path)
