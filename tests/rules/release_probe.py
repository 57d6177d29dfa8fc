"""Asks the torchrl and tensordict on ``sys.path`` whether entries of the removed-API table exist.

Run as a script in a fresh interpreter (``python release_probe.py < entries.json``), so that the
release under test, put first on ``PYTHONPATH``, is the one imported. Reads a JSON list of
``[kind, module, name]`` and prints a JSON list of answers, one per entry: ``"present"``,
``"absent"``, or ``"unimportable: <error>"`` when the module itself cannot be imported here (an old
release against a newer torch, an optional dependency). Imports only the libraries, never rlguard.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import warnings
from typing import Any


def _object(dotted: str) -> Any:
    """The object a dotted path names: the longest importable module, then attributes. A module that
    does not exist is skipped; one that exists but fails to import raises."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            found: Any = importlib.import_module(name)
        except ModuleNotFoundError as missing:
            if missing.name is not None and not name.startswith(missing.name):
                raise  # a dependency of the module is missing: the module exists
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise ModuleNotFoundError(dotted)


def answer(kind: str, module: str, name: str) -> str:
    """Whether ``from module import name`` works, the class has the method, or the callable the keyword."""
    importlib.import_module(module.partition(".")[0])  # the library itself must import here
    owner, _, member = f"{module}.{name}".rpartition(".")
    try:
        target = _object(owner)
    except (ModuleNotFoundError, AttributeError):
        return "absent"
    if kind == "name":
        return "present" if hasattr(target, member) or _imports(f"{owner}.{member}") else "absent"
    if kind == "method":
        return "present" if hasattr(target, member) else "absent"
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return "absent"
    return "present" if member in parameters else "absent"


def _imports(module: str) -> bool:
    """A submodule that ``from package import name`` would import."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as missing:
        if missing.name is not None and not module.startswith(missing.name):
            raise
        return False
    return True


def _restore_what_old_releases_import() -> None:
    """torch 2.13 no longer re-exports ``ForkingPickler`` from ``torch.multiprocessing.reductions``,
    which tensordict < 0.6 imports at start-up; it is the standard library's own class."""
    import multiprocessing.reduction

    import torch.multiprocessing.reductions

    if not hasattr(torch.multiprocessing.reductions, "ForkingPickler"):
        torch.multiprocessing.reductions.ForkingPickler = multiprocessing.reduction.ForkingPickler  # type: ignore[attr-defined]


def main() -> None:
    warnings.simplefilter("ignore")
    _restore_what_old_releases_import()
    answers = []
    for kind, module, name in json.load(sys.stdin):
        try:
            answers.append(answer(kind, module, name))
        except Exception as error:  # the module cannot be imported here: the caller reads the source instead
            answers.append(f"unimportable: {type(error).__name__}: {error}"[:300])
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
