"""RLG007's value heads (``rules/value_heads.py``): an ``ActorValueOperator``'s ``get_value_head()`` given to a
value estimator. Flagged code and near misses, then the proof on the real torchrl: the old snippet fails in
the estimator, the fixed one runs (an operator on a ``mocking_classes`` environment)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.rules.data import NEWEST_KNOWN_TORCHRL
from rlguard.testing import check_source, fix_source

HEADER = ("from torchrl.modules import ActorValueOperator\n"
          "from torchrl.objectives.value import GAE, TD0Estimator, TD1Estimator, TDLambdaEstimator, VTrace\n"
          "from torchrl.objectives import ClipPPOLoss\n\n")
AVO = "actor_critic = ActorValueOperator(common, policy_head, value_head)\n"


def _lines(source: str, **kwargs) -> list[int]:
    return sorted(f.line for f in check_source(source, select=["RLG007"], **kwargs)
                  if "common module's output" in f.message)


@pytest.mark.parametrize("estimator", ["GAE(gamma=0.9, lmbda=0.9, ", "TD0Estimator(gamma=0.9, ",
                                       "TD1Estimator(gamma=0.9, ", "TDLambdaEstimator(gamma=0.9, lmbda=0.9, ",
                                       "VTrace(gamma=0.9, actor_network=actor, "])
def test_each_estimator_given_the_head_is_flagged(estimator):
    source = HEADER + AVO + f"adv = {estimator}value_network=actor_critic.get_value_head())\n"
    assert _lines(source) == [6]


def test_through_a_name_a_loss_and_a_project_function():
    source = HEADER + AVO + (
        "critic = actor_critic.get_value_head()\n"
        "loss = ClipPPOLoss(actor, critic)\n"
        "loss.make_value_estimator(value_network=critic)\n"
        "\n\ndef make_advantage(value_network):\n    return GAE(gamma=0.9, lmbda=0.9, value_network=value_network)\n"
        "\n\ndef keep(net):\n    return net\n\n\n"
        "adv = make_advantage(actor_critic.get_value_head())\n"
        "kept = keep(actor_critic.get_value_head())\n")
    assert _lines(source) == [8, 19]


def test_an_operator_from_a_project_factory_in_another_file():
    models = "from torchrl.modules import ActorValueOperator\n\n\ndef make():\n" \
             "    return ActorValueOperator(common, policy_head, value_head)\n"
    source = HEADER + "from models import make\n\nmodel = make().to('cpu')\n" \
        "adv = GAE(gamma=0.9, lmbda=0.9, value_network=model.get_value_head())\n"
    assert _lines(source, extra_files={"models.py": models}) == [8]


@pytest.mark.parametrize("source", [
    HEADER + AVO + "adv = GAE(gamma=0.9, lmbda=0.9, value_network=actor_critic.get_value_operator())\n",
    HEADER + AVO + "loss = ClipPPOLoss(actor_critic.get_policy_operator(), actor_critic.get_value_head())\n",
    HEADER + "class Model:\n    def get_value_head(self):\n        return self.head\n\n\n"
             "adv = GAE(gamma=0.9, lmbda=0.9, value_network=Model().get_value_head())\n",
    HEADER + "from torchrl.modules import ActorCriticOperator\n\nac = ActorCriticOperator(common, policy, qvalue)\n"
             "adv = GAE(gamma=0.9, lmbda=0.9, value_network=ac.get_value_head())\n",
], ids=["value-operator", "loss-critic", "project-class", "actor-critic-operator"])
def test_near_misses(source):
    assert _lines(source) == []


def test_not_before_torchrl_0_2():
    """torchrl 0.1 ran the next step on ``step_mdp(td)``, which kept the root's features: the head ran."""
    source = HEADER + AVO + "adv = GAE(gamma=0.9, lmbda=0.9, value_network=actor_critic.get_value_head())\n"
    assert _lines(source, target="0.1") == []


MODELS = ("from torchrl.modules import ActorValueOperator\n\n\n"
          "def make_models(env, common, policy_head, value_head):\n"
          "    actor_critic = ActorValueOperator(common, policy_head, value_head)\n"
          "    return actor_critic.get_policy_operator(), actor_critic.get_value_head()\n")
# The same factory in a file written for torchrl 0.1: its spec read fails from 0.2.
DATED_MODELS = MODELS.replace("    actor_critic =", "    features = env.output_spec[\"observation\"]\n    actor_critic =")
CALLER = HEADER + "from models import make_models\n\nactor, critic = make_models(env, common, policy_head, value_head)\n"


def _head_findings(source: str, **kwargs):
    return [f for f in check_source(source, select=["RLG007"], **kwargs) if "get_value_head()" in f.message]


@pytest.mark.parametrize("use", [
    "critic = critic.to('cpu')\nadv = GAE(gamma=0.9, lmbda=0.9, value_network=critic)\n",
    "loss = ClipPPOLoss(actor, critic)\nloss.make_value_estimator(value_network=critic)\n",
    "adv = make_advantage(critic)\n",
], ids=["estimator", "make-value-estimator", "project-function"])
def test_a_head_a_project_function_returns_is_flagged_where_an_estimator_gets_it(use):
    advantage = "from torchrl.objectives.value import GAE\n\n\ndef make_advantage(value_network):\n" \
                "    return GAE(gamma=0.9, lmbda=0.9, value_network=value_network)\n"
    source = CALLER + "from advantage import make_advantage\n" + use
    (finding,) = _head_findings(source, extra_files={"models.py": MODELS, "advantage.py": advantage})
    assert finding.line == source.count("\n") and finding.fix is None  # the head is taken in models.py
    assert "a project function returns this value" in finding.remedy


@pytest.mark.parametrize("use", [
    "adv = GAE(gamma=0.9, lmbda=0.9, value_network=actor)\n",  # item 0: the policy operator
    "loss = ClipPPOLoss(actor, critic)\n",  # a loss's critic runs on data the actor wrote
], ids=["other-item", "loss-critic"])
def test_returned_near_misses(use):
    assert _head_findings(CALLER + use, extra_files={"models.py": MODELS}) == []


def test_an_operator_returned_instead_is_silent():
    models = MODELS.replace("get_value_head()", "get_value_operator()")
    source = CALLER + "adv = GAE(gamma=0.9, lmbda=0.9, value_network=critic)\n"
    assert _head_findings(source, extra_files={"models.py": models}) == []


def test_a_head_in_a_file_written_for_torchrl_0_1_is_flagged_and_fixed():
    """torchrl 0.1's estimators ran a head on the current features; where its callers take it is not followed."""
    (finding,) = _head_findings(DATED_MODELS)
    assert finding.line == 7 and "ran in torchrl 0.1's value estimators" in finding.message
    assert "`EnvBase.output_spec.observation`, which fails from torchrl 0.2" in finding.remedy
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    fixed = fix_source(DATED_MODELS, unsafe=True, select=["RLG007"])
    assert "actor_critic.get_value_operator()" in fixed and "get_value_head" not in fixed


@pytest.mark.parametrize("source, target", [
    (MODELS, None),  # nothing dates it: a head is fine where no estimator runs it
    (DATED_MODELS, "0.1"),  # the target still runs heads in estimators
    (DATED_MODELS, ">=0.2"),  # the pin judges the code on 0.2 and later only
    (DATED_MODELS.replace("ActorValueOperator(", "ActorCriticOperator(").replace(
        "import ActorValueOperator", "import ActorCriticOperator"), None),  # a Q-value head
])
def test_dated_near_misses(source, target):
    assert _head_findings(source, target=target) == []


PROOF = """
import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torchrl.modules import ActorValueOperator, ProbabilisticActor, TanhNormal, ValueOperator
from torchrl.objectives.value import GAE
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

env = ContinuousActionVecMockEnv()
observations, actions = env.observation_spec["observation"].shape[-1], env.action_spec.shape[-1]
common = TensorDictModule(torch.nn.Linear(observations, 8), in_keys=["observation"], out_keys=["hidden"])
policy_head = ProbabilisticActor(
    TensorDictModule(torch.nn.Sequential(torch.nn.Linear(8, 2 * actions), NormalParamExtractor()),
                     in_keys=["hidden"], out_keys=["loc", "scale"]),
    in_keys=["loc", "scale"], distribution_class=TanhNormal, spec=env.action_spec)
value_head = ValueOperator(torch.nn.Linear(8, 1), in_keys=["hidden"])
actor_critic = ActorValueOperator(common, policy_head, value_head)
critic = actor_critic.get_value_head()
advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic)
data = env.rollout(5, actor_critic.get_policy_operator())
advantage(data)
assert data["advantage"].shape == data["next", "reward"].shape
"""


def test_the_head_fails_in_the_estimator_and_the_fix_runs():
    torchrl = pytest.importorskip("torchrl")
    if tuple(int(p) for p in torchrl.__version__.split(".")[:2]) != NEWEST_KNOWN_TORCHRL[:2]:
        pytest.skip(f"the proof runs on torchrl {NEWEST_KNOWN_TORCHRL}, not {torchrl.__version__}")
    fixed = fix_source(PROOF, select=["RLG007"], unsafe=True)
    assert fixed == PROOF.replace("critic = actor_critic.get_value_head()", "critic = actor_critic.get_value_operator()")
    old = subprocess.run([sys.executable, "-c", PROOF], capture_output=True, text=True)
    assert old.returncode != 0 and "The sets of keys in the tensordicts to stack are exclusive" in old.stderr
    new = subprocess.run([sys.executable, "-c", fixed], capture_output=True, text=True)
    assert new.returncode == 0, new.stderr[-2000:]
