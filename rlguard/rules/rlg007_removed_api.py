"""RLG007 removed-api: a torchrl or tensordict name, method or keyword that the target removed."""

from __future__ import annotations

from rlguard.rules.base import Example
from rlguard.rules.data import COLLECTOR_RENAMES, REMOVED_API, ApiChange
from rlguard.rules.removed_api import RemovedApiRule


def _not_collector(change: ApiChange) -> bool:
    """Everything in the table but the collector names, which RLG006 reports."""
    return not (change.kind == "name" and change.name in COLLECTOR_RENAMES)


class RemovedApi(RemovedApiRule):
    code = "RLG007"
    name = "removed-api"
    summary = "Imports or uses a torchrl or tensordict API that the target version removed"
    what = (
        "Flags each import and use of a public torchrl or tensordict name that the target torchrl no longer "
        "has (`CompositeSpec`, `BoundedTensorSpec`, `Recorder`, `KLRewardTransform` from `torchrl.envs`, "
        "...), each read of a key torchrl 0.1's spec containers had (`specs[\"input_spec\"][\"action\"]`), "
        "and each use of a removed method or keyword of a public class whose last release warned "
        "about it or whose constructor no longer takes it, each call of a class whose constructor only raises, "
        "an enum member that raises with a class the file, or a project module it imports from, uses "
        "(`ExplorationType.MODE` with `TanhNormal`), an assignment `self.<attr> = ...` in a class deriving "
        "from one whose property setter now refuses every value (`EnvBase.device`, `EnvBase.input_spec`; in "
        "`__init__` before the constructor stores a device, the first value is taken; on an instance the class, or "
        "a project class deriving from it, built, where the setter takes no first value), and a `_step` of an "
        "`EnvBase` subclass that returns its output under `\"next\"`, which `step` adds itself since 0.2. "
        "In a file written for a release before a default changed (one of its stale references fails from that "
        "release or earlier), each use that relies on the old default: `ParallelEnv(...)` without `daemon=` "
        "(daemonic workers up to 0.10, not from 0.11) and a `DiscreteSACLoss` whose Q-value key was "
        "\"state_value\" up to 0.1 (\"action_value\" from 0.2). "
        "A value head of an `ActorValueOperator` (`get_value_head()`) given as a value estimator's "
        "`value_network` (`GAE`, `TD0Estimator`, `TD1Estimator`, `TDLambdaEstimator`, `VTrace`, a loss's "
        "`make_value_estimator`), directly, through a name, through a project function that returns it (in any "
        "file) or one that hands it on: from 0.2 the estimator runs it on the next step's keys, which never hold "
        "the common module's output; in a file written for torchrl 0.1 (dated as for a changed default), every "
        "such head, wherever it goes, since 0.1's estimators ran it. "
        "The table behind it is generated from every release's wheel from the first on; "
        "[the upgrade guide](../upgrading.md) renders it. With the `preview` option, names that are "
        "deprecated at the target but not yet removed are flagged too, with the version that removes them."
    )
    why = (
        "TorchRL breaks its public API often, and most TorchRL code on the web was written against an older "
        "release. An import of a removed name raises `ImportError` on the first line that runs; an attribute "
        "(`data.CompositeSpec`) raises `AttributeError`; a removed keyword raises `TypeError`."
    )
    fix_doc = (
        "Safe where the replacement is the same class under a new name (a deprecated subclass that adds "
        "nothing, an alias, or the same name moved to another public module): the import and every use in "
        "the file are renamed, as RLG006 does; a moved name's import gets the new module, and a moved name "
        "imported beside others leaves the statement for its own import. Safe for a keyword upstream renamed "
        "through its own `**kwargs` block (`entropy_coef=` to `entropy_coeff=`), in the call and as a key of a "
        "dict literal passed to an argument the library spreads as that class's keywords "
        "(`distribution_kwargs={\"min\": ...}` with `distribution_class=TanhNormal`; flagged from the release that "
        "dropped it without a word, 0.6 for these). Safe for a read of a key that moved inside torchrl 0.1's "
        "spec containers (`specs[\"input_spec\"][\"action\"]` reads `[\"full_action_spec\", \"action\"]`). "
        "Unsafe where the "
        "replacement takes other arguments or behaves differently (`UnboundedDiscreteTensorSpec` defaulted to "
        "int64; `Recorder` became `LogValidationReward`): the message says what to check; for a policy wrapper "
        "whose constructor only raises, rewritten as `TensorDictSequential(policy, "
        "AdditiveGaussianModule(spec=policy.spec.clone(), ...))` with `.step()` called on the module (the "
        "clone keeps the policy's own spec), in any file of the project that gets the wrapper from a factory; for "
        "`NormalParamWrapper(net, ...)`, rewritten as `Sequential(net, NormalParamExtractor(...))` with its other "
        "arguments (`torch.nn.Sequential` passes one input and one output between modules, and `net`'s state_dict "
        "keys change); and for "
        "`ExplorationType.MODE` in a file using `TanhNormal` or importing from a project module that does, "
        "which becomes `DETERMINISTIC`; for `self.device = d`, rewritten as `self.to(d)`, as upstream's message "
        "says (it also moves the specs and the module's tensors to `d`), under `if d is not None:` unless `d` is a "
        "string or a `torch.device(...)` (the old attribute took None, `to` refuses it); for `self.input_spec = spec`, rewritten "
        "as `self.state_spec = spec` (torchrl 0.1's `input_spec` held the action too, under `\"action\"`: an "
        "entry of that name must go to `action_spec`); and for a `_step` returning `TensorDict({\"next\": "
        "{...}}, ...)`, the literal loses its `\"next\"` level and the method's reads of `out[\"next\"]` "
        "become `out` (not rewritten when the method reads what it returns otherwise). Unsafe for a default that changed: the old value is passed "
        "(`daemon=True`; `loss.set_keys(action_value=\"state_value\")` after the line building the loss), only "
        "where a stale reference dates the file before the change and no pin bounds the code to releases from "
        "the change on: modern code means the new default. Unsafe for a value head given to an estimator, where "
        "the file takes the head, and for a head in a file written for 0.1: `get_value_operator()` instead (the "
        "common module, then the head; it computes the features on both steps, where 0.1 read the current "
        "step's for the next value; its parameters include the common module's, so an optimizer also given the "
        "actor's lists them twice, which torch warns about); no fix where the head is taken in another file (a "
        "project function returns it): the message says to call it there. No fix where upstream names no replacement, for removed methods and "
        "keywords without a successor, and for a wrapper call passing more than the policy and keywords the "
        "module takes: the message says what to write."
    )
    valid = (
        Example("from torchrl.data import Composite, Unbounded\n\nspec = Composite(obs=Unbounded(3))\n"),
        Example("from torchrl.data import CompositeSpec\n\nspec = CompositeSpec()\n", target="0.10",
                note="Before 0.11 the old spec names still exist (deprecated: the `preview` option flags them)."),
        Example("from my_project.specs import CompositeSpec\n\nspec = CompositeSpec()\n",
                note="A class of the same name from another package is not torchrl's."),
        Example("from torchrl.envs import ParallelEnv, PendulumEnv\n\nenv = ParallelEnv(2, PendulumEnv)\n",
                note="Nothing dates the file before torchrl 0.11, whose workers are not daemonic: the new "
                     "default is what it means."),
        Example("from torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n    def __init__(self, device):\n"
                "        super().__init__(batch_size=[])\n        self.device = device\n",
                note="The first value, before the constructor stores one (none was passed), is taken."),
        Example("from torch import nn\n\n\nclass Net(nn.Module):\n    def _reset(self, device):\n"
                "        self.device = device\n"),
        Example("from tensordict import TensorDict\nfrom torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n"
                "    def __init__(self, spec):\n        super().__init__(device=\"cpu\")\n"
                "        self.observation_spec = spec\n\n    def _step(self, td):\n"
                "        return TensorDict({\"obs\": td[\"obs\"], \"next_obs\": {\"a\": 1}}, td.shape)\n",
                note="Modern code: the device given to the constructor, specs set through their properties, and "
                     "`_step`'s entries at the root."),
        Example("from torchrl.modules import ActorValueOperator\nfrom torchrl.objectives import ClipPPOLoss\n"
                "from torchrl.objectives.value import GAE\n\n"
                "actor_critic = ActorValueOperator(common, policy_head, value_head)\n"
                "advantage = GAE(gamma=0.99, lmbda=0.95, value_network=actor_critic.get_value_operator())\n"
                "loss = ClipPPOLoss(actor_critic.get_policy_operator(), actor_critic.get_value_head())\n",
                note="The estimator gets the common module and the head; a loss's critic reads data the policy "
                     "operator (common module included) already wrote, and runs."),
        Example("from torchrl.objectives.value import GAE\n\n\nclass Model:\n    def get_value_head(self):\n"
                "        return self.head\n\n\nadvantage = GAE(gamma=0.99, lmbda=0.95, "
                "value_network=Model().get_value_head())\n",
                note="A project class's method of the same name is not torchrl's."),
    )
    invalid = (
        Example(
            "from torchrl.data import CompositeSpec, UnboundedContinuousTensorSpec\n\n"
            "spec = CompositeSpec(obs=UnboundedContinuousTensorSpec(shape=(3,)))\n",
            fixed="from torchrl.data import Composite, Unbounded\n\n"
            "spec = Composite(obs=Unbounded(shape=(3,)))\n",
            message="use `Composite`",
        ),
        Example(
            "import torchrl.data as data\n\nspec = data.BoundedTensorSpec(-1.0, 1.0, shape=(1,))\n",
            fixed="import torchrl.data as data\n\nspec = data.Bounded(-1.0, 1.0, shape=(1,))\n",
        ),
        Example(
            "from torchrl.envs import KLRewardTransform\n",
            fixed="from torchrl.envs.llm import KLRewardTransform\n",
            note="A name that moved to another module: the statement imports it from there.",
        ),
        Example(
            "from torchrl.data import UnboundedDiscreteTensorSpec\n\nspec = UnboundedDiscreteTensorSpec(shape=(1,))\n",
            fixed="from torchrl.data import Unbounded\n\nspec = Unbounded(shape=(1,))\n",
            unsafe=True,
            message="pass `dtype=torch.int64`",
            note="The replacement's defaults differ: an unsafe fix, and the message says what to add.",
        ),
        Example(
            "from tensordict.utils import KeyedJaggedTensor\n",
            message="upstream names no replacement",
            note="No replacement known: no fix.",
        ),
        Example(
            "from torchrl.envs import VecNorm\n",
            target="0.14",
            options={"preview": True},
            message="deprecated since torchrl 0.8",
            fixed="from torchrl.envs import VecNormV2\n",
            unsafe=True,
            note="With `preview`, deprecated names that still exist are flagged.",
        ),
        Example(
            "from torchrl.objectives import ClipPPOLoss\n\nloss = ClipPPOLoss(actor, critic, entropy_coef=0.01)\n",
            fixed="from torchrl.objectives import ClipPPOLoss\n\nloss = ClipPPOLoss(actor, critic, entropy_coeff=0.01)\n",
            message="use `entropy_coeff`",
            note="A keyword renamed through upstream's own `**kwargs` block: a safe rename.",
        ),
        Example(
            "from torchrl.modules import ProbabilisticActor, TanhNormal\n\n"
            "actor = ProbabilisticActor(module, in_keys=['loc', 'scale'], distribution_class=TanhNormal,\n"
            "                           distribution_kwargs={'min': -1.0, 'max': 1.0})\n",
            fixed="from torchrl.modules import ProbabilisticActor, TanhNormal\n\n"
            "actor = ProbabilisticActor(module, in_keys=['loc', 'scale'], distribution_class=TanhNormal,\n"
            "                           distribution_kwargs={'low': -1.0, 'high': 1.0})\n",
            note="The keys of a dict literal the library spreads as the distribution's keywords.",
        ),
        Example(
            "from torchrl.modules import AdditiveGaussianWrapper\n\n"
            "policy = AdditiveGaussianWrapper(actor, sigma_init=0.5)\npolicy.step(10)\n",
            fixed="from tensordict.nn import TensorDictSequential\nfrom torchrl.modules import AdditiveGaussianModule\n\n"
            "policy = TensorDictSequential(actor, AdditiveGaussianModule(spec=actor.spec.clone(), sigma_init=0.5))\n"
            "policy[-1].step(10)\n",
            unsafe=True,
            message="raises RuntimeError",
            note="A wrapper whose constructor only raises: the policy followed by the module, on a clone of its spec.",
        ),
        Example(
            "from torchrl.envs import ParallelEnv, PendulumEnv\nfrom torchrl.modules import SafeProbabilisticSequential\n\n"
            "env = ParallelEnv(2, PendulumEnv)\n",
            fixed="from torchrl.envs import ParallelEnv, PendulumEnv\nfrom torchrl.modules import SafeProbabilisticSequential\n\n"
            "env = ParallelEnv(2, PendulumEnv, daemon=True)\n",
            unsafe=True,
            message="defaults to `daemon=False` since torchrl 0.11",
            note="`SafeProbabilisticSequential` is gone from torchrl 0.1: the file was written before 0.11, when "
                 "workers were daemonic (an env never closed let the program end). The fix passes the old default.",
        ),
        Example(
            "from torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n    def __init__(self, spec):\n"
            "        super().__init__(device=\"cpu\")\n        self.input_spec = spec\n",
            fixed="from torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n    def __init__(self, spec):\n"
            "        super().__init__(device=\"cpu\")\n        self.state_spec = spec\n",
            unsafe=True,
            message="`EnvBase`'s setter refuses it",
            note="A property whose setter refuses every value since 0.2: the property that holds the inputs now.",
        ),
        Example(
            "from torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n    def _reset(self, td):\n"
            "        self.device = td.device\n        return td\n",
            fixed="from torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n    def _reset(self, td):\n"
            "        if td.device is not None:\n            self.to(td.device)\n        return td\n",
            unsafe=True,
            message="call `self.to(...)` instead",
        ),
        Example(
            "from tensordict import TensorDict\nfrom torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n"
            "    def _step(self, td):\n        return TensorDict({\"next\": {\"obs\": td[\"obs\"]}}, td.shape)\n",
            fixed="from tensordict import TensorDict\nfrom torchrl.envs import EnvBase\n\n\nclass Env(EnvBase):\n"
            "    def _step(self, td):\n        return TensorDict({\"obs\": td[\"obs\"]}, td.shape)\n",
            unsafe=True,
            message="keys land under",
            note="`_step`'s output moved to the root in 0.2 (`step` nests it).",
        ),
        Example(
            "from torchrl.modules import ActorValueOperator\nfrom torchrl.objectives.value import GAE\n\n"
            "actor_critic = ActorValueOperator(common, policy_head, value_head)\n"
            "critic = actor_critic.get_value_head()\nadvantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic)\n",
            fixed="from torchrl.modules import ActorValueOperator\nfrom torchrl.objectives.value import GAE\n\n"
            "actor_critic = ActorValueOperator(common, policy_head, value_head)\n"
            "critic = actor_critic.get_value_operator()\nadvantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic)\n",
            unsafe=True,
            message="reads the common module's output",
            note="From torchrl 0.2 an estimator runs its network on the next step's keys, which never hold the "
                 "common module's output: it needs the common module too.",
        ),
        Example(
            "from torchrl.modules import ActorValueOperator\nfrom torchrl.objectives.value import TDEstimate\n\n\n"
            "def make_models(common, policy_head, value_head):\n"
            "    actor_critic = ActorValueOperator(common, policy_head, value_head)\n"
            "    return actor_critic.get_policy_operator(), actor_critic.get_value_head()\n",
            fixed="from torchrl.modules import ActorValueOperator\nfrom torchrl.objectives.value import TDEstimate\n\n\n"
            "def make_models(common, policy_head, value_head):\n"
            "    actor_critic = ActorValueOperator(common, policy_head, value_head)\n"
            "    return actor_critic.get_policy_operator(), actor_critic.get_value_operator()\n",
            unsafe=True,
            message="ran in torchrl 0.1's value estimators",
            note="A file written for torchrl 0.1 (`TDEstimate` is gone from 0.1) returns a head: its callers gave "
                 "it to an estimator, which 0.1 ran on the current step's features.",
        ),
    )
    owns = staticmethod(_not_collector)
    # A subclass of an environment class whose setter refuses assignment, or whose ``_step`` output
    # moved, may name neither the class nor the attribute's owner: its bases decide (any linted file).
    class_roots = frozenset(c.name.split(".")[0] for c in REMOVED_API if c.kind in ("setter", "returns"))
    judges_defaults = True
    judges_value_heads = True
