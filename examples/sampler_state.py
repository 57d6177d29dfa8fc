"""Save a prioritized sampler's metadata as JSON: the tensors in it make json.dump raise (RLG003)."""

import json

import torch

priorities = torch.rand(128)
metadata = {
    "max_priority": priorities.max(),
    "capacity": 128,
    "alpha": 0.7,
}
with open("sampler_meta.json", "w") as handle:
    json.dump(metadata, handle)
