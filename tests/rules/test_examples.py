"""Every rule's documented examples are its first tests: flagged, not flagged, and fixed."""

from __future__ import annotations

import pytest

from rlguard.rules import RULES
from rlguard.testing import check_source, fix_source

VALID = [pytest.param(rule, ex, id=f"{rule.code}-valid-{i}") for rule in RULES for i, ex in enumerate(rule.valid)]
INVALID = [pytest.param(rule, ex, id=f"{rule.code}-invalid-{i}") for rule in RULES for i, ex in enumerate(rule.invalid)]


def _files(example):
    return dict(example.files)


def _rule_options(rule, example):
    return {rule.code: dict(example.options)}


@pytest.mark.parametrize("rule, example", VALID)
def test_valid_example_is_not_flagged(rule, example):
    findings = check_source(example.code, select=[rule.code], target=example.target,
                            options=_rule_options(rule, example), extra_files=_files(example))
    assert [f for f in findings if f.code == rule.code] == []


@pytest.mark.parametrize("rule, example", INVALID)
def test_invalid_example_is_flagged(rule, example):
    findings = [f for f in check_source(example.code, select=[rule.code], target=example.target,
                                        options=_rule_options(rule, example), extra_files=_files(example))
                if f.code == rule.code]
    assert findings, f"{rule.code} did not flag:\n{example.code}"
    if example.message is not None:
        assert any(example.message in f.full_message for f in findings), [f.full_message for f in findings]


@pytest.mark.parametrize("rule, example", [p for p in INVALID if p.values[1].fixed is not None])
def test_invalid_example_fix(rule, example):
    kwargs = dict(select=[rule.code], target=example.target, options=_rule_options(rule, example), extra_files=_files(example))
    if example.unsafe:
        assert fix_source(example.code, unsafe=False, **kwargs) == example.code, "an unsafe fix ran without --unsafe-fixes"
    fixed = fix_source(example.code, unsafe=example.unsafe, **kwargs)
    assert fixed == example.fixed
    assert fix_source(fixed, unsafe=example.unsafe, **kwargs) == fixed, "fixing twice changed the output again"


@pytest.mark.parametrize("rule, example", [p for p in INVALID if p.values[1].fixed is None])
def test_invalid_example_without_fix_is_left_alone(rule, example):
    kwargs = dict(select=[rule.code], target=example.target, options=_rule_options(rule, example), extra_files=_files(example))
    assert fix_source(example.code, unsafe=True, **kwargs) == example.code
