"""How much slower a small CPU training loop runs under ``rlguard.runtime.install()``.

The loop is DDPG on TorchRL's mock continuous env: a Collector, a TensorDictReplayBuffer, a
DDPGLoss and an Adam optimizer, with a policy-weight sync per batch. Runs alternate between
stock and installed (to cancel drift); each pair gives a ratio, and the median ratio is reported
against the target (at most 5% slower). torch runs on one thread, and the ratio is taken on the
process's CPU time, which other jobs on a shared machine do not inflate; wall times are reported
beside it. Prints a table and writes JSON.

    python benchmarks/install_overhead.py [--repeats 11] [--frames 1024] [--output PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import platform
import statistics
import time
import warnings
from pathlib import Path

import torch
import torchrl
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
from torchrl.modules import ValueOperator
from torchrl.objectives import DDPGLoss, SoftUpdate
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

import rlguard.runtime

TARGET = 1.05
FRAMES_PER_BATCH = 64
UPDATES_PER_BATCH = 4
OBS = ACT = 7


class Critic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS + ACT, 64), nn.Tanh(), nn.Linear(64, 1))

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([observation, action], -1))


def train(frames: int, seed: int) -> tuple[float, float]:
    """One full training run; returns its (CPU, wall) time in seconds."""
    torch.manual_seed(seed)
    cpu, wall = time.process_time(), time.perf_counter()
    env = ContinuousActionVecMockEnv()
    env.set_seed(seed)
    actor = TensorDictModule(
        nn.Sequential(nn.Linear(OBS, 64), nn.Tanh(), nn.Linear(64, ACT), nn.Tanh()),
        in_keys=["observation"], out_keys=["action"],
    )
    loss = DDPGLoss(actor, ValueOperator(Critic(), in_keys=["observation", "action"]))
    target = SoftUpdate(loss, eps=0.99)
    optimizer = torch.optim.Adam(loss.parameters(), lr=1e-3)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(frames), batch_size=FRAMES_PER_BATCH)
    collector = Collector(env, actor, frames_per_batch=FRAMES_PER_BATCH, total_frames=frames)
    for batch in collector:
        buffer.extend(batch.reshape(-1))
        for _ in range(UPDATES_PER_BATCH):
            losses = loss(buffer.sample())
            optimizer.zero_grad()
            (losses["loss_actor"] + losses["loss_value"]).backward()
            optimizer.step()
            target.step()
        collector.update_policy_weights_()
    collector.shutdown()
    return time.process_time() - cpu, time.perf_counter() - wall


def measure(repeats: int, frames: int) -> list[dict[str, float]]:
    for installed in (False, True):  # warm-up: imports, allocator, first-call paths
        with rlguard.runtime.installed() if installed else contextlib.nullcontext():
            train(frames // 4, seed=repeats)
    runs = []
    for index in range(repeats):
        stock_cpu, stock_wall = train(frames, seed=index)
        with rlguard.runtime.installed():
            guarded_cpu, guarded_wall = train(frames, seed=index)
        runs.append({
            "stock_cpu_s": stock_cpu, "installed_cpu_s": guarded_cpu, "ratio": guarded_cpu / stock_cpu,
            "stock_wall_s": stock_wall, "installed_wall_s": guarded_wall, "wall_ratio": guarded_wall / stock_wall,
        })
    return runs


def report(runs: list[dict[str, float]], frames: int) -> dict[str, object]:
    ratio = statistics.median(run["ratio"] for run in runs)
    medians = {f"median_{key}": statistics.median(run[key] for run in runs) for key in runs[0]}
    return {
        "benchmark": "install_overhead",
        "loop": f"DDPG, Collector on ContinuousActionVecMockEnv, {frames} frames, "
        f"{FRAMES_PER_BATCH} frames/batch, {UPDATES_PER_BATCH} updates/batch",
        "torch": torch.__version__,
        "torchrl": torchrl.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "threads": torch.get_num_threads(),
        "runs": runs,
        **medians,
        "target_ratio": TARGET,
        "within_target": ratio <= TARGET,
    }


def print_table(result: dict[str, object]) -> None:
    print(f"{'run':>4} {'stock cpu s':>12} {'installed cpu s':>16} {'ratio':>7} {'wall ratio':>11}")
    for index, run in enumerate(result["runs"]):  # type: ignore[arg-type]
        print(f"{index:>4} {run['stock_cpu_s']:>12.3f} {run['installed_cpu_s']:>16.3f} "
              f"{run['ratio']:>7.3f} {run['wall_ratio']:>11.3f}")
    verdict = "within" if result["within_target"] else "OVER"
    print(f"median CPU-time ratio {result['median_ratio']:.3f} ({verdict} the {TARGET:.2f} target); "
          f"median wall ratio {result['median_wall_ratio']:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11, help="stock/installed pairs (default 11)")
    parser.add_argument("--frames", type=int, default=1024, help="frames collected per run (default 1024)")
    parser.add_argument(
        "--output", type=Path, default=Path(__file__).parent / "results",
        help="JSON file, or a directory for install_overhead.json (default benchmarks/results/)",
    )
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=FutureWarning)  # torchrl's 0.15 transform notice
    logging.getLogger("torchrl").setLevel(logging.WARNING)  # one INFO line per buffer otherwise
    torch.set_num_threads(1)
    result = report(measure(args.repeats, args.frames), args.frames)
    print_table(result)
    output = args.output / "install_overhead.json" if args.output.suffix != ".json" else args.output
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
