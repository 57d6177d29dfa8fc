"""RLG004 tensordict-without-device: a TensorDict built with no device inside a TorchRL transform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Mapping

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Fix, Requirement, display_path
from rlguard.engine.index import FunctionFacts, ProjectIndex
from rlguard.engine.call_edits import keyword_edit
from rlguard.engine.reach import (
    argument_slots,
    bound_once,
    called_callables,
    may_derive_from,
    member_class,
    moves_device,
    origin_calls,
    returned_methods,
    tensordict_receiver,
)
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
from rlguard.engine.class_lookup import may_be_project
from rlguard.engine.matching import has_star_kwargs, is_none, keyword, positional
from rlguard.engine.prefilter import called

if TYPE_CHECKING:
    from rlguard.engine.context import FileContext

# Keywords of the TensorDict constructor that are not entries of the new TensorDict.
_CONSTRUCTOR_KEYWORDS = frozenset({"source", "batch_size", "device", "names", "non_blocking", "lock"})
# ``td.get(key)`` and friends read an entry of ``td``.
_READ_METHODS = frozenset({"get", "get_nested"})
# Stacking TensorDicts keeps their (missing) device.
_STACKS = frozenset({"torch.stack", "torch.cat", "tensordict.lazy_stack", "tensordict.stack"})
# ``other.update(TensorDict(...))``: the entries are cast to ``other``'s device; the new TensorDict is not kept.
_MERGE_METHODS = frozenset({"update", "update_", "set", "set_", "update_at_", "set_at_"})
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
class GivenToBuffer(Requirement):
    """The argument ``slot`` (position or keyword) of a call of the project callable ``callee`` reaches a
    replay buffer's ``transform=`` (``ProjectIndex.argument_reaches``): a factory of buffers that takes
    ``transform`` or passes on ``**kwargs``."""

    callee: str
    slot: int | str


@dataclass(frozen=True)
class UnplacedFactory(Requirement):
    """Every return of the project function or method ``factory`` gives a TensorDict built with no
    device (``ProjectIndex.unplaced_tensordict``), ``transform`` (when given) is a torchrl Transform, and
    ``buffer`` (when given) holds."""

    factory: str  # a qualified name; with ``member``, the name of the method called on it
    transform: str | None
    member: tuple[str, str] | None = None  # (class, attribute): the method is called on ``self.<attribute>``
    buffer: GivenToBuffer | None = None


# A replay buffer a callable is given to: its class's name (or a placeholder the index fills), and what
# the index must confirm when the callable reaches it through a function of the project.
_Buffer = tuple[str, "GivenToBuffer | None"]


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
        "`transform=` to a `torchrl.data` replay buffer, directly or through a function of the project that "
        "hands its `transform=` argument (or its `**kwargs`) on to one. A function of another file given so "
        "is reported at the call that gives it, naming where it builds the TensorDict. What such a place returns from a "
        "function of the project (in the same file or another), a method of another project class, a "
        "helper inherited from a base class of the project or a static or class method is followed too, "
        "also through methods that return the TensorDict itself (`build(td).update(rest)`): when "
        "every `return` of that factory gives a `TensorDict(...)` (or `TensorDict.from_dict(...)`) it builds "
        "with no device, directly, through a name bound once, through methods that keep the device "
        "(`.clone()`, `.select(...)`) or through another such factory, the call in the transform is reported "
        "and the message names the factory's file and line. A factory that is given the device and passes "
        "it, returns `.to(device)`, has returns that differ, may end without returning, or calls itself is "
        "not reported; nor is a function the project does not define. A transform's file that builds no "
        "TensorDict itself is checked when its imports reach a function or class of the project whose text "
        "builds one, itself or through a function it calls (two calls deep), also when it is checked alone. "
        "The `whole-transform` option extends "
        "it to the whole class (`__init__`, other helpers). A call with `**kwargs` may carry a device and is not "
        "reported; `device=None` written out is.\n\n"
        "Not reported, because the device-less TensorDict is not what goes downstream: one given a device "
        "right away (`TensorDict(...).to(device)`); one set or merged straight into another TensorDict "
        "(`td.set(key, TensorDict(...))`, `td.update(TensorDict(...))`, `td[key] = TensorDict(...)`), whose "
        "entries then take that TensorDict's device; and one built in a static or class method that no "
        "data method returns, in "
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
    tokens = ((*called("TensorDict"), "TensorDict.from_dict("), ("transform=", "transform ="))
    # A transform (group 1) that builds no TensorDict itself may call a project factory, a base class's
    # helper or a classmethod in another file that does: ``make_buffer(transform=to_pairs)`` with
    # ``to_pairs`` imported, ``return make_pairs(td)`` in a transform's ``_call``.
    # A factory file that imports ``TensorDict as TD`` builds with ``TD(``: any call there may be one.
    through_imports = (1, (("TensorDict(", "TensorDict (", "TensorDict.from_dict(", ("TensorDict as", "(")),))
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
        self._candidates: list[_Candidate] = []
        self._buffer_functions: dict[str, _Buffer] = {}  # function name -> replay buffer it was given to
        self._buffer_lambdas: dict[int, _Buffer] = {}  # id(lambda) -> replay buffer
        self._buffer_classes: dict[str, _Buffer] = {}  # class whose instances were given -> replay buffer
        self._own_helpers: set[tuple[str, str]] = set()  # (class, method) followed here: not static nor class
        self._kept_elsewhere: set[int] = set()  # calls given a device right away, or merged into another TensorDict
        # A new TensorDict is the output when it is returned: inside a ``return`` (or a lambda's body),
        # or bound to a local name (kept through ``x = x.method(...)``) that is returned.
        self._in_return = 0
        self._returned: set[int] = set()  # ids of candidate calls
        self._by_id: dict[int, _Candidate] = {}

    # ----- where the output is built -----
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        cls = self.ctx.method_class()
        if cls is not None and _handles_data(node):
            self._own_helpers.add((cls.qualname, node.name.value))

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._factory_call(tensordict_receiver(node.body))

    def _in_definition(self) -> bool:
        """In a class, a function or a lambda: where a transform's code may be."""
        return self.ctx.current_class is not None or bool(self.ctx.enclosing_functions() or self.ctx.lambdas)

    def visit_Assign(self, node: cst.Assign) -> None:
        # ``td[key] = TensorDict(...)`` stores the entries in ``td``, cast to its device.
        if isinstance(node.value, cst.Call) and any(isinstance(t.target, cst.Subscript) for t in node.targets):
            self._kept_elsewhere.add(id(node.value))

    def _returned_calls(self, node: cst.BaseExpression) -> set[int]:
        """Candidate calls a returned expression may be, or be derived from (``reach.origin_calls``)."""
        calls = origin_calls(node, self.ctx, lambda call: id(call) in self._by_id, lambda call: moves_device(call, self.ctx),
                             lambda call: _stacked(call, self.ctx))
        return {id(call) for call in calls}

    def leave_Return(self, node: cst.Return) -> None:
        self._in_return -= 1

    def visit_Return(self, node: cst.Return) -> None:
        self._in_return += 1
        if node.value is not None:
            self._returned |= self._returned_calls(node.value)
            self._factory_call(tensordict_receiver(bound_once(node.value, self.ctx)))

    # ----- calls -----
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if isinstance(func.value, cst.Call) and moves_device(node, self.ctx):  # ``TensorDict(...).to(device)``
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
                self._given_as_transform(transform.value, (qualname.rpartition(".")[2], None))
        elif may_be_project(qualname):  # a factory of buffers may hand an argument on as ``transform=``
            for slot, arg in argument_slots(node):
                if slot != "**":
                    self._given_as_transform(arg, ("{buffer}", GivenToBuffer(qualname, slot)))

    def _given_as_transform(self, value: cst.BaseExpression, buffer: _Buffer) -> None:
        """Record what a replay buffer will call on its samples (``reach.called_callables``)."""
        tables: dict[str, dict[Any, _Buffer]] = {"function": self._buffer_functions, "lambda": self._buffer_lambdas, "instance": self._buffer_classes}
        for kind, key in called_callables(value, self.ctx, _spreads):
            _given(tables[kind], id(key) if kind == "lambda" else key, buffer)
        if isinstance(value, cst.Name):
            imported = self.ctx.qualname(value)
            if imported is not None and may_be_project(imported) and imported.rpartition(".")[0] != self.ctx.module:
                self._imported_transform(value, imported, buffer)

    def _imported_transform(self, value: cst.Name, function: str, buffer: _Buffer) -> None:
        """A function of another file of the project given as a buffer's transform: reported here, where
        it is given, when the index says every return of it is a TensorDict built with no device."""
        owner, given = buffer
        message = (f"`{value.value}`, a `{owner}` transform, gives a `TensorDict` without a device: "
                   f"{_WHY_DOWNSTREAM}")
        self.report(value, message, remedy=_FACTORY_ADVICE, requires=(UnplacedFactory(function, None, None, given),))

    def _tensordict_call(self, node: cst.Call) -> None:
        if not self._in_definition():
            return
        written_none = _device_missing(node)
        if written_none is None or id(node) in self._kept_elsewhere:
            return
        self._add_candidate(node, written_none, None)

    def _factory_call(self, node: cst.BaseExpression) -> None:
        """A returned call of a project function or method (``self.<helper>(...)`` too: the index finds
        it along the MRO; one the class defines itself is followed here, see ``_own_helpers``): whether
        it gives a device-less TensorDict, the complete index says."""
        if not isinstance(node, cst.Call) or not self._in_definition() or id(node) in self._by_id:
            return
        factory = self.ctx.callee(node)
        if factory is None and isinstance(node.func, cst.Attribute):
            receiver = node.func.value
            attr, cls = self.ctx.is_self_attr(receiver), self.ctx.current_class
            if attr is not None and cls is not None:  # ``self.pairer.build(td)``: the index knows ``self.pairer``
                self._add_candidate(node, False, node.func.attr.value, (cls.qualname, attr))
                self._returned.add(id(node))
                return
            owner = cls.qualname if cls is not None and self.ctx.self_class(receiver) is cls else self.ctx.class_of(receiver)
            factory = f"{owner}.{node.func.attr.value}" if owner is not None else None
        if factory is not None and may_be_project(factory) and not is_tensordict_class(factory):
            self._add_candidate(node, False, factory)
            self._returned.add(id(node))

    def _add_candidate(self, node: cst.Call, written_none: bool, factory: str | None,
                       member: tuple[str, str] | None = None) -> None:
        cls = self.ctx.current_class
        method = self.ctx.enclosing_method()
        functions = tuple(function.name.value for function in self.ctx.enclosing_functions())
        called_class = cls.qualname if cls is not None and method is not None and method.name.value == "__call__" \
            else None
        if cls is not None and not may_derive_from(self.ctx.facts.classes, cls.qualname, is_torchrl_transform):
            cls = None
        if cls is not None and method is not None and not _handles_data(method):
            cls = None  # a static method or (de)serialisation: not the transform's data
        if cls is None and not functions and not self.ctx.lambdas and called_class is None:
            return
        direct = self._current_method() is not None
        if self._in_return or self.ctx.lambdas:
            self._returned.add(id(node))
        self._candidates.append(
            _Candidate(
                call=node,
                written_none=written_none,
                class_qualname=cls.qualname if cls is not None else None,
                class_name=cls.name if cls is not None else "",
                method=method.name.value if method is not None else None,
                functions=functions,
                lambdas=tuple(id(lam) for lam in self.ctx.lambdas),
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
            if candidate.factory is not None and tuple(candidate.factory.rsplit(".", 1)) in self._own_helpers:
                continue  # a helper the class defines, whose own TensorDicts are candidates
            buffer = self._buffer_of(candidate)
            what = "`TensorDict(..., device=None)`" if candidate.written_none else "`TensorDict(...)` without a device"
            if candidate.factory is not None:
                self._report_factory(candidate, buffer)
            elif buffer is not None:
                where, (owner, given) = buffer
                message = f"{what} in `{where}`, a `{owner}` transform: {_WHY_DOWNSTREAM}"
                direct = bool(candidate.functions) and where == candidate.functions[-1]
                self.report(candidate.call, message, remedy=_ADVICE, fix=candidate.function_fix if direct else None,
                            requires=(given,) if given is not None else ())
            elif candidate.class_qualname is not None and self._builds_output(candidate):
                message = f"{what} in the transform `{candidate.class_name}`: {_WHY_DOWNSTREAM}"
                self.report(candidate.call, message, remedy=_ADVICE, fix=candidate.class_fix,
                            requires=(IsTransform(candidate.class_qualname),))

    def _report_factory(self, candidate: _Candidate, buffer: tuple[str, _Buffer] | None) -> None:
        """A returned call of a project factory: the finding stands if the index says every return of
        the factory is a device-less TensorDict. No fix: the TensorDict is built in the factory."""
        assert candidate.factory is not None
        name = candidate.factory.rpartition(".")[2]
        tail = f"a `TensorDict` without a device: {_WHY_DOWNSTREAM}"
        if buffer is not None:
            where, (owner, given) = buffer
            message = f"`{name}(...)` gives `{where}`, a `{owner}` transform, {tail}"
            requires = (UnplacedFactory(candidate.factory, None, candidate.member, given),)
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
        return candidate.method in returned_methods(self.ctx.facts.functions, candidate.class_qualname,
                                                    TRANSFORM_TENSORDICT_METHODS)

    def _buffer_of(self, candidate: _Candidate) -> tuple[str, _Buffer] | None:
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
        if isinstance(requirement, GivenToBuffer):
            buffer = index.argument_reaches(requirement.callee, requirement.slot, _takes_transform, path)
            return {"buffer": buffer.rpartition(".")[2]} if buffer is not None else None
        if isinstance(requirement, UnplacedFactory):
            if requirement.transform is not None and not index.derives_from(requirement.transform, is_torchrl_transform,
                                                                             near=path):
                return None
            given = cls.resolve(requirement.buffer, index, path, options) if requirement.buffer is not None else {}
            if given is None:
                return None
            factory: str | None = requirement.factory
            if requirement.member is not None:  # ``self.pairer.build``: ``module.Pairer.build``
                owner = member_class(index, *requirement.member, path)
                factory = f"{owner}.{factory}" if owner is not None else None
            builder = index.unplaced_tensordict(factory, path) if factory is not None else None
            if builder is None:
                return None
            name = builder.qualname.rpartition(".")[2]
            through = "" if name == requirement.factory.rpartition(".")[2] else f"in `{name}` "
            return {**given, "built": f"{through}at {_definition(builder)}"}
        if not isinstance(requirement, IsTransform):
            return super().resolve(requirement, index, path, options)
        return {} if index.derives_from(requirement.qualname, is_torchrl_transform, near=path) else None

    # ----- the fix -----
    def _current_method(self) -> cst.FunctionDef | None:
        """The method the call is directly in (not in a nested function or lambda)."""
        return None if self.ctx.lambdas else self.ctx.current_method()

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
        functions = self.ctx.enclosing_functions()
        if self.ctx.lambdas or not functions or self.ctx.scope_node is not functions[-1]:
            return []
        function = functions[-1]
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
        edit = keyword_edit(call, "device", device, position=2)  # TensorDict(source, batch_size, device)
        if source is not None:
            description = f"Add `device={param}.device` (every value is read from `{param}`)"
            return Fix("safe", description, (edit,))
        description = (f"Add `device={param}.device`; unsafe: values that do not come from `{param}` "
                       f"(or are added later) are then moved to its device")
        return Fix("unsafe", description, (edit,))


def _stacked(call: cst.Call, ctx: FileContext) -> cst.BaseExpression | None:
    """``torch.stack(tds)``: stacking device-less TensorDicts gives one without a device too."""
    args = positional(call) if ctx.callee(call) in _STACKS else []
    return args[0].value if args else None


def _takes_transform(callee: str, keyword: int | str) -> bool:
    """The sink of a buffer factory's argument: a replay buffer's ``transform=``."""
    return keyword == "transform" and is_replay_buffer(callee)


def _given(table: dict, key: Any, buffer: _Buffer) -> None:
    """Record the buffer a callable was given to; one it was given to directly wins over one reached
    through a function of the project, which the index must confirm."""
    if key not in table or table[key][1] is not None:
        table[key] = buffer


def _spreads(callee: str) -> bool:
    """``Compose(a, b)``: a transform that calls each transform it is given."""
    return callee.rpartition(".")[2] == "Compose" and is_torchrl_transform(callee)


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
