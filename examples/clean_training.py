"""Correct code: nothing here should be flagged."""

import copy
import json

import torch
from torch import nn
from torchrl.collectors import Collector
from torchrl.envs import PendulumEnv
from torchrl.modules import LSTMModule, set_recurrent_mode

policy_net = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 1))
target_net = copy.deepcopy(policy_net)  # a lock-free module copies fine

lstm = LSTMModule(input_size=3, hidden_size=8, in_key="observation", out_key="embed")
with set_recurrent_mode(True):
    pass

metrics = {"reward": torch.tensor(1.5).item(), "steps": 100}
print(json.dumps(metrics))

collector = Collector(PendulumEnv(), None, frames_per_batch=32, total_frames=64)
