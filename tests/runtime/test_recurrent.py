"""set_recurrent_mode: upstream identity, the backport, and what each guarantees, on a real LSTMModule.

On torchrl 0.14.1 upstream keeps the mode in a ContextVar: per thread and per asyncio task.
Every guarantee below is checked for upstream as is, upstream under install(), and the backport
(with its install patches applied to the real LSTMModule/GRUModule of this torchrl).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import torch
import torchrl.modules
from rlguard_runtime_helpers import only
from tensordict import TensorDict
from torchrl.modules import GRUModule, LSTMModule

import rlguard.runtime
from rlguard.runtime import installed, recurrent
from rlguard.runtime._patch import PatchSet

Mode = Callable[..., Any]


@pytest.fixture
def lstm() -> LSTMModule:
    return LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h", default_recurrent_mode=False)


@pytest.fixture
def backport() -> Iterator[Mode]:
    patches = PatchSet()
    for cls in (LSTMModule, GRUModule):
        patches.apply(recurrent._honour_backport(cls))
    yield recurrent._BackportSetRecurrentMode
    patches.restore_all()


@pytest.fixture(params=["upstream", "installed", "backport"])
def set_mode(request: pytest.FixtureRequest) -> Iterator[Mode]:
    if request.param == "backport":
        yield request.getfixturevalue("backport")
    elif request.param == "installed":
        with installed(**only("recurrent")):
            yield torchrl.modules.set_recurrent_mode
    else:
        yield torchrl.modules.set_recurrent_mode


@pytest.fixture(params=["installed", "backport"])
def corrected(request: pytest.FixtureRequest) -> Iterator[Mode]:
    if request.param == "backport":
        yield request.getfixturevalue("backport")
    else:
        with installed(**only("recurrent")):
            yield torchrl.modules.set_recurrent_mode


def test_rlguard_exports_the_upstream_object_where_torchrl_ships_it() -> None:
    assert rlguard.runtime.set_recurrent_mode is torchrl.modules.set_recurrent_mode
    assert not recurrent.IS_BACKPORT


def test_nesting_restores_each_level(set_mode: Mode, lstm: LSTMModule) -> None:
    with set_mode(True):
        assert lstm.recurrent_mode is True
        with set_mode("sequential"):
            assert lstm.recurrent_mode is False
            with set_mode("recurrent"):
                assert lstm.recurrent_mode is True
            assert lstm.recurrent_mode is False
        assert lstm.recurrent_mode is True
    assert lstm.recurrent_mode is False


def test_an_exception_restores_the_mode(set_mode: Mode, lstm: LSTMModule) -> None:
    with set_mode(False):
        with pytest.raises(KeyError), set_mode(True):
            assert lstm.recurrent_mode is True
            raise KeyError("boom")
        assert lstm.recurrent_mode is False
    with pytest.raises(ValueError, match="recurrent mode"):
        set_mode("parallel")


def test_decorator_form(set_mode: Mode, lstm: LSTMModule) -> None:
    @set_mode(True)
    def mode() -> bool:
        return lstm.recurrent_mode

    @set_mode(True)
    def fails() -> None:
        raise RuntimeError

    @set_mode(True)
    def steps() -> Iterator[bool]:
        yield lstm.recurrent_mode
        yield lstm.recurrent_mode

    assert mode() is True and mode() is True
    with pytest.raises(RuntimeError):
        fails()
    generator = steps()
    assert next(generator) is True
    assert lstm.recurrent_mode is False  # the mode does not leak out of a suspended generator
    assert next(generator) is True


def test_threads_are_isolated(set_mode: Mode, lstm: LSTMModule) -> None:
    entered, checked = threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def inside() -> None:
        with set_mode(True):
            entered.set()
            checked.wait(5)
            seen["inside"] = lstm.recurrent_mode

    def outside() -> None:
        entered.wait(5)
        seen["outside"] = lstm.recurrent_mode
        checked.set()

    threads = [threading.Thread(target=inside), threading.Thread(target=outside)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"inside": True, "outside": False}


def test_asyncio_tasks_are_isolated(set_mode: Mode, lstm: LSTMModule) -> None:
    async def inside(entered: asyncio.Event, checked: asyncio.Event) -> bool:
        with set_mode(True):
            entered.set()
            await checked.wait()
            return lstm.recurrent_mode

    async def outside(entered: asyncio.Event, checked: asyncio.Event) -> bool:
        await entered.wait()
        mode = lstm.recurrent_mode
        checked.set()
        return mode

    async def main() -> list[bool]:
        entered, checked = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(inside(entered, checked), outside(entered, checked))

    assert asyncio.run(main()) == [True, False]


def test_upstream_gaps_that_install_corrects(lstm: LSTMModule) -> None:
    set_mode = torchrl.modules.set_recurrent_mode

    @set_mode(True)
    async def mode() -> bool:
        return lstm.recurrent_mode

    reused = set_mode(True)
    with reused, reused:
        pass
    leaked = lstm.recurrent_mode
    set_mode(None).__enter__()  # torchrl 0.14.1 left True behind: reset for the next tests
    assert (asyncio.run(mode()), leaked) == (False, True)


def test_a_decorated_coroutine_runs_in_the_mode(corrected: Mode, lstm: LSTMModule) -> None:
    @corrected(True)
    async def mode() -> bool:
        await asyncio.sleep(0)
        return lstm.recurrent_mode

    async def main() -> list[bool]:
        return await asyncio.gather(mode(), asyncio.sleep(0, result=lstm.recurrent_mode))

    assert asyncio.run(main()) == [True, False]
    assert lstm.recurrent_mode is False


def test_one_instance_entered_twice_restores_both_levels(corrected: Mode, lstm: LSTMModule) -> None:
    reused = corrected(True)
    with corrected(False):
        with reused:
            with reused:
                assert lstm.recurrent_mode is True
            assert lstm.recurrent_mode is True
        assert lstm.recurrent_mode is False
    assert lstm.recurrent_mode is False


def test_the_backport_drives_the_real_lstm_forward(backport: Mode, lstm: LSTMModule) -> None:
    data = TensorDict(
        {"obs": torch.randn(2, 5, 3), "is_init": torch.zeros(2, 5, 1, dtype=torch.bool)}, batch_size=[2, 5]
    )
    sequential = lstm(data.clone())["h"]  # each step alone: the silent bug the mode exists for
    with backport(True):
        recurrent_out = lstm(data.clone())["h"]
    with torchrl.modules.set_recurrent_mode(True):
        upstream_out = lstm(data.clone())["h"]
    torch.testing.assert_close(recurrent_out, upstream_out)
    assert not torch.allclose(sequential[:, 1:], recurrent_out[:, 1:])
    torch.testing.assert_close(sequential[:, 0], recurrent_out[:, 0])


@pytest.fixture(params=["install", "backport"])
def shared(request: pytest.FixtureRequest) -> Iterator[tuple[Mode, Callable[[], bool | None]]]:
    """(set_recurrent_mode, the raw mode of the caller's context) under install() or the backport."""
    if request.param == "backport":
        yield request.getfixturevalue("backport"), recurrent._BACKPORT_MODE.get
    else:
        rlguard.runtime.install(**only("recurrent"))  # process-wide: threads see it too
        yield torchrl.modules.set_recurrent_mode, torchrl.modules.tensordict_module.rnn.recurrent_mode


def test_a_shared_instance_restores_each_threads_own_mode(shared: tuple[Mode, Callable[[], Any]]) -> None:
    """A module-level ``RECURRENT = set_recurrent_mode(True)`` entered by two threads, exited in
    the order that a stack shared by the instance gets wrong: A enters, B enters, A exits."""
    set_mode, mode = shared
    recurrent_everywhere = set_mode(True)
    a_in, a_out = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}
    errors: list[BaseException] = []

    def a() -> None:
        with set_mode(False):
            with recurrent_everywhere:
                a_in.set()
                time.sleep(0.05)  # B enters meanwhile
            seen["a"] = mode()
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with set_mode(None):
            with recurrent_everywhere:
                a_out.wait(5)
            seen["b"] = mode()

    def run(target: Callable[[], None]) -> Callable[[], None]:
        def guarded() -> None:
            try:
                target()
            except BaseException as error:  # the backport's ValueError used to end the thread here
                errors.append(error)

        return guarded

    threads = [threading.Thread(target=run(a)), threading.Thread(target=run(b))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and seen == {"a": False, "b": None}


def test_a_shared_instance_restores_each_tasks_own_mode(shared: tuple[Mode, Callable[[], Any]]) -> None:
    set_mode, mode = shared
    recurrent_everywhere = set_mode(True)

    async def a(a_in: asyncio.Event, b_in: asyncio.Event) -> Any:
        with set_mode(False):
            with recurrent_everywhere:
                a_in.set()
                await b_in.wait()
            return mode()

    async def b(a_in: asyncio.Event, b_in: asyncio.Event, a_out: asyncio.Future) -> Any:
        await a_in.wait()
        with set_mode(None):
            with recurrent_everywhere:
                b_in.set()
                await a_out
            return mode()

    async def main() -> list[Any]:
        a_in, b_in = asyncio.Event(), asyncio.Event()
        task_a = asyncio.create_task(a(a_in, b_in))
        task_b = asyncio.create_task(b(a_in, b_in, task_a))
        return await asyncio.gather(task_a, task_b)

    assert asyncio.run(main()) == [False, None]
    assert mode() is None


def test_an_async_generator_is_refused_with_what_to_do(corrected: Mode, lstm: LSTMModule) -> None:
    with pytest.raises(TypeError, match=r"cannot decorate the async generator .*steps.*Use `with set_recurrent_mode"):

        @corrected(True)
        async def steps() -> AsyncIterator[bool]:
            yield lstm.recurrent_mode
