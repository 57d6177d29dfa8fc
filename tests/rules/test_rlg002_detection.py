"""RLG002 manual-recurrent-mode: what is flagged and what is not, from real TorchRL usage."""

from __future__ import annotations

import textwrap

import pytest

from rlguard.testing import check_source


def findings(source: str, **kwargs):
    return [f for f in check_source(textwrap.dedent(source), select=["RLG002"], **kwargs) if f.code == "RLG002"]


def lines(source: str, **kwargs) -> list[int]:
    return [f.line for f in findings(source, **kwargs)]


# ----- receivers built or typed in the file -----

@pytest.mark.parametrize(
    "imports, ctor",
    [
        ("from torchrl.modules import LSTMModule", "LSTMModule"),
        ("from torchrl.modules import GRUModule", "GRUModule"),
        ("from torchrl.modules import LSTMModule as L", "L"),
        ("import torchrl.modules as tm", "tm.LSTMModule"),
        ("import torchrl", "torchrl.modules.GRUModule"),
        ("from torchrl.modules.tensordict_module.rnn import LSTMModule", "LSTMModule"),
        ("from torchrl.modules.tensordict_module import GRUModule as Gru", "Gru"),
        ("from torchrl import modules", "modules.LSTMModule"),
    ],
)
def test_instance_built_in_the_file(imports, ctor):
    source = f"""\
    {imports}

    lstm = {ctor}(input_size=3, hidden_size=8, in_key="obs", out_key="features")
    lstm.set_recurrent_mode(True)
    """
    assert lines(source) == [4]


def test_instance_moved_to_a_device_is_still_one():
    source = """\
    from torchrl.modules import LSTMModule

    def build(device):
        core = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h").to(device)
        training = core.set_recurrent_mode(True)
        return training
    """
    assert lines(source) == [5]


def test_name_bound_through_another_name():
    source = """\
    from torchrl.modules import GRUModule

    gru = GRUModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
    memory = gru
    memory.set_recurrent_mode()
    """
    assert lines(source) == [5]


def test_copy_returned_by_the_old_method_is_still_one():
    source = """\
    from torchrl.modules import LSTMModule

    lstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
    training = lstm.set_recurrent_mode(True)
    inference = training.set_recurrent_mode(False)
    """
    assert lines(source) == [4, 5]


@pytest.mark.parametrize(
    "annotation",
    ["LSTMModule", "GRUModule", "Optional[LSTMModule]", "LSTMModule | None", '"LSTMModule"',
     "Union[GRUModule, LSTMModule]", "tm.GRUModule"],
)
def test_parameter_annotated_with_a_recurrent_module(annotation):
    source = f"""\
    from typing import Optional, Union
    import torchrl.modules as tm
    from torchrl.modules import GRUModule, LSTMModule

    def training_policy(core: {annotation}, head):
        return Seq(core.set_recurrent_mode(True), head)
    """
    assert lines(source) == [6]


def test_self_attribute_bound_in_init():
    source = """\
    import torch.nn as nn
    from torchrl.modules import LSTMModule

    class RecurrentActor(nn.Module):
        def __init__(self):
            super().__init__()
            self.core = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")

        def train_mode(self):
            self.core.set_recurrent_mode(True)
    """
    assert lines(source) == [10]


def test_self_attribute_set_in_a_base_class_of_another_file():
    base = """\
    import torch.nn as nn
    from torchrl.modules import GRUModule

    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self.memory = GRUModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
    """
    source = """\
    from agents.base import Base

    class Agent(Base):
        def learn(self, batch):
            self.memory.set_recurrent_mode(True)
            return self.memory(batch)
    """
    found = findings(source, extra_files={"agents/__init__.py": "", "agents/base.py": textwrap.dedent(base)})
    assert [f.line for f in found] == [5]
    assert "`memory` is built by `GRUModule(...)`" in found[0].full_message


def test_attribute_of_an_instance_of_a_class_from_another_file():
    policies = """\
    import torch.nn as nn
    from torchrl.modules import LSTMModule

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
            self.head = nn.Linear(8, 2)
    """
    source = """\
    from pkg.policies import Policy

    policy = Policy()
    policy.lstm.set_recurrent_mode(True)
    policy.head.set_recurrent_mode(True)
    """
    extra = {"pkg/__init__.py": "", "pkg/policies.py": textwrap.dedent(policies)}
    assert lines(source, extra_files=extra) == [4]


# ----- subclasses, anywhere in the project -----

SUBCLASS = """\
from torchrl.modules import LSTMModule


class MemoryCore(LSTMModule):
    def extra_repr(self):
        return "memory core"
"""


def test_instance_of_a_subclass_from_another_file():
    source = """\
    from pkg.nets import MemoryCore

    core = MemoryCore(input_size=3, hidden_size=8, in_key="obs", out_key="h")
    core.set_recurrent_mode(True)
    """
    found = findings(source, extra_files={"pkg/__init__.py": "", "pkg/nets.py": SUBCLASS})
    assert [f.line for f in found] == [4]
    assert "`MemoryCore` derives from `LSTMModule`" in found[0].full_message


def test_instance_of_a_subclass_reexported_by_a_package():
    source = """\
    from pkg import MemoryCore

    def run(data):
        core = MemoryCore(input_size=3, hidden_size=8, in_key="obs", out_key="h")
        core.set_recurrent_mode(True)
        return core(data)
    """
    extra = {"pkg/__init__.py": "from pkg.nets import MemoryCore\n", "pkg/nets.py": SUBCLASS}
    assert lines(source, extra_files=extra) == [5]


def test_subclass_of_a_subclass_in_a_third_file():
    middle = """\
    from pkg.nets import MemoryCore

    class DeepCore(MemoryCore):
        pass
    """
    source = """\
    from pkg.deep import DeepCore

    DeepCore(3, 8).set_recurrent_mode(True)
    """
    extra = {"pkg/__init__.py": "", "pkg/nets.py": SUBCLASS, "pkg/deep.py": textwrap.dedent(middle)}
    assert lines(source, extra_files=extra) == [3]


def test_super_call_in_an_override():
    source = """\
    from torchrl.modules import GRUModule

    class CountingGRU(GRUModule):
        def set_recurrent_mode(self, mode=True):
            self.switches += 1
            return super().set_recurrent_mode(mode)
    """
    found = findings(source)
    assert [f.line for f in found] == [6]
    assert "the parent method is gone" in found[0].full_message


def test_super_call_in_a_subclass_defined_in_another_file():
    source = """\
    from pkg.nets import MemoryCore

    class LoggedCore(MemoryCore):
        def set_recurrent_mode(self, mode=True):
            print("switching", mode)
            return super().set_recurrent_mode(mode)
    """
    assert lines(source, extra_files={"pkg/__init__.py": "", "pkg/nets.py": SUBCLASS}) == [6]


def test_super_call_reaching_a_user_override_is_not_a_finding():
    shim = """\
    from torchrl.modules import LSTMModule, set_recurrent_mode

    class CompatLSTM(LSTMModule):
        def set_recurrent_mode(self, mode=True):
            self._requested = mode
            return self
    """
    source = """\
    from pkg.compat import CompatLSTM

    class MyLSTM(CompatLSTM):
        def set_recurrent_mode(self, mode=True):
            return super().set_recurrent_mode(mode)

    MyLSTM(3, 8).set_recurrent_mode(True)
    CompatLSTM(3, 8).set_recurrent_mode(True)
    """
    assert lines(source, extra_files={"pkg/__init__.py": "", "pkg/compat.py": textwrap.dedent(shim)}) == []


def test_self_call_in_a_subclass_without_override():
    source = """\
    from torchrl.modules import LSTMModule

    class TrainingLSTM(LSTMModule):
        def for_training(self):
            return self.set_recurrent_mode(True)
    """
    assert lines(source) == [5]


def test_override_in_the_subclass_counts_as_its_own_method():
    source = """\
    from torchrl.modules import LSTMModule

    class ShimLSTM(LSTMModule):
        def set_recurrent_mode(self, mode=True):
            self.wanted = mode
            return self

        def training_copy(self):
            return self.set_recurrent_mode(True)

    core = ShimLSTM(input_size=3, hidden_size=8, in_key="obs", out_key="h")
    core.set_recurrent_mode(True)
    """
    assert lines(source) == []


# ----- receivers of unknown type -----

def test_unknown_receiver_in_a_file_importing_lstmmodule():
    source = """\
    from torchrl.modules import LSTMModule

    def enable_training(policy):
        policy[0].set_recurrent_mode(True)
        policy.module.set_recurrent_mode()
    """
    assert lines(source) == [4, 5]


def test_unknown_receiver_with_the_module_imported_as_an_alias():
    source = """\
    import torchrl.modules as tm

    CORE = tm.GRUModule

    def enable(policy):
        policy.set_recurrent_mode(True)
    """
    assert lines(source) == [6]


def test_unknown_receiver_without_the_import_is_not_flagged():
    source = """\
    def enable_training(policy):
        policy.set_recurrent_mode(True)

    agent.set_recurrent_mode(False)
    """
    assert lines(source) == []


def test_unknown_receiver_when_the_file_defines_its_own_method():
    source = """\
    import torch.nn as nn
    from torchrl.modules import LSTMModule

    class RecurrentPolicy(nn.Module):
        def __init__(self, core: LSTMModule):
            super().__init__()
            self.core = core
            self.recurrent = False

        def set_recurrent_mode(self, mode=True):
            self.recurrent = mode
            return self

    def enable(policy):
        policy.set_recurrent_mode(True)
    """
    assert lines(source) == []


def test_imported_object_of_unknown_type():
    source = """\
    from torchrl.modules import LSTMModule
    from my_project.nets import shared_core

    shared_core.set_recurrent_mode(True)
    """
    assert lines(source) == [4]


# ----- near misses -----

@pytest.mark.parametrize(
    "source",
    [
        # the context manager, under any alias
        """\
        from torchrl.modules import LSTMModule, set_recurrent_mode

        with set_recurrent_mode(True):
            out = policy(data)
        """,
        """\
        from torchrl.modules import LSTMModule, set_recurrent_mode as srm

        with srm("recurrent"):
            out = policy(data)
        """,
        """\
        import torchrl.modules as tm

        with tm.set_recurrent_mode(True):
            out = tm.LSTMModule(3, 8)(data)
        """,
        """\
        import torchrl
        from torchrl.modules import LSTMModule

        with torchrl.modules.set_recurrent_mode(False):
            out = policy(data)
        """,
        """\
        from torchrl.modules.tensordict_module.rnn import LSTMModule, set_recurrent_mode

        @set_recurrent_mode(True)
        def loss_step(loss_fn, batch):
            return loss_fn(batch)
        """,
        """\
        from torchrl import modules
        from torchrl.modules import GRUModule

        @modules.set_recurrent_mode()
        def replay(policy, batch):
            return policy(batch)
        """,
        """\
        from rlguard.runtime import set_recurrent_mode
        from torchrl.modules import LSTMModule

        with set_recurrent_mode(True):
            pass
        """,
        # a module's function of the same name
        """\
        import helpers
        from torchrl.modules import LSTMModule

        helpers.set_recurrent_mode(policy, True)
        """,
        # torch and torchrl classes other than LSTMModule/GRUModule
        """\
        import torch.nn as nn
        from torchrl.modules import LSTMModule, MLP

        lstm = nn.LSTM(3, 8, batch_first=True)
        lstm.set_recurrent_mode(True)
        mlp = MLP(in_features=3, out_features=2)
        mlp.set_recurrent_mode(True)
        """,
        # the inner nn.LSTM of an LSTMModule is not one
        """\
        from torchrl.modules import LSTMModule

        core = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
        core.lstm.set_recurrent_mode(True)
        """,
        # a user class with its own method, and its instances
        """\
        from torchrl.modules import LSTMModule

        class Agent:
            def __init__(self, core: LSTMModule):
                self.core = core

            def set_recurrent_mode(self, mode=True):
                self.mode = mode

            def prepare(self):
                self.set_recurrent_mode(True)

        agent = Agent(LSTMModule(3, 8))
        agent.set_recurrent_mode(True)
        """,
        # literals are not modules
        """\
        from torchrl.modules import LSTMModule

        "lstm".set_recurrent_mode(True)
        [lstm].set_recurrent_mode(True)
        (lambda: lstm).set_recurrent_mode(True)
        """,
        # mentioned in strings and comments only
        '''\
        from torchrl.modules import LSTMModule

        def doc():
            """Formerly: ``lstm.set_recurrent_mode(True)``."""
            # lstm.set_recurrent_mode(True)
            return "lstm.set_recurrent_mode(True)"
        ''',
    ],
)
def test_near_misses(source):
    assert lines(source) == []


def test_user_class_from_another_file_with_its_own_method():
    agents = """\
    class Agent:
        def set_recurrent_mode(self, mode=True):
            self.mode = mode
    """
    source = """\
    from torchrl.modules import LSTMModule
    from pkg.agents import Agent

    agent = Agent()
    agent.set_recurrent_mode(True)

    def prepare(a: Agent):
        a.set_recurrent_mode(True)
    """
    assert lines(source, extra_files={"pkg/__init__.py": "", "pkg/agents.py": textwrap.dedent(agents)}) == []


def test_user_class_that_is_not_recurrent_at_all():
    source = """\
    import torch.nn as nn
    from torchrl.modules import LSTMModule

    class Head(nn.Module):
        pass

    head = Head()
    head.set_recurrent_mode(True)
    """
    assert lines(source) == []


# ----- target versions -----

SCRIPT = """\
from torchrl.modules import LSTMModule

lstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
policy_training = lstm.set_recurrent_mode(True)
"""


@pytest.mark.parametrize("target", ["0.8", "0.10", "0.13", "0.14.1", None])
def test_message_says_it_crashes_from_0_8(target):
    (finding,) = findings(SCRIPT, target=target)
    assert "torchrl 0.8 removed" in finding.message and "RuntimeError" in finding.full_message


def test_message_says_deprecated_on_0_7():
    (finding,) = findings(SCRIPT, target="0.7")
    assert "deprecated since torchrl 0.7" in finding.full_message
    assert "torchrl 0.8 removed" not in finding.message


@pytest.mark.parametrize("target", ["0.4", "0.6", "0.6.1"])
def test_not_flagged_before_the_context_manager_existed(target):
    assert findings(SCRIPT, target=target) == []


# ----- positions and suppressions -----

def test_reported_on_the_line_where_the_call_begins():
    source = """\
    from torchrl.modules import LSTMModule

    lstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
    policy = Seq(
        feature,
        lstm.set_recurrent_mode(
            True
        ),
        head,
    )
    """
    (finding,) = findings(source)
    assert (finding.line, finding.span.column) == (6, 5)


def test_noqa_suppresses():
    source = """\
    from torchrl.modules import LSTMModule

    lstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
    lstm.set_recurrent_mode(True)  # noqa: RLG002
    # rlguard: ignore[RLG002]
    lstm.set_recurrent_mode(False)
    """
    assert findings(source) == []


def test_messages_name_the_call_and_how_to_migrate():
    source = """\
    from torchrl.modules import LSTMModule

    lstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
    lstm.set_recurrent_mode(False)
    self_made = Seq(lstm.set_recurrent_mode(True), head)
    print(self_made)
    """
    standalone_false, value = findings(source)
    assert standalone_false.full_message.startswith("`lstm.set_recurrent_mode(False)` raises RuntimeError")
    assert "delete the call" in standalone_false.full_message and standalone_false.fix is None
    assert "use `lstm` itself" in value.full_message and "default_recurrent_mode=True" in value.full_message
    assert value.fix is None  # printed: the fix cannot follow it


# ----- realistic scripts -----

RECURRENT_DQN_OLD = """\
import torch
from tensordict.nn import TensorDictModule as Mod, TensorDictSequential as Seq
from torchrl.collectors import Collector
from torchrl.envs import GymEnv, InitTracker, TransformedEnv
from torchrl.modules import ConvNet, EGreedyModule, LSTMModule, MLP, QValueModule
from torchrl.objectives import DQNLoss, SoftUpdate

env = TransformedEnv(GymEnv("CartPole-v1"), InitTracker())
feature = Mod(ConvNet(num_cells=[32, 32, 64], squeeze_output=True), in_keys=["pixels"], out_keys=["embed"])
lstm = LSTMModule(input_size=64, hidden_size=128, in_key="embed", out_key="embed")
env.append_transform(lstm.make_tensordict_primer())
mlp = Mod(MLP(out_features=2, num_cells=[64]), in_keys=["embed"], out_keys=["action_value"])
qval = QValueModule(spec=env.action_spec)
stoch_policy = Seq(feature, lstm, mlp, qval)
stoch_policy = Seq(stoch_policy, EGreedyModule(annealing_num_steps=1_000_000, spec=env.action_spec, eps_init=0.2))
policy = Seq(feature, lstm.set_recurrent_mode(True), mlp, qval)
policy(env.reset())
loss_fn = DQNLoss(policy, action_space=env.action_spec, delay_value=True)
updater = SoftUpdate(loss_fn, eps=0.95)
optim = torch.optim.Adam(policy.parameters(), lr=3e-4)
collector = Collector(env, stoch_policy, frames_per_batch=50, total_frames=200)
"""


def test_recurrent_dqn_tutorial_before_0_8():
    assert lines(RECURRENT_DQN_OLD) == [16]


RECURRENT_DQN_NEW = RECURRENT_DQN_OLD.replace(
    "from torchrl.modules import ConvNet, EGreedyModule, LSTMModule, MLP, QValueModule",
    "from torchrl.modules import ConvNet, EGreedyModule, LSTMModule, MLP, QValueModule, set_recurrent_mode",
).replace(
    "policy = Seq(feature, lstm.set_recurrent_mode(True), mlp, qval)\npolicy(env.reset())\n",
    "policy = Seq(feature, lstm, mlp, qval)\nwith set_recurrent_mode(True):\n    policy(env.reset())\n",
)


def test_recurrent_dqn_tutorial_after_0_8_is_clean():
    assert lines(RECURRENT_DQN_NEW) == []


def test_factory_returning_both_policies():
    source = """\
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torchrl.modules import LSTMModule, MLP

    def create_net(vocabulary_size, net_name):
        embedding = TensorDictModule(Embed(vocabulary_size, 256), in_keys=["observation"], out_keys=["embed"])
        lstm_module = LSTMModule(input_size=256, hidden_size=512, num_layers=3, in_key="embed", out_key="features")
        mlp = TensorDictModule(MLP(in_features=512, out_features=vocabulary_size), in_keys=["features"], out_keys=["logits"])
        model_inference = TensorDictSequential(embedding, lstm_module, mlp)
        model_training = TensorDictSequential(embedding, lstm_module.set_recurrent_mode(True), mlp)
        transform = lstm_module.make_tensordict_primer()
        return model_inference, model_training, transform
    """
    found = findings(source)
    assert [f.line for f in found] == [9]
    assert found[0].fix is None  # returned: migrate by hand


def test_burn_in_transform_docstring_pattern():
    source = """\
    from torchrl.envs.transforms import BurnInTransform
    from torchrl.modules import GRUModule

    burn_in_transform = BurnInTransform(
        modules=[GRUModule(1, 1, batch_first=True).set_recurrent_mode(True)],
        burn_in=5,
    )
    """
    assert lines(source) == [5]


def test_an_unknown_receiver_may_be_an_imported_project_class_with_its_own_method():
    """The file imports LSTMModule, so an unknown receiver counts as recurrent, unless a project class
    the file imports defines its own ``set_recurrent_mode`` (in another file): the receiver may be one."""
    source = """\
    from torchrl.modules import LSTMModule

    from agents import {imported}


    def prepare(agent):
        agent.set_recurrent_mode(True)
        return agent
    """
    agents = """\
    class RecurrentAgent:
        def set_recurrent_mode(self, mode=True):
            self.recurrent = mode
            return self


    class PlainAgent:
        pass
    """
    extra = {"agents.py": textwrap.dedent(agents)}
    assert lines(source.format(imported="RecurrentAgent"), extra_files=extra) == []
    assert lines(source.format(imported="PlainAgent"), extra_files=extra) == [7]
