"""The API model: generated from the installed torch/tensordict/torchrl, read without them, and right about them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.engine.apimodel import (
    CLASSES_PATH,
    KIND_PACKAGES,
    MODEL_PATH,
    TENSOR,
    TENSORDICT,
    CallShape,
    class_names,
    model,
    select,
)

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
pytest.importorskip("tensordict")


def test_shipped_model_is_current_for_the_installed_stack():
    from rlguard_dev.apimodel import build_model, render

    assert MODEL_PATH.read_text(encoding="utf-8") == render(build_model()), (
        "rlguard/engine/apimodel.json is stale: run `python -m rlguard_dev.apimodel --write`"
    )


def test_shipped_class_names_are_current_and_agree_with_the_model():
    from rlguard_dev.apimodel import build_model, render_classes

    assert CLASSES_PATH.read_text(encoding="utf-8") == render_classes(build_model()), (
        "rlguard/engine/apimodel_classes.json is stale: run `python -m rlguard_dev.apimodel --write`"
    )
    assert class_names() == {kind: model().names_of_kind(kind, package) for kind, package in KIND_PACKAGES.items()}


def test_model_records_the_versions_it_was_built_from():
    from importlib.metadata import version

    assert model().versions == {name: version(name) for name in ("torch", "tensordict", "torchrl")}


LOADER = """
import sys
from rlguard.engine.apimodel import model
from rlguard.testing import check_source
model().function("torch.stack")
found = check_source("import json\\nimport torch\\njson.dumps({'x': torch.zeros(2).mean()})\\n")
assert found, found
print("HEAVY:" + ",".join(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "torchrl", "tensordict"))))
"""


def test_loading_the_model_and_inferring_imports_no_torch():
    result = subprocess.run([sys.executable, "-c", LOADER], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1:] == ["HEAVY:"], result.stderr


def _tensor_methods_of_kind(kind: str) -> list[str]:
    tensor = model().class_name(TENSOR)
    assert tensor is not None
    return sorted(name for name in dir(torch.Tensor) if not name.startswith("_") and model().method(TENSOR, name) == kind)


def _call_without_arguments(name: str):
    x = torch.randn(3, 4)
    try:
        return True, getattr(x, name)()
    except Exception:  # noqa: BLE001 - methods that need arguments or a device are not probed
        return False, None


@pytest.mark.parametrize("kind, gives_tensor, at_least", [
    ("tensor", True, 100),  # mean, abs, clone, detach, t, float, ...
    ("value", False, 10),  # item, tolist, numel, dim, size, is_contiguous, ...
])
def test_tensor_methods_return_what_the_model_says(kind, gives_tensor, at_least):
    probed = 0
    for name in _tensor_methods_of_kind(kind):
        called, result = _call_without_arguments(name)
        if called:
            probed += 1
            assert isinstance(result, torch.Tensor) == gives_tensor, name
    assert probed > at_least


@pytest.mark.parametrize("call, shape, expected", [
    ("max", CallShape(0, {}), "tensor"),
    ("max", CallShape(1, {}), "tensors"),  # x.max(1) or x.max(y): both hold tensors
    ("max", CallShape(0, {"dim": None}), "tensors"),
    ("max", CallShape(1, {"keepdim": True}), "tensors"),
    ("sort", CallShape(0, {}), "tensors"),
    ("unique", CallShape(0, {}), "tensor"),
    ("unique", CallShape(0, {"return_counts": True}), "tensors"),
    ("unique", CallShape(0, {"return_counts": False}), "tensor"),
])
def test_tensor_method_overloads_match_torch(call, shape, expected):
    assert select(model().method(TENSOR, call), shape) == expected
    x = torch.randint(0, 3, (4, 5))
    args = (1,) if shape.positional else ()
    keywords = {name: 1 if value is None else value for name, value in shape.keywords.items()}
    result = getattr(x, call)(*args, **keywords)
    assert isinstance(result, torch.Tensor) == (expected == "tensor")


@pytest.mark.parametrize("function, shape, expected", [
    ("torch.nonzero", CallShape(1, {}), "tensor"),
    ("torch.nonzero", CallShape(1, {"as_tuple": True}), "tensors"),
    ("torch.where", CallShape(1, {}), "tensors"),
    ("torch.where", CallShape(3, {}), "tensor"),
    ("torch.nn.functional.max_pool1d", CallShape(2, {}), "tensor"),
    ("torch.nn.functional.max_pool1d", CallShape(2, {"return_indices": True}), "tensors"),
])
def test_function_overloads_match_torch(function, shape, expected):
    assert select(model().function(function), shape) == expected
    module, _, name = function.rpartition(".")
    x = (torch.rand(1, 2, 6) > 0.5).float()
    args = [x, x, x][: shape.positional] if name == "where" else [x, 2][: shape.positional]
    if name == "where" and shape.positional == 3:
        args[0] = x > 0
    result = getattr(sys.modules[module], name)(*args, **shape.keywords)
    assert isinstance(result, torch.Tensor) == (expected == "tensor")


@pytest.mark.parametrize("qualname, kind", [
    ("torch.nn.Linear", "module"),
    ("torch.nn.LSTM", "module"),
    ("torchrl.modules.LSTMModule", "recurrent"),
    ("torchrl.modules.GRUModule", "recurrent"),
    ("torchrl.objectives.ClipPPOLoss", "loss"),
    ("torchrl.envs.Compose", "transform"),
    ("torchrl.envs.StepCounter", "transform"),
    ("torchrl.envs.GymEnv", "env"),
    ("torchrl.collectors.Collector", "collector"),
    ("torchrl.data.TensorDictReplayBuffer", "replay_buffer"),
    ("tensordict.nn.TensorDictModule", "tdmodule"),
    ("tensordict.TensorDict", "tensordict"),
    ("torch.nn.Parameter", "tensor"),
    ("torch.optim.Adam", "optimizer"),
    ("torch.optim.lr_scheduler.StepLR", "scheduler"),
])
def test_class_kinds_follow_the_class_hierarchy(qualname, kind):
    assert model().class_kind(qualname) == kind


def test_methods_the_rules_rely_on():
    m = model()
    assert m.method("torchrl.envs.GymEnv", "rollout") == "tensordict"
    assert m.method("torchrl.envs.TransformedEnv", "reset") == "tensordict"
    assert m.method("torchrl.collectors.Collector", "__iter__") == "td_iter"
    assert m.method("torchrl.objectives.ClipPPOLoss", "__call__") == "tensordict"
    assert m.method("torch.nn.Linear", "parameters") == "tensor_iter"
    assert m.method("torch.nn.Linear", "state_dict") == "bulk"
    assert m.method("torch.optim.lr_scheduler.StepLR", "state_dict") == "value"
    assert m.method(TENSORDICT, "to") == "self"
    assert m.method("tensordict.TensorDict", "from_dict") == "self"
    assert m.function("torch.nn.utils.clip_grad_norm_") == "tensor"
    assert m.function("torch.cuda.is_available") is None  # not modelled: unknown


def test_td_replay_buffer_sample_is_a_tensordict():
    from tensordict import TensorDict
    from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer

    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(8), batch_size=2)
    rb.extend(TensorDict({"x": torch.zeros(4, 1)}, batch_size=[4]))
    assert isinstance(rb.sample(), TensorDict)
    assert model().method("torchrl.data.TensorDictReplayBuffer", "sample") == "tensordict"


CLEARED_RUN = """
from rlguard.engine import apimodel
from rlguard.testing import check_source
assert check_source("import os\\n\\n\\nclass Paths:\\n    def home(self):\\n        return os.getcwd()\\n") == []
print("LOADED:", apimodel.model.cache_info().currsize, apimodel.class_names.cache_info().currsize)
"""


def test_a_file_no_rule_needs_never_loads_the_whole_model():
    """The pre-filter's tokens come from the rule catalog: a cleared file reads neither the model nor its
    class-name extract; the model is read only when a file is analysed."""
    result = subprocess.run([sys.executable, "-c", CLEARED_RUN], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1:] == ["LOADED: 0 0"], result.stderr


def _real_class(qualname: str) -> type | None:
    """The class a model name stands for (``module.Qual.Name``), imported; None when it cannot be."""
    import importlib

    parts = qualname.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part, None)
        return found if isinstance(found, type) else None
    return None


def test_library_ancestry_is_pythons_method_resolution_order():
    """C3, as Python orders the real classes' ``__mro__`` (kept to the modelled classes). A depth-first
    walk of the same bases orders some of them otherwise: ``SafeSequential`` derives from
    ``TensorDictSequential`` and ``SafeModule``, which share ``TensorDictModule``, and Python puts
    ``SafeModule`` before that shared base."""
    reader = model()
    legacy = type(torch.FloatTensor)  # torch.FloatTensor(...) builds a Tensor: the model says so, __mro__ does not
    compared = differ_from_depth_first = 0
    for qualname in reader._classes:  # every class the model knows
        cls = _real_class(qualname)
        if cls is None or isinstance(cls, legacy):
            continue
        expected = [name for name in (f"{c.__module__}.{c.__qualname__}" for c in cls.__mro__) if name in reader._classes]
        assert reader.ancestry(qualname) == expected, qualname
        compared += 1
        differ_from_depth_first += expected != _depth_first(reader, qualname)
    assert compared > 600
    assert differ_from_depth_first >= 10
    order = reader.ancestry("torchrl.modules.SafeSequential")
    assert order.index("torchrl.modules.tensordict_module.common.SafeModule") < order.index("tensordict.nn.common.TensorDictModule")


def _depth_first(reader, qualname: str) -> list[str]:
    order: list[str] = []
    pending = [reader.class_name(qualname)]
    while pending:
        current = pending.pop(0)
        if current not in order:
            order.append(current)
            pending = [*reader._classes[current]["bases"], *pending]
    return order


def test_an_unknown_class_has_no_ancestry():
    assert model().ancestry("mylab.Policy") == []
