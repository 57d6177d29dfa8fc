"""RLG007 on removed modules (``torchrl.envs.vec_env``, gone in 0.2): flagged at each import, the
module's own or a name's from it, private names included; renamed to the module that replaced it where
every use takes a name that module offers, and the fixed code runs on the tested torchrl."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.rules.data import REMOVED_API
from rlguard.testing import check_source, fix_source

SELECT = ["RLG006", "RLG007"]


def findings(source: str, **kwargs):
    return [f for f in check_source(source, select=SELECT, **kwargs) if f.code in SELECT]


def _runs(source: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=300)


def test_the_table_lists_vec_env_with_the_module_that_replaced_it():
    (change,) = [c for c in REMOVED_API if c.kind == "module" and c.qualname == "torchrl.envs.vec_env"]
    assert change.removed_in == (0, 2) and change.replacement == "torchrl.envs"
    assert {"ParallelEnv", "SerialEnv"} <= set(change.provides)


def test_a_plain_import_is_flagged_on_its_line_without_a_fix():
    source = "import torchrl.envs.vec_env\n\nenv = torchrl.envs.vec_env.SerialEnv(2, make_env)\n"
    found = findings(source)
    assert [f.line for f in found] == [1, 3]  # the import, and the name its use reads
    assert "`torchrl.envs.vec_env` was removed in torchrl 0.2" in found[0].full_message
    assert "import from `torchrl.envs`" in found[0].full_message and found[0].fix is None


@pytest.mark.parametrize("source, fixed", [
    ("import torchrl.envs.vec_env as ve\n", "import torchrl.envs as ve\n"),
    ("from torchrl.envs import vec_env\n", "import torchrl.envs as vec_env\n"),
])
def test_the_module_under_a_name_of_its_own_becomes_its_replacement_and_runs(source, fixed):
    local = "ve" if " as ve" in source else "vec_env"
    use = f"from torchrl.envs import PendulumEnv\n\nenv = {local}.SerialEnv(2, PendulumEnv)\nprint(env.rollout(3).shape)\n"
    (finding,) = [f for f in findings(source + use) if f.line == 1]
    assert finding.fix is not None and finding.fix.applicability == "safe"
    assert _runs(source + use).returncode != 0  # the old import fails on the tested torchrl
    after = fix_source(source + use, select=SELECT)
    assert after == fixed + use
    done = _runs(after)
    assert done.returncode == 0 and "torch.Size([2, 3])" in done.stdout, done.stderr[-2000:]


def test_no_fix_where_a_use_takes_a_name_the_replacement_lacks():
    source = "import torchrl.envs.vec_env as ve\n\nclass MyEnv(ve._BatchedEnv):\n    pass\n"
    (finding,) = findings(source)
    assert finding.line == 1 and finding.fix is None
    assert fix_source(source, select=SELECT) == source


def test_a_private_name_from_a_removed_module_is_flagged_at_its_import():
    source = "from torchrl.envs.vec_env import _BatchedEnv, ParallelEnv\n"
    found = findings(source)
    assert len(found) == 2  # ``ParallelEnv`` is reported as the moved name it is, ``_BatchedEnv`` through its module
    private = next(f for f in found if "vec_env` was removed" in f.full_message)
    assert "it has no `_BatchedEnv`" in private.full_message and private.fix is None
    assert _runs(source).returncode != 0


def test_a_star_import_from_a_removed_module_is_flagged():
    (finding,) = findings("from torchrl.envs.vec_env import *\n")
    assert finding.line == 1 and "vec_env` was removed in torchrl 0.2" in finding.full_message


def test_a_handler_for_module_not_found_catches_an_import_of_the_module_not_of_a_name():
    shim = "try:\n    import torchrl.envs.vec_env as ve\nexcept {}:\n    import torchrl.envs as ve\n"
    assert findings(shim.format("ModuleNotFoundError")) == []
    assert findings(shim.format("ImportError")) == []
    # ``from package import gone`` raises a plain ImportError, which this handler does not catch.
    name = "try:\n    from torchrl.envs import vec_env\nexcept ModuleNotFoundError:\n    vec_env = None\n"
    assert [f.line for f in findings(name)] == [2]


@pytest.mark.parametrize("source, options", [
    ("import torchrl.envs\nfrom torchrl.envs import batched_envs, ParallelEnv\n", {}),  # what replaced it
    ("from my_lib.envs import vec_env\nimport my_lib.envs.vec_env\n", {}),  # another package's module
    ("import torchrl.envs.vec_env as ve\n", {"target": "0.1"}),  # before the removal
])
def test_near_misses_are_silent(source, options):
    assert findings(source, **options) == []
