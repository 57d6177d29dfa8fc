"""What a top-level statement binds and reads in the module's namespace (``engine.names``): the facts
RLG009's fix decides from, on each kind of binding and each place a read can hide."""

from __future__ import annotations

import libcst as cst
import pytest

from rlguard.engine.names import module_bindings, module_reads

BINDINGS = {
    "import a.b, c as d": {"a", "d"},
    "from e import f, g as h": {"f", "h"},
    "from e import *": {"*"},
    "x, (y, *z) = 1, 2": {"x", "y", "z"},
    "cfg.lr = 3": {"cfg"},  # changed in place: a worker would see the old value
    "w[0] += 1": {"w"},
    "del q": {"q"},
    "def make(p=1):\n    global counter\n    counter = p\n": {"make", "counter"},
    "class K:\n    size = 3\n": {"K"},
    "squares = [i * i for i in range(3)]": {"squares"},  # a comprehension's variable stays in it
    "if (n := 3):\n    pass\n": {"n"},
    "with open(path) as handle:\n    pass\n": {"handle"},
    "for step in range(3):\n    last = step\n": {"step", "last"},
    "try:\n    pass\nexcept OSError as error:\n    pass\n": {"error"},
}


@pytest.mark.parametrize("code", sorted(BINDINGS))
def test_module_bindings(code):
    assert module_bindings(cst.parse_module(code).body[0]) == BINDINGS[code]


READS = {
    # the keyword `device=` is no binding: the global `device` is read when make_env runs
    "def make_env(parallel=default):\n    env = GymEnv(name, device=device)\n    return [e for e in env] + parallel\n":
        ({"default"}, {"GymEnv", "name", "device"}),
    "@register(hub)\ndef f(x: Kind) -> Out:\n    return x\n": ({"register", "hub", "Kind", "Out"}, set()),
    "def g():\n    global total\n    total = total + 1\n": (set(), {"total"}),
    "def h():\n    def inner():\n        return outer_name\n    return inner\n": (set(), {"outer_name"}),
    "class Policy(Base):\n    width = WIDTH\n\n    def forward(self, x):\n        return x * scale\n":
        ({"Base", "WIDTH"}, {"scale"}),
    "make = lambda seed=SEED: Env(seed)": ({"SEED"}, {"Env"}),
    "frames = (f * factor for f in source)": (set(), {"factor", "source"}),
    "collector = Collector(make_env, policy)": ({"Collector", "make_env", "policy"}, set()),
}


@pytest.mark.parametrize("code", sorted(READS))
def test_module_reads_now_and_later(code):
    now, later = module_reads(cst.parse_module(code).body[0])
    assert (now, later - {"range"}) == READS[code]
