"""RLG004 tensordict-without-device: a TensorDict built with no device inside a TorchRL transform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Mapping

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Edit, Fix, Requirement, display_path
from rlguard.engine.index import FunctionFacts, ProjectIndex
from rlguard.engine.source_lines import definition_line
from rlguard.rules.base import Example, Option, Rule
from rlguard.rules.data import (
    TRANSFORM_TENSORDICT_METHODS,
    is_replay_buffer,
    is_tensordict_class,
    is_tensordict_type,
    is_torchrl_transform,
    torchrl_transform_names,
)
from rlguard.engine.class_lookup import attr_facts, may_be_project
from rlguard.engine.matching import has_star_kwargs, is_none, keyword, positional

# Keywords of the TensorDict constructor that are not entries of the new TensorDict.
_CONSTRUCTOR_KEYWORDS = frozenset({"source", "batch_size", "device", "names", "non_blocking", "lock"})
# ``td.get(key)`` and friends read an entry of ``td``.
_READ_METHODS = frozenset({"get", "get_nested"})
# ``TensorDict(...).to(device)``: the TensorDict that is kept has a device.
_DEVICE_METHODS = frozenset({"to", "cuda", "cpu"})
# Stacking TensorDicts keeps their (missing) device.
_STACKS = frozenset({"torch.stack", "torch.cat", "tensordict.lazy_stack", "tensordict.stack"})
# ``other.update(TensorDict(...))``: the entries are cast to ``other``'s device; the new TensorDict is not kept.
_MERGE_METHODS = frozenset({"update", "update_", "set", "set_", "update_at_", "set_at_"})
# Bases from these packages are known not to be (or derive from) torchrl transforms.
_NEVER_TRANSFORMS = ("builtins.", "abc.", "typing.", "collections.", "enum.", "torch.", "tensordict.", "numpy.")
# Methods of a transform that never hand data downstream: (de)serialisation and spec bookkeeping.
_NOT_DATA_METHODS = frozenset(
    {
        "state_dict", "load_state_dict", "get_extra_state", "set_extra_state", "_load_from_state_dict",
        "_save_to_state_dict", "__getstate__", "__setstate__", "__reduce__", "__reduce_ex__",
    }
)

_WHY_DOWNSTREAM = "device and pinned-memory logic skip it"
_FACTORY_ADVICE = ("give the TensorDict a device where the factory builds it ({built}): e.g. `device=td.device`, "
                   "or a `device` argument the transform passes")
_ADVICE = ("pass the device of the data it is built from (e.g. `device=td.device`): a replay buffer with "
           "`pin_memory=True` returns a sample whose device is None unpinned, and code that reads `td.device` sees None")


class _TransformNames:
    """``class_roots``: torchrl's transform classes, read from the API model when a run first asks for
    them, not when the rule is imported."""

    def __get__(self, instance: object, owner: type) -> frozenset[str]:
        return torchrl_transform_names()


@dataclass(frozen=True)
class IsTransform(Requirement):
    """The class ``qualname`` that builds a TensorDict is a torchrl Transform."""

    qualname: str


@dataclass(frozen=True)
class UnplacedFactory(Requirement):
    """Every return of the project function or method ``factory`` gives a TensorDict built with no
    device (``ProjectIndex.unplaced_tensordict``), and ``transform`` (when given) is a torchrl Transform."""

    factory: str  # a qualified name; with ``member``, the name of the method called on it
    transform: str | None
    member: tuple[str, str] | None = None  # (class, attribute): the method is called on ``self.<attribute>``


@dataclass
class _Candidate:
    """A device-less ``TensorDict(...)`` seen in a place that may make it a finding."""

    call: cst.Call
    written_none: bool
    class_qualname: str | None  # the enclosing class, when there is one
    class_name: str
    method: str | None  # the enclosing method of that class (None in the class body)
    functions: tuple[str, ...]  # enclosing plain (non-method) functions, outermost first
    lambdas: tuple[int, ...]  # ids of enclosing lambdas
    called_class: str | None  # the class whose ``__call__`` the call is in
    class_fix: Fix | None  # when the enclosing method's TensorDict parameter is known
    function_fix: Fix | None  # when the innermost function is a replay-buffer transform
    factory: str | None = None  # a call of this project function or method, whose result is returned
    member: tuple[str, str] | None = None  # (class, attribute) when the method is called on ``self.<attribute>``


class TensorDictWithoutDevice(Rule):
    code = "RLG004"
    name = "tensordict-without-device"
    summary = "Builds a `TensorDict` with no device inside a TorchRL transform"
    why = (
        "A transform runs on every step of an environment, and on every sample of a replay buffer that "
        "holds it. A `TensorDict(...)` built there without `device=` has device `None`, even when every "
        "tensor in it sits on one device. TorchRL decides what to cast and pin from a TensorDict's "
        "`device`: a replay buffer with `pin_memory=True` pins a sample only when its device is the CPU, "
        "so a device-less sample comes back unpinned, and its copies to the GPU cannot overlap with compute; and an environment whose "
        "transform returns one hands out device-less resets, steps and rollouts even when the "
        "environment has a device, so the device logic downstream that reads `td.device` sees `None`. "
        "Nothing fails; data silently is not pinned, or not where it was meant to be.\n\n"
        "A transform is a class deriving, directly or through bases in any linted file, from `Transform` "
        "or another transform class of `torchrl.envs` / `torchrl.envs.transforms` (environments such as "
        "`EnvBase` are not transforms). The rule looks where a transform builds its output: the methods "
        "torchrl calls with the data (`_call`, `forward`, `_reset`, `_step`, `_inv_call`, `inv`, ...), the "
        "helpers of the same class whose result they return, and any function or lambda passed as "
        "`transform=` to a `torchrl.data` replay buffer. What such a place returns from a function of the "
        "project (in the same file or another) or a method of another project class is followed too: when "
        "every `return` of that factory gives a `TensorDict(...)` (or `TensorDict.from_dict(...)`) it builds "
        "with no device, directly, through a name bound once, through methods that keep the device "
        "(`.clone()`, `.select(...)`) or through another such factory, the call in the transform is reported "
        "and the message names the factory's file and line. A factory that is given the device and passes "
        "it, returns `.to(device)`, has returns that differ, may end without returning, or calls itself is "
        "not reported; nor is a function the project does not define. The `whole-transform` option extends "
        "it to the whole class (`__init__`, other helpers). A call with `**kwargs` may carry a device and is not "
        "reported; `device=None` written out is.\n\n"
        "Not reported, because the device-less TensorDict is not what goes downstream: one given a device "
        "right away (`TensorDict(...).to(device)`); one set or merged straight into another TensorDict "
        "(`td.set(key, TensorDict(...))`, `td.update(TensorDict(...))`, `td[key] = TensorDict(...)`), whose "
        "entries then take that TensorDict's device; and one built in a static or class method, in "
        "(de)serialisation (`state_dict`, `load_state_dict`, `get_extra_state`, `set_extra_state`, ...) or "
        "in spec bookkeeping (`transform_*_spec`)."
    )
    fix_doc = (
        "Inside a transform method whose TensorDict parameter is known, `device=<parameter>.device` is "
        "added (or replaces a written `None`). Known parameters: the first parameter after `self` of "
        "`_call`, `forward`, `_inv_call`, `inv` and `transform_fake_tensordict`; the first two of `_reset`, "
        "`_reset_on_native_autoreset`, `_step` and `_post_step_mdp_hooks` (both TensorDicts of the same "
        "environment); a parameter annotated with a TensorDict class of tensordict (`TensorDictBase`, "
        "`TensorDict`, `LazyStackedTensorDict`, ...); and the first parameter of a function passed as a "
        "replay buffer's `transform=`.\n\n"
        "The fix is safe when every value put into the new TensorDict is read from one of those parameters "
        "(`td[\"obs\"]`, `td.get(\"obs\")`, or a nested dict or TensorDict of such reads), and uses that "
        "parameter: those tensors are already on its device, and when its device is None nothing changes. "
        "It is unsafe otherwise: values computed elsewhere, or entries added later, are moved to the "
        "parameter's device once the TensorDict has one.\n\n"
        "A TensorDict built in a project factory the transform calls gets no fix: the change belongs in the "
        "factory, which other callers may share, so the finding names where the factory builds it."
    )
    options = (
        Option(
            "whole-transform", bool, False,
            "Report TensorDicts built anywhere in a transform class (`__init__`, helpers whose result is "
            "not the transform's output, class bodies), not only where the transform produces its output.",
        ),
    )
    # A construction (`TensorDict(`, or an alias bound by `TensorDict as`), and a transform: a
    # replay buffer's `transform=` keyword, or (class_roots) a class deriving from a torchrl transform.
    # A transform may also return what a project factory builds (``return``, or a lambda's body).
    tokens = (("TensorDict(", "TensorDict (", "TensorDict as", "TensorDict.from_dict(", "return", "lambda"),
              ("transform=", "transform ="))
    class_roots = _TransformNames()  # a frozenset on the class, computed on first read
    class_group = 1
    valid = (
        Example(
            "from tensordict import TensorDict\nfrom torchrl.envs import Transform\n\n\n"
            "class PairUp(Transform):\n"
            "    def forward(self, tensordict):\n"
            "        return TensorDict(\n"
            "            {\"obs\": tensordict[\"observation\"], \"next_obs\": tensordict[\"next\", \"observation\"]},\n"
            "            batch_size=tensordict.batch_size,\n"
            "            device=tensordict.device,\n"
            "        )\n",
        ),
        Example(
            "from tensordict import TensorDict\nfrom torchrl.envs import Transform\n\n\n"
            "class Stats(Transform):\n"
            "    def _call(self, next_tensordict):\n"
            "        return TensorDict({\"mean\": next_tensordict[\"obs\"].mean(-1)}, [], next_tensordict.device)\n",
            note="The device may be the third positional argument.",
        ),
        Example(
            "from tensordict import TensorDict\n\n\n"
            "def make_batch(obs, reward):\n"
            "    return TensorDict({\"obs\": obs, \"reward\": reward}, batch_size=[obs.shape[0]])\n",
            note="Outside a transform the device is the caller's business.",
        ),
        Example(
            "from tensordict import TensorDict\nfrom torchrl.envs import Transform\n\n\n"
            "class Forward(Transform):\n"
            "    def _call(self, next_tensordict, **options):\n"
            "        return TensorDict({\"x\": next_tensordict[\"x\"]}, batch_size=[], **options)\n",
            note="`**kwargs` may carry the device.",
        ),
        Example(
            "import torch\nfrom tensordict import TensorDict\nfrom torchrl.envs import Transform\n\n\n"
            "class AddGoal(Transform):\n"
            "    def _call(self, next_tensordict):\n"
            "        goal = torch.zeros(*next_tensordict.shape, 3)\n"
            "        next_tensordict.set(\"goal\", TensorDict({\"pos\": goal}, batch_size=next_tensordict.shape))\n"
            "        return next_tensordict\n",
            note="Set (or `update`) straight into another TensorDict, the entries take that TensorDict's device.",
        ),
        Example(
            "from tensordict import TensorDict\nfrom torchrl.envs import EnvBase\n\n\n"
            "class GridEnv(EnvBase):\n"
            "    def _reset(self, tensordict):\n"
            "        return TensorDict({\"pos\": self.start.clone()}, batch_size=self.batch_size)\n",
            note="Environments are not transforms.",
        ),
        Example(
            "import torch\nfrom tensordict import TensorDict\nfrom torchrl.envs import Transform\n\n\n"
            "class RunningMean(Transform):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.stats = TensorDict({\"sum\": torch.zeros(()), \"count\": torch.zeros(())}, [])\n\n"
            "    def _call(self, next_tensordict):\n"
            "        self.stats[\"sum\"] += next_tensordict[\"reward\"].sum()\n"
            "        self.stats[\"count\"] += next_tensordict[\"reward\"].numel()\n"
            "        return next_tensordict\n",
            note="Internal state built in `__init__` is not the transform's output (see `whole-transform`).",
        ),
    )
    invalid = (
        Example(
            "from tensordict import TensorDict\nfrom torchrl.envs import Transform\n\n\n"
            "class PairUp(Transform):\n"
            "    def forward(self, tensordict):\n"
            "        return TensorDict(\n"
            "            {\"obs\": tensordict[\"observation\"], \"next_obs\": tensordict[\"next\", \"observation\"]},\n"
            "            batch_size=tensordict.batch_size,\n"
            "        )\n",
            fixed="from tensordict import TensorDict\nfrom torchrl.envs import Transform\n\n\n"
            "class PairUp(Transform):\n"
            "    def forward(self, tensordict):\n"
            "        return TensorDict(\n"
            "            {\"obs\": tensordict[\"observation\"], \"next_obs\": tensordict[\"next\", \"observation\"]},\n"
            "            batch_size=tensordict.batch_size,\n"
            "            device=tensordict.device,\n"
            "        )\n",
            message="pinned-memory",
            note="Every value comes from `tensordict`: a safe fix.",
        ),
        Example(
            "import torch\nfrom tensordict import TensorDict as TD\nfrom torchrl.envs.transforms import ObservationTransform\n\n\n"
            "class NoisyObs(ObservationTransform):\n"
            "    def _call(self, next_tensordict):\n"
            "        obs = next_tensordict[\"observation\"]\n"
            "        return TD({\"observation\": obs + torch.randn_like(obs)}, next_tensordict.shape)\n",
            fixed="import torch\nfrom tensordict import TensorDict as TD\nfrom torchrl.envs.transforms import ObservationTransform\n\n\n"
            "class NoisyObs(ObservationTransform):\n"
            "    def _call(self, next_tensordict):\n"
            "        obs = next_tensordict[\"observation\"]\n"
            "        return TD({\"observation\": obs + torch.randn_like(obs)}, next_tensordict.shape, "
            "device=next_tensordict.device)\n",
            unsafe=True,
            note="Under an alias, through any torchrl transform base. The value is computed, not read from "
            "`next_tensordict`, so the fix is unsafe.",
        ),
        Example(
            "from tensordict import TensorDict\n\nfrom example_base import ScaledReward\n\n\n"
            "class Shifted(ScaledReward):\n"
            "    def _reset(self, tensordict, tensordict_reset):\n"
            "        return TensorDict({\"reward\": tensordict_reset[\"reward\"]}, [], device=None)\n",
            fixed="from tensordict import TensorDict\n\nfrom example_base import ScaledReward\n\n\n"
            "class Shifted(ScaledReward):\n"
            "    def _reset(self, tensordict, tensordict_reset):\n"
            "        return TensorDict({\"reward\": tensordict_reset[\"reward\"]}, [], device=tensordict_reset.device)\n",
            files={"example_base.py": "from torchrl.envs import RewardScaling\n\n\nclass ScaledReward(RewardScaling):\n    pass\n"},
            note="`device=None` written out is a finding; the base class may live in another file.",
        ),
        Example(
            "from tensordict import TensorDict\nfrom torchrl.data import LazyTensorStorage, ReplayBuffer\n\n\n"
            "def to_pairs(data):\n"
            "    return TensorDict({\"obs\": data[\"obs\"], \"next_obs\": data[\"next\", \"obs\"]}, batch_size=data.batch_size)\n\n\n"
            "rb = ReplayBuffer(storage=LazyTensorStorage(100_000), transform=to_pairs, pin_memory=True)\n",
            fixed="from tensordict import TensorDict\nfrom torchrl.data import LazyTensorStorage, ReplayBuffer\n\n\n"
            "def to_pairs(data):\n"
            "    return TensorDict({\"obs\": data[\"obs\"], \"next_obs\": data[\"next\", \"obs\"]}, batch_size=data.batch_size, "
            "device=data.device)\n\n\n"
            "rb = ReplayBuffer(storage=LazyTensorStorage(100_000), transform=to_pairs, pin_memory=True)\n",
            message="a `ReplayBuffer` transform",
            note="A plain function passed as a replay buffer's `transform=` is a transform: with "
            "`pin_memory=True`, its device-less samples come back unpinned.",
        ),
        Example(
            "from tensordict import TensorDict, TensorDictBase\nfrom torchrl.envs import Transform\n\n\n"
            "class KeepObs(Transform):\n"
            "    def forward(self, tensordict):\n"
            "        return self._select(tensordict)\n\n"
            "    def _select(self, data: TensorDictBase):\n"
            "        return TensorDict({\"observation\": data[\"observation\"]}, batch_size=data.batch_size)\n",
            fixed="from tensordict import TensorDict, TensorDictBase\nfrom torchrl.envs import Transform\n\n\n"
            "class KeepObs(Transform):\n"
            "    def forward(self, tensordict):\n"
            "        return self._select(tensordict)\n\n"
            "    def _select(self, data: TensorDictBase):\n"
            "        return TensorDict({\"observation\": data[\"observation\"]}, batch_size=data.batch_size, "
            "device=data.device)\n",
            note="A helper whose result a data method returns builds the output too; its parameter "
            "annotated `TensorDictBase` gives the fix its device.",
        ),
        Example(
            "from torchrl.envs import Transform\n\nfrom example_helpers import build_pair\n\n\n"
            "class PairUp(Transform):\n"
            "    def _call(self, next_tensordict):\n"
            "        return build_pair(next_tensordict)\n",
            files={"example_helpers.py": "from tensordict import TensorDict\n\n\n"
                   "def build_pair(td):\n"
                   "    return TensorDict({\"obs\": td[\"obs\"], \"next_obs\": td[\"next\", \"obs\"]}, "
                   "batch_size=td.batch_size)\n"},
            message="where the factory builds it (at example_helpers.py:4)",
            note="A factory of the project, here in another file, builds the transform's output: reported at "
            "the call, naming where the factory builds it. No automatic fix: give the TensorDict a device in "
            "the factory.",
        ),
        Example(
            "from tensordict import TensorDict\nfrom torchrl.envs import Transform\n\n\n"
            "class LastObs(Transform):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.last = TensorDict({}, batch_size=[])\n\n"
            "    def _call(self, next_tensordict):\n"
            "        self.last.update(next_tensordict.select(\"observation\"))\n"
            "        return next_tensordict.set(\"last\", self.last.clone())\n",
            options={"whole-transform": True},
            note="With `whole-transform = true`, the whole class is looked at. No TensorDict parameter in "
            "`__init__`: no automatic fix; pass the device the transform will run on.",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._functions: list[str] = []  # enclosing plain functions, by name
        self._function_nodes: list[cst.FunctionDef] = []
        self._lambdas: list[cst.Lambda] = []
        self._candidates: list[_Candidate] = []
        self._buffer_functions: dict[str, str] = {}  # function name -> replay buffer class it was given to
        self._buffer_lambdas: dict[int, str] = {}  # id(lambda) -> replay buffer class
        self._buffer_classes: dict[str, str] = {}  # class whose instances were given -> replay buffer class
        self._kept_elsewhere: set[int] = set()  # calls given a device right away, or merged into another TensorDict
        # (class, method) -> methods of the same class whose result it returns: the transform's output
        # is built in its data methods and in the helpers they return from.
        self._returns_from: dict[tuple[str, str], set[str]] = {}
        # A new TensorDict is the output when it is returned: inside a ``return`` (or a lambda's body),
        # or bound to a local name (kept through ``x = x.method(...)``) that is returned.
        self._in_return = 0
        self._returned: set[int] = set()  # ids of candidate calls
        self._by_id: dict[int, _Candidate] = {}
        self._tracked: dict[tuple[int, str], set[int]] = {}  # (scope, local name) -> candidate call ids

    # ----- scopes -----
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.ctx.method_class() is None:
            self._functions.append(node.name.value)
            self._function_nodes.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._function_nodes and self._function_nodes[-1] is node:
            self._functions.pop()
            self._function_nodes.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._lambdas.append(node)
        self._factory_call(node.body)

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._lambdas.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        # ``td[key] = TensorDict(...)`` stores the entries in ``td``, cast to its device.
        if isinstance(node.value, cst.Call) and any(isinstance(t.target, cst.Subscript) for t in node.targets):
            self._kept_elsewhere.add(id(node.value))

    def leave_Assign(self, node: cst.Assign) -> None:
        # Runs before the engine records the binding: ``x = TensorDict(...)`` and ``x = x.select(...)``.
        scope = id(self.ctx.scope_node)
        calls = self._roots(node.value, scope)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                key = (scope, target.target.value)
                if calls:
                    self._tracked[key] = calls
                else:
                    self._tracked.pop(key, None)

    def _roots(self, node: cst.BaseExpression, scope: int) -> set[int]:
        """Candidate calls an expression may be (or be derived from by method calls and indexing)."""
        while True:
            if isinstance(node, cst.Call) and self.ctx.callee(node) in _STACKS:
                args = positional(node)  # torch.stack of device-less TensorDicts has no device either
                return self._roots(args[0].value, scope) if args else set()
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and id(node) not in self._by_id:
                if node.func.attr.value in _DEVICE_METHODS and self._moves_device(node):
                    return set()  # ``a.to(device)``: what is handed on has a device
                node = node.func.value
            elif isinstance(node, cst.Subscript):
                node = node.value
            else:
                break
        if isinstance(node, cst.Call):
            return {id(node)} if id(node) in self._by_id else set()
        if isinstance(node, cst.Name):
            return set(self._tracked.get((scope, node.value), ()))
        if isinstance(node, (cst.Tuple, cst.List)):
            return {call for el in node.elements for call in self._roots(el.value, scope)}
        if isinstance(node, cst.IfExp):
            return self._roots(node.body, scope) | self._roots(node.orelse, scope)
        return set()

    def leave_Return(self, node: cst.Return) -> None:
        self._in_return -= 1

    def visit_Return(self, node: cst.Return) -> None:
        self._in_return += 1
        if node.value is not None:
            self._returned |= self._roots(node.value, id(self.ctx.scope_node))
            self._factory_call(self._bound_once(node.value))
        cls = self.ctx.current_class
        method = self._current_method()
        if cls is None or method is None or node.value is None:
            return
        value = self.ctx.value_of(node.value)
        self_name = self.ctx.self_name()
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and isinstance(value.func.value, cst.Name)
            and value.func.value.value == self_name
        ):
            self._returns_from.setdefault((cls.qualname, method.name.value), set()).add(value.func.attr.value)

    # ----- calls -----
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in _DEVICE_METHODS and isinstance(func.value, cst.Call) and self._moves_device(node):
                self._kept_elsewhere.add(id(func.value))
            elif method in _MERGE_METHODS:
                self._kept_elsewhere.update(id(arg.value) for arg in node.args if isinstance(arg.value, cst.Call))
        elif not isinstance(func, cst.Name):
            return
        qualname = self.ctx.callee(node)
        if qualname is None:
            return
        owner, _, method = qualname.rpartition(".")
        if is_tensordict_class(qualname) or (method == "from_dict" and is_tensordict_class(owner)):
            self._tensordict_call(node)
        elif is_replay_buffer(qualname):
            transform = keyword(node, "transform")
            if transform is not None:
                self._given_as_transform(transform.value, qualname.rpartition(".")[2], 0)

    def _given_as_transform(self, value: cst.BaseExpression, buffer: str, depth: int) -> None:
        """Record what a replay buffer will call on its samples: a function, a lambda, the function a
        ``functools.partial`` wraps, the ``__call__`` of an instance, each part of a ``Compose(...)``."""
        value = self.ctx.value_of(value)
        if isinstance(value, cst.Name):
            self._buffer_functions.setdefault(value.value, buffer)
        elif isinstance(value, cst.Lambda):
            self._buffer_lambdas[id(value)] = buffer
        elif isinstance(value, cst.Call) and depth < 4:
            callee = self.ctx.callee(value) or ""
            args = positional(value)
            if callee == "functools.partial" and args:
                self._given_as_transform(args[0].value, buffer, depth + 1)
            elif callee.rpartition(".")[2] == "Compose" and is_torchrl_transform(callee):
                for arg in args:
                    self._given_as_transform(arg.value, buffer, depth + 1)
            elif callee:
                self._buffer_classes.setdefault(callee, buffer)

    def _moves_device(self, call: cst.Call) -> bool:
        """``.cuda()``, ``.cpu()``, ``.to(device)``; not ``.to(torch.float32)`` or ``.to(dtype=...)``."""
        assert isinstance(call.func, cst.Attribute)
        if call.func.attr.value != "to":
            return True
        if keyword(call, "device") is not None:
            return True
        args = positional(call)
        if not args:
            return False
        first = self.ctx.qualname(args[0].value)
        return not (first is not None and first.startswith("torch.") and first != "torch.device")

    def _tensordict_call(self, node: cst.Call) -> None:
        if self.ctx.current_class is None and not self._functions and not self._lambdas:
            return
        written_none = _device_missing(node)
        if written_none is None or id(node) in self._kept_elsewhere:
            return
        self._add_candidate(node, written_none, None)

    def _factory_call(self, node: cst.BaseExpression) -> None:
        """A returned call of a project function or method (not one of the class's own, which the
        rule follows itself): whether it gives a device-less TensorDict, the complete index says."""
        if not isinstance(node, cst.Call) or (self.ctx.current_class is None and not self._functions
                                              and not self._lambdas) or id(node) in self._by_id:
            return
        factory = self.ctx.callee(node)
        if factory is None and isinstance(node.func, cst.Attribute):
            receiver = node.func.value
            if isinstance(receiver, cst.Name) and receiver.value == self.ctx.self_name():
                return
            attr, cls = self.ctx.is_self_attr(receiver), self.ctx.current_class
            if attr is not None and cls is not None:  # ``self.pairer.build(td)``: the index knows ``self.pairer``
                self._add_candidate(node, False, node.func.attr.value, (cls.qualname, attr))
                self._returned.add(id(node))
                return
            owner = self.ctx.class_of(receiver)
            factory = f"{owner}.{node.func.attr.value}" if owner is not None else None
        if factory is not None and may_be_project(factory) and not is_tensordict_class(factory):
            self._add_candidate(node, False, factory)
            self._returned.add(id(node))

    def _bound_once(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """``out`` in ``out = build(td); return out``: the value of a name bound once in its scope (a name
        bound on several paths may hold either value: left as it is)."""
        binding = self.ctx.lookup(node.value) if isinstance(node, cst.Name) else None
        if binding is None or binding.opaque or binding.value is None or binding.previous is not None:
            return node
        return binding.value

    def _add_candidate(self, node: cst.Call, written_none: bool, factory: str | None,
                       member: tuple[str, str] | None = None) -> None:
        cls = self.ctx.current_class
        method = self._enclosing_method()
        called_class = cls.qualname if cls is not None and method is not None and method.name.value == "__call__" \
            else None
        if cls is not None and not self._may_be_transform(cls.qualname):
            cls = None
        if cls is not None and method is not None and not _handles_data(method):
            cls = None  # a static method or (de)serialisation: not the transform's data
        if cls is None and not self._functions and not self._lambdas and called_class is None:
            return
        direct = self._current_method() is not None
        if self._in_return or self._lambdas:
            self._returned.add(id(node))
        self._candidates.append(
            _Candidate(
                call=node,
                written_none=written_none,
                class_qualname=cls.qualname if cls is not None else None,
                class_name=cls.name if cls is not None else "",
                method=method.name.value if method is not None else None,
                functions=tuple(self._functions),
                lambdas=tuple(id(lam) for lam in self._lambdas),
                called_class=called_class,
                class_fix=self._fix(node, self._method_parameters()) if direct and factory is None else None,
                function_fix=self._fix(node, self._function_parameters()) if factory is None else None,
                factory=factory,
                member=member,
            )
        )
        self._by_id[id(node)] = self._candidates[-1]

    def leave_Module(self, node: cst.Module) -> None:
        everywhere = bool(self.settings.get("whole-transform"))
        for candidate in self._candidates:
            if not everywhere and id(candidate.call) not in self._returned:
                continue  # scratch or internal state, not what the transform hands on
            buffer = self._buffer_of(candidate)
            what = "`TensorDict(..., device=None)`" if candidate.written_none else "`TensorDict(...)` without a device"
            if candidate.factory is not None:
                self._report_factory(candidate, buffer)
            elif buffer is not None:
                where, owner = buffer
                message = f"{what} in `{where}`, a `{owner}` transform: {_WHY_DOWNSTREAM}"
                direct = bool(candidate.functions) and where == candidate.functions[-1]
                self.report(candidate.call, message, remedy=_ADVICE, fix=candidate.function_fix if direct else None)
            elif candidate.class_qualname is not None and self._builds_output(candidate):
                message = f"{what} in the transform `{candidate.class_name}`: {_WHY_DOWNSTREAM}"
                self.report(candidate.call, message, remedy=_ADVICE, fix=candidate.class_fix,
                            requires=(IsTransform(candidate.class_qualname),))

    def _report_factory(self, candidate: _Candidate, buffer: tuple[str, str] | None) -> None:
        """A returned call of a project factory: the finding stands if the index says every return of
        the factory is a device-less TensorDict. No fix: the TensorDict is built in the factory."""
        assert candidate.factory is not None
        name = candidate.factory.rpartition(".")[2]
        tail = f"a `TensorDict` without a device: {_WHY_DOWNSTREAM}"
        if buffer is not None:
            where, owner = buffer
            message = f"`{name}(...)` gives `{where}`, a `{owner}` transform, {tail}"
            requires = (UnplacedFactory(candidate.factory, None, candidate.member),)
        elif candidate.class_qualname is not None and self._builds_output(candidate):
            message = f"`{name}(...)` gives the transform `{candidate.class_name}` {tail}"
            requires = (UnplacedFactory(candidate.factory, candidate.class_qualname, candidate.member),)
        else:
            return
        self.report(candidate.call, message, remedy=_FACTORY_ADVICE, requires=requires)

    def _builds_output(self, candidate: _Candidate) -> bool:
        """Whether the call is where the transform builds its output: in a method torchrl calls with the
        data, or in a helper such a method returns the result of (unless ``whole-transform`` is set)."""
        if self.settings.get("whole-transform"):
            return True
        if candidate.method is None or candidate.class_qualname is None:
            return False
        output = set(TRANSFORM_TENSORDICT_METHODS)
        frontier = list(output)
        while frontier:
            method = frontier.pop()
            for helper in self._returns_from.get((candidate.class_qualname, method), ()):
                if helper not in output:
                    output.add(helper)
                    frontier.append(helper)
        return candidate.method in output

    def _buffer_of(self, candidate: _Candidate) -> tuple[str, str] | None:
        """(function, replay buffer) when the call sits in a function given as a buffer's ``transform=``."""
        for name in reversed(candidate.functions):
            if name in self._buffer_functions:
                return name, self._buffer_functions[name]
        for lam in reversed(candidate.lambdas):
            if lam in self._buffer_lambdas:
                return "lambda", self._buffer_lambdas[lam]
        if candidate.called_class in self._buffer_classes:
            name = candidate.called_class.rpartition(".")[2]
            return f"{name}.__call__", self._buffer_classes[candidate.called_class]
        return None

    @classmethod
    def resolve(cls, requirement: Requirement, index: ProjectIndex, path: str,
                options: Mapping[str, Any]) -> dict[str, str] | None:
        if isinstance(requirement, UnplacedFactory):
            if requirement.transform is not None and not index.derives_from(requirement.transform, is_torchrl_transform,
                                                                             near=path):
                return None
            factory = _member_method(requirement, index, path) if requirement.member else requirement.factory
            builder = index.unplaced_tensordict(factory, path) if factory is not None else None
            if builder is None:
                return None
            name = builder.qualname.rpartition(".")[2]
            through = "" if name == requirement.factory.rpartition(".")[2] else f"in `{name}` "
            return {"built": f"{through}at {_definition(builder)}"}
        if not isinstance(requirement, IsTransform):
            return super().resolve(requirement, index, path, options)
        return {} if index.derives_from(requirement.qualname, is_torchrl_transform, near=path) else None

    def _may_be_transform(self, qualname: str, depth: int = 0) -> bool:
        """False when the class provably derives from no transform: every base, followed through this
        file's classes, is a library class that is not one. Saves the index a question (and the file
        a position pass) for the many classes that build TensorDicts and are not transforms."""
        cls = self.ctx.facts.classes.get(qualname)
        if cls is None or depth > 16:
            return True
        for base in cls.bases:
            if is_torchrl_transform(base):
                return True
            if base in self.ctx.facts.classes:
                if self._may_be_transform(base, depth + 1):
                    return True
            elif not base.startswith(_NEVER_TRANSFORMS):
                return True
        return False

    def _enclosing_method(self) -> cst.FunctionDef | None:
        """The method of the innermost class that the traversal is in, nested functions included."""
        return self.ctx.enclosing_method()

    # ----- the fix -----
    def _current_method(self) -> cst.FunctionDef | None:
        """The method the call is directly in (not in a nested function or lambda)."""
        return None if self._lambdas else self.ctx.current_method()

    def _method_parameters(self) -> list[str]:
        """The method's parameters known to hold the TensorDict it works on, the primary one first."""
        method = self._current_method()
        if method is None or self.ctx.self_name() is None:
            return []
        ordered = [*method.params.posonly_params, *method.params.params]
        known = []
        count = TRANSFORM_TENSORDICT_METHODS.get(method.name.value, 0)
        known += ordered[1:1 + count]
        known += [p for p in (*ordered[1:], *method.params.kwonly_params) if self._annotated_tensordict(p)]
        return self._usable(known)

    def _function_parameters(self) -> list[str]:
        """For a plain function given as a replay buffer's ``transform=``: its first parameter."""
        if self._lambdas or not self._function_nodes or self.ctx.scope_node is not self._function_nodes[-1]:
            return []
        function = self._function_nodes[-1]
        ordered = [*function.params.posonly_params, *function.params.params]
        known = ordered[:1] + [p for p in (*ordered, *function.params.kwonly_params) if self._annotated_tensordict(p)]
        return self._usable(known)

    def _annotated_tensordict(self, param: cst.Param) -> bool:
        return param.annotation is not None and is_tensordict_type(self.ctx.qualname(param.annotation.annotation) or "")

    def _usable(self, params: list[cst.Param]) -> list[str]:
        """Names of parameters still bound to the argument (not rebound, no None default), in order."""
        names: list[str] = []
        for param in params:
            name = param.name.value
            binding = self.ctx.lookup(name)
            if name in names or is_none(param.default) or binding is None or binding.value is not None or binding.opaque:
                continue
            names.append(name)
        return names

    def _fix(self, call: cst.Call, params: list[str]) -> Fix | None:
        if not params:
            return None
        source = _read_only_from(call, params, lambda c: is_tensordict_class(self.ctx.callee(c) or ""))
        param = source or params[0]
        device = cst.Attribute(cst.Name(param), cst.Name("device"))
        edit = _device_edit(call, device)
        if source is not None:
            description = f"Add `device={param}.device` (every value is read from `{param}`)"
            return Fix("safe", description, (edit,))
        description = (f"Add `device={param}.device`; unsafe: values that do not come from `{param}` "
                       f"(or are added later) are then moved to its device")
        return Fix("unsafe", description, (edit,))


def _member_method(requirement: UnplacedFactory, index: ProjectIndex, path: str) -> str | None:
    """``module.Pairer.build`` for ``self.pairer.build``: every assignment of ``self.pairer`` builds one
    class (or calls one factory of the project that builds it); None otherwise."""
    assert requirement.member is not None
    callees = {fact.callee for fact in attr_facts(index, *requirement.member, path)}
    if len(callees) != 1 or None in callees:
        return None
    callee = callees.pop()
    assert callee is not None
    built = index.built_class(callee, path)
    return f"{built[0] if built else callee}.{requirement.factory}"


def _definition(function: FunctionFacts) -> str:
    """``path:line`` of the function's ``def`` (the path as reports name files; the line when found)."""
    line = definition_line(function.path, function.qualname)
    return f"{display_path(function.path)}:{line}" if line else display_path(function.path)


def _device_missing(call: cst.Call) -> bool | None:
    """None when the call sets a device (or may: ``**kwargs``, ``*args``); else whether ``None`` is written out."""
    if has_star_kwargs(call) or any(arg.star == "*" for arg in call.args):
        return None
    device = keyword(call, "device")
    if device is not None:
        return True if is_none(device.value) else None
    args = positional(call)
    if len(args) >= 3:
        return True if is_none(args[2].value) else None
    return False


def _values(call: cst.Call) -> list[cst.BaseExpression]:
    """What the call puts into the new TensorDict: its source and any keyword entries."""
    args = positional(call)
    source = keyword(call, "source")
    values = [args[0].value] if args else [source.value] if source is not None else []
    values += [arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value not in _CONSTRUCTOR_KEYWORDS]
    return values


def _read_only_from(call: cst.Call, params: list[str], is_tensordict: Callable[[cst.Call], bool]) -> str | None:
    """The parameter every value of the new TensorDict is read from, if there is one."""
    leaves = _leaves(call, is_tensordict)
    if not leaves:
        return None  # an empty TensorDict is filled later, with values from anywhere
    for param in params:
        if all(_is_read_from(leaf, param) for leaf in leaves):
            return param
    return None


def _leaves(call: cst.Call, is_tensordict: Callable[[cst.Call], bool]) -> list[cst.BaseExpression]:
    """The values a TensorDict call puts in, looking into dict literals and nested TensorDict calls.
    A ``**`` entry is kept as a leaf of its own (it is never a plain read)."""
    found: list[cst.BaseExpression] = []
    stack: list[cst.BaseExpression] = list(reversed(_values(call)))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Dict):
            for element in reversed(node.elements):
                stack.append(element.value)
        elif isinstance(node, cst.Call) and is_tensordict(node):
            stack.extend(reversed(_values(node)))
        else:
            found.append(node)
    return found


def _is_read_from(node: cst.BaseExpression, param: str) -> bool:
    """``param[key]``, ``param[a][b]`` or ``param.get(key)``."""
    if isinstance(node, cst.Subscript):
        return _is_param(node.value, param) or (isinstance(node.value, cst.Subscript) and _is_read_from(node.value, param))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _READ_METHODS:
        return _is_param(node.func.value, param)
    return False


def _handles_data(method: cst.FunctionDef) -> bool:
    """Whether a transform's method can hand data downstream (not static, not (de)serialisation or specs)."""
    name = method.name.value
    if name in _NOT_DATA_METHODS or (name.startswith("transform_") and name.endswith("_spec")):
        return False
    return not any(
        isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod") for d in method.decorators
    )


def _is_param(node: cst.BaseExpression, param: str) -> bool:
    return isinstance(node, cst.Name) and node.value == param


def _device_edit(call: cst.Call, device: cst.BaseExpression) -> Edit:
    """Set ``device=`` on the call: replace a written ``None``, or append the keyword after the last argument."""
    written = keyword(call, "device")
    if written is not None:
        return Edit(written.value, device)
    args = positional(call)
    if len(args) >= 3:
        return Edit(args[2].value, device)
    new = cst.Arg(
        keyword=cst.Name("device"),
        value=device,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if not call.args:
        return Edit(call, call.with_changes(args=[new]))
    last = call.args[-1]
    separator = _separator(call)
    if isinstance(last.comma, cst.Comma):
        # A trailing comma stays trailing: the new argument takes it, and its own line if the call has one per line.
        closing = last.comma.whitespace_after
        if isinstance(closing, cst.ParenthesizedWhitespace) and isinstance(separator, cst.ParenthesizedWhitespace):
            kept = last.comma.with_changes(whitespace_after=closing.with_changes(indent=separator.indent, last_line=separator.last_line))
            trailing = cst.Comma(whitespace_after=closing.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=()))
            new = new.with_changes(comma=trailing, whitespace_after_arg=last.whitespace_after_arg)
            last = last.with_changes(comma=kept, whitespace_after_arg=cst.SimpleWhitespace(""))
        else:
            new = new.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
            last = last.with_changes(comma=cst.Comma(whitespace_after=separator), whitespace_after_arg=cst.SimpleWhitespace(""))
    else:
        new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(comma=cst.Comma(whitespace_after=separator), whitespace_after_arg=cst.SimpleWhitespace(""))
    return Edit(call.args[-1], cst.FlattenSentinel([last, new]))


def _separator(call: cst.Call) -> cst.SimpleWhitespace | cst.ParenthesizedWhitespace:
    """The whitespace that goes before a new argument: a new line when the arguments have one each."""
    before: Any = call.whitespace_before_args
    if len(call.args) >= 2 and isinstance(call.args[-2].comma, cst.Comma):
        before = call.args[-2].comma.whitespace_after
    if isinstance(before, cst.ParenthesizedWhitespace):
        return before.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    return cst.SimpleWhitespace(" ")
