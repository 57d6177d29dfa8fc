"""RLG003 tensor-in-json: ``json.dump(s)`` of a payload holding torch tensors raises TypeError."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping, Sequence

from rlguard.engine.lazy import cst

from rlguard.engine.conditions import condition_kind, sink_reached
from rlguard.engine.findings import Edit, Fix, Requirement
from rlguard.engine.index import ProjectIndex
from rlguard.rules.base import Example, Rule
from rlguard.rules.data import JSON_DUMP_FUNCTIONS, JSON_ENCODER_KEYWORDS, JSON_ENCODERS
from rlguard.engine.inference import argument_kinds, tensor_leaves
from rlguard.engine.matching import has_star_kwargs, is_none, keyword, positional
from rlguard.engine.values import FIELDS, ArgKinds, AttrTorchMethod, Condition, Leaf, TorchMethod
from rlguard.engine.names import loaded_names

_SHOWN_PARTS = 3  # parts named in a message before "and N more"
_PART_CHARS = 48  # longer parts are shortened in messages

_CONVERT = "convert with `.tolist()` (a 0-d tensor gives a Python number, others a nested list)"
_SAVE = "save tensors with `torch.save` and keep JSON for plain values"
# An instance whose fields hold tensors, passed to a function that encodes its fields (``asdict(result)``).
_FIELDS = ("its fields hold tensors: convert them with `.tolist()` (or `.item()`) where it is built, or pass "
           "`default=lambda value: value.tolist()` to the encoder")


@dataclass(frozen=True)
class TensorLeaf(Requirement):
    """A part of the encoded value (``part``, as a message names it) is tensor-valued when the index
    confirms ``condition``; the index also says of which kind (see ``engine.conditions.condition_kind``)."""

    part: str
    condition: Condition


@dataclass(frozen=True)
class PassedToEncoder(Requirement):
    """The argument ``part`` (a tensor) of a call of the project callable ``callee`` reaches a JSON
    encoder inside it, or in what it calls (see ``ProjectIndex.reaches_sink``)."""

    callee: str
    argument: ArgKinds  # one argument: its position or keyword, and its kind (or what the index answers)
    part: str


@dataclass
class _Dump:
    """A JSON encoder call whose payload holds tensor-valued parts, judged when the module ends."""

    call: cst.Call
    encoder: str  # qualified name, e.g. ``json.dumps``
    leaves: list[Leaf]
    dominated: list[bool]  # per leaf: every binding followed certainly ran before the call
    scope: cst.CSTNode  # the innermost scope around the call


class TensorInJson(Rule):
    code = "RLG003"
    name = "tensor-in-json"
    summary = "Serialises torch tensors with json (or orjson, ujson, simplejson), which raises TypeError"
    why = (
        "JSON encoders do not know torch tensors: `json.dumps({\"loss\": loss})` raises "
        "`TypeError: Object of type Tensor is not JSON serializable`. In training code this usually "
        "happens at the end of an epoch or a run, when metrics or a config are written out, so the "
        "crash loses the results it was meant to save. `orjson`, `ujson` and `simplejson` fail the same way.\n\n"
        "Values are followed the way the program computes them: through names, containers (literals, "
        "comprehensions, `dict(...)`/`list(...)`, `*` and `**` unpacking), the items a container gains after "
        "it is built (`d[k] = v`, `.append`, `.extend`, `.update`, `+=`, in any scope), loops and "
        "comprehensions over it (`.items()`, `.values()`, `enumerate`, `zip`), the built-ins that pass items "
        "on (`max`, `min`, `sum`, `sorted`, `reversed`, `abs`, ..., as typeshed's stubs describe them), the "
        "fields of a dataclass (`dataclasses.asdict`), and the functions, methods and `nn.Module`s of the "
        "project in any file (calling a module runs its `forward`), given the kinds of the arguments they "
        "are passed. A tensor, or a dict or list of tensors, passed to a function, method or lambda of the "
        "project (in any file) that hands it to an encoder, itself or through what it calls, is reported "
        "where it is passed: `log(**fields)` dumping `fields` given `loss=t`, `dump = lambda d: json.dumps(d)` "
        "given `{\"loss\": t}`, `Tracker().log(loss=t)`. So is an instance whose fields hold tensors (a dataclass, attrs class or "
        "NamedTuple given a tensor for a field, or whose class declares or assigns one) passed to a function "
        "that encodes its fields (`dataclasses.asdict`, `astuple`, `vars`, `__dict__`, `_asdict()`). The calling file need not name `json`: a file is "
        "checked when its imports reach a function or class of the project whose text encodes, itself or "
        "through a function it calls (two calls deep), also when it is checked alone. torchrl's and "
        "tensordict's own modules are libraries here, even as the project's source: only their files that "
        "name an encoder are checked.\n\n"
        "A part of the payload is tensor-valued when it is a `torch.*` factory or math op "
        "(`torch.tensor`, `torch.stack`, `torch.exp`, ...), a tensor method that returns a tensor "
        "(`sum`, `mean`, `max`, `detach`, `cpu`, `clone`, `to`, ...) on a tensor, `model.parameters()` "
        "or a `state_dict()`, `self.attr` when the class assigns `attr` a tensor, a call of a function "
        "or method of the project (in any file) whose every `return` gives one of these, or a name "
        "bound to one of these or to a dict, list, tuple or comprehension holding one. A function that "
        "may return something else (another value on one branch, or nothing) is not taken for one. "
        "`.item()`, `.tolist()`, "
        "`.numel()`, `.dim()`, `.shape`, `.size()`, `float(t)`, `int(t)` and torch calls that return "
        "plain values (`torch.cuda.is_available()`, `torch.cuda.device_count()`) are not tensors. "
        "A call with `default=` or `cls=` (or `**kwargs`, which may carry them) is not reported."
    )
    fix_doc = (
        "Safe, where every tensor-valued part of the payload is visible in the same scope: inside the "
        "dict or list literal of the call, or of a name bound to one earlier in the same block or an "
        "enclosing one. Each part gets `.tolist()`: a 0-d tensor becomes a Python number and any other "
        "tensor a nested list, which every encoder accepts. The original call always raised "
        "`TypeError`, so no working behaviour changes.\n\n"
        "When the payload is a name bound to a literal that the code also uses elsewhere (it is "
        "logged, returned, mutated), those uses would see lists instead of tensors: the fix is then "
        "unsafe (`--unsafe-fixes`).\n\n"
        "Where a tensor sits where `.tolist()` cannot be written (a container filled elsewhere, what "
        "another function returns, `self.attr` assigned in another method, a dataclass field), the encoder "
        "call gets `default=lambda value: value.tolist()`: the encoder calls it only for objects it cannot "
        "encode, so values it encoded before are written as before, and each tensor (or TensorDict) "
        "becomes a number or nested list. This is safe for the same reason: the call raised `TypeError` "
        "before.\n\n"
        "A tensor passed to a function that dumps it (`log(loss=t)`) gets `.tolist()` where it is passed, and "
        "so does each tensor of a dict or list passed (`dump({\"loss\": t})`), when they are written in the "
        "same scope; that fix is unsafe, since the function may also use the value as a tensor. An instance "
        "whose fields hold tensors gets no fix where it is passed (its tensors sit where it was built): the "
        "finding says to convert them there, or to give the encoder `default=`.\n\n"
        "No fix for `parameters()` and `state_dict()` payloads (save them with `torch.save`), and for "
        "sets and generators (JSON cannot encode them anyway)."
    )
    # Every encoder's qualified name holds "json" and "dump", both spelled in the file's imports or
    # call. A tensor-valued part may come from any call: a function of another file may return one
    # (``json.dumps(stats(net))``), so the encoder is the token.
    tokens = ((("json", "dump"),),)
    through_imports = ("", tokens)  # ``log(loss=t)`` of a helper of another file that encodes
    sinks = {encoder: JSON_ENCODER_KEYWORDS for encoder in JSON_ENCODERS}
    valid = (
        Example(
            "import json\n\nimport torch\n\n\ndef save_metrics(path, rewards, losses):\n"
            "    metrics = {\n"
            "        \"reward\": torch.stack(rewards).mean().item(),\n"
            "        \"loss\": torch.stack(losses).mean().item(),\n"
            "        \"frames\": len(rewards),\n"
            "    }\n"
            "    with open(path, \"w\") as f:\n"
            "        json.dump(metrics, f)\n",
            note="`.item()` and `.tolist()` give plain Python values.",
        ),
        Example(
            "import json\n\nimport torch\n\nx = torch.randn(8, 3)\n"
            "info = {\n"
            "    \"cuda\": torch.cuda.is_available(),\n"
            "    \"gpus\": torch.cuda.device_count(),\n"
            "    \"shape\": list(x.shape),\n"
            "    \"numel\": x.numel(),\n"
            "    \"mean\": float(x.mean()),\n"
            "}\n"
            "print(json.dumps(info, indent=2))\n",
            note="torch calls and tensor methods that return plain values.",
        ),
        Example(
            "import json\n\nimport torch\n\nstats = {\"returns\": torch.zeros(10)}\n"
            "text = json.dumps(stats, default=lambda t: t.tolist())\n",
            note="A `default=` (or `cls=`) encoder handles the tensors.",
        ),
        Example(
            "import json\n\nimport torch\n\n"
            "optimizer = torch.optim.Adam(params, lr=3e-4)\n"
            "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=100)\n"
            "json.dumps(scheduler.state_dict())\n",
            note="A learning-rate scheduler's `state_dict()` holds plain numbers.",
        ),
        Example(
            "import json\n\nimport torch\nfrom torchrl.trainers import TrainerHookBase\n\n\n"
            "class EpisodeCounter(TrainerHookBase):\n"
            "    def __init__(self):\n"
            "        self.episodes = 0\n\n"
            "    def state_dict(self):\n"
            "        return {\"episodes\": self.episodes}\n\n"
            "    def dump(self, path):\n"
            "        with open(path, \"w\") as f:\n"
            "            json.dump(self.state_dict(), f)\n",
            note="A class's own `state_dict()` method is not torch's.",
        ),
    )
    invalid = (
        Example(
            "import json\n\nimport torch\n\n\ndef save_metrics(path, rewards, losses):\n"
            "    metrics = {\n"
            "        \"reward\": torch.stack(rewards).mean(),\n"
            "        \"loss\": torch.stack(losses).mean(),\n"
            "        \"frames\": len(rewards),\n"
            "    }\n"
            "    with open(path, \"w\") as f:\n"
            "        json.dump(metrics, f)\n",
            fixed="import json\n\nimport torch\n\n\ndef save_metrics(path, rewards, losses):\n"
            "    metrics = {\n"
            "        \"reward\": torch.stack(rewards).mean().tolist(),\n"
            "        \"loss\": torch.stack(losses).mean().tolist(),\n"
            "        \"frames\": len(rewards),\n"
            "    }\n"
            "    with open(path, \"w\") as f:\n"
            "        json.dump(metrics, f)\n",
            message="`torch.stack(rewards).mean()` (in `metrics`)",
        ),
        Example(
            "import json as js\n\nimport torch\n\nreturns = torch.cumsum(torch.ones(5), dim=0)\n"
            "print(js.dumps({\"returns\": returns, \"best\": returns.max()}))\n",
            fixed="import json as js\n\nimport torch\n\nreturns = torch.cumsum(torch.ones(5), dim=0)\n"
            "print(js.dumps({\"returns\": returns.tolist(), \"best\": returns.max().tolist()}))\n",
            note="Any alias of the module; names bound to tensors are converted where the payload uses them.",
        ),
        Example(
            "import json\n\nimport torch\n\npolicy = torch.nn.Linear(4, 2)\n"
            "with open(\"policy.json\", \"w\") as f:\n"
            "    json.dump(policy.state_dict(), f)\n",
            message="torch.save",
            note="No fix: a `state_dict()` belongs in `torch.save`.",
        ),
        Example(
            "import json\n\nimport torch\n\n\nclass RewardTracker:\n"
            "    def save(self, path):\n"
            "        with open(path, \"w\") as f:\n"
            "            json.dump({\"total\": self.total}, f)\n\n"
            "    def reset(self):\n"
            "        self.total = torch.zeros(())\n",
            fixed="import json\n\nimport torch\n\n\nclass RewardTracker:\n"
            "    def save(self, path):\n"
            "        with open(path, \"w\") as f:\n"
            "            json.dump({\"total\": self.total}, f, default=lambda value: value.tolist())\n\n"
            "    def reset(self):\n"
            "        self.total = torch.zeros(())\n",
            message="`self.total`",
            note="`self.total` is a tensor because the class assigns it one, here after the dump. It is assigned "
                 "elsewhere, so the encoder is given `default=` to convert it.",
        ),
        Example(
            "import json\n\nimport torch\n\n\ndef summarize(rewards):\n"
            "    return {\"mean\": rewards.mean(), \"max\": rewards.max()}\n\n\n"
            "metrics = {}\n"
            "for name, rewards in {\"train\": torch.rand(8), \"eval\": torch.rand(8)}.items():\n"
            "    metrics[name] = {\"step\": 1, **summarize(rewards)}\n"
            "print(json.dumps(metrics))\n",
            fixed="import json\n\nimport torch\n\n\ndef summarize(rewards):\n"
            "    return {\"mean\": rewards.mean(), \"max\": rewards.max()}\n\n\n"
            "metrics = {}\n"
            "for name, rewards in {\"train\": torch.rand(8), \"eval\": torch.rand(8)}.items():\n"
            "    metrics[name] = {\"step\": 1, **summarize(rewards)}\n"
            "print(json.dumps(metrics, default=lambda value: value.tolist()))\n",
            message="`summarize(rewards)`",
            note="Values are followed through loops, dict and list mutations, `*`/`**` unpacking, built-ins "
                 "(`max`, `sorted`, `zip`, ...) and the functions of the project, given what they are passed.",
        ),
        Example(
            "import json\n\nimport torch\n\n\ndef log_metrics(**metrics):\n"
            "    print(json.dumps(dict(**metrics)))\n\n\n"
            "loss = torch.ones(3).mean()\n"
            "log_metrics(loss=loss, step=1)\n",
            fixed="import json\n\nimport torch\n\n\ndef log_metrics(**metrics):\n"
            "    print(json.dumps(dict(**metrics)))\n\n\n"
            "loss = torch.ones(3).mean()\n"
            "log_metrics(loss=loss.tolist(), step=1)\n",
            unsafe=True,
            message="`log_metrics` passes `loss` to `json.dumps`",
            note="A tensor passed to a function that hands it to an encoder is reported where it is passed.",
        ),
        Example(
            "import json\n\nimport torch\n\n\ndef save(metrics, path):\n"
            "    with open(path, \"w\") as f:\n"
            "        json.dump(metrics, f)\n\n\n"
            "losses = torch.rand(8)\n"
            "save({\"loss\": losses.mean(), \"step\": 10}, \"metrics.json\")\n",
            fixed="import json\n\nimport torch\n\n\ndef save(metrics, path):\n"
            "    with open(path, \"w\") as f:\n"
            "        json.dump(metrics, f)\n\n\n"
            "losses = torch.rand(8)\n"
            "save({\"loss\": losses.mean().tolist(), \"step\": 10}, \"metrics.json\")\n",
            unsafe=True,
            message="`save` passes `{\"loss\": losses.mean(), \"step\": 10}` to `json.dump`",
            note="A dict or list of tensors passed to a function (or lambda) that dumps it: its tensors are "
                 "converted where they are written.",
        ),
        Example(
            "import orjson\nimport torch\n\nlogits = torch.randn(4, 6)\n"
            "payload = orjson.dumps({\"action\": torch.argmax(logits, dim=-1)})\n",
            fixed="import orjson\nimport torch\n\nlogits = torch.randn(4, 6)\n"
            "payload = orjson.dumps({\"action\": torch.argmax(logits, dim=-1).tolist()})\n",
            note="orjson, ujson and simplejson cannot encode tensors either.",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._module: cst.Module | None = None
        self._blocks: tuple[int, ...] = ()  # ids of the statement blocks around the walk
        self._bound_in: dict[int, tuple[int, ...]] = {}  # id(assigned value) -> blocks around its assignment
        self._dumps: list[_Dump] = []

    # ----- where assignments sit: a binding in the call's block or an enclosing one ran before it -----
    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks += (id(node),)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks = self._blocks[:-1]

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._blocks += (id(node),)

    def leave_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._blocks = self._blocks[:-1]

    def visit_Assign(self, node: cst.Assign) -> None:
        self._bound_in[id(node.value)] = self._blocks

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bound_in[id(node.value)] = self._blocks

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bound_in[id(node.value)] = self._blocks

    # ----- the encoder calls -----
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            if func.attr.value not in JSON_DUMP_FUNCTIONS:
                self._passed_on(node)
                return
        elif not (isinstance(func, cst.Name) and func.value in self.ctx.imports.names):
            self._passed_on(node)
            return
        encoder = self.ctx.callee(node)
        spec = JSON_ENCODERS.get(encoder) if encoder is not None else None
        if spec is None:
            self._passed_on(node)
            return
        payload = _payload(node, spec)
        if payload is None:
            return
        leaves = _unique(tensor_leaves(payload, self.ctx, deferred=True))
        if not leaves:
            return
        dominated = [all(self._dominates(binding) for binding in leaf.bindings) for leaf in leaves]
        scope = self.ctx.scope_node or self._module
        assert encoder is not None and scope is not None
        self._dumps.append(_Dump(node, encoder, leaves, dominated, scope))

    def _passed_on(self, node: cst.Call) -> None:
        """A tensor (or a container of tensors) passed to a function or lambda of the project that hands
        it to an encoder (``log(loss=t)`` with ``def log(**kw): json.dumps(kw)``): reported here, where the
        tensor is, once the index confirms it."""
        callee = self.ctx.project_callee(node)
        if callee is None:
            return
        kinds = argument_kinds(node, self.ctx)
        if not kinds:
            return
        arguments = _arguments(node)
        for slot, kind in kinds:
            argument = arguments[slot]
            requirement = PassedToEncoder(callee, ((slot, kind),), f"`{_code(argument)}`")
            self.report(argument, f"`{callee.rpartition('.')[2]}` passes {{part}} to `{{sink}}`, which raises "
                                  "TypeError on torch tensors", remedy="{advice}", fix=self._passed_fix(argument),
                        requires=(requirement,))

    def _passed_fix(self, argument: cst.BaseExpression) -> Fix | None:
        """``.tolist()`` on each tensor of an argument, where every one is visible in this scope (the
        argument, or the parts of a dict or list literal it is, or is bound to); unsafe, since the
        function may also use the value as a tensor."""
        leaves = _unique(tensor_leaves(argument, self.ctx))
        if not leaves or not all(leaf.kind == "tensor" and leaf.local and leaf.encodable
                                 and all(self._dominates(binding) for binding in leaf.bindings) for leaf in leaves):
            return None
        parts = ", ".join(f"`{_code(leaf.node)}`" for leaf in leaves[:_SHOWN_PARTS])
        more = f" and {len(leaves) - _SHOWN_PARTS} more" if len(leaves) > _SHOWN_PARTS else ""
        return Fix("unsafe", f"Convert {parts}{more} with `.tolist()`; the function may also use it as a tensor",
                   tuple(Edit(leaf.node, _tolist(leaf.node)) for leaf in leaves))

    def _dominates(self, binding) -> bool:
        """The binding's assignment sits in the current block or one enclosing it (so it ran first)."""
        if binding.value is None:
            return True  # a parameter
        blocks = self._bound_in.get(id(binding.value))
        return blocks is not None and self._blocks[: len(blocks)] == blocks

    def leave_Module(self, node: cst.Module) -> None:
        # Reported at the end: whether a container name is used elsewhere needs the whole scope.
        expected = {id(name) for dump in self._dumps for leaf in dump.leaves for name in leaf.via}
        for dump in self._dumps:
            self._judge(dump, expected)

    def _judge(self, dump: _Dump, expected: set[int]) -> None:
        certain = [leaf for leaf in dump.leaves if leaf.certain]
        head = f"`{dump.encoder}` raises TypeError on torch tensors: "
        if not certain:
            # Every part depends on facts about classes: the complete index decides.
            requires: list[Requirement] = []
            for leaf in dump.leaves:
                requires.extend(TensorLeaf(_part(leaf), condition) for condition in sorted(leaf.when, key=repr))
            self.report(dump.call, head + "{leaf}", remedy="{advice}", requires=tuple(requires),
                        fix=_default_fix(dump))
            return
        kinds = [leaf.kind for leaf in certain]
        described, remedy = _describe([(_part(leaf), leaf.kind) for leaf in certain]), _advice(kinds)
        if len(head) + len(described) > _FIRST_LINE:  # the full list moves below the first line
            described, remedy = f"{len(certain)} values it is given are tensors", f"{described}; {remedy}"
        self.report(dump.call, head + described, remedy=remedy, fix=self._fix(dump, expected))

    def _fix(self, dump: _Dump, expected: set[int]) -> Fix | None:
        fixable = all(
            leaf.certain and leaf.kind == "tensor" and leaf.local and leaf.encodable and dominated
            for leaf, dominated in zip(dump.leaves, dump.dominated, strict=False)
        )
        if not fixable:
            return _default_fix(dump)
        edits = tuple(Edit(leaf.node, _tolist(leaf.node)) for leaf in dump.leaves)
        parts = ", ".join(f"`{_code(leaf.node)}`" for leaf in dump.leaves[:_SHOWN_PARTS])
        more = f" and {len(dump.leaves) - _SHOWN_PARTS} more" if len(dump.leaves) > _SHOWN_PARTS else ""
        description = f"Convert {parts}{more} with `.tolist()`"
        shared = self._used_elsewhere(dump, expected)
        if shared:
            names = ", ".join(f"`{name}`" for name in shared)
            return Fix("unsafe", f"{description}; {names} is also used elsewhere, and those uses will see "
                                 "lists instead of tensors", edits)
        return Fix("safe", description, edits)

    def _used_elsewhere(self, dump: _Dump, expected: set[int]) -> list[str]:
        """Container names the fix converts inside that the scope also reads for something else."""
        names = sorted({name.value for leaf in dump.leaves for name in leaf.via})
        if not names:
            return []
        loads = loaded_names(dump.scope, frozenset(names))
        return sorted({name.value for name in loads if id(name) not in expected})

    @classmethod
    def resolve(cls, requirement: Requirement, index: ProjectIndex, path: str,
                options: Mapping[str, Any]) -> dict[str, str] | None:
        if isinstance(requirement, PassedToEncoder):
            reached = sink_reached(index, requirement.callee, requirement.argument, path)
            if reached is None:
                return None
            (_, argument_kind), sink = reached
            return {"part": requirement.part, "sink": sink, "advice": _advice([argument_kind])}
        if not isinstance(requirement, TensorLeaf):
            return super().resolve(requirement, index, path, options)
        kind = condition_kind(requirement.condition, index, path)
        if kind is None:
            return None
        return {"leaf": _describe([(requirement.part, kind)]), "advice": _advice([kind])}


# What a user writes to have the encoder convert what it cannot encode: ``.tolist()`` turns a tensor
# into a number or a nested list, and a TensorDict into a list of dicts of tensors, which come back here.
_DEFAULT = "lambda value: value.tolist()"
# Conditions that, when they hold, make a part "bulk": ``parameters()`` is a generator, which has no ``tolist``.
_BULK_CONDITIONS = (TorchMethod, AttrTorchMethod)


def _default_fix(dump: _Dump) -> Fix | None:
    """``default=lambda value: value.tolist()`` added to the encoder call, for a payload whose tensor-valued
    parts sit where ``.tolist()`` cannot be written (filled elsewhere, returned by another function, a
    field of an instance): the encoder then converts each tensor it meets. None when a part is (or may be)
    many tensors at once, or sits in a set or generator, which the encoder cannot encode anyway."""
    for leaf in dump.leaves:
        if leaf.kind == "bulk" or not leaf.encodable or any(isinstance(c, _BULK_CONDITIONS) for c in leaf.when):
            return None
    call = dump.call
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    default = cst.Arg(keyword=cst.Name("default"), value=cst.parse_expression(_DEFAULT),
                      equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                            whitespace_after=cst.SimpleWhitespace("")))
    return Fix("safe", f"Pass `default={_DEFAULT}` to `{dump.encoder}`, which then converts each tensor it meets",
               (Edit(call, call.with_changes(args=[*args, default])),))


def _payload(call: cst.Call, spec: tuple[int, tuple[int, ...]]) -> cst.BaseExpression | None:
    """The encoded object, or None when the call may carry its own encoder for tensors."""
    _, escapes = spec
    if has_star_kwargs(call) or any(arg.star == "*" for arg in call.args):
        return None  # the unpacked arguments may hold default= or cls=
    if any(arg.keyword is not None and arg.keyword.value in JSON_ENCODER_KEYWORDS and not is_none(arg.value)
           for arg in call.args):
        return None
    args = positional(call)
    if any(index < len(args) and not is_none(args[index].value) for index in escapes):
        return None
    if args:
        return args[0].value
    named = keyword(call, "obj")
    return named.value if named is not None else None


def _arguments(call: cst.Call) -> dict[int | str, cst.BaseExpression]:
    """A call's arguments by position and keyword, up to a ``*args`` (as ``argument_kinds`` counts them)."""
    found: dict[int | str, cst.BaseExpression] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            break
        found[arg.keyword.value if arg.keyword is not None else position] = arg.value
        position += arg.keyword is None
    return found


def _unique(leaves: list[Leaf]) -> list[Leaf]:
    """One leaf per node: a container reached twice (``[m, m]``) has its parts once."""
    seen: set[int] = set()
    unique = []
    for leaf in leaves:
        if id(leaf.node) not in seen:
            seen.add(id(leaf.node))
            unique.append(leaf)
    return unique


def _code(node: cst.CSTNode) -> str:
    text = " ".join(cst.Module([]).code_for_node(node).split())
    return text if len(text) <= _PART_CHARS else text[: _PART_CHARS - 3] + "..."


def _part(leaf: Leaf) -> str:
    where = f" (in `{leaf.via[-1].value}`)" if leaf.via else ""
    return f"`{_code(leaf.node)}`{where}"


def _describe(leaves: Sequence[tuple[str, str]]) -> str:
    """``a`` and ``b`` are tensors; ``model.state_dict()`` holds many tensors: from (part, kind) pairs."""
    groups = (
        ("tensor", "is a tensor", "are tensors"),
        ("tensors", "is a tuple of tensors", "are tuples of tensors"),
        ("bulk", "holds many tensors", "hold many tensors"),
        ("tensordict", "is a TensorDict", "are TensorDicts"),
        ("mixed", "is a tensor or holds tensors", "are tensors or hold tensors"),
        ("holds", "holds tensors", "hold tensors"),
    )
    sentences = []
    for kind, one, many in groups:
        parts = [part for part, part_kind in leaves if part_kind == kind]
        if not parts:
            continue
        shown = parts[:_SHOWN_PARTS]
        if len(parts) > _SHOWN_PARTS:
            listed = ", ".join(shown) + f" and {len(parts) - _SHOWN_PARTS} more"
        elif len(shown) > 1:
            listed = ", ".join(shown[:-1]) + f" and {shown[-1]}"
        else:
            listed = shown[0]
        sentences.append(f"{listed} {one if len(parts) == 1 else many}")
    return "; ".join(sentences)


_FIRST_LINE = 120  # characters a message's first line should stay within


def _advice(kinds: Sequence[str]) -> str:
    if FIELDS in kinds:
        return _FIELDS
    if all(kind == "bulk" for kind in kinds):
        return _SAVE
    if "bulk" in kinds:
        return f"{_CONVERT}, and {_SAVE}"
    return _CONVERT


def _tolist(node: cst.BaseExpression) -> cst.Call:
    """``node.tolist()``, parenthesising an operation so the call applies to all of it."""
    value = node
    if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not node.lpar:
        value = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("tolist")))
