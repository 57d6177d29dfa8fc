"""RLG001 in scripts whose names Python cannot import (``my-script.py``): a script that is run, not
imported, is judged as the same text under an importable name is. The index finds a name of such a
module through the file that asks for it, since no import can reach it."""

from __future__ import annotations

import textwrap

import pytest

from rlguard.config import Config
from rlguard.engine.runner import RunOptions, check
from rlguard.engine.target import NEWEST_KNOWN_TORCHRL, Target

LOCKED = """
import copy
import threading

from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector


class LockedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()


class Child(LockedNet):
    pass


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Child()


def make_policy():
    return TensorDictModule(Holder(), in_keys=["observation"], out_keys=["action"])


def make_child():
    return Child()


twin = copy.deepcopy(make_child())
held = copy.deepcopy(Holder())
collector = Collector(env, make_policy(), frames_per_batch=200, total_frames=10_000, policy_device="cuda:0")
"""
FROM_SIBLING = """
import copy

from policies import LockedNet


class Mine(LockedNet):
    pass


def build():
    return Mine()


twin = copy.deepcopy(build())
"""
SIBLING = """
import threading
from torch import nn


class LockedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
"""


def _findings(root, name: str, script: str, package: bool) -> list[tuple]:
    folder = root / "pkg" if package else root
    folder.mkdir(parents=True, exist_ok=True)
    if package:
        (folder / "__init__.py").write_text("")
    (folder / "policies.py").write_text(textwrap.dedent(SIBLING))
    # In a package, the sibling is imported by its full name (the project root is on the path).
    (folder / name).write_text(textwrap.dedent(script).replace("from policies", "from pkg.policies" if package else "from policies"))
    report, _ = check([str(folder / name)], Config(root=str(root)), RunOptions(jobs=1, use_cache=False),
                      Target(NEWEST_KNOWN_TORCHRL, "default"))
    return [(f.code, f.span, f.message) for f in report.findings]


@pytest.mark.parametrize("package", [False, True], ids=["script", "in-a-package"])
@pytest.mark.parametrize("script, expected", [(LOCKED, 3), (FROM_SIBLING, 1)], ids=["same-file", "from-a-sibling"])
def test_a_hyphenated_script_keeps_its_findings(tmp_path, script, expected, package):
    importable = _findings(tmp_path / "a", "my_script.py", script, package)
    hyphenated = _findings(tmp_path / "b", "my-script.py", script, package)
    assert [code for code, _, _ in importable] == ["RLG001"] * expected
    assert hyphenated == importable
