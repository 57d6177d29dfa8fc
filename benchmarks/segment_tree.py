"""rlguard's extension-free segment tree against per-item Python trees (and torchrl's compiled one).

Each implementation holds a sum and a min tree over ``--capacity`` random priorities and does
what PrioritizedSampler does per training step:
- update: write ``--batch`` new priorities at random indices into both trees;
- sample: total and minimum over the buffer, ``scan_lower_bound`` for ``--batch`` masses, and
  the leaf values at the indices found.

Baselines, all one item at a time in Python:
- textbook: the generic segment tree of the classic DQN/PER code bases (OpenAI baselines and
  its many descendants): one class for any operation, ``tree[i] = p`` per item,
  ``find_prefixsum_idx`` per mass, ``sum()``/``min()`` through the range reduction;
- python-list: a hand-tuned binary tree over Python lists of floats, both trees updated in
  one loop, everything inlined (the fastest per-item form we could write);
- tensor-per-item: python-list's loops over torch tensors, i.e. the C++ tree ported literally.

A third table times a large extend: the priorities of ``--extend`` new transitions written
into a prioritized sampler on rlguard's trees (what ``buffer.extend`` makes the sampler do),
with one intra-op thread and with ``--threads``, taking turns. Past torch's parallel grain each
op wakes the intra-op threads, which on a busy machine once made 100k priorities take 0.3 to
0.65 s with two threads against 16 ms with one; the ratio shows whether large batches collapse.

Timed two ways: interleaved (the trees take turns batch by batch, so each finds its memory
evicted, as after a training step) and back-to-back (one tree at a time, memory warm).
Prints tables of median milliseconds and writes JSON (default benchmarks/results/segment_tree.json).
Ratios are computed from timings taken in the same run.
"""

from __future__ import annotations

import argparse
import json
import operator
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Any
from collections.abc import Callable

import torch

from rlguard.runtime.extension import probe
from rlguard.runtime.segment_tree import MinSegmentTreeFp32, SumSegmentTreeFp32

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # indices, priorities, masses in [0, 1)


class ListTree:
    """A binary sum tree and min tree over Python lists, updated and searched item by item."""

    def __init__(self, priorities: list[float]) -> None:
        self.capacity = 1
        while self.capacity <= len(priorities):
            self.capacity <<= 1
        pad = self.capacity - len(priorities)
        self.sums = [0.0] * self.capacity + priorities + [0.0] * pad
        self.mins = [float("inf")] * self.capacity + priorities + [float("inf")] * pad
        for node in range(self.capacity - 1, 0, -1):
            self.sums[node] = self.sums[2 * node] + self.sums[2 * node + 1]
            self.mins[node] = min(self.mins[2 * node], self.mins[2 * node + 1])
        self.size = len(priorities)

    def update(self, index: list[int], values: list[float]) -> None:
        sums, mins = self.sums, self.mins
        for i, value in zip(index, values, strict=False):
            node = i + self.capacity
            sums[node] = mins[node] = value
            while node > 1:
                node >>= 1
                sums[node] = sums[2 * node] + sums[2 * node + 1]
                mins[node] = min(mins[2 * node], mins[2 * node + 1])

    def sample(self, masses: list[float]) -> tuple[list[int], list[float]]:
        sums, total, smallest = self.sums, self.sums[1], self.mins[1]
        found = []
        for mass in masses:
            remaining, node = mass * total, 1
            while node < self.capacity:
                node <<= 1
                if remaining > sums[node]:
                    remaining -= sums[node]
                    node |= 1
            found.append(node - self.capacity)
        return found, [sums[i + self.capacity] / smallest for i in found]


class TextbookTree:
    """The classic generic tree: a binary heap layout, one ``operation`` for every node."""

    def __init__(self, capacity: int, operation: Callable[[float, float], float], neutral: float) -> None:
        self.capacity = 1
        while self.capacity < capacity:
            self.capacity <<= 1
        self.operation, self.neutral = operation, neutral
        self.values = [neutral] * (2 * self.capacity)

    def __setitem__(self, index: int, value: float) -> None:
        node = index + self.capacity
        self.values[node] = value
        node //= 2
        while node >= 1:
            self.values[node] = self.operation(self.values[2 * node], self.values[2 * node + 1])
            node //= 2

    def __getitem__(self, index: int) -> float:
        return self.values[self.capacity + index]

    def reduce(self, start: int = 0, end: int | None = None) -> float:
        """Reduce leaves ``start..end`` inclusive, descending from the root."""
        end = self.capacity - 1 if end is None else end
        return self._reduce(start, end, 1, 0, self.capacity - 1)

    def _reduce(self, start: int, end: int, node: int, node_start: int, node_end: int) -> float:
        if start == node_start and end == node_end:
            return self.values[node]
        middle = (node_start + node_end) // 2
        if end <= middle:
            return self._reduce(start, end, 2 * node, node_start, middle)
        if start > middle:
            return self._reduce(start, end, 2 * node + 1, middle + 1, node_end)
        return self.operation(
            self._reduce(start, middle, 2 * node, node_start, middle),
            self._reduce(middle + 1, end, 2 * node + 1, middle + 1, node_end),
        )

    def find_prefixsum_idx(self, prefixsum: float) -> int:
        node = 1
        while node < self.capacity:
            if self.values[2 * node] > prefixsum:
                node = 2 * node
            else:
                prefixsum -= self.values[2 * node]
                node = 2 * node + 1
        return node - self.capacity


def textbook_steps(priorities: list[float]) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    sums, mins = TextbookTree(len(priorities), operator.add, 0.0), TextbookTree(len(priorities), min, float("inf"))
    for i, priority in enumerate(priorities):
        sums[i] = priority
        mins[i] = priority

    def update(batch: Any) -> None:
        for index, priority in zip(batch[0], batch[1], strict=False):
            sums[index] = priority
            mins[index] = priority

    def sample(batch: Any) -> tuple[list[int], list[float]]:
        total, smallest = sums.reduce(), mins.reduce()
        found = [sums.find_prefixsum_idx(mass * total) for mass in batch[2]]
        return found, [sums[i] / smallest for i in found]

    return update, sample


class TensorPerItemTree(ListTree):
    """ListTree's loops, with the nodes in torch tensors (what a literal port of the C++ gives)."""

    def __init__(self, priorities: list[float]) -> None:
        super().__init__(priorities)
        self.sums = torch.tensor(self.sums)
        self.mins = torch.tensor(self.mins)

    def sample(self, masses: list[float]) -> tuple[list[int], list[float]]:
        found, weights = super().sample(masses)
        return found, [float(w) for w in weights]


def rlguard_trees(priorities: torch.Tensor) -> tuple[Any, Any]:
    sums, mins = SumSegmentTreeFp32(priorities.numel()), MinSegmentTreeFp32(priorities.numel())
    sums.load_leaves(priorities)
    mins.load_leaves(priorities)
    return sums, mins


def compiled_trees(priorities: torch.Tensor) -> tuple[Any, Any] | None:
    if not probe().loads:
        return None
    from torchrl._torchrl import MinSegmentTreeFp32 as CompiledMin
    from torchrl._torchrl import SumSegmentTreeFp32 as CompiledSum

    sums, mins = CompiledSum(priorities.numel()), CompiledMin(priorities.numel())
    index = torch.arange(priorities.numel())
    sums[index] = priorities
    mins[index] = priorities
    return sums, mins


def tensor_tree_steps(sums: Any, mins: Any, size: int) -> tuple[Callable[[Batch], Any], Callable[[Batch], Any]]:
    """update/sample as PrioritizedSampler drives torchrl's tree interface."""

    def update(batch: Batch) -> None:
        index, priority, _ = batch
        sums[index] = priority
        mins[index] = priority

    def sample(batch: Batch) -> Any:
        total, smallest = sums.query(0, size), mins.query(0, size)
        index = torch.as_tensor(sums.scan_lower_bound(batch[2] * total)).clamp_max(size - 1)
        return index, torch.as_tensor(sums[index]) / smallest

    return update, sample


def list_tree_steps(tree: ListTree) -> tuple[Callable[[Batch], Any], Callable[[Batch], Any]]:
    # Conversions to Python lists happen outside the timed region (see make_batch).
    return (lambda batch: tree.update(batch[0], batch[1])), (lambda batch: tree.sample(batch[2]))


def make_batch(capacity: int, size: int, generator: torch.Generator, as_lists: bool) -> Any:
    batch = (
        torch.randint(0, capacity, (size,), generator=generator),
        torch.rand(size, generator=generator) * 10,
        torch.rand(size, generator=generator),
    )
    return tuple(part.tolist() for part in batch) if as_lists else batch


def time_interleaved(steps: dict[str, tuple[Callable[[Any], Any], list[Any]]]) -> dict[str, float]:
    """Median milliseconds per step, one batch of each implementation in turn.

    Fresh random batches mean no warm cache lines; taking turns spreads any load from other
    processes over every implementation alike, so the ratios stay fair on a busy machine.
    """
    times: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(max(len(batches) for _, batches in steps.values())):
        for name, (step, batches) in steps.items():
            if round_ < len(batches):
                start = time.perf_counter()
                step(batches[round_])
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(taken[1:]) * 1e3 for name, taken in times.items()}  # round 0 warms up


def time_large_extend(capacity: int, count: int, threads: int, repeats: int) -> dict[str, float]:
    """Median milliseconds to write ``count`` priorities with 1 and with ``threads`` intra-op threads."""
    import warnings

    from rlguard.runtime.errors import RLGuardWarning
    from rlguard.runtime.sampler import PrioritizedSampler

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        sampler = PrioritizedSampler(capacity, alpha=0.7, beta=0.5)
    generator = torch.Generator().manual_seed(1)
    before = torch.get_num_threads()
    times: dict[int, list[float]] = {1: [], threads: []}
    try:
        for _ in range(repeats + 1):
            for count_threads in times:  # taking turns, so load from other processes hits both
                index = torch.randint(0, capacity, (count,), generator=generator)
                priority = torch.rand(count, generator=generator)
                torch.set_num_threads(count_threads)
                start = time.perf_counter()
                sampler.update_priority(index, priority)
                times[count_threads].append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(before)
    medians = {n: statistics.median(taken[1:]) * 1e3 for n, taken in times.items()}  # round 0 warms up
    return {"one_thread_ms": medians[1], f"{threads}_threads_ms": medians[threads], "ratio": medians[threads] / medians[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=200, help="timed batches per vectorised tree")
    parser.add_argument("--slow-repeats", type=int, default=20, help="timed batches per tensor-per-item tree")
    parser.add_argument("--extend", type=int, default=100_000, help="priorities per large extend")
    parser.add_argument("--threads", type=int, default=max(2, torch.get_num_threads()), help="for the large extend")
    parser.add_argument("--extend-repeats", type=int, default=15)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "segment_tree.json")
    args = parser.parse_args()

    generator = torch.Generator().manual_seed(0)
    random.seed(0)
    priorities = torch.rand(args.capacity, generator=generator) * 10
    as_list = priorities.tolist()
    implementations: dict[str, tuple[tuple[Callable, Callable], int, bool]] = {
        "rlguard (extension-free)": (tensor_tree_steps(*rlguard_trees(priorities), args.capacity), args.repeats, False),
        "textbook per item": (textbook_steps(as_list), args.repeats, True),
        "python-list per item": (list_tree_steps(ListTree(as_list)), args.repeats, True),
        "tensor-per-item": (list_tree_steps(TensorPerItemTree(as_list)), args.slow_repeats, True),
    }
    compiled = compiled_trees(priorities)
    if compiled is not None:
        implementations["torchrl compiled"] = (tensor_tree_steps(*compiled, args.capacity), args.repeats, False)

    batches = {
        name: [make_batch(args.capacity, args.batch, generator, as_lists) for _ in range(repeats + 1)]
        for name, (_, repeats, as_lists) in implementations.items()
    }
    ours = "rlguard (extension-free)"
    threads = torch.get_num_threads()
    print(f"capacity {args.capacity:,}, batch {args.batch}, torch {torch.__version__}, {threads} threads")
    report_modes = {}
    for mode, groups in (
        # Taking turns: every tree finds its memory evicted by the others, as by a training step.
        ("interleaved", [list(implementations)]),
        # One tree at a time: each keeps its memory warm between batches.
        ("back-to-back", [[name] for name in implementations]),
    ):
        results: dict[str, dict[str, float]] = {name: {} for name in implementations}
        for group in groups:
            for i, op in enumerate(("update", "sample")):
                timed = time_interleaved({name: (implementations[name][0][i], batches[name]) for name in group})
                for name, milliseconds in timed.items():
                    results[name][f"{op}_ms"] = milliseconds
        ratios = {
            f"{op} speed-up vs {name}": results[name][f"{op}_ms"] / results[ours][f"{op}_ms"]
            for name in results
            if name != ours
            for op in ("update", "sample")
        }
        report_modes[mode] = {"results_ms": results, "ratios": ratios}
        print(f"\n{mode}:")
        print(f"{'implementation':<24}{'update ms':>12}{'sample ms':>12}{'update x':>11}{'sample x':>11}")
        for name, timing in results.items():
            update, sample = (timing[f"{op}_ms"] / results[ours][f"{op}_ms"] for op in ("update", "sample"))
            print(f"{name:<24}{timing['update_ms']:>12.3f}{timing['sample_ms']:>12.3f}{update:>10.1f}x{sample:>10.1f}x")
    if compiled is None:
        print(f"\ntorchrl compiled: not measured, the extension does not load ({probe().cause[:80]}...)")
    else:
        for mode, report in report_modes.items():
            slowdown = {op: 1 / report["ratios"][f"{op} speed-up vs torchrl compiled"] for op in ("update", "sample")}
            report["slowdown vs torchrl compiled"] = slowdown
            print(f"{mode}: rlguard takes {slowdown['update']:.2f}x the compiled tree's time to update, "
                  f"{slowdown['sample']:.2f}x to sample (target: within 3x)")
    print("(x = that implementation's time / rlguard's: above 1 means rlguard is faster)")

    extend = time_large_extend(args.capacity, args.extend, args.threads, args.extend_repeats)
    print(f"\nlarge extend, {args.extend:,} priorities into a sampler on rlguard's trees:")
    print(f"  1 thread {extend['one_thread_ms']:.1f} ms, {args.threads} threads "
          f"{extend[f'{args.threads}_threads_ms']:.1f} ms: {extend['ratio']:.2f}x (no collapse: about 1x or less)")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "config": {"capacity": args.capacity, "batch": args.batch, "repeats": args.repeats, "extend": args.extend},
        "machine": {
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
        },
        "compiled_tree": "measured" if compiled is not None else f"unavailable: {probe().cause}",
        **report_modes,
        "large_extend": {"priorities": args.extend, **extend},
    }
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
