"""libcst, imported on first use.

Most runs never parse: files served from the cache and files the pre-filter clears need no
CST, and importing libcst costs several times Python's own start-up. Modules that work on CSTs
write ``from rlguard.engine.lazy import cst`` and use ``cst.Name`` and friends inside functions
as usual; the first such lookup imports libcst. Nothing may touch ``cst`` at import time (a
test in tests/engine/test_import_isolation.py checks that checking a cleared file loads none).
"""

from __future__ import annotations

import importlib
import types
from typing import TYPE_CHECKING, Any


class _ImportedOnFirstUse(types.ModuleType):
    def __getattr__(self, name: str) -> Any:  # only called for names not yet copied in
        module = importlib.import_module(self.__name__)
        self.__dict__.update(vars(module))  # later lookups are plain dict hits
        return getattr(module, name)


if TYPE_CHECKING:
    import libcst as cst
else:
    cst = _ImportedOnFirstUse("libcst")

__all__ = ["cst"]
