"""Generate ``rlguard/engine/uncopyable.json`` by trying: which values cannot be deep-copied or pickled.

Each candidate below builds a real, live value the way user code does (``threading.Lock()``,
``sqlite3.connect(":memory:")``, ``open(os.devnull)``), then ``copy.deepcopy`` and ``pickle.dumps`` are
tried on it. The file records, per candidate, the factory users call, the type of the value it built
(and the public names of that type, for annotations), and the exception each attempt raised, or null
when the attempt worked. Only the outcomes of those attempts decide what RLG001 reports: a candidate
that copies (``logging.getLogger``, ``io.BytesIO``, ``multiprocessing.Pipe``) is recorded as copyable.

A candidate whose package is not installed, or that needs hardware (a CUDA device), cannot be tried
here: its entry is carried over from the file as it was last generated where it could be tried, so
the file does not depend on the machine it is checked on. ``--check`` compares what this machine can
try with the file.

Usage: ``python -m rlguard_dev.uncopyable --write`` (or ``--check``).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import json
import os
import pickle
import re
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rlguard_dev.one_file import run
from rlguard.engine.uncopyable import DATA_PATH


class Unavailable(Exception):
    """The candidate cannot be built on this machine (package missing, no device)."""


@dataclass(frozen=True)
class Candidate:
    factory: str  # the qualified name users call (``sqlite3.connect``); "<generator>" for a generator expression
    what: str  # how a finding names the value
    make: Callable[[], contextlib.AbstractContextManager[Any]]  # yields a live value, then releases it
    variant: str = ""  # a second way to call the same factory (``open(path, "rb")``)
    # Makes a successful copy forget a resource it shares with the original (a copied pipe end holds the
    # same descriptor and would close it when collected).
    detach: Callable[[Any], Any] | None = None


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as error:  # also a missing system library
        raise Unavailable(f"{name}: {error}") from None


@contextlib.contextmanager
def _built(make: Callable[[], Any], release: Callable[[Any], Any] | None = None) -> Iterator[Any]:
    value = make()
    try:
        yield value
    finally:
        if release is not None:
            release(value)


def _call(factory: str, *args: Any, release: Callable[[Any], Any] | None = None, **kwargs: Any):
    """A candidate maker calling ``factory(*args, **kwargs)``, imported when tried."""
    module, _, name = factory.rpartition(".")

    def make() -> contextlib.AbstractContextManager[Any]:
        function = getattr(_module(module), name)
        return _built(lambda: function(*args, **kwargs), release)
    return make


def _close(value: Any) -> None:
    value.close()


@contextlib.contextmanager
def _connected(factory: str) -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        if factory == "socket.create_connection":
            with socket.create_connection(server.getsockname()) as client:
                yield client
        else:
            yield server


@contextlib.contextmanager
def _popen() -> Iterator[Any]:
    import subprocess

    process = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        yield process
    finally:
        process.wait()


@contextlib.contextmanager
def _file_handler() -> Iterator[Any]:
    import logging

    with tempfile.TemporaryDirectory() as folder:
        handler = logging.FileHandler(os.path.join(folder, "log.txt"))
        try:
            yield handler
        finally:
            handler.close()


@contextlib.contextmanager
def _pipe_end() -> Iterator[Any]:
    import multiprocessing

    parent, child = multiprocessing.Pipe()
    try:
        yield parent
    finally:
        parent.close()
        child.close()


@contextlib.contextmanager
def _cuda(name: str) -> Iterator[Any]:
    torch = _module("torch")
    if not torch.cuda.is_available():
        raise Unavailable("needs a CUDA device")
    yield getattr(torch.cuda, name)()


@contextlib.contextmanager
def _generator() -> Iterator[Any]:
    yield (i for i in range(3))


def _shutdown(value: Any) -> None:
    value.shutdown()


def _terminate(value: Any) -> None:
    value.terminate()
    value.join()


# What to try: the values RL code keeps on a policy or beside it. The descriptions name them in findings.
CANDIDATES: tuple[Candidate, ...] = (
    Candidate("threading.Lock", "a thread lock", _call("threading.Lock")),
    Candidate("threading.RLock", "a thread lock", _call("threading.RLock")),
    Candidate("threading.Condition", "a thread condition", _call("threading.Condition")),
    Candidate("threading.Event", "a thread event", _call("threading.Event")),
    Candidate("threading.Semaphore", "a thread semaphore", _call("threading.Semaphore")),
    Candidate("threading.BoundedSemaphore", "a thread semaphore", _call("threading.BoundedSemaphore")),
    Candidate("threading.Barrier", "a thread barrier", _call("threading.Barrier", 2)),
    Candidate("threading.Thread", "a thread", _call("threading.Thread", target=print)),
    Candidate("threading.Timer", "a thread", _call("threading.Timer", 60, print)),
    Candidate("threading.local", "thread-local storage", _call("threading.local")),
    Candidate("multiprocessing.Lock", "a process lock", _call("multiprocessing.Lock")),
    Candidate("multiprocessing.RLock", "a process lock", _call("multiprocessing.RLock")),
    Candidate("multiprocessing.Condition", "a process condition", _call("multiprocessing.Condition")),
    Candidate("multiprocessing.Event", "a process event", _call("multiprocessing.Event")),
    Candidate("multiprocessing.Semaphore", "a process semaphore", _call("multiprocessing.Semaphore")),
    Candidate("multiprocessing.BoundedSemaphore", "a process semaphore", _call("multiprocessing.BoundedSemaphore")),
    Candidate("multiprocessing.Barrier", "a process barrier", _call("multiprocessing.Barrier", 2)),
    Candidate("multiprocessing.Value", "a shared value with a process lock", _call("multiprocessing.Value", "i", 0)),
    Candidate("multiprocessing.Array", "a shared array with a process lock", _call("multiprocessing.Array", "i", 4)),
    Candidate("multiprocessing.Queue", "a process queue", _call("multiprocessing.Queue", release=_close)),
    Candidate("multiprocessing.SimpleQueue", "a process queue", _call("multiprocessing.SimpleQueue", release=_close)),
    Candidate("multiprocessing.JoinableQueue", "a process queue",
              _call("multiprocessing.JoinableQueue", release=_close)),
    Candidate("multiprocessing.Process", "a process", _call("multiprocessing.Process", target=print)),
    Candidate("multiprocessing.Pool", "a process pool", _call("multiprocessing.Pool", 1, release=_terminate)),
    Candidate("multiprocessing.Manager", "a process manager", _call("multiprocessing.Manager", release=_shutdown)),
    Candidate("multiprocessing.Pipe", "a pipe connection", _pipe_end, detach=lambda c: setattr(c, "_handle", None)),
    Candidate("queue.Queue", "a thread queue", _call("queue.Queue")),
    Candidate("queue.LifoQueue", "a thread queue", _call("queue.LifoQueue")),
    Candidate("queue.PriorityQueue", "a thread queue", _call("queue.PriorityQueue")),
    Candidate("queue.SimpleQueue", "a thread queue", _call("queue.SimpleQueue")),
    Candidate("concurrent.futures.ThreadPoolExecutor", "an executor",
              _call("concurrent.futures.ThreadPoolExecutor", 1, release=_shutdown)),
    Candidate("concurrent.futures.ProcessPoolExecutor", "an executor",
              _call("concurrent.futures.ProcessPoolExecutor", 1, release=_shutdown)),
    Candidate("socket.socket", "a socket", _call("socket.socket", release=_close)),
    Candidate("socket.create_connection", "a socket", lambda: _connected("socket.create_connection")),
    Candidate("socket.create_server", "a socket", lambda: _connected("socket.create_server")),
    Candidate("subprocess.Popen", "a subprocess", _popen),
    Candidate("builtins.open", "an open file", _call("builtins.open", os.devnull, release=_close)),
    Candidate("builtins.open", "an open file", _call("builtins.open", os.devnull, "rb", release=_close), "rb"),
    Candidate("builtins.open", "an open file", _call("builtins.open", os.devnull, "rb", 0, release=_close), "rb0"),
    Candidate("io.open", "an open file", _call("io.open", os.devnull, release=_close)),
    Candidate("io.FileIO", "an open file", _call("io.FileIO", os.devnull, release=_close)),
    Candidate("tempfile.TemporaryFile", "a temporary file", _call("tempfile.TemporaryFile", release=_close)),
    Candidate("tempfile.NamedTemporaryFile", "a temporary file", _call("tempfile.NamedTemporaryFile", release=_close)),
    Candidate("tempfile.SpooledTemporaryFile", "a temporary file",
              _call("tempfile.SpooledTemporaryFile", release=_close)),
    Candidate("tempfile.TemporaryDirectory", "a temporary folder",
              _call("tempfile.TemporaryDirectory", release=lambda d: d.cleanup())),
    Candidate("mmap.mmap", "a memory map", _call("mmap.mmap", -1, 64, release=_close)),
    Candidate("sqlite3.connect", "a sqlite3 connection", _call("sqlite3.connect", ":memory:", release=_close)),
    Candidate("logging.FileHandler", "a logging handler with a lock", _file_handler),
    Candidate("logging.StreamHandler", "a logging handler with a lock", _call("logging.StreamHandler")),
    Candidate("logging.getLogger", "a logger", _call("logging.getLogger", "rlguard.uncopyable")),
    Candidate("io.BytesIO", "an in-memory buffer", _call("io.BytesIO", b"abc")),
    Candidate("io.StringIO", "an in-memory buffer", _call("io.StringIO", "abc")),
    Candidate("selectors.DefaultSelector", "a selector", _call("selectors.DefaultSelector", release=_close)),
    Candidate("ctypes.CDLL", "a shared library", _call("ctypes.CDLL", None)),
    Candidate("contextlib.nullcontext", "a null context", _call("contextlib.nullcontext")),
    Candidate("<generator>", "a generator", _generator),
    Candidate("torch.Generator", "a random generator", _call("torch.Generator")),
    Candidate("torch.cuda.Stream", "a CUDA stream", lambda: _cuda("Stream")),
    Candidate("torch.cuda.Event", "a CUDA event", lambda: _cuda("Event")),
    Candidate("torch.cuda.CUDAGraph", "a CUDA graph", lambda: _cuda("CUDAGraph")),
    Candidate("requests.Session", "an HTTP session", _call("requests.Session", release=_close)),
    Candidate("zmq.Context", "a zmq context", _call("zmq.Context", release=lambda c: c.term())),
    Candidate("cv2.VideoCapture", "a video capture device", _call("cv2.VideoCapture", release=lambda c: c.release())),
    Candidate("cv2.VideoWriter", "a video writer", _call("cv2.VideoWriter", release=lambda c: c.release())),
    Candidate("pyrealsense2.pipeline", "a RealSense pipeline", _call("pyrealsense2.pipeline")),
)

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _outcome(attempt: Callable[[], Any], detach: Callable[[Any], Any] | None = None) -> str | None:
    """``"TypeError: cannot pickle '_thread.lock' object"`` when the attempt raises, None when it works."""
    try:
        made = attempt()
        if detach is not None:
            detach(made)
    except Exception as error:  # any failure is the outcome being recorded
        message = _ADDRESS.sub("0x...", str(error).splitlines()[0] if str(error) else "")
        return f"{type(error).__name__}: {message}" if message else type(error).__name__
    return None


def _type_names(value: Any) -> list[str]:
    """The qualified name of the value's type, then the public names it is re-exported under
    (``_io.TextIOWrapper`` is ``io.TextIOWrapper``): what an annotation may spell."""
    kind = type(value)
    own = f"{kind.__module__}.{kind.__qualname__}"
    names = [own]
    public = kind.__module__.lstrip("_")
    with contextlib.suppress(ImportError):
        if public != kind.__module__ and getattr(importlib.import_module(public), kind.__name__, None) is kind:
            names.append(f"{public}.{kind.__name__}")
    return names


def try_candidate(candidate: Candidate) -> dict[str, Any]:
    """Build the candidate's value and try ``copy.deepcopy`` and ``pickle.dumps`` on it.
    Raises ``Unavailable`` when it cannot be built here."""
    with candidate.make() as value:
        return {
            "factory": candidate.factory,
            "variant": candidate.variant,
            "what": candidate.what,
            "types": _type_names(value),
            "deepcopy": _outcome(lambda: copy.deepcopy(value), candidate.detach),
            "pickle": _outcome(lambda: pickle.dumps(value)),
        }


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _key(entry: dict[str, Any]) -> tuple[str, str]:
    return entry["factory"], entry["variant"]


def build(previous: dict[str, Any] | None = None) -> str:
    """The file's text: every candidate tried here, and the last recorded outcome of the others."""
    kept = {_key(entry): entry for entry in (previous or {}).get("entries", ())}
    entries = []
    for candidate in CANDIDATES:
        try:
            entries.append(try_candidate(candidate))
        except Unavailable:
            carried = kept.get((candidate.factory, candidate.variant))
            if carried is not None:
                entries.append(carried)
    data = {
        "source": "python -m rlguard_dev.uncopyable",
        "python": python_version(),  # messages (and, rarely, outcomes) are those of this Python
        "entries": entries,
    }
    return json.dumps(data, indent=1) + "\n"


def _previous() -> dict[str, Any] | None:
    try:
        return json.loads(DATA_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def main(argv: list[str]) -> int:
    return run(argv, __doc__.splitlines()[0], DATA_PATH, lambda: build(_previous()))

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
