"""The shared matchers: call helpers and tensor-valued inference (also used by the engine's index)."""

from __future__ import annotations

import os
import tempfile
import textwrap

import libcst as cst
import pytest

from rlguard.config import Config
from rlguard.engine.context import FileContext
from rlguard.engine.runner import RunOptions, analyze_project
from rlguard.engine.target import Target
from rlguard.engine.traversal import bookkeeping, walk
from rlguard.rules.data import NEWEST_KNOWN_TORCHRL
from rlguard.engine.types import (
    condition_holds,
    has_star_kwargs,
    is_none,
    is_tensor_valued,
    keyword,
    loaded_names,
    method_call,
    positional,
    tensor_leaves,
)


def probe(source: str, deferred: bool = False) -> list[list[dict]]:
    """Run the engine's bookkeeping over ``source``; at each ``probe(expr)`` call, infer ``expr``."""
    module = cst.parse_module(textwrap.dedent(source))
    ctx = FileContext("example.py", "example", False, NEWEST_KNOWN_TORCHRL, {})
    on_visit, on_leave = bookkeeping(ctx)
    results: list[list[dict]] = []

    def visit_call(node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            results.append([
                {"code": module.code_for_node(leaf.node), "kind": leaf.kind, "when": sorted(leaf.when),
                 "via": [name.value for name in leaf.via], "local": leaf.local, "encodable": leaf.encodable,
                 "bindings": len(leaf.bindings)}
                for leaf in tensor_leaves(node.args[0].value, ctx, deferred=deferred)
            ])

    on_visit.setdefault(cst.Call, []).append(visit_call)
    walk(module, on_visit, on_leave)
    return results


def single(source: str, deferred: bool = False) -> list[dict]:
    (result,) = probe(source, deferred)
    return result


def kinds(expression: str, setup: str = "") -> list[tuple[str, str]]:
    source = "import torch\nimport torch.nn.functional as F\nx = torch.randn(4, 3)\n" + setup + f"probe({expression})\n"
    return [(leaf["code"], leaf["kind"]) for leaf in single(source)]


# ----- call helpers -----

def _call(code: str) -> cst.Call:
    node = cst.parse_expression(code)
    assert isinstance(node, cst.Call)
    return node


def test_call_helpers():
    call = _call("f(a, b, *rest, key=1, other=None, **extra)")
    assert [cst.Module([]).code_for_node(arg.value) for arg in positional(call)] == ["a", "b"]
    assert keyword(call, "key") is not None and keyword(call, "missing") is None
    assert is_none(keyword(call, "other").value) and not is_none(keyword(call, "key").value)
    assert has_star_kwargs(call) and not has_star_kwargs(_call("f(*a)"))
    receiver, method = method_call(_call("model.net.state_dict()"))
    assert method == "state_dict" and cst.Module([]).code_for_node(receiver) == "model.net"
    assert method_call(_call("f()")) is None


# ----- single values -----

@pytest.mark.parametrize("expression", [
    "torch.tensor([1.0])", "torch.zeros(3)", "torch.ones_like(x)", "torch.randn(2)", "torch.arange(3)",
    "torch.stack([x, x])", "torch.cat([x, x])", "torch.exp(x)", "torch.where(x > 0, x, 0)", "torch.max(x)",
    "torch.from_numpy(a)", "torch.FloatTensor([1])", "torch.nn.Parameter(x)", "F.relu(x)", "F.mse_loss(x, x)",
    "torch.linalg.norm(x)", "torch.special.expit(x)", "torch.fft.fft(x)",
    "x", "x.sum()", "x.mean(0)", "x.max()", "x.detach()", "x.cpu()", "x.clone()", "x.to('cpu')", "x.float()",
    "x.view(-1)", "x[0]", "x[:, 1:]", "x.T", "x.data", "x * 2", "2 ** x", "x @ x.T", "-x", "~(x > 0)", "x > 0",
    "x == x", "x.abs().sum(-1).sqrt()", "x.max(0)[0]", "x.max(dim=0).values", "torch.sort(x).indices",
    "x.chunk(2)[1]", "x.sum() if c else x.mean()", "x.add_(1)",
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
    "lambda: x", "x.numpy().sum()", "np.sum(x)", "x.sum if c else x",
])
def test_not_a_tensor(expression):
    assert kinds(expression, "import numpy as np\n") == []


@pytest.mark.parametrize("expression", [
    "model.parameters()", "model.named_parameters()", "model.state_dict()", "model.buffers()",
    "optimizer.state_dict()", "torch.nn.Linear(2, 2).state_dict()",
])
def test_bulk(expression):
    assert kinds(expression) == [(expression, "bulk")]


def test_subscript_of_bulk_is_unknown():
    assert kinds("optimizer.state_dict()['param_groups']") == []


def test_lr_scheduler_state_dict_is_plain():
    assert kinds("s.state_dict()", "s = torch.optim.lr_scheduler.StepLR(o, 10)\n") == []


# ----- names and bindings -----

def test_name_bound_to_tensor_is_a_leaf_at_the_use():
    (leaf,) = single("import torch\nloss = torch.zeros(())\nprobe({'loss': loss})\n")
    assert leaf["code"] == "loss" and leaf["kind"] == "tensor" and leaf["via"] == [] and leaf["bindings"] == 1


def test_rebinding_reads_the_previous_binding():
    assert kinds("y", "y = torch.zeros(2)\ny = y.mean()\ny = y * 2\n") == [("y", "tensor")]
    assert kinds("y", "y = 0.0\ny = y + 1\n") == []
    assert kinds("y", "y = 3\ny = torch.tensor(y)\n") == [("y", "tensor")]
    assert kinds("y", "y = torch.zeros(2)\ny = y.item()\n") == []


def test_self_reference_without_previous_binding_is_unknown():
    assert kinds("y", "y = y + torch.zeros(1)\n") == [("y", "tensor")]  # the other operand decides
    assert kinds("y", "y = y.mean()\n") == []


def test_container_bound_to_a_name_is_followed():
    leaves = single("import torch\nm = {'a': torch.zeros(1), 'b': [torch.ones(1), 2], 'c': 'x'}\nprobe(m)\n")
    assert [(leaf["code"], leaf["via"]) for leaf in leaves] == [("torch.zeros(1)", ["m"]), ("torch.ones(1)", ["m"])]


def test_nested_container_names():
    leaves = single("import torch\ni = [torch.zeros(1)]\no = {'i': i}\nprobe([o])\n")
    assert leaves[0]["via"] == ["o", "i"] and leaves[0]["bindings"] == 2


def test_annotations():
    source = """
        import torch
        from torch import Tensor

        def f(a: torch.Tensor, b: Tensor, c: "Tensor", d: int, e):
            probe([a, b, c, d, e])
        v: torch.Tensor = make()
        probe(v)
    """
    first, second = probe(source)
    assert [leaf["code"] for leaf in first] == ["a", "b", "c"]  # a string annotation spells the same type
    assert [leaf["code"] for leaf in second] == ["v"]


def test_opaque_bindings_are_not_followed():
    source = """
        import torch
        for t in [torch.zeros(1)]:
            probe(t)
        a, b = torch.zeros(1), torch.ones(1)
        probe([a, b])
        with torch.no_grad() as g:
            probe(g)
    """
    assert probe(source) == [[], [], []]


def test_comprehension_variables_shadow_outer_names():
    source = """
        import torch
        x = torch.zeros(2)
        probe([x for _ in range(3)])
        probe([x for x in range(3)])
        probe({k: x for k, x in pairs})
        probe(x)
    """
    first, second, third, after = probe(source)
    assert [leaf["code"] for leaf in first] == ["x"]
    assert second == [] and third == []
    # The engine binds a comprehension's variables in the enclosing scope (as opaque), so after
    # one, the name is unknown: a missed finding at worst, never a false one.
    assert after == []


def test_encodable_containers():
    source = "import torch\nx = torch.zeros(1)\nprobe([x, {x}, (x for _ in y), {x for _ in y}, (x,), [x for _ in y]])\n"
    assert [leaf["encodable"] for leaf in single(source)] == [True, False, False, False, True, True]


def test_local_only_for_bindings_of_the_innermost_scope():
    source = """
        import torch
        g = torch.zeros(1)
        m = {"g": g}

        def f():
            l = torch.zeros(1)
            probe([g, l, m])
    """
    assert [(leaf["code"], leaf["local"]) for leaf in single(source)] == [("g", False), ("l", True), ("g", False)]


def test_class_scope_is_not_enclosing():
    source = """
        import torch

        class A:
            w = torch.zeros(1)

            def f(self):
                probe(w)
    """
    assert single(source) == []


def test_depth_is_bounded():
    chain = "a0 = torch.zeros(1)\n" + "".join(f"a{i} = a{i - 1}.sum()\n" for i in range(1, 40))
    assert kinds("a39", chain) == []  # too deep to follow: unknown, never a crash
    assert kinds("a3", chain) == [("a3", "tensor")]


# ----- self attributes and deferred conditions -----

CLASS = """
    import torch

    class Tracker(torch.nn.Module):
        def __init__(self):
            self.total = torch.zeros(())
            self.count = 0

        def dump(self):
            probe([self.total, self.count, self.later, self.total.sum(), self.state_dict(), self.sched.state_dict()])

        def reset(self):
            self.later = torch.ones(1)
            self.sched = torch.optim.lr_scheduler.StepLR(o, 1)
"""


def test_self_attributes_without_deferral_use_what_is_known_so_far():
    assert [leaf["code"] for leaf in single(CLASS)] == ["self.total", "self.total.sum()", "self.state_dict()",
                                                        "self.sched.state_dict()"]


def test_self_attributes_deferred():
    leaves = {leaf["code"]: leaf["when"] for leaf in single(CLASS, deferred=True)}
    assert leaves == {
        "self.total": [("tensor-attr", "example.Tracker", "total")],
        "self.count": [("tensor-attr", "example.Tracker", "count")],
        "self.later": [("tensor-attr", "example.Tracker", "later")],
        "self.total.sum()": [("tensor-attr", "example.Tracker", "total")],
        "self.state_dict()": [("bulk-method", "example.Tracker", "state_dict")],
        "self.sched.state_dict()": [("bulk-attr-method", "example.Tracker", "sched", "state_dict")],
    }


def test_conditions_combine_with_certain_operands():
    source = """
        import torch
        class A:
            def f(self):
                probe([self.a + self.b, self.a + torch.zeros(1), self.a if c else self.b])
    """
    leaves = single(source, deferred=True)
    assert [(leaf["code"], leaf["when"]) for leaf in leaves] == [
        ("self.a + self.b", [("tensor-attr", "example.A", "a"), ("tensor-attr", "example.A", "b")]),
        ("self.a + torch.zeros(1)", []),
    ]


def _index(files: dict[str, str]):
    """A real engine run's project index over ``files``."""
    root = tempfile.mkdtemp()
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(textwrap.dedent(text))
    project = analyze_project([root], Config(root=root), RunOptions(select=["RLG003"], jobs=1, use_cache=False),
                              Target(NEWEST_KNOWN_TORCHRL, "default"))
    return project.index, os.path.join(root, "main.py")


def test_conditions_answered_by_the_index():
    index, path = _index({
        "pkg/__init__.py": "",
        "pkg/base.py": """
            import torch

            class Base(torch.nn.Module):
                def __init__(self):
                    self.weights = torch.ones(3)
                    self.name = "base"

            class Hook:
                def state_dict(self):
                    return {"n": 1}
        """,
        "main.py": """
            import json
            import torch
            from pkg.base import Base, Hook

            class Child(Base):
                def __init__(self):
                    self.hook = Hook()
                    self.net = torch.nn.Linear(2, 2)
                    self.name = torch.zeros(1)

            class Plain:
                pass
        """,
    })
    holds = lambda *condition: condition_holds(condition, index, path)  # noqa: E731
    assert holds("tensor-attr", "main.Child", "weights")  # inherited from Base, in another file
    assert holds("tensor-attr", "main.Child", "name")  # the child's own assignment decides
    assert not holds("tensor-attr", "pkg.base.Base", "name")
    assert not holds("tensor-attr", "main.Child", "missing")
    assert holds("bulk-method", "main.Child", "state_dict")  # torch.nn.Module's
    assert not holds("bulk-method", "pkg.base.Hook", "state_dict")  # its own
    assert not holds("bulk-attr-method", "main.Child", "hook", "state_dict")
    assert holds("bulk-attr-method", "main.Child", "net", "state_dict")
    assert holds("bulk-attr-method", "main.Child", "unknown", "state_dict")
    assert not holds("unknown-condition", "x")


def test_index_attr_facts_record_tensor_values():
    index, path = _index({"main.py": """
        import torch

        class A:
            def __init__(self, n):
                self.t = torch.zeros(n)
                self.c = {"q": torch.ones(1)}
                self.n = n
                self.u = self.t.sum()
                self.s = self.t.shape
                self.i = self.t.sum().item()
                buffer = torch.empty(3)
                self.b = buffer
    """})
    facts = index.get_class("main.A", path)
    tensors = {name: [fact.tensor for fact in attr_facts] for name, attr_facts in facts.attrs.items()}
    assert tensors == {"t": [True], "c": [True], "n": [False], "u": [True], "s": [False], "i": [False], "b": [True]}


def test_is_tensor_valued():
    module = cst.parse_module("import torch\nx = torch.zeros(1)\n")
    ctx = FileContext("e.py", "e", False, NEWEST_KNOWN_TORCHRL, {})
    on_visit, on_leave = bookkeeping(ctx)
    walk(module, on_visit, on_leave)
    assert is_tensor_valued(cst.parse_expression("[x, 1]"), ctx)
    assert is_tensor_valued(cst.parse_expression("x.sum()"), ctx)
    assert not is_tensor_valued(cst.parse_expression("x.item()"), ctx)
    assert not is_tensor_valued(cst.parse_expression("y"), ctx)


# ----- reads of names -----

def test_loaded_names_skips_writes_and_other_name_positions():
    module = cst.parse_module(textwrap.dedent("""
        import m
        from a import m as m2
        m = {}
        m: dict = {}
        m["k"] = m
        m += 1
        obj.m = f(m=1)
        for m in range(3):
            pass
        def m(m): return m
        class m: pass
        (m := 1)
        [m for m in y]
        with open(p) as m:
            print(m)
        global m
        del m
    """))
    reads = loaded_names(module, frozenset({"m"}))
    lines = [module.code_for_node(name) for name in reads]
    assert len(reads) == 7, lines  # m["k"] = m (twice), m += 1, return m, [m ...] elt, print(m), del m
