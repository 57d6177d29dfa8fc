"""Does torchrl's compiled extension load here, and if not, why?

``import torchrl`` swallows the loader's error: prioritized replay then fails later with
"SumSegmentTreeFp32 is not available. See warning above." and no warning above. This
module loads the shared object itself and keeps the loader's real message.

``probe()`` runs in-process (the sampler uses it to explain its fallback). ``rlguard
doctor`` runs ``python -m rlguard.runtime.extension [--path SO]`` in a subprocess, so a
crashing extension cannot take it down: it prints one JSON object and exits 0 when the
extension loads, 1 when it does not. Neither needs torch to import: a broken torch is
reported, not raised.
"""

from __future__ import annotations

import argparse
import functools
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

MODULE = "torchrl._torchrl"
FALLBACK = "call rlguard.runtime.install(): its extension-free segment trees replace the compiled ones"

# Why the extension does not load; None when it loads.
NO_TORCHRL, NO_EXTENSION, TORCH_IMPORT, LOADER = "no-torchrl", "no-extension", "torch-import", "loader"


@dataclass(frozen=True)
class ExtensionStatus:
    """What loading torchrl's compiled extension gave."""

    loads: bool
    problem: str | None  # one of the constants above
    path: str | None  # the shared object tried
    error: str | None  # the loader's (or torch's) own message
    missing_symbol: str | None  # from an "undefined symbol" error
    cuda: bool  # the extension has the CUDA segment trees
    torch_version: str | None  # installed, from package metadata
    torchrl_version: str | None
    built_against: str | None  # the torch torchrl was built with, where the wheel records it

    @property
    def cause(self) -> str:
        """One sentence: why it does not load (empty when it loads)."""
        if self.problem == NO_TORCHRL:
            return "torchrl is not installed"
        if self.problem == NO_EXTENSION:
            return f"torchrl {self.torchrl_version} has no compiled {MODULE} module (a source install never built it)"
        if self.problem == TORCH_IMPORT:
            return f"torch does not import: {self.error}"
        if self.missing_symbol:
            built = f"torch {self.built_against}" if self.built_against else "another torch"
            return (
                f"torchrl {self.torchrl_version} was compiled against {built}, and the installed "
                f"torch {self.torch_version} lacks the symbol {short_symbol(self.missing_symbol)}"
            )
        return f"the loader refused it: {self.error}" if self.problem == LOADER else ""

    @property
    def fix(self) -> str:
        """How to make the compiled extension load (empty when it loads); FALLBACK works around it."""
        if self.problem == NO_TORCHRL:
            return "pip install torchrl"
        if self.problem == TORCH_IMPORT:
            return f"repair torch (pip install --force-reinstall torch=={self.torch_version})"
        if self.missing_symbol:
            wanted = f"torch=={self.built_against}" if self.built_against else "the torch its wheel was built for"
            return (
                f"install a torch/torchrl pair built for each other ({wanted}, or the torchrl release "
                f"built for torch {self.torch_version})"
            )
        if self.problem:
            return f"reinstall torchrl from its wheel (pip install --force-reinstall torchrl=={self.torchrl_version})"
        return ""

    def to_json(self) -> dict[str, object]:
        fallback = "" if self.loads or self.problem in (NO_TORCHRL, TORCH_IMPORT) else FALLBACK
        return {**asdict(self), "cause": self.cause, "fix": self.fix, "fallback": fallback}


@functools.cache
def probe(path: str | None = None) -> ExtensionStatus:
    """Load torchrl's extension (or the shared object at ``path``) and report the outcome.

    Never raises for a broken install: a missing torchrl, an unimportable torch and a
    loader error are all reported in the status.
    """
    versions = {name: _version(name) for name in ("torch", "torchrl")}
    if path is None and _torchrl_dir() is None:
        return _status(NO_TORCHRL, None, None, versions)
    shared_object = Path(path) if path else _find_shared_object()
    if shared_object is None:
        return _status(NO_EXTENSION, None, None, versions)
    try:
        import torch  # noqa: F401  the extension resolves its symbols against a loaded libtorch
    except Exception as error:  # a broken torch is itself the finding
        return _status(TORCH_IMPORT, shared_object, str(error), versions)
    try:
        module = _load(shared_object)
    except Exception as error:  # ImportError, or whatever a module initialiser raises
        return _status(LOADER, shared_object, str(error), versions)
    return _status(None, shared_object, None, versions, cuda=hasattr(module, "CudaSumSegmentTreeFp32"))


def _status(
    problem: str | None, path: Path | None, error: str | None, versions: dict[str, str | None], cuda: bool = False
) -> ExtensionStatus:
    symbol = re.search(r"undefined symbol: (\S+)", error or "")
    return ExtensionStatus(
        loads=problem is None,
        problem=problem,
        path=str(path) if path else None,
        error=error,
        missing_symbol=symbol.group(1) if symbol else None,
        cuda=cuda,
        torch_version=versions["torch"],
        torchrl_version=versions["torchrl"],
        built_against=_built_against(),
    )


@functools.cache
def short_symbol(symbol: str, limit: int = 60) -> str:
    """A C++ symbol as a person reads it: demangled where c++filt exists, without its parameter
    list, at most ``limit`` characters. A mangled name runs to hundreds of characters, which
    buried the cause in the doctor's report and in the fallback warning alike."""
    readable = symbol
    if shutil.which("c++filt"):
        done = subprocess.run(["c++filt", symbol], capture_output=True, text=True, check=False)
        readable = done.stdout.strip() or symbol
    if readable != symbol and "(" in readable:
        readable = readable[: readable.index("(")] + "(...)"
    return readable if len(readable) <= limit else readable[: limit - 3] + "..."


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _torchrl_dir() -> Path | None:
    # find_spec on a top-level name locates the package without executing its __init__.
    spec = importlib.util.find_spec("torchrl")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _find_shared_object() -> Path | None:
    package = _torchrl_dir()
    if package is None:  # no torchrl, so no extension to find
        return None
    candidates = (package / f"_torchrl{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES)
    return next((candidate for candidate in candidates if candidate.exists()), None)


def _built_against() -> str | None:
    """torchrl/version.py's ``pytorch_version``, read as text (importing it imports torchrl)."""
    package = _torchrl_dir()
    version_file = package / "version.py" if package else None
    if version_file is None or not version_file.exists():
        return None
    found = re.search(r"pytorch_version\s*=\s*['\"]([^'\"]+)['\"]", version_file.read_text())
    return found.group(1) if found and found.group(1) != "unknown" else None


def _load(shared_object: Path) -> object:
    existing = sys.modules.get(MODULE)
    if existing is not None and getattr(existing, "__file__", None) == str(shared_object):
        return existing
    # The module name must be torchrl._torchrl: the loader looks for PyInit__torchrl.
    spec = importlib.util.spec_from_file_location(MODULE, shared_object)
    if spec is None or spec.loader is None:
        raise ImportError(f"{shared_object} is not a Python extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def warn_fallback() -> None:
    """Say that prioritized replay runs on rlguard's extension-free segment trees.

    Called when a sampler builds them, not at ``install()``: a test that never builds a sampler
    gets no warning. Shown once per scope (installed block, test, or ``install()`` call), at the
    line of the user's code that built the sampler.
    """
    from rlguard.runtime.errors import warn_once
    from rlguard.runtime.marker import user_stacklevel

    status = probe()
    cause = status.cause or "this torchrl build has no CUDA segment trees"
    fix = status.fix or "install a torchrl wheel built with CUDA"
    warn_once(
        "sampler-pure-pytorch-trees",
        f"rlguard: torchrl's compiled segment trees are unavailable ({cause}). Prioritized "
        "samplers and buffers use rlguard's extension-free segment trees instead: same sampling "
        f"distribution, more time per call. Keep them, or to get the compiled trees back, {fix}.",
        stacklevel=user_stacklevel(),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rlguard.runtime.extension",
        description="Report whether torchrl's compiled extension loads, as JSON.",
    )
    parser.add_argument("--path", help="probe this shared object instead of the installed torchrl's")
    args = parser.parse_args(argv)
    status = probe(args.path)
    print(json.dumps(status.to_json(), indent=2))
    return 0 if status.loads else 1


if __name__ == "__main__":
    sys.exit(main())
