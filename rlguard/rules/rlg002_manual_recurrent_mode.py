"""RLG002 manual-recurrent-mode: ``LSTMModule/GRUModule.set_recurrent_mode()``, which raises since torchrl 0.8."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Breaks, Requirement
from rlguard.engine.index import ProjectIndex
from rlguard.engine.names import dotted_name
from rlguard.rules.base import Example, Rule
from rlguard.rules.data import (
    LIBRARY_PREFIXES,
    MODE_INDEPENDENT_MODULE_METHODS,
    MODULE_METHODS_RETURNING_SELF,
    POLICY_WRAPPERS,
    RECURRENT_CONTEXT_MANAGER_SINCE,
    RECURRENT_CONTEXT_MANAGERS,
    RECURRENT_METHOD_RAISES_FROM,
    is_recurrent_module,
    is_torchrl_loss,
    recurrent_module_names,
)
from rlguard.engine.matching import method_call
from rlguard.fix import recurrent_mode as planner
from rlguard.fix.recurrent_mode import METHOD, code_text, short_text


@functools.cache  # a function, not a constant: libcst loads on first use (engine/lazy.py)
def _not_modules() -> tuple[type, ...]:
    """Expressions whose value cannot be a module."""
    return (
        cst.BaseString, cst.Integer, cst.Float, cst.Imaginary, cst.List, cst.Tuple, cst.Dict, cst.Set, cst.Lambda,
        cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Comparison,
    )
# (kind, requirement arguments, what the receiver is): kinds "yes", "unknown", "class", "attr", "super".
Verdict = tuple[str, tuple[str, ...], str]
# Calls that give back the module they are called on (or a copy of it).
_SAME_MODULE = MODULE_METHODS_RETURNING_SELF | {METHOD}


@dataclass(frozen=True)
class RecurrentClass(Requirement):
    """An instance of ``qualname`` is a torchrl LSTMModule/GRUModule whose MRO does not redefine the
    method; with ``fallback``, a class the index cannot see counts as one."""

    qualname: str
    fallback: bool


@dataclass(frozen=True)
class RecurrentAttr(Requirement):
    """``self.<attr>`` of an instance of ``qualname`` is built as such a recurrent module."""

    qualname: str
    attr: str
    fallback: bool


@dataclass(frozen=True)
class RecurrentSuper(Requirement):
    """``super()`` in ``qualname`` reaches such a recurrent module."""

    qualname: str


@dataclass(frozen=True)
class NoImportedOwnMethod(Requirement):
    """A receiver of unknown type counts as recurrent only if none of ``imported`` (the project names
    the file imports) is a class with its own ``set_recurrent_mode``: the receiver may be one of them."""

    imported: tuple[str, ...]

HOW_REMOVE = ("delete the call: before torchrl 0.8 it returned a recurrent copy and left `{recv}` unchanged, so it did "
              "nothing; if whole sequences were meant, run those calls inside `with set_recurrent_mode(True):` "
              "(from torchrl.modules)")
HOW_VALUE = ("use `{recv}` itself and call it inside `with set_recurrent_mode(True):` (from torchrl.modules) where it "
             "must process whole sequences; torchrl losses already run in that mode")
HOW_MANUAL = HOW_VALUE + ", or build the module with `default_recurrent_mode=True`"
HOW_FALSE = ("delete the call: outside `with set_recurrent_mode(True):` the module runs step by step "
             "(write `with set_recurrent_mode(False):` to force it)")
HOW_SUPER = ("the parent method is gone: drop this call (or the override) and switch modes with "
             "`with set_recurrent_mode(...)` (from torchrl.modules) or the `default_recurrent_mode=` constructor argument")
# The remedy the fix planner chose for a call, in words.
HOWTO = {planner.REMOVE: HOW_REMOVE, planner.VALUE: HOW_VALUE, planner.MANUAL: HOW_MANUAL, planner.FALSE: HOW_FALSE,
         planner.SUPER: HOW_SUPER}


# A call found, as the fix planner sees it, and what the rule knows of its receiver.
_Candidate = tuple[planner.Site, Verdict]


class ManualRecurrentMode(Rule):
    code = "RLG002"
    name = "manual-recurrent-mode"
    summary = "Calls the `set_recurrent_mode()` method of an LSTMModule or GRUModule, which raises since torchrl 0.8"
    what = (
        "Finds calls of the method `.set_recurrent_mode(...)` on a TorchRL `LSTMModule` or `GRUModule`: "
        "instances built in the linted files, names and `self` attributes bound to them, parameters "
        "annotated with them, instances of user subclasses (in any linted file) that do not define the "
        "method themselves, and `super().set_recurrent_mode(...)` inside such subclasses. When the type "
        "of the receiver is unknown, the call is reported if the file imports `LSTMModule` or "
        "`GRUModule` (and neither defines nor imports from the project a class with its own `set_recurrent_mode`).\n\n"
        "The context manager and decorator `set_recurrent_mode(...)` from `torchrl.modules`, under any "
        "alias, is not a finding; neither is a user class's own method of that name, nor calls on "
        "instances of such a class. The rule applies from torchrl 0.7, where the context manager "
        "appeared and the method was deprecated; before that the method was the only API."
    )
    why = (
        "TorchRL 0.7 replaced the method by the `set_recurrent_mode` context manager and decorator, "
        "and 0.8 removed it: `lstm.set_recurrent_mode(True)` now raises `RuntimeError`, usually deep "
        "in a training script, after minutes of data collection. The old method also never switched "
        "the module in place: it returned a recurrent *copy* sharing the weights, so a bare "
        "`lstm.set_recurrent_mode(True)` statement silently did nothing even on old versions."
    )
    fix_doc = (
        "**Statement form, unsafe.** A bare statement `m.set_recurrent_mode(True)` (or `()`, or "
        "`mode=True`) is removed, with the first later bare `m.set_recurrent_mode(...)` on the same receiver "
        "in that block when it is `m.set_recurrent_mode(False)`, and a comment where the call was says what "
        "changed and what to check. This is how the old code behaved: the method returned a recurrent copy "
        "and left `m` unchanged, so both statements did nothing on torchrl < 0.8 (checked on the 0.6 and 0.7 "
        "wheels). The statements in between are not wrapped in `with set_recurrent_mode(True):`: that would "
        "change what they compute, and recurrent mode raises `ValueError` on input without a time dimension "
        "(a single step, `env.reset()`). The fix is unsafe because the author probably meant recurrent mode, "
        "which the code never had: only a person can tell which calls pass whole sequences. No fix is offered "
        "when the call is the last statement of its block (removing it would leave the block empty); a matching "
        "`False` call that ends its block with a comment of its own is left, with its own finding.\n\n"
        "**Value form, unsafe.** `x = m.set_recurrent_mode(True)` or `Seq(a, m.set_recurrent_mode(True), b)`: "
        "the old method returned a recurrent copy of `m` sharing its weights. The call is replaced by "
        "`m` itself, as upstream's own tutorials were rewritten, and a comment above the statement says "
        "what changed and what to check. The calls of the value are left as they are: recurrent mode "
        "needs a time dimension, and a call such as `policy(env.reset())` has none (wrapping it in "
        "`with set_recurrent_mode(True):` raises `ValueError` on torchrl >= 0.8), so only a person can "
        "tell which calls process whole sequences. A value that flows into a torchrl loss "
        "(`DQNLoss(policy)`) needs nothing: torchrl >= 0.8 losses run recurrent mode by themselves. The "
        "fix is offered where every use of the value is understood (the name it is bound to, possibly "
        "through `Seq`, `TensorDictSequential`, `ProbabilisticActor` and the other policy wrappers, is "
        "only called in simple statements of the same block, given to a loss, or asked for its weights "
        "or device); any other use (returned, stored on `self`, passed to a collector, printed, rebound, "
        "called in a nested block, in a lambda or in another function) gets no fix. It is unsafe because "
        "the value is no longer a separate copy: it is the module itself, which runs step by step.\n\n"
        "Anything else (`set_recurrent_mode(False)` on its own, a non-literal mode, `super()` calls, "
        "calls inside expressions) has no fix: the message says how to migrate by hand."
    )
    min_target = RECURRENT_CONTEXT_MANAGER_SINCE
    tokens = ((METHOD,),)

    valid = (
        Example(
            "from torchrl.modules import LSTMModule, set_recurrent_mode\n\n"
            "lstm = LSTMModule(input_size=3, hidden_size=8, in_key=\"obs\", out_key=\"features\")\n\n"
            "with set_recurrent_mode(True):\n"
            "    out = lstm(trajectories)\n",
            note="The context manager is the replacement.",
        ),
        Example(
            "import torchrl.modules as tm\n\n\n"
            "@tm.set_recurrent_mode(\"recurrent\")\n"
            "def burn_in(policy, data):\n"
            "    return policy(data)\n",
            note="Its decorator form, under any alias.",
        ),
        Example(
            "from torchrl.modules import LSTMModule\n\n\n"
            "class Agent:\n"
            "    def __init__(self):\n"
            "        self.recurrent = False\n\n"
            "    def set_recurrent_mode(self, mode=True):\n"
            "        self.recurrent = mode\n\n\n"
            "agent = Agent()\n"
            "agent.set_recurrent_mode(True)\n",
            note="A user class's own method of that name.",
        ),
        Example(
            "def prepare(policy):\n"
            "    policy.set_recurrent_mode(True)\n",
            note="A receiver of unknown type, in a file that does not import LSTMModule or GRUModule.",
        ),
        Example(
            "from torchrl.modules import LSTMModule\n\n"
            "lstm = LSTMModule(input_size=3, hidden_size=8, in_key=\"obs\", out_key=\"features\")\n"
            "training_lstm = lstm.set_recurrent_mode(True)\n",
            target="0.6",
            note="Before torchrl 0.7 the method was the only API.",
        ),
    )
    invalid = (
        Example(
            "from torchrl.modules import LSTMModule\n\n"
            "lstm = LSTMModule(input_size=3, hidden_size=8, in_key=\"obs\", out_key=\"features\")\n\n\n"
            "def update(policy, batch):\n"
            "    lstm.set_recurrent_mode(True)\n"
            "    # the whole trajectories at once\n"
            "    out = policy(batch)\n"
            "    loss = out[\"features\"].pow(2).mean()\n"
            "    lstm.set_recurrent_mode(False)\n"
            "    return loss\n",
            fixed="from torchrl.modules import LSTMModule\n\n"
            "lstm = LSTMModule(input_size=3, hidden_size=8, in_key=\"obs\", out_key=\"features\")\n\n\n"
            "def update(policy, batch):\n"
            "    # rlguard: removed `lstm.set_recurrent_mode(True)`: on torchrl < 0.8 it returned a recurrent copy\n"
            "    # and left `lstm` unchanged, so it did nothing; torchrl >= 0.8 removed the method.\n"
            "    # Its matching `lstm.set_recurrent_mode(False)` below, a no-op too, is removed as well.\n"
            "    # If whole sequences were meant, wrap the calls that pass them (a time dimension, e.g. sampled\n"
            "    # trajectories) in `with set_recurrent_mode(True):` (from torchrl.modules); single steps must not be.\n"
            "    # the whole trajectories at once\n"
            "    out = policy(batch)\n"
            "    loss = out[\"features\"].pow(2).mean()\n"
            "    return loss\n",
            unsafe=True,
            message="raises RuntimeError: torchrl 0.8 removed",
            note="Statement form with its matching `False`: both calls did nothing before 0.8 (the method returned a "
                 "copy), so the fix removes them and says at the site what to check; nothing is wrapped.",
        ),
        Example(
            "from torchrl.modules import GRUModule, set_recurrent_mode as recurrent\n\n\n"
            "def train_step(gru: GRUModule, policy, batch, optim):\n"
            "    gru.set_recurrent_mode()  # replay whole sequences\n"
            "    loss = policy(batch)[\"loss\"]\n"
            "    loss.backward()\n"
            "    optim.step()\n",
            fixed="from torchrl.modules import GRUModule, set_recurrent_mode as recurrent\n\n\n"
            "def train_step(gru: GRUModule, policy, batch, optim):\n"
            "    # replay whole sequences\n"
            "    # rlguard: removed `gru.set_recurrent_mode()`: on torchrl < 0.8 it returned a recurrent copy\n"
            "    # and left `gru` unchanged, so it did nothing; torchrl >= 0.8 removed the method.\n"
            "    # If whole sequences were meant, wrap the calls that pass them (a time dimension, e.g. sampled\n"
            "    # trajectories) in `with set_recurrent_mode(True):` (from torchrl.modules); single steps must not be.\n"
            "    loss = policy(batch)[\"loss\"]\n"
            "    loss.backward()\n"
            "    optim.step()\n",
            unsafe=True,
            note="Without a matching `False`: the call alone is removed; the end-of-line comment is kept above.",
        ),
        Example(
            "from tensordict.nn import TensorDictSequential as Seq\n"
            "from torchrl.modules import LSTMModule\n"
            "from torchrl.objectives import DQNLoss\n\n"
            "lstm = LSTMModule(input_size=64, hidden_size=128, in_key=\"embed\", out_key=\"embed\")\n"
            "stoch_policy = Seq(feature, lstm, mlp, qval)\n"
            "policy = Seq(feature, lstm.set_recurrent_mode(True), mlp, qval)\n"
            "policy(env.reset())\n"
            "loss_fn = DQNLoss(policy, action_space=env.action_spec, delay_value=True)\n"
            "optim = torch.optim.Adam(policy.parameters(), lr=3e-4)\n",
            fixed="from tensordict.nn import TensorDictSequential as Seq\n"
            "from torchrl.modules import LSTMModule\n"
            "from torchrl.objectives import DQNLoss\n\n"
            "lstm = LSTMModule(input_size=64, hidden_size=128, in_key=\"embed\", out_key=\"embed\")\n"
            "stoch_policy = Seq(feature, lstm, mlp, qval)\n"
            "# rlguard: was `lstm.set_recurrent_mode(True)`, a recurrent copy; torchrl >= 0.8 removed the method, "
            "so `lstm`\n"
            "# itself is used here and runs step by step.\n"
            "# Check the calls of `policy`: those on whole sequences (a time dimension, e.g. sampled\n"
            "# trajectories) need `with set_recurrent_mode(True):`; single steps (env.reset(), rollouts) must not.\n"
            "policy = Seq(feature, lstm, mlp, qval)\n"
            "policy(env.reset())\n"
            "loss_fn = DQNLoss(policy, action_space=env.action_spec, delay_value=True)\n"
            "optim = torch.optim.Adam(policy.parameters(), lr=3e-4)\n",
            unsafe=True,
            note="Value form (the recurrent DQN tutorial before 0.8): the module itself replaces the copy, as "
                 "upstream's rewrite did. `policy(env.reset())` stays unwrapped: a fresh reset has no time "
                 "dimension, and recurrent mode would raise ValueError on it. A comment says what to check.",
        ),
        Example(
            "from torchrl.modules import GRUModule\n\n\n"
            "def make_training_policy(gru: GRUModule, head):\n"
            "    return Seq(gru.set_recurrent_mode(True), head)\n",
            message="use `gru` itself",
            note="A returned value has no fix: the message says how to migrate.",
        ),
        Example(
            "from pkg.nets import MemoryCore\n\n"
            "core = MemoryCore(input_size=3, hidden_size=8, in_key=\"obs\", out_key=\"features\")\n"
            "trainer_core = core.set_recurrent_mode(True)\n",
            files={
                "pkg/__init__.py": "",
                "pkg/nets.py": "from torchrl.modules import LSTMModule\n\n\n"
                "class MemoryCore(LSTMModule):\n"
                "    def reset_parameters(self):\n"
                "        self.lstm.reset_parameters()\n",
            },
            fixed="from pkg.nets import MemoryCore\n\n"
            "core = MemoryCore(input_size=3, hidden_size=8, in_key=\"obs\", out_key=\"features\")\n"
            "# rlguard: was `core.set_recurrent_mode(True)`, a recurrent copy; torchrl >= 0.8 removed the method, "
            "so `core`\n"
            "# itself is used here and runs step by step.\n"
            "# Check its uses: calls on whole sequences need `with set_recurrent_mode(True):`.\n"
            "trainer_core = core\n",
            unsafe=True,
            message="`MemoryCore` derives from `LSTMModule`",
            note="An instance of a subclass defined in another file.",
        ),
        Example(
            "from torchrl.modules import LSTMModule\n\n\n"
            "class LegacyLSTM(LSTMModule):\n"
            "    def set_recurrent_mode(self, mode=True):\n"
            "        self.mode_requests += 1\n"
            "        return super().set_recurrent_mode(mode)\n",
            message="the parent method is gone",
            note="`super().set_recurrent_mode()` in an override reaches the removed method.",
        ),
        Example(
            "from torchrl.modules import LSTMModule\n\n\n"
            "def enable(policy):\n"
            "    policy.module[0].set_recurrent_mode(True)\n",
            target="0.7",
            message="deprecated since torchrl 0.7",
            note="A receiver of unknown type in a file that imports LSTMModule; torchrl 0.7 only warned.",
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[_Candidate] = []
        self._module_names: set[str] = set()  # local names bound by ``import x`` (modules)
        self._attr_names: set[int] = set()  # ``x.set_recurrent_mode``: the attribute, not a name
        self._mentions_recurrent = False  # the file uses LSTMModule/GRUModule by a qualified name
        self._defines_method = False  # a class of this file defines its own set_recurrent_mode

    # ----- the walk -----
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is not None:
                asname = alias.asname.name if alias.asname is not None else None
                self._module_names.add(asname.value if isinstance(asname, cst.Name) else full.split(".")[0])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            qualname = self.ctx.imports.names.get(alias.evaluated_alias or alias.evaluated_name)
            if qualname is not None and is_recurrent_module(qualname):
                self._mentions_recurrent = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # The engine has entered the function: the enclosing scope is second from the top.
        if node.name.value == METHOD and self.ctx.method_class() is not None:
            self._defines_method = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if attr == METHOD:
            self._attr_names.add(id(node.attr))
        elif attr in recurrent_module_names() and is_recurrent_module(self.ctx.qualname(node) or ""):
            self._mentions_recurrent = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != METHOD:
            return
        if self.ctx.qualname(func) in RECURRENT_CONTEXT_MANAGERS:
            return  # ``tm.set_recurrent_mode(True)``: the context manager itself
        verdict = self._classify(func.value)
        if verdict is None:
            return
        site = planner.Site(node, func.value, _literal_mode(node), self.ctx.current_function, self.ctx.in_class_body(),
                            super_call=verdict[0] == "super")
        self._candidates.append((site, verdict))

    # ----- what the receiver is -----
    def _classify(self, node: cst.BaseExpression, depth: int = 0) -> Verdict | None:
        """The receiver's verdict, or None when it is known not to be a recurrent module."""
        unknown: Verdict = ("unknown", (), "")
        ctx = self.ctx
        if depth > 6:
            return unknown
        if isinstance(node, _not_modules()):
            return None  # ``"abc".set_recurrent_mode()``, ``[...]``, a lambda: no module
        if isinstance(node, cst.Attribute) and ctx.is_self_attr(node) is None and ctx.qualname(node) is None:
            base = self._classify(node.value, depth + 1)  # ``holder.core``: an attribute of a value
            if base is not None and base[0] == "class":
                return ("attr", (base[1][0], node.attr.value), "")
            if base is not None and base[0] == "yes":
                return None  # an attribute of a recurrent module (``lstm_module.lstm``) is not one
            return unknown
        called = method_call(node)
        if called is not None and ctx.callee(node) is None:
            # ``lstm.set_recurrent_mode(True)`` returned a copy; ``.to(device)`` returns the module.
            return self._classify(called[0], depth + 1) if called[1] in _SAME_MODULE else unknown
        instance = ctx.instance_of(node, _SAME_MODULE)
        if instance is None:
            return unknown
        kind, name = instance.kind, instance.names[0]
        if kind == "item":
            return unknown  # ``a, b = make()``: an item of what a call returns
        if kind == "super":
            return ("super", (name,), "")
        if kind == "self":
            return ("class", (name,), "")
        if kind == "self-attr":
            cls = ctx.current_class
            if cls is not None and any(is_recurrent_module(fact.callee or "") for fact in cls.attrs.get(instance.attr or "", ())):
                return ("yes", (), "")
            return ("attr", (name, instance.attr or ""), "")
        if kind == "imported" and isinstance(node, cst.Name) and node.value in self._module_names:
            return None  # ``module.set_recurrent_mode(...)``: a module's function
        if kind == "annotated":
            found = [v for v in map(self._of_type_name, instance.names) if v is not None]
            verdict = next((v for v in found if v[0] == "yes"), found[0] if found else None)
            return verdict if verdict is not None else self._annotated_value(node, depth)
        return self._of_class(name)

    def _annotated_value(self, node: cst.BaseExpression, depth: int) -> Verdict | None:
        """An annotation that says nothing useful (``nn.Module``): the bound value decides."""
        binding = self.ctx.lookup(node.value) if isinstance(node, cst.Name) else None
        if binding is not None and binding.value is not None:
            return self._classify(binding.value, depth + 1)
        return ("unknown", (), "")

    def _of_class(self, qualname: str | None) -> Verdict | None:
        """Verdict for an instance of (or the result of calling) ``qualname``."""
        if qualname is None:
            return ("unknown", (), "")
        if is_recurrent_module(qualname):
            return ("yes", (), "")
        if qualname.startswith(LIBRARY_PREFIXES):
            return None  # torch, torchrl and tensordict classes other than these have no such method
        return ("class", (qualname,), "")

    @staticmethod
    def _of_type_name(qualname: str) -> Verdict | None:
        """Verdict from one type an annotation admits; None when it says nothing useful."""
        if qualname.startswith(("builtins.", "typing.")):
            return None
        if is_recurrent_module(qualname):
            return ("yes", (), "")
        if qualname.startswith(LIBRARY_PREFIXES):
            return None  # ``nn.Module`` and the like: a supertype, the receiver stays unknown
        return ("class", (qualname,), "")

    # ----- reporting, once the whole file is known -----
    def leave_Module(self, node: cst.Module) -> None:
        if not self._candidates:
            return
        fallback = (self._mentions_recurrent or self.ctx.imports.imports_any(is_recurrent_module)) \
            and not self._defines_method
        standing: list[_Candidate] = []
        for site, verdict in self._candidates:
            kind, args, _ = verdict
            if kind == "unknown" and not fallback:
                continue
            if kind == "unknown":
                site = site._replace(requires=(NoImportedOwnMethod(self._imported_project_names()),))
            elif kind == "class":
                site = site._replace(requires=(RecurrentClass(args[0], fallback),))
            elif kind == "attr":
                site = site._replace(requires=(RecurrentAttr(args[0], args[1], fallback),))
            elif kind == "super":
                site = site._replace(requires=(RecurrentSuper(args[0]),))
            standing.append((site, verdict))
        if not standing:
            return
        plans = planner.plan_fixes(node, [site for site, _ in standing], self._knowledge())
        for (site, verdict), plan in zip(standing, plans, strict=True):
            # Why the receiver is recurrent (``X` derives from `LSTMModule`; ``) opens the remedy.
            what = "{what}" if site.requires else verdict[2]
            remedy = what + HOWTO[plan.remedy].replace("{recv}", short_text(site.receiver, 40))
            self.report(site.call, self._message(site), remedy=remedy, fix=plan.fix, requires=site.requires,
                        breaks=self._breaks())

    def _imported_project_names(self) -> tuple[str, ...]:
        return tuple(sorted({q for q in self.ctx.imports.names.values() if not q.startswith(LIBRARY_PREFIXES)}))

    def _knowledge(self) -> planner.Knowledge:
        return planner.Knowledge(self.ctx.imports.resolve, RECURRENT_CONTEXT_MANAGERS, is_torchrl_loss,
                                 POLICY_WRAPPERS.__contains__, MODE_INDEPENDENT_MODULE_METHODS)

    def _breaks(self) -> Breaks:
        """Deprecated from 0.7 on, raising from 0.8 on: a gate for older releases keeps the call."""
        raises = "RuntimeError" if self.ctx.target >= RECURRENT_METHOD_RAISES_FROM else None
        return Breaks(RECURRENT_CONTEXT_MANAGER_SINCE, raises)

    def _message(self, site: planner.Site) -> str:
        text = _call_text(site.call, site.receiver)
        if self.ctx.target >= RECURRENT_METHOD_RAISES_FROM:
            return f"`{text}` raises RuntimeError: torchrl 0.8 removed this method of LSTMModule/GRUModule"
        return f"`{text}` is deprecated since torchrl 0.7 and raises RuntimeError from 0.8 on"

    # ----- cross-file answers -----
    @classmethod
    def resolve(cls, requirement: Requirement, index: ProjectIndex, path: str,
                options: Mapping[str, Any]) -> dict[str, str] | None:
        if isinstance(requirement, RecurrentClass):
            verdict, what = _class_verdict(index, requirement.qualname, path)
            fallback = requirement.fallback
        elif isinstance(requirement, RecurrentAttr):
            verdict, what = _attr_verdict(index, requirement.qualname, requirement.attr, path)
            fallback = requirement.fallback
        elif isinstance(requirement, RecurrentSuper):
            verdict, what = _class_verdict(index, requirement.qualname, path, skip_self=True)
            fallback = False
        elif isinstance(requirement, NoImportedOwnMethod):
            owners = [q for q in requirement.imported if index.get_class(q, path) is not None
                      and index.method_owner(q, METHOD, path) is not None]
            return None if owners else {"what": ""}
        else:
            return super().resolve(requirement, index, path, options)
        if verdict == "yes":
            return {"what": what}
        if verdict == "unknown" and fallback:
            return {"what": ""}
        return None


def _short_name(qualname: str) -> str:
    return qualname.rpartition(".")[2]


def _class_verdict(index: ProjectIndex, qualname: str, path: str, skip_self: bool = False) -> tuple[str, str]:
    """("yes" | "no" | "unknown", why) for an instance of ``qualname`` (or its parent, for ``super()``).

    Bases are searched depth first, as the MRO does for simple hierarchies: the first one that is
    torchrl's LSTMModule/GRUModule, or a linted class defining its own ``set_recurrent_mode``, decides.
    """
    if is_recurrent_module(qualname):
        return "yes", ""
    linted = False
    for position, (name, facts) in enumerate(index.ancestry(qualname, near=path)):
        if position == 0:
            linted = facts is not None
            if skip_self:
                continue
        if is_recurrent_module(name):
            # A factory of the project (``make_encoder``): the MRO is that of the class it returns.
            relation = "returns a" if index.get_class(qualname, path) is None else "derives from"
            return "yes", f"`{_short_name(qualname)}` {relation} `{_short_name(name)}`; "
        if facts is not None and METHOD in facts.methods:
            return "no", ""
    if not linted:
        return ("no" if qualname.startswith(LIBRARY_PREFIXES) else "unknown"), ""
    return "no", ""


def _attr_verdict(index: ProjectIndex, qualname: str, attr: str, path: str) -> tuple[str, str]:
    """Verdict for ``<instance of qualname>.<attr>``, from the ``self.attr = ...`` facts of its classes."""
    verdicts: list[tuple[str, str]] = []
    for _, facts in index.ancestry(qualname, near=path):
        if facts is None:
            continue
        for fact in facts.attrs.get(attr, ()):
            if fact.callee is None:
                verdicts.append(("unknown", ""))
            else:
                verdict, why = _class_verdict(index, fact.callee, facts.path)
                verdicts.append((verdict, why or f"`{attr}` is built by `{_short_name(fact.callee)}(...)`; "))
    if not verdicts:
        return "unknown", ""
    yes = next((v for v in verdicts if v[0] == "yes"), None)
    if yes is not None:
        return yes
    return ("unknown", "") if any(v[0] == "unknown" for v in verdicts) else ("no", "")


def _literal_mode(call: cst.Call) -> bool | None:
    """True for ``()``, ``(True)`` and ``(mode=True)``; False for False; None otherwise."""
    if not call.args:
        return True
    if len(call.args) != 1:
        return None
    arg = call.args[0]
    if arg.star or (arg.keyword is not None and arg.keyword.value != "mode"):
        return None
    if isinstance(arg.value, cst.Name) and arg.value.value in ("True", "False"):
        return arg.value.value == "True"
    return None


def _call_text(call: cst.Call, receiver: cst.CSTNode) -> str:
    text = code_text(call)
    if len(text) <= 60:
        return text
    return f"{short_text(receiver, 40)}.{METHOD}(...)"

