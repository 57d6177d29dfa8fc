"""RLG001 on TorchRL's own training scripts (sota-implementations, shipped in the torchrl wheel).

As shipped they are correct and must not be flagged. With one realistic change each (a network
that keeps a log file open, a mixer that queues statistics), they crash in TorchRL's deep copy,
and the rule must point at that copy and at the member.
"""

from __future__ import annotations

import os
import sysconfig

import pytest

from rlguard.testing import check_source

SOTA = os.path.join(sysconfig.get_paths()["purelib"], "sota-implementations")


def _read(relative: str) -> str:
    path = os.path.join(SOTA, relative)
    if not os.path.isfile(path):
        pytest.skip(f"the torchrl wheel's {relative} is not installed here")
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _rlg001(code: str, **kwargs) -> list:
    return [f for f in check_source(code, select=["RLG001"], **kwargs) if f.code == "RLG001"]


def _replace(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


LOGGING_MLP = '''

class LoggingMLP(MLP):
    """An MLP that appends its Q-values to a log file."""

    def __init__(self, *args, log_path="q_values.log", **kwargs):
        super().__init__(*args, **kwargs)
        self.log_file = open(log_path, "a")
'''


def test_dqn_cartpole_as_shipped_is_not_flagged():
    script, utils = _read("dqn/dqn_cartpole.py"), _read("dqn/utils_cartpole.py")
    assert _rlg001(script, extra_files={"utils_cartpole.py": utils}) == []


def test_dqn_cartpole_with_a_logging_q_network_is_flagged():
    script, utils = _read("dqn/dqn_cartpole.py"), _read("dqn/utils_cartpole.py")
    utils = utils + LOGGING_MLP
    # The script builds its Q-network inline from the utils' LoggingMLP instead of make_dqn_model().
    script = _replace(script, "from utils_cartpole import eval_model, make_dqn_model, make_env",
                      "from torchrl.modules import QValueActor\n"
                      "from utils_cartpole import LoggingMLP, eval_model, make_dqn_model, make_env")
    script = _replace(script, "    model = make_dqn_model(cfg.env.env_name, device=device)\n",
                      "    model = QValueActor(module=LoggingMLP(in_features=4, out_features=2, num_cells=[120, 84]),\n"
                      "                        spec=spec, in_keys=[\"observation\"])\n")
    findings = _rlg001(script, extra_files={"utils_cartpole.py": utils})
    assert len(findings) == 1
    [finding] = findings
    assert script.splitlines()[finding.line - 1].strip() == "collector = Collector("
    log_line = utils.splitlines().index('        self.log_file = open(log_path, "a")') + 1
    assert ("`LoggingMLP` cannot be deep-copied by `Collector` to move it to `device`: `self.log_file` holds an open file; "
            f"set at utils_cartpole.py:{log_line}") in finding.full_message


LOGGED_MIXER = '''

class LoggedVDNMixer(VDNMixer):
    """A VDN mixer that hands its statistics to a logging thread."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.stats = queue.Queue()
'''


def test_qmix_vdn_as_shipped_is_not_flagged():
    assert _rlg001(_read("multiagent/qmix_vdn.py")) == []


def test_qmix_vdn_with_a_queue_in_the_mixer_flags_the_qmixer_loss():
    script = _read("multiagent/qmix_vdn.py")
    script = _replace(script, "import time\n", "import queue\nimport time\n")
    script = _replace(script, "            module=VDNMixer(", "            module=LoggedVDNMixer(")
    script = _replace(script, "\n\n@hydra.main", LOGGED_MIXER + "\n\n@hydra.main")
    findings = _rlg001(script)
    assert [script.splitlines()[f.line - 1].strip() for f in findings] == [
        "loss_module = QMixerLoss(qnet, mixer, delay_value=True)"]
    assert ("`LoggedVDNMixer` cannot be deep-copied by `QMixerLoss`, which copies its networks: "
            "`self.stats` holds a thread queue") in findings[0].full_message
    # Before torchrl 0.5 the loss copied too; the collector never sees the mixer.
    assert len(_rlg001(script, target="0.4")) == 1
