"""torchrl 0.2's changes on environment subclasses: property setters that refuse every value
(``self.device = d``, ``self.input_spec = spec``), found from each release's ``EnvBase``, and ``_step``'s
output, read under ``"next"`` by 0.1's ``step`` and nested by ``step`` itself since 0.2. Flagged in
classes deriving from ``EnvBase`` (through the project's own bases), and fixed unsafely; the fixed
environment runs on the tested torchrl."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.rules.data import REMOVED_API
from rlguard.testing import check_source, fix_source
from rlguard_dev import upgrade_table
from tests.rules.test_removed_api_table import _wheel

SELECT = ["RLG006", "RLG007"]
# An environment written for torchrl 0.1: the inputs set through ``input_spec``, the device set in
# ``_reset``, the step's output under "next" and read there before it is returned.
OLD_ENV = '''import torch
from tensordict import TensorDict
from torchrl.envs import EnvBase
from torchrl.data import Bounded, Composite, Unbounded


class CounterEnv(EnvBase):
    def __init__(self):
        super().__init__(device="cpu", batch_size=[])
        self.observation_spec = Composite(obs=Unbounded(shape=(1,)), shape=())
        self.input_spec = Composite(obs=Unbounded(shape=(1,)), shape=())
        self.action_spec = Bounded(low=0, high=1, shape=(1,))
        self.reward_spec = Unbounded(shape=(1,))

    def _reset(self, td=None):
        self.device = device = torch.device("cpu")
        return TensorDict({"obs": torch.zeros(1, device=device)}, [])

    def _step(self, td):
        out = TensorDict({"next": {"obs": td["obs"] + 1, "done": torch.zeros(1, dtype=torch.bool)}}, td.shape)
        out["next"].set("reward", out["next"]["obs"].clone())
        return out

    def _set_seed(self, seed):
        pass


env = CounterEnv()
td = env.reset()
td["action"] = torch.zeros(1)
out = env.step(td)
env.reset()
assert out["next", "obs"].item() == 1.0 and out["next", "reward"].item() == 1.0, out
assert "obs" in env.state_spec.keys()
'''


def findings(source: str, **kwargs):
    return [f for f in check_source(source, select=SELECT, **kwargs) if f.code in SELECT]


def test_the_table_has_the_setters_and_the_step_output_from_the_releases():
    found = {c.name: c for c in REMOVED_API if c.kind in ("setter", "returns")}
    device, inputs, outputs, step = (found[n] for n in ("EnvBase.device", "EnvBase.input_spec", "EnvBase.output_spec",
                                                         "EnvBase._step"))
    assert (device.removed_in, device.replacement, device.rewrite, device.once, device.found) == \
        ((0, 2), "EnvBase.to", "call", True, "raising-setter")
    assert (inputs.replacement, inputs.how, inputs.fix, inputs.once) == ("EnvBase.state_spec", "property", "unsafe", False)
    assert "action_spec" in inputs.note and (outputs.replacement, outputs.fix) == (None, "none")
    assert (step.removed_in, step.path, step.fix, step.found) == ((0, 2), ("next",), "unsafe", "step-output")


def test_the_old_environment_is_flagged_fixed_and_the_fix_runs():
    lines = {f.line: f.full_message for f in findings(OLD_ENV)}
    assert sorted(lines) == [11, 16, 20], lines
    assert "`self.input_spec = ...`" in lines[11] and "`EnvBase`'s setter refuses it" in lines[11] and "set `self.state_spec` instead" in lines[11]
    assert "call `self.to(...)` instead" in lines[16] and "a first value" in lines[16]
    assert 'keys land under ("next", "next")' in lines[20]
    fixed = fix_source(OLD_ENV, select=SELECT, unsafe=True)
    assert "        self.state_spec = Composite(obs=Unbounded(shape=(1,)), shape=())\n" in fixed
    assert '        device = torch.device("cpu")\n        self.to(device)\n' in fixed
    assert ('        out = TensorDict({"obs": td["obs"] + 1, "done": torch.zeros(1, dtype=torch.bool)}, td.shape)\n'
            '        out.set("reward", out["obs"].clone())\n') in fixed
    assert findings(fixed) == []
    for code, ok in ((OLD_ENV, False), (fixed, True)):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert (done.returncode == 0) is ok, done.stderr[-2000:]


def test_a_subclass_of_a_project_base_in_another_file_is_flagged():
    base = "from torchrl.envs import EnvBase\n\n\nclass Base(EnvBase):\n    pass\n"
    source = "from pkg.base import Base\n\n\nclass Env(Base):\n    def _reset(self, td):\n        self.device = td.device\n"
    (finding,) = findings(source, extra_files={"pkg/__init__.py": "", "pkg/base.py": base})
    assert finding.line == 6
    assert fix_source(source, select=SELECT, unsafe=True, extra_files={"pkg/__init__.py": "", "pkg/base.py": base}) \
        == source.replace("self.device = td.device", "if td.device is not None:\n            self.to(td.device)")


def test_the_rewritten_call_keeps_the_line_s_comments():
    source = ("from torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n    def _reset(self, td):\n"
              "        # move first\n        self.device = 'cpu'  # the old way\n        return td\n")
    assert fix_source(source, select=SELECT, unsafe=True) == source.replace("self.device = 'cpu'", "self.to('cpu')")


def test_a_second_value_in_init_is_flagged():
    source = ("from torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n    def __init__(self, device):\n"
              "        super().__init__(batch_size=[])\n        self.device = 'cpu'\n        self.device = device\n")
    (finding,) = findings(source)
    assert finding.line == 8


def test_an_instance_is_flagged_where_its_class_refuses_every_value():
    base = ("from torchrl.envs import EnvBase\n\n\nclass Base(EnvBase):\n    pass\n")
    files = {"pkg/__init__.py": "", "pkg/base.py": base}
    source = ("from torchrl.envs import EnvBase, TransformedEnv\nfrom pkg.base import Base\n\n"
              "env = Base()\nenv.input_spec = spec\nwrapped = TransformedEnv(env)\nwrapped.batch_size = [4]\n"
              "env.device = 'cpu'\n")
    lines = {f.line: f.full_message for f in findings(source, extra_files=files)}
    assert sorted(lines) == [5, 7] and "`env.input_spec = ...`" in lines[5] and "set `env.state_spec`" in lines[5]
    assert "`TransformedEnv`'s setter refuses it" in lines[7]
    fixed = fix_source(source, select=SELECT, unsafe=True, extra_files=files)
    assert fixed == source.replace("env.input_spec = spec", "env.state_spec = spec")
    # A project class that is no environment: its instance is silent (the TransformedEnv still is one).
    assert [f.line for f in findings(source, extra_files={**files, "pkg/base.py": "class Base:\n    pass\n"})] == [7]


def test_a_step_that_reads_its_output_otherwise_is_flagged_without_a_fix():
    source = ("from tensordict import TensorDict\nfrom torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n"
              "    def _step(self, td):\n        out = TensorDict({'next': {'obs': td['obs']}}, [])\n"
              "        self.log(out)\n        return out\n")
    (finding,) = findings(source)
    assert finding.fix is None and "not rewritten" in finding.full_message


NOT_ENV_BASE = "from pkg.base import Base\n\n\nclass Env(Base):\n    def _reset(self, td):\n        self.device = td.device\n"


@pytest.mark.parametrize("source, options", [
    # Modern code: the device given to the constructor, specs through their properties, output at the root.
    ("from tensordict import TensorDict\nfrom torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n"
     "    def __init__(self, spec, device):\n        super().__init__(device=device)\n"
     "        self.observation_spec = spec\n        self.state_spec = spec.clone()\n\n"
     "    def _step(self, td):\n        return TensorDict({'obs': td['obs'], 'next_obs': {'a': 1}}, [])\n", {}),
    # The first value, before the constructor stores one: taken.
    ("from torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n    def __init__(self, device):\n"
     "        self.device = device\n        super().__init__(batch_size=[])\n", {}),
    ("from torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n    def __init__(self, device):\n"
     "        super().__init__(device=None)\n        self.device = device\n", {}),
    # Not an environment: a module, a plain class, a dict literal under "next" in another method.
    ("from torch import nn\n\n\nclass Net(nn.Module):\n    def _reset(self, device):\n        self.device = device\n"
     "        self.input_spec = None\n\n    def _step(self, td):\n        return dict({'next': {'a': 1}})\n", {}),
    ("class Holder:\n    def move(self, device):\n        self.device = device\n", {}),
    ("from tensordict import TensorDict\nfrom torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n"
     "    def rollout_next(self, td):\n        return TensorDict({'next': {'obs': td['obs']}}, [])\n", {}),
    # torchrl 0.1 took all three.
    (OLD_ENV, {"target": "0.1"}),
])
def test_near_misses_are_silent(source, options):
    assert findings(source, **options) == []


def test_a_project_base_that_is_no_environment_keeps_its_subclasses_silent():
    base = "class Base:\n    pass\n"
    assert findings(NOT_ENV_BASE, extra_files={"pkg/__init__.py": "", "pkg/base.py": base}) == []


def test_generator_finds_refused_assignments_and_the_step_output(tmp_path):
    old = ("class EnvBase:\n    def __init__(self, device='cpu'):\n        self.device = device\n\n"
           "    @property\n    def input_spec(self):\n        return self._input_spec\n\n"
           "    @input_spec.setter\n    def input_spec(self, value):\n        self.__dict__['_input_spec'] = value\n\n"
           "    @property\n    def mode(self):\n        return self._mode\n\n"
           "    @mode.setter\n    def mode(self, value):\n        self._mode = value\n\n"
           "    def step(self, td):\n        out = self._step(td)\n        nxt = out.get('next')\n        return nxt\n")
    new = ("class EnvBase:\n    @property\n    def device(self):\n        return self._device\n\n"
           "    @device.setter\n    def device(self, value):\n        if self.__dict__.get('_device') is None:\n"
           "            self.__dict__['_device'] = value\n            return\n"
           "        raise RuntimeError('device cannot be set. Call env.to(device) instead.')\n\n"
           "    def to(self, device):\n        return self\n\n"
           "    @property\n    def input_spec(self):\n        return self._input_spec\n\n"
           "    @input_spec.setter\n    def input_spec(self, value):\n        raise RuntimeError('input_spec is protected.')\n\n"
           "    @property\n    def mode(self):\n        return self._mode\n\n"
           "    @mode.setter\n    def mode(self, value):\n        if value != 'fast':\n            self._mode = value\n"
           "        raise ValueError('only fast')\n\n"
           "    def step(self, td):\n        td.set('next', self._step(td))\n        return td\n")
    _wheel(tmp_path, "torchrl", "0.1.0", {"__init__.py": "from .common import EnvBase\n", "common.py": old})
    _wheel(tmp_path, "torchrl", "0.2.0", {"__init__.py": "from .common import EnvBase\n", "common.py": new})
    table = upgrade_table.build(str(tmp_path), {"torchrl": ("0.1.0", "0.2.0")})
    found = {e["name"]: e for e in table["entries"] if e["kind"] in ("setter", "returns")}
    # ``mode``'s setter tests the value: it refuses some values only, so it is no entry.
    assert set(found) == {"EnvBase.device", "EnvBase.input_spec", "EnvBase._step"}
    assert (found["EnvBase.device"]["replacement"], found["EnvBase.device"].get("once")) == ("EnvBase.to", True)
    assert (found["EnvBase.input_spec"]["replacement"], found["EnvBase.input_spec"]["fix"]) == (None, "none")
    assert found["EnvBase._step"]["removed_in"] == "0.2"
