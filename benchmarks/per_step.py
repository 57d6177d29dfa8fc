"""One prioritized-replay step end to end: torchrl's buffer on rlguard's trees against its compiled ones.

A ``TensorDictPrioritizedReplayBuffer`` over ``--capacity`` transitions does what a training
step does: ``sample()`` a batch, then ``update_tensordict_priority`` with new priorities. The
segment trees are one part of that step; this says how much of it they cost.

Trees compared, each in its own buffer over the same data, taking turns step by step:
- rlguard: its trees without compiled code (numpy views on a CPU), put in torchrl's sampler
  module as ``install()`` does;
- compiled: torchrl's own, where its extension loads (elsewhere the row is left out).

Both are timed twice: with torchrl's buffers as they are, and with the buffer corrections
``install()`` applies (``rlguard.runtime.buffer.patches()``, which among others skip torchrl's
``max(dim=1)`` over one priority per transition: over a dimension of size 1 it wakes every
intra-op thread, tens of milliseconds on a busy machine).

Prints median milliseconds per step and the ratios, and writes JSON
(default benchmarks/results/per_step.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterator

import torch
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage, TensorDictPrioritizedReplayBuffer
from torchrl.data.replay_buffers.samplers import prioritized

from rlguard.runtime import buffer as rlguard_buffer
from rlguard.runtime._patch import Patch, PatchSet
from rlguard.runtime.extension import probe
from rlguard.runtime.segment_tree import TORCHRL_TREE_CLASSES


@contextmanager
def trees(kind: str) -> Iterator[None]:
    """Buffers built inside use rlguard's trees (``kind == "rlguard"``) or the module's own."""
    applied = PatchSet()
    if kind == "rlguard":
        for name, tree in TORCHRL_TREE_CLASSES.items():
            if hasattr(prioritized, name):
                applied.apply(Patch(prioritized, name, tree))
    try:
        yield
    finally:
        applied.restore_all()


def filled_buffer(kind: str, data: TensorDict, batch: int) -> TensorDictPrioritizedReplayBuffer:
    with trees(kind):
        buffer = TensorDictPrioritizedReplayBuffer(
            alpha=0.7, beta=0.5, storage=LazyTensorStorage(data.shape[0]), batch_size=batch
        )
    buffer.extend(data)
    return buffer


def step(buffer: TensorDictPrioritizedReplayBuffer, generator: torch.Generator) -> None:
    sample = buffer.sample()
    sample.set("td_error", torch.rand(sample.shape[0], generator=generator) + 1e-3)
    buffer.update_tensordict_priority(sample)


def time_steps(buffers: dict, generator: torch.Generator, steps: int) -> dict[str, float]:
    """Median milliseconds per step of each buffer, the buffers taking turns step by step."""
    times: dict[str, list[float]] = {kind: [] for kind in buffers}
    for round_ in range(steps + 1):
        for kind, buffer in buffers.items():
            began = time.perf_counter()
            step(buffer, generator)
            if round_:  # round 0 warms up
                times[kind].append((time.perf_counter() - began) * 1e3)
    return {kind: statistics.median(taken) for kind, taken in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "per_step.json")
    args = parser.parse_args()

    generator = torch.Generator().manual_seed(0)
    data = TensorDict(
        observation=torch.rand(args.capacity, 8, generator=generator),
        action=torch.rand(args.capacity, 2, generator=generator),
        reward=torch.rand(args.capacity, 1, generator=generator),
        batch_size=[args.capacity],
    )
    kinds = ["rlguard"] + (["compiled"] if probe().loads else [])
    buffers = {kind: filled_buffer(kind, data, args.batch) for kind in kinds}
    print(f"capacity {args.capacity:,}, batch {args.batch}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {args.steps} steps")
    report: dict = {"config": vars(args) | {"out": str(args.out)}}
    for phase in ("torchrl buffers", "corrected buffers"):
        applied = PatchSet()
        for patch in rlguard_buffer.patches() if phase == "corrected buffers" else []:
            applied.apply(patch)
        try:
            medians = time_steps(buffers, generator, args.steps)
        finally:
            applied.restore_all()
        # torchrl's buffers at the top level, as this report has always had them.
        figures = report if phase == "torchrl buffers" else report.setdefault(phase, {})
        figures["median_ms"] = medians
        print(f"\n{phase}:")
        for kind, milliseconds in medians.items():
            print(f"  {kind:<10}{milliseconds:>9.3f} ms per sample + priority update")
        if "compiled" in medians:
            ratio = figures["rlguard / compiled"] = medians["rlguard"] / medians["compiled"]
            print(f"  a step on rlguard's trees takes {ratio:.2f}x the time it takes on the compiled ones (target 1.3x)")
    if "compiled" not in kinds:
        print(f"\ncompiled: not measured, the extension does not load ({probe().cause[:80]}...)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
