"""The second walk that places findings which waited on the index leaves out what returns give when
parameters are given tensors: it must make exactly the reports of the full walk, or a finding would be
placed on the wrong node."""

from __future__ import annotations

import os
import sysconfig

import pytest

from rlguard.engine.analyze import analyze_bytes
from tests.helpers import analyzed_project

SOTA = os.path.join(sysconfig.get_paths()["purelib"], "sota-implementations")
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


@pytest.mark.parametrize("root", [SOTA, EXAMPLES], ids=["sota-implementations", "examples"])
def test_a_walk_without_parameter_kinds_makes_the_same_reports(root):
    project = analyzed_project(root)
    parsed = [result.path for result in project.results if result.parsed]
    assert len(parsed) > 5
    reports = 0
    for path in parsed:
        with open(path, "rb") as handle:
            data = handle.read()
        full = analyze_bytes(path, data, project.settings, project.index, locate_all=True)
        placing = analyze_bytes(path, data, project.settings, project.index, locate_all=True, parameter_kinds=False)
        assert [(p.finding, p.requires) for p in placing.result.pending] == \
            [(p.finding, p.requires) for p in full.result.pending], path
        assert not any(r.given for f in placing.result.facts.functions.values() for r in f.typed)  # none tried
        reports += len(full.result.pending)
    assert reports >= 5
