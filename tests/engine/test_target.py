from __future__ import annotations

from importlib import metadata

from rlguard.engine.target import lowest_admitted, newest_admitted, parse_version, resolve_target
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


# ----- a pin is judged at the newest version it admits -----

def _pin(tmp_path, spec: str):
    (tmp_path / "requirements.txt").write_text(f"numpy\ntorchrl{spec}\n")
    return resolve_target(None, None, str(tmp_path))


def test_open_pin_is_judged_at_the_newest_known_release(tmp_path):
    target = _pin(tmp_path, ">=0.7")
    assert target.version == NEWEST_KNOWN_TORCHRL and target.lowest == (0, 7)
    assert "requirements.txt" in target.source and "newest admitted" in target.source


def test_closed_pin_is_judged_at_its_newest_known_release(tmp_path):
    target = _pin(tmp_path, ">=0.6,<0.9")
    assert target.version == (0, 8, 1) and target.oldest == (0, 6)
    assert _pin(tmp_path, "~=0.10.0").version == (0, 10, 1)
    assert _pin(tmp_path, "==0.7.*").version == (0, 7, 2)


def test_exact_pin_is_that_version(tmp_path):
    assert _pin(tmp_path, "==0.7.2").version == (0, 7, 2)
    assert _pin(tmp_path, "==0.7.1").version == (0, 7, 1)  # a patch the table skips still pins exactly


def test_flag_and_config_pin_one_version(tmp_path):
    (tmp_path / "requirements.txt").write_text("torchrl>=0.7\n")
    flagged = resolve_target("0.9", None, str(tmp_path))
    assert (flagged.version, flagged.source, flagged.oldest) == ((0, 9), "flag", (0, 9))
    assert resolve_target(None, "0.10", str(tmp_path)).version == (0, 10)


def test_pyproject_pin_range(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torchrl>=0.8,<0.12"]\n')
    target = resolve_target(None, None, str(tmp_path))
    assert target.version == (0, 11, 1) and target.lowest == (0, 8)


def test_newest_admitted():
    assert newest_admitted(">=0.4") == NEWEST_KNOWN_TORCHRL
    assert newest_admitted("<0.6") == (0, 5, 0)
    assert newest_admitted("<0.1") == (0, 0, 5)  # the table starts at the first release
    assert newest_admitted("<0.0.5") is None
