""""Did you mean": one sensible guess or none, for keys, codes, options and hook destinations."""

from __future__ import annotations

import pytest

from rlguard.config import ConfigError, parse_config, validate_codes
from rlguard.engine.suggest import closest


@pytest.mark.parametrize("word, meant", [
    ("ignored", "ignore"), ("selct", "select"), ("target", "target-torchrl"), ("max-filesize", "max-file-size"),
    ("per-file-ignore", "per-file-ignores"), ("x", None), ("verbose", None),
])
def test_config_keys(word, meant):
    assert closest(word, ("select", "ignore", "extend-select", "exclude", "per-file-ignores", "target-torchrl", "rules",
                          "timeout", "max-file-size", "extend")) == meant


@pytest.mark.parametrize("code, hint", [
    ("RLG7", "(did you mean 'RLG007'?)"),
    ("RLG_001", "(did you mean 'RLG001'?)"),
    ("rlg-006", "(did you mean 'RLG006'?)"),
    ("RLG0010", "(did you mean 'RLG001'?)"),
    ("ALLL", "(did you mean 'ALL'?)"), ("RLG08", "(did you mean 'RLG008'?)"),
    # Equally close to several codes, or close to none: no guess (RLG010 used to get RLG100).
    ("RLG010", None), ("E501", None),
])
def test_rule_codes(code, hint):
    with pytest.raises(ConfigError) as error:
        validate_codes([code], "--select")
    message = str(error.value)
    assert message.startswith(f"--select: unknown rule code {code.upper()!r}")
    assert (hint in message) if hint else "did you mean" not in message, message


def test_rule_options():
    with pytest.raises(ConfigError, match=r"unknown option 'uncopyable' \(did you mean 'uncopyable-types'\?\)"):
        parse_config({"rules": {"RLG001": {"uncopyable": []}}}, "pyproject.toml")
