"""RLG001 asks the engine's member model (``engine/members.py``) what a policy holds, and each answer is
checked against the real libraries: every flagged program crashes in torch 2.13 / torchrl 0.14.1 /
tensordict 0.14.3, every near miss runs.

The flows: a lock handed to the constructor (by position, by keyword, through ``**kwargs``, passed on
by ``**kwargs`` to a module the constructor builds), a
dataclass member holding a sqlite3 connection, ``self.actor, self.critic = make_models()``, a property
caching a locked policy; and the near misses: a copyable value in the same place, a keyword the class
does not store, a lock created lazily on first use (a fresh policy copies fine).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torchrl")

from rlguard.testing import check_source  # noqa: E402
from tests.helpers import run_as_module  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

COLLECTOR_HEADER = '''\
import contextlib
import threading

import torch
from torch import nn
from tensordict.nn import TensorDictModule
from torchrl.collectors import Collector
from torchrl.envs import PendulumEnv

'''

COLLECT = '''

policy = TensorDictModule({net}, in_keys=["th", "thdot"], out_keys=["action"])
collector = Collector(PendulumEnv(), policy, frames_per_batch=8, total_frames=16, policy_device="cpu:0")
batches = [batch.shape for batch in collector]
collector.shutdown()
'''

BY_ARGUMENT = COLLECTOR_HEADER + '''
class GuardedNet(nn.Module):
    def __init__(self, guard, width=2):
        super().__init__()
        self.lin = nn.Linear(width, 1)
        self.guard = guard

    def forward(self, th, thdot):
        with self.guard:
            return self.lin(torch.stack([th, thdot], -1))
'''

BY_KWARGS = COLLECTOR_HEADER + '''
class GuardedNet(nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        self.guard = options.get("guard", contextlib.nullcontext())

    def forward(self, th, thdot):
        with self.guard:
            return self.lin(torch.stack([th, thdot], -1))
'''

LAZY = COLLECTOR_HEADER + '''
class LazyLockedNet(nn.Module):
    """Creates its lock on first use: the collector copies the policy before any forward pass."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        self._lock = None

    def forward(self, th, thdot):
        if self._lock is None:
            self._lock = threading.Lock()
        with self._lock:
            return self.lin(torch.stack([th, thdot], -1))
'''

EAGER = LAZY.replace("        self._lock = None\n", "        self._lock = threading.Lock()\n")

DATACLASS = '''\
import copy
import sqlite3
from dataclasses import dataclass, field

from torch import nn


@dataclass
class EpisodeStore:
    path: str
    conn: {annotation}


class LoggingPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        self.store = EpisodeStore({arguments})


target = copy.deepcopy(LoggingPolicy())
'''

MODELS = '''\
import copy
import sqlite3

from torch import nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        self.db = sqlite3.connect(":memory:")


def make_models():
    return nn.Linear(2, 1), Critic()


class Agent:
    def __init__(self):
        self.actor, self.critic = make_models()

    def target(self):
        return copy.deepcopy(self.{copied})


target = Agent().target()
'''

PROPERTY = '''\
import copy
import threading

from torch import nn


class {net}(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        {member}


class Agent:
    def __init__(self):
        self._policy = None

    @property
    def policy(self):
        if self._policy is None:
            self._policy = {net}()
        return self._policy


agent = Agent()
target = copy.deepcopy({copied})
'''

FORWARDED = COLLECTOR_HEADER + '''
class Inner(nn.Module):
    def __init__(self, width, guard=None):
        super().__init__()
        self.lin = nn.Linear(width, 1)
        self.guard = guard or contextlib.nullcontext()

    def forward(self, x):
        with self.guard:
            return self.lin(x)


class GuardedNet(nn.Module):
    """Passes its keywords on to the module it builds."""

    def __init__(self, width=2, **kwargs):
        super().__init__()
        self.inner = Inner(width, **kwargs)

    def forward(self, th, thdot):
        return self.inner(torch.stack([th, thdot], -1))
'''

CONDITIONAL = COLLECTOR_HEADER + '''
import os


class LoggingNet(nn.Module):
    def __init__(self, log_path=None):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        self.log = open(log_path, "a") if log_path else None

    def forward(self, th, thdot):
        return self.lin(torch.stack([th, thdot], -1))
'''

FLAGGED = {
    "file held by a conditional expression": (CONDITIONAL + COLLECT.format(net="LoggingNet(os.devnull)"),
                                              "`self.log` holds an open file"),
    "lock by position": (BY_ARGUMENT + COLLECT.format(net="GuardedNet(threading.Lock())"), "`self.guard` holds a thread lock"),
    "lock by keyword": (BY_ARGUMENT + COLLECT.format(net="GuardedNet(width=2, guard=threading.RLock())"),
                        "`self.guard` holds a thread lock"),
    "lock through **kwargs": (BY_KWARGS + COLLECT.format(net="GuardedNet(guard=threading.Lock())"),
                              "`self.guard` holds a thread lock"),
    "lock passed on through **kwargs": (FORWARDED + COLLECT.format(net="GuardedNet(guard=threading.Lock())"),
                                        "`self.inner.guard` holds a thread lock"),
    "lock built at construction": (EAGER + COLLECT.format(net="LazyLockedNet()"), "`self._lock` holds a thread lock"),
    "dataclass field given a connection": (
        DATACLASS.format(annotation="sqlite3.Connection", arguments='"runs.db", sqlite3.connect(":memory:")'),
        "`self.store.conn` holds a sqlite3 connection"),
    "dataclass field by keyword": (
        DATACLASS.format(annotation="sqlite3.Connection", arguments='path="x", conn=sqlite3.connect(":memory:")'),
        "`self.store.conn` holds a sqlite3 connection"),
    "dataclass default factory": (
        DATACLASS.format(annotation='sqlite3.Connection = field(default_factory=lambda: sqlite3.connect(":memory:"))',
                         arguments='"runs.db"'),
        "`self.store.conn` holds a sqlite3 connection"),
    "item of a returned tuple": (MODELS.format(copied="critic"), "`self.db` holds a sqlite3 connection"),
    "cached_property building a locked policy": (
        PROPERTY.replace("    @property\n    def policy(self):\n        if self._policy is None:\n"
                         "            self._policy = {net}()\n        return self._policy",
                         "    @functools.cached_property\n    def policy(self):\n        return {net}()")
        .replace("import copy\n", "import copy\nimport functools\n")
        .format(net="LockedNet", member="self.lock = threading.Lock()", copied="agent.policy"),
        "`self.lock` holds a thread lock"),
    "property caching a locked policy": (
        PROPERTY.format(net="LockedNet", member="self.lock = threading.Lock()", copied="agent.policy"),
        "`self.lock` holds a thread lock"),
}

NEAR_MISSES = {
    "copyable argument": BY_ARGUMENT + COLLECT.format(net="GuardedNet(contextlib.nullcontext())"),
    "lock under a keyword the class does not store": BY_KWARGS + COLLECT.format(
        net="GuardedNet(guard=contextlib.nullcontext(), spare=threading.Lock())"),
    "nothing passed on through **kwargs": FORWARDED + COLLECT.format(net="GuardedNet(width=2)"),
    "no keyword: the default": BY_KWARGS + COLLECT.format(net="GuardedNet()"),
    "lock created lazily in forward": LAZY + COLLECT.format(net="LazyLockedNet()"),
    "dataclass field left at None": DATACLASS.format(annotation="sqlite3.Connection | None = None",
                                                     arguments='"runs.db"'),
    "the other item of the tuple": MODELS.format(copied="actor"),
    "property caching a plain policy": PROPERTY.format(net="PlainNet", member="self.scale = 2.0",
                                                       copied="agent.policy"),
    "the holder before the property ran": PROPERTY.format(net="LockedNet", member="self.lock = threading.Lock()",
                                                          copied="agent"),
}


def _messages(code: str) -> list[str]:
    return [f.full_message for f in check_source(code, select=["RLG001"]) if f.code == "RLG001"]


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_flagged_and_it_crashes(name):
    code, member = FLAGGED[name]
    (message,) = _messages(code)
    assert member in message
    with pytest.raises(TypeError, match="cannot pickle"):
        run_as_module(code)


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_miss_is_not_flagged_and_runs(name):
    code = NEAR_MISSES[name]
    assert _messages(code) == []
    namespace = run_as_module(code)
    if "batches" in namespace:
        assert [tuple(shape) for shape in namespace["batches"]] == [(8,), (8,)]


def test_the_lazy_lock_is_created_by_the_policy_actually_run():
    """The collector ran the copy it made: the lock exists on that copy, not on the policy given."""
    namespace = run_as_module(NEAR_MISSES["lock created lazily in forward"])
    assert namespace["policy"].module._lock is None
    assert namespace["collector"].policy.module._lock is not None


def test_a_fresh_lazy_policy_held_by_another_class_copies():
    """Through another class: the holder of a fresh ``LazyLockedNet`` copies fine, and is not flagged."""
    code = LAZY + '''

import copy


class Holder:
    def __init__(self):
        self.net = LazyLockedNet()

    def snapshot(self):
        return copy.deepcopy(self)


snapshot = Holder().snapshot()
'''
    assert _messages(code) == []
    assert run_as_module(code)["snapshot"].net._lock is None
    flagged = code.replace("        self._lock = None\n", "        self._lock = threading.Lock()\n")
    (message,) = _messages(flagged)
    assert "`self.net._lock` holds a thread lock" in message
    with pytest.raises(TypeError, match="cannot pickle"):
        run_as_module(flagged)


def test_the_finding_names_where_the_argument_is_stored():
    code, _ = FLAGGED["lock by position"]
    (message,) = _messages(code)
    line = code.splitlines().index("        self.guard = guard") + 1
    assert f"set at line {line}" in message
