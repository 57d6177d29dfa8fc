"""RLG007 removed-api (and RLG006 through the same table): sites, preview, members, pins, vendored copies."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from rlguard.testing import check_source, fix_source

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def findings(source: str, **kwargs):
    return [f for f in check_source(source, select=["RLG006", "RLG007"], **kwargs) if f.code in ("RLG006", "RLG007")]


def test_one_finding_per_import_and_the_uses_are_renamed_with_it():
    source = ("from torchrl.data import CompositeSpec\n\n"
              "a = CompositeSpec()\nb = CompositeSpec()\n\ndef f(x: \"CompositeSpec\"):\n    return x\n")
    (finding,) = findings(source)
    assert finding.line == 1 and "removed in torchrl 0.11" in finding.full_message and "use `Composite`" in finding.full_message
    assert fix_source(source, select=["RLG007"]) == source.replace("CompositeSpec", "Composite")


def test_each_attribute_site_is_its_own_finding():
    source = "import torchrl.data as d\n\na = d.DiscreteTensorSpec(3)\nb = d.OneHotDiscreteTensorSpec(3)\n"
    assert [f.line for f in findings(source)] == [3, 4]


@pytest.mark.parametrize("source", [
    "from torchrl.data import Composite\n\nspec = Composite()\n",  # the new name
    "from my_lib.data import CompositeSpec\n",  # another package's class of that name
    "CompositeSpec = make_spec_class()\nspec = CompositeSpec()\n",  # a local of that name
    "from torchrl.data import tensor_specs\n\nspec = tensor_specs.Composite()\n",
])
def test_near_misses_are_silent(source):
    assert findings(source) == []


def test_target_before_the_removal_is_silent_and_preview_names_the_removal():
    source = "from torchrl.data import CompositeSpec\n"
    assert findings(source, target="0.10") == []
    (finding,) = findings(source, target="0.10", options={"RLG007": {"preview": True}})
    assert "deprecated since torchrl 0.6" in finding.full_message and "goes in 0.11" in finding.full_message
    assert findings(source, target="0.5", options={"RLG007": {"preview": True}}) == []  # not yet deprecated


def test_preview_on_a_name_still_there_at_the_newest_release():
    source = "from torchrl.envs import VecNorm\n"
    assert findings(source) == []
    (finding,) = findings(source, options={"RLG007": {"preview": True}})
    assert "deprecated" in finding.full_message and "VecNormV2" in finding.full_message


def test_a_class_whose_constructor_only_raises_is_flagged_where_it_is_built():
    # The import and an isinstance check work on torchrl 0.14.1; building it raises.
    source = ("from torchrl.modules import EGreedyWrapper\n\n"
              "def is_wrapped(policy):\n    return isinstance(policy, EGreedyWrapper)\n")
    assert findings(source) == []
    (finding,) = findings(source + "\nwrapped = EGreedyWrapper(policy, eps_init=0.5)\n")
    assert finding.line == 6 and "raises RuntimeError" in finding.message


def test_removed_keyword_and_method_are_flagged_on_known_receivers():
    keyword = ("from tensordict.nn import ProbabilisticTensorDictModule\n\n"
               "m = ProbabilisticTensorDictModule(in_keys=['loc'], out_keys=['a'], default_interaction_mode='mode')\n")
    (finding,) = findings(keyword)
    assert "default_interaction_mode" in finding.full_message and "default_interaction_type" in finding.full_message
    assert findings(keyword, target="0.6") == []
    method = ("from torchrl.envs.libs.vmas import VmasWrapper\n\n"
              "env = VmasWrapper(make())\nspec = env.unbatched_action_spec\n")
    (finding,) = findings(method)
    assert finding.line == 4 and "full_action_spec_unbatched" in finding.full_message


@pytest.mark.parametrize("source", [
    "spec = env.unbatched_action_spec\n",  # receiver of unknown class
    "from my_lib import Module\n\nm = Module(default_interaction_mode='mode')\n",  # not tensordict's
])
def test_member_near_misses(source):
    assert findings(source) == []


def test_moved_name_gets_its_new_module_and_leaves_a_shared_statement():
    assert fix_source("from torchrl.envs import KLRewardTransform\n", select=["RLG007"]) == \
        "from torchrl.envs.llm import KLRewardTransform\n"
    shared = "from torchrl.envs import KLRewardTransform, GymEnv\n\nt = KLRewardTransform\n"
    (finding,) = findings(shared)
    assert "from `torchrl.envs.llm`" in finding.full_message
    assert fix_source(shared, select=["RLG007"]) == \
        "from torchrl.envs import GymEnv\nfrom torchrl.envs.llm import KLRewardTransform\n\nt = KLRewardTransform\n"
    # Near misses: an alias (``as``) or a re-exported name keeps its statement, flagged without a fix.
    (aliased,) = findings("from torchrl.envs import KLRewardTransform as KL, GymEnv\n")
    assert aliased.fix is None
    (exported,) = findings("from torchrl.envs import KLRewardTransform, GymEnv\n\n__all__ = ['KLRewardTransform']\n")
    assert exported.fix is None


def test_a_vendored_torchrl_copy_is_never_rewritten(tmp_path):
    files = {
        "vendor/torchrl/__init__.py": "from .collectors import SyncDataCollector\n",
        "vendor/torchrl/collectors/__init__.py": "from .collectors import SyncDataCollector\n",
        "vendor/torchrl/collectors/collectors.py": "class SyncDataCollector:\n    pass\n",
        "vendor/torchrl/data/__init__.py": "from torchrl.data.tensor_specs import CompositeSpec\n",
    }
    user = "from torchrl.collectors import SyncDataCollector\n"
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    (tmp_path / "train.py").write_text(user)
    done = _rlguard("fix", str(tmp_path), "--target-torchrl", "0.14", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    for path, text in files.items():
        assert (tmp_path / path).read_text() == text
    assert (tmp_path / "train.py").read_text() == "from torchrl.collectors import Collector\n"


def _rlguard(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": CHECKOUT}
    return subprocess.run([sys.executable, "-m", "rlguard", *args], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.mark.parametrize("pin, flagged", [
    ("torchrl>=0.7", True),  # open: a fresh install resolves the newest torchrl, which lacks the name
    ("torchrl>=0.7,<0.13", False),  # closed below the removal: every admitted version has it
    ("torchrl>=0.7,<0.14", True),  # closed above the removal: 0.13.3 is admitted and breaks
    ("torchrl==0.12.0", False),  # exact
    ("torchrl==0.13.3", True),
])
def test_a_pin_is_judged_at_its_newest_admitted_version(tmp_path, pin, flagged):
    (tmp_path / "requirements.txt").write_text(pin + "\n")
    (tmp_path / "train.py").write_text("from torchrl.collectors import SyncDataCollector\n")
    done = _rlguard("check", str(tmp_path), "--select", "RLG006", "--no-cache", cwd=tmp_path)
    assert ("RLG006" in done.stdout) is flagged, done.stdout + done.stderr
    if flagged:
        assert "is gone on every torchrl from 0.13 on;" in done.stdout
    pinned = _rlguard("check", str(tmp_path), "--select", "RLG006", "--no-cache", "--target-torchrl", "0.12", cwd=tmp_path)
    assert "RLG006" not in pinned.stdout  # the flag still pins one version


def test_fix_diff_of_a_project_applies_with_git_apply(tmp_path):
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "specs.py").write_text(textwrap.dedent("""\
        from torchrl.data import CompositeSpec, UnboundedContinuousTensorSpec

        spec = CompositeSpec(obs=UnboundedContinuousTensorSpec(shape=(3,)))
    """))
    (project / "pkg" / "collect.py").write_text(textwrap.dedent("""\
        import torchrl.collectors as tc
        from torchrl.envs import KLRewardTransform

        def make(env, policy):
            return tc.SyncDataCollector(env, policy)
    """))
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    diff = _rlguard("fix", "--diff", "--target-torchrl", "0.14", "--no-cache", ".", cwd=project)
    assert "+from torchrl.envs.llm import KLRewardTransform" in diff.stdout, diff.stderr
    (tmp_path / "upgrade.patch").write_text(diff.stdout)
    applied = subprocess.run(["git", "apply", str(tmp_path / "upgrade.patch")], cwd=project, capture_output=True,
                             text=True)
    assert applied.returncode == 0, applied.stderr
    assert "tc.Collector(env, policy)" in (project / "pkg" / "collect.py").read_text()
    assert "Composite(obs=Unbounded(shape=(3,)))" in (project / "pkg" / "specs.py").read_text()
    assert _rlguard("check", "--target-torchrl", "0.14", "--no-cache", "--select", "RLG006,RLG007", ".",
                    cwd=project).returncode == 0


def test_log_reward_says_what_the_logged_value_becomes():
    (finding,) = findings("from torchrl.trainers import LogReward\n")
    message = finding.full_message
    assert "LogScalar" in message and '"r_training"' in message and "('next', 'reward')" in message \
        and "std" in message
