"""Corrections under threads and asyncio tasks: real collectors built concurrently, and tasks that outlive their block."""

from __future__ import annotations

import ast
import asyncio
import gc
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torchrl.collectors
from rlguard_runtime_helpers import left_patched, only, policy, snapshot
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.envs import PendulumEnv
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

from rlguard.runtime import RLGuardWarning, install, installed, uninstall
from rlguard.runtime.marker import _defined_at

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # torchrl 0.15 transform notice
THREADS, BUILDS = 8, 10
JOIN_S = 240  # a bound on the whole threaded run: a hang fails the test instead of stalling it


class LockedPendulumNet(nn.Module):
    """A PendulumEnv policy network holding a lock, so that torchrl's device copy fails."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 1)
        self.lock = threading.Lock()

    def forward(self, th: torch.Tensor, thdot: torch.Tensor) -> torch.Tensor:
        with self.lock:
            return 2 * self.linear(torch.stack([th, thdot], -1)).tanh()


def build_pendulum_collector() -> torchrl.collectors.Collector:
    net = TensorDictModule(LockedPendulumNet(), in_keys=["th", "thdot"], out_keys=["action"])
    return torchrl.collectors.Collector(PendulumEnv(), net, frames_per_batch=4, total_frames=8, policy_device="cpu:0")


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter can, so that races show within a short run."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def test_collectors_built_in_threads_under_install_never_fail(fast_switching: None) -> None:
    install(**only("collectors"))
    failures: list[BaseException] = []
    devices: list[torch.device] = []
    start = threading.Barrier(THREADS)

    def build_many() -> None:
        start.wait()
        for _ in range(BUILDS):
            try:
                devices.append(build_pendulum_collector().policy_device)
            except BaseException as error:  # every failure counts, whatever its type
                failures.append(error)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)  # the RLG001 notice; what counts is that each build works
        threads = [threading.Thread(target=build_many, daemon=True) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_S)
    assert not any(thread.is_alive() for thread in threads)
    assert [f"{type(error).__name__}: {error}" for error in failures] == []
    assert devices == [torch.device("cpu")] * (THREADS * BUILDS)  # each ran its policy in place


def test_the_message_locates_the_users_class_without_parsing_source(monkeypatch: pytest.MonkeyPatch) -> None:
    # ast on Python 3.11 fails at random when threads parse at once; the message must not parse at all.
    def no_parsing(*args: Any, **kwargs: Any) -> None:
        raise SystemError("AST constructor recursion depth mismatch (rlguard parsed source)")

    with monkeypatch.context() as patch:  # undone before pytest, which parses, reports a failure
        patch.setattr(ast, "parse", no_parsing)
        with installed(**only("collectors")), pytest.warns(RLGuardWarning) as record:
            build_pendulum_collector()
    [message] = [str(w.message) for w in record if issubclass(w.category, RLGuardWarning)]
    line = line_of("class LockedPendulumNet(")
    assert f"(held by LockedPendulumNet, defined at {__file__}:{line})" in message


SOURCE = Path(__file__).read_text(encoding="utf-8").splitlines()


def line_of(statement: str) -> int:
    [number] = [number for number, text in enumerate(SOURCE, 1) if text.startswith(statement)]
    return number


class Plain:
    """No methods: found by its name alone."""

    size = 3


def make_local() -> type:
    class Local:  # a second class of this name is defined below: its methods tell which one
        def method(self) -> None:
            pass

    return Local


class Local:
    def method(self) -> None:
        pass


@pytest.mark.parametrize(
    ("cls", "statement"),
    [
        (LockedPendulumNet, "class LockedPendulumNet("),
        (Plain, "class Plain:"),
        (Local, "class Local:"),
        (make_local(), "    class Local:"),
    ],
    ids=["module", "no-methods", "same-name-as-a-nested-one", "nested"],
)
def test_a_class_is_located_by_its_code_objects(cls: type, statement: str) -> None:
    assert _defined_at(cls) == f", defined at {__file__}:{line_of(statement)}"


# -- asyncio -----------------------------------------------------------------------------------


def build_mock_collector() -> torch.device:
    collector = torchrl.collectors.Collector(ContinuousActionVecMockEnv(), policy(), frames_per_batch=4,
                                             total_frames=4, policy_device="cpu:0")
    return collector.policy_device


def test_a_task_keeps_its_blocks_corrections_after_the_block_closes() -> None:
    install()  # the snapshot must see every module the patches load
    uninstall()
    pristine = snapshot()

    async def main() -> torch.device:
        go = asyncio.Event()

        async def build_later() -> torch.device:
            await go.wait()  # the block that created this task has closed by now
            with pytest.warns(RLGuardWarning, match="RLG001"):
                return build_mock_collector()

        with installed(**only("collectors")):
            task = asyncio.create_task(build_later())
            await asyncio.sleep(0)
        go.set()
        return await task

    assert asyncio.run(main()) == torch.device("cpu")  # ran in place: the corrections followed the task
    gc.collect()
    assert left_patched(pristine) == []  # and torchrl is restored once no task can use them


def test_a_task_created_outside_the_block_keeps_stock_torchrl() -> None:
    async def main() -> None:
        go = asyncio.Event()

        async def build_later() -> torch.device:
            await go.wait()
            return build_mock_collector()

        task = asyncio.create_task(build_later())  # created before the block: not in its context
        with installed(**only("collectors")):
            go.set()
            with pytest.raises(TypeError, match="cannot pickle '_thread.lock'"):
                await task

    asyncio.run(main())
