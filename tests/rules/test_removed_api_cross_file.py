"""RLG007 across the files of a project: an exploration wrapper built in one module and annealed
(``.step()``) in another, and ``ExplorationType.MODE`` in a file whose ``TanhNormal`` actor another module
builds. Proven on the real torchrl: the old project fails on the tested stack, ``rlguard fix
--unsafe-fixes`` rewrites both files, and the fixed project runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rlguard.rules.data import NEWEST_KNOWN_TORCHRL
from rlguard.testing import check_source

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ENV = """
import torch
from torchrl.envs import CatTensors, Compose, InitTracker, PendulumEnv, TransformedEnv, UnsqueezeTransform


def make_env():
    return TransformedEnv(PendulumEnv(), Compose(
        UnsqueezeTransform(dim=-1, in_keys=["th", "thdot"]),
        CatTensors(in_keys=["th", "thdot"], out_key="observation", del_keys=False), InitTracker()))
"""

# The DDPG and TD3 examples of v0.2 and v0.3: utils.py builds the wrapper and returns it in a tuple.
WRAPPER_PROJECT = {
    "agent.py": ENV + """
from torchrl.modules import Actor, OrnsteinUhlenbeckProcessWrapper


def make_agent(env):
    actor = Actor(torch.nn.Linear(2, 1), in_keys=["observation"], spec=env.action_spec)
    explore = OrnsteinUhlenbeckProcessWrapper(actor, annealing_num_steps=100).to("cpu")
    return actor, explore
""",
    "train.py": """
from agent import make_agent, make_env

env = make_env()
actor, exploration_policy = make_agent(env)
env.rollout(3, exploration_policy)
exploration_policy.step(3)
actor(env.reset())  # the actor's own spec is intact
""",
}

# The a2c and sac examples of v0.3 and v0.4: the TanhNormal actor is built in utils.py.
MODE_PROJECT = {
    "models.py": ENV + """
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torchrl.modules import ProbabilisticActor, TanhNormal


def make_actor(env):
    net = torch.nn.Sequential(torch.nn.Linear(2, 2), NormalParamExtractor())
    module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
    return ProbabilisticActor(module, in_keys=["loc", "scale"], spec=env.action_spec, distribution_class=TanhNormal)
""",
    "train.py": """
from torchrl.envs.utils import ExplorationType, set_exploration_type
from models import make_actor, make_env

env = make_env()
actor = make_actor(env)
with set_exploration_type(ExplorationType.MODE):
    env.rollout(3, actor)
""",
}


def _write(folder, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


def _rlguard(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "rlguard", *args, "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True)


def _runs(folder) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "train.py"], cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("files, expected", [
    (WRAPPER_PROJECT, {"train.py": "exploration_policy[-1].step(3)",
                       "agent.py": "TensorDictSequential(actor, OrnsteinUhlenbeckProcessModule(spec=actor.spec.clone()"}),
    (MODE_PROJECT, {"train.py": "set_exploration_type(ExplorationType.DETERMINISTIC)"}),
], ids=["wrapper-step", "mode-tanh-normal"])
def test_the_old_project_fails_and_runs_after_the_fix(tmp_path, files, expected):
    torchrl = pytest.importorskip("torchrl")
    if tuple(int(p) for p in torchrl.__version__.split(".")[:2]) != NEWEST_KNOWN_TORCHRL[:2]:
        pytest.skip(f"the proofs run on torchrl {NEWEST_KNOWN_TORCHRL}, not {torchrl.__version__}")
    _write(tmp_path, files)
    assert _runs(tmp_path).returncode != 0, "the old project runs on the tested stack: nothing to prove"
    fixed = _rlguard("fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert fixed.returncode in (0, 1), fixed.stderr
    for name, text in expected.items():
        assert text in (tmp_path / name).read_text(encoding="utf-8"), name
    assert _rlguard("check", "--select", "RLG007", ".", cwd=tmp_path).returncode == 0
    done = _runs(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]


def _train_findings(files: dict[str, str]) -> list:
    extra = {name: text for name, text in files.items() if name != "train.py"}
    return check_source(files["train.py"], select=["RLG007"], extra_files=extra)


def test_the_step_finding_names_the_wrapper_and_the_module():
    (finding,) = _train_findings(WRAPPER_PROJECT)
    assert "`exploration_policy` is a `OrnsteinUhlenbeckProcessWrapper`" in finding.message
    assert finding.fix is not None and finding.fix.applicability == "unsafe"


def test_mode_names_the_module_that_imports_tanh_normal():
    (finding,) = _train_findings(MODE_PROJECT)
    assert "raises with `TanhNormal` (which `models` imports)" in finding.message


def test_findings_do_not_depend_on_which_files_are_given(tmp_path):
    for files in (WRAPPER_PROJECT, MODE_PROJECT):
        _write(tmp_path, files)
        done = _rlguard("check", "--select", "RLG007", "train.py", cwd=tmp_path)
        assert done.returncode == 1 and "train.py" in done.stdout, done.stdout


NEAR_MISSES = {
    # ``.step()`` of what a factory returns that is no wrapper: an optimizer, or the module that replaced it.
    "optimizer-step": {
        "agent.py": "import torch\n\n\ndef make(net):\n    return net, torch.optim.Adam(net.parameters())\n",
        "train.py": "from agent import make\n\nnet, optim = make(model)\noptim.step()\n",
    },
    "module-step": {
        "agent.py": ("from tensordict.nn import TensorDictSequential\nfrom torchrl.modules import AdditiveGaussianModule\n\n\n"
                     "def make(actor):\n    return actor, TensorDictSequential(actor, AdditiveGaussianModule(spec=actor.spec))\n"),
        "train.py": "from agent import make\n\nactor, explore = make(actor)\nexplore[-1].step()\n",
    },
    # Returns that disagree: the value may be something else.
    "factory-returns-differ": {
        "agent.py": ("import torch\nfrom torchrl.modules import EGreedyWrapper\n\n\ndef make(actor, old):\n"
                     "    if old:\n        return EGreedyWrapper(actor)\n    return torch.optim.Adam(actor.parameters())\n"),
        "train.py": "from agent import make\n\nexplore = make(actor, False)\nexplore.step()\n",
    },
    # MODE beside a project module that builds no TanhNormal actor.
    "mode-without-tanh-normal": {
        "models.py": "from torchrl.modules import QValueActor\n\n\ndef make_actor(net):\n    return QValueActor(net)\n",
        "train.py": ("from torchrl.envs.utils import ExplorationType\nfrom models import make_actor\n\n"
                     "mode = ExplorationType.MODE\n"),
    },
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_not_flagged(name):
    assert not _train_findings(NEAR_MISSES[name]), name
