"""What functions and methods of the project return, read by every rule through the engine.

The engine types each ``return`` in its function's own scope (``FunctionFacts.typed``) and the index
follows factories through other files, other factories and the MRO of methods. Unknown stays
unknown: a return that cannot be typed, returns that differ, a body that may end without returning,
a generator, an unknown decorator, recursion and cycles give no finding.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import textwrap

import pytest
import torch

from rlguard.testing import check_source


def findings(code: str, source: str, files: dict[str, str] | None = None) -> list[str]:
    found = check_source(textwrap.dedent(source), select=[code], extra_files=files)
    return [f.full_message for f in found if f.code == code]


# ----- RLG002: a recurrent module built by a factory -----

ENCODERS = '''\
import functools

from torch import nn
from torchrl.modules import LSTMModule


def make_encoder(hidden=4):
    encoder = LSTMModule(input_size=3, hidden_size=hidden, in_key="obs", out_key="h")
    return encoder


def make_default():
    return make_encoder()


def make_either(recurrent):
    if recurrent:
        return LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h")
    return nn.Linear(3, 4)


def make_maybe(recurrent):
    if recurrent:
        return LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h")


def make_plain():
    return nn.GRU(3, 4)


def make_forever():
    return make_forever()


def make_ping():
    return make_pong()


def make_pong():
    return make_ping()


def make_many():
    yield LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h")


@functools.lru_cache
def make_cached():
    return LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h")


def traced(function):
    return function


@traced
def make_traced():
    return LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h")


class Builder:
    def encoder(self):
        return make_encoder()

    def plain(self):
        return nn.Linear(3, 4)


class PlainBuilder(Builder):
    def encoder(self):
        return nn.Linear(3, 4)
'''

FILES = {"pkg/__init__.py": "", "pkg/encoders.py": ENCODERS}
USE = "from pkg.encoders import {name}\n\nlstm = {name}()\nlstm.set_recurrent_mode(True)\n"


@pytest.mark.parametrize("name", ["make_encoder", "make_default", "make_cached"])
def test_a_factory_in_another_file_gives_its_recurrent_module(name):
    (message,) = findings("RLG002", USE.format(name=name), FILES)
    assert "raises RuntimeError" in message and f"`{name}` returns a `LSTMModule`" in message


@pytest.mark.parametrize("name", ["make_either", "make_maybe", "make_plain", "make_forever", "make_ping",
                                  "make_many", "make_traced"])
def test_factories_whose_result_is_unknown_or_not_recurrent_are_not_flagged(name):
    assert findings("RLG002", USE.format(name=name), FILES) == []


def test_a_method_that_returns_a_factory_result_is_followed_through_the_mro():
    source = ("from pkg.encoders import Builder, PlainBuilder\n\n"
              "class Mine(Builder):\n    def run(self):\n        core = self.encoder()\n"
              "        core.set_recurrent_mode(True)\n")
    assert len(findings("RLG002", source, FILES)) == 1
    overridden = source.replace("class Mine(Builder)", "class Mine(PlainBuilder)")
    assert findings("RLG002", overridden, FILES) == []
    plain = source.replace("self.encoder()", "self.plain()")
    assert findings("RLG002", plain, FILES) == []


def test_a_member_built_by_a_factory_in_another_file():
    source = ("from pkg.encoders import make_encoder, make_plain\n\n"
              "class Agent:\n    def __init__(self):\n        self.core = make_encoder()\n\n"
              "    def act(self):\n        self.core.set_recurrent_mode(True)\n")
    assert len(findings("RLG002", source, FILES)) == 1
    assert findings("RLG002", source.replace("self.core = make_encoder()", "self.core = make_plain()"), FILES) == []


def test_the_flagged_factory_call_crashes_the_installed_torchrl(tmp_path, monkeypatch):
    for relative, text in {**FILES, "script.py": USE.format(name="make_encoder")}.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match="removed in v0.8"):
        runpy.run_path(str(tmp_path / "script.py"))
    sys.modules.pop("pkg.encoders", None)
    sys.modules.pop("pkg", None)


# ----- members from annotated parameters (RLG002, RLG003) -----

SUBCLASS = '''\
from torchrl.modules import LSTMModule


class Encoder(LSTMModule):
    pass


class OwnModes(LSTMModule):
    def set_recurrent_mode(self, mode=True):
        return self
'''

HOLDER = '''\
from torch import nn

from pkg.layers import Encoder, OwnModes


class Holder(nn.Module):
    def __init__(self, core: {annotation}):
        super().__init__()
        self.core = core

    def go(self):
        self.core.set_recurrent_mode(True)
'''


@pytest.mark.parametrize(("annotation", "flag"), [
    ("Encoder", True), ('"Encoder"', True), ("Optional[Encoder]", True), ("OwnModes", False), ("nn.Module", False),
    ("Encoder | nn.Linear", False),
])
def test_a_member_set_from_an_annotated_parameter(annotation, flag):
    files = {"pkg/__init__.py": "", "pkg/layers.py": SUBCLASS}
    source = "from typing import Optional\n" + HOLDER.format(annotation=annotation)
    assert len(findings("RLG002", source, files)) == (1 if flag else 0)


@pytest.mark.parametrize(("annotation", "flag"), [("torch.Tensor", True), ("Tensor", True), ("int", False),
                                                  ("Optional[torch.Tensor]", False)])
def test_rlg003_member_set_from_an_annotated_parameter(annotation, flag):
    source = f'''\
        import json
        from typing import Optional

        import torch
        from torch import Tensor


        class Stats:
            def __init__(self, buf: {annotation}):
                self.buf = buf

            def dump(self):
                return json.dumps({{"buf": self.buf}})
        '''
    assert len(findings("RLG003", source)) == (1 if flag else 0)


# ----- RLG003: tensors returned by functions and methods -----

METRICS = '''\
import torch


def stats(net):
    return {"w": torch.linalg.norm(net.weight), "n": 3}


def total(rewards):
    reward = torch.stack(rewards).sum()
    return reward


def summed(rewards):
    return total(rewards)


def plain(rewards):
    return total(rewards).item()


def either(rewards, scalar):
    if scalar:
        return total(rewards).item()
    return total(rewards)


def maybe(rewards):
    if rewards:
        return total(rewards)


def countdown(n):
    return countdown(n - 1) if n else 0


def ping(n):
    return pong(n)


def pong(n):
    return ping(n)


def steps(rewards):
    for reward in rewards:
        yield torch.tensor(reward)
'''


@pytest.mark.parametrize(("call", "part"), [
    ("stats(net)", "`stats(net)` holds tensors"),
    ("total(rewards)", "`total(rewards)` is a tensor"),
    ("summed(rewards)", "`summed(rewards)` is a tensor"),
    ('{"reward": total(rewards)}', "`total(rewards)` is a tensor"),
])
def test_tensors_returned_by_a_function_in_another_file(call, part):
    files = {"metrics.py": METRICS}
    source = f"import json\n\nfrom metrics import stats, total, summed\n\nprint(json.dumps({call}))\n"
    (message,) = findings("RLG003", source, files)
    assert part in message


@pytest.mark.parametrize("call", ["plain(rewards)", "either(rewards, True)", "maybe(rewards)", "countdown(3)",
                                  "ping(1)", "list(steps(rewards))", "stats"])
def test_returns_that_are_plain_unknown_or_differ_are_not_flagged(call):
    files = {"metrics.py": METRICS}
    source = ("import json\n\nfrom metrics import countdown, either, maybe, ping, plain, stats, steps\n\n"
              f"print(json.dumps({call}))\n")
    assert findings("RLG003", source, files) == []


def test_a_function_of_the_same_file_defined_after_its_use():
    source = '''\
        import json

        import torch


        def save(net, path):
            with open(path, "w") as f:
                json.dump(weights(net), f)


        def weights(net):
            return torch.cat([p.flatten() for p in net.parameters()])
        '''
    (message,) = findings("RLG003", source)
    assert "`weights(net)` is a tensor" in message


METHODS = '''\
import json

import torch


class Agent:
    def weights(self):
        return torch.zeros(3)

    def settings(self):
        return {"lr": 0.1}

    def dump(self):
        return json.dumps({"w": self.weights(), "s": self.settings()})
'''


def test_a_method_returning_a_tensor():
    (message,) = findings("RLG003", METHODS)
    assert "`self.weights()` is a tensor" in message and "settings" not in message


def test_a_method_of_a_module_subclass_of_the_same_file():
    source = METHODS.replace("class Agent:", "class Agent(torch.nn.Module):").split("    def dump(self):")[0] + (
        "\n\nagent = Agent()\nprint(json.dumps(agent.weights()), json.dumps(agent.settings()))\n")
    (message,) = findings("RLG003", source)
    assert "`agent.weights()` is a tensor" in message


def test_a_method_overridden_with_a_plain_value_is_not_flagged():
    source = METHODS.split("    def dump(self):")[0] + textwrap.dedent('''\


        class Quiet(Agent):
            def weights(self):
                return 0.0

            def dump(self):
                return json.dumps({"w": self.weights()})
        ''')
    assert findings("RLG003", source) == []


def test_a_method_of_an_instance_built_in_another_file():
    files = {"agents.py": METHODS}
    source = "import json\n\nfrom agents import Agent\n\nagent = Agent()\nprint(json.dumps(agent.weights()))\n"
    (message,) = findings("RLG003", source, files)
    assert "`agent.weights()` is a tensor" in message
    assert findings("RLG003", source.replace("agent.weights()", "agent.settings()"), files) == []


def test_a_member_set_by_a_factory_of_another_file():
    files = {"metrics.py": METRICS}
    source = ("import json\n\nfrom metrics import plain, total\n\n\nclass Run:\n"
              "    def __init__(self, rewards):\n        self.best = total(rewards)\n\n"
              "    def save(self):\n        return json.dumps({'best': self.best})\n")
    (message,) = findings("RLG003", source, files)
    assert "`self.best` is a tensor" in message
    assert findings("RLG003", source.replace("total(rewards)", "plain(rewards)"), files) == []


def test_stdlib_and_unknown_library_calls_stay_unknown():
    source = ("import json\nimport statistics\n\nimport numpy as np\n\n"
              "print(json.dumps({'a': statistics.mean([1, 2]), 'b': np.mean([1.0])}))\n")
    assert findings("RLG003", source) == []


def test_the_flagged_payloads_raise_typeerror_and_the_near_misses_encode(tmp_path, monkeypatch):
    (tmp_path / "metrics.py").write_text(METRICS)
    monkeypatch.syspath_prepend(str(tmp_path))
    metrics = runpy.run_path(str(tmp_path / "metrics.py"))
    rewards = [torch.tensor(1.0), torch.tensor(2.0)]
    net = torch.nn.Linear(2, 2)
    for payload in (metrics["stats"](net), metrics["total"](rewards), metrics["summed"](rewards)):
        with pytest.raises(TypeError, match="not JSON serializable"):
            json.dumps(payload)
    assert json.loads(json.dumps(metrics["plain"](rewards))) == 3.0
    agent = runpy.run_path(str(tmp_path / "agents.py")) if os.path.exists(tmp_path / "agents.py") else None
    assert agent is None
    (tmp_path / "agents.py").write_text(METHODS)
    agents = runpy.run_path(str(tmp_path / "agents.py"))
    with pytest.raises(TypeError, match="not JSON serializable"):
        agents["Agent"]().dump()


# ----- RLG001: methods as factories -----

LOCKED = '''\
        import threading

        from torch import nn


        class Locked(nn.Module):
            def __init__(self):
                super().__init__()
                self.lock = threading.Lock()
'''

def test_rlg001_a_policy_built_by_a_method_is_followed():
    source = '''\
        import copy
''' + LOCKED + '''

        class Experiment:
            def build(self):
                return Locked()

            def backup(self):
                return copy.deepcopy(self.build())

            def plain(self):
                return nn.Linear(2, 2)

            def backup_plain(self):
                return copy.deepcopy(self.plain())
        '''
    (message,) = findings("RLG001", source)
    assert "`Locked` cannot be deep-copied" in message and "`self.lock` holds a thread lock" in message


def test_rlg001_a_bound_method_given_as_policy_factory():
    source = '''\
        from torchrl.collectors import Collector
''' + LOCKED + '''

        class Experiment:
            def make_policy(self):
                return Locked()

            def make_plain(self):
                return nn.Linear(2, 2)

            def collect(self, env):
                return Collector(env, policy_factory=self.{factory}, frames_per_batch=1, total_frames=1,
                                 policy_device="cuda:0")
        '''
    (message,) = findings("RLG001", source.replace("{factory}", "make_policy"))
    assert "(built by `policy_factory`)" in message and "`self.lock` holds a thread lock" in message
    assert findings("RLG001", source.replace("{factory}", "make_plain")) == []
