"""RLG004 follows what a transform returns into the project's functions and other classes' methods.

A transform (or a replay buffer's ``transform=`` callable) that returns ``build_pair(td)``, where the
project function ``build_pair`` builds ``TensorDict(...)`` with no device, hands on a device-less
TensorDict just like one built in the transform. The finding sits at the call in the transform and
names where the factory builds it; the engine's index answers, so checking the transform's file
alone gives the same finding as checking the project.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import textwrap

import pytest

from rlguard.testing import check_source

HELPERS = '''\
from tensordict import TensorDict


def build_pair(td):
    return TensorDict({"obs": td["obs"], "next_obs": td["next", "obs"]}, batch_size=td.batch_size)


def build_nested(td):
    return build_pair(td)


def build_selected(td):
    out = TensorDict.from_dict({"obs": td["obs"]}, batch_size=td.batch_size)
    return out.select("obs")


def build_placed(td, device):
    return TensorDict({"obs": td["obs"]}, batch_size=td.batch_size, device=device)


def build_moved(td, device):
    return TensorDict({"obs": td["obs"]}, batch_size=td.batch_size).to(device)


def build_either(td, placed):
    if placed:
        return TensorDict({"obs": td["obs"]}, batch_size=td.batch_size, device=td.device)
    return TensorDict({"obs": td["obs"]}, batch_size=td.batch_size)


def build_rebound(td, placed):
    out = TensorDict({"obs": td["obs"]}, batch_size=td.batch_size)
    if placed:
        out = TensorDict({"obs": td["obs"]}, batch_size=td.batch_size, device=td.device)
    return out


def build_forever(td, depth):
    if depth:
        return build_forever(td, depth - 1)
    return build_forever(td, 0)


def build_maybe(td):
    if td.batch_size:
        return TensorDict({"obs": td["obs"]}, batch_size=td.batch_size)


def build_options(td, **options):
    return TensorDict({"obs": td["obs"]}, batch_size=td.batch_size, **options)


class Pairer:
    def build(self, td):
        return TensorDict({"obs": td["obs"]}, batch_size=td.batch_size).clone()

    def placed(self, td):
        return TensorDict({"obs": td["obs"]}, batch_size=td.batch_size, device=td.device)
'''

TRANSFORM = '''\
from torchrl.envs import Transform

from helpers import {factory}


class PairUp(Transform):
    def _call(self, next_tensordict):
        return {call}
'''

FLAGGED = {
    "function": ("build_pair", "build_pair(next_tensordict)", "at helpers.py:4"),
    "through another factory": ("build_nested", "build_nested(next_tensordict)", "in `build_pair` at helpers.py:4"),
    "from_dict then select": ("build_selected", "build_selected(next_tensordict)", "at helpers.py:12"),
    "method of another class": ("Pairer", "Pairer().build(next_tensordict)", "at helpers.py:"),
}

NEAR_MISSES = {
    "factory with a device": ("build_placed", "build_placed(next_tensordict, next_tensordict.device)"),
    "factory moving it to a device": ("build_moved", "build_moved(next_tensordict, next_tensordict.device)"),
    "return paths that differ": ("build_either", "build_either(next_tensordict, True)"),
    "a name bound twice": ("build_rebound", "build_rebound(next_tensordict, True)"),
    "recursive factory": ("build_forever", "build_forever(next_tensordict, 2)"),
    "a body that may end without returning": ("build_maybe", "build_maybe(next_tensordict)"),
    "**kwargs may carry the device": ("build_options", "build_options(next_tensordict)"),
    "method that sets the device": ("Pairer", "Pairer().placed(next_tensordict)"),
}


def findings(source: str, files: dict[str, str] | None = None) -> list[str]:
    found = check_source(textwrap.dedent(source), select=["RLG004"], extra_files=files)
    return [f.full_message for f in found if f.code == "RLG004"]


@pytest.mark.parametrize("name", sorted(FLAGGED))
def test_a_factory_in_another_file_is_flagged_at_the_call(name):
    factory, call, where = FLAGGED[name]
    (message,) = findings(TRANSFORM.format(factory=factory, call=call), {"helpers.py": HELPERS})
    assert "gives the transform `PairUp` a `TensorDict` without a device" in message
    assert f"where the factory builds it ({where}" in message


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_factories_that_give_a_device_or_are_unknown_are_not_flagged(name):
    factory, call = NEAR_MISSES[name]
    assert findings(TRANSFORM.format(factory=factory, call=call), {"helpers.py": HELPERS}) == []


def test_a_factory_in_the_same_file():
    source = HELPERS + "\n\n" + TRANSFORM.replace("from helpers import {factory}\n", "").format(
        call="build_pair(next_tensordict)")
    (message,) = findings(source)
    assert "`build_pair(...)` gives the transform `PairUp` a `TensorDict` without a device" in message
    assert "where the factory builds it (at example.py:4)" in message


def test_a_function_of_the_same_name_outside_the_project_is_not_followed():
    # ``helpers`` is not in the project: whatever its ``build_pair`` returns is unknown.
    assert findings(TRANSFORM.format(factory="build_pair", call="build_pair(next_tensordict)"),
                    {"other/helpers.py": HELPERS}) == []


def test_a_factory_called_outside_a_transform_is_not_flagged():
    source = "from helpers import build_pair\n\n\nclass Plain:\n    def _call(self, td):\n        return build_pair(td)\n"
    assert findings(source, {"helpers.py": HELPERS}) == []


BUFFER = '''\
from torchrl.data import LazyTensorStorage, ReplayBuffer

from helpers import build_pair


def to_pairs(data):
    pairs = build_pair(data)
    return pairs


rb = ReplayBuffer(storage=LazyTensorStorage(10), batch_size=2, transform={transform})
'''


@pytest.mark.parametrize("transform", ["to_pairs", "lambda td: build_pair(td)"])
def test_a_buffer_transform_returning_a_factory_result(transform):
    (message,) = findings(BUFFER.format(transform=transform), {"helpers.py": HELPERS})
    assert "`build_pair(...)` gives `" in message and "without a device" in message
    assert "a `ReplayBuffer` transform" in message and "where the factory builds it (at helpers.py:4)" in message


def _cli(folder, *paths: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "--select", "RLG004",
                           "--output-format", "full", *paths], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=120)
    return [line for line in done.stdout.splitlines() if "RLG004" in line or line.startswith(" ")]


def test_the_transform_file_alone_gives_the_same_finding_as_the_project(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "transform.py").write_text(TRANSFORM.format(factory="build_pair", call="build_pair(next_tensordict)"))
    alone = _cli(tmp_path, "transform.py")
    assert len([line for line in alone if "RLG004" in line]) == 1 and "transform.py:8:16" in alone[0]
    assert "helpers.py:4" in "".join(alone)  # the remedy names where the factory builds it
    assert _cli(tmp_path, ".") == alone


def test_the_flagged_buffer_transform_gives_device_less_samples(tmp_path):
    """Executed against the real torchrl: the stored data has a device, the samples do not (so a
    buffer with ``pin_memory=True`` would not pin them)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchrl")

    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "buffer.py").write_text(BUFFER.format(transform="to_pairs"))
    sample = _sample_of_cpu_data(tmp_path, "buffer.py", ("helpers",))
    assert sample.device is None
    assert sample["next_obs"].device == torch.device("cpu")  # every tensor is on the CPU; the TensorDict says None


@pytest.mark.parametrize("body, flagged", [
    ("pairs = build_pair(next_tensordict)\n        return pairs", True),
    ("pairs = build_placed(next_tensordict, next_tensordict.device)\n        if self.raw:\n"
     "            pairs = build_pair(next_tensordict)\n        return pairs", False),
    ("return build_pair(next_tensordict).to(next_tensordict.device)", False),
])
def test_a_factory_result_bound_to_a_name(body, flagged):
    source = ("from torchrl.envs import Transform\n\nfrom helpers import build_pair, build_placed\n\n\n"
              f"class PairUp(Transform):\n    def _call(self, next_tensordict):\n        {body}\n")
    assert len(findings(source, {"helpers.py": HELPERS})) == int(flagged)


MEMBER = '''\
from torchrl.envs import Transform

from helpers import Pairer


class Other:
    def build(self, td):
        return td


class PairUp(Transform):
    def __init__(self, raw):
        super().__init__()
        self.pairer = Pairer()
        {extra}

    def _call(self, next_tensordict):
        return self.pairer.{method}(next_tensordict)
'''


@pytest.mark.parametrize("extra, method, flagged", [
    ("pass", "build", True),
    ("pass", "placed", False),
    ("if raw:\n            self.pairer = Other()", "build", False),  # either class: unknown
])
def test_a_method_of_a_member(extra, method, flagged):
    found = findings(MEMBER.format(extra=extra, method=method), {"helpers.py": HELPERS})
    assert len(found) == int(flagged)
    assert all("where the factory builds it (at helpers.py:" in message for message in found)


# A transform function of another file given to a replay buffer, directly or through a buffer factory's
# ``**kwargs``: reported at the call that gives it (the finding's file names no TensorDict).
TRANSFORMS = '''\
from tensordict import TensorDict


def to_pairs(data):
    return TensorDict({"obs": data["obs"], "next_obs": data["next", "obs"]}, batch_size=data.batch_size)


def to_placed_pairs(data):
    return TensorDict({"obs": data["obs"], "next_obs": data["next", "obs"]}, batch_size=data.batch_size,
                      device=data.device)
'''

MAKERS = '''\
from torchrl.data import LazyTensorStorage, ReplayBuffer


def make_buffer(capacity, device="cpu", **kwargs):
    return ReplayBuffer(storage=LazyTensorStorage(capacity, device=device), batch_size=2, **kwargs)


def make_plain_buffer(capacity, **kwargs):
    return ReplayBuffer(storage=LazyTensorStorage(capacity), batch_size=2)
'''

GIVEN = '''\
from torchrl.data import LazyTensorStorage, ReplayBuffer

from makers import make_buffer, make_plain_buffer
from transforms import to_pairs, to_placed_pairs

rb = {call}
'''


@pytest.mark.parametrize("call, flagged", [
    ("make_buffer(10, transform=to_pairs, pin_memory=True)", True),
    ("ReplayBuffer(storage=LazyTensorStorage(10), batch_size=2, transform=to_pairs)", True),
    ("make_plain_buffer(10, transform=to_pairs, pin_memory=True)", False),  # the keyword is not handed on
    ("make_buffer(10, transform=to_placed_pairs, pin_memory=True)", False),  # the TensorDict has a device
])
def test_a_transform_of_another_file_given_to_a_buffer(call, flagged):
    found = findings(GIVEN.format(call=call), {"transforms.py": TRANSFORMS, "makers.py": MAKERS})
    assert len(found) == int(flagged)
    assert all(message.startswith("`to_pairs`, a `ReplayBuffer` transform, gives a `TensorDict` without a device")
               and "where the factory builds it (at transforms.py:4)" in message for message in found)


def test_a_transform_given_through_kwargs_gives_device_less_samples_and_the_file_alone_is_flagged(tmp_path):
    """The flagged program, run against the real torchrl: the storage is on the CPU, the samples have no
    device. Checking the caller alone gives the finding the project gives."""
    pytest.importorskip("torch")
    pytest.importorskip("torchrl")

    (tmp_path / "transforms.py").write_text(TRANSFORMS)
    (tmp_path / "makers.py").write_text(MAKERS)
    (tmp_path / "main.py").write_text(GIVEN.format(call="make_buffer(10, transform=to_pairs)"))
    alone = _cli(tmp_path, "main.py")
    assert len([line for line in alone if "RLG004" in line]) == 1 and "main.py:6:" in alone[0]
    assert _cli(tmp_path, ".") == alone
    assert _sample_of_cpu_data(tmp_path, "main.py", ("transforms", "makers")).device is None


def _sample_of_cpu_data(folder, script: str, modules: tuple[str, ...]):
    """Run ``script`` of ``folder`` (its modules importable, then forgotten), fill the replay buffer it
    binds to ``rb`` with CPU data, and sample it."""
    import torch
    from tensordict import TensorDict

    sys.path.insert(0, str(folder))
    try:
        rb = runpy.run_path(str(folder / script))["rb"]
    finally:
        sys.path.remove(str(folder))
        for module in modules:
            sys.modules.pop(module, None)
    rb.extend(TensorDict({"obs": torch.zeros(4, 2), "next": {"obs": torch.ones(4, 2)}}, batch_size=[4], device="cpu"))
    return rb.sample()


BASE = '''\
from torchrl.envs import Transform


class Base(Transform):
    pass
'''
# A transform whose file builds no TensorDict: it derives from a project transform in another file.
SUBCLASS = '''\
from base import Base
from helpers import {factory}


class PairUp(Base):
    def _call(self, next_tensordict):
        return {call}
'''


def _alone(root, files: dict[str, str], source: str):
    """The report when only ``transform.py`` is given, as pre-commit passes it."""
    from rlguard.config import Config
    from rlguard.engine.runner import RunOptions, check
    from rlguard.engine.target import Target
    from rlguard.rules.data import NEWEST_KNOWN_TORCHRL

    for name, text in {**files, "transform.py": source}.items():
        (root / name).write_text(text)
    previous = os.getcwd()
    os.chdir(root)
    try:
        report, _ = check(["transform.py"], Config(root=str(root)), RunOptions(select=["RLG004"], jobs=1, use_cache=False),
                          Target(NEWEST_KNOWN_TORCHRL, "default"))
    finally:
        os.chdir(previous)
    return report


def test_a_transform_that_builds_nothing_itself_is_parsed_only_when_its_imports_reach_a_construction(tmp_path):
    """The pre-filter passes a transform's file without ``TensorDict(`` when its imports reach a project
    function that builds one (through a base class of another file too), and clears it otherwise."""
    files = {"base.py": BASE, "helpers.py": HELPERS}
    flagged = _alone(tmp_path, files, SUBCLASS.format(factory="build_pair", call="build_pair(next_tensordict)"))
    assert flagged.files_parsed == 1
    assert [f.span.line for f in flagged.findings if f.code == "RLG004"] == [7]
    own = SUBCLASS.replace("from helpers import {factory}\n", "").format(call="next_tensordict.clone()")
    cleared = _alone(tmp_path, files, own)
    assert cleared.files_parsed == 0 and cleared.findings == []
    library = _alone(tmp_path, files, "from torchrl.envs import Transform\n\n\nclass Copy(Transform):\n"
                                      "    def _call(self, td):\n        return td.clone()\n")
    assert library.files_parsed == 0 and library.findings == []


def test_a_factory_that_builds_under_an_alias_reaches_the_transform_checked_alone(tmp_path):
    aliased = 'from tensordict import TensorDict as TD\n\n\ndef build_pair(td):\n    return TD({"obs": td["obs"]}, batch_size=td.batch_size)\n'
    report = _alone(tmp_path, {"base.py": BASE, "helpers.py": aliased},
                    SUBCLASS.format(factory="build_pair", call="build_pair(next_tensordict)"))
    assert [(f.code, f.span.line) for f in report.findings] == [("RLG004", 7)]
