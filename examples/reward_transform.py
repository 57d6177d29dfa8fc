"""A custom transform that builds a TensorDict with no device (RLG004).

Downstream device and pinned-memory logic skip device-less TensorDicts, so a replay buffer
with pin_memory=True silently stops pinning what this transform produces.
"""

from tensordict import TensorDict, TensorDictBase
from torchrl.envs import Transform


class RewardStats(Transform):
    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        stats = TensorDict({"reward": tensordict["reward"]}, batch_size=tensordict.batch_size)
        return tensordict.update(stats)
