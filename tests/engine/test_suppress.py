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


def test_comments_are_told_from_strings_as_python_reads_them():
    """Strings that hold ``#`` or quotes before a real comment, and comment text inside strings."""
    line = OLD_IMPORT.rstrip()
    silenced = [
        line + "; s = 'it\\'s # not a comment'  # noqa: RLG006\n",
        line + '; s = r"\\\\"  # noqa: RLG006\n',
        line + '; s = f"{1!r:#>3}"  # noqa: RLG006\n',
        line + "; s = '''#'''  # noqa: RLG006\n",
    ]
    for source in silenced:
        assert check_source(source) == [], source
    in_strings = [  # the text a comment would hold sits in a string on the finding's line
        'doc = """\n# noqa: RLG006 """; ' + line + "\n",
        "doc = '''\n# noqa: RLG006 '''; " + line + "\n",
        "doc = '''\nit\\'s \\''' # noqa: RLG006 '''; " + line + "\n",
        line + '; s = "\\"  # noqa: RLG006"\n',
    ]
    for source in in_strings:
        assert [f.code for f in check_source(source)] == ["RLG006"], source
