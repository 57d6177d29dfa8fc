"""RLG004 asks the engine what reaches a transform's output (``rlguard.engine.reach``, ``ProjectIndex``).

A device-less TensorDict built by a helper inherited from a project base class, by a classmethod, by
a function handed to a replay buffer through a factory's ``transform`` or ``**kwargs``, or by a factory
whose result is returned through ``.update(...)`` (which returns the TensorDict itself) is reported;
each flagged program runs against the real torchrl 0.14.1 / tensordict 0.14.3 and hands out a
TensorDict whose device is None. The near misses give the TensorDict a device, or never reach a buffer.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from rlguard.testing import check_source

BASE_HELPER = '''\
from tensordict import TensorDict
from torchrl.envs import Transform


class PairBase(Transform):
    def _pair(self, td):
        return TensorDict({"obs": td["obs"], "next_obs": td["next", "obs"]}, batch_size=td.batch_size{device})


class PairUp(PairBase):
    def forward(self, tensordict):
        return self._pair(tensordict)
'''

MIXIN_FILES = {"pairing.py": '''\
from tensordict import TensorDict


class Pairing:
    def _pair(self, td):
        return TensorDict({"obs": td["obs"], "next_obs": td["next", "obs"]}, batch_size=td.batch_size{device})
'''}

MIXIN = '''\
from torchrl.envs import Transform

from pairing import Pairing


class PairUp(Pairing, Transform):
    def forward(self, tensordict):
        return self._pair(tensordict)
'''

CLASSMETHOD = '''\
from tensordict import TensorDict
from torchrl.envs import Transform


class PairUp(Transform):
    @classmethod
    def _pair(cls, td):
        return TensorDict({"obs": td["obs"], "next_obs": td["next", "obs"]}, batch_size=td.batch_size{device})

    def forward(self, tensordict):
        return self._pair(tensordict)
'''

UPDATE_FILES = {"observations.py": '''\
from tensordict import TensorDict


def build_obs(td):
    return TensorDict({"obs": td["obs"]}, batch_size=td.batch_size{device})
'''}

UPDATE = '''\
from torchrl.envs import Transform

from observations import build_obs


class PairUp(Transform):
    def forward(self, tensordict):
        rest = tensordict.exclude("obs")
        return build_obs(tensordict).update(rest)
'''

BUFFER_FILES = {"buffers.py": '''\
from torchrl.data import LazyTensorStorage, ReplayBuffer


def make_buffer(size, **kwargs):
    return ReplayBuffer(storage=LazyTensorStorage(size, device="cpu"), batch_size=4, **kwargs)


def make_named(size, transform=None):
    return ReplayBuffer(storage=LazyTensorStorage(size, device="cpu"), batch_size=4, transform=transform)


def make_plain(size, sampler=None):
    return ReplayBuffer(storage=LazyTensorStorage(size, device="cpu"), batch_size=4)
'''}

BUFFER = '''\
from tensordict import TensorDict

from buffers import make_buffer, make_named, make_plain


def to_pairs(data):
    return TensorDict({"obs": data["obs"], "next_obs": data["next", "obs"]}, batch_size=data.batch_size{device})


rb = {factory}(16, {argument})
'''

CASES = {  # name: (source, other files, what the program gives: "transform" or "buffer")
    "a helper inherited from a project base class": (BASE_HELPER, {}, "transform"),
    "a helper of a base class in another file (C3: the mixin comes first)": (MIXIN, MIXIN_FILES, "transform"),
    "a classmethod": (CLASSMETHOD, {}, "transform"),
    "a factory's result returned through .update": (UPDATE, UPDATE_FILES, "transform"),
    "a buffer factory taking **kwargs": (BUFFER.replace("{factory}", "make_buffer").replace(
        "{argument}", "transform=to_pairs"), BUFFER_FILES, "buffer"),
    "a buffer factory passing its transform= on": (BUFFER.replace("{factory}", "make_named").replace(
        "{argument}", "transform=to_pairs"), BUFFER_FILES, "buffer"),
}


def _fill(text: str, device: str) -> str:
    return text.replace("{device}", device)


def findings(source: str, files: dict[str, str]) -> list[str]:
    found = check_source(textwrap.dedent(source), select=["RLG004"], extra_files=files)
    return [f.full_message for f in found if f.code == "RLG004"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_flagged(name):
    source, files, _ = CASES[name]
    (message,) = findings(_fill(source, ""), {path: _fill(text, "") for path, text in files.items()})
    assert "without a device" in message
    if CASES[name][2] == "buffer":
        assert "in `to_pairs`, a `ReplayBuffer` transform" in message


@pytest.mark.parametrize("name", sorted(CASES))
def test_near_miss_with_a_device(name):
    source, files, _ = CASES[name]
    device = ", device=td.device" if "data.batch_size" not in source else ", device=data.device"
    assert findings(_fill(source, device), {path: _fill(text, ", device=td.device") for path, text in files.items()}) == []


def test_a_function_given_to_a_factory_that_makes_no_buffer_transform_is_not_flagged():
    source = _fill(BUFFER.replace("{factory}", "make_plain").replace("{argument}", "sampler=to_pairs"), "")
    source += "\nother = make_buffer(16, transform=None)\n"  # the file has a transform=, as the pre-filter asks
    assert findings(source, {path: _fill(text, "") for path, text in BUFFER_FILES.items()}) == []


def test_a_subclass_overriding_the_helper_with_a_device_is_not_flagged():
    source = _fill(BASE_HELPER, "") + (
        "\n    def _pair(self, td):\n"
        "        return TensorDict({\"obs\": td[\"obs\"]}, batch_size=td.batch_size, device=td.device)\n")
    assert findings(source, {}) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_flagged_program_hands_out_a_device_less_tensordict(name, tmp_path):
    """Executed against the real torchrl: the input has a device, what the transform (or the buffer's
    sample) gives has none."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchrl")
    from tensordict import TensorDict

    source, files, gives = CASES[name]
    for path, text in {**files, "program.py": source}.items():
        (tmp_path / path).write_text(_fill(text, ""))
    data = TensorDict({"obs": torch.zeros(4, 2), "next": {"obs": torch.ones(4, 2)}}, batch_size=[4], device="cpu")
    sys.path.insert(0, str(tmp_path))
    try:
        import program  # noqa: PLC0415 - the program under test, written above
        if gives == "transform":
            out = program.PairUp()(data)
            assert torch.equal(out["obs"], data["obs"])
        else:
            program.rb.extend(data)
            out = program.rb.sample()
            assert out["next_obs"].device == torch.device("cpu")  # every tensor is on the CPU
    finally:
        sys.path.remove(str(tmp_path))
        for module in ("program", *(path.removesuffix(".py") for path in files)):
            sys.modules.pop(module, None)
    assert out.device is None


def test_the_buffer_file_alone_gives_the_finding_and_its_fix_runs(tmp_path):
    """Checked alone (as pre-commit passes it), the file that hands ``to_pairs`` to ``make_buffer``
    gets the same finding as the project; the fixed program's samples have the data's device."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchrl")
    from tensordict import TensorDict

    from rlguard.testing import fix_source

    source = _fill(BUFFER.replace("{factory}", "make_buffer").replace("{argument}", "transform=to_pairs"), "")
    (tmp_path / "buffers.py").write_text(BUFFER_FILES["buffers.py"])
    (tmp_path / "program.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    outputs = [subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "--select", "RLG004",
                               "--output-format", "concise", *paths], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120).stdout for paths in (["program.py"], ["."])]
    alone = [line for line in outputs[0].splitlines() if "RLG004" in line]
    assert len(alone) == 1 and alone[0].startswith("program.py:7:12:")
    assert [line for line in outputs[1].splitlines() if "RLG004" in line] == alone

    fixed = fix_source(source, select=["RLG004"], extra_files=BUFFER_FILES)
    assert "batch_size=data.batch_size, device=data.device)" in fixed
    (tmp_path / "program.py").write_text(fixed)
    sys.path.insert(0, str(tmp_path))
    try:
        import program  # noqa: PLC0415 - the fixed program, written above
        program.rb.extend(TensorDict({"obs": torch.zeros(4, 2), "next": {"obs": torch.ones(4, 2)}}, [4], device="cpu"))
        assert program.rb.sample().device == torch.device("cpu")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("program", None)
        sys.modules.pop("buffers", None)
