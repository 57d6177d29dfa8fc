"""Parameters that became keyword-only (``SoftUpdate(loss_module, eps)``: positional up to torchrl 0.1.1,
``*, eps=None, tau=None`` since 0.2.0): found from the signatures of consecutive releases, flagged where a
call passes them by position, and named by a safe fix that runs on the tested torchrl."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.rules.data import REMOVED_API
from rlguard.testing import check_source, fix_source
from rlguard_dev import upgrade_table
from tests.rules.test_removed_api_table import _wheel

SELECT = ["RLG006", "RLG007"]
LOSS = ("import torch\nfrom torchrl.modules import QValueActor\nfrom torchrl.objectives import DQNLoss, SoftUpdate\n\n"
        "actor = QValueActor(torch.nn.Linear(3, 2), in_keys=['observation'], action_space='one-hot')\n"
        "loss_module = DQNLoss(actor, action_space='one-hot', delay_value=True)\n")


def findings(source: str, **kwargs):
    return [f for f in check_source(source, select=SELECT, **kwargs) if f.code in SELECT]


def test_the_table_has_soft_update_eps_from_the_signatures():
    (change,) = [c for c in REMOVED_API if c.kind == "positional" and c.name == "SoftUpdate.eps"]
    assert (change.removed_in, change.position, change.fix, change.found) == ((0, 2), 1, "safe", "signature")


def test_a_positional_eps_is_flagged_and_named_and_the_fix_runs():
    source = LOSS + "updater = SoftUpdate(loss_module, 0.99)\nupdater.step()\n"
    (finding,) = findings(source)
    assert finding.line == 7 and "takes `eps` only by name since torchrl 0.2" in finding.full_message
    fixed = fix_source(source, select=SELECT)
    assert fixed == source.replace("SoftUpdate(loss_module, 0.99)", "SoftUpdate(loss_module, eps=0.99)")
    for code, ok in ((source, False), (fixed, True)):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert (done.returncode == 0) is ok, done.stderr[-2000:]


@pytest.mark.parametrize("source, options", [
    (LOSS + "updater = SoftUpdate(loss_module, eps=0.99)\n", {}),  # already by name
    (LOSS + "updater = SoftUpdate(loss_module)\n", {}),  # not passed
    (LOSS + "updater = SoftUpdate(*args)\n", {}),  # where a starred argument lands is unknown
    ("from my_lib import SoftUpdate\n\nupdater = SoftUpdate(loss_module, 0.99)\n", {}),  # not torchrl's
    (LOSS + "updater = SoftUpdate(loss_module, 0.99)\n", {"target": "0.1"}),  # positional then
])
def test_near_misses_are_silent(source, options):
    assert findings(source, **options) == []


def test_generator_finds_parameters_made_keyword_only(tmp_path):
    _wheel(tmp_path, "pkg", "0.1.0", {"__init__.py": "class Soft:\n    def __init__(self, loss, eps=0.9, tau=None):\n"
                                                      "        pass\n"})
    _wheel(tmp_path, "pkg", "0.2.0", {"__init__.py": "class Soft:\n    def __init__(self, loss, *, eps=0.9, tau=None):\n"
                                                      "        pass\n"})
    _wheel(tmp_path, "pkg", "0.3.0", {"__init__.py": "class Soft:\n    def __init__(self, loss, eps=0.9, *, tau=None):\n"
                                                      "        pass\n"})
    table = upgrade_table.build(str(tmp_path), {"pkg": ("0.1.0", "0.2.0", "0.3.0")})
    found = {e["name"]: e for e in table["entries"] if e["kind"] == "positional"}
    # ``eps`` is positional again in 0.3: only ``tau`` stays keyword-only.
    assert set(found) == {"Soft.tau"} and (found["Soft.tau"]["position"], found["Soft.tau"]["removed_in"]) == (2, "0.2")
