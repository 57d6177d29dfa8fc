"""RLG004 tensordict-without-device: detection, near misses, name resolution, multi-file projects and fixes.

The snippets follow how transforms are written in the TorchRL tutorials and in
``sota-implementations`` (``_call``/``_reset``/``forward`` overrides, replay-buffer transforms).
"""

from __future__ import annotations

import pytest

from rlguard.testing import check_source, fix_source


def findings(source, **kwargs):
    return [f for f in check_source(source, select=["RLG004"], **kwargs) if f.code == "RLG004"]


def fixed(source, unsafe=False, **kwargs):
    return fix_source(source, select=["RLG004"], unsafe=unsafe, **kwargs)


HEAD = "from tensordict import TensorDict\nfrom torchrl.envs import Transform\n\n\n"


def transform(body: str, method: str = "_call(self, next_tensordict)", name: str = "MyTransform",
              base: str = "Transform", head: str = HEAD) -> str:
    lines = body.strip("\n").split("\n")
    return head + f"class {name}({base}):\n    def {method}:\n" + "".join(f"        {line}\n" for line in lines)


# ---------------------------------------------------------------------------------------------
# What is flagged


@pytest.mark.parametrize("method, param", [
    ("_call(self, next_tensordict)", "next_tensordict"),
    ("forward(self, tensordict)", "tensordict"),
    ("_inv_call(self, tensordict)", "tensordict"),
    ("inv(self, tensordict)", "tensordict"),
    ("_reset(self, tensordict, tensordict_reset)", "tensordict_reset"),
    ("_step(self, tensordict, next_tensordict)", "next_tensordict"),
])
def test_output_of_each_data_method_is_flagged(method, param):
    source = transform(f"return TensorDict({{'obs': {param}['obs']}}, batch_size={param}.batch_size)", method)
    found = findings(source)
    assert len(found) == 1
    assert found[0].line == 7
    assert "pinned-memory" in found[0].full_message and "MyTransform" in found[0].full_message
    assert found[0].fix is not None and found[0].fix.applicability == "safe"


def test_reported_on_the_line_where_the_call_begins():
    source = transform("out = TensorDict(\n    {'obs': next_tensordict['obs']},\n    batch_size=[],\n)\nreturn out")
    (finding,) = findings(source)
    assert (finding.span.line, finding.span.column) == (7, 15)


def test_device_none_written_out_is_flagged():
    source = transform("return TensorDict({'x': next_tensordict['x']}, batch_size=[], device=None)")
    (finding,) = findings(source)
    assert "device=None" in finding.full_message


def test_third_positional_none_is_flagged():
    (finding,) = findings(transform("return TensorDict({'x': next_tensordict['x']}, [], None)"))
    assert "device=None" in finding.full_message


def test_keyword_entries_without_source():
    assert len(findings(transform("return TensorDict(obs=next_tensordict['obs'], batch_size=[])"))) == 1


def test_empty_tensordict_returned_is_flagged():
    source = transform("out = TensorDict(batch_size=next_tensordict.batch_size)\n"
                       "out.set('obs', next_tensordict['obs'] * 2)\nreturn out")
    (finding,) = findings(source)
    assert finding.fix.applicability == "unsafe"


def test_name_rebound_through_tensordict_methods_is_followed():
    source = transform("out = TensorDict({'a': next_tensordict['a'], 'b': next_tensordict['b']}, [])\n"
                       "out = out.exclude('b')\nreturn out")
    assert len(findings(source)) == 1


def test_returned_inside_an_expression():
    source = ("import torch\n" + HEAD.split("\n", 0)[0]) + transform(
        "return torch.stack([TensorDict({'x': next_tensordict['x']}, []) for _ in range(2)])", head="")
    assert len(findings(source)) == 1


def test_returned_from_a_conditional_expression_or_tuple():
    source = transform("out = TensorDict({'x': next_tensordict['x']}, [])\n"
                       "return out if self.enabled else next_tensordict", method="forward(self, next_tensordict)")
    assert len(findings(source)) == 1


def test_nested_tensordicts_are_each_flagged():
    source = transform("return TensorDict({'outer': TensorDict({'x': next_tensordict['x']}, [])}, [])")
    assert len(findings(source)) == 2


def test_nested_function_in_a_data_method():
    source = transform("def build():\n    return TensorDict({'x': next_tensordict['x']}, [])\nreturn build()")
    (finding,) = findings(source)
    assert finding.fix is None  # the parameter may be rebound by the time the closure runs


def test_helper_whose_result_is_returned_is_the_output():
    source = HEAD + (
        "class Pairs(Transform):\n"
        "    def forward(self, tensordict):\n"
        "        pairs = self._pairs(tensordict)\n"
        "        return pairs\n\n"
        "    def _pairs(self, data):\n"
        "        return self._build(data)\n\n"
        "    def _build(self, data):\n"
        "        return TensorDict({'obs': data['obs']}, batch_size=data.batch_size)\n"
    )
    (finding,) = findings(source)
    assert finding.fix is None  # ``data`` is neither a data method's parameter nor annotated


# ---------------------------------------------------------------------------------------------
# Near misses


@pytest.mark.parametrize("call", [
    "TensorDict({'x': next_tensordict['x']}, batch_size=[], device=next_tensordict.device)",
    "TensorDict({'x': next_tensordict['x']}, [], next_tensordict.device)",
    "TensorDict({'x': next_tensordict['x']}, [], 'cpu')",
    "TensorDict({'x': next_tensordict['x']}, batch_size=[], device=self.device)",
    "TensorDict({'x': next_tensordict['x']}, batch_size=[], **self.td_kwargs)",
    "TensorDict(*self.args)",
    "TensorDict({'x': next_tensordict['x']}, []).to(next_tensordict.device)",
    "TensorDict({'x': next_tensordict['x']}, []).to(device=self.device)",
    "TensorDict({'x': next_tensordict['x']}, []).cpu()",
    "next_tensordict.update(TensorDict({'x': next_tensordict['x'] * 2}, []))",
    "next_tensordict.set('goal', TensorDict({'x': next_tensordict['x']}, []))",
    "next_tensordict.empty()",
])
def test_tensordicts_with_a_device_or_not_handed_on(call):
    assert findings(transform(f"return {call}")) == []


def test_from_dict_without_a_device_is_flagged():
    # TensorDict.from_dict(...) without device= gives a TensorDict whose device is None, like TensorDict(...).
    (finding,) = findings(transform("return TensorDict.from_dict({'x': next_tensordict['x']})"))
    assert finding.fix is not None
    assert findings(transform("return TensorDict.from_dict({'x': next_tensordict['x']}, device=next_tensordict.device)")) == []


def test_to_dtype_keeps_the_finding():
    source = ("import torch\n" + HEAD) + "class T(Transform):\n    def _call(self, td):\n" \
        "        return TensorDict({'x': td['x']}, []).to(torch.float64)\n"
    assert len(findings(source)) == 1


def test_subscript_assignment_merges():
    source = transform("next_tensordict['goal'] = TensorDict({'x': next_tensordict['x']}, [])\nreturn next_tensordict")
    assert findings(source) == []


def test_scratch_tensordict_not_returned():
    source = transform("scratch = TensorDict({'x': next_tensordict['x']}, [])\n"
                       "next_tensordict.set('y', scratch['x'] + 1)\nreturn next_tensordict")
    assert findings(source) == []


def test_name_rebound_to_something_else_is_not_followed():
    source = transform("out = TensorDict({'x': next_tensordict['x']}, [])\nself.cache = out\n"
                       "out = next_tensordict\nreturn out")
    assert findings(source) == []


@pytest.mark.parametrize("method", [
    "__init__(self)", "state_dict(self)", "get_extra_state(self)", "set_extra_state(self, state)",
    "transform_observation_spec(self, observation_spec)", "_helper(self, td)",
])
def test_methods_that_do_not_build_the_output(method):
    source = transform("return TensorDict({}, batch_size=[])", method)
    assert findings(source) == []


def test_static_method_even_when_named_like_a_data_method():
    source = HEAD + "class T(Transform):\n    @staticmethod\n    def forward(td):\n" \
        "        return TensorDict({'x': td['x']}, [])\n"
    assert findings(source) == []


def test_environment_is_not_a_transform():
    source = ("from tensordict import TensorDict\nfrom torchrl.envs import EnvBase\n\n\n"
              "class GridEnv(EnvBase):\n    def _step(self, tensordict):\n"
              "        return TensorDict({'obs': tensordict['obs']}, batch_size=self.batch_size)\n")
    assert findings(source) == []


def test_other_torchrl_envs_classes_are_not_transforms():
    source = ("from tensordict import TensorDict\nfrom torchrl.envs import TransformedEnv, GymLikeEnv\n\n\n"
              "class A(TransformedEnv):\n    def _reset(self, tensordict, tensordict_reset):\n"
              "        return TensorDict({'x': tensordict_reset['x']}, [])\n\n\n"
              "class B(GymLikeEnv):\n    def _call(self, td):\n        return TensorDict({'x': td['x']}, [])\n")
    assert findings(source) == []


def test_nn_module_and_plain_classes_are_not_transforms():
    source = ("import torch\nfrom tensordict import TensorDict\n\n\n"
              "class Head(torch.nn.Module):\n    def forward(self, td):\n        return TensorDict({'x': td['x']}, [])\n\n\n"
              "class Plain:\n    def _call(self, td):\n        return TensorDict({'x': td['x']}, [])\n")
    assert findings(source) == []


def test_user_class_named_transform_is_not_torchrl():
    source = ("from tensordict import TensorDict\nfrom my_project.pipeline import Transform\n\n\n"
              "class T(Transform):\n    def _call(self, td):\n        return TensorDict({'x': td['x']}, [])\n")
    assert findings(source) == []


def test_tensordict_of_another_library_is_not_flagged():
    source = ("from my_lib import TensorDict\nfrom torchrl.envs import Transform\n\n\n"
              "class T(Transform):\n    def _call(self, td):\n        return TensorDict({'x': td['x']}, [])\n")
    assert findings(source) == []


def test_local_variable_named_tensordict_is_not_the_class():
    source = HEAD + "class T(Transform):\n    def _call(self, td, TensorDict=dict):\n" \
        "        return TensorDict(x=td['x'])\n"
    assert findings(source) == []


def test_module_level_code_is_not_a_transform():
    source = HEAD + "data = TensorDict({'x': 1}, [])\n\n\ndef make(td):\n    return TensorDict({'x': td['x']}, [])\n"
    assert findings(source) == []


# ---------------------------------------------------------------------------------------------
# Name resolution


@pytest.mark.parametrize("imports, ctor", [
    ("from tensordict import TensorDict as TD", "TD"),
    ("import tensordict", "tensordict.TensorDict"),
    ("import tensordict as tdl", "tdl.TensorDict"),
    ("from tensordict._td import TensorDict", "TensorDict"),
    ("from tensordict.tensordict import TensorDict", "TensorDict"),
])
def test_tensordict_aliases(imports, ctor):
    source = (f"{imports}\nfrom torchrl.envs import Transform\n\n\n"
              f"class T(Transform):\n    def _call(self, td):\n        return {ctor}({{'x': td['x']}}, [])\n")
    assert len(findings(source)) == 1


@pytest.mark.parametrize("imports, base", [
    ("import torchrl.envs as E", "E.Transform"),
    ("from torchrl.envs import transforms as T", "T.ObservationTransform"),
    ("from torchrl.envs.transforms import ObservationNorm as Norm", "Norm"),
    ("from torchrl.envs.transforms.transforms import CatFrames", "CatFrames"),
    ("import torchrl", "torchrl.envs.StepCounter"),
    ("from torchrl import envs", "envs.Compose"),
])
def test_transform_bases_under_aliases(imports, base):
    source = (f"from tensordict import TensorDict\n{imports}\n\n\n"
              f"class T({base}):\n    def _call(self, td):\n        return TensorDict({{'x': td['x']}}, [])\n")
    assert len(findings(source)) == 1


def test_base_through_a_local_class():
    source = HEAD + ("class Base(Transform):\n    pass\n\n\nclass Mid(Base):\n    pass\n\n\n"
                     "class Leaf(Mid):\n    def forward(self, td):\n        return TensorDict({'x': td['x']}, [])\n")
    (finding,) = findings(source)
    assert "`Leaf`" in finding.full_message


def test_base_defined_in_another_file():
    extra = {"pkg/__init__.py": "",
             "pkg/transforms.py": "from torchrl.envs import RewardScaling\n\n\nclass Scaled(RewardScaling):\n    pass\n"}
    source = ("from tensordict import TensorDict\nfrom pkg.transforms import Scaled\n\n\n"
              "class Shifted(Scaled):\n    def _call(self, td):\n        return TensorDict({'r': td['reward']}, [])\n")
    assert len(findings(source, extra_files=extra)) == 1


def test_base_two_files_away_through_a_package_reexport():
    extra = {
        "pkg/__init__.py": "from pkg.base import Norm\n",
        "pkg/base.py": "from pkg.root import Root\n\n\nclass Norm(Root):\n    pass\n",
        "pkg/root.py": "import torchrl.envs.transforms as T\n\n\nclass Root(T.ObservationNorm):\n    pass\n",
    }
    # No "Transform", "transform" or "envs" in this file: the pre-filter must follow the class names.
    source = ("from tensordict import TensorDict\nfrom pkg import Norm\n\n\n"
              "class Clipped(Norm):\n    def _call(self, td):\n        return TensorDict({'obs': td['obs']}, [])\n")
    assert len(findings(source, extra_files=extra)) == 1


def test_base_in_another_file_that_is_not_a_transform():
    extra = {"pkg/__init__.py": "", "pkg/base.py": "class Stage:\n    pass\n"}
    source = ("from tensordict import TensorDict\nfrom pkg.base import Stage\n\n\n"
              "class Load(Stage):\n    def _call(self, td):\n        return TensorDict({'obs': td['obs']}, [])\n")
    assert findings(source, extra_files=extra) == []


@pytest.mark.parametrize("target", ["0.4", "0.7", "0.12", "0.14"])
def test_every_target_version(target):
    assert len(findings(transform("return TensorDict({'x': next_tensordict['x']}, [])"), target=target)) == 1


# ---------------------------------------------------------------------------------------------
# Replay-buffer transforms

RB_HEAD = "from tensordict import TensorDict\nfrom torchrl.data import LazyTensorStorage, ReplayBuffer, TensorDictReplayBuffer\n\n\n"


def test_function_defined_before_the_buffer():
    source = RB_HEAD + ("def to_obs(data):\n    return TensorDict({'obs': data['obs']}, batch_size=data.batch_size)\n\n\n"
                        "rb = ReplayBuffer(storage=LazyTensorStorage(1000), transform=to_obs)\n")
    (finding,) = findings(source)
    assert "`to_obs`" in finding.full_message and "`ReplayBuffer`" in finding.full_message
    assert finding.fix.applicability == "safe"


def test_function_defined_after_the_buffer():
    source = RB_HEAD + ("def main():\n    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(1000), transform=to_obs)\n"
                        "    return rb\n\n\n"
                        "def to_obs(data):\n    out = TensorDict(batch_size=data.batch_size)\n    out['obs'] = data['obs']\n"
                        "    return out\n")
    (finding,) = findings(source)
    assert finding.fix.applicability == "unsafe"


def test_lambda_transform():
    source = RB_HEAD + "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=lambda td: TensorDict({'o': td['o']}, []))\n"
    (finding,) = findings(source)
    assert "`lambda`" in finding.full_message and finding.fix is None


@pytest.mark.parametrize("imports, ctor", [
    ("import torchrl.data as D", "D.PrioritizedReplayBuffer"),
    ("from torchrl.data import TensorDictPrioritizedReplayBuffer as PRB", "PRB"),
    ("from torchrl.data.replay_buffers import ReplayBuffer", "ReplayBuffer"),
    ("from torchrl.data.datasets import D4RLExperienceReplay", "D4RLExperienceReplay"),
])
def test_replay_buffer_aliases(imports, ctor):
    source = (f"from tensordict import TensorDict\n{imports}\n\n\n"
              "def prep(data):\n    return TensorDict({'obs': data['obs']}, [])\n\n\n"
              f"rb = {ctor}(alpha=0.7, beta=0.5, transform=prep)\n")
    assert len(findings(source)) == 1


def test_function_not_given_to_a_buffer_is_not_flagged():
    source = RB_HEAD + ("def to_obs(data):\n    return TensorDict({'obs': data['obs']}, [])\n\n\n"
                        "rb = ReplayBuffer(storage=LazyTensorStorage(1000))\nbatch = to_obs(rb.sample(4))\n")
    assert findings(source) == []


def test_function_given_to_something_else_is_not_flagged():
    source = ("from tensordict import TensorDict\nfrom my_project.buffers import MyBuffer\n\n\n"
              "def to_obs(data):\n    return TensorDict({'obs': data['obs']}, [])\n\n\n"
              "rb = MyBuffer(transform=to_obs)\nother = map(to_obs, [])\n")
    assert findings(source) == []


def test_buffer_function_with_device():
    source = RB_HEAD + ("def to_obs(data):\n    return TensorDict({'obs': data['obs']}, [], device=data.device)\n\n\n"
                        "rb = ReplayBuffer(storage=LazyTensorStorage(10), transform=to_obs)\n")
    assert findings(source) == []


# ---------------------------------------------------------------------------------------------
# whole-transform option

WHOLE = {"RLG004": {"whole-transform": True}}


def test_whole_transform_reports_init_helpers_and_scratch():
    source = HEAD + (
        "class T(Transform):\n"
        "    def __init__(self):\n        super().__init__()\n        self.state = TensorDict({}, [])\n\n"
        "    def _stats(self, td):\n        return TensorDict({'m': td['x'].mean()}, [])\n\n"
        "    def _call(self, td):\n        scratch = TensorDict({'x': td['x']}, [])\n        return td\n\n"
        "    def state_dict(self):\n        return TensorDict({}, []).to_dict()\n"
    )
    assert findings(source) == []
    assert [f.line for f in findings(source, options=WHOLE)] == [8, 11, 14]


# ---------------------------------------------------------------------------------------------
# Fixes (text); execution against torchrl lives in test_rlg004_execution.py


def test_safe_fix_appends_device():
    source = transform("return TensorDict({'x': next_tensordict['x']}, batch_size=[])")
    assert fixed(source).endswith("batch_size=[], device=next_tensordict.device)\n")


def test_fix_picks_the_parameter_values_come_from():
    source = transform("return TensorDict({'r': tensordict_reset['reward']}, [])",
                       "_reset(self, tensordict, tensordict_reset)")
    out = fixed(source)
    assert "device=tensordict_reset.device" in out


def test_unsafe_fix_uses_the_first_parameter():
    source = ("import torch\n" + HEAD) + "class T(Transform):\n    def _step(self, tensordict, next_tensordict):\n" \
        "        return TensorDict({'noise': torch.randn(3)}, [3])\n"
    assert fixed(source) == source
    assert "[3], device=tensordict.device)" in fixed(source, unsafe=True)


def test_annotated_parameter_in_a_helper():
    source = ("from tensordict import TensorDict, TensorDictBase\nfrom torchrl.envs import Transform\n\n\n"
              "class T(Transform):\n    def forward(self, td):\n        return self._out(7, td)\n\n"
              "    def _out(self, size, data: TensorDictBase):\n"
              "        return TensorDict({'x': data['x']}, [])\n")
    assert "[], device=data.device)" in fixed(source)


def test_no_fix_when_the_parameter_was_rebound():
    source = transform("next_tensordict = self.prepare(next_tensordict)\n"
                       "return TensorDict({'x': next_tensordict['x']}, [])")
    (finding,) = findings(source)
    assert finding.fix is None


def test_no_fix_when_the_parameter_defaults_to_none():
    source = transform("return TensorDict({'x': tensordict['x']}, [])", "forward(self, tensordict=None)")
    (finding,) = findings(source)
    assert finding.fix is None


def test_fix_replaces_device_none():
    source = transform("return TensorDict({'x': next_tensordict['x']}, batch_size=[], device=None)")
    assert "batch_size=[], device=next_tensordict.device)" in fixed(source)


def test_fix_replaces_third_positional_none():
    source = transform("return TensorDict({'x': next_tensordict['x']}, [], None)")
    assert "[], next_tensordict.device)" in fixed(source)


def test_fix_of_an_empty_call():
    source = transform("out = TensorDict()\nout['x'] = next_tensordict['x']\nreturn out")
    assert "out = TensorDict(device=next_tensordict.device)" in fixed(source, unsafe=True)


def test_fix_keeps_one_argument_per_line_and_comments():
    source = transform("return TensorDict(\n"
                       "    {'x': next_tensordict['x']},  # the observation\n"
                       "    batch_size=next_tensordict.batch_size,  # same batch\n"
                       ")")
    assert fixed(source).endswith(
        "        return TensorDict(\n"
        "            {'x': next_tensordict['x']},  # the observation\n"
        "            batch_size=next_tensordict.batch_size,  # same batch\n"
        "            device=next_tensordict.device,\n"
        "        )\n")


def test_fix_without_trailing_comma_on_separate_lines():
    source = transform("return TensorDict(\n    {'x': next_tensordict['x']},\n    batch_size=[]\n)")
    assert fixed(source).endswith(
        "            batch_size=[],\n            device=next_tensordict.device\n        )\n")


def test_fix_single_line_trailing_comma():
    source = transform("return TensorDict({'x': next_tensordict['x']}, [],)")
    assert fixed(source).endswith("return TensorDict({'x': next_tensordict['x']}, [], device=next_tensordict.device,)\n")


def test_nested_tensordicts_are_fixed_together_and_safe():
    source = transform("return TensorDict({'o': TensorDict({'x': next_tensordict['x']}, [])}, [])")
    assert [f.fix.applicability for f in findings(source)] == ["safe", "safe"]
    assert fixed(source).endswith(
        "return TensorDict({'o': TensorDict({'x': next_tensordict['x']}, [], device=next_tensordict.device)}, [], "
        "device=next_tensordict.device)\n")


def test_fix_keeps_crlf_and_comments():
    source = transform("# build the output\nreturn TensorDict({'x': next_tensordict['x']}, [])  # keep\n").replace("\n", "\r\n")
    out = fixed(source)
    assert "\r\n" in out and "\n" not in out.replace("\r\n", "")
    assert "[], device=next_tensordict.device)  # keep\r\n" in out
    assert "# build the output\r\n" in out


def test_fix_under_alias():
    source = ("from tensordict import TensorDict as TD\nfrom torchrl.envs import Transform as T\n\n\n"
              "class X(T):\n    def _call(self, td):\n        return TD({'x': td['x']}, [])\n")
    assert fixed(source).endswith("return TD({'x': td['x']}, [], device=td.device)\n")


def test_fix_is_idempotent_and_leaves_no_finding():
    source = transform("out = TensorDict({'x': next_tensordict['x']}, [])\nreturn out")
    once = fixed(source)
    assert fixed(once) == once
    assert findings(once) == []
