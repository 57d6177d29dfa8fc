"""RLG003 tensor-in-json: what is flagged, and the near misses that are not."""

from __future__ import annotations

import textwrap

import pytest

from rlguard.testing import check_source


def findings(source: str, **kwargs):
    return [f for f in check_source(textwrap.dedent(source), select=["RLG003"], **kwargs) if f.code == "RLG003"]


def flagged(source: str, **kwargs) -> bool:
    return bool(findings(source, **kwargs))


# ----- realistic training code -----

PPO_LOGGING = """
    import json

    import torch
    from torchrl.collectors import Collector
    from torchrl.objectives import ClipPPOLoss


    def train(env, policy, value, total_frames, log_path):
        collector = Collector(env, policy, frames_per_batch=1000, total_frames=total_frames)
        loss_module = ClipPPOLoss(policy, value)
        optim = torch.optim.Adam(loss_module.parameters(), lr=3e-4)
        history = []
        for i, data in enumerate(collector):
            loss_vals = loss_module(data)
            loss = loss_vals["loss_objective"] + loss_vals["loss_critic"] + loss_vals["loss_entropy"]
            loss.backward()
            optim.step()
            optim.zero_grad()
            episode_reward = data["next", "episode_reward"][data["next", "done"]]
            history.append({"iteration": i, "reward": episode_reward.mean().item()})
        final = torch.tensor([h["reward"] for h in history])
        summary = {"best": final.max(), "last": final[-1], "iterations": len(history)}
        with open(log_path, "w") as f:
            json.dump(summary, f, indent=2)
"""


def test_ppo_summary_with_tensor_reductions_is_flagged():
    (finding,) = findings(PPO_LOGGING)
    assert "`final.max()` (in `summary`)" in finding.full_message
    assert "`final[-1]` (in `summary`)" in finding.full_message
    assert "TypeError" in finding.full_message
    assert finding.line == 25  # the json.dump line
    assert finding.fix is not None and finding.fix.applicability == "safe"


def test_ppo_history_of_items_is_not_flagged():
    source = PPO_LOGGING.replace("json.dump(summary, f, indent=2)", "json.dump(history, f, indent=2)")
    assert not flagged(source)


def test_config_and_device_info_is_not_flagged():
    assert not flagged("""
        import json
        import torch

        cfg = {"lr": 3e-4, "frames_per_batch": 1000, "device": str(torch.device("cpu"))}
        cfg["cuda"] = torch.cuda.is_available()
        cfg["gpus"] = torch.cuda.device_count()
        cfg["torch"] = torch.__version__
        cfg["threads"] = torch.get_num_threads()
        print(json.dumps(cfg, indent=2))
    """)


@pytest.mark.parametrize("expression", [
    "obs.item()", "obs.tolist()", "obs.numel()", "obs.dim()", "obs.shape", "list(obs.shape)", "obs.size()",
    "obs.size(0)", "float(obs.mean())", "int(obs.argmax())", "bool(obs.any())", "obs.shape[0]", "len(obs)",
    "str(obs)", "repr(obs)", "obs.dtype is torch.float32", "obs.ndim", "obs.is_cuda", "obs.requires_grad",
    "torch.cuda.is_available()", "torch.cuda.device_count()", "torch.get_default_dtype() == torch.float32",
    "torch.numel(obs)", "torch.is_tensor(obs)", "torch.equal(obs, obs)", "torch.allclose(obs, obs)",
    "obs.mean().item() * 2", "[v.item() for v in obs]", "{k: v.item() for k, v in stats.items()}",
    "obs.cpu().numpy().tolist()", "obs.detach().cpu().tolist()", "'%s' % obs", "f'{obs}'",
    "obs.grad", "obs.sum(dim=0).tolist()", "np.mean(obs.numpy()).item()", "obs.data_ptr()",
])
def test_plain_values_from_tensors_are_not_flagged(expression):
    assert not flagged(f"""
        import json
        import numpy as np
        import torch

        obs = torch.randn(4, 3)
        stats = {{"a": torch.zeros(())}}
        json.dumps({{"value": {expression}}})
    """)


@pytest.mark.parametrize("expression", [
    "torch.tensor([1.0, 2.0])", "torch.zeros(3)", "torch.ones(2, 2)", "torch.randn(3)", "torch.arange(5)",
    "torch.stack([obs, obs])", "torch.cat([obs, obs])", "torch.exp(obs)", "torch.log(obs)", "torch.sqrt(obs)",
    "torch.mean(obs)", "torch.sum(obs, dim=0)", "torch.max(obs)", "torch.clamp(obs, 0, 1)", "torch.where(obs > 0, obs, 0)",
    "torch.from_numpy(np.zeros(3))", "torch.as_tensor([1, 2])", "torch.nn.functional.softmax(obs, dim=-1)",
    "torch.linalg.norm(obs)", "torch.FloatTensor([1.0])",
    "obs", "obs.sum()", "obs.mean()", "obs.max()", "obs.detach()", "obs.cpu()", "obs.clone()", "obs.to('cpu')",
    "obs.float()", "obs[0]", "obs[:, 0]", "obs.T", "obs.data", "obs * 2", "2 * obs", "obs + 1", "-obs",
    "obs > 0", "obs.abs().sum(-1)", "obs.detach().cpu().numpy", "obs.view(-1)", "obs.reshape(2, 6)",
    "obs.squeeze(0).unsqueeze(-1)", "obs.argmax(-1)", "obs.std()", "obs.max(dim=0).values",
])
def test_tensor_values_are_flagged(expression):
    source = f"""
        import json
        import numpy as np
        import torch

        obs = torch.randn(4, 3)
        json.dumps({{"value": {expression}}})
    """
    if expression == "obs.detach().cpu().numpy":
        assert not flagged(source)  # a bound method, not a tensor
        return
    assert flagged(source)


@pytest.mark.parametrize("payload", [
    "torch.sort(obs)", "obs.chunk(2)", "obs.split(2)", "obs.unbind(0)", "torch.max(obs, 1)", "obs.max(dim=0)",
    "obs.topk(2)", "torch.unique(obs, return_counts=True)", "torch.std_mean(obs)",
])
def test_tuples_of_tensors_are_flagged_and_the_encoder_given_a_hook(payload):
    (finding,) = findings(f"""
        import json
        import torch

        obs = torch.randn(4, 3)
        json.dumps({payload})
    """)
    assert "tuple of tensors" in finding.full_message
    assert finding.fix is not None and "default=" in finding.fix.description


@pytest.mark.parametrize("payload, part", [
    ("policy.parameters()", "policy.parameters()"),
    ("list(policy.parameters())", "list(policy.parameters())"),
    ("policy.state_dict()", "policy.state_dict()"),
    ("optimizer.state_dict()", "optimizer.state_dict()"),
    ("dict(policy.named_parameters())", "dict(policy.named_parameters())"),
    ("{'policy': policy.state_dict(), 'step': 3}", "policy.state_dict()"),
])
def test_parameters_and_state_dicts(payload, part):
    found = findings(f"""
        import json
        import torch

        policy = torch.nn.Linear(3, 2)
        optimizer = torch.optim.Adam(policy.parameters())
        with open("ckpt.json", "w") as f:
            json.dump({payload}, f)
    """)
    (finding,) = found
    assert f"`{part}`" in finding.full_message and "torch.save" in finding.full_message
    assert finding.fix is None


def test_state_dict_of_unknown_receiver_is_flagged():
    assert flagged("""
        import json

        def save(model, path):
            with open(path, "w") as f:
                json.dump(model.state_dict(), f)
    """)


def test_optimizer_param_groups_are_plain():
    assert not flagged("""
        import json
        import torch

        optimizer = torch.optim.Adam(params, lr=1e-3)
        json.dumps(optimizer.state_dict()["param_groups"])
    """)


@pytest.mark.parametrize("scheduler", [
    "torch.optim.lr_scheduler.StepLR(optimizer, 10)",
    "lr_scheduler.CosineAnnealingLR(optimizer, T_max=100)",
    "CosineAnnealingLR(optimizer, 100)",
])
def test_lr_scheduler_state_dict_is_plain(scheduler):
    assert not flagged(f"""
        import json
        import torch
        from torch.optim import lr_scheduler
        from torch.optim.lr_scheduler import CosineAnnealingLR

        scheduler = {scheduler}
        json.dumps(scheduler.state_dict())
    """)


def test_lr_scheduler_attribute_state_dict_is_plain():
    assert not flagged("""
        import json
        import torch

        class Trainer:
            def __init__(self, optimizer):
                self.scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)

            def save(self, f):
                json.dump(self.scheduler.state_dict(), f)
    """)


# ----- escape hatches: default=, cls=, **kwargs -----

@pytest.mark.parametrize("call", [
    "json.dumps(payload, default=lambda t: t.tolist())",
    "json.dumps(payload, cls=TensorEncoder)",
    "json.dumps(payload, **kwargs)",
    "json.dump(payload, f, default=str)",
    "simplejson.dumps(payload, False, True, True, False, TensorEncoder)",
    "simplejson.dumps(payload, default=str)",
    "ujson.dumps(payload, default=str)",
    "orjson.dumps(payload, default=str)",
    "orjson.dumps(payload, lambda t: t.tolist())",
])
def test_encoder_given_a_default_or_cls_is_not_flagged(call):
    assert not flagged(f"""
        import json
        import orjson
        import simplejson
        import ujson
        import torch

        payload = {{"q": torch.zeros(3)}}
        kwargs = {{"default": str}}
        with open("x.json", "w") as f:
            {call}
    """)


@pytest.mark.parametrize("call", [
    "json.dumps(payload, default=None)",
    "json.dumps(payload, cls=None, indent=2)",
    "json.dumps(obj=payload)",
    "json.dump(payload, f, indent=2, sort_keys=True)",
    "simplejson.dumps(payload, True)",
    "simplejson.dump(payload, f)",
    "ujson.dumps(payload)",
    "ujson.dump(payload, f)",
    "orjson.dumps(payload, None, orjson.OPT_INDENT_2)",
    "orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY)",
])
def test_encoders_without_default_are_flagged(call):
    assert flagged(f"""
        import json
        import orjson
        import simplejson
        import ujson
        import torch

        payload = {{"q": torch.zeros(3)}}
        with open("x.json", "w") as f:
            {call}
    """)


# ----- name resolution -----

@pytest.mark.parametrize("imports, call", [
    ("import json as js", "js.dumps"),
    ("from json import dumps", "dumps"),
    ("from json import dumps as to_json", "to_json"),
    ("from json import dump as write_json", "write_json"),
    ("import simplejson as json", "json.dumps"),
    ("import ujson as json", "json.dumps"),
    ("from orjson import dumps", "dumps"),
])
def test_aliases_of_encoders(imports, call):
    extra = ", f" if "dump as" in imports else ""
    found = findings(f"""
        {imports}
        import torch as th

        weights = th.ones(3)
        {call}({{"w": weights}}{extra})
    """)
    assert len(found) == 1 and "`weights`" in found[0].full_message


@pytest.mark.parametrize("source", [
    # a local function called dumps, and a method dumps on another object
    """
    import torch

    def dumps(x):
        return repr(x)

    dumps(torch.zeros(3))
    """,
    """
    import pickle
    import torch

    pickle.dumps(torch.zeros(3))
    """,
    """
    import torch
    from tensordict import TensorDict

    td = TensorDict({"a": torch.zeros(3)}, [])
    td.dumps("/tmp/td")
    """,
    """
    import json
    import torch

    class Encoder(json.JSONEncoder):
        def default(self, o):
            if isinstance(o, torch.Tensor):
                return o.tolist()
            return super().default(o)

    json.dumps({"x": torch.zeros(2)}, cls=Encoder)
    """,
    # yaml and torch.save are not JSON
    """
    import torch
    import yaml

    yaml.dump({"x": torch.zeros(2)})
    torch.save({"x": torch.zeros(2)}, "x.pt")
    """,
])
def test_near_misses_that_are_not_json_encoders(source):
    assert not flagged(source)


def test_torch_alias_and_from_imports():
    assert flagged("""
        import json
        from torch import zeros, stack
        import torch.nn.functional as F

        json.dumps([F.relu(stack([zeros(2), zeros(2)]))])
    """)


def test_json_module_rebound_is_not_the_encoder():
    assert not flagged("""
        import json
        import torch

        json = MyCodec()
        json.dumps(torch.zeros(3))
    """)


def test_torch_rebound_locally_is_not_torch():
    assert not flagged("""
        import json

        def f(torch):
            return json.dumps(torch.zeros(3))
    """)


# ----- names and scopes -----

def test_rebinding_with_self_reference_keeps_tensor():
    assert flagged("""
        import json
        import torch

        loss = torch.stack(losses)
        loss = loss.mean()
        json.dumps({"loss": loss})
    """)


def test_rebinding_to_plain_value_is_not_flagged():
    assert not flagged("""
        import json
        import torch

        loss = torch.stack(losses).mean()
        loss = loss.item()
        json.dumps({"loss": loss})
    """)


def test_comprehension_variable_shadowing_a_tensor_is_not_flagged():
    assert not flagged("""
        import json
        import torch

        x = torch.zeros(3)
        json.dumps([x for x in ["a", "b"]])
    """)


def test_comprehension_of_tensors_is_flagged():
    (finding,) = findings("""
        import json
        import torch

        json.dumps({"noise": [torch.randn(2) for _ in range(3)]})
    """)
    assert "`torch.randn(2)`" in finding.full_message


@pytest.mark.parametrize("annotation", ["Tensor", "torch.Tensor", '"Tensor"', "'torch.Tensor'"])
def test_parameter_annotated_as_tensor(annotation):
    assert flagged(f"""
        import json
        import torch
        from torch import Tensor

        def log(path: str, reward: {annotation}, step: int):
            with open(path, "a") as f:
                f.write(json.dumps({{"reward": reward, "step": step}}) + "\\n")
    """)


@pytest.mark.parametrize("annotation", ['"Literal[\'Tensor\']"', "'Tensorish'", '"torch.Tensor("'])
def test_strings_that_do_not_spell_the_tensor_type_are_not_flagged(annotation):
    assert not flagged(f"""
        import json
        import torch

        def log(reward: {annotation}):
            return json.dumps({{"reward": reward}})
    """)


def test_unannotated_parameter_is_not_flagged():
    assert not flagged("""
        import json
        import torch

        def log(reward, step):
            return json.dumps({"reward": reward, "step": step})
    """)


def test_loop_variables_bind_the_items_iterated():
    assert flagged("""
        import json
        import torch

        for name, value in {"a": torch.zeros(1)}.items():
            print(json.dumps({name: value}))
    """)
    assert not flagged("""
        import json
        import torch

        for name, value in {"a": torch.zeros(1)}.items():
            print(json.dumps({name: value.tolist()}))
    """)


def test_module_level_tensor_used_in_function_is_flagged():
    assert flagged("""
        import json
        import torch

        MEAN = torch.tensor([0.485, 0.456, 0.406])

        def describe():
            return json.dumps({"mean": MEAN})
    """)


def test_nested_containers_through_names():
    (finding,) = findings("""
        import json
        import torch

        inner = {"q": torch.zeros(2), "n": 3}
        outer = {"inner": inner, "tag": "x"}
        json.dumps(outer)
    """)
    assert "`torch.zeros(2)` (in `inner`)" in finding.full_message


def test_conditional_expression():
    assert flagged("""
        import json
        import torch
        x = torch.zeros(2)
        json.dumps(x.sum() if flag else x.mean())
    """)
    assert not flagged("""
        import json
        import torch
        x = torch.zeros(2)
        json.dumps(x.sum().item() if flag else None)
    """)


def test_multiline_call_is_reported_where_the_call_begins():
    (finding,) = findings("""
        import json
        import torch

        text = json.dumps(
            {
                "q": torch.zeros(2),
            },
            indent=2,
        )
    """)
    assert finding.line == 5


def test_message_names_many_parts_briefly():
    (finding,) = findings("""
        import json
        import torch

        json.dumps([torch.zeros(1), torch.zeros(2), torch.zeros(3), torch.zeros(4), torch.zeros(5)])
    """)
    assert "and 2 more are tensors" in finding.full_message


# ----- self attributes -----

def test_self_attr_assigned_a_tensor_before_the_dump():
    (finding,) = findings("""
        import json
        import torch

        class Tracker:
            def __init__(self):
                self.returns = torch.zeros(100)
                self.count = 0

            def save(self, f):
                json.dump({"returns": self.returns, "count": self.count}, f)
    """)
    assert "`self.returns` is a tensor" in finding.full_message
    # assigned in another method, where ``.tolist()`` would change what the class holds: the encoder converts
    assert finding.fix is not None and "default=" in finding.fix.description


def test_self_attr_assigned_after_the_dump():
    assert flagged("""
        import json
        import torch

        class Tracker:
            def save(self, f):
                json.dump(self.returns.sum(), f)

            def reset(self):
                self.returns = torch.zeros(100)
    """)


def test_self_attr_assigned_plain_values_is_not_flagged():
    assert not flagged("""
        import json
        import torch

        class Tracker:
            def __init__(self):
                self.returns = []
                self.device = torch.device("cpu")

            def save(self, f):
                json.dump({"returns": self.returns}, f)

            def reset(self):
                self.returns = [0.0]
    """)


def test_attr_of_another_class_is_not_the_dumping_class():
    assert not flagged("""
        import json
        import torch

        class Model:
            def __init__(self):
                self.stats = torch.zeros(3)

        class Logger:
            def __init__(self):
                self.stats = {"episodes": 0}

            def save(self, f):
                json.dump(self.stats, f)
    """)


def test_self_attr_inherited_from_a_base_in_another_file():
    extra = {
        "pkg/__init__.py": "",
        "pkg/base.py": "import torch\n\n\nclass Base:\n    def __init__(self):\n        self.weights = torch.ones(3)\n",
    }
    source = """
        import json
        from pkg.base import Base

        class Child(Base):
            def save(self, f):
                json.dump({"w": self.weights}, f)
    """
    found = findings(source, extra_files=extra)
    assert len(found) == 1 and "`self.weights` is a tensor" in found[0].full_message
    plain = dict(extra, **{"pkg/base.py": "class Base:\n    def __init__(self):\n        self.weights = [1.0]\n"})
    assert findings(source, extra_files=plain) == []


def test_self_state_dict_of_module_subclass_is_flagged():
    (finding,) = findings("""
        import json
        import torch

        class Policy(torch.nn.Module):
            def save(self, f):
                json.dump(self.state_dict(), f)
    """)
    assert "`self.state_dict()` holds many tensors" in finding.full_message


def test_own_state_dict_in_a_base_class_of_another_file_is_plain():
    extra = {
        "pkg/__init__.py": "",
        "pkg/hooks.py": "class CounterHook:\n    def state_dict(self):\n        return {'count': 1}\n",
    }
    assert not flagged("""
        import json
        import torch
        from pkg.hooks import CounterHook

        class MyHook(CounterHook):
            def save(self, f):
                json.dump(self.state_dict(), f)

        hook = CounterHook()
        json.dumps(hook.state_dict())
    """, extra_files=extra)


def test_attr_holding_a_user_object_with_plain_state_dict():
    assert not flagged("""
        import json
        import torch

        class Counter:
            def state_dict(self):
                return {"n": 1}

        class Trainer:
            def __init__(self):
                self.counter = Counter()

            def save(self, f):
                json.dump(self.counter.state_dict(), f)
    """)


def test_attr_holding_a_torch_module_state_dict_is_flagged():
    assert flagged("""
        import json
        import torch

        class Trainer:
            def __init__(self):
                self.policy = torch.nn.Linear(3, 2)

            def save(self, f):
                json.dump(self.policy.state_dict(), f)
    """)


# ----- pre-filter and versions -----

def test_file_without_torch_is_skipped():
    assert not flagged("""
        import json

        json.dumps({"a": 1})
    """)


@pytest.mark.parametrize("target", ["0.4", "0.10", "0.14"])
def test_every_target_version(target):
    assert flagged("import json\nimport torch\njson.dumps(torch.zeros(1))\n", target=target)


def test_noqa_suppresses():
    assert not flagged("import json\nimport torch\njson.dumps(torch.zeros(1))  # noqa: RLG003\n")
