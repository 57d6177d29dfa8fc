"""The linter and the runtime give one piece of advice per copy site, and it is advice that works.

Each case is real code: RLG001 checks it, then it runs under ``installed()``, and the two
"To fix it" sentences must be the same text.
"""

from __future__ import annotations

import importlib
import multiprocessing
import re
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from rlguard_runtime_helpers import only

from rlguard import advice
from rlguard.advice import remedy
from rlguard.runtime import RLGuardError, RLGuardWarning, installed
from rlguard.runtime.marker import LINT_NOTE
from rlguard.testing import check_source

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # torchrl 0.15 transform notice

HEADER = '''
import threading

import torch
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector, MultiSyncCollector
from torchrl.modules import QValueActor, ValueOperator
from torchrl.objectives import DDPGLoss, DiscreteCQLLoss, DQNLoss
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv, DiscreteActionVecMockEnv


class LockedNet(nn.Module):
    def __init__(self, size=7):
        super().__init__()
        self.linear = nn.Linear(7, size)
        self.lock = threading.Lock()

    def forward(self, observation):
        return self.linear(observation)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(14, 1)

    def forward(self, observation, action):
        return self.linear(torch.cat([observation, action], -1))


policy = TensorDictModule(LockedNet(), in_keys=["observation"], out_keys=["action"])
env = DiscreteActionVecMockEnv()
q_actor = QValueActor(LockedNet(env.action_spec.shape[-1]), in_keys=["observation"], spec=env.action_spec)
'''

SITES = {
    advice.DEVICE: 'collector = Collector(ContinuousActionVecMockEnv(), policy, frames_per_batch=8, total_frames=8, '
                   'policy_device="cpu:0")\n',
    advice.PICKLE: "collector = MultiSyncCollector([ContinuousActionVecMockEnv] * 2, policy, frames_per_batch=8, "
                   "total_frames=8)\n",
    advice.LOSS: 'loss = DDPGLoss(policy, ValueOperator(Critic(), in_keys=["observation", "action"]))\n',
    advice.ESTIMATOR: "loss = DiscreteCQLLoss(q_actor, action_space=env.action_spec)\nloss.make_value_estimator()\n",
    advice.STATEFUL: 'loss = DQNLoss(q_actor, action_space=env.action_spec)\nnet = loss.get_stateful_net("value_network")\n',
}


@pytest.fixture
def spawn() -> Iterator[None]:
    previous = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    yield
    multiprocessing.set_start_method(previous, force=True)


def lint_remedy(source: str) -> str:
    [finding] = [f for f in check_source(source, select=["RLG001"]) if f.code == "RLG001"]
    # The remedy is the finding's second line: where the member is set, then the advice.
    where, advice_text = finding.remedy.split(". To fix it,", 1)
    assert re.fullmatch(r"set at line \d+", where), finding.remedy
    return "To fix it," + advice_text


def runtime_remedy(source: str, folder: Path, name: str) -> str:
    """Run ``source`` as the module ``name`` under install(), and read rlguard's advice."""
    (folder / f"{name}.py").write_text(source)
    sys.path.insert(0, str(folder))
    try:
        with installed(**only("collectors")), warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            try:
                importlib.import_module(name)
                [message] = [str(w.message) for w in record if issubclass(w.category, RLGuardWarning)]
            except RLGuardError as error:
                message = str(error)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)
    assert message.endswith(LINT_NOTE)
    return message[message.index("To fix it,"):-len(LINT_NOTE)]


@pytest.mark.usefixtures("spawn")
@pytest.mark.parametrize("site", sorted(SITES))
def test_the_linter_and_the_runtime_give_the_same_advice(site: str, tmp_path: Path) -> None:
    source = textwrap.dedent(HEADER) + SITES[site]
    linted = lint_remedy(source)
    assert linted == remedy(site, "LockedNet", keyword="policy_device")
    assert runtime_remedy(source, tmp_path, f"advice_case_{site}") == linted


@pytest.mark.parametrize("site", advice.SITES)
def test_the_marker_is_offered_only_with_install(site: str) -> None:
    text = remedy(site, "Policy")
    if "@rlguard.runtime.uncopyable" in text:
        assert "@rlguard.runtime.uncopyable` and call `rlguard.runtime.install()`" in text
    # Where the copy is real (deepcopy, pickling, a loss that keeps the copy), the marker cannot help.
    assert ("@rlguard.runtime.uncopyable" in text) == (site in (advice.DEVICE, advice.ESTIMATOR, advice.STATEFUL))


@pytest.mark.parametrize("site", advice.SITES)
def test_a_marked_class_is_never_told_to_mark_itself(site: str) -> None:
    text = remedy(site, "Policy", marked=True)
    assert "uncopyable" not in text and "`Policy` a `__deepcopy__` that shares or rebuilds that member" not in text


@pytest.mark.parametrize("site", [advice.LOSS, advice.ESTIMATOR, advice.STATEFUL])
def test_no_policy_factory_for_losses(site: str) -> None:
    assert "policy_factory" not in remedy(site, "Net") + remedy(site, "Net", marked=True)


def test_pickling_advice_never_relies_on_deepcopy() -> None:
    text = remedy(advice.PICKLE, "Policy")
    assert text.index("`policy_factory=`") < text.index("inside the worker") < text.index("`__getstate__`")
    assert "give `Policy` a `__deepcopy__`" not in text


def test_an_unknown_site_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown copy site 'teleport'"):
        remedy("teleport", "Policy")


def test_the_advice_module_imports_neither_torch_nor_libcst() -> None:
    import subprocess

    code = "import sys, rlguard.advice; print(sorted({'torch', 'libcst'} & set(sys.modules)))"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert output.stdout.strip() == "[]"
