"""Where a fix's new imports go: after the block of imports holding the file's first top-level import of
their package, where the file first loads it; else after the leading imports. Code that must run before torchrl loads (the
tutorials' ``multiprocessing.set_start_method("fork")``, which importing torchrl settles) keeps running
first."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.engine.lazy import cst
from rlguard.fix.apply import add_imports
from rlguard.testing import fix_source

NEW = [("tensordict.nn", "TensorDictSequential"), ("torchrl.modules", "AdditiveGaussianModule")]


def _added(source: str) -> str:
    return add_imports(cst.parse_module(source), NEW).code


def test_new_imports_go_where_the_file_first_loads_their_package():
    source = ('"""Doc."""\nimport multiprocessing\n\nmultiprocessing.set_start_method("fork")\n'
              "import torch\nfrom torchrl.envs import PendulumEnv\n")
    assert _added(source) == ('"""Doc."""\nimport multiprocessing\n\nmultiprocessing.set_start_method("fork")\n'
                              "import torch\nfrom torchrl.envs import PendulumEnv\nfrom tensordict.nn import TensorDictSequential\n"
                              "from torchrl.modules import AdditiveGaussianModule\n")


@pytest.mark.parametrize("source", [
    '"""Doc."""\nimport os\n\nprint(os.sep)\n',  # the package is not imported at all
    "import os\n\n\ndef main():\n    import torchrl\n",  # only inside a function
])
def test_without_a_top_level_import_of_the_package_they_follow_the_leading_imports(source):
    lines = _added(source).splitlines()
    assert lines[lines.index("import os") + 1] == "from tensordict.nn import TensorDictSequential"


PRELUDE = """
from torch import multiprocessing

multiprocessing.set_start_method("fork")  # raises RuntimeError once importing torchrl chose a method

import torch
from torchrl.envs import PendulumEnv, TransformedEnv, UnsqueezeTransform
from torchrl.modules import Actor, AdditiveGaussianWrapper

env = TransformedEnv(PendulumEnv(), UnsqueezeTransform(dim=-1, in_keys=["th"]))
actor = Actor(torch.nn.Linear(1, 1), in_keys=["th"], spec=env.action_spec)
policy = AdditiveGaussianWrapper(actor, sigma_init=0.5)
policy(env.reset())
"""


def test_a_start_method_chosen_before_torchrl_loads_still_runs_after_the_fix():
    pytest.importorskip("torchrl")
    fixed = fix_source(PRELUDE, select=["RLG007"], unsafe=True)
    assert "AdditiveGaussianModule(" in fixed
    assert fixed.index('set_start_method("fork")') < fixed.index("from torchrl.modules import AdditiveGaussianModule")
    done = subprocess.run([sys.executable, "-c", fixed], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
