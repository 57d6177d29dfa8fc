"""RLG003 fix: `.tolist()` on every visible tensor-valued part, checked by running the fixed code."""

from __future__ import annotations

import importlib.util
import json
import re
import textwrap

import pytest

from rlguard.testing import check_source, fix_source

torch = pytest.importorskip("torch")


def fix(source: str, unsafe: bool = False, **kwargs) -> str:
    return fix_source(textwrap.dedent(source), select=["RLG003"], unsafe=unsafe, **kwargs)


def remaining(source: str) -> list:
    return [f for f in check_source(source, select=["RLG003"]) if f.code == "RLG003"]


# ----- what the fix writes -----

def test_fix_inside_the_call():
    assert fix("""
        import json
        import torch

        x = torch.randn(3)
        print(json.dumps({"x": x, "mean": x.mean(), "n": x.numel()}))
    """) == textwrap.dedent("""
        import json
        import torch

        x = torch.randn(3)
        print(json.dumps({"x": x.tolist(), "mean": x.mean().tolist(), "n": x.numel()}))
    """)


def test_fix_bare_tensor_payload():
    assert fix("import json\nimport torch\n\nq = torch.ones(2)\ns = json.dumps(q)\n") == \
        "import json\nimport torch\n\nq = torch.ones(2)\ns = json.dumps(q.tolist())\n"


def test_fix_parenthesises_operations():
    fixed = fix("""
        import json
        import torch

        a, b = torch.ones(2), torch.zeros(2)
        x = torch.ones(2)
        json.dumps([-x, x * 2, x > 0, ~(x > 0), x.sum() if True else x.mean()])
    """)
    assert "[(-x).tolist(), (x * 2).tolist(), (x > 0).tolist(), (~(x > 0)).tolist(), " \
           "(x.sum() if True else x.mean()).tolist()]" in fixed


def test_fix_keeps_existing_parentheses():
    fixed = fix("import json\nimport torch\nx = torch.ones(2)\njson.dumps([(x + 1)])\n")
    assert "json.dumps([(x + 1).tolist()])" in fixed


def test_fix_in_the_bound_literal_of_a_name_used_only_by_the_dump():
    fixed = fix("""
        import json
        import torch

        def save(path, rewards):
            stats = {
                # per-episode returns
                "returns": torch.tensor(rewards),
                "best": torch.tensor(rewards).max(),  # the best one
                "episodes": len(rewards),
            }
            with open(path, "w") as f:
                json.dump(stats, f)
    """)
    assert '"returns": torch.tensor(rewards).tolist(),' in fixed
    assert '"best": torch.tensor(rewards).max().tolist(),  # the best one' in fixed
    assert "# per-episode returns" in fixed
    assert "json.dump(stats, f)" in fixed


def test_fix_nested_names_in_the_same_scope():
    fixed = fix("""
        import json
        import torch

        inner = [torch.zeros(2), 3]
        outer = {"inner": inner, "t": torch.ones(1)}
        json.dumps(outer)
    """)
    assert "inner = [torch.zeros(2).tolist(), 3]" in fixed
    assert 'outer = {"inner": inner, "t": torch.ones(1).tolist()}' in fixed


def test_container_used_elsewhere_gets_an_unsafe_fix():
    source = textwrap.dedent("""
        import json
        import torch

        def log(writer, step, loss):
            metrics = {"loss": torch.stack(loss).mean()}
            writer.add_scalars("train", metrics, step)
            return json.dumps(metrics)
    """)
    (finding,) = remaining(source)
    assert finding.fix.applicability == "unsafe" and "`metrics` is also used elsewhere" in finding.fix.description
    assert fix(source) == source
    assert '"loss": torch.stack(loss).mean().tolist()' in fix(source, unsafe=True)


@pytest.mark.parametrize("other_use", [
    'metrics["extra"] = 1',
    "metrics.update(extra=1)",
    "del metrics",
    "return metrics",
    "print(metrics)",
    "use = lambda: metrics",
])
def test_other_uses_of_the_container_make_the_fix_unsafe(other_use):
    source = textwrap.dedent(f"""
        import json
        import torch

        def f():
            metrics = {{"x": torch.zeros(1)}}
            text = json.dumps(metrics)
            {other_use}
    """)
    (finding,) = remaining(source)
    assert finding.fix.applicability == "unsafe"


def test_two_dumps_of_the_same_container_are_one_safe_fix():
    source = textwrap.dedent("""
        import json
        import torch

        stats = {"x": torch.zeros(1)}
        print(json.dumps(stats))
        with open("stats.json", "w") as f:
            json.dump(stats, f)
    """)
    found = remaining(source)
    assert [f.fix.applicability for f in found] == ["safe", "safe"]
    fixed = fix(source)
    assert 'stats = {"x": torch.zeros(1).tolist()}' in fixed and remaining(fixed) == []


def test_rebinding_the_container_name_is_not_another_use():
    fixed = fix("""
        import json
        import torch

        stats = {"x": torch.zeros(1)}
        json.dumps(stats)
        stats = {}
    """)
    assert 'stats = {"x": torch.zeros(1).tolist()}' in fixed


# ----- where .tolist() cannot be written: the encoder gets default= -----

@pytest.mark.parametrize("source", [
    # bound in a branch: the other path may hold something else
    """
    import json
    import torch

    value = None
    if ready:
        value = torch.zeros(1)
    json.dumps({"value": value})
    """,
    # bound in another scope
    """
    import json
    import torch

    stats = {"x": torch.zeros(1)}

    def save():
        return json.dumps(stats)
    """,
    # a tuple of tensors
    """
    import json
    import torch

    json.dumps({"top": torch.zeros(5).topk(2)})
    """,
    # a self attribute, assigned in another method
    """
    import json
    import torch

    class A:
        def __init__(self):
            self.x = torch.zeros(1)

        def dump(self):
            return json.dumps({"x": self.x})
    """,
    # bound in a try block, dumped after it
    """
    import json
    import torch

    try:
        x = torch.load("x.pt")
        x = torch.zeros(1)
    except OSError:
        pass
    json.dumps(x)
    """,
])
def test_encoder_hook_fix(source):
    """The tensors sit where ``.tolist()`` cannot be written: the encoder is given ``default=``, and the
    fixed code runs and encodes them."""
    source = textwrap.dedent(source)
    found = remaining(source)
    assert found and all(f.fix is not None and "default=" in f.fix.description for f in found)
    fixed = fix(source)
    assert fixed.count("default=lambda value: value.tolist())") == len(found) and remaining(fixed) == []
    compile(fixed, "<fixed>", "exec")


def test_encoder_hook_fix_runs():
    source = textwrap.dedent("""
        import json
        import torch

        class A:
            def __init__(self):
                self.x = torch.arange(3)

            def dump(self):
                return json.dumps({"x": self.x, "top": torch.arange(5.0).topk(2), "n": 1})

        out = A().dump()
    """)
    with pytest.raises(TypeError):
        _run(source)
    assert json.loads(_run(fix(source))["out"]) == {"x": [0, 1, 2], "top": [[4.0, 3.0], [4, 3]], "n": 1}


# ----- no fix -----

@pytest.mark.parametrize("source", [
    # a state_dict
    """
    import json
    import torch

    json.dumps(torch.nn.Linear(2, 2).state_dict())
    """,
    # a mix of a convertible tensor and a state_dict
    """
    import json
    import torch

    net = torch.nn.Linear(2, 2)
    json.dumps({"w": net.state_dict(), "x": torch.zeros(1)})
    """,
    # a set and a generator: JSON cannot encode them anyway
    """
    import json
    import torch

    json.dumps({torch.zeros(1)})
    json.dumps(torch.zeros(1) for _ in range(2))
    """,
])
def test_no_fix(source):
    source = textwrap.dedent(source)
    found = remaining(source)
    assert found and all(f.fix is None for f in found)
    assert fix(source, unsafe=True) == source


def test_crlf_and_comments_are_kept():
    source = "import json\r\nimport torch  # torch\r\n\r\nx = torch.zeros(2)  # a tensor\r\nprint(json.dumps({'x': x}))  # out\r\n"
    fixed = fix_source(source, select=["RLG003"])
    assert fixed == source.replace("{'x': x}", "{'x': x.tolist()}")


# ----- the fixed code runs, and JSON holds the tensors' values -----

SEED = "import torch\ntorch.manual_seed(0)\n"

EXECUTION_CASES = [
    # (code binding ``payload`` then encoding it into ``out``)
    "payload = {'loss': torch.tensor(0.25), 'reward': torch.randn(3)}\nout = json.dumps(payload)",
    "x = torch.randn(2, 3)\nout = json.dumps({'x': x, 'mean': x.mean(), 'max': x.max(), 'row': x[0], 'neg': -x})",
    "x = torch.arange(6).reshape(2, 3)\nout = json.dumps([x.sum(dim=0), x.T, x > 2, x.float().std(), x.argmax()])",
    "x = torch.randn(4)\nx = x.detach().cpu()\nout = json.dumps(x)",
    "stats = {'episodes': 3, 'returns': torch.tensor([1.0, 2.5, -1.0]), 'nested': {'q': torch.zeros(2, 2)}}\n"
    "out = json.dumps(stats)",
    "rows = [torch.full((2,), float(i)) for i in range(3)]\nout = json.dumps({'rows': [torch.ones(2) * i for i in range(3)]})",
    "out = json.dumps({str(i): torch.tensor(i) * 2 for i in range(3)})",
    "out = json.dumps((torch.tensor(True), torch.tensor([1, 2], dtype=torch.int64), torch.tensor(1.5, dtype=torch.float64)))",
    "x = torch.randn(3)\nout = json.dumps({'m': torch.max(x, 0)[0], 'v': torch.sort(x).values, 'c': x.chunk(3)[1]})",
    "import io\nbuf = io.StringIO()\njson.dump({'q': torch.linspace(0, 1, 5)}, buf, indent=2)\nout = buf.getvalue()",
    "import torch.nn.functional as F\nlogits = torch.randn(2, 4)\nout = json.dumps({'p': F.softmax(logits, dim=-1), 'a': torch.argmax(logits, dim=-1)})",
    "def summary(reward: torch.Tensor, step: int):\n    return json.dumps({'reward': reward, 'step': step})\nout = summary(torch.tensor(3.0), 7)",
]


def _run(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "<fixed>", "exec"), namespace)
    return namespace


def _oracle(source: str) -> str:
    """The same program with an encoder hook that converts each tensor the way the fix does."""
    with_default = re.sub(r"json\.dumps?\((.*)\)", lambda m: m.group(0)[:-1] + ", default=lambda t: t.tolist())",
                          source)
    return _run(with_default)["out"]


@pytest.mark.parametrize("body", EXECUTION_CASES)
def test_fixed_payload_dumps_and_loads(body):
    source = "import json\n" + SEED + body + "\n"
    with pytest.raises(TypeError, match="not JSON serializable"):
        _run(source)  # the original always raised
    fixed = fix_source(source, select=["RLG003"])
    assert fixed != source and remaining(fixed) == []
    out = _run(fixed)["out"]
    assert json.loads(out) == json.loads(_oracle(source))


def test_fixed_scalar_becomes_a_number_and_tensor_a_nested_list():
    source = "import json\nimport torch\nx = torch.arange(4).reshape(2, 2)\nout = json.dumps({'s': x.sum(), 'x': x})\n"
    loaded = json.loads(_run(fix_source(source, select=["RLG003"]))["out"])
    assert loaded == {"s": 6, "x": [[0, 1], [2, 3]]}


@pytest.mark.parametrize("module, call", [
    ("orjson", "orjson.dumps(payload)"),
    ("ujson", "ujson.dumps(payload)"),
    ("simplejson", "simplejson.dumps(payload)"),
])
def test_fixed_payload_with_other_encoders(module, call):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    source = (f"import {module}\nimport torch\ntorch.manual_seed(0)\n"
              f"payload = {{'x': torch.randn(3), 'n': torch.tensor(4)}}\nout = {call}\n")
    with pytest.raises(TypeError):
        _run(source)
    fixed = fix_source(source, select=["RLG003"])
    assert remaining(fixed) == []
    namespace = _run(fixed)
    assert json.loads(namespace["out"]) == {"x": namespace["payload"]["x"], "n": 4}
