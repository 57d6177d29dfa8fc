"""RLG002 fixes: the statement form (safe), the value form (unsafe), and what gets no fix."""

from __future__ import annotations

import ast
import textwrap

import pytest

from rlguard.testing import check_source, fix_source

HEADER = 'from torchrl.modules import LSTMModule\n\nlstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")\n'


def fix(source: str, unsafe: bool = False, **kwargs) -> str:
    fixed = fix_source(source, unsafe=unsafe, select=["RLG002"], **kwargs)
    ast.parse(fixed)
    assert fix_source(fixed, unsafe=unsafe, select=["RLG002"], **kwargs) == fixed, "not idempotent"
    return fixed


def remaining(source: str, **kwargs):
    return [f for f in check_source(source, select=["RLG002"], **kwargs) if f.code == "RLG002"]


def d(text: str) -> str:
    return textwrap.dedent(text)


# ----- statement form -----

def test_pair_in_a_function_keeps_comments_and_blank_lines():
    source = HEADER + d("""\


        def update(policy, batch, optim):
            # switch to whole sequences
            lstm.set_recurrent_mode(True)  # training

            # forward the trajectories
            loss = policy(batch)["loss"]
            loss.backward()
            # back to collection
            lstm.set_recurrent_mode(False)  # sequential
            optim.step()
        """)
    expected = HEADER.replace("import LSTMModule\n", "import LSTMModule\nfrom torchrl.modules import set_recurrent_mode\n") + d("""\


        def update(policy, batch, optim):
            # switch to whole sequences
            with set_recurrent_mode(True):  # training

                # forward the trajectories
                loss = policy(batch)["loss"]
                loss.backward()
            # back to collection
            # sequential
            optim.step()
        """)
    assert fix(source) == expected
    assert remaining(expected) == []


def test_without_a_matching_false_the_rest_of_the_block_is_wrapped():
    source = HEADER + d("""\
        for epoch in range(10):
            for batch in loader:
                lstm.set_recurrent_mode()
                loss = loss_fn(batch)
                loss.backward()
            collector.update_policy_weights_()
        """)
    fixed = fix(source)
    assert fixed.endswith(d("""\
        for epoch in range(10):
            for batch in loader:
                with set_recurrent_mode(True):
                    loss = loss_fn(batch)
                    loss.backward()
            collector.update_policy_weights_()
        """))


def test_module_level_pair_with_keyword_modes():
    source = HEADER + d("""\
        lstm.set_recurrent_mode(mode=True)
        out = lstm(rollout)
        lstm.set_recurrent_mode(mode=False)
        print(out)
        """)
    assert fix(source).endswith(d("""\
        with set_recurrent_mode(True):
            out = lstm(rollout)
        print(out)
        """))


def test_false_call_of_another_receiver_does_not_close_the_block():
    source = HEADER + d("""\
        gru = GRUModule(3, 8)
        lstm.set_recurrent_mode(True)
        a = lstm(x)
        gru.set_recurrent_mode(False)
        b = lstm(y)
        lstm.set_recurrent_mode(False)
        c = lstm(z)
        """).replace("gru = GRUModule(3, 8)\n", "gru = object()\n")
    assert fix(source).endswith(d("""\
        gru = object()
        with set_recurrent_mode(True):
            a = lstm(x)
            gru.set_recurrent_mode(False)
            b = lstm(y)
        c = lstm(z)
        """))


def test_consecutive_receivers_open_and_close_one_block():
    source = d("""\
        from torchrl.modules import GRUModule, LSTMModule

        actor_core = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
        critic_core = GRUModule(input_size=3, hidden_size=8, in_key="obs", out_key="v")

        def train(batch):
            actor_core.set_recurrent_mode(True)
            # the critic too
            critic_core.set_recurrent_mode(True)  # critic
            loss = loss_module(batch)
            actor_core.set_recurrent_mode(False)
            critic_core.set_recurrent_mode(False)
            return loss
        """)
    assert fix(source).endswith(d("""\
        def train(batch):
            with set_recurrent_mode(True):
                # the critic too
                # critic
                loss = loss_module(batch)
            return loss
        """))


def test_closing_comments_at_the_end_of_a_block_stay_in_it():
    source = HEADER + d("""\
        def evaluate(batch):
            lstm.set_recurrent_mode(True)
            lstm(batch)
            # done
            lstm.set_recurrent_mode(False)  # sequential again
        """)
    assert fix(source).endswith(d("""\
        def evaluate(batch):
            with set_recurrent_mode(True):
                lstm(batch)
                # done
                # sequential again
        """))


@pytest.mark.parametrize(
    "imports, manager",
    [
        ("from torchrl.modules import LSTMModule, set_recurrent_mode", "set_recurrent_mode"),
        ("from torchrl.modules import LSTMModule, set_recurrent_mode as srm", "srm"),
        ("from torchrl.modules import LSTMModule\nimport torchrl.modules as tm", "tm.set_recurrent_mode"),
        ("from torchrl import modules as trm\nfrom torchrl.modules import LSTMModule", "trm.set_recurrent_mode"),
        ("from torchrl.modules import LSTMModule\nfrom rlguard.runtime import set_recurrent_mode as guarded",
         "guarded"),
    ],
)
def test_existing_import_or_alias_is_reused(imports, manager):
    source = imports + d("""\


        def step(batch):
            lstm = LSTMModule(3, 8)
            lstm.set_recurrent_mode(True)
            return lstm(batch)
        """)
    fixed = fix(source)
    assert fixed == imports + d(f"""\


        def step(batch):
            lstm = LSTMModule(3, 8)
            with {manager}(True):
                return lstm(batch)
        """)


def test_a_local_name_set_recurrent_mode_gets_an_alias():
    source = HEADER + d("""\


        def set_recurrent_mode(policy, mode):
            policy.training_mode = mode


        def step(batch):
            lstm.set_recurrent_mode(True)
            return lstm(batch)
        """)
    fixed = fix(source)
    assert "from torchrl.modules import set_recurrent_mode as torchrl_set_recurrent_mode\n" in fixed
    assert "    with torchrl_set_recurrent_mode(True):\n        return lstm(batch)\n" in fixed
    assert "def set_recurrent_mode(policy, mode):" in fixed


def test_a_parameter_named_set_recurrent_mode_gets_an_alias():
    source = HEADER + d("""\
        def step(batch, set_recurrent_mode=False):
            lstm.set_recurrent_mode(True)
            return lstm(batch)
        """)
    assert "with torchrl_set_recurrent_mode(True):" in fix(source)


def test_module_level_call_above_the_import_does_not_use_it_early():
    source = HEADER + d("""\
        lstm.set_recurrent_mode(True)
        out = lstm(data)
        from torchrl.modules import set_recurrent_mode
        """)
    fixed = fix(source)
    assert fixed.startswith(
        "from torchrl.modules import LSTMModule\n"
        "from torchrl.modules import set_recurrent_mode as torchrl_set_recurrent_mode\n"
    )
    assert "with torchrl_set_recurrent_mode(True):\n    out = lstm(data)\n" in fixed


def test_import_goes_after_docstring_and_future_imports():
    source = d('''\
        """Recurrent PPO."""
        from __future__ import annotations

        from torchrl.modules import GRUModule

        gru = GRUModule(3, 8)
        gru.set_recurrent_mode(True)
        gru(data)
        ''')
    assert fix(source) == d('''\
        """Recurrent PPO."""
        from __future__ import annotations

        from torchrl.modules import GRUModule
        from torchrl.modules import set_recurrent_mode

        gru = GRUModule(3, 8)
        with set_recurrent_mode(True):
            gru(data)
        ''')


def test_crlf_and_tabs_are_kept():
    source = "from torchrl.modules import GRUModule\r\n\r\ndef step(gru: GRUModule, data):\r\n" \
             "\tgru.set_recurrent_mode(True)\r\n\tif data is not None:\r\n\t\tout = gru(data)  # run\r\n" \
             "\tgru.set_recurrent_mode(False)\r\n\treturn out\r\n"
    assert fix(source) == (
        "from torchrl.modules import GRUModule\r\nfrom torchrl.modules import set_recurrent_mode\r\n\r\n"
        "def step(gru: GRUModule, data):\r\n\twith set_recurrent_mode(True):\r\n\t\tif data is not None:\r\n"
        "\t\t\tout = gru(data)  # run\r\n\treturn out\r\n"
    )


def test_multi_line_statements_are_reindented():
    source = HEADER + d("""\
        def step(batch):
            lstm.set_recurrent_mode(True)
            out = lstm(
                batch,
            )
            text = '''
        kept as is'''
            return out, text
        """)
    fixed = fix(source)
    assert fixed.endswith(d("""\
        def step(batch):
            with set_recurrent_mode(True):
                out = lstm(
                    batch,
                )
                text = '''
        kept as is'''
                return out, text
        """))


def test_fix_is_safe_and_named_in_the_finding():
    source = HEADER + "lstm.set_recurrent_mode(True)\nlstm(data)\nlstm.set_recurrent_mode(False)\n"
    found = remaining(source)
    assert [f.fix.applicability for f in found] == ["safe", "safe"]
    assert "up to the matching `set_recurrent_mode(False)`" in found[0].fix.description


@pytest.mark.parametrize(
    "tail",
    [
        "def make():\n    lstm.set_recurrent_mode(True)\n",  # nothing after it
        "def make():\n    lstm.set_recurrent_mode(True)\n    return lstm\n",  # nothing that runs anything
        "def make(mode):\n    lstm.set_recurrent_mode(mode)\n    lstm(data)\n",  # not a literal mode
        "lstm.set_recurrent_mode(False)\nlstm(data)\n",  # False on its own
        "if training: lstm.set_recurrent_mode(True)\n",  # not a statement line of a block
        "lstm.set_recurrent_mode(True); lstm(data)\nlstm(more)\n",  # shares its line
        "def gen(loader):\n    lstm.set_recurrent_mode(True)\n    for b in loader:\n        yield lstm(b)\n",  # generator
    ],
)
def test_statement_forms_without_a_fix(tail):
    source = HEADER + tail
    assert fix(source, unsafe=True) == source
    assert remaining(source) and all(f.fix is None for f in remaining(source))


def test_super_call_gets_no_fix():
    source = d("""\
        from torchrl.modules import LSTMModule

        class Shim(LSTMModule):
            def set_recurrent_mode(self, mode=True):
                super().set_recurrent_mode(True)
                self.log(mode)
        """)
    assert fix(source, unsafe=True) == source
    (finding,) = remaining(source)
    assert "the parent method is gone" in finding.full_message


# ----- value form -----

TRAINING_POLICY = d("""\
    from tensordict.nn import TensorDictModule as Mod, TensorDictSequential as Seq
    from torchrl.modules import LSTMModule, MLP

    lstm_module = LSTMModule(input_size=3, hidden_size=64, in_key="observation", out_key="intermediate")
    mlp = MLP(num_cells=[64], out_features=1)
    policy_inference = Seq(lstm_module, Mod(mlp, in_keys=["intermediate"], out_keys=["action"]))
    policy_training = Seq(lstm_module.set_recurrent_mode(True), Mod(mlp, in_keys=["intermediate"], out_keys=["action"]))
    traj_td = env.rollout(3)  # some random temporal data
    # both policies share the weights
    traj_td = policy_training(traj_td)
    print(traj_td)
    """)


def without_fix_comments(text: str) -> str:
    """The fixed text less the comment block the value-form fix leaves at its site."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        skipping = stripped.startswith("# rlguard: was ") or (skipping and stripped.startswith("#"))
        if not skipping:
            out.append(line)
    return "".join(out)


def test_value_form_keeps_the_calls_and_comments_the_site():
    fixed = fix(TRAINING_POLICY, unsafe=True)
    assert without_fix_comments(fixed) == TRAINING_POLICY.replace("lstm_module.set_recurrent_mode(True)", "lstm_module")
    assert "with set_recurrent_mode" not in without_fix_comments(fixed)
    assert "# rlguard: was `lstm_module.set_recurrent_mode(True)`, a recurrent copy" in fixed
    assert "# Check the calls of `policy_training`: those on whole sequences" in fixed


def test_value_form_is_unsafe_only():
    assert fix(TRAINING_POLICY) == TRAINING_POLICY
    (finding,) = remaining(TRAINING_POLICY)
    assert finding.fix.applicability == "unsafe"
    description = finding.fix.description
    assert "recurrent copy" in description and "`lstm_module` itself" in description
    assert "are left as they are" in description and "A comment at the site" in description


def test_value_form_calls_are_never_wrapped():
    """Wrapping cannot be proven safe: a call without a time dimension raises ValueError in recurrent mode."""
    source = HEADER + d("""\


        def evaluate(batches):
            training = lstm.set_recurrent_mode(True)
            first = training(batches[0])
            # second batch
            second = training(batches[1])
            report(first, second)
            third = training(batches[2])
            return third
        """)
    fixed = fix(source, unsafe=True)
    assert without_fix_comments(fixed) == source.replace("lstm.set_recurrent_mode(True)", "lstm")
    assert "    # Check the calls of `training`" in fixed  # indented with the statement


def test_value_that_only_flows_into_a_loss_needs_no_wrap():
    source = d("""\
        import torch
        from tensordict.nn import TensorDictSequential
        from torchrl.modules import GRUModule, ProbabilisticActor, TanhNormal, ValueOperator
        from torchrl.objectives import ClipPPOLoss

        gru = GRUModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
        backbone = TensorDictSequential(gru.set_recurrent_mode(True), head)
        actor = ProbabilisticActor(module=backbone, in_keys=["loc", "scale"], distribution_class=TanhNormal)
        loss_module = ClipPPOLoss(actor_network=actor, critic_network=critic)
        optim = torch.optim.Adam(actor.parameters(), lr=3e-4)
        """)
    fixed = fix(source, unsafe=True)
    assert without_fix_comments(fixed) == source.replace("gru.set_recurrent_mode(True)", "gru")
    assert "# The torchrl loss it reaches switches to recurrent mode by itself." in fixed
    (finding,) = remaining(source)
    assert "losses run in recurrent mode by themselves" in finding.fix.description


def test_value_passed_directly_to_a_loss():
    source = d("""\
        from torchrl.modules import LSTMModule
        from torchrl.objectives import DQNLoss

        lstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
        loss_fn = DQNLoss(lstm.set_recurrent_mode(True), action_space="one-hot")
        """)
    assert without_fix_comments(fix(source, unsafe=True)) == source.replace("lstm.set_recurrent_mode(True)", "lstm")


def test_calls_inside_or_outside_the_context_manager_stay_as_they_are():
    source = d("""\
        from tensordict.nn import TensorDictSequential as Seq
        from torchrl.modules import LSTMModule, set_recurrent_mode

        lstm = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
        policy = Seq(lstm.set_recurrent_mode(True), head)
        with set_recurrent_mode(True):
            policy(data)
        policy(more)
        """)
    assert without_fix_comments(fix(source, unsafe=True)) == source.replace("lstm.set_recurrent_mode(True)", "lstm")


@pytest.mark.parametrize(
    "tail",
    [
        "training = lstm.set_recurrent_mode(True)\nfor td in loader:\n    training(td)\n",  # called in a loop body
        "training = lstm.set_recurrent_mode(True)\ncollector = Collector(env, training)\n",  # given to a collector
        "training = lstm.set_recurrent_mode(True)\nprint(training)\n",  # any other use
        "training = lstm.set_recurrent_mode(True)\ntraining = other\n",  # rebound
        "training = lstm.set_recurrent_mode(True)\nrun = lambda td: training(td)\n",  # called later
        "training = lstm.set_recurrent_mode(True)\ndef f(td):\n    return training(td)\n",  # in another function
        "training = lstm.set_recurrent_mode(False)\ntraining(td)\n",  # a sequential copy
        "training = lstm.set_recurrent_mode(True); training(td)\n",  # the same line
        "policy = Seq(lstm.set_recurrent_mode(True), head)\n",  # Seq is not known here
        "def make():\n    return lstm.set_recurrent_mode(True)\n",  # returned
        "class Agent:\n    def __init__(self):\n        self.core = lstm.set_recurrent_mode(True)\n",  # stored
        "out = lstm.set_recurrent_mode(True)(data)\n",  # called at once
        "def gen(loader):\n    training = lstm.set_recurrent_mode(True)\n    yield training(loader)\n",  # generator
    ],
)
def test_value_forms_without_a_fix(tail):
    source = HEADER + tail
    assert fix(source, unsafe=True) == source
    assert remaining(source) and all(f.fix is None for f in remaining(source))


def test_holder_with_weight_accessors_is_still_fixed():
    source = HEADER + d("""\
        import torch
        training = lstm.set_recurrent_mode(True)
        optim = torch.optim.Adam(training.parameters(), lr=1e-3)
        training.to("cpu")
        state = training.state_dict()
        out = training(data)
        """)
    assert without_fix_comments(fix(source, unsafe=True)) == source.replace("lstm.set_recurrent_mode(True)", "lstm")


def test_statement_and_value_forms_in_one_file_converge():
    source = HEADER + d("""\
        from tensordict.nn import TensorDictSequential as Seq

        def train(batch):
            lstm.set_recurrent_mode(True)
            policy = Seq(lstm.set_recurrent_mode(True), head)
            out = policy(batch)
            lstm.set_recurrent_mode(False)
            return out
        """)
    fixed = fix(source, unsafe=True)
    assert remaining(fixed) == []
    assert without_fix_comments(fixed).endswith(d("""\
        def train(batch):
            with set_recurrent_mode(True):
                policy = Seq(lstm, head)
                out = policy(batch)
            return out
        """))


def test_recurrent_dqn_script_with_a_main_function():
    source = d("""\
        import torch
        from tensordict.nn import TensorDictModule, TensorDictSequential
        from torchrl.collectors import Collector
        from torchrl.modules import EGreedyModule, LSTMModule, MLP, QValueModule
        from torchrl.objectives import DQNLoss, SoftUpdate


        def main(env, feature, device):
            n_cells = feature(env.reset())["embed"].shape[-1]
            lstm = LSTMModule(input_size=n_cells, hidden_size=128, device=device, in_key="embed", out_key="embed")
            env.append_transform(lstm.make_tensordict_primer())
            mlp = TensorDictModule(MLP(out_features=2, num_cells=[64], device=device), in_keys=["embed"],
                                   out_keys=["action_value"])
            qval = QValueModule(action_space=None, spec=env.action_spec)
            stoch_policy = TensorDictSequential(feature, lstm, mlp, qval)
            exploration_module = EGreedyModule(annealing_num_steps=1_000_000, spec=env.action_spec, eps_init=0.2)
            stoch_policy = TensorDictSequential(stoch_policy, exploration_module)

            policy = TensorDictSequential(feature, lstm.set_recurrent_mode(True), mlp, qval,)

            policy(env.reset())

            loss_fn = DQNLoss(policy, action_space=env.action_spec, delay_value=True)
            updater = SoftUpdate(loss_fn, eps=0.95)
            optim = torch.optim.Adam(policy.parameters(), lr=3e-4)
            collector = Collector(env, stoch_policy, frames_per_batch=50, total_frames=200)
            for data in collector:
                loss_vals = loss_fn(data)
                loss_vals["loss"].backward()
                optim.step()
                updater.step()


        if __name__ == "__main__":
            main(make_env(), make_feature(), torch.device("cpu"))
        """)
    fixed = fix(source, unsafe=True)
    assert "policy = TensorDictSequential(feature, lstm, mlp, qval,)\n" in fixed
    assert "qval,)\n\n    policy(env.reset())\n" in fixed  # a fresh reset has no time dimension: not wrapped
    assert "loss_fn = DQNLoss(policy, action_space=env.action_spec, delay_value=True)\n" in fixed
    assert "with set_recurrent_mode" not in without_fix_comments(fixed)
    assert remaining(fixed) == []


def test_target_0_7_gets_the_same_fix():
    source = HEADER + "lstm.set_recurrent_mode(True)\nout = lstm(data)\nlstm.set_recurrent_mode(False)\n"
    assert fix(source, target="0.7") == fix(source)
    assert all("deprecated since torchrl 0.7" in f.full_message for f in remaining(source, target="0.7"))
    assert fix(source, target="0.6") == source
