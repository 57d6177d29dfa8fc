"""A fix changes the fixed code and nothing else: BOM, coding cookie, line endings, final newline."""

from __future__ import annotations

import pytest

OLD = b"from torchrl.collectors import SyncDataCollector"
NEW = b"from torchrl.collectors import Collector"

CASES = {
    "bom_crlf": b"\xef\xbb\xbf# tr\xc3\xa8s bien\r\n" + OLD + b"\r\nc = SyncDataCollector(env, None)\r\n",
    "latin1_cookie": b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n" + OLD + b"\nc = SyncDataCollector(env, None)\n",
    "no_final_newline": OLD + b"\nc = SyncDataCollector(env, None)  # keep   this\tcomment",
    "mixed_endings": OLD + b"\r\nx = 1\nc = SyncDataCollector(env, None)\r\n",
    "tabs_and_quotes": b"if True:\n\t" + OLD + b"\n\tc = SyncDataCollector(env, None, name='x', other=\"y\")\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fix_preserves_everything_but_the_fix(tree, name):
    original = CASES[name]
    path = tree.write(f"{name}.py", original, mode="wb")
    result = tree.run("fix", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr
    with open(path, "rb") as handle:
        fixed = handle.read()
    assert fixed == original.replace(b"SyncDataCollector", b"Collector")
    assert tree.run("fix", "--no-cache", ".").stdout.startswith("Fixed 0 findings")
