"""RLG002 fixes: the statement form and the value form (both unsafe), and what gets no fix."""

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

def comment(call: str, receiver: str, closed: bool = False, indent: str = "") -> str:
    """The lines the statement-form fix leaves (spelled out once here, checked against the rule's output)."""
    lines = [f"# rlguard: removed `{call}`: on torchrl < 0.8 it returned a recurrent copy",
             f"# and left `{receiver}` unchanged, so it did nothing; torchrl >= 0.8 removed the method."]
    if closed:
        lines.append(f"# Its matching `{receiver}.set_recurrent_mode(False)` below, a no-op too, is removed as well.")
    lines += ["# If whole sequences were meant, wrap the calls that pass them (a time dimension, e.g. sampled",
              "# trajectories) in `with set_recurrent_mode(True):` (from torchrl.modules); single steps must not be."]
    return "".join(f"{indent}{line}\n" for line in lines)


def test_pair_in_a_function_is_removed_with_a_comment_and_keeps_comments_and_blank_lines():
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
    expected = HEADER + "\n\ndef update(policy, batch, optim):\n    # switch to whole sequences\n    # training\n" \
        + comment("lstm.set_recurrent_mode(True)", "lstm", closed=True, indent="    ") \
        + "\n    # forward the trajectories\n    loss = policy(batch)[\"loss\"]\n    loss.backward()\n" \
        + "    # back to collection\n    # sequential\n    optim.step()\n"
    assert fix(source) == source  # unsafe: never applied by default
    assert fix(source, unsafe=True) == expected
    assert remaining(expected) == []


def test_without_a_matching_false_only_the_call_goes_and_nothing_is_wrapped():
    source = HEADER + d("""\
        for epoch in range(10):
            for batch in loader:
                lstm.set_recurrent_mode()
                loss = loss_fn(batch)
                loss.backward()
            collector.update_policy_weights_()
        """)
    assert fix(source, unsafe=True) == HEADER + "for epoch in range(10):\n    for batch in loader:\n" \
        + comment("lstm.set_recurrent_mode()", "lstm", indent="        ") \
        + "        loss = loss_fn(batch)\n        loss.backward()\n    collector.update_policy_weights_()\n"


def test_module_level_pair_with_keyword_modes():
    source = HEADER + d("""\
        lstm.set_recurrent_mode(mode=True)
        out = lstm(rollout)
        lstm.set_recurrent_mode(mode=False)
        print(out)
        """)
    assert fix(source, unsafe=True) == HEADER + comment("lstm.set_recurrent_mode(mode=True)", "lstm", closed=True) \
        + "out = lstm(rollout)\nprint(out)\n"


def test_false_call_of_another_receiver_does_not_close_it():
    source = HEADER + d("""\
        gru = object()
        lstm.set_recurrent_mode(True)
        a = lstm(x)
        gru.set_recurrent_mode(False)
        b = lstm(y)
        lstm.set_recurrent_mode(False)
        c = lstm(z)
        """)
    assert fix(source, unsafe=True) == HEADER + "gru = object()\n" \
        + comment("lstm.set_recurrent_mode(True)", "lstm", closed=True) \
        + "a = lstm(x)\ngru.set_recurrent_mode(False)\nb = lstm(y)\nc = lstm(z)\n"


def test_consecutive_receivers_each_get_their_comment():
    source = d("""\
        from torchrl.modules import GRUModule, LSTMModule

        actor_core = LSTMModule(input_size=3, hidden_size=8, in_key="obs", out_key="h")
        critic_core = GRUModule(input_size=3, hidden_size=8, in_key="obs", out_key="v")

        def train(batch):
            actor_core.set_recurrent_mode(True)
            critic_core.set_recurrent_mode(True)
            loss = loss_module(batch)
            actor_core.set_recurrent_mode(False)
            critic_core.set_recurrent_mode(False)
            return loss
        """)
    fixed = fix(source, unsafe=True)
    assert fixed.endswith("def train(batch):\n"
                          + comment("actor_core.set_recurrent_mode(True)", "actor_core", closed=True, indent="    ")
                          + comment("critic_core.set_recurrent_mode(True)", "critic_core", closed=True, indent="    ")
                          + "    loss = loss_module(batch)\n    return loss\n")
    assert remaining(fixed) == []


def test_closing_call_that_ends_the_block_with_a_comment_keeps_its_finding():
    source = HEADER + d("""\
        def evaluate(batch):
            lstm.set_recurrent_mode(True)
            lstm(batch)
            # done
            lstm.set_recurrent_mode(False)  # sequential again
        """)
    fixed = fix(source, unsafe=True)
    assert fixed.endswith("def evaluate(batch):\n" + comment("lstm.set_recurrent_mode(True)", "lstm", indent="    ")
                          + "    lstm(batch)\n    # done\n    lstm.set_recurrent_mode(False)  # sequential again\n")
    (left,) = remaining(fixed)
    assert left.fix is None and "delete the call" in left.full_message


def test_closing_call_that_ends_the_block_without_comments_goes_too():
    source = HEADER + "def evaluate(batch):\n    lstm.set_recurrent_mode(True)\n    lstm(batch)\n" \
        "    lstm.set_recurrent_mode(False)\n"
    fixed = fix(source, unsafe=True)
    assert fixed == HEADER + "def evaluate(batch):\n" \
        + comment("lstm.set_recurrent_mode(True)", "lstm", closed=True, indent="    ") + "    lstm(batch)\n"
    assert remaining(fixed) == []


def test_crlf_and_tabs_are_kept():
    source = "from torchrl.modules import GRUModule\r\n\r\ndef step(gru: GRUModule, data):\r\n" \
             "\tgru.set_recurrent_mode(True)\r\n\tif data is not None:\r\n\t\tout = gru(data)  # run\r\n" \
             "\tgru.set_recurrent_mode(False)\r\n\treturn out\r\n"
    expected = "from torchrl.modules import GRUModule\r\n\r\ndef step(gru: GRUModule, data):\r\n" \
        + comment("gru.set_recurrent_mode(True)", "gru", closed=True, indent="\t").replace("\n", "\r\n") \
        + "\tif data is not None:\r\n\t\tout = gru(data)  # run\r\n\treturn out\r\n"
    assert fix(source, unsafe=True) == expected


def test_fix_is_unsafe_and_says_what_the_old_call_did():
    source = HEADER + "lstm.set_recurrent_mode(True)\nlstm(data)\nlstm.set_recurrent_mode(False)\nprint(1)\n"
    found = remaining(source)
    assert [f.fix.applicability for f in found] == ["unsafe", "unsafe"]
    assert "returned a recurrent copy and left `lstm` unchanged" in found[0].fix.description
    assert "and the matching `lstm.set_recurrent_mode(False)`" in found[0].fix.description
    assert "delete the call" in found[0].full_message


@pytest.mark.parametrize(
    "tail",
    [
        "def make():\n    lstm.set_recurrent_mode(True)\n",  # removing it would empty the block
        "def make(mode):\n    lstm.set_recurrent_mode(mode)\n    lstm(data)\n",  # not a literal mode
        "lstm.set_recurrent_mode(False)\nlstm(data)\n",  # False on its own
        "if training: lstm.set_recurrent_mode(True)\n",  # not a statement line of a block
        "lstm.set_recurrent_mode(True); lstm(data)\nlstm(more)\n",  # shares its line
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
    """The fixed text less the comment blocks the fixes leave at their sites."""
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        skipping = stripped.startswith(("# rlguard: was ", "# rlguard: removed ")) or (skipping and stripped.startswith("#"))
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
            policy = Seq(lstm, head)
            out = policy(batch)
            return out
        """))
    assert "# rlguard: removed `lstm.set_recurrent_mode(True)`" in fixed


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



# ----- the planner on its own: it knows torchrl only through what the rule hands it -----

def _planned(source: str, wrappers: frozenset[str]) -> list:
    """Plan the ``set_recurrent_mode(True/False)`` calls of ``source`` as if the rule had reported each."""
    import libcst as cst

    from rlguard.fix.recurrent_mode import Knowledge, Site, plan_fixes

    module = cst.parse_module(d(source))
    names = {"Seq": "tensordict.nn.TensorDictSequential", "DQNLoss": "torchrl.objectives.DQNLoss"}
    knowledge = Knowledge(
        resolve=lambda node: names.get(node.value) if isinstance(node, cst.Name) else None,
        context_managers=frozenset({"torchrl.modules.set_recurrent_mode"}),
        is_loss=lambda qualname: qualname.endswith("Loss"),
        is_wrapper=wrappers.__contains__,
    )
    calls = [node for node in _walk(module) if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
             and node.func.attr.value == "set_recurrent_mode"]
    sites = [Site(call, call.func.value, call.args[0].value.value == "True", None, False, super_call=False)
             for call in calls]
    return plan_fixes(module, sites, knowledge)


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


VALUE_THROUGH_A_WRAPPER = """\
    policy = Seq(lstm.set_recurrent_mode(True), head)
    policy(data)
"""


def test_planner_follows_the_value_through_the_wrappers_it_is_told_of():
    from rlguard.fix.recurrent_mode import VALUE

    (plan,) = _planned(VALUE_THROUGH_A_WRAPPER, frozenset({"tensordict.nn.TensorDictSequential"}))
    assert plan.remedy == VALUE and plan.fix is not None and plan.fix.applicability == "unsafe"


def test_planner_offers_no_fix_through_a_callee_it_does_not_know():
    from rlguard.fix.recurrent_mode import MANUAL

    (plan,) = _planned(VALUE_THROUGH_A_WRAPPER, frozenset())
    assert plan.remedy == MANUAL and plan.fix is None


def test_planner_pairs_a_statement_with_its_matching_false_into_one_fix():
    from rlguard.fix.recurrent_mode import FALSE, REMOVE

    opener, closing = _planned("lstm.set_recurrent_mode(True)\nout = lstm(x)\nlstm.set_recurrent_mode(False)\n",
                               frozenset())
    assert (opener.remedy, closing.remedy) == (REMOVE, FALSE)
    assert opener.fix is not None and opener.fix is closing.fix and len(opener.fix.edits) == 3


def test_planner_leaves_a_false_call_on_another_receiver_alone():
    from rlguard.fix.recurrent_mode import FALSE, REMOVE

    opener, other = _planned("lstm.set_recurrent_mode(True)\nout = lstm(x)\ngru.set_recurrent_mode(False)\n",
                             frozenset())
    assert (opener.remedy, other.remedy) == (REMOVE, FALSE)
    assert opener.fix is not None and other.fix is None
