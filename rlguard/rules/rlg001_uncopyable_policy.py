"""RLG001 uncopyable-policy: a policy that cannot be deep-copied reaches a deep copy.

Two halves. The visitor finds deep-copy sites (``copy.deepcopy``, collectors that copy or pickle
their policy, losses that copy their networks) and what the copied expression is, as the engine
answers it (an instance of a class built with some arguments, ``self.attr``, what a factory returns);
it reports them with requirements. ``resolve`` states the requirement (a member holding a value that
``engine/uncopyable.json`` says cannot be copied) and asks the engine's member model
(``engine/members.py``) for the member and where it was set.
"""

from __future__ import annotations

import os
import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import Any
from collections.abc import Iterator, Mapping

from rlguard.engine.lazy import cst

from rlguard import advice
from rlguard.advice import remedy
from rlguard.engine.findings import Requirement, display_path
from rlguard.engine.prefilter import called
from rlguard.engine.devices import DEVICE_MOVES, Placement, devices_of, literal_device, moved_to, placement
from rlguard.engine.index import ClassFacts, ProjectIndex
from rlguard.engine.members import Args, Search, attribute_holding, instance_holding, returned_holding
from rlguard.engine.names import dotted_name
from rlguard.engine.uncopyable import uncopyable
from rlguard.rules.base import Example, Option, Rule
from rlguard.rules.data import (
    ALL_LOSSES_COPY_BEFORE,
    COPY_HOOKS,
    DEEPCOPYING_LOSSES,
    LOSS_NETWORK_PARAMETERS,
    MODULE_METHODS_RETURNING_SELF,
    MULTI_PROCESS_COLLECTORS,
    POLICY_WRAPPERS,
    SINGLE_PROCESS_COLLECTORS,
    UNCOPYABLE_ALIASES,
    UNCOPYABLE_MARKERS,
    is_torchrl_loss,
)
from rlguard.engine.containers import literal_items
from rlguard.engine.matching import has_star_kwargs, is_none, keyword, positional
from rlguard.engine.reach import argument_slots

DEEPCOPY = "copy.deepcopy"
COLLECTOR_PREFIX = "torchrl.collectors."
# Keywords under which the wrappers of POLICY_WRAPPERS take the modules they hold.
WRAPPER_KEYWORDS = frozenset({"module", "modules", "td_module", "policy_operator", "value_operator", "common_operator"})
# Keywords under which torchrl losses take networks (actor_network, value_network, world_model, ...).
LOSS_NETWORK_SUFFIXES = ("network", "model", "model_based_env")
LOSS_NETWORK_KEYWORDS = frozenset({"actor", "critic"})
# ``Collector(..., backend=...)`` values that run the policy in other processes (torchrl >= 0.14).
REMOTE_BACKENDS = frozenset({"process", "ray", "rpc", "distributed", "submitit"})
_MAX_DEPTH = 8  # how far names and wrappers are followed
# Pickling (multi-process collectors) ignores ``__deepcopy__``: only these hooks make a class picklable.
PICKLE_HOOKS = COPY_HOOKS - {"__deepcopy__"}
# torchrl 0.14.1's Collector deep-copies its policy only when a parameter's device differs from
# ``torch.device(policy_device)`` (``BaseCollector._get_policy_and_device``): see ``engine/devices.py``.

# The ways out, per kind of deep-copy site (shared with rlguard.runtime's messages); ``{holder}``
# is filled in when the index confirms the finding.
_FIX_DEEPCOPY = remedy(advice.DEEPCOPY)
_FIX_PICKLE = remedy(advice.PICKLE)
_FIX_STATEFUL = remedy(advice.STATEFUL)
# Losses whose value estimator, not their constructor, copies the network.
_ESTIMATOR_COPIES = frozenset({"DiscreteCQLLoss"})
# The first line: "`{holder}` cannot be <verb> <by what>: `{member}` holds {what}". Where the member
# is set leads the remedy line, so the first line stays short and the advice stays the runtime's text.
_CAUSE = ": `{member}` holds {what}"
_SET_AT = "set at {where}. "


@dataclass(frozen=True)
class Uncopyable(Requirement):
    """An instance of ``qualname`` (what it returns, for a function) holds a member that cannot be
    deep-copied, or pickled with ``pickled``."""

    qualname: str
    pickled: bool = False
    args: Args = ()  # (position or keyword, class) of the arguments of the call that built it


@dataclass(frozen=True)
class UncopyableAttr(Requirement):
    """``self.<attr>`` of an instance of ``cls`` cannot be deep-copied (or pickled)."""

    cls: str
    attr: str
    pickled: bool = False


@dataclass(frozen=True)
class UncopyableItem(Requirement):
    """Item ``position`` of the tuple that ``callee`` returns cannot be deep-copied (or pickled)."""

    callee: str
    position: int
    pickled: bool = False


PolicyRequirement = Uncopyable | UncopyableAttr | UncopyableItem


@dataclass(frozen=True)
class PassedToCopy(Requirement):
    """``policy`` holds when argument ``slot`` of a call of the project callable ``callee`` reaches a deep
    copy (or a pickling) inside it (``ProjectIndex.argument_reaches``, with ``_copies`` as the sink)."""

    callee: str
    slot: int | str
    policy: PolicyRequirement


def _alias(callee: str) -> str:
    for prefix, replacement in UNCOPYABLE_ALIASES.items():
        if callee.startswith(prefix):
            return replacement + callee[len(prefix):]
    return callee


def _user_types(options: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(options.get("uncopyable-types", ()) or ())


@cache
def _search(user_types: tuple[str, ...], pickled: bool) -> Search:
    """The requirement, as the member model is asked it: a member holding a value that cannot be
    deep-copied (or pickled, for a policy sent to other processes), in a class with no copy hook of
    its own (pickling ignores ``__deepcopy__``) that is not marked ``uncopyable``."""
    hooks = PICKLE_HOOKS if pickled else COPY_HOOKS

    def what(callee: str) -> str | None:
        if callee in user_types:
            return f"a `{callee}` (in `uncopyable-types`)"
        return uncopyable(_alias(callee), pickled)

    def stops(facts: ClassFacts) -> bool:
        return bool(facts.methods & hooks or UNCOPYABLE_MARKERS.intersection(facts.decorators))

    wrappers = dict.fromkeys(POLICY_WRAPPERS, WRAPPER_KEYWORDS)
    return Search(what, stops, UNCOPYABLE_MARKERS, wrappers, MODULE_METHODS_RETURNING_SELF)


def _where(defined_in: str, line: int, reported_in: str) -> str:
    """``line N`` in the reported file; elsewhere the path as findings name files (relative to the
    working folder), so an editor or terminal can open it."""
    if os.path.abspath(defined_in) == os.path.abspath(reported_in):
        return f"line {line}" if line else "this file"
    return f"{display_path(defined_in)}:{line}" if line else display_path(defined_in)


def _short(qualname: str) -> str:
    return qualname.rpartition(".")[2]


def _copies(callee: str, slot: int | str) -> bool:
    """The sinks of a value handed to a project callable: the object of ``copy.deepcopy``, the policy of
    a multi-process collector (pickled), a network of a loss that copies its networks."""
    name = _short(callee)
    if callee == DEEPCOPY:
        return slot in (0, "x")
    if callee.startswith(COLLECTOR_PREFIX) and name in MULTI_PROCESS_COLLECTORS:
        return slot in (1, "policy")
    if is_torchrl_loss(callee) and name in DEEPCOPYING_LOSSES:
        return _is_network_keyword(slot) if isinstance(slot, str) else slot < len(LOSS_NETWORK_PARAMETERS.get(name, ()))
    return False


def _copied_by(sink: str) -> tuple[bool, str, str]:
    """(pickled, how, remedy) for a sink ``_copies`` accepts: the words a finding uses for it."""
    name = _short(sink)
    if sink == DEEPCOPY:
        return False, "cannot be deep-copied by `copy.deepcopy`", _FIX_DEEPCOPY
    if name in MULTI_PROCESS_COLLECTORS:
        return True, f"cannot be pickled to `{name}`'s workers", _FIX_PICKLE
    fix = remedy(advice.ESTIMATOR if name in _ESTIMATOR_COPIES else advice.LOSS)
    return False, f"cannot be deep-copied by `{name}` (it copies its networks)", fix


def _is_network_keyword(name: str) -> bool:
    return name.endswith(LOSS_NETWORK_SUFFIXES) or name in LOSS_NETWORK_KEYWORDS


def _loss_networks(call: cst.Call, loss: str, network: str | None = None) -> list[cst.BaseExpression]:
    """The networks a loss constructor is given; with ``network``, only that one (or none, if unknown)."""
    if network is not None:
        named = keyword(call, network)
        if named is not None:
            return [named.value]
        order = LOSS_NETWORK_PARAMETERS.get(loss, ())
        args = positional(call)
        if network in order and order.index(network) < len(args) and not any(a.star for a in call.args):
            return [args[order.index(network)].value]
        return []
    return [arg.value for arg in call.args
            if not arg.star and (arg.keyword is None or _is_network_keyword(arg.keyword.value))]


class UncopyablePolicy(Rule):
    code = "RLG001"
    name = "uncopyable-policy"
    summary = "A policy that cannot be deep-copied (it holds a lock, queue, file, device handle, ...) reaches a deep copy"
    why = (
        "TorchRL copies policies more often than it says. `copy.deepcopy` is the obvious case, but a "
        "`Collector` given `policy_device=` or `device=` deep-copies the policy to move it (the one a "
        "`policy_factory=` builds too) whenever a parameter's device differs from "
        "`torch.device(policy_device)`: `torch.device(\"cpu\")` and `torch.device(\"cpu:0\")` differ, "
        "and a CPU parameter's device is `cpu`; "
        "multi-process and distributed collectors (`MultiSyncCollector`, `MultiAsyncCollector`, "
        "`AsyncCollector`, `DistributedCollector`, ...) pickle it to their workers, `DDPGLoss`, "
        "`DiscreteCQLLoss`, `QMixerLoss` and `loss.get_stateful_net(...)` deep-copy networks, and "
        "before torchrl 0.5 every loss constructor did (`convert_to_functional`). A module that "
        "stores a thread or process lock, a queue, an executor, a thread, a socket, a subprocess, an "
        "open file, a memory map, a sqlite3 connection, a logging handler, a selector or a generator "
        "as `self.x = ...` cannot be "
        "copied: the copy raises `TypeError: cannot pickle '_thread.lock' object` (or a "
        "`RuntimeError` for multiprocessing objects), often far from the code that built the policy. "
        "Which values cannot be copied is not a list someone wrote: rlguard builds each candidate "
        "(`threading.Lock()`, `sqlite3.connect(...)`, `open(...)`, ...), tries `copy.deepcopy` and "
        "`pickle.dumps` on it and ships what failed (`rlguard/engine/uncopyable.json`); a value is known "
        "by the call that builds it or by its annotated type (`conn: sqlite3.Connection`).\n\n"
        "A class is uncopyable when some method assigns `self.x` such a value (a constructor argument "
        "stored as `self.x = x` or `self.x = options[\"x\"]` holds what the call passed; a dataclass or "
        "attrs field holds its argument or its default; `self.a, self.b = make()` holds the items of what "
        "`make` returns; a member created on first use, under `if self.x is None:` outside the "
        "constructor, is not held by a fresh instance, but reading it, or a property caching it, gives it), "
        "or an instance of "
        "another uncopyable class of the project (the message then names the path, e.g. "
        "`self.camera.lock`), or a container holding one (`self.handles = {\"cam\": threading.Lock()}`, "
        "lists, tuples, sets, `dict(...)`, `nn.ModuleList(...)`: the path is then `self.handles[\"cam\"]`), "
        "and neither it nor a base defines `__deepcopy__`, `__getstate__`, "
        "`__reduce__` or `__reduce_ex__` (where the policy is pickled, `__deepcopy__` does not count: "
        "pickling ignores it), and it is not marked `@rlguard.runtime.uncopyable`. An "
        "expression is such a policy when it builds the class, is a name or `self.attr` bound to one, "
        "is what a function or method of the project returns (in any file), "
        "or wraps one (`TensorDictModule`, `TensorDictSequential`, `ProbabilisticActor`, `Actor`, "
        "`ValueOperator`, `QValueActor`, `nn.Sequential`, `nn.ModuleList`, ...).\n\n"
        "Such a policy handed to a function, method or class of the project (in any file) that deep-copies "
        "it (`copy.deepcopy`, a loss that copies its networks) or pickles it (a multi-process collector), "
        "itself or through the functions it passes it on to (by position, keyword or `**kwargs`), or that "
        "stores it as `self.x` for a method that copies `self.x`, is reported where it is handed over: "
        "`Evaluator().evaluate(policy)` with `def evaluate(self, policy): copy.deepcopy(policy)`. The calling "
        "file need not name a copy, a collector or a loss: it is checked when its imports reach such a "
        "function or class of the project, also when it is checked alone.\n\n"
        "Not reported: `copy.copy`, deep copies of dicts, configs, state dicts and lock-free "
        "sub-modules, a collector without `policy_device=`/`device=` (it uses the policy as it is) or "
        "given a literal device where the policy already is (`policy_device=\"cpu\"` for a policy built "
        "without a device and never moved, `\"cuda:1\"` for one built with `.to(\"cuda:1\")`; a device "
        "held in a variable, or a policy a function builds, may be elsewhere at run time and is reported), "
        "and an instance passed to `rlguard.runtime.uncopyable(...)`. Some handles look uncopyable but "
        "copy fine (`torch.Generator`, `logging.getLogger(...)`, `io.BytesIO`, "
        "`tempfile.SpooledTemporaryFile`, `multiprocessing.Pipe` connections): trying them says so. "
        "`ctypes.CDLL` deep-copies but cannot be pickled: it is reported only where the policy is pickled."
    )
    fix_doc = (
        "No automatic fix: only you know whether the member should be shared, rebuilt or never "
        "copied. Each finding names the ways out that remove the crash at its site.\n\n"
        "1. Give the class a `__deepcopy__` that rebuilds (or shares) the member and copies the rest:\n\n"
        "    ```python\n"
        "    def __deepcopy__(self, memo):\n"
        "        clone = type(self).__new__(type(self))\n"
        "        memo[id(self)] = clone\n"
        "        for key, value in self.__dict__.items():\n"
        "            clone.__dict__[key] = threading.Lock() if key == \"lock\" else copy.deepcopy(value, memo)\n"
        "        return clone\n"
        "    ```\n\n"
        "   Multi-process collectors pickle the policy, and pickling ignores `__deepcopy__`: there, "
        "give the class a `__getstate__` that leaves the member out and a `__setstate__` that "
        "rebuilds it, or create the member inside the worker (for example on first use).\n"
        "2. Do not hand a built policy over: pass `policy_factory=make_policy` to a multi-process or "
        "distributed collector, so each worker builds its own policy. A single-process `Collector` "
        "moves even the factory's policy to `policy_device=` by deep-copying it: there, build the "
        "policy on its device yourself and leave `policy_device=`/`device=` out.\n"
        "3. Mark the class `@rlguard.runtime.uncopyable` (or one instance, with "
        "`rlguard.runtime.uncopyable(policy)`) and call `rlguard.runtime.install()`. torchrl does "
        "not read the marker: only `install()` acts on it. Then a `Collector` runs a marked policy "
        "in place instead of copying it, `get_stateful_net` returns the loss's own network, and the "
        "value estimators of `DiscreteCQLLoss` and `VTrace` use the loss's own network, as "
        "`DQNLoss` does. The marker cannot make `copy.deepcopy`, a multi-process collector, "
        "`DDPGLoss` or `QMixerLoss` work, since they need a real copy: under `install()` they "
        "raise an error that names the member, before any worker starts or any network is touched."
    )
    options = (
        Option("uncopyable-types", list, [],
               "Qualified names of constructors whose results cannot be deep-copied, added to the "
               "built-in list (for example `mylab.hardware.Camera`)."),
    )
    # A copy site is a call (or an import under another name): a file that only names a collector (a type
    # hint, a docstring) cannot fire. A project function that copies is found through ``sinks``.
    tokens = (called("deepcopy", "Collector", "Loss", "get_stateful_net"),)
    through_imports = ("", tokens)  # ``evaluate(policy)`` of a helper of another file that copies it

    @classmethod
    def prefilter_tokens(cls, target: tuple[int, ...]) -> tuple[tuple[str, ...], ...]:
        # From torchrl 0.5 only a few losses copy: a file naming no other copy site cannot fire.
        if target < ALL_LOSSES_COPY_BEFORE:
            return cls.tokens
        return (called("deepcopy", "Collector", "get_stateful_net", *sorted(DEEPCOPYING_LOSSES)),)

    valid = (
        Example(
            "import copy\nimport threading\n\nfrom torch import nn\n\n\n"
            "class LockedNet(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(4, 2)\n"
            "        self.lock = threading.Lock()\n\n"
            "    def __deepcopy__(self, memo):\n"
            "        clone = LockedNet()\n"
            "        clone.load_state_dict(self.state_dict())\n"
            "        return clone\n\n\n"
            "target = copy.deepcopy(LockedNet())\n",
            note="A class that defines `__deepcopy__` copies by its own rules.",
        ),
        Example(
            "import threading\n\nfrom tensordict.nn import TensorDictModule\nfrom torch import nn\n"
            "from torchrl.collectors import Collector\n\n\n"
            "class LockedNet(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(3, 1)\n"
            "        self.lock = threading.Lock()\n\n\n"
            "policy = TensorDictModule(LockedNet(), in_keys=[\"observation\"], out_keys=[\"action\"])\n"
            "collector = Collector(env, policy, frames_per_batch=200, total_frames=10_000)\n",
            note="Without `policy_device=` or `device=`, the collector uses the policy as it is.",
        ),
        Example(
            "import threading\n\nfrom tensordict.nn import TensorDictModule\nfrom torch import nn\n"
            "from torchrl.collectors import Collector\n\n\n"
            "class LockedNet(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(3, 1)\n"
            "        self.lock = threading.Lock()\n\n\n"
            "policy = TensorDictModule(LockedNet(), in_keys=[\"observation\"], out_keys=[\"action\"])\n"
            "collector = Collector(env, policy, frames_per_batch=200, total_frames=10_000, policy_device=\"cpu\")\n",
            note="The policy's parameters are already on `cpu`: torchrl 0.14.1 uses it as it is (`\"cpu:0\"` would copy it).",
        ),
        Example(
            "import copy\nimport threading\n\nfrom torch import nn\nfrom rlguard.runtime import uncopyable\n\n\n"
            "@uncopyable\n"
            "class CameraPolicy(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lock = threading.Lock()\n\n\n"
            "policy = CameraPolicy()\n"
            "weights = copy.deepcopy(policy.state_dict())\n",
            note="A marked class, and a deep copy of its state dict, are not findings.",
        ),
        Example(
            "import threading\n\nfrom torch import nn\nfrom torchrl.objectives import DQNLoss\n\n\n"
            "class LockedQNet(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lock = threading.Lock()\n\n\n"
            "loss = DQNLoss(LockedQNet(), action_space=\"one-hot\")\n",
            note="Since torchrl 0.5, DQNLoss keeps its network without copying it.",
        ),
    )
    invalid = (
        Example(
            "import threading\n\nfrom tensordict.nn import TensorDictModule\nfrom torch import nn\n"
            "from torchrl.collectors import Collector\n\n\n"
            "class LockedNet(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lin = nn.Linear(3, 1)\n"
            "        self.lock = threading.Lock()\n\n\n"
            "policy = TensorDictModule(LockedNet(), in_keys=[\"observation\"], out_keys=[\"action\"])\n"
            "collector = Collector(env, policy, frames_per_batch=200, total_frames=10_000, policy_device=\"cuda:0\")\n",
            message="`self.lock` holds a thread lock; set at line 12",
            note="The collector deep-copies the policy to move it to `policy_device`.",
        ),
        Example(
            "import copy\nfrom queue import Queue\n\nfrom torch import nn\n\n\n"
            "class AsyncActor(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.net = nn.Linear(8, 2)\n"
            "        self.requests = Queue()\n\n\n"
            "actor = AsyncActor()\n"
            "target_actor = copy.deepcopy(actor)\n",
            message="`self.requests` holds a thread queue",
        ),
        Example(
            "from torchrl.collectors import MultiSyncCollector\n\nfrom robot.policies import CameraPolicy\n\n"
            "collector = MultiSyncCollector([make_env] * 4, CameraPolicy(), frames_per_batch=1000)\n",
            files={
                "robot/__init__.py": "",
                "robot/camera.py": (
                    "import threading\n\n\nclass Camera:\n    def __init__(self, index=0):\n"
                    "        self.index = index\n        self.lock = threading.Lock()\n"
                ),
                "robot/policies.py": (
                    "from torch import nn\n\nfrom robot.camera import Camera\n\n\n"
                    "class CameraPolicy(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.camera = Camera()\n        self.head = nn.Linear(64, 4)\n"
                ),
            },
            message="`self.camera.lock` holds a thread lock; set at robot/camera.py:7",
            note="Through another class, in another file. Multi-process collectors pickle the policy: pass `policy_factory=`.",
        ),
        Example(
            "from torchrl.collectors import Collector\n\nfrom robot.models import make_policy\n\n"
            "collector = Collector(env, make_policy(), frames_per_batch=64, policy_device=\"cuda:0\")\n",
            files={
                "robot/__init__.py": "",
                "robot/models.py": (
                    "import threading\n\nfrom tensordict.nn import TensorDictModule\nfrom torch import nn\n\n\n"
                    "class LockedNet(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.lock = threading.Lock()\n        self.head = nn.Linear(3, 1)\n\n\n"
                    "def make_policy():\n    net = LockedNet()\n"
                    "    return TensorDictModule(net, in_keys=[\"observation\"], out_keys=[\"action\"])\n"
                ),
            },
            message="`LockedNet` cannot be deep-copied by `Collector` to move it to `policy_device`: "
                    "`self.lock` holds a thread lock; set at robot/models.py:10",
            note="Through a factory in another file: what a module-level function returns is followed, items of a returned tuple (`actor, critic = make_models()`) included.",
        ),
        Example(
            "import threading\n\nfrom torch import nn\nfrom torchrl.objectives import ClipPPOLoss\n\n\n"
            "class SharedCritic(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lock = threading.RLock()\n\n\n"
            "loss = ClipPPOLoss(actor, SharedCritic())\n",
            target="0.4",
            message="`self.lock` holds a thread lock",
            note="Before torchrl 0.5 every loss constructor deep-copied its networks.",
        ),
        Example(
            "import copy\n\nimport mylab.hardware\nfrom torch import nn\n\n\n"
            "class RigPolicy(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.rig = mylab.hardware.Rig(\"/dev/ttyUSB0\")\n\n\n"
            "backup = copy.deepcopy(RigPolicy())\n",
            options={"uncopyable-types": ["mylab.hardware.Rig"]},
            message="`self.rig` holds a `mylab.hardware.Rig` (in `uncopyable-types`)",
            note="Your own handle types, from `[tool.rlguard.rules.RLG001] uncopyable-types`.",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._marked: set[str] = set()  # names and ``self.x`` passed to rlguard.runtime.uncopyable(...)
        self._returns: dict[str, list[PolicyRequirement]] = {}  # function name -> requirements of what it returns
        # Every ``<name>.to(...)``/``.cuda(...)``/``.cpu()`` of the file, by receiver: a module moves in place.
        self._moves: dict[str, list[str | None]] = {}
        # Collectors given a literal device, decided once the whole file is read (a move may come later):
        # (node, policy requirements, how the policy was built, device, how, fix).
        self._literal_sites: list[tuple[cst.Call, list[PolicyRequirement], Placement, str, str, str]] = []

    # ----- requirements -----
    @classmethod
    def resolve(cls, requirement: Requirement, index: ProjectIndex, path: str,
                options: Mapping[str, Any]) -> dict[str, str] | None:
        if isinstance(requirement, PassedToCopy):
            sink = index.argument_reaches(requirement.callee, requirement.slot, _copies, path, every_path=True)
            if sink is None:
                return None
            pickled, how, fix = _copied_by(sink)
            found = cls.resolve(dataclasses.replace(requirement.policy, pickled=pickled), index, path, options)
            if found is None:
                return None
            return {**found, "how": how, "advice": fix.replace("{holder}", found["holder"])}
        user_types = _user_types(options)
        if not isinstance(requirement, (Uncopyable, UncopyableAttr, UncopyableItem)):
            return super().resolve(requirement, index, path, options)
        search = _search(user_types, requirement.pickled)
        if isinstance(requirement, UncopyableAttr):
            culprit = attribute_holding(index, requirement.cls, requirement.attr, path, search)
        elif isinstance(requirement, UncopyableItem):
            culprit = returned_holding(index, requirement.callee, requirement.position, path, search)
        else:
            culprit = instance_holding(index, requirement.qualname, path, search, requirement.args)
        if culprit is None:
            return None
        return {
            "holder": _short(culprit.holder),
            "member": "self." + ".".join(culprit.member),
            "what": culprit.what,
            "where": _where(culprit.path, culprit.line, path),
        }

    # ----- visitors -----
    def visit_Return(self, node: cst.Return) -> None:
        function = self.ctx.current_function
        if function is not None and node.value is not None and self.ctx.current_class is None:
            found = self._policies(node.value)  # judged here, in the function's own scope
            if found:
                self._returns.setdefault(function.name.value, []).extend(found)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in DEVICE_MOVES:
            receiver = dotted_name(func.value)
            if receiver is not None:
                self._moves.setdefault(receiver, []).append(moved_to(node, self.ctx))
        if isinstance(func, cst.Attribute) and func.attr.value == "get_stateful_net":
            self._stateful_net(node, func.value)
            return
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return
        project = self.ctx.project_callee(node)
        if project is not None and project not in UNCOPYABLE_MARKERS:
            self._passed_on(node, project)
            return
        callee = self.ctx.callee(node)
        if callee is None:
            return
        if callee == DEEPCOPY:
            arg = keyword(node, "x") or next(iter(positional(node)), None)
            if arg is not None:
                self._flag(node, [arg.value], "cannot be deep-copied by `copy.deepcopy`", _FIX_DEEPCOPY)
        elif callee in UNCOPYABLE_MARKERS:
            for arg in positional(node)[:1]:
                marked = dotted_name(arg.value)
                if marked is not None:
                    self._marked.add(marked)
        elif callee.startswith(COLLECTOR_PREFIX):
            self._collector(node, callee)
        elif is_torchrl_loss(callee):
            self._loss(node, callee)

    def _passed_on(self, node: cst.Call, callee: str) -> None:
        """A policy handed to a function, method or class of the project that deep-copies (or pickles) it,
        itself or through what it calls or stores it in: reported here, where the policy is, once the
        index confirms both."""
        for slot, value in argument_slots(node):
            found = tuple(dict.fromkeys(self._policies(value))) if slot != "**" else ()
            if found:
                self.report(value, "`{holder}` {how} in `" + _short(callee) + "`, which is given it here" + _CAUSE,
                            remedy=_SET_AT + "{advice}",
                            requires=tuple(PassedToCopy(callee, slot, policy) for policy in found))

    def _collector(self, node: cst.Call, callee: str) -> None:
        name = _short(callee)
        if name not in SINGLE_PROCESS_COLLECTORS and name not in MULTI_PROCESS_COLLECTORS:
            return
        policy = keyword(node, "policy")
        if policy is None:
            args = positional(node)
            policy = args[1] if len(args) > 1 else None
        remote = name in MULTI_PROCESS_COLLECTORS or self._remote_backend(node)
        if remote:
            if policy is not None:
                how = f"cannot be pickled to `{name}`'s workers"
                self._flag(node, [policy.value], how, _FIX_PICKLE, pickled=True)
            return
        for device_keyword in ("policy_device", "device"):
            device = keyword(node, device_keyword)
            if device is None or is_none(self.ctx.value_of(device.value)):
                continue
            fix = remedy(advice.DEVICE, keyword=device_keyword)
            how = f"cannot be deep-copied by `{name}` to move it to `{device_keyword}`"
            literal = literal_device(device.value, self.ctx)
            built = placement(policy.value, self.ctx, self._wrapped) if policy is not None and literal else None
            if built is not None and literal is not None and policy is not None:
                found = self._policies(policy.value)
                if found:
                    self._literal_sites.append((node, found, built, literal, how, fix))
            elif policy is not None:
                self._flag(node, [policy.value], how, fix)
            else:
                factory = keyword(node, "policy_factory")
                if factory is not None:
                    how = f"(built by `policy_factory`) {how}"
                    self._report_policy(node, self._factory_policies(factory.value), how, fix)
            return

    def leave_Module(self, node: cst.Module) -> None:
        for call, found, built, literal, how, fix in self._literal_sites:
            if devices_of(built, self._moves) != {literal}:  # a parameter elsewhere (or unknown): torchrl copies
                self._report_policy(call, found, how, fix)

    def _factory_policies(self, factory: cst.BaseExpression) -> list[PolicyRequirement]:
        """What a policy factory returns: a lambda's body, the returns of a function, or a class's instance."""
        factory = self.ctx.value_of(factory)
        if isinstance(factory, cst.Call) and self.ctx.callee(factory) == "functools.partial":
            factory = factory.args[0].value if factory.args else factory
        if isinstance(factory, cst.Lambda):
            return self._policies(factory.body)
        if isinstance(factory, cst.Name) and factory.value in self._returns:
            return self._returns[factory.value]
        owner = self.ctx.self_class(factory.value) if isinstance(factory, cst.Attribute) else None
        if owner is not None and isinstance(factory, cst.Attribute):  # ``policy_factory=self.make_policy``
            return [Uncopyable(f"{owner.qualname}.{factory.attr.value}")]
        # An imported function, or a class: resolved in the index to what it builds.
        qualname = self.ctx.qualname(factory) if isinstance(factory, (cst.Name, cst.Attribute)) else None
        return [Uncopyable(qualname)] if qualname is not None else []

    def _remote_backend(self, node: cst.Call) -> bool:
        """``Collector(..., backend="process")`` or ``num_collectors=N`` runs workers in other processes."""
        backend = keyword(node, "backend")
        if backend is not None and isinstance(backend.value, cst.SimpleString):
            return backend.value.evaluated_value in REMOTE_BACKENDS
        collectors = keyword(node, "num_collectors")
        return backend is None and collectors is not None and not is_none(collectors.value)

    def _loss(self, node: cst.Call, callee: str) -> None:
        name = _short(callee)
        if self.ctx.oldest_target < ALL_LOSSES_COPY_BEFORE:  # a pin admitting torchrl 0.4 counts
            how = f"cannot be deep-copied by `{name}` (every loss in torchrl < 0.5)"
        elif name in DEEPCOPYING_LOSSES:
            how = f"cannot be deep-copied by `{name}`, which copies its networks"
        else:
            return
        fix = remedy(advice.ESTIMATOR if name in _ESTIMATOR_COPIES else advice.LOSS)
        self._flag(node, _loss_networks(node, name), how, fix)

    def _stateful_net(self, node: cst.Call, receiver: cst.BaseExpression) -> None:
        copy_arg = keyword(node, "copy")
        if copy_arg is None:
            args = positional(node)
            copy_arg = args[1] if len(args) > 1 else None
        if copy_arg is not None and not (is_none(copy_arg.value) or dotted_name(copy_arg.value) == "True"):
            return  # copy=False, or a value we cannot read
        if has_star_kwargs(node):
            return
        loss = self.ctx.value_of(receiver)
        if not isinstance(loss, cst.Call):
            return
        callee = self.ctx.callee(loss)
        if callee is None or not is_torchrl_loss(callee):
            return
        first = next(iter(positional(node)), None) or keyword(node, "network_name")
        if first is None or not isinstance(first.value, cst.SimpleString):
            return  # which network is copied is unknown
        network = first.value.evaluated_value
        how = "cannot be deep-copied by `get_stateful_net` (it copies unless `copy=False`)"
        if isinstance(network, str):
            self._flag(node, _loss_networks(loss, _short(callee), network), how, _FIX_STATEFUL)

    def _flag(self, node: cst.Call, values: list[cst.BaseExpression], how: str, remedies: str,
              pickled: bool = False) -> None:
        """Report ``node`` if one of ``values`` turns out to be an uncopyable policy."""
        self._report_policy(node, [r for value in values for r in self._policies(value)], how, remedies, pickled)

    def _report_policy(self, node: cst.Call, found: list[PolicyRequirement], how: str, remedies: str,
                       pickled: bool = False) -> None:
        """``how`` follows the holder's name: what cannot copy it (``cannot be pickled to ...``)."""
        if pickled:  # a ``__deepcopy__`` does not help a class that is pickled
            found = [dataclasses.replace(r, pickled=True) for r in found]
        requirements = tuple(dict.fromkeys(found))
        if requirements:
            self.report(node, "`{holder}` " + how + _CAUSE, remedy=_SET_AT + remedies, requires=requirements)

    # ----- what an expression may be an instance of: the engine's answer, read for copies -----
    def _policies(self, expr: cst.BaseExpression, depth: int = 0,
                  shadow: dict[str, Any] | None = None) -> list[PolicyRequirement]:
        """Requirements that hold when ``expr`` is an uncopyable policy (or wraps one)."""
        if depth > _MAX_DEPTH or dotted_name(expr) in self._marked:
            return []
        instance = self.ctx.instance_of(expr, MODULE_METHODS_RETURNING_SELF, shadow)
        if instance is None and isinstance(expr, cst.Attribute):  # ``agent.policy``: an attribute or a property
            owner = self.ctx.class_of(expr.value)
            return [UncopyableAttr(owner, expr.attr.value)] if owner is not None and depth == 0 else []
        if instance is not None and instance.kind == "annotated" and instance.value is not None:
            instance = instance.value  # ``net: nn.Module = LockedNet()``: the value says more
        if instance is None or self._marked.intersection(instance.via) or (
                instance.node is not None and dotted_name(instance.node) in self._marked):
            return []  # unknown, or ``uncopyable(policy)``: deliberately never copied
        kind, name = instance.kind, instance.names[0]
        if kind == "self":
            return [Uncopyable(name)]
        if kind == "self-attr" and instance.attr is not None:
            return [UncopyableAttr(name, instance.attr)]
        if kind == "annotated":  # ``net: LockedNet``, ``Optional[LockedNet]``, ``"LockedNet"``
            return [Uncopyable(qualname) for qualname in instance.names]
        if kind not in ("built", "item") or name in UNCOPYABLE_MARKERS or name.startswith(("builtins.", "typing.")):
            return []  # builtins and typing helpers (list(...), getattr(...), cast(...)) never build a project class
        if kind == "item" and instance.position is not None:
            return [UncopyableItem(name, instance.position)]
        if name in POLICY_WRAPPERS and isinstance(instance.node, cst.Call):
            return [r for arg in self._wrapped(instance.node) for r in self._policies(arg, depth + 1, instance.shadow)]
        return [Uncopyable(name, args=self._arguments(instance.node))]

    def _arguments(self, call: cst.BaseExpression | None) -> Args:
        """The classes of the arguments a constructor call is given, by position or keyword: a member
        that stores one holds it (``GuardedNet(threading.Lock())``)."""
        if not isinstance(call, cst.Call):
            return ()
        found: list[tuple[int | str, str]] = []
        for position, arg in enumerate(call.args):
            if arg.star:
                break  # positions after ``*args`` are unknown; a ``**options`` may fill any keyword
            cls = self.ctx.class_of(arg.value)
            if cls is not None:
                found.append((arg.keyword.value if arg.keyword is not None else position, cls))
        return tuple(found)

    @staticmethod
    def _wrapped(call: cst.Call, callee: str | None = None) -> Iterator[cst.BaseExpression]:
        """The modules a policy wrapper holds (none for another call, when ``callee`` is given)."""
        if callee is not None and callee not in POLICY_WRAPPERS:
            return
        for arg in call.args:
            if arg.star or (arg.keyword is not None and arg.keyword.value not in WRAPPER_KEYWORDS):
                continue
            yield from literal_items(arg.value)
