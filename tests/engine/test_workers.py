"""The worker pool: results in input order, whatever order the pool takes the items in."""

from __future__ import annotations

import os

from rlguard.engine.workers import run_all


def _square_and_pid(item: int) -> tuple[int, int]:
    return item * item, os.getpid()


def _crashed(item: int, reason: str) -> tuple[int, int]:
    return -1, -1


def test_the_heaviest_items_first_and_results_in_input_order():
    items = list(range(40))
    results = run_all(_square_and_pid, items, 2, _crashed, weight=lambda item: item % 7)
    assert [square for square, _ in results] == [item * item for item in items]
    assert os.getpid() not in {pid for _, pid in results}  # done in the pool


def test_without_weights_or_a_pool_the_same_results():
    items = list(range(10))
    assert [r[0] for r in run_all(_square_and_pid, items, 2, _crashed)] == [i * i for i in items]
    assert [r[0] for r in run_all(_square_and_pid, items, 1, _crashed, weight=lambda i: -i)] == [i * i for i in items]


def test_a_heavy_item_goes_nearly_alone_and_light_ones_share_a_chunk():
    from rlguard.engine.workers import _weighed_chunks

    weights = {"big": 1000, "large": 600, **{f"small{i}": 1 for i in range(40)}}
    ordered = sorted(weights, key=lambda item: -weights[item])
    chunks = _weighed_chunks(ordered, weights.__getitem__, jobs=2, size=16)
    assert chunks[0] == ["big"] and chunks[1] == ["large"]
    assert all(len(chunk) <= 16 for chunk in chunks) and len(chunks) == 2 + 3  # 40 small ones, 16 at most a chunk
    assert [item for chunk in chunks for item in chunk] == ordered


_LOADED: list[int] = []  # what ``_load`` put here, as each process sees it


def _load() -> None:
    _LOADED.append(os.getpid())


def _loaded_by(item: int) -> tuple[int, ...]:
    return tuple(_LOADED)


def test_what_is_loaded_before_the_fork_is_the_workers_own_and_no_pool_loads_nothing():
    _LOADED.clear()
    assert run_all(_loaded_by, [1, 2], 1, _crashed, before_fork=_load) == [(), ()]  # in this process: nothing to share
    results = run_all(_loaded_by, list(range(8)), 2, _crashed, before_fork=_load)
    assert set(results) == {(os.getpid(),)}  # loaded once, here, and every worker started with it
    _LOADED.clear()
