from __future__ import annotations

from importlib import metadata

from rlguard.engine.target import lowest_admitted, parse_version, resolve_target
from rlguard.rules.data import NEWEST_KNOWN_TORCHRL


def test_parse_version():
    assert parse_version("0.11.0rc1") == (0, 11, 0)
    assert parse_version("0.14") == (0, 14)


def test_lowest_admitted():
    assert lowest_admitted(">=0.6,<0.9") == (0, 6)
    assert lowest_admitted("==0.14.1") == (0, 14, 1)
    assert lowest_admitted("~=0.5") == (0, 5)
    assert lowest_admitted(">0.12") == (0, 13)
    assert lowest_admitted("<0.9") is None


def test_installed_then_default(tmp_path):
    target = resolve_target(None, None, str(tmp_path))
    assert target.source == "installed"
    assert target.version == parse_version(metadata.version("torchrl"))
    assert NEWEST_KNOWN_TORCHRL >= target.version
