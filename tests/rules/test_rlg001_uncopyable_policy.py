"""RLG001 uncopyable-policy on realistic TorchRL code: findings, near misses, aliases, projects, targets."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from rlguard.testing import check_source, fix_source

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LOCKED = '''
import threading

from torch import nn


class LockedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)
        self.lock = threading.Lock()

    def forward(self, observation):
        with self.lock:
            return self.lin(observation)
'''
LOCK_LINE = 11  # line of ``self.lock = threading.Lock()`` in LOCKED (it starts with a blank line)


def findings(code: str, **kwargs):
    return [f for f in check_source(textwrap.dedent(code), select=["RLG001"], **kwargs) if f.code == "RLG001"]


def flagged(code: str, **kwargs) -> list[str]:
    return [f.full_message for f in findings(code, **kwargs)]


def lines(code: str, **kwargs) -> list[int]:
    return [f.line for f in findings(code, **kwargs)]


# ----- deep-copy sites -----


@pytest.mark.parametrize(
    "use",
    [
        "import copy\ntarget = copy.deepcopy(LockedNet())\n",
        "import copy as cp\ntarget = cp.deepcopy(LockedNet())\n",
        "from copy import deepcopy\ntarget = deepcopy(LockedNet())\n",
        "from copy import deepcopy as dc\ntarget = dc(LockedNet())\n",
        "import copy\ntarget = copy.deepcopy(x=LockedNet())\n",
        "import copy\nnet = LockedNet()\ntarget = copy.deepcopy(net)\n",
        "import copy\nnet = LockedNet()\nalias = net\ntarget = copy.deepcopy(alias)\n",
        "import copy\nnet = LockedNet().to('cpu').eval()\ntarget = copy.deepcopy(net)\n",
        "import copy\nnet = LockedNet()\nnet = net.to('cpu')\ntarget = copy.deepcopy(net)\n",
        "import copy\ndef clone(net: LockedNet):\n    return copy.deepcopy(net)\n",
        "import copy\ndef clone(net: 'LockedNet'):\n    return copy.deepcopy(net)\n",
        "import copy\nfrom typing import Optional\ndef clone(net: Optional[LockedNet]):\n    return copy.deepcopy(net)\n",
        "import copy\nimport typing\ndef clone(net: typing.Union[int, LockedNet]):\n    return copy.deepcopy(net)\n",
        "import copy\ndef clone(net: LockedNet | None):\n    return copy.deepcopy(net)\n",
        "import copy\ndef clone(net: 'None | LockedNet'):\n    return copy.deepcopy(net)\n",
        "import copy\ndef main():\n    net = LockedNet()\n    target = copy.deepcopy(net)\n",
    ],
)
def test_deepcopy_of_an_uncopyable_module(use):
    messages = flagged(LOCKED + use)
    assert len(messages) == 1
    assert f"`LockedNet` cannot be deep-copied by `copy.deepcopy`: `self.lock` holds a thread lock; set at line {LOCK_LINE}" in messages[0]
    # Both ways out that work for copy.deepcopy; the marker does not (nothing makes deepcopy read it).
    assert "give `LockedNet` a `__deepcopy__`" in messages[0] and "build a new policy" in messages[0]
    assert "@rlguard.runtime.uncopyable" not in messages[0] and "policy_factory" not in messages[0]


@pytest.mark.parametrize(
    "wrapper",
    [
        "from tensordict.nn import TensorDictModule\n"
        "policy = TensorDictModule(LockedNet(), in_keys=['observation'], out_keys=['action'])\n",
        "from tensordict.nn import TensorDictModule as Mod\n"
        "policy = Mod(module=LockedNet(), in_keys=['observation'], out_keys=['action'])\n",
        "from tensordict.nn import TensorDictModule, TensorDictSequential as Seq\n"
        "net = LockedNet()\n"
        "policy = Seq(TensorDictModule(nn.Linear(3, 3), in_keys=['x'], out_keys=['h']),\n"
        "             TensorDictModule(net, in_keys=['h'], out_keys=['action']))\n",
        "from torchrl.modules import ProbabilisticActor, TanhNormal\n"
        "from tensordict.nn import TensorDictModule\n"
        "module = TensorDictModule(LockedNet(), in_keys=['observation'], out_keys=['loc', 'scale'])\n"
        "policy = ProbabilisticActor(module=module, in_keys=['loc', 'scale'], distribution_class=TanhNormal)\n",
        "import torchrl.modules as tm\npolicy = tm.ValueOperator(LockedNet(), in_keys=['observation'])\n",
        "from torchrl.modules import Actor\npolicy = Actor(LockedNet())\n",
        "from torchrl.modules import QValueActor\npolicy = QValueActor(LockedNet(), in_keys=['observation'], spec=spec)\n",
        "policy = nn.Sequential(nn.Linear(4, 3), LockedNet())\n",
        "import torch\npolicy = torch.nn.ModuleList([nn.Linear(4, 3), LockedNet()])\n",
        "policy = nn.ModuleDict({'trunk': nn.Linear(4, 3), 'head': LockedNet()})\n",
        "from torchrl.modules import ActorCriticWrapper, ValueOperator\n"
        "policy = ActorCriticWrapper(policy_operator=actor, value_operator=ValueOperator(LockedNet(), in_keys=['observation']))\n",
    ],
)
def test_wrappers_of_an_uncopyable_module(wrapper):
    code = LOCKED + wrapper + "import copy\ntarget = copy.deepcopy(policy)\n"
    messages = flagged(code)
    assert len(messages) == 1 and "`self.lock` holds a thread lock" in messages[0]


def test_reported_on_the_line_where_the_call_begins():
    code = LOCKED + "import copy\n\ntarget = copy.deepcopy(\n    LockedNet(),\n)\n"
    assert lines(code) == [code.splitlines().index("target = copy.deepcopy(") + 1]


def test_suppressed_with_noqa():
    assert flagged(LOCKED + "import copy\ntarget = copy.deepcopy(LockedNet())  # noqa: RLG001\n") == []
    assert flagged(LOCKED + "import copy\n# rlguard: ignore[RLG001]\ntarget = copy.deepcopy(LockedNet())\n") == []


# ----- what cannot be copied -----


@pytest.mark.parametrize(
    "imports, value, what",
    [
        ("import threading", "threading.RLock()", "a thread lock"),
        ("from threading import Condition", "Condition()", "a thread condition"),
        ("import threading as th", "th.Event()", "a thread event"),
        ("import threading", "threading.Thread(target=self.run, daemon=True)", "a thread"),
        ("import threading", "threading.local()", "thread-local storage"),
        ("import multiprocessing as mp", "mp.Queue(maxsize=8)", "a process queue"),
        ("import torch.multiprocessing as tmp", "tmp.Queue()", "a process queue"),
        ("from torch.multiprocessing import Lock", "Lock()", "a process lock"),
        ("import multiprocessing", "multiprocessing.Value('d', 0.0)", "a shared value"),
        ("import queue", "queue.Queue()", "a thread queue"),
        ("from queue import SimpleQueue", "SimpleQueue()", "a thread queue"),
        ("from concurrent.futures import ThreadPoolExecutor", "ThreadPoolExecutor(max_workers=2)", "an executor"),
        ("import socket", "socket.create_connection(('localhost', 5555))", "a socket"),
        ("import subprocess", "subprocess.Popen(['ffmpeg', '-i', 'pipe:'])", "a subprocess"),
        ("", "open('episodes.log', 'a')", "an open file"),
        ("import tempfile", "tempfile.NamedTemporaryFile()", "a temporary file"),
        ("import mmap", "mmap.mmap(-1, 4096)", "a memory map"),
        ("import sqlite3", "sqlite3.connect('replay.db')", "a sqlite3 connection"),
        ("", "(frame for frame in self.frames())", "a generator"),
        ("import logging", "logging.FileHandler('train.log')", "a logging handler with a lock"),
        ("import selectors", "selectors.DefaultSelector()", "a selector"),
        ("import io", "io.FileIO('episodes.bin', 'w')", "an open file"),
    ],
)
def test_each_kind_of_member(imports, value, what):
    code = f"""\
import copy
{imports}
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 2)

    def start(self):
        self.member = {value}


target = copy.deepcopy(Policy())
"""
    messages = flagged(code)
    assert len(messages) == 1, code
    assert f"`self.member` holds {what}" in messages[0]
    assert "set at line 12" in messages[0]


def test_generator_bound_to_a_name_first():
    code = """\
import copy
from torch import nn


class Replay(nn.Module):
    def __init__(self, frames):
        super().__init__()
        stream = (f for f in frames)
        self.stream = stream


copy.deepcopy(Replay([]))
"""
    assert ["`self.stream` holds a generator; set at line 9"] == [m[m.index("`self.stream`"):m.index("line 9") + 6] for m in flagged(code)]


@pytest.mark.parametrize(
    "imports, value",
    [
        ("import ctypes", "ctypes.CDLL('libc.so.6')"),
        ("import torch", "torch.Generator().manual_seed(0)"),
        ("import logging", "logging.getLogger(__name__)"),
        ("import multiprocessing as mp", "mp.Pipe()"),
        ("import serial", "serial.Serial('/dev/ttyUSB0', 115200)"),
        ("import zmq", "zmq.Context()"),
        ("import tempfile", "tempfile.TemporaryDirectory()"),
        ("import threading", "threading.Lock"),  # the class, not a lock
        ("from mylab.sync import Lock", "Lock()"),  # someone else's Lock
        ("import asyncio", "asyncio.Lock()"),
    ],
)
def test_members_that_copy_fine_are_not_findings(imports, value):
    code = f"""\
import copy
{imports}
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.member = {value}


target = copy.deepcopy(Policy())
"""
    assert flagged(code) == []


def test_lock_held_in_a_local_or_a_class_attribute_is_not_a_member():
    code = """\
import copy
import threading
from torch import nn

_GLOBAL_LOCK = threading.Lock()


class Policy(nn.Module):
    shared_lock = threading.Lock()  # a class attribute: deepcopy does not copy it

    def __init__(self):
        super().__init__()
        lock = threading.Lock()
        with lock:
            self.head = nn.Linear(8, 2)

    def forward(self, x):
        with _GLOBAL_LOCK:
            return self.head(x)


target = copy.deepcopy(Policy())
"""
    assert flagged(code) == []


def test_annotated_member():
    code = """\
import copy
import threading
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock: threading.Lock = threading.Lock()


copy.deepcopy(Policy())
"""
    assert len(flagged(code)) == 1


def test_user_listed_types():
    code = """\
import copy
from torch import nn
from mylab.hardware import Gripper


class GraspPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.gripper = Gripper(port="/dev/ttyACM0")


copy.deepcopy(GraspPolicy())
"""
    assert flagged(code) == []
    messages = flagged(code, options={"RLG001": {"uncopyable-types": ["mylab.hardware.Gripper"]}})
    assert len(messages) == 1 and "a `mylab.hardware.Gripper` (in `uncopyable-types`); set at line 9" in messages[0]


# ----- classes: hooks, bases, markers, nesting -----


@pytest.mark.parametrize("hook", ["__deepcopy__(self, memo)", "__getstate__(self)", "__reduce__(self)", "__reduce_ex__(self, protocol)"])
def test_a_copy_hook_makes_the_class_copyable(hook):
    code = LOCKED + f"""

class Policy(LockedNet):
    def {hook}:
        raise NotImplementedError


import copy
copy.deepcopy(Policy())
"""
    assert flagged(code) == []


def test_a_copy_hook_in_a_base_class_counts():
    code = """\
import copy
import threading
from torch import nn


class Base(nn.Module):
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("lock", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.Lock()


class Policy(Base):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()


copy.deepcopy(Policy())
"""
    assert flagged(code) == []


def test_a_member_set_in_a_base_class_counts():
    code = LOCKED + """

class Policy(LockedNet):
    def __init__(self):
        super().__init__()
        self.extra = nn.Linear(1, 1)


import copy
copy.deepcopy(Policy())
"""
    messages = flagged(code)
    assert len(messages) == 1 and "`Policy` cannot be deep-copied by `copy.deepcopy`: `self.lock` holds a thread lock" in messages[0]


@pytest.mark.parametrize(
    "marker",
    [
        "from rlguard.runtime import uncopyable\n\n@uncopyable",
        "import rlguard\n\n@rlguard.runtime.uncopyable",
        "import rlguard.runtime as rr\n\n@rr.uncopyable",
        "from rlguard.runtime import uncopyable as never_copy\n\n@never_copy",
        "from rlguard.runtime.marker import uncopyable\n\n@uncopyable",
    ],
)
def test_a_marked_class_is_not_a_finding(marker):
    code = f"""\
import copy
import threading
from torch import nn
{marker}
class CameraPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()


class Subclass(CameraPolicy):
    pass


copy.deepcopy(CameraPolicy())
copy.deepcopy(Subclass())
"""
    assert flagged(code) == []


def test_a_decorator_of_the_same_name_from_elsewhere_is_not_the_marker():
    code = """\
import copy
import threading
from torch import nn
from mylib import uncopyable


@uncopyable
class CameraPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()


copy.deepcopy(CameraPolicy())
"""
    assert len(flagged(code)) == 1


@pytest.mark.parametrize(
    "use",
    [
        "policy = LockedNet()\nuncopyable(policy)\ncollector = Collector(env, policy, frames_per_batch=64, policy_device='cuda')\n",
        "policy = uncopyable(LockedNet())\ncollector = Collector(env, policy, frames_per_batch=64, policy_device='cuda')\n",
        "policy = TensorDictModule(uncopyable(LockedNet()), in_keys=['observation'], out_keys=['action'])\n"
        "collector = Collector(env, policy, frames_per_batch=64, policy_device='cuda')\n",
    ],
)
def test_a_marked_instance_is_not_a_finding(use):
    header = (LOCKED + "from rlguard.runtime import uncopyable\nfrom tensordict.nn import TensorDictModule\n"
              "from torchrl.collectors import Collector\n")
    assert flagged(header + use) == []
    unmarked = use.replace("uncopyable(policy)\n", "").replace("uncopyable(LockedNet())", "LockedNet()")
    assert len(flagged(header + unmarked)) == 1


def test_nested_uncopyable_class_names_the_path():
    code = """\
import copy
import threading
from torch import nn


class FrameBuffer:
    def __init__(self):
        self.ready = threading.Event()


class Camera:
    def __init__(self):
        self.buffer = FrameBuffer()


class CameraPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.camera = Camera()
        self.head = nn.Linear(64, 4)


copy.deepcopy(CameraPolicy())
"""
    messages = flagged(code)
    assert len(messages) == 1
    assert "`CameraPolicy` cannot be deep-copied by `copy.deepcopy`: `self.camera.buffer.ready` holds a thread event; set at line 8" in messages[0]


def test_cyclic_classes_terminate():
    code = """\
import copy
from torch import nn


class A:
    def __init__(self):
        self.b = B()


class B:
    def __init__(self):
        self.a = A()


copy.deepcopy(A())
"""
    assert flagged(code) == []


# ----- names and attributes -----


def test_self_attribute_assigned_in_the_same_class():
    code = LOCKED + """
import copy
from tensordict.nn import TensorDictModule


class Agent:
    def __init__(self):
        self.actor = TensorDictModule(LockedNet(), in_keys=["observation"], out_keys=["action"])
        self.target_actor = copy.deepcopy(self.actor)
"""
    assert len(flagged(code)) == 1


def test_self_attribute_assigned_in_a_later_method_or_a_base():
    code = LOCKED + """
import copy


class Agent:
    def sync_target(self):
        self.target = copy.deepcopy(self.actor)

    def build(self):
        self.actor = LockedNet()


class Child(Agent):
    def refresh(self):
        return copy.deepcopy(self.actor)
"""
    assert len(flagged(code)) == 2


def test_deepcopy_of_self():
    code = """\
import copy
import threading


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()

    def clone(self):
        return copy.deepcopy(self)


class SafeRecorder:
    def __init__(self):
        self.lock = threading.Lock()

    def clone(self):
        return copy.deepcopy(self)

    def __deepcopy__(self, memo):
        return SafeRecorder()
"""
    assert lines(code) == [10]


@pytest.mark.parametrize(
    "use",
    [
        "copy.copy(policy)",
        "copy.deepcopy(policy.state_dict())",
        "copy.deepcopy(policy.lin)",  # a lock-free sub-module
        "copy.deepcopy({'lr': 3e-4, 'gamma': 0.99})",
        "copy.deepcopy(cfg)",
        "copy.deepcopy(dict(policy.named_parameters()))",
        "copy.deepcopy(make_policy())",  # a factory: its result is unknown
        "copy.deepcopy(LockedNet)",  # the class object itself
        "copy.deepcopy(policies[0])",
    ],
)
def test_near_misses_of_deepcopy(use):
    code = LOCKED + f"import copy\npolicy = LockedNet()\nresult = {use}\n"
    assert flagged(code) == []


def test_a_rebound_name_is_judged_by_its_latest_value():
    code = LOCKED + "import copy\npolicy = LockedNet()\npolicy = nn.Linear(3, 1)\ncopy.deepcopy(policy)\n"
    assert flagged(code) == []
    code = LOCKED + "import copy\npolicy = nn.Linear(3, 1)\npolicy = LockedNet()\ncopy.deepcopy(policy)\n"
    assert len(flagged(code)) == 1


def test_a_loop_variable_is_unknown():
    code = LOCKED + "import copy\nfor policy in [LockedNet()]:\n    copy.deepcopy(policy)\n"
    assert flagged(code) == []


# ----- collectors -----

COLLECTOR = LOCKED + """
from tensordict.nn import TensorDictModule
from torchrl.collectors import {name}
from torchrl.envs import GymEnv

policy = TensorDictModule(LockedNet(), in_keys=["observation"], out_keys=["action"])
collector = {name}({args})
"""


@pytest.mark.parametrize(
    "name, args",
    [
        ("Collector", "GymEnv('Pendulum-v1'), policy, frames_per_batch=200, total_frames=10_000, policy_device='cuda:0'"),
        ("Collector", "GymEnv('Pendulum-v1'), policy=policy, frames_per_batch=200, device='cuda'"),
        ("Collector", "create_env_fn=make_env, policy=policy, frames_per_batch=200, policy_device=device"),
        ("Collector", "[make_env, make_env], policy, backend='process', frames_per_batch=200"),
        ("Collector", "make_env, policy, num_collectors=4, frames_per_batch=200"),
        ("MultiSyncCollector", "[make_env] * 4, policy, frames_per_batch=200"),
        ("MultiAsyncCollector", "[make_env] * 4, policy=policy, frames_per_batch=200"),
        ("AsyncCollector", "make_env, policy, frames_per_batch=200"),
    ],
)
def test_collectors_that_copy_or_pickle_the_policy(name, args):
    messages = flagged(COLLECTOR.format(name=name, args=args))
    assert len(messages) == 1
    if "device" in args and "backend" not in args:
        assert "`LockedNet` cannot be deep-copied by `Collector` to move it to `" in messages[0]
    else:
        assert f"`LockedNet` cannot be pickled to `{name}`'s workers: `self.lock` holds" in messages[0]
        assert messages[0].index("policy_factory=") < messages[0].index("__getstate__")


@pytest.mark.parametrize(
    "name, args",
    [
        ("Collector", "GymEnv('Pendulum-v1'), policy, frames_per_batch=200, total_frames=10_000"),
        ("Collector", "GymEnv('Pendulum-v1'), policy, frames_per_batch=200, policy_device=None, device=None"),
        ("Collector", "GymEnv('Pendulum-v1'), policy, **collector_kwargs"),
        ("Collector", "GymEnv('Pendulum-v1'), policy, backend='direct', frames_per_batch=200"),
        ("MultiSyncCollector", "[make_env] * 4, policy_factory=make_policy, frames_per_batch=200"),
        ("MultiSyncCollector", "[make_env] * 4, None, policy_factory=make_policy"),
        ("AsyncBatchedCollector", "make_env, policy, frames_per_batch=200, device='cuda'"),
    ],
)
def test_collectors_that_use_the_policy_as_is(name, args):
    assert flagged(COLLECTOR.format(name=name, args=args)) == []


def test_device_bound_to_none_is_not_a_device():
    code = COLLECTOR.format(name="Collector", args="env, policy, frames_per_batch=200, device=device")
    assert flagged(code.replace("policy = TensorDictModule", "device = None\npolicy = TensorDictModule")) == []


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import torchrl.collectors as tc", "tc.Collector(env, policy, frames_per_batch=64, policy_device='cuda')"),
        ("from torchrl.collectors import SyncDataCollector", "SyncDataCollector(env, policy, frames_per_batch=64, device='cuda')"),
        ("from torchrl.collectors import MultiaSyncDataCollector as MAC", "MAC([env_fn] * 2, policy, frames_per_batch=64)"),
        ("from torchrl.collectors import aSyncDataCollector", "aSyncDataCollector(env_fn, policy, frames_per_batch=64)"),
        ("from torchrl.collectors.distributed import DistributedCollector", "DistributedCollector([env_fn], policy, frames_per_batch=64)"),
        ("from torchrl.collectors.distributed import RPCDataCollector", "RPCDataCollector([env_fn], policy, frames_per_batch=64)"),
        ("from torchrl.collectors.distributed import RayCollector", "RayCollector([env_fn], policy, frames_per_batch=64)"),
    ],
)
def test_collector_names_old_and_new(imports, call):
    code = LOCKED + f"{imports}\npolicy = LockedNet()\ncollector = {call}\n"
    assert len(flagged(code, target="0.12")) == 1


def test_a_collector_from_another_library_is_not_torchrl():
    code = LOCKED + "from mylab.collectors import MultiSyncCollector\nc = MultiSyncCollector([env_fn], LockedNet())\n"
    assert flagged(code) == []


# ----- losses -----

LOSS = LOCKED + """
from tensordict.nn import TensorDictModule
{imports}

value_net = TensorDictModule(LockedNet(), in_keys=["observation", "action"], out_keys=["state_action_value"])
loss_module = {call}
"""


@pytest.mark.parametrize(
    "imports, call",
    [
        ("from torchrl.objectives import DDPGLoss", "DDPGLoss(actor_network=actor, value_network=value_net)"),
        ("from torchrl.objectives import DDPGLoss", "DDPGLoss(actor, value_net, delay_actor=True)"),
        ("from torchrl.objectives import DiscreteCQLLoss", "DiscreteCQLLoss(value_net, action_space='one-hot')"),
        ("from torchrl.objectives.multiagent import QMixerLoss", "QMixerLoss(local_value_network=value_net, mixer_network=mixer)"),
        ("import torchrl.objectives as objectives", "objectives.DDPGLoss(actor, value_net)"),
    ],
)
def test_losses_that_deep_copy(imports, call):
    messages = flagged(LOSS.format(imports=imports, call=call))
    loss = call.split("(")[0].split(".")[-1]
    assert len(messages) == 1
    assert f"`LockedNet` cannot be deep-copied by `{loss}`, which copies its networks: `self.lock` holds" in messages[0]


@pytest.mark.parametrize(
    "imports, call",
    [
        ("from torchrl.objectives import DQNLoss", "DQNLoss(value_net, action_space='one-hot')"),
        ("from torchrl.objectives import SACLoss", "SACLoss(actor, qvalue_network=value_net)"),
        ("from torchrl.objectives import ClipPPOLoss", "ClipPPOLoss(actor, critic_network=value_net)"),
        ("from torchrl.objectives import DDPGLoss", "DDPGLoss(actor_network=actor, value_network=critic, loss_function='l2')"),
        ("from mylab.objectives import DDPGLoss", "DDPGLoss(actor, value_net)"),
    ],
)
def test_losses_that_keep_their_networks(imports, call):
    assert flagged(LOSS.format(imports=imports, call=call)) == []


@pytest.mark.parametrize(
    "imports, call",
    [
        ("from torchrl.objectives import DQNLoss", "DQNLoss(value_net, action_space='one-hot')"),
        ("from torchrl.objectives import SACLoss", "SACLoss(actor, qvalue_network=value_net)"),
        ("import torchrl.objectives as O", "O.ClipPPOLoss(actor, critic=value_net)"),
        ("from torchrl.objectives import DreamerActorLoss", "DreamerActorLoss(actor_model=value_net, value_model=v, model_based_env=env)"),
    ],
)
def test_every_loss_deep_copied_before_0_5(imports, call):
    code = LOSS.format(imports=imports, call=call)
    messages = flagged(code, target="0.4")
    loss = call.split("(")[0].split(".")[-1]
    assert len(messages) == 1 and f"deep-copied by `{loss}` (every loss in torchrl < 0.5)" in messages[0]
    assert flagged(code, target="0.5") == []


@pytest.mark.parametrize("pin, flagged", [("torchrl>=0.4", True), ("torchrl>=0.4,<0.9", True), ("torchrl>=0.5", False)])
def test_a_pin_admitting_a_release_before_0_5_counts_its_copying_losses(tmp_path, pin, flagged):
    """Removals are judged at a pin's newest release, behaviour only old releases have at its lowest:
    the code must run on every version the pin admits."""
    (tmp_path / "requirements.txt").write_text(pin + "\n")
    code = LOSS.format(imports="from torchrl.objectives import ClipPPOLoss", call="ClipPPOLoss(actor, critic=value_net)")
    (tmp_path / "train.py").write_text(textwrap.dedent(code))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([CHECKOUT, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "--select", "RLG001", "train.py"],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert ("(every loss in torchrl < 0.5)" in done.stdout) is flagged, done.stdout + done.stderr


@pytest.mark.parametrize(
    "call, expected",
    [
        ("loss_module.get_stateful_net('value_network')", 1),
        ("loss_module.get_stateful_net('value_network', copy=True)", 1),
        ("loss_module.get_stateful_net(network_name='value_network')", 1),
        ("loss_module.get_stateful_net('value_network', copy=False)", 0),
        ("loss_module.get_stateful_net('value_network', False)", 0),
        ("loss_module.get_stateful_net('value_network', copy=should_copy)", 0),
    ],
)
def test_get_stateful_net(call, expected):
    code = LOSS.format(imports="from torchrl.objectives import DQNLoss",
                       call="DQNLoss(value_network=value_net, action_space='one-hot')") + f"net = {call}\n"
    messages = flagged(code)
    assert len(messages) == expected
    if expected:
        assert "cannot be deep-copied by `get_stateful_net` (it copies unless `copy=False`)" in messages[0]


def test_get_stateful_net_names_the_network():
    code = LOSS.format(imports="from torchrl.objectives import SACLoss",
                       call="SACLoss(actor_network=actor, qvalue_network=value_net)")
    assert len(flagged(code + "net = loss_module.get_stateful_net('qvalue_network')\n")) == 1
    assert flagged(code + "net = loss_module.get_stateful_net('actor_network')\n") == []


# ----- projects: classes in other files -----

PROJECT = {
    "robot/__init__.py": "from robot.policies import CameraPolicy\n",
    "robot/camera.py": (
        "import threading\n\n\nclass Camera:\n"
        "    def __init__(self, index=0):\n"
        "        self.index = index\n"
        "        self.frame_lock = threading.Lock()\n"
    ),
    "robot/policies.py": (
        "from torch import nn\n\nfrom robot.camera import Camera\n\n\n"
        "class CameraPolicy(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.camera = Camera()\n"
        "        self.head = nn.Linear(64, 4)\n"
    ),
}


@pytest.mark.parametrize(
    "imports, build",
    [
        ("from robot.policies import CameraPolicy", "CameraPolicy()"),
        ("from robot import CameraPolicy", "CameraPolicy()"),  # re-exported by the package
        ("import robot.policies as rp", "rp.CameraPolicy()"),
        ("from robot.policies import CameraPolicy as CP", "CP()"),
    ],
)
def test_classes_from_other_files(imports, build):
    code = f"""\
from tensordict.nn import TensorDictModule
from torchrl.collectors import MultiSyncCollector
{imports}

policy = TensorDictModule({build}, in_keys=["pixels"], out_keys=["action"])
collector = MultiSyncCollector([make_env] * 2, policy, frames_per_batch=100)
"""
    messages = flagged(code, extra_files=PROJECT)
    assert len(messages) == 1
    assert ("`CameraPolicy` cannot be pickled to `MultiSyncCollector`'s workers: `self.camera.frame_lock` holds a thread lock; "
            "set at robot/camera.py:7") in messages[0]


def test_project_classes_that_copy_fine():
    files = {**PROJECT, "robot/camera.py": "class Camera:\n    def __init__(self, index=0):\n        self.index = index\n"}
    code = "import copy\nfrom robot.policies import CameraPolicy\ncopy.deepcopy(CameraPolicy())\n"
    assert flagged(code, extra_files=files) == []


def test_a_subpackage_file_reports_a_relative_location():
    files = {**PROJECT, "scripts/__init__.py": ""}
    code = "import copy\nfrom robot.policies import CameraPolicy\ncopy.deepcopy(CameraPolicy())\n"
    messages = flagged(code, extra_files=files)
    assert len(messages) == 1 and "set at robot/camera.py:7" in messages[0]


def test_project_file_that_no_rule_needs_still_gives_a_line():
    """robot/camera.py has no deep-copy site, so the pre-filter skips it; its facts are loaded with lines."""
    files = {
        "robot/__init__.py": "",
        "robot/camera.py": "import threading\n\n\nclass Camera:\n    def __init__(self):\n        self.lock = threading.Lock()\n",
    }
    code = "import copy\nfrom robot.camera import Camera\n\nclass P:\n    def __init__(self):\n        self.cam = Camera()\n\ncopy.deepcopy(P())\n"
    messages = flagged(code, extra_files=files)
    assert len(messages) == 1 and "`self.cam.lock` holds a thread lock; set at robot/camera.py:6" in messages[0]


def test_a_copy_hook_defined_in_another_file():
    files = {
        "lab/__init__.py": "",
        "lab/base.py": "from torch import nn\n\nclass Base(nn.Module):\n    def __deepcopy__(self, memo):\n        return self\n",
    }
    code = LOCKED.replace("class LockedNet(nn.Module)", "class LockedNet(Base)") .replace(
        "from torch import nn", "from torch import nn\nfrom lab.base import Base") + "import copy\ncopy.deepcopy(LockedNet())\n"
    assert flagged(code, extra_files=files) == []


# ----- no automatic fix -----


def test_there_is_no_automatic_fix():
    code = textwrap.dedent(COLLECTOR.format(name="Collector", args="env, policy, frames_per_batch=8, policy_device='cuda'"))
    assert fix_source(code, unsafe=True, select=["RLG001"]) == code
    [finding] = findings(code)
    assert finding.fix is None


# ----- policy factories -----

FACTORY = LOCKED + """
import functools
from tensordict.nn import TensorDictModule
from torchrl.collectors import Collector, MultiSyncCollector


def make_policy(device=None):
    net = LockedNet()
    return TensorDictModule(net, in_keys=["observation"], out_keys=["action"])


def make_plain_policy():
    return TensorDictModule(nn.Linear(3, 1), in_keys=["observation"], out_keys=["action"])


collector = {call}
"""


@pytest.mark.parametrize(
    "call, expected",
    [
        ("Collector(env, policy_factory=make_policy, frames_per_batch=64, policy_device='cuda')", 1),
        ("Collector(env, policy_factory=functools.partial(make_policy, 'cuda'), frames_per_batch=64, device='cuda')", 1),
        ("Collector(env, policy_factory=lambda: make_policy(), frames_per_batch=64, device='cuda')", 1),
        ("Collector(env, policy_factory=lambda: make_plain_policy(), frames_per_batch=64, device='cuda')", 0),
        ("Collector(env, policy_factory=LockedNet, frames_per_batch=64, policy_device='cuda')", 1),
        ("Collector(env, policy_factory=lambda: LockedNet(), frames_per_batch=64, device='cuda')", 1),
        ("Collector(env, policy_factory=make_policy, frames_per_batch=64)", 0),
        ("Collector(env, policy_factory=make_plain_policy, frames_per_batch=64, policy_device='cuda')", 0),
        ("MultiSyncCollector([env_fn] * 2, policy_factory=make_policy, frames_per_batch=64, device='cuda')", 0),
    ],
)
def test_policy_factories(call, expected):
    messages = flagged(FACTORY.format(call=call))
    assert len(messages) == expected
    if expected:
        assert "(built by `policy_factory`) cannot be deep-copied by `Collector` to move it to" in messages[0]
        assert "`policy_factory=` does not avoid this copy" in messages[0]


def test_user_listed_project_class_through_a_re_export():
    files = {
        "robot/__init__.py": "from robot.hardware import Arm\n",
        "robot/hardware.py": "class Arm:\n    def __init__(self, port):\n        self.port = port\n",
    }
    code = """\
import copy
from torch import nn
from robot import Arm


class ReachPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.arm = Arm("/dev/ttyUSB0")


copy.deepcopy(ReachPolicy())
"""
    assert flagged(code, extra_files=files) == []
    messages = flagged(code, extra_files=files, options={"RLG001": {"uncopyable-types": ["robot.hardware.Arm"]}})
    assert len(messages) == 1 and "`self.arm` holds a `robot.hardware.Arm`" in messages[0]


def test_a_deepcopy_hook_does_not_help_a_pickled_policy():
    code = LOCKED + """
    def __deepcopy__(self, memo):
        return LockedNet()


from torchrl.collectors import Collector, MultiSyncCollector

single = Collector(env, LockedNet(), frames_per_batch=64, policy_device="cuda")
multi = MultiSyncCollector([make_env] * 2, LockedNet(), frames_per_batch=64)
"""
    messages = flagged(code)
    assert len(messages) == 1 and "cannot be pickled to `MultiSyncCollector`'s workers" in messages[0]
    pickled = code.replace("def __deepcopy__(self, memo):", "def __getstate__(self):")
    assert flagged(pickled) == []


@pytest.mark.parametrize(
    "call, expected",
    [
        ("loss_module.get_stateful_net('qvalue_network')", 1),
        ("loss_module.get_stateful_net('actor_network')", 0),
        ("loss_module.get_stateful_net('value_network')", 0),  # SACLoss got no value network here
        ("loss_module.get_stateful_net(name)", 0),  # which network is unknown
    ],
)
def test_get_stateful_net_on_a_loss_built_positionally(call, expected):
    code = LOSS.format(imports="from torchrl.objectives import SACLoss", call="SACLoss(actor, value_net)") + f"net = {call}\n"
    assert len(flagged(code)) == expected


def test_location_of_a_member_set_over_several_lines_or_twice():
    code = """\
import copy
import threading
from torch import nn


class Policy(nn.Module):
    def __init__(self, shared=None):
        super().__init__()
        self.lock = None
        self.lock == shared  # a comparison, not an assignment
        self.lock = (
            threading.Lock()
        )

    def reset(self):
        self.lock = threading.Lock()


copy.deepcopy(Policy())
"""
    messages = flagged(code)
    assert len(messages) == 1 and "`self.lock` holds a thread lock; set at line 11" in messages[0]


def test_location_with_an_annotation_and_another_self_name():
    code = """\
import copy
import queue
from torch import nn


class Policy(nn.Module):
    def __init__(module):
        super().__init__()
        module.inbox: queue.Queue = queue.Queue()


copy.deepcopy(Policy())
"""
    messages = flagged(code)
    assert len(messages) == 1 and "`self.inbox` holds a thread queue; set at line 9" in messages[0]


def test_location_in_the_right_class_when_two_classes_set_the_same_member():
    code = """\
import copy
import threading
from torch import nn


class Recorder:
    def __init__(self):
        self.lock = None


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
        self.lock = threading.Lock()  # twice: either line is right, the first is named


copy.deepcopy(Policy())
"""
    messages = flagged(code)
    assert len(messages) == 1 and "set at line 14" in messages[0]


@pytest.mark.parametrize(
    "annotation",
    ["Optional[nn.Linear]", "'nn.Linear | None'", "Optional['Literal[1]']", "Annotated[nn.Linear, LockedNet]",
     "Callable[[LockedNet], None]"],
)
def test_annotations_that_admit_no_uncopyable_class_are_not_findings(annotation):
    assert flagged(LOCKED + f"""
import copy
from typing import Annotated, Callable, Literal, Optional


def clone(net: {annotation}):
    return copy.deepcopy(net)
""") == []
