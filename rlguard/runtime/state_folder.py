"""The state-folder protocol behind rlguard's ``dumps``/``loads``: generations and an atomic pointer.

A state folder ``path`` holds::

    path/CURRENT          the pointer: one line naming the last complete generation
    path/gen-00000007/    a complete state in torchrl's own layout (stock torchrl loads it)
    path/.staging-*/      a dump being written (or one whose writer died)
    path/.lock            taken by writers, only to commit
    path/.trash-*         a collected generation being deleted

A writer fills a private ``.staging-*`` folder, holding an exclusive ``flock`` on it so that
no other writer collects it, fsyncs it, then, under the commit lock, renames it to the next ``gen-N`` and replaces ``CURRENT`` by a rename: the commit
point. SIGKILL before it leaves the previous generation current; after it, the new one. Still
under the commit lock, it collects what no one uses: older generations, staging folders of dead
writers, and a flat state left by stock torchrl or an older rlguard.

A reader reads ``CURRENT``, opens the generation it names and takes a shared ``flock`` on it,
then checks it is still there; it loads while holding that lock. A writer deletes a folder only
after taking an exclusive ``flock`` on it without waiting, which fails while any reader holds
it: a reader never sees its generation deleted, and never writes anything (a read-only
checkpoint loads). Without ``CURRENT``, ``path`` is a flat state (stock torchrl's, or written
inside a buffer's generation) and is read in place under the same shared lock on ``path``.

Why generations and not a lock file alone: a lock file would make readers wait for writers
and need a writable folder, and it does not make a dump atomic under SIGKILL by itself; with
generations a reader never waits for a dump, and the kernel drops a dead process's locks.
``flock`` needs a local POSIX filesystem; where ``fcntl`` is missing (Windows) dumps stay
atomic but concurrent use of one path is not protected.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterable, Iterator

from rlguard.runtime.errors import RLGuardError

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None  # type: ignore[assignment]

__all__ = ["POINTER", "inside_staging", "is_protocol_entry", "parse_json", "reading", "write"]

POINTER = "CURRENT"
_LOCK = ".lock"
_GENERATION = re.compile(r"gen-(\d{8})")
_STAGING, _TRASH = ".staging-", ".trash-"
_POINTER_BYTES = 64  # "gen-00000007\n" and room to spare: a larger pointer is not ours
# How often a reader re-resolves CURRENT when writers collect what it resolved to. Each retry
# follows a newer commit, so this bounds only a reader racing that many dumps in a row.
_ATTEMPTS = 100
# State files nest a few levels; json recurses per level (RecursionError past ~1000).
MAX_NESTING = 100

# Set while a writer fills its staging folder: a component's own dumps() called inside writes
# its files flat there (the writer's generation is already private and atomic).
_staging: contextvars.ContextVar[bool] = contextvars.ContextVar("rlguard_staging", default=False)


def inside_staging() -> bool:
    """Whether this dumps() call writes into a generation being staged (so: flat, no protocol)."""
    return _staging.get()


def is_protocol_entry(name: str) -> bool:
    """Whether ``name`` at the top of a state folder belongs to the protocol (not to a state)."""
    return (
        name in (POINTER, POINTER + ".partial", _LOCK)
        or bool(_GENERATION.fullmatch(name))
        or name.startswith((_STAGING, _TRASH))
    )


def parse_json(file: Path, text: str) -> Any:
    """``json.loads(text)``, refusing hostile nesting with ``RLGuardError`` naming ``file``
    (a ``json.JSONDecodeError`` passes through for the caller to describe)."""
    depth = _nesting_depth(text)
    if depth > MAX_NESTING:
        raise RLGuardError(
            f"{file}: nests arrays and objects {depth} levels deep (at most {MAX_NESTING} are read): "
            "no dumps() writes such a file. Dump again."
        )
    return json.loads(text)


def _nesting_depth(text: str) -> int:
    """How deep JSON ``text`` nests, counted without recursion: Python's json module recurses
    once per level and raises RecursionError on a hostile file."""
    brackets = re.sub(r'"(?:[^"\\]|\\.)*"', "", text)
    depth = deepest = 0
    for match in re.finditer(r"[\[\]{}]", brackets):
        depth += 1 if match[0] in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


# --- writing -------------------------------------------------------------------------------


def write(path: Path, fill: Callable[[Path], None], flat_entries: Iterable[str]) -> None:
    """Make what ``fill(folder)`` writes the current generation of ``path``, atomically.

    ``flat_entries``: the names a flat (pre-protocol) state of this kind holds at the top of
    ``path``; they are deleted once a generation replaces them and no reader holds ``path``.
    """
    path.mkdir(parents=True, exist_ok=True)
    with _locked(path / _LOCK):  # so collection never takes a folder not yet locked
        staging = path / f"{_STAGING}{os.getpid()}-{secrets.token_hex(4)}"
        staging.mkdir()
        held = _lock_folder(staging, exclusive=True)
    renamed = False
    try:
        token = _staging.set(True)
        try:
            fill(staging)
        finally:
            _staging.reset(token)
        _fsync_tree(staging)
        with _locked(path / _LOCK):
            generation = path / f"gen-{_next_number(path):08d}"
            os.rename(staging, generation)
            renamed = True
            _unlock(held)  # the commit lock now keeps other writers' collection off it
            _fsync_directory(path)
            _replace_file(path / POINTER, f"{generation.name}\n".encode())  # the commit point
            _collect(path, generation.name, frozenset(flat_entries))
    finally:
        if not renamed:  # fill() or the fsync failed
            _unlock(held)
            shutil.rmtree(staging, ignore_errors=True)


def _next_number(path: Path) -> int:
    numbers = [int(match[1]) for entry in os.listdir(path) if (match := _GENERATION.fullmatch(entry))]
    return max(numbers, default=0) + 1


def _collect(path: Path, current: str, flat_entries: frozenset[str]) -> None:
    """Delete what no reader or writer holds: other generations, dead writers' staging folders,
    trash, and a flat state's entries. Runs under the commit lock."""
    for name in os.listdir(path):
        entry = path / name
        if name.startswith(_TRASH):
            shutil.rmtree(entry, ignore_errors=True)
        elif (_GENERATION.fullmatch(name) and name != current) or name.startswith(_STAGING):
            _delete_unheld(entry)
    flat = [path / name for name in os.listdir(path) if name in flat_entries]
    if flat:
        held = _try_lock_folder(path)
        if held is not None:  # no reader is loading the flat state
            try:
                for entry in flat:
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
            finally:
                _unlock(held)


def _delete_unheld(folder: Path) -> None:
    held = _try_lock_folder(folder)
    if held is None:
        return  # a reader loads it, or a writer fills it: the next dump collects it
    try:
        trash = folder.with_name(f"{_TRASH}{folder.name}-{secrets.token_hex(4)}")
        os.rename(folder, trash)  # out of readers' sight while still locked
    finally:
        _unlock(held)
    shutil.rmtree(trash, ignore_errors=True)


# --- reading -------------------------------------------------------------------------------


@contextlib.contextmanager
def reading(path: Path) -> Iterator[Path]:
    """The folder holding ``path``'s last complete state, kept from collection during the block.

    Raises ``RLGuardError`` naming the file when there is no state to read.
    """
    gone = None
    for _ in range(_ATTEMPTS):
        folder = _resolve(path)
        try:
            held = _lock_folder(folder, exclusive=False)
        except (FileNotFoundError, NotADirectoryError):
            if folder == path:
                raise RLGuardError(
                    f"{path}: missing or not a directory. Point loads() at the directory that dumps() wrote."
                ) from None
            if folder == gone:  # CURRENT did not move on: the generation is missing, not collected
                raise RLGuardError(
                    f"{path / POINTER}: names {folder.name}, which is missing: the folder was damaged. "
                    "Point CURRENT at a gen-* folder that is there, or dump again."
                ) from None
            gone = folder  # collected after we read CURRENT: a newer generation is current
            continue
        try:
            if _still_valid(path, folder, held):
                yield folder
                return
        finally:
            _unlock(held)
    raise RLGuardError(
        f"{path / POINTER}: named a generation that was gone {_ATTEMPTS} times in a row; "
        "writers are dumping faster than this load can start. Load again."
    )


def _resolve(path: Path) -> Path:
    pointer = path / POINTER
    try:
        with open(pointer, "rb") as file:
            raw = file.read(_POINTER_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return path  # a flat state, or nothing
    except OSError as error:
        raise RLGuardError(f"{pointer}: cannot be read ({error.strerror or error}).") from None
    name = raw.decode("ascii", "replace").strip()
    if len(raw) > _POINTER_BYTES or not _GENERATION.fullmatch(name):
        raise RLGuardError(
            f"{pointer}: does not name a generation (expected one line like 'gen-00000001', got "
            f"{raw[:40]!r}): the file is corrupt. Dump again, or point CURRENT at a gen-* folder."
        )
    return path / name


def _still_valid(path: Path, folder: Path, held: int) -> bool:
    """Under the shared lock: the folder is still the one we opened (not renamed to trash),
    and a flat state has not been replaced by a generation meanwhile."""
    if folder == path:
        return not (path / POINTER).exists()
    try:
        return held == _NO_LOCK or os.stat(folder).st_ino == os.fstat(held).st_ino
    except FileNotFoundError:
        return False


# --- locks ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(file: Path) -> Iterator[None]:
    descriptor = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing drops the lock; so does the kernel when a process dies


_NO_LOCK = -1  # where fcntl is missing: folders are opened by nothing and locked by no one


def _lock_folder(folder: Path, *, exclusive: bool) -> int:
    """An open descriptor of ``folder`` holding a flock on it (blocking)."""
    if fcntl is None:
        if not folder.is_dir():
            raise FileNotFoundError(folder)
        return _NO_LOCK
    descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _try_lock_folder(folder: Path) -> int | None:
    """An exclusive flock on ``folder`` if no one holds it now; None otherwise."""
    if fcntl is None:
        return _NO_LOCK if folder.is_dir() else None
    try:
        descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


def _unlock(descriptor: int) -> None:
    if descriptor != _NO_LOCK:
        os.close(descriptor)  # closing drops the flock


# --- durable files -------------------------------------------------------------------------


def _replace_file(file: Path, data: bytes) -> None:
    """Write ``file`` whole or not at all, durably: on disk before it replaces the old one."""
    partial = file.with_name(file.name + ".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(partial, file)
    _fsync_directory(file.parent)


def _fsync_tree(root: Path) -> None:
    """Every file and folder under ``root`` on disk (torchrl writes through memmaps and open())."""
    for folder, _, files in os.walk(root):
        for name in files:
            descriptor = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        _fsync_directory(Path(folder))


def _fsync_directory(path: Path) -> None:
    """Make a rename inside ``path`` durable (POSIX; Windows cannot open directories)."""
    if os.name != "posix":
        return
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
