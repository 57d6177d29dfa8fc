"""Which library classes are transforms, replay buffers, trainers, recurrent modules and TensorDicts comes
from the API model (generated from the installed libraries), not from hand lists: classes the old lists
lacked are recognised, and a user's class of the same name is not."""

from __future__ import annotations

import importlib
import textwrap

import pytest

from rlguard.rules.data import (
    is_recurrent_module,
    is_replay_buffer,
    is_tensordict_class,
    is_tensordict_type,
    is_torchrl_trainer,
    is_torchrl_transform,
    torchrl_transform_names,
)
from rlguard.engine.apimodel import class_names
from rlguard.testing import check_source

torch = pytest.importorskip("torch")
envs = pytest.importorskip("torchrl.envs")
transforms = pytest.importorskip("torchrl.envs.transforms")


def rlg004(source: str, **kwargs):
    return [f for f in check_source(textwrap.dedent(source), select=["RLG004"], **kwargs) if f.code == "RLG004"]


def _exported(modules: tuple[str, ...], base: type) -> set[str]:
    """Names of the subclasses of ``base`` the modules export, read from the real libraries."""
    found = set()
    for name in modules:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", None) or dir(module):
            value = getattr(module, attr, None)
            if isinstance(value, type) and issubclass(value, base):
                found.add(attr)
    return found


# ----- the generated sets are the libraries' own -----

def test_transform_names_are_exactly_the_transforms_torchrl_exports():
    assert torchrl_transform_names() == _exported(("torchrl.envs", "torchrl.envs.transforms"), transforms.Transform)


def test_replay_buffer_names_are_exactly_the_buffers_torchrl_data_exports():
    from torchrl.data import ReplayBuffer

    exported = _exported(("torchrl.data", "torchrl.data.datasets"), ReplayBuffer)
    assert class_names()["replay_buffer"] == exported


def test_trainer_names_are_exactly_the_trainers_torchrl_exports():
    from torchrl.trainers import Trainer

    exported = _exported(("torchrl.trainers", "torchrl.trainers.algorithms"), Trainer)
    assert class_names()["trainer"] == exported
    assert all(is_torchrl_trainer(f"torchrl.trainers.algorithms.{name}") for name in exported)


@pytest.mark.parametrize("qualname, expected", [
    ("torchrl.modules.LSTMModule", True),
    ("torchrl.modules.tensordict_module.GRUModule", True),  # an intermediate package's re-export
    ("torchrl.modules.tensordict_module.rnn.LSTMModule", True),
    ("torchrl.modules.LSTM", False),  # the plain nn.Module, which has no such method
    ("my_project.nets.LSTMModule", False),
    ("tensordict.nn.TensorDictModule", False),
])
def test_recurrent_modules(qualname, expected):
    assert is_recurrent_module(qualname) is expected


@pytest.mark.parametrize("qualname, constructor, annotation", [
    ("tensordict.TensorDict", True, True),
    ("tensordict.tensordict.TensorDict", True, True),  # the old module path tensordict still serves
    ("tensordict._td.TensorDict", True, True),
    ("tensordict.TensorDictBase", False, True),
    ("tensordict.LazyStackedTensorDict", False, True),
    ("tensordict.nn.TensorDictModule", False, False),
    ("my_lib.TensorDict", False, False),
])
def test_tensordict_classes(qualname, constructor, annotation):
    assert (is_tensordict_class(qualname), is_tensordict_type(qualname)) == (constructor, annotation)


def test_a_name_outside_the_package_is_never_a_library_class():
    assert is_torchrl_transform("torchrl.envs.transforms.StepCounter")
    assert not is_torchrl_transform("my_project.envs.StepCounter")
    assert not is_replay_buffer("my_project.data.ReplayBuffer")
    assert not is_torchrl_trainer("my_project.trainers.PPOTrainer")


# ----- a transform the hand list lacked -----

TASK_SAMPLER = """\
    from tensordict import TensorDict
    {import_line}


    class WeightedTasks(MicroDuckTaskSampler):
        def _call(self, next_tensordict):
            return TensorDict({{"task": next_tensordict["task_id"]}}, batch_size=next_tensordict.batch_size)
"""


def test_a_torchrl_transform_the_hand_list_lacked_is_recognised():
    assert issubclass(envs.MicroDuckTaskSampler, transforms.Transform)  # what makes the finding true
    found = rlg004(TASK_SAMPLER.format(import_line="from torchrl.envs import MicroDuckTaskSampler"))
    assert [f.line for f in found] == [7]


def test_a_user_class_of_the_same_name_is_not_a_transform():
    sampler = "class MicroDuckTaskSampler:\n    def _call(self, td):\n        return td\n"
    source = TASK_SAMPLER.format(import_line="from robots.tasks import MicroDuckTaskSampler")
    assert rlg004(source, extra_files={"robots/__init__.py": "", "robots/tasks.py": sampler}) == []


# ----- a replay buffer the hand list lacked -----

DATASET = """\
    from tensordict import TensorDict
    from torchrl.data import LazyTensorStorage
    {import_line}


    def to_pairs(data):
        return TensorDict({{"obs": data["obs"], "next_obs": data["next", "obs"]}}, batch_size=data.batch_size)


    buffer = BaseDatasetExperienceReplay(storage=LazyTensorStorage(8), batch_size=2, transform=to_pairs)
"""


def test_a_replay_buffer_the_hand_list_lacked_is_recognised():
    source = DATASET.format(import_line="from torchrl.data.datasets import BaseDatasetExperienceReplay")
    assert [f.line for f in rlg004(source)] == [7]
    # Run it: the buffer accepts the transform, and what it samples has no device.
    from tensordict import TensorDict

    namespace: dict = {}
    exec(textwrap.dedent(source), namespace)
    namespace["buffer"].extend(TensorDict({"obs": torch.zeros(4, 3), ("next", "obs"): torch.ones(4, 3)}, [4]))
    sample = namespace["buffer"].sample()
    assert sample["next_obs"].shape == (2, 3) and sample.device is None


def test_a_user_buffer_of_the_same_name_is_not_one():
    source = DATASET.format(import_line="from my_data import BaseDatasetExperienceReplay")
    my_data = "class BaseDatasetExperienceReplay:\n    def __init__(self, **kwargs):\n        pass\n"
    assert rlg004(source, extra_files={"my_data.py": my_data}) == []


# ----- any TensorDict class of tensordict, as an annotation -----

HELPER = """\
    from tensordict import TensorDict
    from tensordict import {annotation}
    from torchrl.envs import Transform


    class T(Transform):
        def forward(self, td):
            return self._out(7, td)

        def _out(self, size, data: {annotation}):
            return TensorDict({{"x": data["x"]}}, [])
"""


@pytest.mark.parametrize("annotation", ["TensorDictBase", "LazyStackedTensorDict"])
def test_a_parameter_annotated_with_a_tensordict_class_gets_the_device_fix(annotation):
    import tensordict

    assert issubclass(getattr(tensordict, annotation), tensordict.TensorDictBase)
    (finding,) = rlg004(HELPER.format(annotation=annotation))
    assert finding.fix is not None and finding.fix.applicability == "safe"


def test_a_parameter_annotated_with_another_tensordict_name_gets_no_fix():
    source = HELPER.format(annotation="TensorDictParams")  # an nn.Module holding parameters, not the data
    (finding,) = rlg004(source)
    assert finding.fix is None
