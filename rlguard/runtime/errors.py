"""The two exception types every runtime message goes through, and a warn-once helper."""

from __future__ import annotations

import threading
import warnings


class RLGuardError(AssertionError):
    """A TorchRL misuse or silent bug caught at run time.

    Messages say what went wrong and where (member, key or file), what to do, and the
    matching lint rule code.
    """


class RLGuardWarning(UserWarning):
    """rlguard corrected a TorchRL behaviour, or cannot guarantee it here."""


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(key: str, message: str, stacklevel: int = 3) -> None:
    """Emit ``message`` as an RLGuardWarning the first time ``key`` is seen in this process."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, RLGuardWarning, stacklevel=stacklevel)
