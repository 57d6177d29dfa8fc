"""RLG005 trainer-hook: incomplete hook classes and unknown ``register_op`` destinations.

The snippets follow torchrl's trainer helpers and the ``*_trainer`` scripts of sota-implementations.
Behaviour against a real Trainer is in test_rlg005_execution.py.
"""

from __future__ import annotations

import libcst as cst
import pytest

from rlguard.rules.data import TRAINER_HOOKS_ORIGINAL, trainer_hooks_for
from rlguard.engine.suggest import one_edit_away
from rlguard.rules.rlg005_trainer_hook import TrainerHook
from rlguard.testing import check_source, fix_source


def findings(source, **kwargs):
    return [f for f in check_source(source, select=["RLG005"], **kwargs) if f.code == "RLG005"]


def fixed(source, unsafe=True, **kwargs):
    return fix_source(source, select=["RLG005"], unsafe=unsafe, **kwargs)


HOOK_HEAD = "from torchrl.trainers import TrainerHookBase\n\n\n"
METHODS = {
    "state_dict": "    def state_dict(self):\n        return {'n': self.n}\n\n",
    "load_state_dict": "    def load_state_dict(self, state_dict):\n        self.n = state_dict['n']\n\n",
    "register": "    def register(self, trainer, name='counter'):\n        trainer.register_module(name, self)\n"
                "        trainer.register_op('post_steps', self)\n\n",
}


BUILT = "\n\nCounter().register(trainer)\n"  # the class itself is built in its file


def hook(defined, base="TrainerHookBase", name="Counter", head=HOOK_HEAD):
    body = "    def __init__(self):\n        self.n = 0\n\n    def __call__(self):\n        self.n += 1\n\n"
    body += "".join(METHODS[m] for m in defined)
    return head + f"class {name}({base}):\n" + body


# ---------------------------------------------------------------------------------------------
# Hook classes


def test_complete_hook_is_fine():
    assert findings(hook(["state_dict", "load_state_dict", "register"])) == []


@pytest.mark.parametrize("defined, missing", [
    (["load_state_dict", "register"], ["state_dict"]),
    (["state_dict", "register"], ["load_state_dict"]),
    (["state_dict", "load_state_dict"], ["register"]),
    ([], ["state_dict", "load_state_dict", "register"]),
])
def test_missing_methods_are_named(defined, missing):
    (finding,) = findings(hook(defined) + BUILT)
    assert finding.line == 4  # the class statement
    for method in ("state_dict", "load_state_dict", "register"):
        assert (f"`{method}`" in finding.full_message.split(":")[0]) == (method in missing)
    assert "NotImplementedError" in finding.full_message
    assert finding.fix is None


@pytest.mark.parametrize("defined, flagged", [
    (["state_dict", "load_state_dict"], False),  # no `register`: maybe an abstract base, built nowhere here
    ([], False),
    (["load_state_dict", "register"], True),  # it can register itself: a hook as it is, lacking `state_dict`
])
def test_a_class_built_nowhere_is_reported_only_when_it_has_register(defined, flagged):
    assert len(findings(hook(defined))) == int(flagged)


def test_decorated_class_is_reported_on_the_class_line():
    source = HOOK_HEAD + "@some_registry.register\nclass Empty(TrainerHookBase):\n    pass\n\n\nhook = Empty()\n"
    (finding,) = findings(source)
    assert finding.line == 5


def test_inherited_methods_count():
    source = HOOK_HEAD + (
        "class Stateless(TrainerHookBase):\n"
        "    def state_dict(self):\n        return {}\n\n"
        "    def load_state_dict(self, state_dict):\n        pass\n\n\n"
        "class PrintBatch(Stateless):\n"
        "    def register(self, trainer, name='print'):\n        trainer.register_op('batch_process', self)\n"
    )
    # The base lacks `register` and is built nowhere: an abstract base its subclass completes.
    assert findings(source + "\n\nPrintBatch().register(trainer)\n") == []
    found = findings(source + "\n\nStateless().register(trainer, 'stateless')\n")  # the base itself is built
    assert [f.line for f in found] == [4]
    assert "`register`" in found[0].full_message


def test_partially_inherited_methods():
    source = HOOK_HEAD + (
        "class Stateless(TrainerHookBase):\n    def state_dict(self):\n        return {}\n\n\n"
        "class Flush(Stateless):\n    def register(self, trainer, name='flush'):\n"
        "        trainer.register_op('post_epoch_log', self)\n"
    )
    messages = {f.line: f.full_message for f in findings(source)}
    assert "`load_state_dict`" in messages[9] and "`state_dict`" not in messages[9].split(":")[0]


def test_abstract_intermediate_base_is_not_reported():
    source = ("import abc\n" + HOOK_HEAD) + (
        "class LoggingHook(TrainerHookBase):\n"
        "    @abc.abstractmethod\n    def log(self, batch):\n        ...\n\n"
        "    def state_dict(self):\n        return {}\n\n"
        "    def load_state_dict(self, state_dict):\n        pass\n\n\n"
        "class PrintHook(LoggingHook):\n    def log(self, batch):\n        print(batch)\n\n\n"
        "hook = PrintHook()\n"
    )
    (finding,) = findings(source)
    assert "`PrintHook`" in finding.full_message and "`register`" in finding.full_message


def test_base_in_another_file():
    extra = {"pkg/__init__.py": "from pkg.hooks import Stateless\n",
             "pkg/hooks.py": HOOK_HEAD + "class Stateless(TrainerHookBase):\n    def state_dict(self):\n        return {}\n\n"
                             "    def load_state_dict(self, state_dict):\n        pass\n"}
    complete = ("from pkg import Stateless\n\n\nclass Tick(Stateless):\n"
                "    def register(self, trainer, name='tick'):\n        trainer.register_op('post_steps', self)\n")
    incomplete = "from pkg import Stateless\n\n\nclass Tick(Stateless):\n    pass\n"
    assert findings(complete, extra_files=extra) == []
    assert findings(incomplete, extra_files=extra) == []  # maybe a base: built nowhere
    (finding,) = findings(incomplete + "\n\nTick().register(trainer, 'tick')\n", extra_files=extra)
    assert finding.line == 4 and "`register`" in finding.full_message


@pytest.mark.parametrize("head, base", [
    ("import torchrl.trainers as tt\n\n\n", "tt.TrainerHookBase"),
    ("from torchrl.trainers.trainers import TrainerHookBase as THB\n\n\n", "THB"),
    ("import torchrl\n\n\n", "torchrl.trainers.TrainerHookBase"),
])
def test_base_aliases(head, base):
    assert len(findings(hook(["state_dict"], base=base, head=head) + BUILT)) == 1


def test_nn_module_before_the_hook_base_provides_state():
    source = ("import torch.nn as nn\n" + HOOK_HEAD) + (
        "class Normalizer(nn.Module, TrainerHookBase):\n"
        "    def register(self, trainer, name='norm'):\n        trainer.register_op('batch_process', self)\n"
    )
    assert findings(source) == []


def test_nn_module_after_the_hook_base_does_not():
    # The MRO finds TrainerHookBase.state_dict (which raises) before nn.Module's.
    source = ("import torch.nn as nn\n" + HOOK_HEAD) + (
        "class Normalizer(TrainerHookBase, nn.Module):\n"
        "    def register(self, trainer, name='norm'):\n        trainer.register_op('batch_process', self)\n"
    )
    (finding,) = findings(source)
    assert "`state_dict`, `load_state_dict`" in finding.full_message


def test_unknown_mixin_before_the_hook_base_may_provide_methods():
    source = ("from my_lib.mixins import StateMixin\n" + HOOK_HEAD) + (
        "class Hook(StateMixin, TrainerHookBase):\n"
        "    def register(self, trainer, name='h'):\n        trainer.register_op('post_steps', self)\n"
    )
    assert findings(source) == []


def test_subclass_of_a_torchrl_hook_is_not_reported():
    source = ("from torchrl.trainers import LogScalar\n\n\n"
              "class LogLoss(LogScalar):\n    def __init__(self):\n        super().__init__(key='loss')\n")
    assert findings(source) == []


def test_other_classes_named_like_the_base_are_not_hooks():
    source = ("from my_project.hooks import TrainerHookBase\n\n\nclass Hook(TrainerHookBase):\n    pass\n\n\n"
              "class Plain:\n    pass\n")
    assert findings(source) == []


# ---------------------------------------------------------------------------------------------
# register_op destinations

TRAINER = ("from torchrl.trainers import Trainer\n\n"
           "trainer = Trainer(collector=collector, total_frames=1000, frame_skip=1, optim_steps_per_batch=4,\n"
           "                  loss_module=loss, optimizer=optimizer)\n")


@pytest.mark.parametrize("dest", trainer_hooks_for((0, 14, 1)))
def test_every_valid_destination(dest):
    assert findings(TRAINER + f"trainer.register_op({dest!r}, op)\n") == []


def test_version_tables_match_the_issue():
    assert len(TRAINER_HOOKS_ORIGINAL) == 10
    assert set(trainer_hooks_for((0, 14))) == set(TRAINER_HOOKS_ORIGINAL) | {
        "pre_epoch", "post_epoch", "pre_epoch_log", "post_epoch_log", "process_loss",
        "post_optim_complete_log", "setup", "shutdown"}
    assert trainer_hooks_for((0, 13, 2)) == TRAINER_HOOKS_ORIGINAL


def test_misspelled_destination():
    (finding,) = findings(TRAINER + "trainer.register_op('post_step', log_reward)\n")
    assert finding.line == 5
    assert "RuntimeError" in finding.full_message and "closest valid destination is `post_steps`" in finding.full_message
    assert finding.fix.applicability == "unsafe"


def test_a_far_typo_gets_the_list_not_a_guess():
    (finding,) = findings(TRAINER + "trainer.register_op('after_optimizer_step', op)\n")
    assert "closest" not in finding.full_message
    assert "use one of the destinations the Trainer accepts: `batch_process`, " in finding.full_message
    assert finding.fix is None


@pytest.mark.parametrize("dest", ["pre_epoch", "post_epoch", "setup", "shutdown", "process_loss"])
def test_new_destinations_on_older_targets(dest):
    source = TRAINER + f"trainer.register_op({dest!r}, op)\n"
    assert findings(source, target="0.14") == []
    (finding,) = findings(source, target="0.13")
    assert "destination in torchrl 0.13" in finding.full_message and "exists from torchrl 0.14" in finding.full_message


def test_keyword_destination():
    assert len(findings(TRAINER + "trainer.register_op(dest='post_optimm', op=op)\n")) == 1


@pytest.mark.parametrize("dest", ["stage", "f'post_{kind}'", "STAGES[0]", "'post_' + kind", "b'post_step'"])
def test_non_literal_destinations_are_not_checked(dest):
    assert findings(TRAINER + f"trainer.register_op({dest}, op)\n") == []


@pytest.mark.parametrize("source", [
    "from torchrl.trainers import Trainer as T\n\nt = T(**cfg)\nt.register_op('post_step', op)\n",
    "import torchrl.trainers as tt\n\nt = tt.Trainer(**cfg)\nt.register_op('post_step', op)\n",
    "from torchrl.trainers.trainers import Trainer\n\nt = Trainer(**cfg)\nt.register_op('post_step', op)\n",
    "from torchrl.trainers.algorithms import PPOTrainer\n\nt = PPOTrainer(**cfg)\nt.register_op('post_step', op)\n",
    "from torchrl.trainers.helpers import make_trainer\n\nt = make_trainer(cfg)\nt.register_op('post_step', op)\n",
    "def attach(trainer):\n    trainer.register_op('post_step', op)\n",
    "from torchrl.trainers import Trainer\n\n\ndef attach(trainer: Trainer):\n    trainer.register_op('post_step', op)\n",
    "from my_lib import CustomTrainer\n\nt = CustomTrainer()\nt.register_op('post_step', op)\n",
    "for trainer in trainers:\n    trainer.register_op('post_step', op)\n",
    "Trainer = load_trainer_class()\nTrainer(**cfg).register_op('post_step', op)\n",
])
def test_trainer_receivers(source):
    assert len(findings(source)) == 1, source


@pytest.mark.parametrize("source", [
    "from my_project.sched import Scheduler\n\ns = Scheduler()\ns.register_op('post_step', tick)\n",
    "from my_project.sched import Scheduler\n\n\ndef attach(s: Scheduler):\n    s.register_op('post_step', tick)\n",
    "class Pipeline:\n    def register_op(self, name, op):\n        self.ops[name] = op\n\n"
    "    def build(self):\n        self.register_op('post_step', print)\n\n\n"
    "p = Pipeline()\np.register_op('post_step', print)\n",
    "from my_project.sched import Scheduler\n\n\nclass App:\n    def __init__(self):\n        self.sched = Scheduler()\n"
    "        self.sched.register_op('post_step', print)\n",
])
def test_receivers_known_not_to_be_trainers(source):
    assert findings(source) == []


def test_self_in_a_trainer_subclass():
    source = ("from torchrl.trainers import Trainer\n\n\nclass MyTrainer(Trainer):\n"
              "    def setup_hooks(self):\n        self.register_op('post_stepz', self.flush)\n")
    assert len(findings(source)) == 1


def test_self_in_a_trainer_subclass_from_another_file():
    extra = {"pkg/__init__.py": "", "pkg/base.py": "from torchrl.trainers import Trainer\n\n\nclass Base(Trainer):\n    pass\n"}
    source = ("from pkg.base import Base\n\n\nclass MyTrainer(Base):\n"
              "    def setup_hooks(self):\n        self.register_op('post_stepz', self.flush)\n")
    assert len(findings(source, extra_files=extra)) == 1


def test_instance_of_a_local_trainer_subclass_in_another_file():
    extra = {"pkg/__init__.py": "", "pkg/base.py": "import torchrl.trainers as tt\n\n\nclass Mine(tt.Trainer):\n    pass\n",
             "pkg/other.py": "class NotATrainer:\n    pass\n"}
    flagged = "from pkg.base import Mine\n\nt = Mine()\nt.register_op('post_stepz', op)\n"
    near_miss = "from pkg.other import NotATrainer\n\nt = NotATrainer()\nt.register_op('post_stepz', op)\n"
    assert len(findings(flagged, extra_files=extra)) == 1
    assert findings(near_miss, extra_files=extra) == []


def test_self_attribute_built_from_a_trainer():
    source = ("from torchrl.trainers import Trainer\n\n\nclass Experiment:\n"
              "    def __init__(self, cfg):\n        self.trainer = Trainer(**cfg)\n\n"
              "    def hooks(self):\n        self.trainer.register_op('post_stepz', self.flush)\n")
    assert len(findings(source)) == 1


def test_register_hook_alias_needs_a_known_trainer():
    known = TRAINER + "trainer.register_hook('post_step', op)\n"
    unknown = "def attach(module):\n    module.register_hook('post_step', op)\n"
    assert len(findings(known)) == 1
    assert findings(unknown) == []


# ---------------------------------------------------------------------------------------------
# Fix


@pytest.mark.parametrize("typo, name", [
    ("post_step", "post_steps"), ("pre_epochs", "pre_epoch"), ("batch_proces", "batch_process"),
    ("post_optim_lag", "post_optim_log"), ("setupp", "setup"), ("optimiser", "optimizer"),
])
def test_one_edit_typos_are_renamed(typo, name):
    source = TRAINER + f"trainer.register_op('{typo}', op)\n"
    assert fixed(source, unsafe=False) == source  # unsafe only
    assert fixed(source).endswith(f"trainer.register_op('{name}', op)\n")


def test_quotes_and_prefix_are_kept():
    assert fixed(TRAINER + 'trainer.register_op("post_step", op)\n').endswith('register_op("post_steps", op)\n')
    assert fixed(TRAINER + "trainer.register_op(u'post_step', op)\n").endswith("register_op(u'post_steps', op)\n")


@pytest.mark.parametrize("typo", ["post_stpes", "after_step", "postsetps", "POST_STEPS"])
def test_no_fix_beyond_one_edit(typo):
    source = TRAINER + f"trainer.register_op('{typo}', op)\n"
    (finding,) = findings(source)
    assert finding.fix is None
    assert fixed(source) == source


def test_no_fix_when_two_names_areone_edit_away():
    literal = cst.parse_expression("'post_log'")
    assert TrainerHook._fix(literal, "post_log", ("post_logs", "post_loq")) is None
    assert TrainerHook._fix(literal, "post_log", ("post_logs", "pre_steps")) is not None


def test_fix_targets_the_judged_version():
    source = "def attach(trainer):\n    trainer.register_op('pre_epoch', op)\n"
    assert fixed(source, target="0.13") == source  # not one edit from any of the original ten


def test_fix_keeps_crlf_and_is_idempotent():
    source = (TRAINER + "trainer.register_op('post_step', op)  # log\n").replace("\n", "\r\n")
    once = fixed(source)
    assert once.endswith("trainer.register_op('post_steps', op)  # log\r\n")
    assert fixed(once) == once
    assert findings(once) == []


def testone_edit_away():
    assert one_edit_away("post_step", "post_steps")
    assert one_edit_away("post_steps", "post_step")
    assert one_edit_away("post_stepz", "post_steps")
    assert not one_edit_away("post_stpes", "post_steps")
    assert not one_edit_away("post_steps", "post_steps")
    assert not one_edit_away("pre", "post")


MEMBER_BASE = '''\
from torchrl.trainers import Trainer


class Scheduler:
    def register_hook(self, dest, op):
        pass


class Runner:
    def __init__(self, cfg):
        self.trainer = {built}
'''

MEMBER = '''\
from runner import Runner


class PPORunner(Runner):
    def add_hooks(self, op):
        self.trainer.register_hook("post_step", op)
'''


@pytest.mark.parametrize("built, flagged", [
    ("Trainer(**cfg)", True),
    ("Scheduler()", False),  # the member holds something else: not a Trainer
])
def test_a_member_assigned_in_a_base_class_of_another_file(built, flagged):
    """``self.trainer`` is assigned in the base class only: the index reads it along the MRO."""
    found = findings(MEMBER, extra_files={"runner.py": MEMBER_BASE.format(built=built)})
    assert len(found) == int(flagged)
