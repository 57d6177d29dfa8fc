"""The exception types every runtime message goes through, and a warn-once helper.

Importing this module does not import torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
import warnings
from collections.abc import Iterator


class RLGuardError(AssertionError):
    """A TorchRL misuse or silent bug caught at run time.

    Messages say what went wrong and where (member, key or file), what to do, and the
    matching lint rule code.
    """


class RLGuardWarning(UserWarning):
    """rlguard corrected a TorchRL behaviour, or cannot guarantee it here."""


RUNTIME_PACKAGES = ("torch", "torchrl", "tensordict")
MISSING_RUNTIME = "rlguard.runtime needs `rlguard[runtime]` (torch, torchrl, tensordict)"
# How to get them. `pip install 'rlguard[runtime]'` needs a release on a package index, which rlguard has
# not had yet: the extra installs from a checkout, or the three packages directly.
INSTALL_RUNTIME = "pip install '.[runtime]' in a checkout of rlguard, or pip install torch torchrl tensordict"


class MissingRuntimeError(ImportError):
    """rlguard.runtime was used in an environment without torch, torchrl or tensordict."""


@contextlib.contextmanager
def runtime_imports() -> Iterator[None]:
    """Turn a failed import of torch, torchrl or tensordict into one line that says what to install."""
    try:
        yield
    except ModuleNotFoundError as error:
        failed = (error.name or "").partition(".")[0]
        if failed not in RUNTIME_PACKAGES:
            raise
        missing = [name for name in RUNTIME_PACKAGES if name == failed or importlib.util.find_spec(name) is None]
        raise MissingRuntimeError(
            f"{MISSING_RUNTIME}; not installed here: {', '.join(missing)}. Run: {INSTALL_RUNTIME}",
            name=failed,
        ) from None


_warned: set[str] = set()  # the scope when no install() or installed() block is active
_warned_lock = threading.Lock()


def warn_once(key: str, message: str, stacklevel: int = 3) -> None:
    """Emit ``message`` as an RLGuardWarning the first time ``key`` is seen in this scope.

    The scope is the active ``installed()`` block (so, under pytest, the test) or ``install()``
    call; without either, the process.
    """
    from rlguard.runtime.settings import active

    scope = active()
    if scope is not None:
        if not scope.first_time(key):
            return
    else:
        with _warned_lock:
            if key in _warned:
                return
            _warned.add(key)
    warnings.warn(message, RLGuardWarning, stacklevel=stacklevel)
