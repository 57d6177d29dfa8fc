"""What to do about a policy or network that cannot be copied: one text per kind of copy site.

Shared by the lint rule RLG001 and by ``rlguard.runtime``, so that the linter and the runtime
give the same advice for the same site. Every remedy removes the crash on torchrl 0.14: the
``@rlguard.runtime.uncopyable`` marker is offered only where ``rlguard.runtime.install()`` then
acts on it, and always together with that call (the marker alone changes nothing in torchrl).

Importing this module imports neither torch nor libcst.
"""

from __future__ import annotations

# Kinds of copy site.
DEEPCOPY = "deepcopy"  # copy.deepcopy(policy): nothing in rlguard.runtime changes it
DEVICE = "device"  # a single-process Collector moves the policy to policy_device= / device=
PICKLE = "pickle"  # multi-process collectors pickle the policy to their workers
LOSS = "loss"  # DDPGLoss and QMixerLoss deep-copy their networks when they are built
ESTIMATOR = "estimator"  # DiscreteCQLLoss's value estimator and VTrace deep-copy a network
STATEFUL = "stateful"  # LossModule.get_stateful_net() deep-copies unless copy=False
SITES = (DEEPCOPY, DEVICE, PICKLE, LOSS, ESTIMATOR, STATEFUL)

_INSTALL = "and call `rlguard.runtime.install()`"


def remedy(site: str, holder: str = "{holder}", *, keyword: str = "policy_device", marked: bool = False) -> str:
    """The sentence that tells a user how to fix the site.

    ``holder`` names the user's class that stores the member (the linter passes the
    placeholder ``{holder}`` and fills it in later). ``keyword`` is the collector argument
    that asked for the device. ``marked``: the member is itself marked ``@uncopyable``, so
    the remedy never asks to mark it, nor to make it copyable behind the marker's back.
    """
    if site not in _OPTIONS:
        raise ValueError(f"unknown copy site {site!r}; expected one of {', '.join(SITES)}")
    if marked and site in _MARKED_SENTENCES:
        return _MARKED_SENTENCES[site]
    options = _OPTIONS[site](holder, keyword, marked)
    return "To fix it, " + ("; ".join(options[:-1]) + "; or " if len(options) > 1 else "") + options[-1] + "."


def _share(holder: str) -> str:
    return f"give `{holder}` a `__deepcopy__` that shares or rebuilds that member"


def _mark(holder: str, then: str) -> str:
    return f"mark `{holder}` `@rlguard.runtime.uncopyable` {_INSTALL}, which then {then}"


def _deepcopy(holder: str, keyword: str, marked: bool) -> list[str]:
    fresh = "build a new policy instead of copying one"
    return [fresh] if marked else [_share(holder), fresh]


def _device(holder: str, keyword: str, marked: bool) -> list[str]:
    moved = (
        f"build the policy on its device yourself and leave `{keyword}=` out, so the Collector "
        "uses it as it is (`policy_factory=` does not avoid this copy: the Collector moves the "
        "policy it builds the same way)"
    )
    return [moved] if marked else [moved, _share(holder), _mark(holder, "runs the policy in place")]


def _pickle(holder: str, keyword: str, marked: bool) -> list[str]:
    factory = "pass `policy_factory=` (a function that builds the policy) instead of `policy=`, so each worker builds its own"
    inside = "create that member inside the worker (for example on first use) instead of before"
    pickled = (
        f"give `{holder}` a `__getstate__` that leaves that member out and a `__setstate__` that "
        "rebuilds it (pickling ignores `__deepcopy__`)"
    )
    return [factory] if marked else [factory, inside, pickled]


def _loss(holder: str, keyword: str, marked: bool) -> list[str]:
    own = f"give `{holder}` a `__deepcopy__` that shares or rebuilds what must not be copied, in place of the marker"
    out = "keep that member out of the networks the loss is given (the environment or a transform can hold it)"
    return [own if marked else _share(holder), out]


def _estimator(holder: str, keyword: str, marked: bool) -> list[str]:
    return [_share(holder), _mark(holder, "builds the estimator on the loss's own network, as DQNLoss does")]


def _stateful(holder: str, keyword: str, marked: bool) -> list[str]:
    then = "returns the loss's own network, as `copy=False` does"
    return ["pass `copy=False` if you do not need a copy", _share(holder), _mark(holder, then)]


_OPTIONS = {
    DEEPCOPY: _deepcopy, DEVICE: _device, PICKLE: _pickle, LOSS: _loss, ESTIMATOR: _estimator, STATEFUL: _stateful,
}
# Where rlguard.runtime already does what the marker asks, and says so in its warning.
_MARKED_SENTENCES = {
    ESTIMATOR: "Nothing to fix: the marker asks for this.",
    STATEFUL: "To avoid this warning, pass `copy=False` if you do not need a copy.",
}
