"""RLG002 against the real torchrl: the method raises, and fixed scripts run like hand-written ones."""

from __future__ import annotations

import runpy
import textwrap

import pytest

from rlguard.testing import check_source, fix_source

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from torchrl.modules import GRUModule, LSTMModule  # noqa: E402


@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
def test_the_method_raises_on_the_installed_torchrl(cls):
    module = cls(input_size=3, hidden_size=5, in_key="obs", out_key="features")
    for call in (lambda: module.set_recurrent_mode(True), lambda: module.set_recurrent_mode(),
                 lambda: module.set_recurrent_mode(False)):
        with pytest.raises(RuntimeError, match="removed in v0.8"):
            call()


def run_script(tmp_path, name: str, source: str) -> dict:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return runpy.run_path(str(path))


def fixed(source: str, unsafe: bool = False) -> str:
    out = fix_source(source, unsafe=unsafe, select=["RLG002"])
    assert out != source
    assert [f for f in check_source(out, select=["RLG002"]) if f.code == "RLG002"] == []
    return out


DATA = """\
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule as Mod, TensorDictSequential as Seq
from torchrl.modules import {cls}, QValueModule

torch.manual_seed(0)
core = {cls}(input_size=3, hidden_size=5, in_key="observation", out_key="features")
head = Mod(torch.nn.Linear(5, 2), in_keys=["features"], out_keys=["action_value"])
B, T = 2, 4
data = TensorDict(
    {{
        "observation": torch.randn(B, T, 3),
        "is_init": torch.zeros(B, T, 1, dtype=torch.bool),
        "action": torch.nn.functional.one_hot(torch.randint(2, (B, T)), 2),
        "next": {{
            "observation": torch.randn(B, T, 3),
            "reward": torch.randn(B, T, 1),
            "done": torch.zeros(B, T, 1, dtype=torch.bool),
            "terminated": torch.zeros(B, T, 1, dtype=torch.bool),
            "is_init": torch.zeros(B, T, 1, dtype=torch.bool),
        }},
    }},
    batch_size=[B, T],
)
data["is_init"][:, 0] = True
"""

STATEMENT_OLD = """
def update(batch):
    core.set_recurrent_mode(True)
    # whole trajectories at once
    out = core(batch.clone())
    features = out["features"]
    core.set_recurrent_mode(False)
    return features


RESULT = update(data)
SEQUENTIAL = core(data.clone())["features"]
"""

STATEMENT_BY_HAND = """
from torchrl.modules import set_recurrent_mode


def update(batch):
    with set_recurrent_mode(True):
        out = core(batch.clone())
        features = out["features"]
    return features


RESULT = update(data)
SEQUENTIAL = core(data.clone())["features"]
"""


@pytest.mark.parametrize("cls", ["LSTMModule", "GRUModule"])
def test_statement_form_fix_keeps_what_the_old_code_computed_and_says_what_to_check(tmp_path, cls):
    """On torchrl < 0.8 the bare statement returned a copy and left the module step by step: the fixed
    script computes exactly that, and the comment at the site points to the wrap a person may want."""
    old = DATA.format(cls=cls) + STATEMENT_OLD
    with pytest.raises(RuntimeError):
        run_script(tmp_path, "old.py", old)
    assert fix_source(old, select=["RLG002"]) == old  # unsafe: not applied by default
    new = fixed(old, unsafe=True)
    assert "set_recurrent_mode(False)" not in new.replace("`core.set_recurrent_mode(False)`", "")
    assert "# rlguard: removed `core.set_recurrent_mode(True)`: on torchrl < 0.8 it returned a recurrent copy" in new
    assert "    with " not in new  # nothing wrapped
    after = run_script(tmp_path, "fixed.py", new)
    torch.testing.assert_close(after["RESULT"], after["SEQUENTIAL"])
    # Wrapping by hand is a different computation: whole-sequence mode gives other features after step one.
    by_hand = run_script(tmp_path, "by_hand.py", DATA.format(cls=cls) + STATEMENT_BY_HAND)
    assert by_hand["RESULT"].shape == after["RESULT"].shape == (2, 4, 5)
    assert not torch.allclose(by_hand["RESULT"], after["RESULT"])


VALUE_OLD = """
policy_inference = Seq(core, head)
policy_training = Seq(core.set_recurrent_mode(True), head)
traj = policy_training(data.clone())
RESULT = traj["action_value"]
SEQUENTIAL = policy_inference(data.clone())["action_value"]
"""

VALUE_BY_HAND = """
from torchrl.modules import set_recurrent_mode

policy_inference = Seq(core, head)
policy_training = Seq(core, head)
with set_recurrent_mode(True):
    traj = policy_training(data.clone())
RESULT = traj["action_value"]
SEQUENTIAL = policy_inference(data.clone())["action_value"]
"""


@pytest.mark.parametrize("cls", ["LSTMModule", "GRUModule"])
def test_value_form_fix_runs_step_by_step_and_says_what_to_check(tmp_path, cls):
    """The fix drops the copy and leaves the calls: the module then runs step by step, which the comment
    at the site says; wrapping by hand restores whole-sequence mode where the input has a time dimension."""
    old = DATA.format(cls=cls) + VALUE_OLD
    with pytest.raises(RuntimeError):
        run_script(tmp_path, "old.py", old)
    assert fix_source(old, select=["RLG002"]) == old  # unsafe: not applied by default
    new = fixed(old, unsafe=True)
    assert "# Check the calls of `policy_training`: those on whole sequences" in new
    after = run_script(tmp_path, "fixed.py", new)
    torch.testing.assert_close(after["RESULT"], after["SEQUENTIAL"])
    by_hand = run_script(tmp_path, "by_hand.py", DATA.format(cls=cls) + VALUE_BY_HAND)
    assert not torch.allclose(by_hand["RESULT"], by_hand["SEQUENTIAL"])


TUTORIAL_OLD = """\
import torch
from tensordict.nn import TensorDictModule as Mod, TensorDictSequential as Seq
from torchrl.envs import GymEnv, InitTracker, TransformedEnv
from torchrl.modules import LSTMModule, MLP, QValueModule
from torchrl.objectives import DQNLoss
from torchrl.testing.mocking_classes import DiscreteActionVecMockEnv

env = TransformedEnv(DiscreteActionVecMockEnv(), InitTracker())
feature = Mod(torch.nn.LazyLinear(8), in_keys=["observation"], out_keys=["embed"])
lstm = LSTMModule(input_size=8, hidden_size=16, in_key="embed", out_key="embed")
env.append_transform(lstm.make_tensordict_primer())
mlp = Mod(MLP(out_features=env.action_spec.shape[-1], num_cells=[16]), in_keys=["embed"], out_keys=["action_value"])
qval = QValueModule(spec=env.action_spec)
policy = Seq(feature, lstm.set_recurrent_mode(True), mlp, qval)
policy(env.reset())
loss_fn = DQNLoss(policy, action_space=env.action_spec, delay_value=True)
"""


def test_recurrent_dqn_tutorial_fix_runs_where_wrapping_would_raise(tmp_path):
    """torchrl 0.6's recurrent DQN tutorial: the fix must not wrap ``policy(env.reset())``, which has no
    time dimension; wrapped, it raises ValueError on the installed torchrl."""
    with pytest.raises(RuntimeError):
        run_script(tmp_path, "old.py", TUTORIAL_OLD)
    new = fixed(TUTORIAL_OLD, unsafe=True)
    assert "policy = Seq(feature, lstm, mlp, qval)\npolicy(env.reset())\n" in new
    run_script(tmp_path, "fixed.py", new)
    wrapped = new.replace("policy(env.reset())\n", "from torchrl.modules import set_recurrent_mode\n"
                          "with set_recurrent_mode(True):\n    policy(env.reset())\n")
    with pytest.raises(ValueError):
        run_script(tmp_path, "wrapped.py", wrapped)


def test_statement_form_on_a_single_step_runs_where_wrapping_would_raise(tmp_path):
    """A bare ``lstm.set_recurrent_mode(True)`` before ``policy(env.reset())``: the fix removes it and
    leaves the call alone; wrapping the call (the old safe fix) raises ValueError on the installed torchrl."""
    old = TUTORIAL_OLD.replace("policy = Seq(feature, lstm.set_recurrent_mode(True), mlp, qval)\n",
                               "lstm.set_recurrent_mode(True)\npolicy = Seq(feature, lstm, mlp, qval)\n")
    assert old != TUTORIAL_OLD
    with pytest.raises(RuntimeError):
        run_script(tmp_path, "old.py", old)
    new = fixed(old, unsafe=True)
    assert "policy = Seq(feature, lstm, mlp, qval)\npolicy(env.reset())\n" in new
    assert "\nlstm.set_recurrent_mode(True)" not in new
    run_script(tmp_path, "fixed.py", new)
    wrapped = new.replace("policy(env.reset())\n", "from torchrl.modules import set_recurrent_mode\n"
                          "with set_recurrent_mode(True):\n    policy(env.reset())\n")
    with pytest.raises(ValueError):
        run_script(tmp_path, "wrapped.py", wrapped)


LOSS_OLD = """
from torchrl.objectives import DQNLoss

policy = Seq(core.set_recurrent_mode(True), head, QValueModule(action_space="one-hot"))
loss_fn = DQNLoss(policy, action_space="one-hot", delay_value=False)
RESULT = loss_fn(data.clone())["loss"]
"""

LOSS_BY_HAND = """
from torchrl.objectives import DQNLoss

policy = Seq(core, head, QValueModule(action_space="one-hot"))
loss_fn = DQNLoss(policy, action_space="one-hot", delay_value=False)
RESULT = loss_fn(data.clone())["loss"]
"""


def test_value_flowing_into_a_loss_runs_like_the_plain_module_by_hand(tmp_path):
    old = DATA.format(cls="LSTMModule") + LOSS_OLD
    new = fixed(old, unsafe=True)
    assert "with " not in new  # the loss runs recurrent mode by itself
    after = run_script(tmp_path, "fixed.py", new)
    by_hand = run_script(tmp_path, "by_hand.py", DATA.format(cls="LSTMModule") + LOSS_BY_HAND)
    torch.testing.assert_close(after["RESULT"], by_hand["RESULT"])


def test_fix_with_a_shadowing_function_and_crlf_runs(tmp_path):
    old = (DATA.format(cls="LSTMModule") + textwrap.dedent("""
        from torchrl.modules import set_recurrent_mode as recurrent


        def set_recurrent_mode(flag):
            raise AssertionError("the user's own function must not be called")


        if True:
            core.set_recurrent_mode()
            RESULT = core(data.clone())["features"]
        """)).replace("\n", "\r\n")
    new = fixed(old, unsafe=True)
    assert "\r\n" in new and "\n" not in new.replace("\r\n", "")
    assert "    # rlguard: removed `core.set_recurrent_mode()`" in new
    after = run_script(tmp_path, "fixed.py", new)
    assert after["RESULT"].shape == (2, 4, 5)
