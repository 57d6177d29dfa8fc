"""A policy that reads a camera on a background thread, guarded by a lock."""

import threading

import torch
from torch import nn


class CameraPolicy(nn.Module):
    def __init__(self, obs_dim: int, action_dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, action_dim))
        self.frame_lock = threading.Lock()  # cannot be deep-copied
        self.latest_frame = None

    def forward(self, angle: torch.Tensor, velocity: torch.Tensor) -> torch.Tensor:
        with self.frame_lock:
            return self.net(torch.stack([angle, velocity], dim=-1))
