"""RLG001 through factories: functions, in this file or another, that build the policy.

A policy is usually made by a ``make_policy()`` that lives in ``models.py`` or ``utils.py``:
the index records what each module-level function returns (the calls that build it, with
their arguments), and the rule reads that as it reads an expression in the asking file.
"""

from __future__ import annotations

import runpy
import textwrap

import pytest

from rlguard.testing import check_source

MODELS = '''\
import threading

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from rlguard.runtime import uncopyable


class PlainNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)

    def forward(self, th, thdot):
        return self.lin(torch.stack([th, thdot], -1))


class LockedNet(PlainNet):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()

    def forward(self, th, thdot):
        with self.lock:
            return super().forward(th, thdot)


def make_net(device="cpu"):
    net = LockedNet()
    net = net.to(device)
    return net


def make_policy():
    return TensorDictModule(LockedNet(), in_keys=["th", "thdot"], out_keys=["action"])


def make_policy_from_net():
    return TensorDictModule(module=make_net(), in_keys=["th", "thdot"], out_keys=["action"])


def make_plain():
    return TensorDictModule(PlainNet(), in_keys=["th", "thdot"], out_keys=["action"])


def make_marked():
    net = LockedNet()
    uncopyable(net)
    return TensorDictModule(net, in_keys=["th", "thdot"], out_keys=["action"])


def make_marked_net():
    net = LockedNet()
    uncopyable(net)
    return net


def make_either(locked):
    if locked:
        return LockedNet()
    return PlainNet()


def make_list():
    return [LockedNet()]


def make_models():
    actor = TensorDictModule(LockedNet(), in_keys=["th", "thdot"], out_keys=["action"])
    critic = TensorDictModule(PlainNet(), in_keys=["th", "thdot"], out_keys=["value"])
    return actor, critic


def make_actor():
    actor, _ = make_models()
    return actor


def make_critic():
    _, critic = make_models()
    return critic


def make_spread():
    return (*make_list(), PlainNet())


class Holder:
    def build(self):
        return LockedNet()
'''

LOCK_LINE = MODELS.splitlines().index("        self.lock = threading.Lock()") + 1


def findings(code: str, files: dict[str, str] | None = None):
    found = check_source(textwrap.dedent(code), select=["RLG001"], extra_files={"models.py": MODELS, **(files or {})})
    return [f for f in found if f.code == "RLG001"]


@pytest.mark.parametrize(
    "policy",
    [
        "make_net()",
        "make_net('cpu')",
        "make_policy()",
        "make_policy_from_net()",
        "make_either(True)",  # one of its returns cannot be copied
        "models.make_policy()",
    ],
)
def test_a_factory_in_another_file_is_followed(policy):
    [finding] = findings(f"""
        import models
        from models import make_either, make_net, make_policy, make_policy_from_net
        from torchrl.collectors import Collector

        policy = {policy}
        collector = Collector(env, policy, frames_per_batch=8, policy_device="cuda:0")
    """)
    assert (f"`LockedNet` cannot be deep-copied by `Collector` to move it to `policy_device`: `self.lock` holds a thread lock; "
            f"set at models.py:{LOCK_LINE}") in finding.full_message


@pytest.mark.parametrize(
    "policy",
    [
        "make_plain()",  # copies fine
        "make_marked()",  # marked uncopyable before it is wrapped
        "make_marked_net()",  # marked uncopyable before it is returned
        "make_list()[0]",  # not a call of the factory
        "Holder().build()",  # a method, not a module-level function
        "unknown_factory()",
    ],
)
def test_factories_that_build_no_uncopyable_policy_are_not_findings(policy):
    assert findings(f"""
        from models import Holder, make_list, make_marked, make_marked_net, make_plain
        from elsewhere import unknown_factory
        from torchrl.collectors import Collector

        collector = Collector(env, {policy}, frames_per_batch=8, policy_device="cuda:0")
    """) == []


@pytest.mark.parametrize(
    "unpacking, policy, expected",
    [
        ("actor, critic = make_models()", "actor", 1),
        ("actor, critic = make_models()", "critic", 0),
        ("(actor, critic) = models.make_models()", "actor", 1),
        ("[actor, critic] = make_models()", "actor", 1),
        ("actor = make_actor()", "actor", 1),  # a factory returning an item of another's tuple
        ("critic = make_critic()", "critic", 0),
        ("actor, critic = LockedNet(), PlainNet()", "actor", 1),
        ("actor, critic = LockedNet(), PlainNet()", "critic", 0),
        ("actor, *rest = make_models()", "actor", 0),  # positions after a starred name are unknown
        ("first, second = make_spread()", "second", 0),
        ("pair = make_models()", "pair", 0),  # the tuple itself is no policy
    ],
)
def test_factories_returning_several_models(unpacking, policy, expected):
    found = findings(f"""
        import models
        from models import LockedNet, PlainNet, make_actor, make_critic, make_models, make_spread
        from torchrl.collectors import Collector

        {unpacking}
        collector = Collector(env, {policy}, frames_per_batch=8, policy_device="cuda:0")
    """)
    assert len(found) == expected
    if expected:
        assert "`LockedNet` cannot be deep-copied by `Collector` to move it to `policy_device`: `self.lock` holds a thread lock" \
            in found[0].full_message


def test_multi_process_collector_given_an_unpacked_actor_is_flagged_for_pickling():
    [finding] = findings("""
        from models import make_models
        from torchrl.collectors import MultiSyncCollector

        actor, critic = make_models()
        collector = MultiSyncCollector([make_env] * 2, actor, frames_per_batch=8)
    """)
    assert "`LockedNet` cannot be pickled to `MultiSyncCollector`'s workers" in finding.full_message


def test_a_factory_of_the_same_file_is_followed_wherever_it_is_defined():
    code = """
        import threading
        from torch import nn
        from torchrl.collectors import Collector


        def main():
            collector = Collector(env, build(), frames_per_batch=8, policy_device="cuda:0")


        def build():
            return Locked()


        class Locked(nn.Module):
            def __init__(self):
                super().__init__()
                self.lock = threading.Lock()
    """
    [finding] = findings(code)
    assert finding.line == 8 and "`Locked` cannot be deep-copied by `Collector`" in finding.full_message


def test_a_nested_function_of_the_same_name_is_not_the_factory():
    assert findings("""
        from torchrl.collectors import Collector
        from models import PlainNet


        def make_net():
            return PlainNet()


        def main():
            def make_net():
                return LockedNet()

            collector = Collector(env, make_net(), frames_per_batch=8, policy_device="cuda:0")
    """) == []


@pytest.mark.parametrize("factory", ["make_policy", "models.make_net", "LockedNet"])
def test_policy_factory_from_another_file(factory):
    [finding] = findings(f"""
        import models
        from models import LockedNet, make_policy
        from torchrl.collectors import Collector

        collector = Collector(env, policy_factory={factory}, frames_per_batch=8, policy_device="cuda:0")
    """)
    assert "(built by `policy_factory`) cannot be deep-copied by `Collector` to move it to `policy_device`" in finding.full_message


def test_factories_calling_each_other_in_a_cycle_end():
    assert findings("""
        from torchrl.collectors import Collector


        def ping(n):
            return pong(n - 1)


        def pong(n):
            return ping(n - 1)


        collector = Collector(env, ping(3), frames_per_batch=8, policy_device="cuda:0")
    """) == []


def test_the_flagged_factory_crashes_torchrl_and_the_plain_one_collects(tmp_path):
    pytest.importorskip("torchrl")
    (tmp_path / "models.py").write_text(MODELS)
    script = textwrap.dedent("""
        from torchrl.collectors import Collector
        from torchrl.envs import PendulumEnv

        from models import {factory}

        collector = Collector(PendulumEnv(), {factory}(), frames_per_batch=4, total_frames=8, policy_device="cpu:0")
        shapes = [batch.shape for batch in collector]
        collector.shutdown()
    """)
    crashing, plain = (script.format(factory=name) for name in ("make_policy", "make_plain"))
    assert findings(crashing) and not findings(plain)
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        (tmp_path / "crashing.py").write_text(crashing)
        with pytest.raises(TypeError, match="lock"):
            runpy.run_path(str(tmp_path / "crashing.py"))
        (tmp_path / "plain.py").write_text(plain)
        assert len(runpy.run_path(str(tmp_path / "plain.py"))["shapes"]) == 2
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("models", None)
