"""A Collector that runs an uncopyable policy in place instead of crashing on the deep copy.

TorchRL's ``_get_policy_and_device`` deep-copies the policy whenever a parameter or buffer is not
on ``policy_device`` (even ``cpu`` against ``cpu:0``). A policy holding a lock, a file, a socket or
a client then fails with an unrelated ``TypeError`` deep inside the constructor, and the policy is
left holding meta tensors instead of its parameters (tensordict's ``to_module`` context does not
swap back on an exception). The correction wraps that one method: when the policy is marked
``@uncopyable`` or cannot be copied, it asks upstream for the policy on the device its parameters
already are on (upstream's no-copy path) and points the collector's policy device there, so
TorchRL moves data to and from it.

Multi-process collectors give each worker its own copy of the policy: pickled with the start
method in use (``spawn`` unless one was set), or forked. Under ``install()`` they refuse a policy
that is marked ``@uncopyable`` or that cannot be pickled as their workers receive it (a
``__deepcopy__`` does not help there), before any worker starts.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDict
from tensordict.base import NO_DEFAULT
from torch import nn
from torchrl.collectors import Collector as _UpstreamCollector
from torchrl.collectors import MultiCollector
from torchrl._utils import _get_mp_ctx  # the context MultiCollector starts its workers with

from rlguard.advice import DEVICE, PICKLE, remedy
from rlguard.runtime._patch import Patch
from rlguard.runtime.errors import RLGuardError, warn_once
from rlguard.runtime.marker import (
    LINT_NOTE,
    Uncopyable,
    find_marked,
    find_uncopyable,
    find_unpicklable,
    user_stacklevel,
    whole,
)


class Collector(_UpstreamCollector):
    """``torchrl.collectors.Collector``, except that an uncopyable policy runs in place.

    When the policy would be deep-copied to ``policy_device`` and it is marked ``@uncopyable``
    or the copy raises, the policy is not copied: it runs on the device of its parameters, data
    is moved to and from that device, and an ``RLGuardWarning`` (RLG001) names the member that
    could not be copied. A copyable policy behaves exactly as upstream. Only direct collection:
    for ``num_collectors``/``backend=`` use torchrl's ``Collector`` under ``install()``.
    """

    def _get_policy_and_device(self, *args: Any, **kwargs: Any) -> Any:
        return _in_place_if_uncopyable(self, super()._get_policy_and_device, *args, **kwargs)


def patches() -> list[Patch]:
    """Correct torchrl's own Collector in place and stop multi-process collectors early."""
    upstream = _UpstreamCollector._get_policy_and_device

    def _get_policy_and_device(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _in_place_if_uncopyable(self, functools.partial(upstream, self), *args, **kwargs)

    return [
        Patch(_UpstreamCollector, "_get_policy_and_device", _get_policy_and_device),
        Patch(MultiCollector, "__init__", _refuse_unsendable_policy(MultiCollector.__init__)),
    ]


def _in_place_if_uncopyable(collector: Any, upstream: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    call = inspect.signature(upstream).bind(*args, **kwargs)
    policy = call.arguments.get("policy")
    requested = call.arguments.get("policy_device", NO_DEFAULT)
    own_device = requested is NO_DEFAULT
    if own_device:
        requested = collector.policy_device
    home = _home_if_copied(policy, requested)
    if home is None:
        return upstream(*args, **kwargs)
    culprit = find_marked(policy, "policy")
    if culprit is None:
        # Copied by upstream alone: a policy's own __deepcopy__ runs once, as in stock torchrl.
        # The search for the member that failed runs only after a failure.
        weights = TensorDict.from_module(policy, as_module=True)
        try:
            return upstream(*args, **kwargs)
        except Exception as error:  # the contract: any failure of the copy falls back
            # upstream copies inside ``to_module(meta)``, which leaves meta tensors behind on error
            weights.to_module(policy)
            culprit = find_uncopyable(policy, "policy") or whole(policy, "policy", error)
    _warn_in_place(collector, culprit, requested, home)
    call.arguments["policy_device"] = home
    result = upstream(*call.args, **call.kwargs)
    if own_device:
        _run_policy_on(collector, home)
    return result


def _home_if_copied(policy: Any, requested: Any) -> torch.device | None:
    """The device of the policy's tensors when upstream would copy it to ``requested``, else None."""
    if not requested or not isinstance(policy, nn.Module):
        return None
    devices = [t.device for t in itertools.chain(policy.parameters(), policy.buffers())]
    if all(device == requested for device in devices):
        return None
    return devices[0]


def _run_policy_on(collector: Any, device: torch.device) -> None:
    # _setup_devices derived these from the requested device just before; rederive them.
    collector.policy_device = device
    collector._sync_policy = collector._get_sync_fn(device)
    collector._cast_to_policy_device = device != collector.env_device


def _warn_in_place(collector: Any, culprit: Uncopyable, requested: Any, home: torch.device) -> None:
    name = type(collector).__name__
    warn_once(
        f"RLG001:{name}:{culprit.path}:{culprit.type_name}",
        f"rlguard: {name} was given policy_device={requested}, which makes TorchRL deep-copy the "
        f"policy, but {culprit.describe()}. rlguard did not copy it: the policy runs in place on "
        f"{home}, where its parameters are, and the collector moves data to and from {home}. "
        + remedy(DEVICE, culprit.holder_name(), marked=culprit.marked)
        + LINT_NOTE,
        stacklevel=user_stacklevel(),
    )


def _refuse_unsendable_policy(init: Callable[..., None]) -> Callable[..., None]:
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        call = signature.bind(self, *args, **kwargs)
        policy = call.arguments.get("policy")
        factories = call.arguments.get("policy_factory")
        factories = factories if isinstance(factories, (list, tuple)) else [factories]
        if policy is not None and not any(factories):  # with a factory, workers build their own
            _refuse_if_unsendable(type(self).__name__, policy)
        init(self, *args, **kwargs)

    return __init__


def _refuse_if_unsendable(name: str, policy: Any) -> None:
    """Raise before any worker starts when a worker could not receive ``policy``."""
    method = _get_mp_ctx().get_start_method()
    if method == "fork":  # forked workers inherit the policy: nothing is pickled
        culprit, how = find_marked(policy, "policy"), "forks it"
    else:
        culprit, how = find_unpicklable(policy, "policy"), f"pickles it (start method {method!r})"
    if culprit is not None:
        raise RLGuardError(
            f"rlguard: {name} gives every worker process its own copy of the policy and {how}, "
            f"but {culprit.describe()}. No worker was started. "
            + remedy(PICKLE, culprit.holder_name(), marked=culprit.marked)
            + LINT_NOTE
        )
