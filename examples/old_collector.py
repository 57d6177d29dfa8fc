"""A script written for torchrl < 0.11: the old collector name is gone since 0.13 (RLG006)."""

from torchrl.collectors import SyncDataCollector
from torchrl.envs import PendulumEnv

env = PendulumEnv()
collector = SyncDataCollector(env, None, frames_per_batch=32, total_frames=64)
for batch in collector:
    print(batch.shape)
