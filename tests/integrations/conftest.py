"""Fixtures for tests that drive real tools (pre-commit, pytest, mkdocs) in subprocesses."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment minus git's per-repository variables, which a surrounding git hook may set
    and which would point git in a temporary repo at the wrong place."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="rlguard tests", GIT_AUTHOR_EMAIL="tests@rlguard.invalid",
               GIT_COMMITTER_NAME="rlguard tests", GIT_COMMITTER_EMAIL="tests@rlguard.invalid",
               GIT_CONFIG_NOSYSTEM="1", HOME=extra.pop("HOME", os.environ.get("HOME", "/tmp")))
    env.update(extra)
    return env


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=clean_env(), check=True, capture_output=True, text=True).stdout


def snapshot_checkout(destination: Path) -> tuple[Path, str]:
    """This checkout as it is on disk (tracked files with their changes, plus untracked files that
    are not ignored), committed into a fresh repository. Returns the repository and its commit.

    pre-commit installs a hook repository from a commit; `try-repo` on a dirty checkout commits
    only tracked changes, so untracked new files would be missing. A snapshot makes the tests
    see exactly the working tree, committed or not."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    try:
        listing = git(CHECKOUT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    except subprocess.CalledProcessError:
        pytest.skip("the checkout is not a git repository")
    destination.mkdir(parents=True)
    for relative in filter(None, listing.split("\0")):
        source = CHECKOUT / relative
        if source.is_file() and not source.is_symlink():
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git(destination, "init", "-q")
    git(destination, "add", "-A")
    git(destination, "commit", "-q", "-m", "snapshot of the rlguard checkout")
    return destination, git(destination, "rev-parse", "HEAD").strip()


def make_repo(path: Path, files: dict[str, str]) -> Path:
    """A git repository holding ``files``, staged (pre-commit's --all-files checks tracked files)."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    git(path, "add", "-A")
    return path


@pytest.fixture(scope="session")
def checkout_snapshot(tmp_path_factory) -> tuple[Path, str]:
    """One snapshot of the checkout per test session, shared by the pre-commit and action tests."""
    return snapshot_checkout(tmp_path_factory.mktemp("snapshot") / "rlguard")
