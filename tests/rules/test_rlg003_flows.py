"""RLG003 through the value model: tensors that reach ``json.dumps`` through containers, mutations,
unpacking, built-ins, dataclass fields, other functions, methods and files.

Every flagged program is run first and raises TypeError; after ``rlguard fix`` it runs and writes what
the same program writes when the encoder converts each tensor with ``.tolist()``. Every near miss (the
same flow with ``.item()``, ``.tolist()`` or ``float()``) is not reported, and runs.
"""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from unittest import mock

import pytest

from tests.helpers import run_as_module
from rlguard.testing import check_source, fix_source

torch = pytest.importorskip("torch")

HEADER = "import dataclasses\nimport json\nfrom dataclasses import dataclass\n\nimport torch\n" \
         "from tensordict import TensorDict\n\n"

# name -> (program defining ``out`` with json.dumps, the same program with a conversion inserted)
FLOWS = {
    "a slice of a sorted list of tensors": ("""
        returns = [torch.tensor(float(i)) for i in range(5)]
        out = json.dumps({"best": max(returns), "top3": sorted(returns, reverse=True)[:3]})
    """, "max(returns)", "max(returns).item()", "sorted(returns, reverse=True)[:3]",
        "[r.item() for r in sorted(returns, reverse=True)[:3]]"),
    "helper dict spread with **": ("""
        def summarize(batch):
            rewards = batch["next", "reward"]
            return {"reward_mean": rewards.mean(), "reward_max": rewards.max()}

        batch = TensorDict({"next": {"reward": torch.ones(4, 1)}}, batch_size=[4])
        payload = {"iter": 1, **summarize(batch)}
        out = json.dumps(payload)
    """, ".mean(),", ".mean().item(),", ".max()}", ".max().item()}"),
    "items of a defaultdict's lists appended": ("""
        import collections

        history = collections.defaultdict(list)
        for step in range(3):
            history["reward"].append(torch.ones(2).mean() * step)
            history["steps"].append(step)
        out = json.dumps(dict(history))
    """, ".mean() * step)", ".mean().item() * step)"),
    "dict filled in a loop": ("""
        losses = {"actor": torch.ones(2).sum(), "critic": torch.zeros(2).sum()}
        metrics = {}
        for k, loss in losses.items():
            metrics[k] = loss.detach()
        out = json.dumps(metrics)
    """, "loss.detach()", "loss.item()"),
    "dataclass field annotated Tensor": ("""
        @dataclass
        class Stats:
            loss: torch.Tensor
            steps: int

        def make():
            return Stats(loss=torch.tensor(0.5), steps=3)

        out = json.dumps(dataclasses.asdict(make()))
    """, "torch.Tensor\n", "float\n", "torch.tensor(0.5)", "0.5"),
    "dataclass field given a tensor": ("""
        @dataclass
        class Stats:
            loss: float
            steps: int

        stats = Stats(loss=torch.ones(2).mean(), steps=3)
        out = json.dumps(dataclasses.asdict(stats))
    """, "torch.ones(2).mean()", "float(torch.ones(2).mean())"),
    "method of another class": ("""
        class Tracker:
            def __init__(self):
                self.values = []

            def add(self, value):
                self.values.append(value)

            def summary(self):
                return {"mean": torch.stack(self.values).mean()}

        tracker = Tracker()
        tracker.add(torch.ones(()))
        out = json.dumps(tracker.summary())
    """, ".mean()}", ".mean().item()}"),
    "max over a list": ("""
        losses = [torch.tensor(1.0), torch.tensor(2.0)]
        best = max(losses)
        out = json.dumps({"best": best})
    """, "max(losses)", "max(loss.item() for loss in losses)"),
    "min of arguments": ("""
        a, b = torch.tensor(1.0), torch.tensor(2.0)
        out = json.dumps({"low": min(a.mean(), b.mean())})
    """, "min(a.mean(), b.mean())", "min(a.mean(), b.mean()).item()"),
    "sum over a comprehension": ("""
        parts = [torch.tensor(float(i)) for i in range(3)]
        out = json.dumps({"total": sum(parts)})
    """, "sum(parts)", "float(sum(parts))"),
    "abs": ("""
        x = torch.tensor(-1.25)
        out = json.dumps([abs(x), abs(-2)])
    """, "abs(x)", "abs(x).item()"),
    "append in a loop": ("""
        values = []
        for step in range(3):
            values.append(torch.ones(2).mean() * step)
        out = json.dumps({"values": values})
    """, "torch.ones(2).mean() * step)", "(torch.ones(2).mean() * step).item())"),
    "extend and +=": ("""
        values = [1.0]
        values.extend([torch.tensor(2.0)])
        values += [torch.tensor(3.0)]
        out = json.dumps(values)
    """, "torch.tensor(2.0)]", "torch.tensor(2.0).item()]", "torch.tensor(3.0)]", "2.5]"),
    "update with keywords": ("""
        row = {"step": 1}
        row.update(loss=torch.tensor(0.25))
        out = json.dumps(row)
    """, "torch.tensor(0.25)", "torch.tensor(0.25).tolist()"),
    "starred list": ("""
        head = [torch.tensor(1.0), torch.tensor(2.0)]
        out = json.dumps([0.0, *head])
    """, "torch.tensor(1.0), torch.tensor(2.0)", "1.0, 2.0"),
    "dict() call with ** and keywords": ("""
        extra = {"lr": torch.tensor(0.1)}
        out = json.dumps(dict(step=2, **extra))
    """, "torch.tensor(0.1)", "torch.tensor(0.1).item()"),
    "zip in a loop": ("""
        names = ["a", "b"]
        values = [torch.ones(()), torch.zeros(())]
        row = {}
        for name, value in zip(names, values):
            row[name] = value * 2
        out = json.dumps(row)
    """, "value * 2", "float(value * 2)"),
    "enumerate in a comprehension": ("""
        values = [torch.tensor(0.5), torch.tensor(1.5)]
        out = json.dumps({str(i): v for i, v in enumerate(values)})
    """, ": v for", ": v.item() for"),
    "items in a comprehension": ("""
        losses = {"a": torch.tensor(1.0)}
        out = json.dumps({k: v for k, v in losses.items()})
    """, ": v for", ": float(v) for"),
    "sorted and reversed": ("""
        values = [torch.tensor(2.0), torch.tensor(1.0)]
        out = json.dumps({"sorted": sorted(values), "reversed": list(reversed(values))})
    """, "torch.tensor(2.0), torch.tensor(1.0)", "2.0, 1.0"),
    "a function of the arguments it is given": ("""
        def stats(x):
            return {"mean": x.mean(), "std": x.std()}

        out = json.dumps(stats(torch.arange(4.0)))
    """, "x.std()", "x.std().item()", "x.mean()", "x.mean().item()"),
    "method of an attribute's class": ("""
        class Tracker:
            def __init__(self):
                self.values = [torch.tensor(1.0)]

            def summary(self):
                return {"mean": torch.stack(self.values).mean()}

        class Trainer:
            def __init__(self):
                self.tracker = Tracker()

            def log(self):
                return json.dumps(self.tracker.summary())

        out = Trainer().log()
    """, ".mean()}", ".mean().item()}"),
    "method of an annotated parameter, inherited": ("""
        class Base:
            def stats(self):
                return {"loss": torch.zeros(3).mean()}

        class Child(Base):
            pass

        def save(c: Child):
            return json.dumps(c.stats())

        out = save(Child())
    """, ".mean()}", ".mean().item()}"),
    "lambda and functools.partial": ("""
        import functools

        mean = lambda x: x.mean()
        half = functools.partial(torch.mul, other=0.5)
        out = json.dumps({"m": mean(torch.ones(2)), "h": half(torch.ones(2))})
    """, "x.mean()", "x.mean().item()", "half(torch.ones(2))}", "half(torch.ones(2)).tolist()}"),
    "property, and a method of plain values": ("""
        class Stats:
            @property
            def summary(self):
                return {"loss": torch.ones(2).mean()}

            def plain(self):
                return {"loss": 1.0}

        stats = Stats()
        out = json.dumps({"summary": stats.summary, "plain": stats.plain()})
    """, ".mean()}", ".mean().item()}"),
    "dataclasses.replace": ("""
        @dataclass
        class Row:
            loss: float = 0.0

        row = dataclasses.replace(Row(), loss=torch.ones(2).sum())
        out = json.dumps(dataclasses.asdict(row))
    """, ".sum()", ".sum().item()"),
    "mutation inside another function": ("""
        METRICS = {}

        def record(name, value):
            METRICS[name] = torch.tensor(value).detach()

        record("loss", 0.1)
        out = json.dumps(METRICS)
    """, ".detach()", ".item()"),
    "a helper's container read through its views, copies and operators": ("""
        def wrap(x):
            return {"w": x, "n": 1}

        def pair(x):
            return [x, 1]

        t = torch.ones(2).sum()
        values = list(wrap(t).values())
        out = json.dumps({"values": values, "items": dict(wrap(t).items()), "copy": wrap(t).copy(),
                          "sum": pair(t) + [2], "twice": pair(t) * 2})
    """, "torch.ones(2).sum()", "torch.ones(2).sum().item()"),
    "a helper's list iterated": ("""
        def pair(x):
            return [x, 1]

        t = torch.ones(2).sum()
        rows = [x for x in pair(t)]
        out = json.dumps({"star": [*pair(t)], "sorted": sorted(pair(t), key=id), "tuple": tuple(pair(t)),
                          "rows": rows})
    """, "torch.ones(2).sum()", "torch.ones(2).sum().item()"),
    "zip, enumerate, concatenation, repetition and full slices": ("""
        def pair(x):
            return [x, 1]

        t = torch.ones(2).sum()
        xs = [t, 2]
        more = xs + [3]
        ranked = sorted(xs, key=id)
        out = json.dumps({"zip": list(zip(xs, [1, 2])), "enumerate": list(enumerate(pair(t))), "more": more,
                          "times": [t] * 2, "ranked": ranked * 2, "sliced": xs[:], "helper sliced": pair(t)[:]})
    """, "torch.ones(2).sum()", "torch.ones(2).sum().item()"),
    "containers passed to helpers": ("""
        def keep(x):
            return [x]

        def same(d):
            return dict(d)

        def scale(x):
            return x * 3

        @dataclass
        class Row:
            value: float

        t = torch.ones(2).sum()
        rows = [scale(t), 2]
        fields = dataclasses.asdict(Row(value=t))
        out = json.dumps({"list": keep(rows), "dict": same({"w": t}), "fields": same(fields.copy())})
    """, "torch.ones(2).sum()", "torch.ones(2).sum().item()"),
    "a loop variable rebound after its value was added": ("""
        t = torch.ones(2).sum()
        first = []
        for item in [t]:
            first.append(item)
        second = []
        for item in [first]:
            second.append(item)
        out = json.dumps(second)
    """, "torch.ones(2).sum()", "torch.ones(2).sum().item()"),
    "a lambda given what a project call gives": ("""
        def scale(x):
            return x * 3

        half = lambda x: x / 2
        t = torch.ones(2).sum()
        out = json.dumps({"half": half(half(scale(t))), "again": scale(half(scale(t)))})
    """, "torch.ones(2).sum()", "torch.ones(2).sum().item()"),
}


def _case(name: str) -> tuple[str, str]:
    body, *swaps = FLOWS[name]
    flagged = HEADER + textwrap.dedent(body)
    fixed_by_hand = flagged
    for old, new in zip(swaps[::2], swaps[1::2], strict=True):
        assert old in fixed_by_hand, (name, old)
        fixed_by_hand = fixed_by_hand.replace(old, new)
    return flagged, fixed_by_hand


def _run_with_tolist_default(code: str) -> dict:
    """The program run with an encoder that converts every tensor with ``.tolist()``."""
    with mock.patch.object(json.JSONEncoder, "default", lambda self, value: value.tolist()):
        return run_as_module(code)


def _with_tolist_default(code: str) -> str:
    return _run_with_tolist_default(code)["out"]


def _rlg003(source: str, **kwargs) -> list:
    return [f for f in check_source(source, select=["RLG003"], **kwargs) if f.code == "RLG003"]


@pytest.mark.parametrize("name", list(FLOWS))
def test_flow_is_reported_crashes_and_runs_once_fixed(name):
    source, _ = _case(name)
    with pytest.raises(TypeError, match="not JSON serializable"):
        run_as_module(source)
    assert len(_rlg003(source)) == 1, name
    fixed = fix_source(source, select=["RLG003"])
    assert fixed != source and _rlg003(fixed) == []
    assert json.loads(run_as_module(fixed)["out"]) == json.loads(_with_tolist_default(source))


@pytest.mark.parametrize("name", list(FLOWS))
def test_flow_with_a_conversion_is_not_reported_and_runs(name):
    _, converted = _case(name)
    assert _rlg003(converted) == []
    json.loads(run_as_module(converted)["out"])


# ----- a sink in the function called: reported at the call, where the tensor is -----

KWARGS_SINK = HEADER + textwrap.dedent("""
    def log_metrics(**kwargs):
        return json.dumps(dict(**kwargs))

    def log(step, loss):
        return log_metrics(step=step, loss=loss)

    x = torch.ones(3)
    out = log_metrics(loss=x.mean(), step=1)
    also = log(1, x.sum())
""")


def test_a_tensor_passed_to_a_function_that_dumps_it_is_reported_at_the_call():
    with pytest.raises(TypeError):
        run_as_module(KWARGS_SINK)
    found = _rlg003(KWARGS_SINK)
    assert {f.message for f in found} == {
        "`log` passes `x.sum()` to `json.dumps`, which raises TypeError on torch tensors",
        "`log_metrics` passes `x.mean()` to `json.dumps`, which raises TypeError on torch tensors",
    }
    assert all(f.fix is not None and f.fix.applicability == "unsafe" for f in found)
    fixed = fix_source(KWARGS_SINK, select=["RLG003"], unsafe=True)
    namespace = run_as_module(fixed)
    assert json.loads(namespace["out"]) == {"loss": 1.0, "step": 1}
    assert json.loads(namespace["also"]) == {"step": 1, "loss": 3.0}


def test_a_function_that_dumps_plain_values_of_its_arguments_is_not_reported():
    source = HEADER + textwrap.dedent("""
        def log_metrics(loss, **kwargs):
            return json.dumps({"loss": float(loss), "n": len(kwargs)})

        out = log_metrics(torch.ones(3).mean(), extra=torch.zeros(2))
    """)
    assert _rlg003(source) == []
    json.loads(run_as_module(source)["out"])


def test_a_function_with_an_encoder_hook_is_not_reported():
    source = HEADER + textwrap.dedent("""
        def log_metrics(**kwargs):
            return json.dumps(kwargs, default=lambda t: t.tolist())

        out = log_metrics(loss=torch.ones(3).mean())
    """)
    assert _rlg003(source) == []
    json.loads(run_as_module(source)["out"])


# ----- across files: a module called through its forward, a helper of another file -----

@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder on ``sys.path`` for a project's modules, named uniquely so tests do not share them."""
    monkeypatch.syspath_prepend(str(tmp_path))
    suffix = uuid.uuid4().hex[:8]
    yield tmp_path, suffix
    for name in [m for m in sys.modules if m.endswith(suffix)]:
        del sys.modules[name]


def test_cross_file_module_forward_and_helper(project):
    tmp_path, suffix = project
    models = textwrap.dedent("""
        from torch import nn


        class ValueNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 1)

            def forward(self, obs):
                return self.lin(obs)
    """)
    losses = "def td_error(pred, target):\n    return (pred - target).pow(2).mean()\n"
    main = textwrap.dedent(f"""
        import json
        import torch
        from models_{suffix} import ValueNet
        from losses_{suffix} import td_error

        torch.manual_seed(0)
        value_net = ValueNet()
        obs = torch.randn(4, 3)
        out = json.dumps({{"v": value_net(obs).mean()}})
        err = json.dumps({{"err": td_error(value_net(obs), torch.zeros(4, 1))}})
    """)
    extra = {f"models_{suffix}.py": models, f"losses_{suffix}.py": losses}
    for file, text in extra.items():
        (tmp_path / file).write_text(text)
    with pytest.raises(TypeError):
        run_as_module(main)
    module, helper = _rlg003(main, extra_files=extra)
    assert module.message.endswith("`value_net(obs).mean()` is a tensor")
    assert helper.message.endswith("`td_error(value_net(obs), torch.zeros(4, 1))` is a tensor")
    fixed = fix_source(main, select=["RLG003"], extra_files=extra)
    namespace, expected = run_as_module(fixed), _run_with_tolist_default(main)
    assert json.loads(namespace["out"]) == json.loads(expected["out"])
    assert json.loads(namespace["err"]) == json.loads(expected["err"])
    assert _rlg003(fixed, extra_files=extra) == []


def test_cross_file_helper_of_plain_values_is_not_reported(project):
    tmp_path, suffix = project
    losses = "def td_error(pred, target):\n    return (pred - target).pow(2).mean().item()\n"
    main = textwrap.dedent(f"""
        import json
        import torch
        from losses_{suffix} import td_error

        out = json.dumps({{"err": td_error(torch.ones(3), torch.zeros(3))}})
    """)
    (tmp_path / f"losses_{suffix}.py").write_text(losses)
    assert _rlg003(main, extra_files={f"losses_{suffix}.py": losses}) == []
    json.loads(run_as_module(main)["out"])


@pytest.mark.parametrize("body", [
    # the parameter is rebound to a plain value before it is returned or dumped
    "def summary(x):\n    x = float(x)\n    return {'x': x}\n\nout = json.dumps(summary(torch.tensor(2.0)))\n",
    "def log(x):\n    x = x.tolist()\n    return json.dumps({'x': x})\n\nout = log(torch.ones(2))\n",
    # a loop over items that are not all tensors, skipping the tensor
    "rows = {'a': torch.ones(1), 'b': 2}\nfor k, v in rows.items():\n    if k == 'b':\n"
    "        out = json.dumps({k: v})\n",
    # a comprehension that filters
    "values = [torch.ones(1), 2.0]\nout = json.dumps([v for v in values if isinstance(v, float)])\n",
    # a helper's container read for its keys, or for one item that is not the tensor
    "def wrap(x):\n    return {'w': x, 'n': 1}\n\nt = torch.ones(1)\n"
    "out = json.dumps([list(wrap(t).keys()), wrap(t).get('n')])\n",
    # a dict iterated gives its keys: a helper's, and one built here
    "def wrap(x):\n    return {'w': x, 'n': 1}\n\nt = torch.ones(1)\nkeys = [k for k in wrap(t)]\n"
    "out = json.dumps([sorted(wrap(t)), list(wrap(t)), [*wrap(t)], tuple(wrap(t)), keys, [*{'w': t}]])\n",
    # the keys of a dict zipped or enumerated; a slice that leaves the tensor out
    "t = torch.ones(1)\nd = {'w': t}\n"
    "out = json.dumps([list(zip(d, [1])), list(enumerate(d)), [t, 1][1:], ['a'] + ['b']])\n",
    # a helper iterating a dict it is given (its keys), or reading an item that is not the tensor
    "@dataclass\nclass Row:\n    value: float\n\ndef names(d):\n    return list(d)\n\n"
    "def second(xs):\n    return xs[1]\n\nt = torch.ones(1)\n"
    "out = json.dumps([names({'w': t}), second([t, 2]), names(dataclasses.asdict(Row(value=t)))])\n",
    # a lambda converting what a project call gives
    "def scale(x):\n    return x * 3\n\nvalue = lambda x: x.item()\nout = json.dumps(value(scale(torch.ones(1))))\n",
])
def test_near_misses_of_the_summaries(body):
    source = HEADER + body
    assert _rlg003(source) == []
    json.loads(run_as_module(source)["out"])


def test_a_function_that_dumps_its_argument_on_some_paths_only_is_not_reported_at_the_call():
    source = HEADER + textwrap.dedent("""
        def log(x, as_json=False):
            if as_json:
                return json.dumps({"x": x})
            return x

        def each(values):
            for value in values:
                log(value, as_json=True)

        out = json.dumps(float(log(torch.ones(()))))
    """)
    assert _rlg003(source) == []
    json.loads(run_as_module(source)["out"])
