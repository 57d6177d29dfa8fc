"""RLG005 trainer-hook: a Trainer hook that breaks checkpoints, or a hook destination torchrl rejects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Mapping

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Edit, Fix, Requirement
from rlguard.engine.index import ProjectIndex
from rlguard.engine.class_lookup import may_be_project
from rlguard.engine.reach import bound_once, may_derive_from, member_class
from rlguard.engine.suggest import closest, one_edit_away
from rlguard.engine.target import version_text
from rlguard.rules.base import Example, Rule
from rlguard.rules.data import (
    TRAINER_HOOK_BASES,
    TRAINER_HOOK_METHODS,
    TRAINER_HOOKS_ORIGINAL,
    is_torchrl_trainer,
    trainer_hooks_for,
)
from rlguard.engine.matching import keyword, positional
from rlguard.engine.names import dotted_name

if TYPE_CHECKING:
    from rlguard.engine.context import FileContext

@dataclass(frozen=True)
class IsTrainer(Requirement):
    """The receiver of ``register_op``, an instance of the class ``qualname`` (or what a call of the
    project factory ``qualname`` gives, or with ``member`` what ``self.<member>`` of class ``qualname``
    holds), is a torchrl Trainer; with ``unknown_is_trainer``, also when that is unknown."""

    qualname: str
    unknown_is_trainer: bool = False
    member: str | None = None


@dataclass(frozen=True)
class HookMethods(Requirement):
    """The hook class ``qualname`` lacks a working hook method along its MRO. Without a working
    ``register`` it may be an abstract base that subclasses complete: it then stands only where the
    class itself is ``built`` (called), in its own file or, with ``elsewhere``, in another."""

    qualname: str
    built: bool = False
    elsewhere: bool = False


# Library classes known to define some of the hook methods (a mixin placed before TrainerHookBase).
_KNOWN_METHODS: dict[str, frozenset[str]] = {
    "builtins.object": frozenset(),
    "abc.ABC": frozenset(),
    "typing.Generic": frozenset(),
    "torch.nn.Module": frozenset({"state_dict", "load_state_dict"}),
    "torch.nn.modules.module.Module": frozenset({"state_dict", "load_state_dict"}),
}
_CONSEQUENCES = {
    "state_dict": "saving a checkpoint (`Trainer.state_dict()`, `save_trainer()`) raises `NotImplementedError` "
                  "once the hook is registered as a module, and its state is silently left out when it is not",
    "load_state_dict": "loading a checkpoint (`Trainer.load_state_dict()`, `load_from_file()`) raises "
                       "`NotImplementedError`",
    "register": "`hook.register(trainer)` raises `NotImplementedError`",
}


STATEFUL_HOOK = ("from torchrl.trainers import TrainerHookBase\n\n\n"
                 "class StatefulHook(TrainerHookBase):\n"
                 "    state_keys = ()\n\n"
                 "    def state_dict(self):\n        return {key: getattr(self, key) for key in self.state_keys}\n\n"
                 "    def load_state_dict(self, state_dict):\n"
                 "        for key in self.state_keys:\n            setattr(self, key, state_dict[key])\n")


def _remedy(name: str, valid: tuple[str, ...]) -> str:
    meant = closest(name, valid)
    remedy = (f"the closest valid destination is `{meant}`" if meant
              else "use one of the destinations the Trainer accepts: " + ", ".join(f"`{d}`" for d in sorted(valid)))
    newest = trainer_hooks_for((999,))
    if name in newest and name not in TRAINER_HOOKS_ORIGINAL:
        remedy += f" (`{name}` exists from torchrl 0.14)"
    return remedy


class TrainerHook(Rule):
    code = "RLG005"
    name = "trainer-hook"
    summary = "A Trainer hook class that breaks checkpoints, or a `register_op` destination torchrl rejects"
    why = (
        "Two mistakes with `torchrl.trainers.Trainer` hooks that only show up late in a run.\n\n"
        "**Incomplete hook classes.** `TrainerHookBase` declares `state_dict`, `load_state_dict` and "
        "`register` with `@abc.abstractmethod`, but it is not an `abc.ABC`: a subclass that forgets one of "
        "them instantiates fine, and the base version raises `NotImplementedError` only when it is called. "
        "`Trainer.state_dict()` calls `state_dict()` on every registered module, so the first checkpoint "
        "(`save_trainer`) crashes hours into training; a hook that is not registered as a module has its "
        "state silently left out of checkpoints. Methods inherited from any base class of the project count, "
        "in files given or reached through imports; a class that declares abstract methods itself is an abstract base and is not "
        "reported. A method whose body only raises `NotImplementedError` counts as missing. A class without a working "
        "`register` may be an abstract base that its subclasses complete (as in Python, a class that leaves an abstract "
        "method unimplemented is abstract, and fails only once an instance of it is made): it is reported where the class "
        "itself is built, at its statement when its own file calls it, and at the call (`StatefulHook()`) in a file that "
        "builds it from another file and registers hooks (`register_op`, `register_hook`, or `.register(` on a "
        "hook class its imports reach), also when that file is checked alone. A class that can "
        "register itself but lacks `state_dict` or `load_state_dict` is a hook as it stands, and the checkpoint is what "
        "fails: it is reported at its statement, whether or not it is built.\n\n"
        "**Unknown destinations.** `trainer.register_op(dest, op)` accepts a fixed set of destinations and "
        "raises `RuntimeError` for any other (a typo such as `\"post_step\"`). The set depends on the "
        "torchrl version: torchrl 0.14 added `pre_epoch`, `post_epoch`, `pre_epoch_log`, `post_epoch_log`, "
        "`process_loss`, `post_optim_complete_log`, `setup` and `shutdown` to the original ten. The "
        "message names the closest valid destination. A destination is a string literal, or a name bound "
        "once to one (a module constant `DEST = \"post_step\"`). Calls on receivers known not to be a "
        "Trainer (built by another class's constructor, by a factory of the project that builds one, or "
        "`self` in a class that is not a Trainer), and other destinations, are not reported. "
        "`register_hook`, the alias, is checked when the receiver is known to be a Trainer, also one a "
        "factory of the project returns."
    )
    fix_doc = (
        "Unsafe. A `register_op` destination one edit away (one letter added, removed or changed) from "
        "exactly one valid destination is renamed to it, keeping the quotes. It is unsafe because the "
        "op then really runs, at that point of the training loop, with the arguments that destination "
        "passes: check the op's signature. A destination held in a constant is not rewritten (the constant "
        "may serve elsewhere). Hook classes get no automatic fix: implement the missing "
        "methods (`state_dict` can return `{}` for a stateless hook)."
    )
    tokens = (("register_op", "register_hook", "TrainerHookBase"),)
    # ``hook.register(trainer)`` of a hook class another file defines (the file that builds it).
    through_imports = (".register(", (("TrainerHookBase",),))
    # Subclasses (in other files) of a user hook base may mention none of the tokens above.
    class_roots = frozenset({"TrainerHookBase"})
    class_group = 0
    valid = (
        Example(
            "from torchrl.trainers import TrainerHookBase\n\n\n"
            "class Flush(TrainerHookBase):\n"
            "    def state_dict(self):\n"
            "        if self.closed:\n"
            "            raise NotImplementedError(\"closed\")\n"
            "        return {}\n\n"
            "    def load_state_dict(self, state_dict):\n"
            "        pass\n\n"
            "    def register(self, trainer, name=\"flush\"):\n"
            "        trainer.register_module(name, self)\n",
            note="A method that raises `NotImplementedError` only on some path is a working method.",
        ),
        Example(
            "from torchrl.trainers import TrainerHookBase\n\n\n"
            "class CountSteps(TrainerHookBase):\n"
            "    def __init__(self):\n"
            "        self.steps = 0\n\n"
            "    def __call__(self):\n"
            "        self.steps += 1\n\n"
            "    def state_dict(self):\n"
            "        return {\"steps\": self.steps}\n\n"
            "    def load_state_dict(self, state_dict):\n"
            "        self.steps = state_dict[\"steps\"]\n\n"
            "    def register(self, trainer, name=\"count_steps\"):\n"
            "        trainer.register_module(name, self)\n"
            "        trainer.register_op(\"post_steps\", self)\n",
        ),
        Example(
            "from example_hooks import StatelessHook\n\n\n"
            "class PrintLoss(StatelessHook):\n"
            "    def __call__(self, batch):\n"
            "        print(batch[\"loss\"])\n"
            "        return batch\n",
            files={"example_hooks.py": "from torchrl.trainers import TrainerHookBase\n\n\n"
                   "class StatelessHook(TrainerHookBase):\n"
                   "    def state_dict(self):\n        return {}\n\n"
                   "    def load_state_dict(self, state_dict):\n        pass\n\n"
                   "    def register(self, trainer, name):\n        trainer.register_op(\"post_loss\", self)\n"},
            note="Methods inherited from a base class in another file of the project count.",
        ),
        Example(
            STATEFUL_HOOK,
            note="A class without `register` that its file does not build may be an abstract base: it is reported "
                 "where it is built.",
        ),
        Example(
            "from example_hooks import StatefulHook\n\n\n"
            "class FrameCounter(StatefulHook):\n"
            "    state_keys = (\"frames\",)\n\n"
            "    def __init__(self):\n"
            "        self.frames = 0\n\n"
            "    def __call__(self, batch):\n"
            "        self.frames += batch.numel()\n\n"
            "    def register(self, trainer, name=\"frame_counter\"):\n"
            "        trainer.register_module(name, self)\n"
            "        trainer.register_op(\"pre_steps_log\", self)\n\n\n"
            "counter = FrameCounter()\n",
            files={"example_hooks.py": STATEFUL_HOOK},
            note="A subclass that completes such a base is built: its checkpoint holds `frames`.",
        ),
        Example(
            "from torchrl.trainers import Trainer\n\n"
            "trainer = Trainer(collector=collector, total_frames=10_000, frame_skip=1, optim_steps_per_batch=8,\n"
            "                  loss_module=loss, optimizer=optimizer)\n"
            "trainer.register_op(\"pre_epoch\", reset_stats)\n",
            note="`pre_epoch` is valid since torchrl 0.14.",
        ),
        Example(
            "from my_project.scheduling import Scheduler\n\n"
            "scheduler = Scheduler()\n"
            "scheduler.register_op(\"post_step\", tick)\n",
            note="A receiver built by another class's constructor is not a Trainer.",
        ),
        Example(
            "def attach(trainer, stage, op):\n"
            "    trainer.register_op(stage, op)\n",
            note="A destination that is not a string literal is not checked.",
        ),
    )
    invalid = (
        Example(
            "from torchrl.trainers import TrainerHookBase\n\n\n"
            "class CountSteps(TrainerHookBase):\n"
            "    def __init__(self):\n"
            "        self.steps = 0\n\n"
            "    def __call__(self):\n"
            "        self.steps += 1\n\n"
            "    def register(self, trainer, name=\"count_steps\"):\n"
            "        trainer.register_module(name, self)\n"
            "        trainer.register_op(\"post_steps\", self)\n",
            message="`state_dict`",
            note="The checkpoint of a Trainer holding this hook raises `NotImplementedError`.",
        ),
        Example(
            "from torchrl.trainers import Trainer\n\n"
            "trainer = Trainer(collector=collector, total_frames=10_000, frame_skip=1, optim_steps_per_batch=8,\n"
            "                  loss_module=loss, optimizer=optimizer)\n"
            "trainer.register_op(\"post_step\", log_reward)\n",
            fixed="from torchrl.trainers import Trainer\n\n"
            "trainer = Trainer(collector=collector, total_frames=10_000, frame_skip=1, optim_steps_per_batch=8,\n"
            "                  loss_module=loss, optimizer=optimizer)\n"
            "trainer.register_op(\"post_steps\", log_reward)\n",
            unsafe=True,
            message="`post_steps`",
        ),
        Example(
            "def add_hooks(trainer, logger):\n"
            "    trainer.register_op('post_epoch', logger.flush)\n",
            target="0.13",
            message="`post_epoch`",
            note="Before torchrl 0.14 only the original ten destinations exist; an unknown receiver may be a Trainer.",
        ),
        Example(
            "from torchrl.trainers import Trainer\n\n\n"
            "class MyTrainer(Trainer):\n"
            "    def setup_hooks(self):\n"
            "        self.register_op(\"batch_proces\", self.normalize)\n",
            fixed="from torchrl.trainers import Trainer\n\n\n"
            "class MyTrainer(Trainer):\n"
            "    def setup_hooks(self):\n"
            "        self.register_op(\"batch_process\", self.normalize)\n",
            unsafe=True,
        ),
        Example(
            "from example_hooks import HookBase\n\n\n"
            "class Flush(HookBase):\n"
            "    def register(self, trainer, name=\"flush\"):\n"
            "        trainer.register_op(\"post_epoch_log\", self)\n",
            files={"example_hooks.py": "from torchrl.trainers import TrainerHookBase\n\n\n"
                   "class HookBase(TrainerHookBase):\n"
                   "    def state_dict(self):\n        return {}\n"},
            message="`load_state_dict`",
            note="Bases in other files are followed: `state_dict` is inherited, `load_state_dict` is not.",
        ),
        Example(
            "from torchrl.trainers import TrainerHookBase\n\n\n"
            "class Flush(TrainerHookBase):\n"
            "    def state_dict(self):\n"
            "        \"Not checkpointed yet.\"\n"
            "        raise NotImplementedError\n\n"
            "    def load_state_dict(self, state_dict):\n"
            "        pass\n\n"
            "    def register(self, trainer, name=\"flush\"):\n"
            "        trainer.register_module(name, self)\n",
            message="`state_dict`",
            note="A method whose body only raises `NotImplementedError` fails at the first checkpoint like a missing one.",
        ),
        Example(
            "from example_hooks import StatefulHook\n\n\n"
            "def attach(trainer):\n"
            "    hook = StatefulHook()\n"
            "    hook.register(trainer, \"stateful\")\n",
            files={"example_hooks.py": STATEFUL_HOOK},
            message="`StatefulHook(...)` builds a hook without a working `register`",
            note="The base class itself is built, in another file than its own: `register` raises `NotImplementedError`.",
        ),
    )

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self._hook_classes: list[tuple[cst.ClassDef, str]] = []  # judged once the file's calls are known
        self._calls: dict[str, cst.Call] = {}  # the first call of each class (or function) the file makes

    # ----- hook classes -----
    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        cls = self.ctx.current_class
        if cls is None or cls.abstract or not may_derive_from(
                self.ctx.facts.classes, cls.qualname, TRAINER_HOOK_BASES.__contains__):
            return
        self._hook_classes.append((node, cls.qualname))

    def leave_Module(self, node: cst.Module) -> None:
        """A hook class at its statement (built in this file or not); a class of another file where this
        file builds it: an abstract-looking base is only wrong where an instance of it is made."""
        remedy = ("implement {missing} (a body that only raises NotImplementedError counts as missing): "
                  "without it, {consequences}")
        for statement, qualname in self._hook_classes:
            name = qualname.rpartition(".")[2]
            message = f"`{name}` lacks a working {{missing}}: `TrainerHookBase`'s versions raise NotImplementedError"
            self.report(statement, message, remedy=remedy, requires=(HookMethods(qualname, qualname in self._calls),))
        for callee, call in self._calls.items():
            if callee in self.ctx.facts.classes or not may_be_project(callee) \
                    or not callee.rpartition(".")[2][:1].isupper():  # classes only, by their name
                continue
            written = dotted_name(call.func) or callee.rpartition(".")[2]
            message = f"`{written}(...)` builds a hook without a working {{missing}}"
            self.report(call, message, remedy=remedy + " (or build a subclass that implements them)",
                        requires=(HookMethods(callee, built=True, elsewhere=True),))

    # ----- register_op -----
    def visit_Call(self, node: cst.Call) -> None:
        callee = self.ctx.callee(node)
        if callee is not None:
            self._calls.setdefault(callee, node)
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("register_op", "register_hook"):
            return
        dest = keyword(node, "dest")
        args = positional(node)
        written = dest.value if dest is not None else args[0].value if args else None
        literal = bound_once(written, self.ctx) if written is not None else None  # ``DEST = "post_step"``
        if not isinstance(literal, (cst.SimpleString, cst.ConcatenatedString)):
            return
        name = literal.evaluated_value
        valid = trainer_hooks_for(self.ctx.target)
        if not isinstance(name, str) or name in valid:
            return
        requires = self._trainer_requirements(func.value, strict=func.attr.value == "register_hook")
        if requires is None:
            return
        method = func.attr.value
        message = (f"`{method}({name!r}, ...)` raises `RuntimeError`: {name!r} is not a hook destination in "
                   f"torchrl {version_text(self.ctx.target)}")
        fix = self._fix(literal, name, valid) if literal is written else None  # a constant may serve elsewhere too
        self.report(node, message, remedy=_remedy(name, valid), fix=fix, requires=requires)

    @staticmethod
    def _fix(literal: cst.BaseExpression, name: str, valid: tuple[str, ...]) -> Fix | None:
        if not isinstance(literal, cst.SimpleString):
            return None
        close = [hook for hook in valid if one_edit_away(name, hook)]
        if len(close) != 1 or literal.raw_value != name:
            return None
        new = cst.SimpleString(f"{literal.prefix}{literal.quote}{close[0]}{literal.quote}")
        description = (f"Rename the destination {name!r} to {close[0]!r}; unsafe: the op then runs at that "
                       f"point of the loop, with that destination's arguments")
        return Fix("unsafe", description, (Edit(literal, new),))

    def _trainer_requirements(self, receiver: cst.BaseExpression, strict: bool) -> tuple[Requirement, ...] | None:
        """() when the receiver is a Trainer or may be one, requirements when the index decides, None when
        it is known not to be one. With ``strict``, an unknown receiver counts as not a Trainer."""
        unknown: tuple[Requirement, ...] | None = None if strict else ()
        instance = self.ctx.instance_of(receiver)
        if instance is None:
            return unknown
        if instance.kind == "self":
            return (IsTrainer(instance.names[0]),)
        if instance.kind == "self-attr":  # what the member holds, the index says (``reach.member_class``)
            return (IsTrainer(instance.names[0], unknown is not None, instance.attr),)
        if instance.kind in ("built", "annotated"):
            return self._built_by(list(instance.names), unknown)
        return unknown

    @staticmethod
    def _built_by(classes: list[str | None], unknown: tuple[Requirement, ...] | None) -> tuple[Requirement, ...] | None:
        """Requirements for a receiver built by (or annotated as) one of ``classes``, or by a factory:
        the index says what the factory gives."""
        requires: list[Requirement] = []
        for qualname in classes:
            if qualname is None:
                return unknown
            if is_torchrl_trainer(qualname):
                return ()
            requires.append(IsTrainer(qualname, unknown_is_trainer=unknown is not None))
        return tuple(requires) or unknown

    # ----- resolution against the project index -----
    @classmethod
    def resolve(cls, requirement: Requirement, index: ProjectIndex, path: str,
                options: Mapping[str, Any]) -> dict[str, str] | None:
        if isinstance(requirement, IsTrainer):
            qualname = requirement.qualname
            if requirement.member is not None:
                held = member_class(index, qualname, requirement.member, path)
                if held is None:
                    return {} if requirement.unknown_is_trainer else None
                qualname = held
            if index.derives_from(qualname, is_torchrl_trainer, near=path):
                return {}
            if index.get_class(qualname, path) is not None:
                return None
            if index.get_function(qualname, path) is not None:  # a factory of the project
                return {} if requirement.unknown_is_trainer and index.built_class(qualname, path) is None else None
            # A class outside the project: only a name that says so is taken for a Trainer; a function
            # outside it may well return one.
            if qualname.rpartition(".")[2][:1].isupper():
                return {} if qualname.endswith("Trainer") else None
            return {} if requirement.unknown_is_trainer else None
        if not isinstance(requirement, HookMethods):
            return super().resolve(requirement, index, path, options)
        hook = index.get_class(requirement.qualname, path)
        if hook is None or hook.abstract:
            return None
        missing = _missing_methods(hook.qualname, index, hook.path)
        if not missing or ("register" not in missing and requirement.elsewhere):
            return None  # a class that can register itself is reported at its own statement
        if "register" in missing and not requirement.built:
            return None  # maybe an abstract base: its subclasses may complete it
        return {
            "missing": ", ".join(f"`{m}`" for m in missing),
            "consequences": "; ".join(_CONSEQUENCES[m] for m in missing),
        }


def _missing_methods(qualname: str, index: ProjectIndex, path: str) -> list[str]:
    """Hook methods that resolve, along the class's MRO, to TrainerHookBase's abstract ones."""
    # TrainerHookBase (linted or not) is a leaf: its own bases do not matter.
    order = index.mro(qualname, path, leaf=lambda name: name in TRAINER_HOOK_BASES)
    if order is None or not any(name in TRAINER_HOOK_BASES for name, _ in order):
        return []
    missing = []
    for method in TRAINER_HOOK_METHODS:
        for name, facts in order:
            if name in TRAINER_HOOK_BASES:
                missing.append(method)
                break
            if facts is not None:
                if method in facts.stubs:  # defined only to raise NotImplementedError: fails the same way
                    missing.append(method)
                if method in facts.methods:
                    break
                continue
            known = _KNOWN_METHODS.get(name)
            if known is None or method in known:
                break  # a library class we cannot see may define it
    return missing
