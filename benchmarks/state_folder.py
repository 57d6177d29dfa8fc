"""A trial of the state-folder protocol with real processes: concurrent dumps and loads on one
path, and writers SIGKILLed at random times beside a reader.

Each dump writes a buffer whose storage, sampler and writer all say which marker they hold;
each load checks it got one marker's complete state (not a mixture) or counts the failure.

- concurrent: ``--writers`` and ``--readers`` processes on one path, each writer dumping
  ``--dumps`` times, the readers loading until the writers are done; ``--runs`` times.
- kills: ``--kills`` times, a writer dumping in a loop is SIGKILLed after a random delay
  (up to ``--max-delay`` seconds) while a reader process loads throughout; after each kill the
  path is loaded and checked.

No timing: prints and writes counts (default benchmarks/results/state_folder.json).
Children are forked (POSIX).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import signal
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any
from collections.abc import Callable

import torch
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage

from rlguard.runtime import RLGuardError, RLGuardWarning
from rlguard.runtime.buffer import TensorDictReplayBuffer
from rlguard.runtime.sampler import PrioritizedSampler

CAPACITY = 20


def marked(marker: int) -> TensorDictReplayBuffer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        sampler = PrioritizedSampler(CAPACITY, alpha=0.7, beta=0.5)
    made = TensorDictReplayBuffer(storage=LazyTensorStorage(CAPACITY), sampler=sampler, batch_size=4)
    if marker >= 0:
        count = 5 + marker % 15
        made.extend(TensorDict(obs=torch.arange(float(count)) + 1000 * marker, batch_size=[count]))
        made.update_priority(torch.arange(count), torch.full((count,), 1.0 + marker))
    return made


def state(made: TensorDictReplayBuffer) -> tuple[Any, ...]:
    leaves = torch.as_tensor(made.sampler._sum_tree[torch.arange(CAPACITY)])
    return (len(made), tuple(made.storage[: len(made)]["obs"].tolist()), made.writer._cursor, tuple(leaves.tolist()))


def check(path: Path, expected: dict[int, tuple[Any, ...]]) -> str:
    """"complete", "mixture" or "failed" for one load of ``path``."""
    loaded = marked(-1)
    try:
        loaded.loads(path)
    except RLGuardError:
        return "failed"
    found = state(loaded)
    marker = int(found[1][0]) // 1000
    if marker not in expected:
        expected[marker] = state(marked(marker))
    return "complete" if found == expected[marker] else "mixture"


def write_many(path: Path, first: int, count: int) -> list[str]:
    outcomes = []
    for marker in range(first, first + count):
        try:
            marked(marker).dumps(path)
            outcomes.append("complete")
        except Exception:  # a failed dump is what this trial counts
            outcomes.append("failed")
    return outcomes


def read_until(path: Path, done: Callable[[], bool], limit: int) -> list[str]:
    expected: dict[int, tuple[Any, ...]] = {}
    outcomes = []
    while not done() and len(outcomes) < limit:
        outcomes.append(check(path, expected))
    return outcomes


def child(target: Callable[..., list[str]], queue: Any, *args: Any) -> None:
    torch.set_num_threads(1)
    try:
        queue.put((os.getpid(), target(*args)))
        queue.close()
        queue.join_thread()
    finally:
        os._exit(0)


def dump_forever(path: Path, first: int) -> None:
    torch.set_num_threads(1)
    marker = first
    while True:
        marked(marker).dumps(path)
        marker += 1


def concurrent(root: Path, args: argparse.Namespace) -> dict[str, dict[str, int]]:
    context = multiprocessing.get_context("fork")
    dumps, loads = Counter(), Counter()
    for run in range(args.runs):
        path = root / f"concurrent-{run}"
        marked(0).dumps(path)
        queue, done = context.Queue(), context.Event()
        writers = [
            context.Process(target=child, args=(write_many, queue, path, 1 + 100 * i + 1000 * run, args.dumps))
            for i in range(args.writers)
        ]
        readers = [context.Process(target=child, args=(read_until, queue, path, done.is_set, 10_000)) for _ in range(args.readers)]
        for process in writers + readers:
            process.start()
        results = dict(queue.get(timeout=600) for _ in writers)
        done.set()
        results.update(queue.get(timeout=600) for _ in readers)
        for process in writers + readers:
            process.join(timeout=10)
        dumps.update(outcome for process in writers for outcome in results[process.pid])
        loads.update(outcome for process in readers for outcome in results[process.pid])
    return {"dumps": dict(dumps), "loads": dict(loads)}


def kills(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    context = multiprocessing.get_context("fork")
    path = root / "kills"
    marked(0).dumps(path)
    queue, stop = context.Queue(), context.Event()
    reader = context.Process(target=child, args=(read_until, queue, path, stop.is_set, 1_000_000))
    reader.start()
    chance, expected = random.Random(args.seed), {}
    after, mid_dump = Counter(), 0
    for round_ in range(args.kills):
        writer = context.Process(target=dump_forever, args=(path, 1 + 1000 * round_))
        writer.start()
        time.sleep(chance.uniform(0.0, args.max_delay))
        os.kill(writer.pid, signal.SIGKILL)
        writer.join()
        mid_dump += any(entry.name.startswith(".staging-") for entry in path.iterdir())
        after[check(path, expected)] += 1
    stop.set()
    _, loads = queue.get(timeout=600)
    reader.join(timeout=10)
    return {"kills": args.kills, "killed_mid_dump": mid_dump, "after_kill": dict(after), "reader_loads": dict(Counter(loads))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=3)
    parser.add_argument("--readers", type=int, default=3)
    parser.add_argument("--dumps", type=int, default=10, help="dumps per writer and run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--max-delay", type=float, default=0.15)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "state_folder.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        report = {"concurrent": concurrent(Path(root), args), "kills": kills(Path(root), args)}
    print(json.dumps(report, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
