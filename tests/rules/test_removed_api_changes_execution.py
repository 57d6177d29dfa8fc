"""Changes beyond names (renamed keywords, dict keys forwarded as keywords, wrappers whose constructor
only raises, enum members that raise, moved names sharing an import), proven on the real torchrl: each
old snippet fails on the tested stack, ``rlguard fix --unsafe-fixes`` rewrites it, and the fixed
snippet runs (a real PendulumEnv, real losses and actors)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rlguard.rules.data import NEWEST_KNOWN_TORCHRL
from rlguard.testing import check_source, fix_source

torchrl = pytest.importorskip("torchrl")
if tuple(int(p) for p in torchrl.__version__.split(".")[:2]) != NEWEST_KNOWN_TORCHRL[:2]:
    pytest.skip(f"the proofs run on torchrl {NEWEST_KNOWN_TORCHRL}, not {torchrl.__version__}",
                allow_module_level=True)

# PendulumEnv's angle and speed, as one "observation" vector of 2.
ENV = """
import torch
from torchrl.envs import CatTensors, Compose, PendulumEnv, TransformedEnv, UnsqueezeTransform
env = TransformedEnv(PendulumEnv(), Compose(UnsqueezeTransform(dim=-1, in_keys=["th", "thdot"]),
                                            CatTensors(in_keys=["th", "thdot"], out_key="observation",
                                                       del_keys=False)))
"""
ACTOR_CRITIC = ENV + """
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator

net = torch.nn.Sequential(torch.nn.Linear(2, 2), NormalParamExtractor())
module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
"""

SNIPPETS = {
    "ppo-coef": ACTOR_CRITIC + """
from torchrl.objectives import ClipPPOLoss
actor = ProbabilisticActor(module, in_keys=["loc", "scale"], distribution_class=TanhNormal, return_log_prob=True)
critic = ValueOperator(torch.nn.Linear(2, 1), in_keys=["observation"])
loss = ClipPPOLoss(actor, critic, entropy_coef=0.01, critic_coef=0.5)
assert loss.entropy_coeff == 0.01
""",
    "a2c-coef": ACTOR_CRITIC + """
from torchrl.objectives import A2CLoss
actor = ProbabilisticActor(module, in_keys=["loc", "scale"], distribution_class=TanhNormal, return_log_prob=True)
critic = ValueOperator(torch.nn.Linear(2, 1), in_keys=["observation"])
loss = A2CLoss(actor_network=actor, critic_network=critic, entropy_coef=0.02, critic_coef=1.0)
""",
    "tanh-normal-dict-keys": ACTOR_CRITIC + """
actor = ProbabilisticActor(
    module, in_keys=["loc", "scale"], spec=env.action_spec, distribution_class=TanhNormal,
    distribution_kwargs={"min": env.action_spec.space.low, "max": env.action_spec.space.high},
)
env.rollout(3, actor)
""",
    # The sota scripts' way: the class and the dict bound to names first (an unsafe fix: the dict may be
    # read elsewhere too).
    "tanh-normal-dict-variable": ACTOR_CRITIC + """
distribution_class = TanhNormal
distribution_kwargs = {"min": env.action_spec.space.low, "max": env.action_spec.space.high}
actor = ProbabilisticActor(module, in_keys=["loc", "scale"], spec=env.action_spec,
                           distribution_class=distribution_class, distribution_kwargs=distribution_kwargs)
env.rollout(3, actor)
""",
    "tanh-normal-keywords": """
import torch
from torchrl.modules import TanhNormal
dist = TanhNormal(torch.zeros(2), torch.ones(2), min=-2.0, max=2.0)
assert dist.sample().abs().max() <= 2.0
""",
    "unsqueeze-dim": """
from torchrl.envs import PendulumEnv, TransformedEnv, UnsqueezeTransform
env = TransformedEnv(PendulumEnv(), UnsqueezeTransform(unsqueeze_dim=-1, in_keys=["th"]))
assert env.reset()["th"].shape[-1] == 1
""",
    "bounded-minimum": """
import torch
from torchrl.data import Bounded
spec = Bounded(minimum=-1.0, maximum=1.0, shape=(2,))
assert spec.rand().abs().max() <= 1.0
""",
    # A removed property reached through the attribute that holds its class (TensorSpec.space).
    "space-minimum": """
from torchrl.data import Bounded
spec = Bounded(low=-1.0, high=1.0, shape=(2,))
assert (spec.space.minimum == -1).all() and (spec.space.maximum == 1).all()
""",
    "exploration-mode": ACTOR_CRITIC + """
from torchrl.envs.utils import ExplorationType, set_exploration_type
actor = ProbabilisticActor(module, in_keys=["loc", "scale"], spec=env.action_spec, distribution_class=TanhNormal)
with set_exploration_type(ExplorationType.MODE):
    env.rollout(3, actor)
""",
    "additive-gaussian-wrapper": ENV + """
from torchrl.modules import Actor, AdditiveGaussianWrapper
actor = Actor(torch.nn.Linear(2, 1), in_keys=["observation"], spec=env.action_spec)
exploration = AdditiveGaussianWrapper(actor, sigma_init=0.5, sigma_end=0.1, annealing_num_steps=10)
env.rollout(3, exploration)
exploration.step(3)
actor(env.reset())  # the actor's own spec is intact
""",
    "ou-wrapper": ENV + """
from torchrl.envs import InitTracker
from torchrl.modules import Actor, OrnsteinUhlenbeckProcessWrapper
env.append_transform(InitTracker())
actor = Actor(torch.nn.Linear(2, 1), in_keys=["observation"], spec=env.action_spec)
policy = OrnsteinUhlenbeckProcessWrapper(actor, annealing_num_steps=100)
env.rollout(3, policy)
policy.step(3)
""",
    "egreedy-wrapper": ENV + """
from torchrl.data import OneHot
from torchrl.modules import EGreedyWrapper, QValueActor
actor = QValueActor(torch.nn.Linear(2, 4), in_keys=["observation"], spec=OneHot(4))
policy = EGreedyWrapper(actor, eps_init=0.9, eps_end=0.1, annealing_num_steps=10)
td = policy(env.reset())
assert td["action"].shape[-1] == 4
policy.step()
""",
    # The wrapped network, then the module that does the rest of the wrapper's work, with its arguments.
    "normal-param-wrapper": ENV + """
from tensordict.nn import TensorDictModule
from torchrl.modules import NormalParamWrapper, ProbabilisticActor, TanhNormal
net = NormalParamWrapper(torch.nn.Linear(2, 2), scale_mapping="exp", scale_lb=0.25)
module = TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"])
actor = ProbabilisticActor(module, in_keys=["loc", "scale"], spec=env.action_spec, distribution_class=TanhNormal)
env.rollout(3, actor)
assert (actor(env.reset())["scale"] >= 0.25).all()
""",
    "normal-param-wrapper-positional": """
import torch
from torchrl.modules.distributions import NormalParamWrapper
net = NormalParamWrapper(torch.nn.Linear(3, 4), "exp", 0.5)
loc, scale = net(torch.randn(5, 3))
assert loc.shape == scale.shape == (5, 2) and (scale >= 0.5).all()
""",
    # tensordict's own wrapper, gone from the module users imported it from: the same rewrite, not a rename
    # (``NormalParamExtractor(net)`` would take ``net`` for its scale mapping).
    "normal-param-wrapper-tensordict": """
import torch
from tensordict.nn.distributions import NormalParamWrapper
net = NormalParamWrapper(torch.nn.Linear(3, 4))
loc, scale = net(torch.randn(5, 3))
assert loc.shape == scale.shape == (5, 2) and (scale > 0).all()
""",
    # torchrl 0.1's layout of the spec containers (``env.specs``, ``env.input_spec``, ``env.output_spec``).
    "spec-layout": ENV + """
specs = env.specs
action = specs["input_spec"]["action"]
observation = specs["output_spec"]["observation"]["observation"]
reward, done = env.output_spec["reward"], env.output_spec["done"]
assert action.shape == (1,) and observation.shape == (2,) and reward.shape == (1,) and done.dtype == torch.bool
assert (action.space.low == env.action_spec.space.low).all()
""",
    "moved-names-one-import": """
from torchrl.data.rlhf.utils import AdaptiveKLController, ConstantKLController
controller = AdaptiveKLController(init_kl_coef=0.1, target=6.0, horizon=10000)
constant = ConstantKLController(kl_coef=0.1)
""",
}


# Runs each snippet in a fresh namespace of one interpreter: the verdict per snippet, as JSON.
RUNNER = """
import json, sys, traceback, warnings
warnings.simplefilter("ignore")
results = []
for source in json.load(sys.stdin):
    try:
        exec(compile(source, "<snippet>", "exec"), {})
        results.append(["ok", ""])
    except Exception as error:
        results.append([type(error).__name__, traceback.format_exc()[-600:]])
print(json.dumps(results))
"""


def _run_all(sources: list[str]) -> list[tuple[str, str]]:
    done = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(sources), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return [tuple(r) for r in json.loads(done.stdout.strip().splitlines()[-1])]


@pytest.fixture(scope="module")
def fixed() -> dict[str, str]:
    return {name: fix_source(source, select=["RLG007"], unsafe=True) for name, source in SNIPPETS.items()}


def test_each_old_snippet_fails_and_its_fix_runs(fixed):
    names = list(SNIPPETS)
    results = _run_all([SNIPPETS[n] for n in names] + [fixed[n] for n in names])
    before, after = results[: len(names)], results[len(names):]
    wrong = []
    for name, (old_verdict, _), (verdict, detail) in zip(names, before, after, strict=True):
        if old_verdict == "ok":
            wrong.append(f"{name}: the old snippet runs on the tested stack: nothing to prove")
        if verdict != "ok":
            wrong.append(f"{name}:\n{fixed[name]}\n{detail}")
        if fixed[name] == SNIPPETS[name]:
            wrong.append(f"{name}: not rewritten")
    assert not wrong, "\n".join(wrong)


def test_fixed_snippets_are_clean(fixed):
    for name, source in fixed.items():
        assert not check_source(source, select=["RLG007"]), name


def test_the_rewrites_read_as_upstream_says(fixed):
    assert "entropy_coeff=0.01, critic_coeff=0.5" in fixed["ppo-coef"]
    assert 'distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high}' \
        in fixed["tanh-normal-dict-keys"]
    assert "AdditiveGaussianWrapper" not in fixed["additive-gaussian-wrapper"]
    assert ("TensorDictSequential(actor, AdditiveGaussianModule(spec=actor.spec.clone(), sigma_init=0.5, "
            "sigma_end=0.1, annealing_num_steps=10))") in fixed["additive-gaussian-wrapper"]
    assert "exploration[-1].step(3)" in fixed["additive-gaussian-wrapper"]
    assert "ExplorationType.DETERMINISTIC" in fixed["exploration-mode"]
    assert "(spec.space.low == -1).all() and (spec.space.high == 1).all()" in fixed["space-minimum"]


def test_the_structural_rewrites_carry_every_argument(fixed):
    assert ('Sequential(torch.nn.Linear(2, 2), NormalParamExtractor(scale_mapping="exp", scale_lb=0.25))'
            in fixed["normal-param-wrapper"])
    assert 'Sequential(torch.nn.Linear(3, 4), NormalParamExtractor("exp", 0.5))' in fixed["normal-param-wrapper-positional"]
    assert "NormalParamWrapper" not in fixed["normal-param-wrapper"]  # its import goes with its only use
    assert "Sequential(torch.nn.Linear(3, 4), NormalParamExtractor())" in fixed["normal-param-wrapper-tensordict"]
    assert "NormalParamWrapper" not in fixed["normal-param-wrapper-tensordict"]
    assert 'specs["input_spec"]["full_action_spec", "action"]' in fixed["spec-layout"]
    assert 'specs["output_spec"]["full_observation_spec"]["observation"]' in fixed["spec-layout"]
    assert 'env.output_spec["full_done_spec", "done"]' in fixed["spec-layout"]


def test_safe_fixes_apply_without_the_flag_and_unsafe_ones_do_not():
    assert "NormalParamWrapper(" in fix_source(SNIPPETS["normal-param-wrapper"], select=["RLG007"])
    assert '"full_action_spec", "action"' in fix_source(SNIPPETS["spec-layout"], select=["RLG007"])
    assert fix_source(SNIPPETS["tanh-normal-dict-variable"], select=["RLG007"]) == SNIPPETS["tanh-normal-dict-variable"]
    assert "entropy_coeff=" in fix_source(SNIPPETS["ppo-coef"], select=["RLG007"])
    assert fix_source(SNIPPETS["exploration-mode"], select=["RLG007"]) == SNIPPETS["exploration-mode"]
    assert "AdditiveGaussianWrapper(" in fix_source(SNIPPETS["additive-gaussian-wrapper"], select=["RLG007"])


NEAR_MISSES = {
    # A dict key renamed only inside the literal passed to the forwarded argument, for that class.
    "other-class": ACTOR_CRITIC + """
from torch.distributions import Uniform
actor = ProbabilisticActor(module, in_keys=["loc", "scale"], distribution_class=Uniform,
                           distribution_kwargs={"min": 0.0})
""",
    "space-without-torchrl": "box = make_box()\nlow = box.space.minimum\n",
    "dict-elsewhere": """
from torchrl.modules import TanhNormal
options = {"min": -1.0, "max": 1.0}
""",
    # The member is fine with another distribution: no TanhNormal in the file.
    "mode-without-tanh-normal": """
from torchrl.envs.utils import ExplorationType
mode = ExplorationType.MODE
""",
    # Keywords of a same-named class from elsewhere, and the new keywords themselves.
    "own-class": "from my_losses import ClipPPOLoss\n\nloss = ClipPPOLoss(entropy_coef=0.1)\n",
    "new-keywords": "from torchrl.objectives import ClipPPOLoss\n\nloss = ClipPPOLoss(entropy_coeff=0.1)\n",
    # The wrapper before it raised.
    "wrapper-at-old-target": "from torchrl.modules import AdditiveGaussianWrapper\n",
    # The containers' keys of today, a user's own dict of that shape, and the keys at 0.1.
    "spec-layout-new": 'from torchrl.envs import PendulumEnv\n\nspecs = PendulumEnv().specs\n'
                       'action = specs["input_spec"]["full_action_spec"]["action"]\n',
    "spec-layout-without-torchrl": 'config = {"input_spec": {"action": 1}}\naction = config["input_spec"]["action"]\n',
    "spec-layout-at-old-target": 'from torchrl.envs import GymEnv\n\naction = GymEnv("Pendulum-v1").input_spec["action"]\n',
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_not_flagged(name):
    target = {"wrapper-at-old-target": "0.6", "spec-layout-at-old-target": "0.1"}.get(name)
    assert not check_source(NEAR_MISSES[name], select=["RLG007"], target=target), name


def test_a_wrapper_call_that_does_not_fit_is_flagged_without_a_fix():
    source = ("from torchrl.modules import AdditiveGaussianWrapper\n\n"
              "policy = AdditiveGaussianWrapper(make_actor(), sigma_init=0.5)\n")
    found = check_source(source, select=["RLG007"])
    assert found and all(f.fix is None for f in found)
    assert "spec=policy.spec.clone()" in " ".join(f.full_message for f in found)


def test_a_module_wrapper_call_that_does_not_fit_or_clashes_is_flagged_without_a_fix():
    spread = "from torchrl.modules import NormalParamWrapper\n\nnet = NormalParamWrapper(*modules)\n"
    clash = ("from keras import Sequential\nfrom torchrl.modules import NormalParamWrapper\n\n"
             "net = NormalParamWrapper(make_net())\nmodel = Sequential()\n")
    for source, why in ((spread, "the wrapped module and the arguments"), (clash, "`Sequential` names something else")):
        found = check_source(source, select=["RLG007"])
        assert found and all(f.fix is None for f in found), source
        assert why in " ".join(f.full_message for f in found)


def test_a_write_to_a_moved_spec_key_is_flagged_without_a_fix():
    source = 'from torchrl.envs import GymEnv\n\nenv = GymEnv("Pendulum-v1")\nenv.output_spec["observation"] = spec\n'
    found = check_source(source, select=["RLG007"])
    assert len(found) == 1 and found[0].fix is None and "container is locked" in found[0].full_message


@pytest.mark.parametrize(("target", "said"), [("0.6", "silently ignored from torchrl 0.6"),
                                              ("0.7", "0.6 already ignored it without a word")])
def test_tanh_normal_bounds_dropped_by_0_6_are_flagged_on_0_6(target, said):
    found = check_source(SNIPPETS["tanh-normal-dict-keys"], select=["RLG007"], target=target)
    assert [f.message.split("`")[1] for f in found] == ['distribution_kwargs={"min": ...}', 'distribution_kwargs={"max": ...}']
    assert all(said in f.full_message and f.fix is not None for f in found)
    assert not check_source(SNIPPETS["tanh-normal-dict-keys"], select=["RLG007"], target="0.5")
