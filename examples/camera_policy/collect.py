"""Collect data with the camera policy on a device that differs from its parameters' device.

RLG001: the collector deep-copies the policy to move it to `policy_device`, and the lock
inside the policy cannot be copied.
"""

from tensordict.nn import TensorDictModule
from torchrl.collectors import Collector
from torchrl.envs import PendulumEnv

from camera_policy.policies import CameraPolicy

env = PendulumEnv()
# PendulumEnv observes the angle "th" and the angular velocity "thdot".
policy = TensorDictModule(CameraPolicy(2, 1), in_keys=["th", "thdot"], out_keys=["action"])
collector = Collector(env, policy, frames_per_batch=64, total_frames=256, policy_device="cpu:0")
for batch in collector:
    print(batch["next", "reward"].mean())
