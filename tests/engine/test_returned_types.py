"""The index's answers about what project functions and methods return (``FunctionFacts.typed``):
``built_class``, ``returned_kind``, methods found through the MRO, and the order of a factory.

Rules read these through ``ProjectIndex.mro`` and ``engine.conditions.condition_kind``; here the answers
themselves are pinned, with the guards against recursion and cycles.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import analyzed_project, index_of

FACTORIES = textwrap.dedent("""\
    import torch
    from torchrl.modules import LSTMModule


    def encoder():
        return LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h")


    def default():
        built = encoder()
        return built


    def weights():
        return torch.zeros(3)


    def named():
        return {"w": weights(), "b": torch.ones(1)}


    def either(flag):
        if flag:
            return torch.zeros(3)
        else:
            return 0.0


    def both(flag):
        if flag:
            return torch.zeros(3)
        else:
            return torch.ones(3)


    def fall(flag):
        if flag:
            return torch.zeros(3)


    def bare():
        return


    def forever(n):
        return forever(n - 1)


    def ping():
        return pong()


    def pong():
        return ping()


    def many():
        yield torch.zeros(3)
        return torch.zeros(3)


    async def later():
        return torch.zeros(3)


    def guarded():
        try:
            return torch.zeros(3)
        except RuntimeError:
            raise


    class Base:
        def make(self):
            return encoder()

        def me(self):
            return self


    class Child(Base):
        pass


    class Other(Base):
        def make(self):
            return 1
    """)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return index_of(tmp_path_factory.mktemp("returns"), {"m.py": FACTORIES})


@pytest.mark.parametrize(("name", "kind"), [
    ("m.weights", "tensor"), ("m.named", "holds"), ("m.both", "tensor"), ("m.guarded", "tensor"),
    ("m.either", None), ("m.fall", None), ("m.bare", None), ("m.forever", None), ("m.ping", None),
    ("m.many", None), ("m.later", None), ("m.encoder", "object"), ("m.nothing", None), ("torch.zeros", None),
])
def test_returned_kind(index, name, kind):
    found, near = index
    assert found.returned_kind(name, near) == kind


@pytest.mark.parametrize(("name", "cls"), [
    ("m.encoder", "torchrl.modules.LSTMModule"), ("m.default", "torchrl.modules.LSTMModule"),
    ("m.Child.make", "torchrl.modules.LSTMModule"), ("m.Other.make", None),
    ("m.Child.me", None),  # ``return self`` is an instance of the caller's class, whichever subclass that is
    ("m.ping", None), ("m.forever", None), ("m.weights", "torch.zeros"), ("m.Base", None),
])
def test_built_class(index, name, cls):
    found, near = index
    built = found.built_class(name, near)
    assert (built[0] if built else None) == cls


def test_methods_are_found_through_the_mro(index):
    found, near = index
    assert found.get_function("m.Child.make", near).qualname == "m.Base.make"
    assert found.get_function("m.Other.make", near).qualname == "m.Other.make"
    assert found.get_function("m.Child.missing", near) is None


def test_the_order_of_a_factory_is_that_of_its_class(index):
    found, near = index
    assert [name for name, _ in found.mro("m.default", near)] == ["torchrl.modules.LSTMModule"]
    assert [name for name, _ in found.mro("m.Child", near)] == ["m.Child", "m.Base"]
    assert [name for name, _ in found.mro("m.ping", near)] == ["m.ping"]


# One project whose findings all depend on what another file's functions, methods and members hold.
PROJECT = {
    "pyproject.toml": "[project]\nname = 'lab'\n",
    "lab/__init__.py": "from .models import make_encoder, Rig\n",
    "lab/models.py": """\
        import threading

        import torch
        from torch import nn
        from torchrl.modules import LSTMModule


        def make_encoder():
            return LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h")


        def summary(net):
            return {"norm": torch.linalg.norm(net.weight)}


        class Rig(nn.Module):
            def __init__(self):
                super().__init__()
                self.handles = {"cam": threading.Lock()}

            def weights(self):
                return torch.zeros(3)
        """,
    "scripts/train.py": """\
        import json

        from torchrl.collectors import Collector

        from lab import Rig, make_encoder
        from lab.models import summary

        lstm = make_encoder()
        lstm.set_recurrent_mode(True)
        rig = Rig()
        print(json.dumps(summary(rig)), json.dumps(rig.weights()))
        collector = Collector(None, rig, frames_per_batch=1, total_frames=1, policy_device="cuda:0")
        """,
}


def test_one_file_or_the_project_same_findings_through_returns_and_members(tmp_path):
    from tests.engine.test_project import assert_same_findings_alone_and_together, write

    write(tmp_path, PROJECT)
    assert assert_same_findings_alone_and_together(tmp_path) == 4  # RLG002, RLG003 twice, RLG001


@pytest.mark.parametrize(("decorator", "kind"), [
    ("", "tensor"), ("@torch.no_grad()\n", "tensor"), ("@torch.inference_mode()\n", "tensor"),
    ("@functools.lru_cache(maxsize=2)\n", "tensor"), ("@functools.cache\n", "tensor"), ("@staticmethod\n", "tensor"),
    ("@traced\n", None), ("@functools.partial(traced)\n", None),
    ("@property\n", "tensor"),  # what reading it gives (FunctionFacts.is_property); calling it is another thing
])
def test_decorators_that_keep_the_result(tmp_path, decorator, kind):
    source = ("import functools\n\nimport torch\n\n\ndef traced(function):\n    return function\n\n\n"
              f"class Net:\n    {decorator.replace(chr(10), chr(10) + '    ')}def value(self):\n"
              "        return torch.zeros(3)\n")
    (tmp_path / "m.py").write_text(source)
    project = analyzed_project(tmp_path)
    assert project.index.returned_kind("m.Net.value", str(tmp_path / "m.py")) == kind
