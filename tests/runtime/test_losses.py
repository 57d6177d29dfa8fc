"""Every torchrl 0.14.1 path that deep-copies a user's network, with an uncopyable network.

``grep deepcopy torchrl/objectives`` finds five: ``LossModule.get_stateful_net``,
``DDPGLoss.__init__``, ``QMixerLoss.__init__``, ``DiscreteCQLLoss.make_value_estimator`` (run
by the first forward) and ``VTrace.for_loss`` (``make_value_estimator(ValueEstimators.VTrace)``
on a functional loss). Each test shows stock torchrl failing first, then the corrected path.
"""

from __future__ import annotations

import copy
import threading
import warnings
from collections.abc import Callable

import pytest
import torch
from rlguard_runtime_helpers import OBS, LockedNet, only, policy
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.modules import ProbabilisticActor, QValueActor, QValueModule, SafeSequential, TanhNormal, ValueOperator
from torchrl.modules.models.multiagent import QMixer
from torchrl.objectives import A2CLoss, ClipPPOLoss, DDPGLoss, DiscreteCQLLoss, DQNLoss, ReinforceLoss
from torchrl.objectives.multiagent import QMixerLoss
from torchrl.objectives.utils import ValueEstimators
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv, DiscreteActionVecMockEnv

from rlguard.advice import ESTIMATOR, LOSS, STATEFUL, remedy
from rlguard.runtime import RLGuardError, RLGuardWarning, installed, uncopyable

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # torchrl 0.15 transform notice
FRAMES = 8


def devices(network: nn.Module) -> set[str]:
    return {tensor.device.type for tensor in [*network.parameters(), *network.buffers()]}


def rlguard_message(record: list[warnings.WarningMessage]) -> str:
    [message] = [str(w.message) for w in record if issubclass(w.category, RLGuardWarning)]
    return message


class QNet(nn.Module):
    def __init__(self, observations: int, actions: int) -> None:
        super().__init__()
        self.linear = nn.Linear(observations, actions)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.linear(observation)


class LockedQNet(QNet):
    def __init__(self, observations: int, actions: int) -> None:
        super().__init__(observations, actions)
        self.lock = threading.Lock()


def q_actor(net: nn.Module, env: DiscreteActionVecMockEnv) -> QValueActor:
    return QValueActor(net, in_keys=["observation"], spec=env.action_spec)


# ----- LossModule.get_stateful_net -----

def test_get_stateful_net_falls_back_to_no_copy() -> None:
    env = DiscreteActionVecMockEnv()
    loss = DQNLoss(q_actor(LockedQNet(OBS, env.action_spec.shape[-1]), env), action_space=env.action_spec)
    with pytest.raises(TypeError, match="cannot pickle"):
        loss.get_stateful_net("value_network")
    with installed(**only("collectors")), pytest.warns(RLGuardWarning) as record:
        net = loss.get_stateful_net("value_network")
    message = rlguard_message(record)
    assert "DQNLoss.get_stateful_net('value_network')" in message
    assert "`value_network.module[0].module.lock` (_thread.lock) (held by LockedQNet" in message
    assert remedy(STATEFUL, "LockedQNet") in message and "RLG001" in message and "policy_factory" not in message
    assert net is loss.value_network
    torch.testing.assert_close(net.module[0].linear.weight,
                               loss.value_network_params["module", "0", "module", "linear", "weight"])


# ----- constructors that keep a copy: DDPGLoss and QMixerLoss -----

class Critic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2 * OBS, 1)

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.cat([observation, action], -1))


def ddpg_networks(actor_net: nn.Module) -> tuple[TensorDictModule, ValueOperator]:
    return policy(actor_net), ValueOperator(Critic(), in_keys=["observation", "action"])


def qmixer_networks(local_net: nn.Module) -> tuple[SafeSequential, TensorDictModule]:
    local = SafeSequential(
        TensorDictModule(local_net, in_keys=[("agents", "observation")], out_keys=[("agents", "action_value")]),
        QValueModule(action_value_key=("agents", "action_value"), action_space="categorical",
                     out_keys=[("agents", "action"), ("agents", "action_value"), ("agents", "chosen_action_value")]),
    )
    mixer = TensorDictModule(QMixer(state_shape=(3,), mixing_embed_dim=4, n_agents=2, device="cpu"),
                             in_keys=[("agents", "chosen_action_value"), "state"], out_keys=["chosen_action_value"])
    return local, mixer


def build_ddpg(net: nn.Module) -> DDPGLoss:
    return DDPGLoss(*ddpg_networks(net))


def build_qmixer(net: nn.Module) -> QMixerLoss:
    return QMixerLoss(*qmixer_networks(net), action_space="categorical")


CONSTRUCTORS = [
    pytest.param(build_ddpg, LockedNet, "DDPGLoss deep-copies its actor and value networks",
                 "`actor_network.module.lock`", id="DDPGLoss"),
    pytest.param(build_qmixer, lambda: LockedQNet(OBS, 3), "QMixerLoss deep-copies its local value and mixer",
                 "`local_value_network.module[0].module.lock`", id="QMixerLoss"),
]


@pytest.mark.parametrize("build, make_net, what, member", CONSTRUCTORS)
def test_a_copying_constructor_refuses_and_keeps_the_networks(
    build: Callable[[nn.Module], object], make_net: Callable[[], nn.Module], what: str, member: str
) -> None:
    stock = make_net()
    with pytest.raises(TypeError, match="cannot pickle"):
        build(stock)
    assert devices(stock) == {"meta"}  # torchrl leaves the network without its parameters
    net = make_net()
    before = copy.deepcopy(net.state_dict())
    with installed(**only("collectors")), pytest.raises(RLGuardError) as error:
        build(net)
    message = str(error.value)
    assert what in message and member in message and "RLG001" in message
    assert remedy(LOSS, type(net).__name__) in message and "policy_factory" not in message
    assert "@rlguard.runtime.uncopyable" not in message  # the marker cannot make this copy work
    assert error.value.__context__ is None  # no chained traceback: it replaces torchrl's pickling error
    assert devices(net) == {"cpu"}
    torch.testing.assert_close(net.state_dict(), before)


@pytest.mark.parametrize("build, make_net, what, member", CONSTRUCTORS)
def test_a_marked_network_is_not_told_to_mark_itself(
    build: Callable[[nn.Module], object], make_net: Callable[[], nn.Module], what: str, member: str
) -> None:
    net = uncopyable(make_net())
    with installed(**only("collectors")), pytest.raises(RLGuardError) as error:
        build(net)
    message = str(error.value)
    assert "is marked @uncopyable" in message and remedy(LOSS, type(net).__name__, marked=True) in message
    assert "mark `" not in message


class CopiesOnlyWithWeights(QNet):
    """Copies with its real parameters, not with torchrl's meta ones: the check passes, the copy fails."""

    def __deepcopy__(self, memo: dict[int, object]) -> CopiesOnlyWithWeights:
        clone = CopiesOnlyWithWeights(OBS, self.linear.out_features)
        clone.load_state_dict({key: value.clone() for key, value in self.state_dict().items()})
        return clone


@pytest.mark.parametrize("build", [build_ddpg, build_qmixer], ids=["DDPGLoss", "QMixerLoss"])
def test_a_failure_inside_the_constructor_leaves_no_meta_tensors(build: Callable[[nn.Module], object]) -> None:
    net = CopiesOnlyWithWeights(OBS, OBS if build is build_ddpg else 3)
    before = copy.deepcopy(net.state_dict())
    with installed(**only("collectors")), pytest.raises(RuntimeError, match="meta"):
        build(net)
    assert devices(net) == {"cpu"}
    torch.testing.assert_close(net.state_dict(), before)


def test_copyable_networks_build_as_upstream() -> None:
    with installed(**only("collectors")):
        ddpg = build_ddpg(nn.Sequential(nn.Linear(OBS, OBS), nn.Tanh()))
        qmixer = build_qmixer(QNet(OBS, 3))
    assert "actor_critic" in vars(ddpg) and "global_value_network" in vars(qmixer)


# ----- estimators that copy a network to bake the loss's parameters in -----

def discrete_batch(net: nn.Module, env: DiscreteActionVecMockEnv) -> TensorDictBase:
    collector = Collector(env, q_actor(net, env), frames_per_batch=FRAMES, total_frames=FRAMES)
    return next(iter(collector))


def scalars(losses: TensorDictBase) -> dict[str, torch.Tensor]:
    return {key: value.detach() for key, value in losses.items() if value.numel() == 1}


def test_discrete_cql_first_forward_uses_the_loss_network() -> None:
    env = DiscreteActionVecMockEnv()
    actions = env.action_spec.shape[-1]
    torch.manual_seed(0)
    locked, twin = LockedQNet(OBS, actions), QNet(OBS, actions)
    twin.load_state_dict(locked.state_dict())
    data = discrete_batch(twin, env)
    stock = DiscreteCQLLoss(q_actor(LockedQNet(OBS, actions), env), action_space=env.action_spec)
    with pytest.raises(TypeError, match="cannot pickle"):
        stock(data.clone())
    loss = DiscreteCQLLoss(q_actor(locked, env), action_space=env.action_spec)
    with installed(**only("collectors")), pytest.warns(RLGuardWarning) as record:
        losses = loss(data.clone())
    message = rlguard_message(record)
    assert "DiscreteCQLLoss.make_value_estimator() deep-copies the network `value_network`" in message
    assert "`value_network.module[0].module.lock` (_thread.lock) (held by LockedQNet" in message
    assert remedy(ESTIMATOR, "LockedQNet") in message and "policy_factory" not in message
    assert loss.value_estimator.value_network is loss.value_network
    reference = DiscreteCQLLoss(q_actor(twin, env), action_space=env.action_spec)(data.clone())
    torch.testing.assert_close(scalars(losses), scalars(reference))
    losses["loss_qvalue"].backward()
    assert locked.linear.weight.grad.abs().sum() > 0


def test_discrete_cql_with_a_marked_network_warns_without_a_fix() -> None:
    env = DiscreteActionVecMockEnv()
    net = uncopyable(QNet(OBS, env.action_spec.shape[-1]))
    loss = DiscreteCQLLoss(q_actor(net, env), action_space=env.action_spec)
    with installed(**only("collectors")), pytest.warns(RLGuardWarning) as record:
        loss.make_value_estimator()
    message = rlguard_message(record)
    assert "is marked @uncopyable" in message and remedy(ESTIMATOR, "QNet", marked=True) in message
    assert loss.value_estimator.value_network is loss.value_network


class GaussianNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(OBS, 2 * OBS)
        self.split = NormalParamExtractor()

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.split(self.linear(observation))


class LockedGaussianNet(GaussianNet):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


def gaussian_actor(net: nn.Module) -> ProbabilisticActor:
    return ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"], distribution_class=TanhNormal, return_log_prob=True,
    )


@pytest.mark.parametrize("loss_cls", [ClipPPOLoss, A2CLoss, ReinforceLoss])
def test_vtrace_on_a_functional_loss_uses_the_loss_actor(loss_cls: type) -> None:
    torch.manual_seed(0)
    locked, twin = LockedGaussianNet(), GaussianNet()
    twin.load_state_dict(locked.state_dict())
    critic = ValueOperator(nn.Linear(OBS, 1), in_keys=["observation"])
    data = next(iter(Collector(ContinuousActionVecMockEnv(), gaussian_actor(twin), frames_per_batch=FRAMES,
                               total_frames=FRAMES)))
    stock = loss_cls(gaussian_actor(LockedGaussianNet()), critic)
    assert stock.functional
    with pytest.raises(TypeError, match="cannot pickle"):
        stock.make_value_estimator(ValueEstimators.VTrace, gamma=0.9)
    loss = loss_cls(gaussian_actor(locked), critic)
    with installed(**only("collectors")), pytest.warns(RLGuardWarning) as record:
        loss.make_value_estimator(ValueEstimators.VTrace, gamma=0.9)
    message = rlguard_message(record)
    assert f"VTrace.for_loss() (make_value_estimator(ValueEstimators.VTrace) on {loss_cls.__name__})" in message
    assert "`actor_network.module[0].module.lock` (_thread.lock) (held by LockedGaussianNet" in message
    assert remedy(ESTIMATOR, "LockedGaussianNet") in message
    assert loss.value_estimator.actor_network is loss.actor_network
    reference = loss_cls(gaussian_actor(twin), critic)
    reference.make_value_estimator(ValueEstimators.VTrace, gamma=0.9)
    torch.manual_seed(1)
    ours = scalars(loss(data.clone()))
    torch.manual_seed(1)
    torch.testing.assert_close(ours, scalars(reference(data.clone())))
    assert all(devices(module) == {"cpu"} for module in (locked, loss.actor_network))


def test_vtrace_copies_a_copyable_actor_as_upstream() -> None:
    loss = ClipPPOLoss(gaussian_actor(GaussianNet()), ValueOperator(nn.Linear(OBS, 1), in_keys=["observation"]))
    with installed(**only("collectors")), warnings.catch_warnings():
        warnings.simplefilter("error", RLGuardWarning)
        loss.make_value_estimator(ValueEstimators.VTrace, gamma=0.9)
    assert loss.value_estimator.actor_network is not loss.actor_network
    assert isinstance(TensorDict.from_module(loss.value_estimator.actor_network), TensorDictBase)
