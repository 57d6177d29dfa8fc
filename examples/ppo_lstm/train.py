"""A recurrent PPO-style rollout that still uses the removed set_recurrent_mode() method (RLG002)."""

import torch
from tensordict import TensorDict
from torchrl.modules import LSTMModule

lstm = LSTMModule(input_size=3, hidden_size=16, in_key="observation", out_key="embed")
batch = TensorDict(
    {
        "observation": torch.randn(4, 10, 3),
        "is_init": torch.zeros(4, 10, 1, dtype=torch.bool),
    },
    batch_size=[4, 10],
)

lstm.set_recurrent_mode(True)
# Process whole trajectories at once while training.
out = lstm(batch)
lstm.set_recurrent_mode(False)
print(out["embed"].shape)
