"""RLG003 through the engine's inference (issue 12, section 4): what torch calls, modules, losses,
collectors, environments, replay buffers and TensorDicts give, in flagged and near-miss form."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

from rlguard.testing import check_source


def findings(source: str, **kwargs):
    return [f for f in check_source(textwrap.dedent(source), select=["RLG003"], **kwargs) if f.code == "RLG003"]


HEADER = """
import json
from typing import Dict, List, Optional

import torch
import torch.nn as nn
from tensordict import TensorDict, TensorDictBase
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer, TensorDictReplayBuffer
from torchrl.envs import PendulumEnv
from torchrl.objectives import ClipPPOLoss
"""

FLAGGED = {
    "clip_grad_norm_": ("""
        def step(model, loss):
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            print(json.dumps({"grad_norm": norm}))
    """, "`norm`", "is a tensor"),
    "method chain": ("""
        x = torch.randn(8)
        print(json.dumps({"energy": x.pow(2).mean()}))
    """, "`x.pow(2).mean()`", "is a tensor"),
    "max without dim": ("""
        t = torch.randn(8)
        print(json.dumps({"best": t.max()}))
    """, "`t.max()`", "is a tensor"),
    "stack": ("""
        def report(rewards):
            print(json.dumps({"rewards": torch.stack(rewards)}))
    """, "`torch.stack(rewards)`", "is a tensor"),
    "torch module call": ("""
        head = nn.Linear(4, 1)
        features = torch.randn(2, 4)
        print(json.dumps({"value": head(features).mean()}))
    """, "`head(features).mean()`", "is a tensor"),
    "project module call": ("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(4, 2)

            def forward(self, x):
                return self.body(x)


        net = Net()
        print(json.dumps({"logits": net(torch.zeros(4))}))
    """, "`net(torch.zeros(4))`", "is a tensor"),  # through ``forward``: ``nn.Linear`` gives a tensor
    "loss call": ("""
        def log_losses(actor, critic, batch):
            loss_module = ClipPPOLoss(actor, critic)
            losses = loss_module(batch)
            print(json.dumps({"objective": losses["loss_objective"]}))
    """, "`losses[\"loss_objective\"]`", "is a tensor or holds tensors"),
    "collector iteration": ("""
        def train(env, policy):
            collector = Collector(env, policy, frames_per_batch=10, total_frames=100)
            for data in collector:
                print(json.dumps({"reward": data["next", "reward"].sum()}))
    """, "`data[\"next\", \"reward\"].sum()`", "is a tensor or holds tensors"),
    "rollout": ("""
        env = PendulumEnv()
        rollout = env.rollout(3)
        print(json.dumps({"reward": rollout["next", "reward"].mean()}))
    """, "`rollout[\"next\", \"reward\"].mean()`", "is a tensor or holds tensors"),
    "reset": ("""
        env = PendulumEnv()
        print(json.dumps(env.reset()))
    """, "`env.reset()`", "is a TensorDict"),
    "replay buffer sample": ("""
        rb = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=4)
        batch = rb.sample()
        print(json.dumps({"obs": batch["observation"].float()}))
    """, "`batch[\"observation\"].float()`", "is a tensor or holds tensors"),
    "TensorDict(...)": ("""
        td = TensorDict({"a": torch.zeros(3)}, batch_size=[3])
        print(json.dumps({"td": td.clone().to("cpu")}))
    """, "`td.clone().to(\"cpu\")`", "is a TensorDict"),
    "to_dict": ("""
        td = TensorDict.from_dict({"a": torch.zeros(3)})
        print(json.dumps(td.to_dict()))
    """, "`td.to_dict()`", "holds many tensors"),
    "list of parameters": ("""
        net = nn.Linear(2, 2)
        print(json.dumps(list(net.parameters())))
    """, "`list(net.parameters())`", "holds many tensors"),
    "comprehension over parameters": ("""
        net = nn.Linear(2, 2)
        print(json.dumps([p for p in net.parameters()]))
    """, "`p`", "is a tensor or holds tensors"),
    "list filled by append": ("""
        def train(batches, model):
            losses = []
            for batch in batches:
                loss = torch.nn.functional.mse_loss(model(batch), batch)
                losses.append(loss.detach())
            with open("losses.json", "w") as f:
                json.dump(losses, f)
    """, "`loss.detach()` (in `losses`)", "is a tensor"),
    "annotated container": ("""
        def save(history: Dict[str, List[torch.Tensor]], path):
            with open(path, "w") as f:
                json.dump(history, f)
    """, "`history`", "holds many tensors"),
    "annotated TensorDict parameter": ("""
        def log(td: TensorDictBase):
            print(json.dumps({"obs": td["observation"].clone()}))
    """, "`td[\"observation\"].clone()`", "is a tensor or holds tensors"),
}


@pytest.mark.parametrize("name", list(FLAGGED))
def test_flagged(name):
    body, part, says = FLAGGED[name]
    (finding,) = findings(HEADER + textwrap.dedent(body))
    assert f"{part} {says}" in finding.full_message, finding.full_message


NEAR_MISSES = {
    "item of clip_grad_norm_": """
        def step(model):
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
            print(json.dumps({"grad_norm": norm}))
    """,
    "item of a method chain": """
        x = torch.randn(8)
        print(json.dumps({"energy": x.pow(2).mean().item(), "best": x.max().tolist()}))
    """,
    "item of a loss entry": """
        def log_losses(actor, critic, batch):
            losses = ClipPPOLoss(actor, critic)(batch)
            print(json.dumps({"objective": losses["loss_objective"].item()}))
    """,
    "item of a collected reward": """
        def train(env, policy):
            for data in Collector(env, policy, frames_per_batch=10, total_frames=100):
                print(json.dumps({"reward": data["next", "reward"].sum().item(), "frames": data.numel()}))
    """,
    "keys of a TensorDict": """
        td = TensorDict({"a": torch.zeros(3)}, batch_size=[3])
        for key in td:
            print(json.dumps({"key": key}))
    """,
    "an unknown factory's module": """
        from mylib import make_net

        net = make_net()
        print(json.dumps({"out": net(torch.zeros(3))}))
    """,
    "a project module without tensor arguments": """
        class Net(nn.Module):
            def forward(self, name):
                return len(name)


        net = Net()
        print(json.dumps({"out": net("policy")}))
    """,
    "a project module that defines __call__": """
        class Scorer(nn.Module):
            def __call__(self, x):
                return float(x.sum())


        print(json.dumps({"score": Scorer()(torch.zeros(3))}))
    """,
    "appended plain values": """
        def train(batches, model):
            losses = []
            for batch in batches:
                losses.append(torch.nn.functional.mse_loss(model(batch), batch).item())
            print(json.dumps(losses))
    """,
    "annotated plain container": """
        def save(history: Dict[str, List[int]], best: Optional[torch.Tensor]):
            print(json.dumps(history))
            print(json.dumps({"best": best}))
    """,
    "plain ReplayBuffer sample": """
        rb = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=4)
        print(json.dumps(rb.sample()))
    """,
    "an entry of a TensorDict may be non-tensor data": """
        def log(td: TensorDictBase):
            print(json.dumps({"prompt": td["text"], "history": td.get("history")}))
    """,
    "shape and numel": """
        env = PendulumEnv()
        rollout = env.rollout(3)
        print(json.dumps({"shape": list(rollout.shape), "n": rollout.numel(), "keys": list(rollout.keys())}))
    """,
}


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_near_miss(name):
    assert findings(HEADER + textwrap.dedent(NEAR_MISSES[name])) == []


# ----- flagged code crashes against the real libraries -----

CRASHES = {
    "rollout": FLAGGED["rollout"][0],
    "torch module call": FLAGGED["torch module call"][0],
    "method chain": FLAGGED["method chain"][0],
}


@pytest.mark.parametrize("name", list(CRASHES))
def test_flagged_code_raises_type_error_when_run(name):
    pytest.importorskip("torchrl")
    source = HEADER + textwrap.dedent(CRASHES[name])
    assert findings(source)
    with tempfile.TemporaryDirectory() as root:
        script = os.path.join(root, "script.py")
        with open(script, "w") as f:
            f.write(source)
        result = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "TypeError: Object of type Tensor is not JSON serializable" in result.stderr, result.stderr[-2000:]


def test_near_miss_runs_and_encodes():
    pytest.importorskip("torchrl")
    source = HEADER + textwrap.dedent(NEAR_MISSES["shape and numel"])
    with tempfile.TemporaryDirectory() as root:
        script = os.path.join(root, "script.py")
        with open(script, "w") as f:
            f.write(source)
        result = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["n"] == 3


def test_non_tensor_entries_encode_so_a_bare_entry_stays_unknown():
    torch = pytest.importorskip("torch")
    from tensordict import NonTensorData, TensorDict

    td = TensorDict({"text": NonTensorData("hi"), "x": torch.zeros(1)}, [])
    assert json.dumps({"prompt": td["text"]}) == '{"prompt": "hi"}'
    with pytest.raises(TypeError):
        json.dumps({"x": td["x"].clone()})
