"""Loss-side corrections for uncopyable networks (RLG001), applied by ``install(collectors=True)``.

Every path of torchrl 0.14 that deep-copies a user's network (``deepcopy`` in
``torchrl/objectives``):

- ``LossModule.get_stateful_net()`` copies by default: a network that is marked ``@uncopyable``
  or cannot be copied comes back uncopied (``copy=False``), with a warning;
- ``DiscreteCQLLoss.make_value_estimator()`` (run by the first forward) and ``VTrace.for_loss()``
  (``make_value_estimator(ValueEstimators.VTrace)`` on a functional loss) copy a network only to
  bake the loss's parameters into it: such a network is used as it is instead, as ``DQNLoss``
  does, with a warning;
- ``DDPGLoss`` and ``QMixerLoss`` copy their networks when they are built, and keep the copies:
  they raise ``RLGuardError`` naming the member before torchrl touches the networks, instead
  of an unrelated pickling error that leaves the networks holding meta tensors.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from tensordict import TensorDict
from torch import nn
from torchrl.objectives import DDPGLoss, DiscreteCQLLoss, LossModule
from torchrl.objectives.multiagent import QMixerLoss
from torchrl.objectives.value import VTrace

from rlguard.advice import ESTIMATOR, LOSS, STATEFUL, remedy
from rlguard.runtime._patch import Patch
from rlguard.runtime.errors import RLGuardError, warn_once
from rlguard.runtime.marker import (
    LINT_NOTE,
    Uncopyable,
    copy_error,
    find_marked,
    find_uncopyable,
    user_stacklevel,
    whole,
)

T = TypeVar("T")

# Losses whose constructor deep-copies networks, the arguments it copies, and what the message says.
_COPYING_LOSSES: tuple[tuple[type[LossModule], tuple[str, ...], str], ...] = (
    (DDPGLoss, ("actor_network", "value_network"), "DDPGLoss deep-copies its actor and value networks when it is built"),
    (QMixerLoss, ("local_value_network", "mixer_network"),
     "QMixerLoss deep-copies its local value and mixer networks when it is built"),
)


def patches() -> list[Patch]:
    for_loss = VTrace.__dict__["for_loss"].__func__
    return [
        Patch(LossModule, "get_stateful_net", _uncopied_if_uncopyable(LossModule.get_stateful_net)),
        Patch(DiscreteCQLLoss, "make_value_estimator", _cql_estimator(DiscreteCQLLoss.make_value_estimator)),
        Patch(VTrace, "for_loss", classmethod(_vtrace_for_loss(for_loss))),
        *(
            Patch(loss, "__init__", _copyable_networks_first(loss.__init__, networks, why))
            for loss, networks, why in _COPYING_LOSSES
        ),
    ]


def _uncopied_if_uncopyable(get_stateful_net: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(get_stateful_net)
    def wrapper(self: LossModule, network_name: str, copy: bool | None = None) -> Any:
        if copy is False or not self.functional:
            return get_stateful_net(self, network_name, copy)
        loss = type(self).__name__

        def warn(culprit: Uncopyable) -> None:
            _warn(f"{loss}.get_stateful_net", culprit,
                  f"{loss}.get_stateful_net({network_name!r}) could not deep-copy the network",
                  "rlguard returned the loss's own network with its parameters loaded, as copy=False "
                  "does: changing it changes the loss's network", STATEFUL)

        network = getattr(self, network_name)
        return _copy_or(network, network_name, lambda: get_stateful_net(self, network_name, copy),
                        lambda: get_stateful_net(self, network_name, False), warn)

    return wrapper


def _cql_estimator(make_value_estimator: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(make_value_estimator)
    def wrapper(self: DiscreteCQLLoss, *args: Any, **kwargs: Any) -> Any:
        network = self.value_network
        return _shared_if_uncopyable(network, "value_network", "DiscreteCQLLoss.make_value_estimator()",
                                     lambda: make_value_estimator(self, *args, **kwargs))

    return wrapper


def _vtrace_for_loss(for_loss: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(for_loss)
    def wrapper(cls: type, loss_module: Any, **hyperparams: Any) -> Any:
        network = hyperparams.get("actor_network") or getattr(loss_module, "actor_network", None)
        run = functools.partial(for_loss, cls, loss_module, **hyperparams)
        if not getattr(loss_module, "functional", False) or not isinstance(network, nn.Module):
            return run()  # upstream copies only the actor of a functional loss
        where = f"VTrace.for_loss() (make_value_estimator(ValueEstimators.VTrace) on {type(loss_module).__name__})"
        return _shared_if_uncopyable(network, "actor_network", where, run)

    return wrapper


def _shared_if_uncopyable(network: nn.Module, name: str, where: str, run: Callable[[], T]) -> T:
    """``run()``, in which torchrl deep-copies ``network``; when it cannot, with the network shared."""

    def warn(culprit: Uncopyable) -> None:
        _warn(where, culprit, f"{where} deep-copies the network `{name}`",
              "rlguard did not copy it: the estimator uses the loss's own network, with the loss's "
              "parameters, as DQNLoss does", ESTIMATOR)

    def shared() -> T:
        with _deepcopy_returns_itself(network):
            return run()

    return _copy_or(network, name, run, shared, warn)


def _copy_or(network: Any, name: str, copying: Callable[[], T], uncopied: Callable[[], T],
             warn: Callable[[Uncopyable], None]) -> T:
    """``copying()``; ``uncopied()`` instead, after ``warn``, when ``network`` is marked or its copy fails."""
    culprit = find_marked(network, name)
    if culprit is None:
        try:
            return copying()
        except Exception as error:  # only a failure that the network's copy explains falls back
            culprit = find_uncopyable(network, name)
            if culprit is None and copy_error(network) is None:
                raise  # the network copies: something else failed
            culprit = culprit or whole(network, name, error)
    warn(culprit)
    return uncopied()


@contextlib.contextmanager
def _deepcopy_returns_itself(network: nn.Module) -> Iterator[None]:
    # copy.deepcopy looks __deepcopy__ up on the instance: for the duration of torchrl's call,
    # its copy of this network is the network itself. Another thread deep-copying this same
    # network in that window would share it too; it could not have copied it anyway.
    vars(network)["__deepcopy__"] = lambda memo: network
    try:
        yield
    finally:
        del vars(network)["__deepcopy__"]


def _warn(key: str, culprit: Uncopyable, what: str, done: str, site: str) -> None:
    warn_once(
        f"RLG001:{key}:{culprit.path}",
        f"rlguard: {what}: {culprit.describe()}. {done}. "
        + remedy(site, culprit.holder_name(), marked=culprit.marked)
        + LINT_NOTE,
        stacklevel=user_stacklevel(),
    )


def _copyable_networks_first(init: Callable[..., None], networks: tuple[str, ...], why: str) -> Callable[..., None]:
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self: LossModule, *args: Any, **kwargs: Any) -> None:
        call = signature.bind(self, *args, **kwargs)
        given = {name: call.arguments[name] for name in networks if isinstance(call.arguments.get(name), nn.Module)}
        culprit = _first(find_marked, given)
        if culprit is None:
            weights = {network: TensorDict.from_module(network, as_module=True) for network in given.values()}
            try:
                init(self, *args, **kwargs)  # torchrl's own copy only: a network's __deepcopy__ runs once
                return
            except BaseException as error:
                for network, saved in weights.items():  # whatever failed, no meta tensors stay behind
                    saved.to_module(network)
                # the member that failed, searched only after a failure
                culprit = _first(find_uncopyable, given) if isinstance(error, Exception) else None
                if culprit is None:
                    raise
        # raised outside the except block: the message replaces torchrl's unrelated pickling error
        raise RLGuardError(
            f"rlguard: {why}, but {culprit.describe()}. "
            + remedy(LOSS, culprit.holder_name(), marked=culprit.marked)
            + LINT_NOTE
        )

    return __init__


def _first(find: Callable[[Any, str], Uncopyable | None], networks: dict[str, nn.Module]) -> Uncopyable | None:
    """What ``find`` reports for the first of ``networks`` it reports anything for."""
    return next(filter(None, (find(network, name) for name, network in networks.items())), None)
