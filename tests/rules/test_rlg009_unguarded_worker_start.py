"""RLG009: module-level worker starts outside a ``__main__`` guard, through this file's functions too; the
near misses a program that runs stays silent on; and, on the real torchrl, the flagged program failing
where the remedy's guarded program runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from rlguard.testing import check_source, fix_source

FACTORY = "from torchrl.envs import ParallelEnv, PendulumEnv\n\n\ndef make_env():\n    return PendulumEnv()\n\n\n"

FLAGGED = {
    "direct": FACTORY + "env = ParallelEnv(2, make_env)\nenv.rollout(3)\n",
    "collector-in-a-function": (
        "from torchrl.collectors import MultiSyncCollector\n\n\n"
        "def get_collector(policy):\n    return MultiSyncCollector([make_env] * 2, policy, frames_per_batch=8)\n\n\n"
        "collector = get_collector(None)\n"),
    # make_collector(parallel=True) builds the collector, two functions deep.
    "switched-on": (
        "from torchrl.collectors import Collector, MultiSyncCollector\n\n\n"
        "def make_collector(policy, parallel=False):\n    if parallel:\n"
        "        return MultiSyncCollector([make_env] * 2, policy, frames_per_batch=8)\n"
        "    return Collector(make_env, policy, frames_per_batch=8)\n\n\n"
        "def get_collectors():\n    return [make_collector(None, True)]\n\n\ncollectors = get_collectors()\n"),
    "spawn-chosen": "import multiprocessing\n\n" + FACTORY + "multiprocessing.set_start_method('spawn')\n"
                    "env = ParallelEnv(2, make_env)\nenv.reset()\n",
    "under-another-if": FACTORY + "if True:\n    env = ParallelEnv(2, make_env)\n    env.reset()\n",
    # the ``else`` of a loop or a ``try`` is no ``if``'s: the walk is still in the switched-on branch
    "loop-else-in-a-switch": (
        "from torchrl.collectors import MultiSyncCollector\n\n\n"
        "def make_collector(policy, parallel=False):\n    if parallel:\n        for _ in range(1):\n            pass\n"
        "        else:\n            return MultiSyncCollector([make_env] * 2, policy, frames_per_batch=8)\n\n\n"
        "collector = make_collector(None, True)\n"),
    "parallel-env-in-a-collector": FACTORY + "from torchrl.collectors import Collector\n\n"
                                   "collector = Collector(ParallelEnv(2, make_env), None, frames_per_batch=8)\n",
}

NEAR_MISSES = {
    "guarded": FACTORY + "if __name__ == '__main__':\n    env = ParallelEnv(2, make_env)\n",
    "guarded-reversed": FACTORY + "if '__main__' == __name__:\n    env = ParallelEnv(2, make_env)\n",
    "in-a-function-called-under-the-guard": FACTORY + (
        "def main():\n    env = ParallelEnv(2, make_env)\n    env.rollout(3)\n\n\n"
        "if __name__ == '__main__':\n    main()\n"),
    "fork-chosen": "import torch.multiprocessing as mp\n\n" + FACTORY + "mp.set_start_method('fork')\n"
                   "env = ParallelEnv(2, make_env)\n",
    "fork-passed": FACTORY + "env = ParallelEnv(2, make_env, mp_start_method='fork')\n",
    "switched-off": (
        "from torchrl.collectors import Collector, MultiSyncCollector\n\n\n"
        "def make_collector(policy, parallel=False):\n    if parallel:\n"
        "        return MultiSyncCollector([make_env] * 2, policy, frames_per_batch=8)\n"
        "    return Collector(make_env, policy, frames_per_batch=8)\n\n\n"
        "collector = make_collector(None)\nother = make_collector(None, parallel=False)\n"),
    # ParallelEnv starts its workers when first used: built at module level, used under the guard, it runs.
    "parallel-env-used-under-the-guard": FACTORY + "env = ParallelEnv(2, make_env)\n"
                                         "if __name__ == '__main__':\n    env.rollout(3)\n",
    "single-process": "from torchrl.collectors import Collector\nfrom torchrl.envs import SerialEnv\n\n"
                      "env = SerialEnv(2, make_env)\ncollector = Collector(env, None, frames_per_batch=8)\n",
    "a-method": FACTORY + "class Runner:\n    def start(self):\n        return ParallelEnv(2, make_env)\n",
    # a loop's ``else`` at module level, outside any ``if`` (sota-implementations/redq/utils.py has one)
    "loop-else": FACTORY + "for attempt in range(3):\n    break\nelse:\n    raise RuntimeError\n",
    "not-torchrl": "from my_envs import ParallelEnv\n\nenv = ParallelEnv(2, make_env)\n",
}


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_flagged(name):
    found = check_source(FLAGGED[name], select=["RLG009"])
    assert len(found) == 1 and found[0].fix is not None and found[0].fix.applicability == "unsafe", name
    assert "`spawn`" in found[0].message and '__name__ == "__main__"' in found[0].remedy


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_silent(name):
    assert not check_source(NEAR_MISSES[name], select=["RLG009"]), name


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_near_misses_are_left_as_they_are(name):
    assert fix_source(NEAR_MISSES[name], unsafe=True, select=["RLG009"]) == NEAR_MISSES[name], name


COLLECTOR = "from torchrl.collectors import MultiSyncCollector\n"
# Each moves a binding that what stays needs: the finding stands, its remedy says why there is no fix.
NO_FIX = {
    # a function the workers may run reads a name bound only in the code to move
    "kept-function-reads-a-moved-name": (
        COLLECTOR + FACTORY + "def log(batch):\n    logger.append(batch)\n\n\n"
        "collector = MultiSyncCollector([make_env] * 2, None, frames_per_batch=8)\nlogger = []\n"
        "for batch in collector:\n    log(batch)\n", "`log`", "`logger`"),
    # ... or a name the code to move rebinds, or changes in place (the workers would see the old value)
    "kept-function-reads-a-rebound-name": (
        COLLECTOR + "from torchrl.envs import PendulumEnv\n\nsettings = {}\n\n\n"
        "def make_env():\n    return PendulumEnv(**settings)\n\n\n"
        "collector = MultiSyncCollector([make_env] * 2, None, frames_per_batch=8)\nsettings[\"device\"] = \"cpu\"\n",
        "`make_env`", "`settings`"),
    "lambda-reads-a-moved-name": (
        "from torchrl.envs import ParallelEnv, PendulumEnv\n\nmake_env = lambda: PendulumEnv(device=device)\n"
        "env = ParallelEnv(2, make_env)\ndevice = \"cpu\"\nenv.rollout(3)\n", "lambda", "`device`"),
    # a factory that reads the moved ParallelEnv moves too, and the collector sends it by name
    "moved-function-sent-to-the-workers": (
        COLLECTOR + FACTORY + "env = ParallelEnv(2, make_env)\nenv.reset()\n\n\ndef make_twin():\n    return env\n\n\n"
        "collector = MultiSyncCollector([make_twin], None, frames_per_batch=8)\n", "`make_twin`", "pickled by name"),
    # the policy's class is defined in the block that starts the workers
    "class-in-the-starting-block": (
        COLLECTOR + FACTORY + "with open(__file__):\n    class Policy:\n        pass\n\n"
        "    collector = MultiSyncCollector([make_env] * 2, Policy(), frames_per_batch=8)\n", "`Policy`", "pickled by name"),
    "star-import": (FACTORY + "env = ParallelEnv(2, make_env)\nfrom my_helpers import *\nenv.rollout(3)\n",
                    "import *", "cannot list"),
}


@pytest.mark.parametrize("name", sorted(NO_FIX))
def test_no_fix_where_what_stays_needs_what_moves(name):
    source, *said = NO_FIX[name]
    found = check_source(source, select=["RLG009"])
    assert found and all(f.fix is None for f in found), name
    assert all(part in found[0].remedy for part in ("No automatic fix", *said)), found[0].remedy
    assert fix_source(source, unsafe=True, select=["RLG009"]) == source


def test_the_fix_keeps_definitions_above_and_merges_an_existing_guard():
    source = (COLLECTOR + FACTORY + "collector = MultiSyncCollector([make_env] * 2, None, frames_per_batch=8)\n"
              "# count what comes\nseen = 0\n\n\ndef size(batch):\n    return batch.numel()\n\n\n"
              "def report():\n    print(seen)\n\n\nif __name__ == \"__main__\":\n    for batch in collector:\n"
              "        seen += size(batch)\n    report()\n")
    fixed = fix_source(source, unsafe=True, select=["RLG009"])
    assert fixed == (COLLECTOR + FACTORY + "def size(batch):\n    return batch.numel()\n\n\n"
                     "if __name__ == \"__main__\":\n    collector = MultiSyncCollector([make_env] * 2, None, frames_per_batch=8)\n"
                     "    # count what comes\n    seen = 0\n\n\n    def report():\n        print(seen)\n\n\n"
                     "    for batch in collector:\n        seen += size(batch)\n    report()\n")
    assert not check_source(fixed, select=["RLG009"])
    assert fix_source(source, unsafe=False, select=["RLG009"]) == source


def test_a_redefinition_moves_with_the_code_that_sees_the_first_definition():
    source = (COLLECTOR + FACTORY + "def scale(x):\n    return x\n\n\n"
              "collector = MultiSyncCollector([make_env] * 2, None, frames_per_batch=8)\nfirst = scale(1)\n\n\n"
              "def scale(x):\n    return 2 * x\n\n\nsecond = scale(1)\n")
    fixed = fix_source(source, unsafe=True, select=["RLG009"])
    guard = fixed.index('if __name__ == "__main__":')
    assert fixed.index("def scale(x):\n    return x") < guard < fixed.index("    def scale(x):\n        return 2 * x")
    assert "first = scale(1)" in fixed[guard:] and "second = scale(1)" in fixed[guard:]


@pytest.mark.parametrize("source, fixed", [("torchrl.envs", True), ("my_envs", False)])
def test_a_notebook_cell_that_imports_again_moves_no_name_the_workers_read(source, fixed):
    code = FACTORY + f"env = ParallelEnv(2, make_env)\nfrom {source} import PendulumEnv\nenv.rollout(3)\n"
    found = check_source(code, select=["RLG009"])
    assert (found[0].fix is not None) is fixed, found[0].remedy  # the same class: make_env reads what it read
    if fixed:
        assert fix_source(code, unsafe=True, select=["RLG009"]).endswith(
            "from torchrl.envs import PendulumEnv\n\nif __name__ == \"__main__\":\n"
            "    env = ParallelEnv(2, make_env)\n    env.rollout(3)\n")


def test_the_finding_names_the_function_and_what_it_builds():
    found = check_source(FLAGGED["switched-on"], select=["RLG009"])
    assert found[0].message.startswith("`get_collectors(...)`, which builds a `MultiSyncCollector`,")


def _run(source: str, folder) -> int | None:
    """The program's exit status (None: it was still running after the limit), its workers killed."""
    path = folder / "program.py"
    path.write_text(source, encoding="utf-8")
    process = subprocess.Popen([sys.executable, str(path)], cwd=folder, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        return process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        return None
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


@pytest.mark.slow  # each run spawns two workers that import torchrl
def test_the_flagged_program_fails_and_the_remedy_runs(tmp_path):
    pytest.importorskip("torchrl")
    body = "env = ParallelEnv(2, make_env)\nassert env.rollout(3).shape[0] == 2\nenv.close()\n"
    flagged, remedied = FACTORY + body, FACTORY + "if __name__ == '__main__':\n" + \
        "".join(f"    {line}\n" for line in body.splitlines())
    assert check_source(flagged, select=["RLG009"]) and not check_source(remedied, select=["RLG009"])
    lazy = FACTORY + "env = ParallelEnv(2, make_env)\nif __name__ == '__main__':\n" + \
        "".join(f"    {line}\n" for line in body.splitlines()[1:])  # the near miss runs too
    assert not check_source(lazy, select=["RLG009"])
    assert _run(flagged, tmp_path) != 0
    assert _run(remedied, tmp_path) == 0
    assert _run(lazy, tmp_path) == 0


# A tutorial's shape: the collector and the loop at module level, a helper defined between them.
TUTORIAL = """\
import torch
from torchrl.collectors import MultiSyncCollector
from torchrl.testing.mocking_classes import ContinuousActionVecMockEnv

torch.set_num_threads(1)
SEED = 3


def make_env():
    env = ContinuousActionVecMockEnv()
    env.set_seed(SEED)
    return env


collector = MultiSyncCollector([make_env], None, frames_per_batch=8, total_frames=16)
frames = 0


def size(batch):
    return batch.numel()


for batch in collector:
    frames += size(batch)
collector.shutdown()
assert frames == 16, frames
"""


@pytest.mark.slow  # the fixed program spawns a worker that imports torchrl
def test_the_fixed_tutorial_runs(tmp_path):
    pytest.importorskip("torchrl")
    fixed = fix_source(TUTORIAL, unsafe=True, select=["RLG009"])
    assert 'if __name__ == "__main__":\n    collector = MultiSyncCollector(' in fixed
    assert fixed.index("def size(") < fixed.index("if __name__")  # the worker finds what it needs by name
    assert not check_source(fixed, select=["RLG009"])
    assert _run(TUTORIAL, tmp_path) != 0  # the worker fails re-running the collector's line
    assert _run(fixed, tmp_path) == 0
