"""RLG001 against the real libraries: what it flags crashes, what it leaves alone runs.

Each script is checked by the real engine, then executed with torch 2.13 / torchrl 0.14.1 /
tensordict 0.14.3, so the rule's claims (this deep-copies, that does not) are facts of the
installed torchrl rather than of the rule's tables.
"""

from __future__ import annotations

import copy
import pickle
import runpy
import textwrap
import threading

import pytest

pytest.importorskip("torchrl")

from torch import nn  # noqa: E402

from rlguard.testing import check_source  # noqa: E402

HEADER = '''
import threading

import torch
from torch import nn
from tensordict.nn import TensorDictModule
from torchrl.collectors import Collector
from torchrl.envs import PendulumEnv


class LockedNet(nn.Module):
    """A policy network that serialises its forward passes with a lock."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        self.lock = threading.Lock()

    def forward(self, th, thdot):
        with self.lock:
            return self.lin(torch.stack([th, thdot], -1))
'''

COLLECT = '''

env = PendulumEnv()
policy = TensorDictModule(LockedNet(), in_keys=["th", "thdot"], out_keys=["action"])
collector = Collector(env, policy, frames_per_batch=8, total_frames=16{extra})
batches = [batch.shape for batch in collector]
collector.shutdown()
'''


def _run(tmp_path, code: str) -> dict:
    path = tmp_path / "script.py"
    path.write_text(code)
    return runpy.run_path(str(path), run_name="__rlguard_test__")


def _rlg001(code: str, **kwargs) -> list:
    return [f for f in check_source(code, select=["RLG001"], **kwargs) if f.code == "RLG001"]


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_collector_with_policy_device_crashes_and_is_flagged(tmp_path):
    code = HEADER + COLLECT.format(extra=', policy_device="cpu:0"')
    [finding] = _rlg001(code)
    assert finding.line == code.splitlines().index(
        'collector = Collector(env, policy, frames_per_batch=8, total_frames=16, policy_device="cpu:0")') + 1
    assert "`self.lock` holds a thread lock" in finding.full_message
    with pytest.raises(TypeError, match="cannot pickle '_thread.lock' object"):
        _run(tmp_path, code)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_collector_without_policy_device_runs_and_is_not_flagged(tmp_path):
    code = HEADER + COLLECT.format(extra="")
    assert _rlg001(code) == []
    namespace = _run(tmp_path, code)
    assert [tuple(shape) for shape in namespace["batches"]] == [(8,), (8,)]


DOCUMENTED_DEEPCOPY = '''

    def __deepcopy__(self, memo):
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            clone.__dict__[key] = threading.Lock() if key == "lock" else copy.deepcopy(value, memo)
        return clone
'''


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_the_documented_deepcopy_remedy_works(tmp_path):
    """The `__deepcopy__` shown in the rule's fix documentation really makes the collector work."""
    from rlguard.rules.rlg001_uncopyable_policy import UncopyablePolicy

    assert "clone.__dict__[key] = threading.Lock() if key == \"lock\" else copy.deepcopy(value, memo)" in UncopyablePolicy.fix_doc
    code = ("import copy\n" + HEADER + DOCUMENTED_DEEPCOPY
            + COLLECT.format(extra=', policy_device="cpu:0"') + "moved = collector.policy\n")
    assert _rlg001(code) == []
    namespace = _run(tmp_path, code)
    assert len(namespace["batches"]) == 2
    # The collector really copied the policy: a distinct module with its own, fresh lock.
    assert namespace["policy"].module.lock is not None


FACTORY = HEADER + '''

def make_policy():
    return TensorDictModule(LockedNet(), in_keys=["th", "thdot"], out_keys=["action"])


collector = Collector(PendulumEnv(), policy_factory=make_policy, frames_per_batch=8, total_frames=16{extra})
batches = [batch.shape for batch in collector]
collector.shutdown()
'''


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_policy_factory_does_not_avoid_the_single_process_copy(tmp_path):
    """The message says so: a Collector moves the factory's policy to policy_device by deep-copying it too."""
    code = FACTORY.format(extra=', policy_device="cpu:0"')
    [finding] = _rlg001(code)
    assert "(built by `policy_factory`) cannot be deep-copied by `Collector` to move it to `policy_device`" in finding.full_message
    with pytest.raises(TypeError, match="cannot pickle"):
        _run(tmp_path, code)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_policy_factory_without_policy_device_runs(tmp_path):
    code = FACTORY.format(extra="")
    assert _rlg001(code) == []
    assert len(_run(tmp_path, code)["batches"]) == 2


def test_the_marker_silences_the_rule_and_marks_the_class():
    code = HEADER.replace("class LockedNet", "@rlguard.runtime.uncopyable\nclass LockedNet").replace(
        "import threading\n", "import threading\n\nimport rlguard.runtime\n") + COLLECT.format(extra=', policy_device="cpu:0"')
    assert _rlg001(code) == []
    namespace = {}
    exec(compile(HEADER.replace("class LockedNet", "@uncopyable\nclass LockedNet"), "<marked>", "exec"),
         {"uncopyable": __import__("rlguard.runtime", fromlist=["uncopyable"]).uncopyable, "__name__": "marked"}, namespace)
    assert namespace["LockedNet"].__rlguard_uncopyable__ is True


LOSS_HEADER = '''
import threading

import torch
from torch import nn
from torchrl.modules import Actor, QValueActor, ValueOperator
from torchrl.objectives import DDPGLoss, DQNLoss, DiscreteCQLLoss


class LockedNet(nn.Module):
    def __init__(self, inputs, outputs):
        super().__init__()
        self.lin = nn.Linear(inputs, outputs)
        self.lock = threading.Lock()

    def forward(self, *inputs):
        with self.lock:
            return self.lin(torch.cat(inputs, -1))
'''


def test_ddpg_loss_deep_copies_and_is_flagged(tmp_path):
    code = LOSS_HEADER + '''
actor = Actor(nn.Linear(3, 1), in_keys=["observation"])
value = ValueOperator(LockedNet(4, 1), in_keys=["observation", "action"])
loss = DDPGLoss(actor, value)
'''
    assert len(_rlg001(code)) == 1
    with pytest.raises(TypeError, match="cannot pickle"):
        _run(tmp_path, code)


def test_discrete_cql_loss_deep_copies_and_is_flagged(tmp_path):
    code = LOSS_HEADER + '''
qnet = QValueActor(LockedNet(3, 2), in_keys=["observation"], action_space="one-hot")
loss = DiscreteCQLLoss(qnet, action_space="one-hot")
loss.make_value_estimator()
'''
    assert len(_rlg001(code)) == 1
    with pytest.raises(TypeError, match="cannot pickle"):
        _run(tmp_path, code)


def test_dqn_loss_keeps_its_network_but_get_stateful_net_copies(tmp_path):
    base = LOSS_HEADER + '''
qnet = QValueActor(LockedNet(3, 2), in_keys=["observation"], action_space="one-hot")
loss = DQNLoss(qnet, action_space="one-hot")
'''
    assert _rlg001(base) == []
    _run(tmp_path, base)  # no copy, no crash

    no_copy = base + 'net = loss.get_stateful_net("value_network", copy=False)\n'
    assert _rlg001(no_copy) == []
    _run(tmp_path, no_copy)

    copying = base + 'net = loss.get_stateful_net("value_network")\n'
    [finding] = _rlg001(copying)
    assert "cannot be deep-copied by `get_stateful_net` (it copies unless `copy=False`)" in finding.full_message
    with pytest.raises(TypeError, match="cannot pickle"):
        _run(tmp_path, copying)


def test_copy_copy_and_state_dict_copies_run_and_are_not_flagged(tmp_path):
    code = LOSS_HEADER + '''
import copy

net = LockedNet(3, 2)
shallow = copy.copy(net)
weights = copy.deepcopy(net.state_dict())
layer = copy.deepcopy(net.lin)
config = copy.deepcopy({"lr": 3e-4, "frames_per_batch": 1000})
'''
    assert _rlg001(code) == []
    _run(tmp_path, code)


@pytest.mark.parametrize("target", ["0.4", "0.14"])
def test_deepcopy_of_the_module_is_flagged_at_any_target(tmp_path, target):
    code = textwrap.dedent(LOSS_HEADER) + "import copy\ncopy.deepcopy(LockedNet(3, 2))\n"
    assert len(_rlg001(code, target=target)) == 1
    with pytest.raises(TypeError, match="cannot pickle"):
        _run(tmp_path, code)


class _WithDeepcopy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()

    def __deepcopy__(self, memo):
        return type(self)()


class _WithGetstate(_WithDeepcopy):
    def __getstate__(self):
        state = super().__getstate__().copy()
        state.pop("lock")
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self.lock = threading.Lock()


def test_pickling_ignores_deepcopy_but_not_getstate():
    """Why multi-process sites exempt only __getstate__/__reduce__: a __deepcopy__ does not make a class picklable."""
    copy.deepcopy(_WithDeepcopy())
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(_WithDeepcopy())
    clone = pickle.loads(pickle.dumps(_WithGetstate()))
    assert isinstance(clone.lock, type(threading.Lock()))


# torchrl 0.14.1 copies the policy only when a parameter's device differs from torch.device(policy_device):
# torch.device("cpu") != torch.device("cpu", 0), and a CPU parameter's device is torch.device("cpu").
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("extra, copied", [
    (', policy_device="cpu"', False),
    (", device=torch.device('cpu')", False),
    (', policy_device="cpu:0"', True),
    (", policy_device=torch.device('cpu', 0)", True),
])
def test_a_literal_device_is_a_finding_only_where_torchrl_copies(tmp_path, extra, copied):
    code = HEADER + COLLECT.format(extra=extra)
    assert len(_rlg001(code)) == copied
    if copied:
        with pytest.raises(TypeError, match="cannot pickle '_thread.lock' object"):
            _run(tmp_path, code)
    else:
        assert [tuple(shape) for shape in _run(tmp_path, code)["batches"]] == [(8,), (8,)]


def test_the_copy_rule_is_torchrl_s():
    """What the rule reads from torchrl: the collector compares each parameter's device with
    ``policy_device``, and CPU devices with and without an index differ."""
    import inspect

    import torch
    from torchrl.collectors._base import BaseCollector

    source = inspect.getsource(BaseCollector._get_policy_and_device)
    assert "if p.device != policy_device:" in source and "deepcopy(policy)" in source
    assert torch.device("cpu") != torch.device("cpu:0") and nn.Linear(1, 1).weight.device == torch.device("cpu")
    assert torch.zeros(1).to("cpu:0").device == torch.device("cpu")  # a CPU tensor never has an index


@pytest.mark.parametrize("setup, net, device", [
    # A device chosen at run time: cuda on a GPU machine, where the CPU-built policy is copied.
    ('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', "LockedNet()", "device"),
    ('net = LockedNet()\nnet.to("cuda")\n', "net", '"cpu"'),  # moved after it was built: its parameters are elsewhere
    ("", "LockedNet()", '"cuda"'),  # built on the CPU, collected on cuda
    ("", "make_net()", '"cpu"'),  # a factory function may build it anywhere
])
def test_a_device_that_may_differ_from_the_parameters_stays_a_finding(setup, net, device):
    code = HEADER + (f"\n{setup}policy = TensorDictModule({net}, in_keys=['th', 'thdot'], out_keys=['action'])\n"
                     f"collector = Collector(PendulumEnv(), policy, frames_per_batch=8, policy_device={device})\n")
    factory = "\n\ndef make_net():\n    return LockedNet()\n"
    assert len(_rlg001(code + factory)) == 1


def test_a_policy_kept_on_the_device_it_is_collected_on_is_not_a_finding():
    code = HEADER + ("\npolicy = TensorDictModule(LockedNet().to('cuda:1'), in_keys=['th', 'thdot'], out_keys=['action'])\n"
                     "collector = Collector(PendulumEnv(), policy, frames_per_batch=8, policy_device='cuda:1')\n")
    assert _rlg001(code) == []
