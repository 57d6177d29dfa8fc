"""What the runtime corrects and checks right now: the settings every patched entry point reads.

``install()`` sets the process-wide settings. An ``installed()`` block (and so the pytest
fixture and marker) sets the settings of its own context, the thread or asyncio task that opened
it, and replaces the process-wide ones there until it closes. Every patched torchrl entry point
reads :func:`active` on each call, so a block never changes what another thread runs.

A ``Settings`` is also a warn-once scope: a warning shown once per installed block or per test,
never once per process, so ``pytest.warns`` tests do not depend on their order.

This module imports no torch: the pytest plugin parses ``--rlguard=SPEC`` with it.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Mapping
from typing import Any

from rlguard.runtime.errors import RLGuardError

# The correction groups, in the order install() applies their patches.
COMPONENTS = ("collectors", "recurrent", "samplers", "buffers", "training")
# TrainingGuard's individual checks, switched inside the "training" group.
CHECKS = ("nonfinite", "detached_loss", "unchanged_params", "priorities", "policy_lag", "recurrent", "pinned")

SPEC_HELP = (
    "comma-separated items applied in order over the defaults (everything on, raise, lag 1): "
    "'all' or 'none'; a group (collectors, recurrent, samplers, buffers, training) to switch "
    "it on, '-group' to switch it off; 'training.CHECK' or '-training.CHECK' for one check "
    f"({', '.join(CHECKS)}); 'warn' to warn instead of raising; 'max_policy_lag=N'. "
    "Example: -samplers,-training.priorities,warn"
)


class Settings:
    """One activation: its groups, checks and mode, and the warnings it has already shown."""

    def __init__(
        self, components: frozenset[str], checks: frozenset[str], warn: bool, max_policy_lag: int, generation: int
    ) -> None:
        self.components = components
        self.checks = checks
        self.warn = warn
        self.max_policy_lag = max_policy_lag
        self.generation = generation  # uninstall() makes every older Settings inactive
        self.warned: set[str] = set()
        self._guard: Any = None
        self._lock = threading.Lock()

    def guard(self) -> Any:
        """The TrainingGuard that runs this activation's checks (one per activation: its own counts)."""
        with self._lock:
            if self._guard is None:
                from rlguard.runtime.guard import TrainingGuard

                switches = {name: name in self.checks for name in CHECKS}
                self._guard = TrainingGuard(**switches, warn=self.warn, max_policy_lag=self.max_policy_lag)
            return self._guard

    def first_time(self, key: str) -> bool:
        """Whether ``key`` is new to this scope (and remember it)."""
        with self._lock:
            new = key not in self.warned
            self.warned.add(key)
            return new


_context: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("rlguard_settings", default=None)
_process: Settings | None = None
_generation = 0


def active() -> Settings | None:
    """The settings in force for the caller: its innermost open block's, else install()'s, else None."""
    settings = _context.get()
    if settings is not None and settings.generation == _generation:
        return settings
    return _process


def active_process() -> Settings | None:
    return _process


def wants(component: str) -> bool:
    settings = active()
    return settings is not None and component in settings.components


def build(
    *,
    collectors: bool = True,
    recurrent: bool = True,
    samplers: bool = True,
    buffers: bool = True,
    training: bool = True,
    checks: Mapping[str, bool] | None = None,
    warn: bool = False,
    max_policy_lag: int = 1,
) -> Settings:
    """Validated settings from install()'s keyword arguments."""
    groups = {
        "collectors": collectors,
        "recurrent": recurrent,
        "samplers": samplers,
        "buffers": buffers,
        "training": training,
    }
    switched = dict(checks or {})
    unknown = sorted(set(switched) - set(CHECKS))
    if unknown:
        raise RLGuardError(f"rlguard: unknown training check(s) {unknown}; the checks are {', '.join(CHECKS)}")
    if isinstance(max_policy_lag, bool) or not isinstance(max_policy_lag, int) or max_policy_lag < 0:
        raise RLGuardError(f"rlguard: max_policy_lag must be an int >= 0, not {max_policy_lag!r}")
    return Settings(
        components=frozenset(name for name, on in groups.items() if on),
        checks=frozenset(name for name in CHECKS if switched.get(name, True)),
        warn=bool(warn),
        max_policy_lag=max_policy_lag,
        generation=_generation,
    )


def parse_spec(spec: str) -> dict[str, Any]:
    """install() keyword arguments from a ``--rlguard=SPEC`` / ini string (see SPEC_HELP)."""
    options: dict[str, Any] = {}
    checks: dict[str, bool] = {}
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        on = not item.startswith("-")
        name = item.lstrip("-")
        if item in ("all", "none"):
            options.update(dict.fromkeys(COMPONENTS, item == "all"))
        elif name in COMPONENTS:
            options[name] = on
        elif name.startswith("training.") and name.partition(".")[2] in CHECKS:
            checks[name.partition(".")[2]] = on
        elif item in ("warn", "raise"):
            options["warn"] = item == "warn"
        elif item.startswith("max_policy_lag=") and item.partition("=")[2].isdigit():
            options["max_policy_lag"] = int(item.partition("=")[2])
        else:
            raise RLGuardError(f"rlguard: {item!r} in {spec!r} is not a setting. SPEC: {SPEC_HELP}")
    if checks:
        options["checks"] = checks
    return options


def merged(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``layers``, later ones winning; their ``checks`` merge check by check."""
    result: dict[str, Any] = {}
    for layer in layers:
        checks = {**result.get("checks", {}), **layer.get("checks", {})}
        result.update(layer)
        if checks:
            result["checks"] = checks
    return result


# -- changed only by install.py, under its lock ------------------------------------------------


def set_process(settings: Settings | None) -> None:
    global _process
    _process = settings


def enter(settings: Settings) -> contextvars.Token[Settings | None]:
    return _context.set(settings)


def leave(token: contextvars.Token[Settings | None]) -> None:
    _context.reset(token)


def invalidate() -> None:
    """Make every block's settings, in every context, inactive (uninstall())."""
    global _generation, _process
    _generation += 1
    _process = None
