"""Suppression comments among other tools' ``noqa`` codes (the tokenizer is skipped when none concerns rlguard)."""

from __future__ import annotations

from rlguard.testing import check_source
from tests.helpers import OLD_IMPORT


def test_a_noqa_naming_our_code_among_others_suppresses():
    assert check_source(OLD_IMPORT.rstrip() + "  # noqa: F401, RLG006\n") == []
    assert check_source(OLD_IMPORT.rstrip() + "  # NOQA:rlg006\n") == []
    assert check_source(OLD_IMPORT.rstrip() + "  # noqa\n") == []


def test_other_tools_codes_suppress_nothing_of_ours():
    assert [f.code for f in check_source("import os  # noqa: F401\n" + OLD_IMPORT.rstrip() + "  # noqa: E501\n")] == ["RLG006"]


def test_noqa_text_inside_a_string_suppresses_nothing():
    assert [f.code for f in check_source(OLD_IMPORT.rstrip() + '; note = "# noqa"\n')] == ["RLG006"]
