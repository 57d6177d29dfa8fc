"""Host-to-device copy of sampled replay batches: pinned against pageable memory.

Two rlguard ``TensorDictReplayBuffer``s hold the same data, one with ``pin_memory=True``.
For each, per batch: the time of ``sample()`` (pinning included), of copying the batch to the
GPU (``.to(device, non_blocking=True)``, CUDA events), and of both together. Medians over
``--repeats`` batches; the ratios compare the two buffers in the same run.

Needs CUDA: elsewhere it says so, writes that to the JSON and exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage

from rlguard.runtime.buffer import TensorDictReplayBuffer


def replay_data(capacity: int, obs_shape: list[int]) -> TensorDict:
    generator = torch.Generator().manual_seed(0)
    return TensorDict(
        observation=torch.rand(capacity, *obs_shape, generator=generator),
        action=torch.rand(capacity, 6, generator=generator),
        reward=torch.rand(capacity, 1, generator=generator),
        batch_size=[capacity],
    )


def measure(buffer: TensorDictReplayBuffer, device: torch.device, repeats: int) -> dict[str, float]:
    sample_ms, copy_ms, total_ms = [], [], []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for step in range(repeats + 1):
        torch.cuda.synchronize(device)
        began = time.perf_counter()
        batch = buffer.sample()
        sampled = time.perf_counter()
        start.record()
        batch.to(device, non_blocking=True)
        end.record()
        torch.cuda.synchronize(device)
        if step:  # the first round warms up the allocator and the CUDA context
            sample_ms.append((sampled - began) * 1e3)
            copy_ms.append(start.elapsed_time(end))
            total_ms.append((time.perf_counter() - began) * 1e3)
    return {
        "sample_ms": statistics.median(sample_ms),
        "h2d_copy_ms": statistics.median(copy_ms),
        "sample_and_copy_ms": statistics.median(total_ms),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=8192)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--obs-shape", type=int, nargs="+", default=[3, 84, 84])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "pinned_h2d.json")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)

    if not torch.cuda.is_available():
        reason = f"needs CUDA: torch {torch.__version__} sees no GPU here, so nothing was measured"
        print(f"pinned_h2d: {reason}")
        args.out.write_text(json.dumps({"skipped": reason}, indent=2))
        return 0

    device = torch.device("cuda")
    data = replay_data(args.capacity, args.obs_shape)
    results = {}
    for name, pin in (("pageable", False), ("pinned", True)):
        buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(args.capacity), pin_memory=pin, batch_size=args.batch)
        buffer.extend(data)
        results[name] = measure(buffer, device, args.repeats)
    batch_mb = data[: args.batch].bytes() / 2**20
    ratios = {f"{key} pageable/pinned": results["pageable"][key] / results["pinned"][key] for key in results["pinned"]}

    print(f"{torch.cuda.get_device_name(device)}, batch {args.batch} x {args.obs_shape} float32 ({batch_mb:.1f} MiB)")
    print(f"{'buffer':<10}{'sample ms':>12}{'h2d copy ms':>14}{'total ms':>11}{'copy GiB/s':>12}")
    for name, timing in results.items():
        rate = batch_mb / 1024 / (timing["h2d_copy_ms"] / 1e3)
        print(
            f"{name:<10}{timing['sample_ms']:>12.3f}{timing['h2d_copy_ms']:>14.3f}"
            f"{timing['sample_and_copy_ms']:>11.3f}{rate:>12.1f}"
        )
    for key, ratio in ratios.items():
        print(f"{key}: {ratio:.2f}x")

    report = {
        "config": {**vars(args), "out": str(args.out)},
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "batch_mib": batch_mb,
        "results_ms": results,
        "ratios": ratios,
    }
    args.out.write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
