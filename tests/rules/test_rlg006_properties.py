"""RLG006 fix properties over generated import forms, aliases, uses, comments and CRLF.

The fix leaves no RLG006 finding, fixing twice equals fixing once, the output parses, and the fixed
program imports every name from the real torchrl (the unfixed one fails).
"""

from __future__ import annotations

import keyword

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlguard.rules.data import COLLECTOR_OLD_NAME_MODULES, COLLECTOR_RENAMES
from rlguard.testing import check_source, fix_source

torchrl = pytest.importorskip("torchrl")

OLD_NAMES = sorted(COLLECTOR_OLD_NAME_MODULES)
identifiers = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=5).map(lambda s: "u_" + s).filter(
    lambda s: not keyword.iskeyword(s)
)


@st.composite
def programs(draw):
    olds = draw(st.lists(st.sampled_from(OLD_NAMES), min_size=1, max_size=3, unique=True))
    names = iter(draw(st.lists(identifiers, min_size=len(olds) + 1, max_size=len(olds) + 1, unique=True)))
    variable = next(names)
    lines, uses = [], []
    for old in olds:
        module = draw(st.sampled_from(COLLECTOR_OLD_NAME_MODULES[old]))
        form = draw(st.sampled_from(["from", "alias", "module", "both", "parens"]))
        comment = "  # legacy" if draw(st.booleans()) else ""
        if form == "from":
            lines.append(f"from {module} import {old}{comment}")
            uses.append(old)
        elif form == "alias":
            alias = next(names)
            lines.append(f"from {module} import {old} as {alias}{comment}")
            uses.append(alias)
        elif form == "module":
            alias = next(names)
            lines.append(f"import {module} as {alias}{comment}")
            uses.append(f"{alias}.{old}")
        elif form == "both":
            new = COLLECTOR_RENAMES[old]
            first, second = draw(st.permutations([old, new]))
            lines.append(f"from {module} import {first}, {second}{comment}")
            uses += [old, new]
        else:
            lines.append(f"from {module} import (\n    {old},{comment}\n)")
            uses.append(old)
    body = [f"{variable}_{i} = {use}" for i, use in enumerate(draw(st.permutations(uses)))]
    if draw(st.booleans()):
        body = ["def build():"] + ["    " + line for line in body] + ["    return True", "", "build()"]
    source = "\n".join(lines + [""] + body) + "\n"
    if draw(st.booleans()):
        source = source.replace("\n", "\r\n")
    return source


def _findings(source: str):
    return [f for f in check_source(source, select=["RLG006"]) if f.code == "RLG006"]


def _run(source: str) -> None:
    exec(compile(source.replace("\r\n", "\n"), "<generated>", "exec"), {})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_fix_properties(source):
    assert _findings(source), source
    with pytest.raises((ImportError, AttributeError)):
        _run(source)
    fixed = fix_source(source, select=["RLG006"])
    compile(fixed.replace("\r\n", "\n"), "<fixed>", "exec")
    assert _findings(fixed) == [], fixed
    assert fix_source(fixed, select=["RLG006"]) == fixed
    if "\r\n" in source:
        assert fixed.count("\n") == fixed.count("\r\n")
    assert fixed.count("# legacy") == source.count("# legacy")
    _run(fixed)
