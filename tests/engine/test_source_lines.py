"""Lines that findings name in other files, read from the text (RLG001's "set at", RLG004's factories)."""

from __future__ import annotations

import textwrap

from rlguard.engine.source_lines import class_block, definition_line, source_lines

HELPERS = textwrap.dedent("""\
    class Other:
        def build(self, td):
            return td


    class Pairer:
        # a comment at the class's own indentation does not end it
        def build(self, td):
            return td


    def build(td):
        return td


    async def fetch():
        return 1
    """)


def test_a_method_is_found_in_its_own_class_and_a_function_at_the_top_level(tmp_path):
    path = tmp_path / "helpers.py"
    path.write_text(HELPERS)
    assert definition_line(str(path), "helpers.Other.build") == 2
    assert definition_line(str(path), "helpers.Pairer.build") == 8  # not Other's, the first `def build`
    assert definition_line(str(path), "helpers.build") == 12  # not a method of the same name
    assert definition_line(str(path), "helpers.fetch") == 16
    assert definition_line(str(path), "helpers.missing") == 0
    assert definition_line(str(tmp_path / "gone.py"), "gone.build") == 0


def test_a_class_block_spans_its_body(tmp_path):
    path = tmp_path / "helpers.py"
    path.write_text(HELPERS)
    lines = source_lines(str(path))
    assert lines is not None
    assert class_block(lines, "Pairer") == (6, 11)  # its header to the line before the next top-level statement
    assert class_block(lines, "Missing") is None
