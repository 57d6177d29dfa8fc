"""A class renamed with its keywords (``BoundedTensorSpec(minimum=, maximum=)`` -> ``Bounded(low=, high=)``):
the keywords are flagged on the old name too, and the rename carries them, so one safe fix leaves a call
that runs on the tested torchrl."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.testing import check_source, fix_source

SELECT = ["RLG006", "RLG007"]
OLD = "from torchrl.data import BoundedTensorSpec\n\nspec = BoundedTensorSpec(minimum=0, maximum=1, shape=(1,))\n"


def findings(source: str, **kwargs):
    return [f for f in check_source(source, select=SELECT, **kwargs) if f.code in SELECT]


def test_the_old_name_and_its_removed_keywords_are_flagged():
    found = findings(OLD)
    assert [f.line for f in found] == [1, 3, 3]
    keyword = found[1].full_message
    assert "`minimum=` of `Bounded`, the class `BoundedTensorSpec` is renamed to," in keyword and "use `low`" in keyword


@pytest.mark.parametrize("source", [
    OLD,
    "from torchrl.data.tensor_specs import BoundedTensorSpec as Spec\n\nspec = Spec(minimum=0, maximum=1, shape=(1,))\n",
])
def test_one_safe_fix_renames_class_and_keywords_and_the_result_runs(source):
    fixed = fix_source(source, select=SELECT)
    assert "minimum" not in fixed and "low=0, high=1" in fixed and "TensorSpec(" not in fixed.replace("Spec(", "")
    assert findings(fixed) == []
    check = fixed + "assert spec.space.low.item() == 0 and spec.space.high.item() == 1, spec\n"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("source, options", [
    ("from torchrl.data import Bounded\n\nspec = Bounded(low=0, high=1, shape=(1,))\n", {}),  # the new spelling
    ("from my_lib import BoundedTensorSpec\n\nspec = BoundedTensorSpec(minimum=0, maximum=1)\n", {}),  # not torchrl's
    (OLD, {"target": "0.10"}),  # deprecated, not removed yet
])
def test_near_misses_are_silent(source, options):
    assert findings(source, **options) == []


def test_positional_bounds_leave_only_the_rename():
    source = "from torchrl.data import BoundedTensorSpec\n\nspec = BoundedTensorSpec(0, 1, shape=(1,))\n"
    assert [f.line for f in findings(source)] == [1]
    assert fix_source(source, select=SELECT) == source.replace("BoundedTensorSpec", "Bounded")
