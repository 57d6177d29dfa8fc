"""rlguard: a linter, codemods and runtime guards for TorchRL and tensordict code.

Importing this package never imports torch; the runtime half lives in ``rlguard.runtime``.
"""

__version__ = "0.1.0"
