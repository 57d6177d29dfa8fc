"""The one hash of the cache's keys, its code stamp and the settings' fingerprint.

BLAKE2b from CPython's built-in ``_blake2`` module: ``hashlib`` loads OpenSSL when imported, about 3 ms,
a twentieth of a warm one-file check (``benchmarks/lint_speed.py``'s one-file table).
"""

from __future__ import annotations

try:
    from _blake2 import blake2b as _blake2b
except ImportError:  # an interpreter without CPython's built-in module
    from hashlib import blake2b as _blake2b


def new_hash(data: bytes = b""):  # noqa: ANN201 - the hash object's class is private to its module
    """A hash object (``update``, ``hexdigest``) of 32 bytes, fed ``data``."""
    return _blake2b(data, digest_size=32)
