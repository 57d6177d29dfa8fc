"""Property tests for RLG001 over generated programs: names, aliases, wrappers, comments, CRLF.

The rule has no fix, so the properties are about detection: a generated policy that holds an
uncopyable member is reported exactly once, on the line of the deep-copy site, whatever the
spelling; a copy hook or the runtime marker silences it; ``rlguard fix`` never changes the file.
"""

from __future__ import annotations

import keyword

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlguard.testing import check_source, fix_source

COPY_STYLES = [
    ("import copy", "copy.deepcopy"),
    ("import copy as cp", "cp.deepcopy"),
    ("from copy import deepcopy", "deepcopy"),
    ("from copy import deepcopy as clone_of", "clone_of"),
]
MEMBERS = [
    ("import threading", "threading.Lock()"),
    ("from threading import RLock as R", "R()"),
    ("import torch.multiprocessing as tmp", "tmp.Queue()"),
    ("import queue", "queue.Queue(maxsize=4)"),
    ("import sqlite3", "sqlite3.connect(':memory:')"),
    ("", "(step for step in range(10))"),
]
WRAPPERS = [
    "TensorDictModule({inner}, in_keys=['observation'], out_keys=['action'])",
    "nn.Sequential(nn.Linear(4, 4), {inner})",
    "Seq(TensorDictModule({inner}, in_keys=['observation'], out_keys=['action']))",
    "ProbabilisticActor(module={inner}, in_keys=['loc', 'scale'])",
]
SITES = [
    "{copy}({policy})",
    "Collector(env, {policy}, frames_per_batch=64, policy_device='cuda:0')",
    "MultiSyncCollector([make_env] * 2, policy={policy}, frames_per_batch=64)",
]

identifiers = st.from_regex(r"[A-Z][a-zA-Z0-9]{2,10}", fullmatch=True).filter(lambda s: not keyword.iskeyword(s))
comments = st.sampled_from(["", "  # keep", "  # type: ignore", "  # noqa: E501"])


@st.composite
def programs(draw):
    class_name = draw(identifiers.filter(lambda s: s not in {"Seq", "Collector", "TensorDictModule", "ProbabilisticActor"}))
    copy_import, copy_name = draw(st.sampled_from(COPY_STYLES))
    member_import, member = draw(st.sampled_from(MEMBERS))
    depth = draw(st.integers(0, 2))
    hooked = draw(st.booleans())
    marked = draw(st.booleans())
    bound = draw(st.booleans())
    comment = draw(comments)
    site = draw(st.sampled_from(SITES))

    policy = f"{class_name}()"
    for _ in range(depth):
        policy = draw(st.sampled_from(WRAPPERS)).format(inner=policy)
    lines = [
        copy_import,
        member_import,
        "from torch import nn",
        "from tensordict.nn import TensorDictModule, TensorDictSequential as Seq",
        "from torchrl.modules import ProbabilisticActor",
        "from torchrl.collectors import Collector, MultiSyncCollector",
        "from rlguard.runtime import uncopyable",
        "",
        "",
        *(["@uncopyable"] if marked else []),
        f"class {class_name}(nn.Module):{comment}",
        "    def __init__(self):",
        "        super().__init__()",
        f"        self.member = {member}{comment}",
    ]
    if hooked:
        lines += ["", "    def __deepcopy__(self, memo):", f"        return {class_name}()"]
    lines += ["", ""]
    if bound:
        lines.append(f"policy = {policy}{comment}")
        policy = "policy"
    lines.append("result = " + site.format(copy=copy_name, policy=policy) + comment)
    site_line = len(lines)
    source = "\n".join(line for line in lines) + "\n"
    expected = not hooked and not marked
    if hooked and not marked and "MultiSyncCollector" in site:
        expected = True  # pickling ignores ``__deepcopy__``
    return source, site_line, expected


def _rlg001(source: str):
    return [f for f in check_source(source, select=["RLG001"]) if f.code == "RLG001"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.booleans())
def test_reported_once_on_the_site_line_whatever_the_spelling(program, crlf):
    source, site_line, expected = program
    if crlf:
        source = source.replace("\n", "\r\n")
    found = _rlg001(source)
    if expected:
        assert [f.line for f in found] == [site_line], source
        assert "`self.member` holds" in found[0].full_message
    else:
        assert found == [], source


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_fix_never_changes_the_file(program):
    source, _, _ = program
    assert fix_source(source, unsafe=True, select=["RLG001"]) == source
