"""The rule catalog (rlguard/rules/catalog.json) says what the rule classes say.

A run reads the catalog instead of importing the rules; a stale one would select, configure or
pre-filter rules wrongly, so every field is compared with the classes here.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.engine.rule_info import RuleInfo
from rlguard.rules import CATALOG, RULES, read_catalog
from rlguard_dev.catalog import probe_versions, render

# Versions the generator does not sample, so a step it misses shows here.
BETWEEN = [(0, minor, patch) for minor in range(30) for patch in (10, 11, 99)] + [(0, 3, 0, 1), (2,), (2, 1, 3)]


def test_the_catalog_file_is_current():
    """Fails after a change to a rule's code, name, summary, options or tokens: run
    `python -m rlguard_dev.catalog --write`."""
    with open(sys.modules["rlguard.rules"].CATALOG_FILE, encoding="utf-8") as handle:
        assert handle.read() == render()


def test_the_catalog_lists_every_rule_in_order():
    assert list(CATALOG) == [rule.code for rule in RULES]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_each_entry_matches_its_class(rule):
    info = CATALOG[rule.code]
    assert (info.name, info.summary, info.options) == (rule.name, rule.summary, rule.options)
    assert (info.min_target, info.class_roots, info.class_group) == (rule.min_target, rule.class_roots, rule.class_group)
    assert info.default_options() == rule.default_options()
    assert info.load() is rule


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_the_token_steps_answer_as_the_rule_does_at_every_version(rule):
    info = CATALOG[rule.code]
    for version in [*probe_versions(), *BETWEEN]:
        assert info.prefilter_tokens(version) == rule.prefilter_tokens(version), version
        assert info.applies_to(version) == rule.applies_to(version), version


def test_a_rule_whose_tokens_change_with_the_target_has_several_steps():
    """RLG001 narrows its tokens from torchrl 0.5 on: the catalog keeps both sets."""
    steps = CATALOG["RLG001"].token_steps
    assert [since for since, _ in steps] == [(0,), (0, 5)]
    assert "Loss(" in steps[0][1][0] and "Loss(" not in steps[1][1][0]


def test_a_stale_entry_is_an_error_when_its_rule_loads():
    wrong = RuleInfo("RLG009", "x", "x", (), None, (((0,), ()),), frozenset(), 0, "rlguard.rules.rlg001_uncopyable_policy",
                     "UncopyablePolicy")
    with pytest.raises(ImportError, match="stale"):
        wrong.load()


def test_reading_the_catalog_imports_no_rule_module():
    result = subprocess.run([sys.executable, "-c", "import sys, rlguard.rules, rlguard.engine.runner; "
                             "print(sorted(m for m in sys.modules if m.startswith('rlguard.rules.')))"],
                            capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_catalog_round_trips_through_its_reader(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text(render(), encoding="utf-8")
    assert [i.code for i in read_catalog(str(path))] == list(CATALOG)


def test_the_check_mode_reports_a_stale_file(tmp_path, monkeypatch):
    import rlguard.rules
    from rlguard_dev import catalog

    stale = tmp_path / "catalog.json"
    stale.write_text('{"rules": []}\n', encoding="utf-8")
    monkeypatch.setattr(rlguard.rules, "CATALOG_FILE", str(stale))
    assert catalog.main(["--check"]) == 1
    assert catalog.main(["--write"]) == 0
    assert catalog.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == render()
