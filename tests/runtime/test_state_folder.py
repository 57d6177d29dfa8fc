"""The state-folder protocol under concurrency and SIGKILL, with real processes and threads:
writers and readers on one path never fail, never see a mixture, and never lose the last
complete state; a reader never has its generation deleted under it.

Like tests/runtime/test_checkpoint.py, children are forked (torch is not imported again); loops
and waits are bounded.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import random
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Any
from collections.abc import Callable

import pytest
import torch
from rlguard_runtime_helpers import current_state, tree_values
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage
from torchrl.data import ReplayBuffer as StockPlainBuffer

from rlguard.runtime import RLGuardError, RLGuardWarning, state_folder
from rlguard.runtime.buffer import TensorDictReplayBuffer
from rlguard.runtime.sampler import PrioritizedSampler

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forks real processes")

CAPACITY = 20
DEADLINE_S = 30  # a bound on each concurrent run, far above what it takes


def buffer() -> TensorDictReplayBuffer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        sampler = PrioritizedSampler(CAPACITY, alpha=0.7, beta=0.5)
    return TensorDictReplayBuffer(storage=LazyTensorStorage(CAPACITY), sampler=sampler, batch_size=4)


def marked(marker: int) -> TensorDictReplayBuffer:
    """A buffer whose every part (storage, sampler, writer) says which ``marker`` it holds."""
    made = buffer()
    count = 5 + marker % 15
    made.extend(TensorDict(obs=torch.arange(float(count)) + 1000 * marker, batch_size=[count]))
    made.update_priority(torch.arange(count), torch.full((count,), 1.0 + marker))
    return made


def state(made: TensorDictReplayBuffer) -> tuple[Any, ...]:
    observations = tuple(made.storage[: len(made)]["obs"].tolist())
    return (len(made), observations, made.writer._cursor, tuple(tree_values(made.sampler._sum_tree, CAPACITY).tolist()))


class Checker:
    """Loads ``path`` and says whether it held one marker's complete state."""

    def __init__(self, path: Path) -> None:
        self.path, self.expected = path, {}

    def __call__(self) -> str:
        loaded = buffer()
        try:
            loaded.loads(self.path)
        except RLGuardError as error:
            return f"failed: {error}"
        found = state(loaded)
        marker = int(found[1][0]) // 1000
        if marker not in self.expected:
            self.expected[marker] = state(marked(marker))
        return "complete" if found == self.expected[marker] else f"mixture: {found}"


def write_many(path: Path, first: int, count: int) -> list[str]:
    outcomes = []
    for marker in range(first, first + count):
        try:
            marked(marker).dumps(path)
            outcomes.append("complete")
        except Exception as error:  # any failure of a dump is what this test counts
            outcomes.append(f"failed: {type(error).__name__}: {error}")
    return outcomes


def read_until(path: Path, done: Callable[[], bool], limit: int) -> list[str]:
    check, outcomes = Checker(path), []
    while not done() and len(outcomes) < limit:
        outcomes.append(check())
    return outcomes


# --- processes -----------------------------------------------------------------------------


def _child(target: Callable[..., list[str]], queue: Any, *args: Any) -> None:
    torch.set_num_threads(1)
    try:
        queue.put((os.getpid(), target(*args)))
        queue.close()
        queue.join_thread()  # put() hands the result to a feeder thread: wait until it is sent
    finally:
        os._exit(0)  # never back into pytest


def test_concurrent_writer_and_reader_processes_never_fail_nor_mix(tmp_path: Path) -> None:
    path = tmp_path / "rb"
    marked(0).dumps(path)
    context = multiprocessing.get_context("fork")
    queue, writers_done = context.Queue(), context.Event()
    writers = [context.Process(target=_child, args=(write_many, queue, path, 1 + 100 * i, 10)) for i in range(2)]
    readers = [context.Process(target=_child, args=(read_until, queue, path, writers_done.is_set, 200)) for _ in range(2)]
    for process in writers + readers:
        process.start()
    results = {}
    deadline = time.monotonic() + DEADLINE_S
    while len(results) < len(writers) and time.monotonic() < deadline:
        pid, outcomes = queue.get(timeout=DEADLINE_S)
        results[pid] = outcomes
    writers_done.set()
    while len(results) < len(writers) + len(readers) and time.monotonic() < deadline:
        pid, outcomes = queue.get(timeout=DEADLINE_S)
        results[pid] = outcomes
    for process in writers + readers:
        process.join(timeout=5)
    dumps = [outcome for process in writers for outcome in results[process.pid]]
    loads = [outcome for process in readers for outcome in results[process.pid]]
    # Before: a reader deleted the writers' partial folders: most dumps failed, a reader once
    # loaded a mixture, and the folder ended empty.
    assert dumps == ["complete"] * 20
    assert loads and set(loads) == {"complete"}, sorted(set(loads))[:3]
    assert Checker(path)() == "complete"


def test_concurrent_writer_and_reader_threads_never_fail_nor_mix(tmp_path: Path) -> None:
    path = tmp_path / "rb"
    marked(0).dumps(path)
    results: dict[str, list[str]] = {}
    writers_done = threading.Event()

    def run(name: str, target: Callable[..., list[str]], *args: Any) -> threading.Thread:
        thread = threading.Thread(target=lambda: results.__setitem__(name, target(*args)))
        thread.start()
        return thread

    writers = [run(f"writer {i}", write_many, path, 1 + 100 * i, 6) for i in range(2)]
    readers = [run(f"reader {i}", read_until, path, writers_done.is_set, 100) for i in range(2)]
    for thread in writers:
        thread.join(DEADLINE_S)
    writers_done.set()
    for thread in readers:
        thread.join(DEADLINE_S)
    assert results["writer 0"] + results["writer 1"] == ["complete"] * 12
    loads = results["reader 0"] + results["reader 1"]
    assert loads and set(loads) == {"complete"}, sorted(set(loads))[:3]


def _dump_forever(path: Path, first: int) -> None:
    torch.set_num_threads(1)
    marker = first
    while True:
        marked(marker).dumps(path)
        marker += 1


def test_writers_killed_at_random_times_beside_a_reader_always_leave_a_complete_state(tmp_path: Path) -> None:
    path = tmp_path / "rb"
    marked(0).dumps(path)
    context = multiprocessing.get_context("fork")
    queue, stop = context.Queue(), context.Event()
    reader = context.Process(target=_child, args=(read_until, queue, path, stop.is_set, 10_000))
    reader.start()
    chance, kills, after_kill = random.Random(25), 20, []
    for round_ in range(kills):
        writer = context.Process(target=_dump_forever, args=(path, 1 + 1000 * round_))
        writer.start()
        time.sleep(chance.uniform(0.0, 0.15))
        os.kill(writer.pid, signal.SIGKILL)
        writer.join(timeout=5)
        assert writer.exitcode == -signal.SIGKILL
        after_kill.append(Checker(path)())
    stop.set()
    _, loads = queue.get(timeout=DEADLINE_S)
    reader.join(timeout=5)
    assert after_kill == ["complete"] * kills  # before: 14 of 20 sampler kills lost the state
    assert loads and set(loads) == {"complete"}, sorted(set(loads))[:3]
    # What the killed writers left (staging folders, superseded generations) goes with the next dump.
    marked(7).dumps(path)
    left = sorted(entry.name for entry in path.iterdir())
    assert left[:2] == [".lock", "CURRENT"] and len(left) == 3 and left[2].startswith("gen-"), left


# --- the reader's lock ---------------------------------------------------------------------


def digest(folder: Path) -> str:
    files = sorted(file for file in folder.rglob("*") if file.is_file())
    return hashlib.sha256(b"".join(file.name.encode() + file.read_bytes() for file in files)).hexdigest()


def test_a_generation_being_read_is_not_deleted_until_its_reader_is_done(tmp_path: Path) -> None:
    path = tmp_path / "rb"
    marked(1).dumps(path)
    with state_folder.reading(path) as held:
        before = digest(held)
        pid = os.fork()
        if pid == 0:  # another process dumps twice while this one reads
            code = 1
            try:
                marked(2).dumps(path)
                marked(3).dumps(path)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "a dump waited for or failed on the reader"
        assert digest(held) == before  # untouched while held
        assert current_state(path) != held
    marked(4).dumps(path)
    assert not held.exists()  # collected once its reader let go
    assert Checker(path)() == "complete"


def test_loads_never_changes_the_folder(tmp_path: Path) -> None:
    path = tmp_path / "rb"
    marked(1).dumps(path)
    staging = path / ".staging-4242-0000"  # what a writer in another process is filling
    (staging / "storage").mkdir(parents=True)
    (staging / "storage" / "storage_metadata.json").write_text('{"len": ')
    listing = sorted((file.relative_to(path), file.stat().st_mtime_ns) for file in path.rglob("*"))
    assert Checker(path)() == "complete"
    assert sorted((file.relative_to(path), file.stat().st_mtime_ns) for file in path.rglob("*")) == listing


def test_a_corrupt_pointer_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "rb"
    marked(1).dumps(path)
    (path / "CURRENT").write_text("../../etc\n")
    target = marked(2)
    before = state(target)
    with pytest.raises(RLGuardError, match=r"CURRENT: does not name a generation"):
        target.loads(path)
    assert state(target) == before


def test_a_pointer_to_a_missing_generation_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "rb"
    marked(1).dumps(path)
    (path / "CURRENT").write_text("gen-00000042\n")
    with pytest.raises(RLGuardError, match=r"CURRENT: names gen-00000042, which is missing"):
        buffer().loads(path)


def test_a_sampler_dumped_on_its_own_inside_a_stock_buffer_dump_loads(tmp_path: Path) -> None:
    """With install(samplers=True, buffers=False) torchrl's buffer dumps the sampler through
    rlguard's sampler dumps, which writes a state folder of its own under sampler/."""
    original = marked(3)
    StockPlainBuffer.dumps(original, tmp_path)  # torchrl's, as when buffers are not corrected
    assert (tmp_path / "sampler" / "CURRENT").exists()
    loaded = buffer()
    loaded.loads(tmp_path)
    assert state(loaded) == state(original)


def test_without_flock_dumps_and_loads_still_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where fcntl is missing (Windows), dumps stay atomic; only concurrent use is unprotected."""
    monkeypatch.setattr(state_folder, "fcntl", None)
    path = tmp_path / "rb"
    marked(1).dumps(path)
    marked(2).dumps(path)
    assert Checker(path)() == "complete" and state(_loaded(path)) == state(marked(2))
    assert sorted(entry.name for entry in path.iterdir())[1:] == ["CURRENT", "gen-00000002"]


def _loaded(path: Path) -> TensorDictReplayBuffer:
    made = buffer()
    made.loads(path)
    return made
