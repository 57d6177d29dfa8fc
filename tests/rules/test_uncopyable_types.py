"""Every entry of data.UNCOPYABLE_TYPES is proven with a real ``copy.deepcopy``, and look-alikes are proven copyable.

RLG001 flags a class because it stores one of these values; a wrong entry would be a false
alarm on every class that stores it. So each entry builds the real object and deep-copies it,
and the handles that look uncopyable but copy fine are checked too, and must not be listed.

Device handles need their packages (pyserial, pyzmq, opencv-python-headless, pyrealsense2 with
libusb); their tests are skipped where those cannot be imported. CUDA objects need a GPU.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import ctypes
import importlib
import io
import logging
import mmap
import multiprocessing
import os
import queue
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
from typing import Any
from collections.abc import Callable, Iterator

import pytest
import torch

from rlguard.rules.data import UNCOPYABLE_ALIASES, UNCOPYABLE_TYPES


def _package(name: str) -> Any:
    """Import an optional package, or skip (ImportError also covers a missing system library)."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        pytest.skip(f"{name} cannot be imported here: {error}")


def _cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")


@contextlib.contextmanager
def _closing(obj: Any, close: Callable[[Any], Any]) -> Iterator[Any]:
    try:
        yield obj
    finally:
        close(obj)


@contextlib.contextmanager
def _plain(obj: Any) -> Iterator[Any]:
    yield obj


@contextlib.contextmanager
def _server_socket(make: Callable[[], socket.socket]) -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        if make is socket.create_connection:
            with socket.create_connection(server.getsockname()) as client:
                yield client
        else:
            with make(("127.0.0.1", 0)) as other:
                yield other


def _file(opener: Callable[..., Any]) -> Any:
    return _closing(opener(os.devnull), lambda f: f.close())


def _process_pool() -> Any:
    return _closing(multiprocessing.Pool(1), lambda p: p.terminate())


def _manager() -> Any:
    return _closing(multiprocessing.Manager(), lambda m: m.shutdown())


def _popen() -> Any:
    return _closing(subprocess.Popen([sys.executable, "-c", "pass"]), lambda p: p.wait())


def _sqlite() -> Any:
    return _closing(sqlite3.connect(":memory:"), lambda c: c.close())


def _mmap() -> Any:
    return _closing(mmap.mmap(-1, 64), lambda m: m.close())


def _generator() -> Any:
    return _plain(i for i in range(3))


def _cuda_object(make: Callable[[], Any]) -> Any:
    _cuda()
    return _plain(make())


def _opencv(kind: str) -> Any:
    cv2 = _package("cv2")
    return _closing(getattr(cv2, kind)(), lambda c: c.release())


def _realsense() -> Any:
    rs = _package("pyrealsense2")
    return _plain(rs.pipeline())


# qualified name in UNCOPYABLE_TYPES -> a context manager that yields a real, live instance.
MAKERS: dict[str, Callable[[], Any]] = {
    "threading.Lock": lambda: _plain(threading.Lock()),
    "threading.RLock": lambda: _plain(threading.RLock()),
    "threading.Condition": lambda: _plain(threading.Condition()),
    "threading.Event": lambda: _plain(threading.Event()),
    "threading.Semaphore": lambda: _plain(threading.Semaphore()),
    "threading.BoundedSemaphore": lambda: _plain(threading.BoundedSemaphore()),
    "threading.Barrier": lambda: _plain(threading.Barrier(2)),
    "threading.Thread": lambda: _plain(threading.Thread(target=print)),
    "threading.Timer": lambda: _plain(threading.Timer(60, print)),
    "threading.local": lambda: _plain(threading.local()),
    "multiprocessing.Lock": lambda: _plain(multiprocessing.Lock()),
    "multiprocessing.RLock": lambda: _plain(multiprocessing.RLock()),
    "multiprocessing.Condition": lambda: _plain(multiprocessing.Condition()),
    "multiprocessing.Event": lambda: _plain(multiprocessing.Event()),
    "multiprocessing.Semaphore": lambda: _plain(multiprocessing.Semaphore()),
    "multiprocessing.BoundedSemaphore": lambda: _plain(multiprocessing.BoundedSemaphore()),
    "multiprocessing.Barrier": lambda: _plain(multiprocessing.Barrier(2)),
    "multiprocessing.Value": lambda: _plain(multiprocessing.Value("i", 0)),
    "multiprocessing.Array": lambda: _plain(multiprocessing.Array("i", 4)),
    "multiprocessing.Queue": lambda: _closing(multiprocessing.Queue(), lambda q: q.close()),
    "multiprocessing.SimpleQueue": lambda: _closing(multiprocessing.SimpleQueue(), lambda q: q.close()),
    "multiprocessing.JoinableQueue": lambda: _closing(multiprocessing.JoinableQueue(), lambda q: q.close()),
    "multiprocessing.Process": lambda: _plain(multiprocessing.Process(target=print)),
    "multiprocessing.Pool": _process_pool,
    "multiprocessing.Manager": _manager,
    "queue.Queue": lambda: _plain(queue.Queue()),
    "queue.LifoQueue": lambda: _plain(queue.LifoQueue()),
    "queue.PriorityQueue": lambda: _plain(queue.PriorityQueue()),
    "queue.SimpleQueue": lambda: _plain(queue.SimpleQueue()),
    "concurrent.futures.ThreadPoolExecutor": lambda: _closing(concurrent.futures.ThreadPoolExecutor(1), lambda e: e.shutdown()),
    "concurrent.futures.ProcessPoolExecutor": lambda: _closing(concurrent.futures.ProcessPoolExecutor(1), lambda e: e.shutdown()),
    "socket.socket": lambda: _closing(socket.socket(), lambda s: s.close()),
    "socket.create_connection": lambda: _server_socket(socket.create_connection),
    "socket.create_server": lambda: _server_socket(socket.create_server),
    "subprocess.Popen": _popen,
    "builtins.open": lambda: _file(open),
    "io.open": lambda: _file(io.open),
    "tempfile.TemporaryFile": lambda: _closing(tempfile.TemporaryFile(), lambda f: f.close()),
    "tempfile.NamedTemporaryFile": lambda: _closing(tempfile.NamedTemporaryFile(), lambda f: f.close()),
    "mmap.mmap": _mmap,
    "sqlite3.connect": _sqlite,
    "<generator>": _generator,
    "torch.cuda.Stream": lambda: _cuda_object(lambda: torch.cuda.Stream()),
    "torch.cuda.Event": lambda: _cuda_object(lambda: torch.cuda.Event()),
    "torch.cuda.CUDAGraph": lambda: _cuda_object(lambda: torch.cuda.CUDAGraph()),
    "cv2.VideoCapture": lambda: _opencv("VideoCapture"),
    "cv2.VideoWriter": lambda: _opencv("VideoWriter"),
    "pyrealsense2.pipeline": _realsense,
}
CUDA_TYPES = {"torch.cuda.Stream", "torch.cuda.Event", "torch.cuda.CUDAGraph"}


def test_every_listed_type_has_a_proof():
    assert set(MAKERS) == set(UNCOPYABLE_TYPES)


def _params() -> list:
    return [pytest.param(name, marks=[pytest.mark.cuda] if name in CUDA_TYPES else [], id=name) for name in sorted(MAKERS)]


@pytest.mark.parametrize("name", _params())
def test_listed_type_cannot_be_deep_copied(name):
    with MAKERS[name]() as obj:
        with pytest.raises((TypeError, RuntimeError, NotImplementedError, copy.Error)):
            copy.deepcopy(obj)


@pytest.mark.parametrize("name", _params())
def test_a_module_holding_the_listed_type_cannot_be_deep_copied(name):
    """What RLG001 claims: an nn.Module that stores the value as ``self.x`` cannot be copied."""
    with MAKERS[name]() as obj:
        holder = torch.nn.Linear(2, 2)
        holder.member = obj
        with pytest.raises((TypeError, RuntimeError, NotImplementedError, copy.Error)):
            copy.deepcopy(holder)


def test_torch_multiprocessing_aliases_multiprocessing():
    import torch.multiprocessing as tmp

    for prefix, target in UNCOPYABLE_ALIASES.items():
        assert prefix == "torch.multiprocessing." and target == "multiprocessing."
    queue_ = tmp.Queue()
    try:
        with pytest.raises(RuntimeError):
            copy.deepcopy(queue_)
    finally:
        queue_.close()
    with pytest.raises(RuntimeError):
        copy.deepcopy(tmp.Lock())


# ----- look-alikes: they copy fine, so a class holding one is copyable and must not be flagged -----


def _zmq_socket() -> Any:
    zmq = _package("zmq")
    context = zmq.Context()
    sock = context.socket(zmq.PAIR)
    sock.bind("inproc://rlguard-uncopyable-types")

    def close(s):
        s.close(linger=0)
        context.term()

    return _closing(sock, close)


def _zmq_context() -> Any:
    zmq = _package("zmq")
    return _closing(zmq.Context(), lambda c: c.term())


def _serial_port() -> Any:
    """A real, open serial port: the slave end of a pseudo-terminal."""
    serial = _package("serial")
    if not hasattr(os, "openpty"):
        pytest.skip("needs a pseudo-terminal")
    master, slave = os.openpty()
    port = serial.Serial(os.ttyname(slave), 9600, timeout=0)

    def close(p):
        p.close()
        os.close(master)
        os.close(slave)

    return _closing(port, close)


LOOK_ALIKES: dict[str, Callable[[], Any]] = {
    "ctypes.CDLL": lambda: _plain(ctypes.CDLL(None)),
    "torch.Generator": lambda: _plain(torch.Generator().manual_seed(0)),
    "logging.getLogger": lambda: _plain(logging.getLogger("rlguard.tests.lookalike")),
    "tempfile.SpooledTemporaryFile": lambda: _closing(tempfile.SpooledTemporaryFile(), lambda f: f.close()),
    "tempfile.TemporaryDirectory": lambda: _closing(tempfile.TemporaryDirectory(), lambda d: d.cleanup()),
    "io.BytesIO": lambda: _plain(io.BytesIO(b"abc")),
    "contextlib.nullcontext": lambda: _plain(contextlib.nullcontext()),
    "zmq.Context": _zmq_context,
    "zmq.Socket": _zmq_socket,
}


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_look_alike_copies_and_is_not_listed(name):
    assert name not in UNCOPYABLE_TYPES
    with LOOK_ALIKES[name]() as obj:
        copy.deepcopy(obj)


def test_pipe_connection_copies_without_raising_and_is_not_listed():
    """A Connection deep-copies (the copy shares the descriptor), so multiprocessing.Pipe is not listed."""
    assert "multiprocessing.Pipe" not in UNCOPYABLE_TYPES
    parent, child = multiprocessing.Pipe()
    try:
        clone = copy.deepcopy(parent)
        assert clone.fileno() == parent.fileno()
        clone._handle = None  # the copy must not close the shared descriptor when collected
    finally:
        parent.close()
        child.close()


def test_open_serial_port_copies_without_raising_and_is_not_listed():
    """An open serial.Serial deep-copies (the copy shares the descriptor), so it is not listed."""
    assert "serial.Serial" not in UNCOPYABLE_TYPES
    with _serial_port() as port:
        assert port.is_open
        clone = copy.deepcopy(port)
        assert clone.fd == port.fd
        clone.fd = None  # the copy must not close the shared descriptor
        clone.is_open = False


def test_serial_loopback_is_not_a_real_port():
    """``serial_for_url('loop://')`` holds a lock and does not copy, but it is a test double, not serial.Serial."""
    serial = _package("serial")
    port = serial.serial_for_url("loop://")
    try:
        assert not isinstance(port, serial.Serial)
        with pytest.raises(TypeError):
            copy.deepcopy(port)
    finally:
        port.close()
