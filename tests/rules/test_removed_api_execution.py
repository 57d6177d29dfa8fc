"""Every fixable table entry, proven on the real torchrl: a snippet in the old API fails, `rlguard fix`
rewrites it, and the fixed snippet imports (and, for the specs, constructs) what it uses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rlguard.rules.data import NEWEST_KNOWN_TORCHRL, REMOVED_API
from rlguard.testing import check_source, fix_source

torchrl = pytest.importorskip("torchrl")
INSTALLED = tuple(int(p) for p in torchrl.__version__.split(".")[:3])
if INSTALLED[:2] != NEWEST_KNOWN_TORCHRL[:2]:
    pytest.skip(f"the proofs run on torchrl {NEWEST_KNOWN_TORCHRL}, not {torchrl.__version__}",
                allow_module_level=True)

# How the old docs built these specs (torchrl 0.4-0.10 tutorials): constructed, not only imported.
CONSTRUCTIONS = {
    "CompositeSpec": "{}(obs={}(shape=(3,)))",
    "UnboundedContinuousTensorSpec": "{}(shape=(3,))",
    "BoundedTensorSpec": "{}(-1.0, 1.0, shape=(1,))",
    "DiscreteTensorSpec": "{}(4)",
    "OneHotDiscreteTensorSpec": "{}(4)",
    "BinaryDiscreteTensorSpec": "{}(4)",
    "MultiDiscreteTensorSpec": "{}([2, 3])",
    "MultiOneHotDiscreteTensorSpec": "{}([2, 3])",
    "UnboundedDiscreteTensorSpec": "{}(shape=(1,))",
    "NonTensorSpec": "{}(shape=())",
}


def _fixable() -> list:
    # A class whose constructor only raises still imports, and one whose calls are rewritten (not renamed)
    # loses its import with its calls: both are proven on running code in test_removed_api_changes_execution.py.
    return [c for c in REMOVED_API if c.kind == "name" and c.fix != "none" and c.removed_in is not None
            and c.removed_in <= NEWEST_KNOWN_TORCHRL and c.found != "raises" and not c.rewrite]


def _snippet(change) -> str:
    name = change.name
    if name == "CompositeSpec":
        return (f"from {change.module} import CompositeSpec, UnboundedContinuousTensorSpec\n\n"
                "value = CompositeSpec(obs=UnboundedContinuousTensorSpec(shape=(3,)))\n")
    construct = CONSTRUCTIONS.get(name, "{}").format(name, name)
    return f"from {change.module} import {name}\n\nvalue = {construct}\n"


# Runs each snippet in a fresh namespace of one interpreter: the verdict per snippet, as JSON.
RUNNER = """
import json, sys, traceback
results = []
for source in json.load(sys.stdin):
    try:
        exec(compile(source, "<snippet>", "exec"), {})
        results.append(["ok", ""])
    except ImportError as error:
        # A missing third-party package, raised as such or as the cause of torchrl's own ImportError.
        missing = error if isinstance(error, ModuleNotFoundError) else error.__cause__
        if isinstance(missing, ModuleNotFoundError):
            results.append(["missing", missing.name or ""])
        else:
            results.append(["ImportError", traceback.format_exc(limit=1)[-400:]])
    except Exception as error:
        results.append([type(error).__name__, traceback.format_exc(limit=1)[-400:]])
print(json.dumps(results))
"""


def _run_all(sources: list[str]) -> list[tuple[str, str]]:
    done = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(sources), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return [tuple(r) for r in json.loads(done.stdout.strip().splitlines()[-1])]


def test_every_fixable_entry_is_fixed_into_code_that_runs_on_the_tested_stack():
    changes = _fixable()
    assert len(changes) > 50  # the specs, the collectors, the moved names
    select = ["RLG006", "RLG007"]
    old = [_snippet(c) for c in changes]
    fixed = [fix_source(s, select=select, unsafe=c.fix == "unsafe") for s, c in zip(old, changes, strict=True)]
    for change, before, after in zip(changes, old, fixed, strict=True):
        assert after != before, change.qualname
        assert not [f for f in check_source(after, select=select) if f.code in select], change.qualname
    results = _run_all(old + fixed)
    before, after = results[: len(old)], results[len(old):]
    # A removed torchrl module fails with ModuleNotFoundError naming itself: that is the old API failing.
    proven, wrong = 0, []
    for change, (old_verdict, _), (verdict, detail), source in zip(changes, before, after, fixed,
                                                                             strict=True):
        if old_verdict not in ("ImportError", "AttributeError", "missing"):  # missing: a removed torchrl module
            wrong.append(f"{change.qualname}: the old snippet gave {old_verdict}, not an import failure")
        elif verdict != "ok":
            wrong.append(f"{change.qualname}: {source}\n{detail}")
        else:
            proven += 1
    assert not wrong, "\n".join(wrong)
    assert proven == len(changes), proven  # two entries live in modules that import hydra (in the test extra)


def test_unsafe_entries_are_not_applied_without_the_flag():
    source = "from torchrl.data import UnboundedDiscreteTensorSpec\n\nspec = UnboundedDiscreteTensorSpec(shape=(1,))\n"
    assert fix_source(source, select=["RLG007"]) == source
    found = check_source(source, select=["RLG007"])
    assert len(found) == 1 and "dtype=torch.int64" in found[0].full_message
