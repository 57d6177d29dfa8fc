"""Crash-consistent checkpoints: a sampler or buffer dump killed at every write, and loads that
validate everything first and change nothing on failure.

The technique is the one tests/reliability/test_faults.py uses on ``rlguard fix``: SIGKILL the
process while it writes, then check every file is whole, old or new. Here the kill is placed
at each durable filesystem call in turn (a write torn in half, an fsync, a rename, an unlink),
in a forked child so torch is not imported again for each kill point.
"""

from __future__ import annotations

import itertools
import os
import signal
import warnings
from pathlib import Path
from typing import Any
from collections.abc import Callable

import pytest
import torch
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage

from rlguard_runtime_helpers import current_state, tree_values

from rlguard.runtime import RLGuardError, RLGuardWarning
from rlguard.runtime.buffer import TensorDictReplayBuffer
from rlguard.runtime.sampler import PrioritizedSampler

CAPACITY = 40
# The calls through which a dump reaches the disk; each is a kill point.
DURABLE_CALLS = ("write", "fsync", "rename", "replace", "unlink", "rmdir")

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked child")


def _arm_kill(step: int) -> None:
    """In this (child) process, SIGKILL at the ``step``-th durable call; a write dies halfway."""
    calls = itertools.count(1)

    def killing(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if next(calls) == step:
                if name == "write" and len(args[1]) > 1:
                    original(args[0], args[1][: len(args[1]) // 2])
                os.kill(os.getpid(), signal.SIGKILL)
            return original(*args, **kwargs)

        return call

    for name in DURABLE_CALLS:
        setattr(os, name, killing(name, getattr(os, name)))


def killed_during(step: int, action: Callable[[], None]) -> bool:
    """Run ``action`` in a child killed at its ``step``-th durable call; True if it was killed."""
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        code = 3
        try:
            _arm_kill(step)
            action()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, "the dump failed by itself in the child"
    return False


def kill_at_every_write(action: Callable[[], None], reset: Callable[[], None], check: Callable[[], str]) -> set[str]:
    """Kill ``action`` at each durable call in turn, ``check`` what is left; the outcomes seen."""
    outcomes = set()
    for step in itertools.count(1):
        reset()
        killed = killed_during(step, action)
        outcome = check()
        if not killed:
            assert outcome == "new", "a dump that finished did not load as written"
            return outcomes
        outcomes.add(outcome)
    raise AssertionError("unreachable")


# --- the sampler ---------------------------------------------------------------------------


def sampler(alpha: float = 0.7, seed: int = 3) -> PrioritizedSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        made = PrioritizedSampler(CAPACITY, alpha=alpha, beta=0.5)
    generator = torch.Generator().manual_seed(seed)
    made.update_priority(torch.randperm(CAPACITY, generator=generator)[:30], torch.rand(30, generator=generator) * 9)
    return made


def sampler_state(loaded: PrioritizedSampler) -> tuple[Any, ...]:
    return (loaded._alpha, float(loaded._max_priority[0]), tuple(tree_values(loaded._sum_tree, loaded._max_capacity).tolist()))


def test_a_sampler_dump_killed_at_every_write_loads_old_or_new(tmp_path: Path) -> None:
    old, new = sampler(alpha=0.7, seed=3), sampler(alpha=0.9, seed=4)
    states = {"old": sampler_state(old), "new": sampler_state(new)}

    def check() -> str:
        loaded = sampler()
        loaded.loads(tmp_path)  # never refused: the previous generation stays current until the commit
        return next(name for name, state in states.items() if sampler_state(loaded) == state)

    outcomes = kill_at_every_write(lambda: new.dumps(tmp_path), lambda: old.dumps(tmp_path), check)
    # Killed before the pointer's rename: the old state; after it: the new one. A flat folder
    # written in place lost the old state when killed between its files (14 of 20 kills).
    assert outcomes == {"old", "new"}
    # What the killed writers left is collected by the next dump.
    sampler(alpha=0.5, seed=5).dumps(tmp_path)
    left = sorted(entry.name for entry in tmp_path.iterdir())
    assert left[:2] == [".lock", "CURRENT"] and len(left) == 3 and left[2].startswith("gen-"), left


# --- the buffer ----------------------------------------------------------------------------


def buffer() -> TensorDictReplayBuffer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        made = PrioritizedSampler(CAPACITY, alpha=0.7, beta=0.5)
    return TensorDictReplayBuffer(storage=LazyTensorStorage(CAPACITY), sampler=made, batch_size=4)


def filled_buffer(count: int, seed: int) -> TensorDictReplayBuffer:
    made = buffer()
    made.extend(TensorDict(obs=torch.arange(float(count)) + seed, batch_size=[count]))
    generator = torch.Generator().manual_seed(seed)
    made.update_priority(torch.arange(count), torch.rand(count, generator=generator) * 5)
    return made


def buffer_state(made: TensorDictReplayBuffer) -> tuple[Any, ...]:
    observations = tuple(made.storage[: len(made)]["obs"].tolist()) if len(made) else ()
    return (len(made), observations, made.writer._cursor, tuple(tree_values(made.sampler._sum_tree, made.sampler._max_capacity).tolist()))


def test_a_buffer_dump_killed_at_every_write_loads_old_or_new(tmp_path: Path) -> None:
    target = tmp_path / "rb"
    old, new = filled_buffer(10, seed=1), filled_buffer(30, seed=2)
    states = {"old": buffer_state(old), "new": buffer_state(new)}

    def check() -> str:
        loaded = buffer()
        loaded.loads(target)  # never refused: the swap leaves a whole dump at every point
        assert sorted(entry.name for entry in tmp_path.iterdir()) == ["rb"], "leftovers not cleaned up"
        return next(name for name, state in states.items() if buffer_state(loaded) == state)

    outcomes = kill_at_every_write(lambda: new.dumps(target), lambda: old.dumps(target), check)
    assert outcomes == {"old", "new"}  # killed before the commit point, and after it


@pytest.mark.parametrize(("relative", "keep", "refusal"), [
    # A short tree would put the new storage under the old priorities.
    ("sampler/sumtree.memmap", 100, r"sumtree\.memmap \(field '_sum_tree'\): holds 100 bytes"),
    # torchrl maps a short storage file without complaint: the buffer then held what followed it.
    ("storage/obs.memmap", 50, r"obs\.memmap: holds 50 bytes, but meta\.json describes \[40\] torch\.float32 \(160 bytes\)"),
])
def test_a_truncated_dump_file_leaves_the_buffer_unchanged(tmp_path: Path, relative: str, keep: int, refusal: str) -> None:
    filled_buffer(30, seed=2).dumps(tmp_path)
    cut = current_state(tmp_path) / relative
    cut.write_bytes(cut.read_bytes()[:keep])
    target = filled_buffer(10, seed=1)
    before = buffer_state(target)
    with pytest.raises(RLGuardError, match=refusal):
        target.loads(tmp_path)
    assert buffer_state(target) == before
    assert cut.stat().st_size == keep  # nor was the dump touched


@pytest.mark.parametrize("target_count", [10, 0], ids=["filled buffer", "empty buffer"])
def test_a_storage_of_another_capacity_is_refused_before_anything_changes(tmp_path: Path, target_count: int) -> None:
    larger = TensorDictReplayBuffer(storage=LazyTensorStorage(CAPACITY + 5), batch_size=4)
    larger.extend(TensorDict(obs=torch.arange(30.0), batch_size=[30]))
    larger.dumps(tmp_path)
    target = filled_buffer(target_count, seed=1) if target_count else buffer()
    before = buffer_state(target)
    with pytest.raises(RLGuardError, match=r"obs\.memmap: holds a \[45\] tensor, .* another capacity") as raised:
        target.loads(tmp_path)
    assert "\n" not in str(raised.value)
    assert buffer_state(target) == before


@pytest.mark.parametrize(
    "damage, named",
    [
        (lambda p: (p / "buffer_metadata.json").write_text('{"batch_si'), "buffer_metadata.json: not readable JSON"),
        (lambda p: (p / "buffer_metadata.json").write_text("{}"), "field 'batch_size' is missing"),
        (lambda p: (p / "writer" / "metadata.json").write_text("[1]"), "metadata.json: expected a JSON object"),
        (lambda p: (p / "sampler" / "sampler_metadata.json").unlink(), "sampler_metadata.json: missing"),
        (lambda p: (p / "storage" / "meta.json").write_text('{"obs'), "meta.json: not readable JSON"),
        (lambda p: (p / "storage" / "index.memmap").unlink(), "index.memmap: missing, but meta.json describes"),
    ],
    ids=["truncated buffer metadata", "buffer metadata without a field", "writer metadata", "no sampler", "storage metadata", "no storage file"],
)
def test_a_bad_buffer_dump_is_refused_in_one_line_and_changes_nothing(tmp_path: Path, damage, named: str) -> None:
    filled_buffer(30, seed=2).dumps(tmp_path)
    damage(current_state(tmp_path))
    target = filled_buffer(10, seed=1)
    before = buffer_state(target)
    with pytest.raises(RLGuardError) as raised:
        target.loads(tmp_path)
    assert named in str(raised.value) and "\n" not in str(raised.value)
    assert buffer_state(target) == before


def test_dumps_refuses_a_directory_holding_other_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(RLGuardError, match="holds 'notes.txt', which ReplayBuffer.dumps"):
        filled_buffer(5, seed=1).dumps(tmp_path)
    assert [entry.name for entry in tmp_path.iterdir()] == ["notes.txt"]


def test_dumps_twice_into_the_same_directory_round_trips(tmp_path: Path) -> None:
    first, second = filled_buffer(10, seed=1), filled_buffer(30, seed=2)
    first.dumps(tmp_path / "rb")
    second.dumps(tmp_path / "rb")
    loaded = buffer()
    loaded.loads(tmp_path / "rb")
    assert buffer_state(loaded) == buffer_state(second)
