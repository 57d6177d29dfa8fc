"""Run a per-file function over many files, in a process pool or in-process.

Results come back in input order whatever the number of jobs. A worker that dies
(killed, out of memory) costs only the files it held: they are retried in a fresh pool,
then one per process, and a file that kills its worker again is reported by ``on_crash``.
"""

from __future__ import annotations

import contextlib
import gc
import os
from typing import TYPE_CHECKING, TypeVar
from collections.abc import Callable, Sequence

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

Item = TypeVar("Item")
Result = TypeVar("Result")


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


# libcst allocates millions of small, acyclic node objects per file: at the default thresholds
# the collector runs full passes over an ever larger heap, a cost that grows faster than the tree.
_GC_THRESHOLDS = (50_000, 20, 1_000)


def _tune_gc() -> None:
    gc.set_threshold(*_GC_THRESHOLDS)


@contextlib.contextmanager
def _tuned_gc():
    previous = gc.get_threshold()
    _tune_gc()
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def _run_chunk(function: Callable[[Item], Result], chunk: Sequence[Item]) -> list[Result]:
    return [function(item) for item in chunk]


def run_all(function: Callable[[Item], Result], items: Sequence[Item], jobs: int,
            on_crash: Callable[[Item, str], Result], weight: Callable[[Item], int] | None = None,
            before_fork: Callable[[], None] | None = None) -> list[Result]:
    """``function`` of each item, in input order. With ``weight`` (a file's size), a pool takes the
    heaviest items first: the run then ends on small ones, and no worker idles while one finishes a
    large file alone. ``before_fork`` runs here only when a pool will: what it loads, the workers
    share instead of each loading it."""
    if jobs <= 1 or len(items) <= 1:
        with _tuned_gc():
            return [function(item) for item in items]
    if before_fork is not None:
        before_fork()
    order = sorted(range(len(items)), key=lambda i: -weight(items[i])) if weight is not None else list(range(len(items)))
    ordered = [items[i] for i in order]
    size = max(1, min(16, len(items) // (jobs * 4)))
    chunks = _weighed_chunks(ordered, weight, jobs, size) if weight is not None else \
        [ordered[i:i + size] for i in range(0, len(ordered), size)]
    gc.freeze()  # what this process holds: workers' collections never scan their copy of it
    try:
        done = [result for chunk in _pooled(function, chunks, jobs, on_crash, retries=1) for result in chunk]
    finally:
        gc.unfreeze()  # a long-lived process (the language server) collects it again
    results: list[Result] = [None] * len(items)  # type: ignore[list-item]
    for position, result in zip(order, done, strict=True):
        results[position] = result
    return results


def _weighed_chunks(ordered: Sequence[Item], weight: Callable[[Item], int], jobs: int, size: int) -> list[list[Item]]:
    """Chunks of at most ``size`` items (heaviest first), each closed once it holds a share of the total
    weight: a large file goes nearly alone, small ones many to a chunk (one message each way per chunk)."""
    share = sum(weight(item) for item in ordered) / (jobs * 8) or 1
    chunks: list[list[Item]] = []
    held = 0.0
    for item in ordered:
        if not chunks or len(chunks[-1]) >= size or held >= share:
            chunks.append([])
            held = 0.0
        chunks[-1].append(item)
        held += weight(item)
    return chunks


def _pooled(function, chunks, jobs, on_crash, retries: int) -> list[list]:
    """One result list per chunk; chunks lost to a dead worker are redone."""
    # Imported here: a run over one changed file never needs a pool, and these imports cost
    # about as much as Python's own start-up.
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    results: list = []
    failed: list = []
    with ProcessPoolExecutor(max_workers=jobs, initializer=_tune_gc, mp_context=_forking()) as pool:
        futures = [pool.submit(_run_chunk, function, chunk) for chunk in chunks]
        for future, chunk in zip(futures, chunks, strict=False):
            try:
                results.append(future.result())
            except BrokenProcessPool:
                results.append(None)
                failed.append(chunk)
    if failed:
        redo = iter(_pooled(function, failed, jobs, on_crash, retries - 1) if retries
                    else [[_isolated(function, item, on_crash) for item in chunk] for chunk in failed])
        results = [r if r is not None else next(redo) for r in results]
    return results


def _forking() -> BaseContext | None:
    """Fork, where the platform has it and this process runs one thread: workers then start with what
    this process loaded (``before_fork``), whatever start method a library imported here chose (torchrl
    sets "spawn"). Elsewhere the default, whose workers import what they need themselves."""
    import multiprocessing
    import threading

    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return None


def _isolated(function: Callable[[Item], Result], item: Item, on_crash: Callable[[Item, str], Result]) -> Result:
    """Retry one item in a process of its own, so a crash is pinned on the file that caused it."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=_forking()) as pool:
            return pool.submit(function, item).result()
    except BrokenProcessPool:
        return on_crash(item, "the worker process checking this file died")
