"""Loss-side corrections for uncopyable networks (RLG001), applied by ``install(collectors=True)``.

``LossModule.get_stateful_net()`` deep-copies by default; a network that cannot be copied now
comes back uncopied (``copy=False``) with a warning. A loss whose constructor must deep-copy its
networks (``DDPGLoss``) raises ``RLGuardError`` naming the member, before torchrl touches the
networks, instead of an unrelated pickling error that also leaves them holding meta tensors.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from torchrl.objectives import DDPGLoss, LossModule

from rlguard.runtime._patch import Patch
from rlguard.runtime.errors import RLGuardError, warn_once
from rlguard.runtime.marker import (
    find_marked,
    find_uncopyable,
    remedies,
    user_stacklevel,
    whole,
)

# Loss whose constructor deep-copies networks, the arguments it copies, and the message's reason.
_COPYING_LOSSES: tuple[tuple[type[LossModule], tuple[str, ...], str], ...] = (
    (DDPGLoss, ("actor_network", "value_network"), "DDPGLoss deep-copies its actor and value networks when it is built"),
)


def patches() -> list[Patch]:
    return [
        Patch(LossModule, "get_stateful_net", _uncopied_if_uncopyable(LossModule.get_stateful_net)),
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
        network = getattr(self, network_name)
        culprit = find_marked(network, network_name)
        if culprit is None:
            try:
                return get_stateful_net(self, network_name, copy)
            except Exception as error:  # any failed copy falls back, like the collector
                culprit = find_uncopyable(network, network_name) or whole(network, network_name, error)
        loss = type(self).__name__
        warn_once(
            f"RLG001:{loss}.get_stateful_net:{culprit.path}",
            f"rlguard: {loss}.get_stateful_net({network_name!r}) could not deep-copy the network: "
            f"{culprit.describe()}. rlguard returned the loss's own network with its parameters "
            "loaded, as copy=False does: changing it changes the loss's network. "
            + remedies(culprit.holder_name()),
            stacklevel=user_stacklevel(),
        )
        return get_stateful_net(self, network_name, False)

    return wrapper


def _copyable_networks_first(init: Callable[..., None], networks: tuple[str, ...], why: str) -> Callable[..., None]:
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self: LossModule, *args: Any, **kwargs: Any) -> None:
        call = signature.bind(self, *args, **kwargs)
        for name in networks:
            culprit = find_uncopyable(call.arguments[name], name)
            if culprit is not None:
                # Checked before torchrl swaps meta tensors into the networks for its copy:
                # a failure there would leave them without their parameters.
                raise RLGuardError(
                    f"rlguard: {why}, but {culprit.describe()}. " + remedies(culprit.holder_name())
                )
        init(self, *args, **kwargs)

    return __init__
