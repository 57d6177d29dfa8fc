"""Which values RLG003 takes for tensors, seen through the rule: the part a finding names and what it
says of it (a tensor, a tuple of tensors, many tensors, ...). Replaces the engine-internal matcher
tests (issue 16); the engine's answers come from the generated API model."""

from __future__ import annotations

import re
import textwrap

import pytest

from rlguard.testing import check_source, fix_source

HEAD = "import json\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\nx = torch.randn(4, 3)\n"
PHRASES = {
    "is a tensor": "tensor", "are tensors": "tensor",
    "is a tuple of tensors": "tensors", "are tuples of tensors": "tensors",
    "holds many tensors": "bulk", "hold many tensors": "bulk",
    "is a TensorDict": "tensordict",
    "is a tensor or holds tensors": "mixed",
}


def findings(source: str, **kwargs):
    return [f for f in check_source(textwrap.dedent(source), select=["RLG003"], **kwargs) if f.code == "RLG003"]


def parts(source: str, **kwargs) -> list[tuple[str, str]]:
    """(part, kind) for each part the one finding in ``source`` names; [] when nothing is flagged."""
    found = findings(source, **kwargs)
    if not found:
        return []
    (finding,) = found
    described = finding.full_message.split(" on torch tensors: ", 1)[1]
    result = []
    for sentence in described.split("; "):
        phrase = next((p for p in sorted(PHRASES, key=len, reverse=True) if sentence.endswith(" " + p)), None)
        if phrase is None:
            continue  # the advice
        names = sentence[: -len(phrase) - 1]
        result += [(f"{part} in {container}" if container else part, PHRASES[phrase])
                   for part, container in re.findall(r"`([^`]+)`(?: \(in `([^`]+)`\))?", names)]
    return result


def kinds(expression: str, setup: str = "") -> list[tuple[str, str]]:
    return parts(HEAD + setup + f"print(json.dumps({expression}))\n")


# ----- single values -----

@pytest.mark.parametrize("expression", [
    "torch.tensor([1.0])", "torch.zeros(3)", "torch.ones_like(x)", "torch.randn(2)", "torch.arange(3)",
    "torch.stack([x, x])", "torch.cat([x, x])", "torch.exp(x)", "torch.where(x > 0, x, 0)", "torch.max(x)",
    "torch.from_numpy(a)", "torch.FloatTensor([1])", "torch.nn.Parameter(x)", "F.relu(x)", "F.mse_loss(x, x)",
    "torch.linalg.norm(x)", "torch.special.expit(x)", "torch.fft.fft(x)", "torch.nn.utils.clip_grad_norm_(p, 1.0)",
    "x", "x.sum()", "x.mean(0)", "x.max()", "x.detach()", "x.cpu()", "x.clone()", "x.to('cpu')", "x.float()",
    "x.view(-1)", "x[0]", "x[:, 1:]", "x.T", "x.data", "x * 2", "2 ** x", "x @ x.T", "-x", "~(x > 0)", "x > 0",
    "x == x", "x.abs().sum(-1).sqrt()", "x.pow(2).mean()", "x.max(0)[0]", "x.max(dim=0).values",
    "torch.sort(x).indices", "x.chunk(2)[1]", "x.sum() if c else x.mean()", "x.add_(1)", "torch.unique(x)",
])
def test_tensor(expression):
    assert kinds(expression) == [(expression, "tensor")]


@pytest.mark.parametrize("expression", [
    "torch.sort(x)", "torch.max(x, 1)", "torch.max(x, dim=1)", "torch.topk(x, 2)", "torch.chunk(x, 2)",
    "torch.unique(x, return_counts=True)", "torch.where(x > 0)", "torch.nonzero(x, as_tuple=True)",
    "torch.linalg.eigh(x)", "torch.std_mean(x)", "x.max(0)", "x.min(dim=1)", "x.sort()", "x.split(1)",
    "x.unbind()", "x.topk(1)", "x.kthvalue(1)", "F.max_pool1d(x, 2, return_indices=True)",
])
def test_tuple_of_tensors(expression):
    assert kinds(expression) == [(expression, "tensors")]


@pytest.mark.parametrize("expression", [
    "x.item()", "x.tolist()", "x.numel()", "x.dim()", "x.shape", "x.size()", "x.size(0)", "x.shape[0]",
    "float(x)", "int(x.sum())", "bool(x.any())", "len(x)", "str(x)", "x.numpy()", "x.dtype", "x.device",
    "x.grad", "x.requires_grad", "x.ndim", "x.is_cuda", "x.stride()", "x.data_ptr()", "x.type()",
    "torch.cuda.is_available()", "torch.cuda.device_count()", "torch.manual_seed(0)", "torch.numel(x)",
    "torch.is_tensor(x)", "torch.equal(x, x)", "torch.allclose(x, x)", "torch.device('cpu')",
    "torch.get_default_dtype()", "torch.finfo(torch.float32).eps", "torch.distributions.Normal(0, 1)",
    "torch.Size([2])", "torch.optim.Adam(params)", "F._canonical_mask", "x is None", "x in y", "not x",
    "'%s' % x", "'%.3f' % x.item()", "f'{x}'", "unknown.sum()", "y.mean()", "x.sum().item() * 2",
    "lambda: x", "x.numpy().sum()", "np.sum(x)", "x.sum if c else x", "torch.unique(x).tolist()",
    "torch.nn.utils.clip_grad_norm_(p, 1.0).item()",
])
def test_not_a_tensor(expression):
    assert kinds(expression) == []


@pytest.mark.parametrize("expression", [
    "model.parameters()", "model.named_parameters()", "model.state_dict()", "model.buffers()",
    "optimizer.state_dict()", "torch.nn.Linear(2, 2).state_dict()", "list(model.parameters())",
])
def test_many_tensors(expression):
    assert kinds(expression) == [(expression, "bulk")]


def test_entry_of_an_unknown_state_dict_is_unknown():
    assert kinds("optimizer.state_dict()['param_groups']") == []


def test_lr_scheduler_state_dict_is_plain():
    assert kinds("s.state_dict()", "s = torch.optim.lr_scheduler.StepLR(o, 10)\n") == []


# ----- names and bindings -----

def test_name_bound_to_a_tensor_is_converted_where_the_payload_uses_it():
    source = "import json\nimport torch\nloss = torch.zeros(())\nprint(json.dumps({'loss': loss}))\n"
    assert parts(source) == [("loss", "tensor")]
    assert "json.dumps({'loss': loss.tolist()})" in fix_source(source, select=["RLG003"])


def test_rebinding_reads_the_previous_binding():
    assert kinds("y", "y = torch.zeros(2)\ny = y.mean()\ny = y * 2\n") == [("y", "tensor")]
    assert kinds("y", "y = 0.0\ny = y + 1\n") == []
    assert kinds("y", "y = 3\ny = torch.tensor(y)\n") == [("y", "tensor")]
    assert kinds("y", "y = torch.zeros(2)\ny = y.item()\n") == []


def test_self_reference_without_previous_binding():
    assert kinds("y", "y = y + torch.zeros(1)\n") == [("y", "tensor")]  # the other operand decides
    assert kinds("y", "y = y.mean()\n") == []


def test_containers_bound_to_names_are_followed():
    setup = "i = [torch.ones(1)]\nm = {'a': torch.zeros(1), 'b': [i, 2], 'c': 'x'}\n"
    assert kinds("m", setup) == [("torch.zeros(1) in m", "tensor"), ("torch.ones(1) in i", "tensor")]


def test_annotations():
    source = """
        import json
        import torch
        from torch import Tensor

        def f(a: torch.Tensor, b: Tensor, c: "Tensor", d: int, e):
            print(json.dumps([a, b, c, d, e]))
    """
    assert parts(source) == [("a", "tensor"), ("b", "tensor"), ("c", "tensor")]


def test_unpacking_a_literal_is_followed_and_with_targets_are_unknown():
    assert kinds("[a, b]", "a, b = torch.zeros(1), torch.ones(1)\n") == [("a", "tensor"), ("b", "tensor")]
    assert kinds("[a, b]", "a, b = make()\n") == []
    assert kinds("g", "with torch.no_grad() as g:\n    pass\n") == []


def test_comprehension_variables_shadow_outer_names():
    assert kinds("[x for _ in range(3)]") == [("x", "tensor")]
    assert kinds("[x for x in range(3)]") == []
    assert kinds("{k: x for k, x in pairs}") == []


def test_sets_and_generators_are_flagged_without_a_fix():
    (finding,) = findings(HEAD + "print(json.dumps([x, {x}]))\n")
    assert finding.fix is None
    (finding,) = findings(HEAD + "print(json.dumps([x, (x,)]))\n")
    assert finding.fix is not None


def test_names_of_an_outer_scope_are_flagged_and_the_encoder_given_a_hook():
    source = HEAD + "g = torch.zeros(1)\n\n\ndef f():\n    print(json.dumps([g]))\n"
    (finding,) = findings(source)
    assert "`g` is a tensor" in finding.message and "default=" in finding.fix.description


def test_class_scope_is_not_enclosing():
    source = HEAD + "class A:\n    w = torch.zeros(1)\n\n    def f(self):\n        print(json.dumps(w))\n"
    assert findings(source) == []


def test_depth_is_bounded():
    chain = "a0 = torch.zeros(1)\n" + "".join(f"a{i} = a{i - 1}.sum()\n" for i in range(1, 40))
    assert kinds("a39", chain) == []  # too deep to follow: unknown, never a crash
    assert kinds("a3", chain) == [("a3", "tensor")]


# ----- self attributes, in the file and across files -----

CLASS = """
    import json
    import torch

    class Tracker(torch.nn.Module):
        def __init__(self):
            self.total = torch.zeros(())
            self.count = 0

        def dump(self):
            print(json.dumps({PAYLOAD}))

        def reset(self):
            self.later = torch.ones(1)
            self.sched = torch.optim.lr_scheduler.StepLR(o, 1)
"""


@pytest.mark.parametrize("payload, kind", [
    ("self.total", "tensor"), ("self.later", "tensor"), ("self.total.sum()", "tensor"),
    ("self.state_dict()", "bulk"), ("self.count", None), ("self.sched.state_dict()", None),
    ("self.total.item()", None),
])
def test_self_attributes(payload, kind):
    assert parts(CLASS.replace("{PAYLOAD}", payload)) == ([(payload, kind)] if kind else [])


def test_operands_with_conditions():
    source = HEAD + "class A:\n    def f(self):\n        print(json.dumps([self.a + self.b, self.a + torch.zeros(1)]))\n"
    assert parts(source) == [("self.a + torch.zeros(1)", "tensor")]  # self.a, self.b: never assigned


BASE = """
import torch


class Base(torch.nn.Module):
    def __init__(self):
        self.weights = torch.ones(3)
        self.name = "base"


class Hook:
    def state_dict(self):
        return {"n": 1}
"""

CHILD = """
import json

import torch
from pkg.base import Base, Hook


class Child(Base):
    def __init__(self):
        self.hook = Hook()
        self.net = torch.nn.Linear(2, 2)
        self.name = torch.zeros(1)

    def dump(self):
        print(json.dumps({PAYLOAD}))
"""


@pytest.mark.parametrize("payload, flagged", [
    ("self.weights", True),  # inherited from Base, in another file
    ("self.name", True),  # the child's own assignment decides
    ("self.missing", False),
    ("self.state_dict()", True),  # torch.nn.Module's
    ("self.hook.state_dict()", False),  # Hook's own
    ("self.net.state_dict()", True),
])
def test_facts_from_other_files(payload, flagged):
    extra = {"pkg/__init__.py": "", "pkg/base.py": BASE}
    assert bool(findings(CHILD.replace("{PAYLOAD}", payload), extra_files=extra)) == flagged


@pytest.mark.parametrize("attr, flagged", [
    ("t", True), ("c", True), ("n", False), ("u", True), ("s", False), ("i", False), ("b", True),
])
def test_attributes_assigned_in_init(attr, flagged):
    source = f"""
        import json
        import torch

        class A:
            def __init__(self, n):
                self.t = torch.zeros(n)
                self.c = {{"q": torch.ones(1)}}
                self.n = n
                self.u = self.t.sum()
                self.s = self.t.shape
                self.i = self.t.sum().item()
                buffer = torch.empty(3)
                self.b = buffer

            def dump(self):
                return json.dumps(self.{attr})
    """
    assert bool(findings(source)) == flagged
