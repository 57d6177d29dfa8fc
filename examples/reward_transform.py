"""A replay-buffer transform that builds a TensorDict with no device (RLG004).

Downstream device and pinned-memory logic skip device-less TensorDicts, so the buffer below,
created with pin_memory=True, silently stops pinning what this transform produces.
"""

from tensordict import TensorDict, TensorDictBase
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
from torchrl.envs import Transform


class KeepObservationAndReward(Transform):
    """Keeps only what the learner reads, to make samples smaller."""

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return TensorDict(
            {"observation": tensordict["observation"], "reward": tensordict["next", "reward"]},
            batch_size=tensordict.batch_size,
        )


buffer = TensorDictReplayBuffer(
    storage=LazyTensorStorage(10_000),
    batch_size=256,
    pin_memory=True,
    transform=KeepObservationAndReward(),
)
