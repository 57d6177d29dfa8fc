"""Training assertions: silent RL bugs turned into loud, explained errors.

:class:`TrainingGuard` holds the checks. They run in three ways:

- ``guard.register(trainer)`` wires them into a torchrl ``Trainer`` (and its checkpoints);
- ``guard.check_batch`` / ``check_loss`` / ``check_step`` (and ``check_priority``,
  ``check_recurrent``, ``check_pinned``) call them by hand in a custom training loop;
- :func:`patches` (applied by ``install(training=True)``) runs them inside torchrl's
  collectors, replay buffers, prioritized samplers, loss modules and LSTM/GRU modules.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn
from torchrl.trainers import TrainerHookBase

from rlguard.runtime import settings
from rlguard.runtime._patch import Patch
from rlguard.runtime.errors import RLGuardError, RLGuardWarning

if TYPE_CHECKING:
    from types import FrameType

    from torch.autograd.graph import Node
    from torchrl.trainers import Trainer

NestedKey = str | tuple[str, ...]

_RECURRENT_RULE = "RLG002 manual-recurrent-mode"
_PINNED_RULE = "RLG004 tensordict-without-device"
_HOOK_RULE = "RLG005 trainer-hook"
_SHOWN = 5  # how many offending keys or parameters a message lists


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.depth: dict[str, int] = {}


_state = _ThreadState()


@contextlib.contextmanager
def _depth(name: str) -> Iterator[bool]:
    """Count nested calls per thread; yields True for the outermost one."""
    depth = _state.depth.get(name, 0)
    _state.depth[name] = depth + 1
    try:
        yield depth == 0
    finally:
        _state.depth[name] = depth


def _fmt(items: list[Any]) -> str:
    shown = ", ".join(repr(item) for item in items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def nonfinite_keys(td: TensorDictBase, keys: Iterable[NestedKey] | None = None) -> list[NestedKey]:
    """Keys of the floating-point entries of ``td`` that hold NaN or inf.

    ``keys`` restricts the search (missing keys are skipped); ``None`` searches every leaf.
    """
    if keys is None:
        items = list(td.items(include_nested=True, leaves_only=True))
    else:
        items = [(key, td.get(key, None)) for key in keys]
    floats = [(key, value) for key, value in items if isinstance(value, torch.Tensor) and value.is_floating_point()]
    if not floats:
        return []
    # NaN and inf survive a sum: one reduction per entry and a single sync in the common case,
    # then an exact test of the suspects (a sum can also overflow).
    device = floats[0][1].device
    sums = torch.stack([value.sum().to(device) for _, value in floats])
    suspects = [entry for entry, finite in zip(floats, torch.isfinite(sums).tolist(), strict=True) if not finite]
    return [key for key, value in suspects if not bool(torch.isfinite(value).all())]


def _observation_reward_keys(collector: Any) -> list[NestedKey] | None:
    """The collector env's observation and reward entries, at the root and under "next"."""
    try:
        specs = (collector.env.full_observation_spec, collector.env.full_reward_spec)
    except AttributeError:  # multi-process collectors hold no env here
        return None
    keys: list[NestedKey] = [key if isinstance(key, tuple) else (key,) for spec in specs for key in spec.keys(True, True)]
    return keys + [("next", *key) for key in keys]


def _reaches(losses: list[torch.Tensor], params: Iterable[torch.Tensor] | None) -> bool:
    """Whether backward from ``losses`` would give any of ``params`` (any leaf when None) a gradient.

    Walks the autograd graph to its AccumulateGrad nodes instead of running backward, so
    the answer comes before the optimizer acts, and stops at the first trained parameter.
    """
    if params is None:
        return any(loss.requires_grad for loss in losses)
    targets = {id(param) for param in params}
    if any(id(loss) in targets for loss in losses):
        return True
    stack: list[Node | None] = [loss.grad_fn for loss in losses if loss.grad_fn is not None]
    seen = set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if id(getattr(node, "variable", None)) in targets:
            return True
        stack.extend(child for child, _ in node.next_functions)
    return False


def _trainable(module: nn.Module) -> list[torch.Tensor]:
    return [param for param in module.parameters() if param.requires_grad]


def _optimizer_params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [param for group in optimizer.param_groups for param in group["params"]]


def _param_names(optimizer: torch.optim.Optimizer, module: nn.Module | None) -> dict[int, str]:
    """Readable names for an optimizer's parameters: from ``module``, else their group position."""
    names = {
        id(param): f"param_groups[{g}][{i}] {tuple(param.shape)}"
        for g, group in enumerate(optimizer.param_groups)
        for i, param in enumerate(group["params"])
    }
    if module is not None:
        names.update((id(param), name) for name, param in module.named_parameters())
    return names


def _policy_pair(collector: Any) -> tuple[nn.Module, nn.Module] | None:
    """(the policy the collector runs, the policy being trained) when they are two modules.

    A single-process collector keeps the user's policy as ``_orig_policy`` and runs
    ``_policy_w_state_dict``, a copy when ``policy_device`` differs from the parameters'.
    """
    used = getattr(collector, "_policy_w_state_dict", None)
    trained = getattr(collector, "_orig_policy", None)
    if isinstance(used, nn.Module) and isinstance(trained, nn.Module) and used is not trained:
        return used, trained
    return None


def _weights_differ(used: nn.Module, trained: nn.Module) -> bool:
    return any(
        a.data_ptr() != b.data_ptr() and not torch.equal(a, b.to(a.device))
        for a, b in zip(used.parameters(), trained.parameters(), strict=False)
    )


def _accelerator_available() -> bool:
    accelerator = getattr(torch, "accelerator", None)
    return accelerator.is_available() if accelerator is not None else torch.cuda.is_available()


def _tensors(obj: Any, key: NestedKey = "sample") -> Iterator[tuple[NestedKey, torch.Tensor]]:
    """(key, tensor) for every tensor in a sample: a TensorDict, a tensor, or a (data, info) pair."""
    if isinstance(obj, torch.Tensor):
        yield key, obj
    elif isinstance(obj, TensorDictBase):
        for nested, value in obj.items(include_nested=True, leaves_only=True):
            if isinstance(value, torch.Tensor):
                yield nested, value
    elif isinstance(obj, dict):
        for name, value in obj.items():
            yield from _tensors(value, name)
    elif isinstance(obj, tuple):
        for item in obj:
            yield from _tensors(item, key)


def _rnn_types() -> tuple[type[nn.Module], ...]:
    from torchrl.modules import GRUModule, LSTMModule

    return LSTMModule, GRUModule


def _rnn_modules(loss_module: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """(qualified name, module) for the LSTM/GRU modules a loss runs.

    Losses keep their networks in ``__dict__`` (their parameters live in ``*_params``), so
    ``named_modules()`` alone does not reach them.
    """
    roots: dict[str, nn.Module] = {"": loss_module, **{k: v for k, v in vars(loss_module).items() if isinstance(v, nn.Module)}}
    seen = set()
    for prefix, root in roots.items():
        for name, module in root.named_modules(prefix=prefix):
            if isinstance(module, _rnn_types()) and id(module) not in seen:
                seen.add(id(module))
                yield name, module


def _step_by_step(module: nn.Module, tensordict: TensorDictBase) -> bool:
    """Whether an RNN module would run (batch, time) data in sequential mode."""
    return tensordict.ndim >= 2 and not getattr(module, "recurrent_mode", True)


def _called_from_loss() -> bool:
    """Whether a loss module's or value estimator's method is on the call stack.

    Read from the stack rather than tracked by wrappers: losses and estimators have many
    entry points (``forward``, ``value_estimator``, ``actor_loss``), and this only runs once
    an RNN call already looks wrong.
    """
    from torchrl.objectives import LossModule
    from torchrl.objectives.value import ValueEstimatorBase

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if isinstance(frame.f_locals.get("self"), (LossModule, ValueEstimatorBase)):
            return True
        frame = frame.f_back
    return False


class TrainingGuard(TrainerHookBase):
    """Assertions that catch silent RL training bugs, each behind a switch.

    Args:
        nonfinite: NaN or inf in collected observations and rewards, and in losses.
        detached_loss: a loss whose backward would give no trained parameter a gradient.
        unchanged_params: an optimizer step that left every parameter unchanged.
        priorities: NaN, inf or negative priorities given to a prioritized sampler.
        policy_lag: a collector policy whose weights lag the trained policy's.
        max_policy_lag: how many consecutive batches a collector may run stale weights,
            e.g. between two ``update_policy_weights_()`` calls. Default 1.
        recurrent: an LSTM/GRU module run in sequential mode on (batch, time) data inside
            a loss or value estimator.
        pinned: unpinned samples from a ``pin_memory=True`` buffer (only with an accelerator).
        warn: warn with :class:`RLGuardWarning` instead of raising :class:`RLGuardError`.

    ``counts`` records how many batches, losses and optimizer steps were checked and how
    many violations were found; it is the guard's checkpointed state.
    """

    def __init__(
        self,
        *,
        nonfinite: bool = True,
        detached_loss: bool = True,
        unchanged_params: bool = True,
        priorities: bool = True,
        policy_lag: bool = True,
        max_policy_lag: int = 1,
        recurrent: bool = True,
        pinned: bool = True,
        warn: bool = False,
    ) -> None:
        self.nonfinite = nonfinite
        self.detached_loss = detached_loss
        self.unchanged_params = unchanged_params
        self.priorities = priorities
        self.policy_lag = policy_lag
        self.max_policy_lag = max_policy_lag
        self.recurrent = recurrent
        self.pinned = pinned
        self.warn = warn
        self.counts = {"batches": 0, "losses": 0, "steps": 0, "violations": 0}
        self._lag: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._trainer: Callable[[], Trainer | None] = lambda: None

    def _fail(self, what: str, todo: str, rule: str | None = None) -> None:
        self.counts["violations"] += 1
        message = f"TrainingGuard: {what} {todo}" + (f" (lint rule {rule})" if rule else "")
        if self.warn:
            warnings.warn(message, RLGuardWarning, stacklevel=3)
        else:
            raise RLGuardError(message)

    # -- checks usable without a Trainer ------------------------------------------------

    def check_batch(
        self,
        batch: TensorDictBase,
        *,
        collector: Any = None,
        keys: Iterable[NestedKey] | None = None,
        where: str | None = None,
    ) -> None:
        """Check one collected batch; call it on every batch a collector yields.

        Args:
            batch: the batch.
            collector: the collector that yielded it. Its env's specs name the observation
                and reward entries to inspect, and it is checked for policy lag: the
                batch was collected with weights other than the trained policy's for more
                than ``max_policy_lag`` batches in a row.
            keys: the entries to inspect for NaN or inf; by default the collector's
                observation and reward entries, or every floating-point entry.
            where: names the batch in messages; defaults to the collector's class.
        """
        where = where or (f"{type(collector).__name__} batch" if collector is not None else "batch")
        if self.nonfinite:
            self.counts["batches"] += 1
            if keys is None and collector is not None:
                keys = _observation_reward_keys(collector)
            bad = nonfinite_keys(batch, keys)
            if bad:
                self._fail(
                    f"{where} holds NaN or inf in {_fmt(bad)}.",
                    "Find where it enters: the environment's step, a transform dividing by a zero "
                    "scale (ObservationNorm or VecNorm before their stats are set), or a reward "
                    "transform. Every parameter trained on it becomes NaN.",
                )
        if collector is not None and self.policy_lag:
            self._check_lag(collector, where)

    def _check_lag(self, collector: Any, where: str) -> None:
        pair = _policy_pair(collector)
        if pair is None:
            return
        lag = self._lag.get(collector, 0) + 1 if _weights_differ(*pair) else 0
        self._lag[collector] = lag
        if lag > self.max_policy_lag:
            self._fail(
                f"{where}: the collector's policy weights have differed from the trained "
                f"policy's for {lag} batches in a row (allowed: {self.max_policy_lag}). The "
                "collector runs a copy of the policy (its policy_device differs from the "
                "parameters' device), so training never reaches it on its own.",
                "Call collector.update_policy_weights_() after each optimization phase, or "
                "register torchrl.trainers.UpdateWeights(collector, 1) with "
                "trainer.register_op('post_steps', ...).",
                _HOOK_RULE,
            )

    def check_loss(
        self,
        losses: TensorDictBase | torch.Tensor,
        params: Iterable[torch.Tensor] | None = None,
        *,
        where: str = "loss",
    ) -> None:
        """Check a loss between its computation and ``backward()``.

        Args:
            losses: a loss module's output, or one loss tensor. As in torchrl's optimizer
                steps, the entries whose name starts with "loss" are the loss; other
                entries are diagnostics and are not checked.
            params: the trained parameters (an optimizer's, or ``module.parameters()``).
                The loss's graph must reach at least one of them; with ``None`` it only
                needs a graph. The graph check is skipped when grad mode is off.
            where: names the loss in messages, e.g. its class.
        """
        td = losses if isinstance(losses, TensorDictBase) else TensorDict({"loss": losses})
        self.counts["losses"] += 1
        # Diagnostics such as PPO's explained_variance may be NaN legitimately: only loss terms count.
        terms = {key: value for key, value in td.items() if isinstance(key, str) and key.startswith("loss")}
        if self.nonfinite and (bad := nonfinite_keys(td, terms)):
            self._fail(
                f"{where} returned NaN or inf in {_fmt(bad)}.",
                "Check its inputs with check_batch, look for log(0), division by a zero std or "
                "an exploding value target; torch.autograd.set_detect_anomaly(True) finds the op.",
            )
        if not (self.detached_loss and torch.is_grad_enabled()):
            return
        params = None if params is None else list(params)
        if terms and not _reaches(list(terms.values()), params):
            target = "any parameter" if params is None else f"any of the {len(params)} trained parameters"
            self._fail(
                f"{where}: backward of {_fmt(list(terms))} gives no gradient to {target}; "
                "the graph is detached from them, so the optimizer step will change nothing.",
                "Look for .detach(), .data, .item(), torch.no_grad() or a copied network between "
                "the parameters and the loss, and build the optimizer from the parameters the "
                "loss uses (e.g. loss_module.parameters()).",
            )

    @contextlib.contextmanager
    def check_step(self, optimizer: torch.optim.Optimizer, module: nn.Module | None = None) -> Iterator[None]:
        """Context manager around ``optimizer.step()``: raise if the step changes nothing.

        It fails when no parameter has a gradient at the step, or when the step leaves
        every parameter that had one unchanged. ``module`` (e.g. the loss module) names
        the parameters in messages::

            loss.backward()
            with guard.check_step(optimizer, loss_module):
                optimizer.step()
        """
        snapshot = self._before_step(optimizer)
        yield
        self._after_step(optimizer, snapshot, module)

    def _before_step(self, optimizer: torch.optim.Optimizer) -> list[tuple[torch.Tensor, torch.Tensor]]:
        if not self.unchanged_params:
            return []
        params = _optimizer_params(optimizer)
        with_grad = [p for p in params if p.grad is not None and bool(p.grad.ne(0).any())]
        if not with_grad:
            self._fail(
                f"{type(optimizer).__name__}.step() found no gradient on any of its {len(params)} "
                "parameters, so it leaves them all unchanged.",
                "Call loss.backward() before optimizer.step(), call optimizer.zero_grad() before "
                "backward (not between backward and step), and build the optimizer from the "
                "parameters the loss trains.",
            )
        return [(param, param.detach().clone()) for param in with_grad]

    def _after_step(
        self,
        optimizer: torch.optim.Optimizer,
        snapshot: list[tuple[torch.Tensor, torch.Tensor]],
        module: nn.Module | None,
    ) -> None:
        if not snapshot:
            return
        self.counts["steps"] += 1
        if any(not torch.equal(param, before) for param, before in snapshot):
            return
        names = _param_names(optimizer, module)
        rates = sorted({group.get("lr") for group in optimizer.param_groups}, key=repr)
        self._fail(
            f"{type(optimizer).__name__}.step() left all {len(snapshot)} parameters that had a "
            f"gradient unchanged ({_fmt([names[id(p)] for p, _ in snapshot])}); learning rate(s): {rates}.",
            "Check the learning rate and its scheduler (zero, or too small to move float32 "
            "weights) and that this optimizer steps the parameters the loss trains.",
        )

    def check_priority(self, priority: Any, index: Any = None, *, where: str = "update_priority") -> None:
        """Check priorities before a prioritized sampler stores them.

        Args:
            priority: the priorities (a number or a tensor), e.g. a loss's "td_error".
            index: their buffer indices; names the bad slots in messages. Slots below 0
                (entries a writer skipped) are ignored, as the sampler ignores them.
            where: names the caller in messages.
        """
        if not self.priorities or priority is None:
            return
        priority = torch.as_tensor(priority).detach().flatten()
        slots = None if index is None else torch.as_tensor(index, device=priority.device).flatten()
        if slots is not None and slots.shape == priority.shape:
            priority, slots = priority[slots >= 0], slots[slots >= 0]
        else:  # no index, or one the sampler maps to slots itself: name positions instead
            slots = torch.arange(priority.numel(), device=priority.device)
        # Zero is fine: the sampler stores (priority + eps) ** alpha, which stays positive.
        bad = ~torch.isfinite(priority) | (priority < 0)
        if bool(bad.any()):
            self._fail(
                f"{where} got {int(bad.sum())} priorities that are NaN, inf or negative: "
                f"values {priority[bad][:_SHOWN].tolist()} at indices {slots[bad][:_SHOWN].tolist()}.",
                "A NaN enters the sampler's sum tree and max priority and spoils sampling for "
                "good; a negative one turns NaN once raised to the power alpha. Fix the loss "
                "first (check_loss) and pass a non-negative priority such as td_error.abs().",
            )

    def check_recurrent(self, module: nn.Module, tensordict: TensorDictBase, *, where: str | None = None) -> None:
        """Check an LSTM/GRU module about to run on ``tensordict`` inside a loss or value estimator.

        In sequential mode, torchrl's RNN modules treat every time step of (batch, time)
        data as independent (each reads its stored hidden state), with no error: the
        recurrence never runs. Collection, one step at a time, is not affected.
        """
        if not (self.recurrent and _step_by_step(module, tensordict)):
            return
        self._fail(
            f"{where or type(module).__name__} ran in sequential mode on data of shape "
            f"{tuple(tensordict.batch_size)} inside a loss: each time step was treated as "
            "independent, so the recurrent state never flowed through time.",
            "Run the loss or value estimator under `with set_recurrent_mode(True):` (from "
            "torchrl.modules); module.set_recurrent_mode() was removed in torchrl 0.8.",
            _RECURRENT_RULE,
        )

    def check_pinned(self, sample: Any, *, where: str = "sample") -> None:
        """Check a sample from a buffer built with ``pin_memory=True``: every CPU tensor pinned.

        Silent without an accelerator: nothing can be pinned on a CPU-only torch.
        """
        if not self.pinned or not _accelerator_available():
            return
        unpinned = [name for name, t in _tensors(sample) if t.device.type == "cpu" and not t.is_pinned()]
        if unpinned:
            self._fail(
                f"{where}: the buffer has pin_memory=True but {_fmt(unpinned)} came back "
                "unpinned, so copies to the device stay synchronous.",
                "torchrl pins before adding the index and weight entries, and skips TensorDicts "
                "whose device is None: give the TensorDicts you store and build in transforms a "
                "device, or use rlguard.runtime's TensorDictReplayBuffer.",
                _PINNED_RULE,
            )

    # -- Trainer hook ---------------------------------------------------------------------

    def register(self, trainer: Trainer, name: str = "training_guard") -> None:
        """Wire the checks into ``trainer`` and into its checkpoints (under ``name``).

        - ``batch_process``: :meth:`check_batch` with the trainer's collector;
        - ``post_optim_log`` (once per optimization step, after the replay buffer updated
          priorities, with the sampled batch): :meth:`check_priority` on the priority
          entry, when the trainer's replay buffer is prioritized;
        - a forward hook on the loss module: :meth:`check_loss` against the optimizer's
          parameters. No hook point sees the loss in both of the Trainer's optimization
          paths (``process_loss`` is skipped with an ``optimization_stepper``);
        - forward pre-hooks on the loss's LSTM/GRU modules: :meth:`check_recurrent` on the
          calls made from the loss or its value estimator;
        - step hooks on the trainer's optimizer: the :meth:`check_step` check.
        """
        self._trainer = weakref.ref(trainer)
        trainer.register_op("batch_process", self._on_batch)
        trainer.register_op("post_optim_log", self._on_optim_step)
        loss_module = trainer.loss_module
        optimizer = trainer.optimizer
        if isinstance(loss_module, nn.Module):
            params = _optimizer_params(optimizer) if optimizer is not None else _trainable(loss_module)
            self._hook_loss(loss_module, params)
        if optimizer is not None:
            self._hook_optimizer(optimizer, loss_module if isinstance(loss_module, nn.Module) else None)
        trainer.register_module(name, self)

    def _on_batch(self, batch: TensorDictBase) -> TensorDictBase:
        trainer = self._trainer()
        self.check_batch(batch, collector=trainer.collector if trainer is not None else None)
        return batch

    def _on_optim_step(self, sub_batch: TensorDictBase) -> None:
        buffer = _prioritized_buffer(self._trainer())
        if buffer is not None:
            self.check_priority(
                sub_batch.get(buffer.priority_key, None),
                sub_batch.get("index", None),
                where=f"{type(buffer).__name__} priority entry {buffer.priority_key!r}",
            )

    def _hook_loss(self, loss_module: nn.Module, params: list[torch.Tensor]) -> None:
        where = type(loss_module).__name__

        def after_loss(module: nn.Module, args: Any, output: Any) -> None:
            if isinstance(output, (TensorDictBase, torch.Tensor)):
                self.check_loss(output, params, where=where)

        loss_module.register_forward_hook(after_loss)
        for name, module in _rnn_modules(loss_module):
            module.register_forward_pre_hook(functools.partial(self._before_rnn, where=f"{where}.{name}"))

    def _before_rnn(self, module: nn.Module, args: tuple[Any, ...], where: str | None = None) -> None:
        """Check an RNN call made inside a loss; its cheap tests come before the stack walk."""
        td = args[0] if args else None
        if self.recurrent and isinstance(td, TensorDictBase) and _step_by_step(module, td) and _called_from_loss():
            self.check_recurrent(module, td, where=where)

    def _hook_optimizer(self, optimizer: torch.optim.Optimizer, module: nn.Module | None) -> None:
        pending: list[list[tuple[torch.Tensor, torch.Tensor]]] = []

        def before(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            pending.append(self._before_step(opt))

        def after(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
            self._after_step(opt, pending.pop(), module)

        optimizer.register_step_pre_hook(before)
        optimizer.register_step_post_hook(after)

    def state_dict(self) -> dict[str, Any]:
        """The check counters and the registered trainer's current policy lag (plain ints)."""
        collector = self._collector()  # None on a guard no Trainer registered: no lag to report
        lag = self._lag.get(collector, 0) if collector is not None else 0
        return {**self.counts, "policy_lag": lag}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.counts = {key: int(state_dict[key]) for key in self.counts}
        collector = self._collector()
        if collector is not None:
            self._lag[collector] = int(state_dict["policy_lag"])

    def _collector(self) -> Any:
        trainer = self._trainer()
        return trainer.collector if trainer is not None else None


def _prioritized_buffer(trainer: Trainer | None) -> Any:
    """The trainer's replay buffer if its sampler is prioritized, else None."""
    from torchrl.data.replay_buffers.samplers import PrioritizedSampler

    if trainer is None:
        return None
    # A ReplayBufferTrainer hook is only reachable through the trainer's registered modules.
    candidates = [
        getattr(trainer, "replay_buffer", None),
        *(getattr(m, "replay_buffer", None) for m in trainer._modules.values()),
    ]
    for buffer in candidates:
        if isinstance(getattr(buffer, "sampler", None), PrioritizedSampler) and hasattr(buffer, "priority_key"):
            return buffer
    return None


# -- install(training=True) -----------------------------------------------------------------


def _defining(base: type, name: str) -> list[type]:
    """``base`` and its loaded subclasses that define ``name`` themselves."""
    found, stack = [], [base]
    while stack:
        cls = stack.pop()
        if name in vars(cls) and cls not in found:
            found.append(cls)
        stack.extend(cls.__subclasses__())
    return found


def _active_guard() -> TrainingGuard | None:
    """The guard of the settings active for the caller; None once they stopped applying."""
    active = settings.active()
    return active.guard() if active is not None and "training" in active.components else None


def _guarded_iter(original: Callable) -> Callable:
    @functools.wraps(original)
    def __iter__(self: Any) -> Iterator[Any]:
        guard = _active_guard()  # the settings where iteration started, for every batch
        batches = original(self)
        try:
            for batch in batches:
                if guard is not None and isinstance(batch, TensorDictBase):
                    try:
                        guard.check_batch(batch, collector=self)
                    except RLGuardError:
                        # Upstream's __iter__ shuts the collector (and its workers) down on an error
                        # raised inside it; one raised here, outside it, must do the same.
                        self.shutdown()
                        raise
                yield batch
        finally:
            batches.close()

    return __iter__


def _guarded_loss_call(original: Callable) -> Callable:
    @functools.wraps(original)
    def __call__(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        output = original(self, *args, **kwargs)
        guard = _active_guard()
        if guard is not None and isinstance(output, (TensorDictBase, torch.Tensor)):
            guard.check_loss(output, _trainable(self), where=type(self).__name__)
        return output

    return __call__


def _guarded_rnn_forward(original: Callable) -> Callable:
    @functools.wraps(original)
    def forward(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        guard = _active_guard()
        if guard is not None:
            guard._before_rnn(self, args)
        return original(self, *args, **kwargs)

    return forward


def _guarded_update_priority(original: Callable) -> Callable:
    @functools.wraps(original)
    def update_priority(self: Any, index: Any, priority: Any, *args: Any, **kwargs: Any) -> Any:
        # Checked before storing: a rejected update leaves the sampler untouched.
        with _depth("update_priority") as outermost:
            guard = _active_guard()
            if outermost and guard is not None:
                guard.check_priority(priority, index, where=f"{type(self).__name__}.update_priority()")
            return original(self, index, priority, *args, **kwargs)

    return update_priority


def _guarded_sample(original: Callable) -> Callable:
    @functools.wraps(original)
    def sample(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Only the outermost sample() returns what the user gets (subclasses add entries).
        with _depth("sample") as outermost:
            output = original(self, *args, **kwargs)
        guard = _active_guard()
        if outermost and guard is not None and getattr(self, "_pin_memory", False):
            guard.check_pinned(output, where=f"{type(self).__name__}.sample()")
        return output

    return sample


def _wrap(owner: type, name: str, make: Callable[[Callable], Callable]) -> Patch:
    """Patch ``owner.name`` with ``make(current value)``; inherited values are wrapped too."""
    return Patch(owner, name, make(getattr(owner, name)))


def patches() -> list[Patch]:
    """The patches ``install(training=True)`` applies: the guard's checks inside torchrl.

    Each patched call runs the checks of the settings active for the caller (its
    ``installed()`` block, else ``install()``), which switch single checks, choose warn or
    raise and set ``max_policy_lag``. Every collector's batches get
    :meth:`~TrainingGuard.check_batch`; every loss module's output
    :meth:`~TrainingGuard.check_loss` against its own parameters; LSTM/GRU modules run from a
    loss or value estimator :meth:`~TrainingGuard.check_recurrent`; prioritized samplers'
    ``update_priority`` :meth:`~TrainingGuard.check_priority`; and ``pin_memory=True``
    buffers' samples :meth:`~TrainingGuard.check_pinned`. Optimizer steps are not patched: use
    ``register`` or ``check_step`` for those.
    """
    from torchrl.collectors import BaseCollector
    from torchrl.data import ReplayBuffer
    from torchrl.data.replay_buffers.samplers import PrioritizedSampler
    from torchrl.objectives import LossModule

    return [
        _wrap(BaseCollector, "__iter__", _guarded_iter),
        _wrap(LossModule, "__call__", _guarded_loss_call),
        *(_wrap(rnn, "forward", _guarded_rnn_forward) for rnn in _rnn_types()),
        *(
            _wrap(cls, "update_priority", _guarded_update_priority)
            for cls in _defining(PrioritizedSampler, "update_priority")
        ),
        *(_wrap(cls, "sample", _guarded_sample) for cls in _defining(ReplayBuffer, "sample")),
    ]
