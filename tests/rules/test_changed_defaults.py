"""Defaults that changed (``ParallelEnv(daemon=)`` in torchrl 0.11, ``DiscreteSACLoss``'s Q-value key in 0.2):
flagged by RLG007 only in code its stale references date before the change, fixed by passing the old value,
and the fixed code run against the real torchrl."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.rules.data import CHANGED_DEFAULTS
from rlguard.testing import check_source, fix_source
from rlguard_dev import upgrade_defaults, upgrade_table
from tests.rules.test_removed_api_table import _wheel

SELECT = ["RLG006", "RLG007"]
# torchrl 0.1: ParallelEnv from the module that defined it (gone from 0.2), workers never closed.
OLD_ENV = ("from torchrl.envs.vec_env import ParallelEnv\nfrom torchrl.envs import PendulumEnv\n\n"
           "env = ParallelEnv(1, PendulumEnv)\n")
MODERN_ENV = OLD_ENV.replace("torchrl.envs.vec_env", "torchrl.envs")
# torchrl 0.1: the target network updater took ``eps`` by position (keyword-only from 0.2).
OLD_LOSS = ("from torchrl.objectives import DiscreteSACLoss, SoftUpdate\n\n"
            "loss_module = DiscreteSACLoss(actor, qvalue, num_actions=2)\n"
            "updater = SoftUpdate(loss_module, 0.99)\n")


def findings(source: str, **kwargs):
    return [f for f in check_source(source, select=SELECT, **kwargs) if f.code in SELECT and "since torchrl" in f.message
            and ("defaults to" in f.message or "reads `" in f.message)]


def test_the_table_derives_the_daemon_default_and_holds_the_hand_entry():
    by_name = {(d.cls, d.name): d for d in CHANGED_DEFAULTS}
    daemon, key = by_name[("ParallelEnv", "daemon")], by_name[("DiscreteSACLoss", "action_value")]
    assert (daemon.kind, daemon.old, daemon.new, daemon.changed_in, daemon.found) == \
        ("parameter", "True", "False", (0, 11), "hard-coded")
    assert (key.kind, key.old, key.new, key.changed_in, key.found) == \
        ("tensor-key", '"state_value"', '"action_value"', (0, 2), "review")
    assert "state_value" in key.note  # a hand entry carries its reason


def _releases(tmp_path, sources: dict[str, str]):
    for version, text in sources.items():
        _wheel(tmp_path, "pkg", version, {"__init__.py": text})
    return [upgrade_table.read_release(upgrade_table.wheel_path(str(tmp_path), "pkg", v) or "", "pkg", v) for v in sources]


POOL_OLD = "class Pool:\n    def __init__(self, n):\n        self.n = n\n\n    def start(self, p):\n        p.daemon = True\n"
POOL_NEW = ("class Pool:\n    def __init__(self, n, daemon: bool = False):\n        self.n = n\n        self.daemon = daemon\n\n"
            "    def start(self, p):\n        p.daemon = self.daemon\n")


def test_the_generator_finds_a_constant_that_became_a_parameter_with_another_default(tmp_path):
    (entry,) = upgrade_defaults.hard_coded_parameters(_releases(tmp_path, {"0.1.0": POOL_OLD, "0.2.0": POOL_NEW}))
    assert (entry["class"], entry["name"], entry["old"], entry["new"], entry["changed_in"]) == \
        ("Pool", "daemon", "True", "False", "0.2")


@pytest.mark.parametrize("new", [
    POOL_NEW.replace("daemon: bool = False", "daemon: bool = True"),  # the same default: nothing changed
    POOL_NEW.replace("        self.daemon = daemon\n", ""),  # the attribute is not the parameter
])
def test_the_generator_skips_what_kept_its_meaning(tmp_path, new):
    assert upgrade_defaults.hard_coded_parameters(_releases(tmp_path, {"0.1.0": POOL_OLD, "0.2.0": new})) == []


LOSS_OLD = ("class KLoss:\n    class _AcceptedKeys:\n        value: str = 'v'\n        spare: str = 'a'\n\n"
            "    def forward(self, td):\n        return td.get(self.tensor_keys.value)\n")


def test_the_generator_compares_read_keys_of_accepted_keys(tmp_path):
    new = LOSS_OLD.replace("'v'", "'w'").replace("'a'", "'b'")
    (entry,) = upgrade_defaults.tensor_key_defaults(_releases(tmp_path, {"0.1.0": LOSS_OLD, "0.2.0": new}))
    # ``spare`` changed too, but 0.1 never read it: no meaning to keep.
    assert (entry["class"], entry["name"], entry["old"], entry["new"], entry["found"]) == \
        ("KLoss", "value", '"v"', '"w"', "accepted-keys")


def test_a_name_gone_from_the_release_of_the_change_dates_the_file():
    """``CompositeSpec`` is gone from torchrl 0.11: the file ran on 0.10 at the newest, with daemonic workers."""
    source = "from torchrl.data import CompositeSpec\nfrom torchrl.envs import ParallelEnv, PendulumEnv\n\n" \
             "spec = CompositeSpec()\nenv = ParallelEnv(1, PendulumEnv)\n"
    (finding,) = findings(source)
    assert "`CompositeSpec`, which fails from torchrl 0.11" in finding.remedy


def test_an_old_parallel_env_is_flagged_and_fixed_with_the_old_default():
    (finding,) = findings(OLD_ENV)
    assert "`ParallelEnv(...)` defaults to `daemon=False` since torchrl 0.11" in finding.message
    assert "`ParallelEnv`, which fails from torchrl 0.2" in finding.remedy
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert "env = ParallelEnv(1, PendulumEnv, daemon=True)" in fix_source(OLD_ENV, unsafe=True, select=SELECT)
    assert "daemon" not in fix_source(OLD_ENV, select=SELECT)  # unsafe only


@pytest.mark.parametrize("source, target", [
    (MODERN_ENV, None),  # nothing dates it: written for any release
    (OLD_ENV.replace("(1, PendulumEnv)", "(1, PendulumEnv, daemon=False)"), None),  # the keyword is given
    (OLD_ENV.replace("(1, PendulumEnv)", "(1, PendulumEnv, **options)"), None),  # it may be in the mapping
    (OLD_ENV, ">=0.11"),  # the pin judges the code on the new default only
    (OLD_ENV, "0.10"),  # the target still has the old default
    # Dated by a name gone from 0.14 only: it may have been written for 0.11 to 0.13, with the new default.
    ("from torchrl.objectives.sac import compute_log_prob\nfrom torchrl.envs import ParallelEnv, PendulumEnv\n\n"
     "env = ParallelEnv(1, PendulumEnv)\n", None),
    # A shim is written for both sides: it dates nothing.
    ("try:\n    from torchrl.envs.vec_env import ParallelEnv\nexcept ImportError:\n    from torchrl.envs import ParallelEnv\n"
     "from torchrl.envs import PendulumEnv\n\nenv = ParallelEnv(1, PendulumEnv)\n", None),
    ("from torchrl.envs.vec_env import SerialEnv\nfrom my_lib import ParallelEnv\n\nenv = ParallelEnv(1, make)\n", None),
])
def test_parallel_env_near_misses_are_silent(source, target):
    assert findings(source, target=target) == []


def test_an_old_discrete_sac_loss_gets_its_old_key_back():
    (finding,) = findings(OLD_LOSS)
    assert '`DiscreteSACLoss` reads `action_value` at "action_value" since torchrl 0.2' in finding.message
    fixed = fix_source(OLD_LOSS, unsafe=True, select=SELECT)
    assert "loss_module = DiscreteSACLoss(actor, qvalue, num_actions=2)\n" \
           'loss_module.set_keys(action_value="state_value")\n' in fixed
    assert fix_source(fixed, unsafe=True, select=SELECT) == fixed  # nothing left to flag


def test_the_key_is_set_beside_the_fixes_inside_the_line():
    """``DiscreteSACLoss(actor, qvalue, 2)``: ``num_actions`` is keyword-only from torchrl 0.2 too. The line that
    ``set_keys`` follows is kept as the edits inside it leave it, so both fixes land in one pass (a later pass
    would find the file no longer dated)."""
    source = "from torchrl.objectives import DiscreteSACLoss\n\nloss = DiscreteSACLoss(actor, qvalue, 2)\n"
    assert fix_source(source, unsafe=True, select=SELECT).endswith(
        'loss = DiscreteSACLoss(actor, qvalue, num_actions=2)\nloss.set_keys(action_value="state_value")\n')


@pytest.mark.parametrize("source, target", [
    (OLD_LOSS + "loss_module.set_keys(action_value='q')\n", None),  # the key is set explicitly
    (OLD_LOSS.replace("SoftUpdate(loss_module, 0.99)", "SoftUpdate(loss_module, eps=0.99)"), None),  # not dated
    (OLD_LOSS, "0.1"),  # the target is the old release
    (OLD_LOSS, ">=0.2"),
])
def test_loss_key_near_misses_are_silent(source, target):
    assert findings(source, target=target) == []


def test_a_loss_not_built_into_a_name_is_flagged_without_a_fix():
    source = OLD_LOSS.replace("loss_module = DiscreteSACLoss", "losses = [DiscreteSACLoss").replace("=2)\n", "=2)]\n")
    (finding,) = findings(source)
    assert finding.fix is None and '.set_keys(action_value="state_value")' in finding.remedy


# The fixed code against the real torchrl: an old DiscreteSACLoss whose Q-network writes "state_value" (the
# ValueOperator's default out_key), and a ParallelEnv left open.
RUN = """\
import torch
from tensordict import TensorDict
from torch import nn
from torchrl.envs import PendulumEnv
from torchrl.modules import MLP, OneHotCategorical, ProbabilisticActor, SafeModule, ValueOperator
from torchrl.objectives import DiscreteSACLoss, SoftUpdate
from torchrl.envs.vec_env import ParallelEnv

actor = ProbabilisticActor(SafeModule(MLP(in_features=3, out_features=2, num_cells=[8]), in_keys=["observation"], out_keys=["logits"]),
                           in_keys=["logits"], distribution_class=OneHotCategorical, return_log_prob=False)
qvalue = ValueOperator(MLP(in_features=3, out_features=2, num_cells=[8]), in_keys=["observation"])
loss_module = DiscreteSACLoss(actor_network=actor, qvalue_network=qvalue, num_actions=2)
updater = SoftUpdate(loss_module, 0.99)
batch = TensorDict({"observation": torch.randn(4, 3), "action": nn.functional.one_hot(torch.randint(2, (4,)), 2),
                    ("next", "observation"): torch.randn(4, 3), ("next", "reward"): torch.randn(4, 1),
                    ("next", "done"): torch.zeros(4, 1, dtype=torch.bool),
                    ("next", "terminated"): torch.zeros(4, 1, dtype=torch.bool)}, [4])
loss_module(batch)["loss_qvalue"].backward()
env = ParallelEnv(1, PendulumEnv)
env.reset()
print("daemon", [w.daemon for w in env._workers])
"""


def test_the_fixed_code_runs_on_the_real_torchrl():
    pytest.importorskip("torchrl")
    fixed = fix_source(RUN, unsafe=True, select=SELECT)
    assert "daemon=True" in fixed and '.set_keys(action_value="state_value")' in fixed
    # Unfixed but for the two changed defaults (the removed module and the positional eps, RLG007's other fixes),
    # the loss finds no Q-values: the key the fix sets back is what the old program meant.
    others = fixed.replace('loss_module.set_keys(action_value="state_value")\n', "")
    for code, ok in ((others, False), (fixed, True)):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert (done.returncode == 0) is ok, done.stderr[-2000:]
    # Daemonic workers: the interpreter ended without closing the env.
    assert "daemon [True]" in done.stdout
