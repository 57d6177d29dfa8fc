"""The extension-free trees against torchrl's compiled ones, wherever those load.

They do not load against torch 2.13 from the torchrl 0.14.1 wheel, so these tests skip in
CI. They run in an environment whose torchrl extension was built against the installed
torch (a GPU machine, a matching torch, or a rebuild of ``torchrl/csrc``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlguard.runtime.extension import probe
from rlguard.runtime.segment_tree import FANOUT, SMALL_LEVEL, TORCHRL_TREE_CLASSES

pytestmark = pytest.mark.skipif(not probe().loads, reason="torchrl's compiled extension does not load here")

NAMES = ("SumSegmentTreeFp32", "SumSegmentTreeFp64", "MinSegmentTreeFp32", "MinSegmentTreeFp64")


def both(name: str, size: int) -> tuple:
    import torchrl._torchrl as compiled

    return TORCHRL_TREE_CLASSES[name](size), getattr(compiled, name)(size)


@st.composite
def scenarios(draw):
    size = draw(st.one_of(st.integers(1, 3 * FANOUT), st.integers(SMALL_LEVEL - 2, SMALL_LEVEL + 2 * FANOUT)))
    index = st.integers(0, size - 1)
    # Small integers keep every sum exact in float32, so results compare with ==.
    batches = draw(st.lists(st.lists(st.tuples(index, st.integers(0, 6)), min_size=1, max_size=64), max_size=6))
    bounds = st.integers(0, size)
    queries = draw(st.lists(st.tuples(bounds, bounds).filter(lambda q: q[0] <= q[1]), min_size=1, max_size=10))
    return size, batches, queries


def fill(trees: tuple, batches: list, dtype: torch.dtype) -> None:
    for batch in batches:
        index, values = (list(column) for column in zip(*batch, strict=False))
        for tree in trees:  # the compiled trees take values of their own dtype only
            tree[torch.tensor(index)] = torch.tensor(values, dtype=dtype)


def same(ours, theirs) -> bool:
    # torchrl's pybind overloads take a one-element tensor for an int and return a float.
    return torch.equal(ours, torch.as_tensor(theirs, dtype=ours.dtype).reshape(ours.shape))


def dtype_of(name: str) -> torch.dtype:
    return torch.float32 if name.endswith("Fp32") else torch.float64


@settings(max_examples=40, deadline=None)
@given(scenarios(), st.sampled_from(NAMES))
def test_leaves_and_range_queries_match(scenario, name) -> None:
    size, batches, queries = scenario
    ours, theirs = both(name, size)
    fill((ours, theirs), batches, dtype_of(name))

    every = torch.arange(size)
    assert same(ours[every], theirs[every])
    for start, end in queries:
        assert ours.query(start, end) == theirs.query(start, end)
    starts, ends = (torch.tensor(column) for column in zip(*queries, strict=False))
    assert same(ours.query(starts, ends), theirs.query(starts, ends))


@settings(max_examples=40, deadline=None)
@given(scenarios(), st.sampled_from(NAMES[:2]), st.data())
def test_prefix_searches_match(scenario, name, data) -> None:
    size, batches, _ = scenario
    ours, theirs = both(name, size)
    fill((ours, theirs), batches, dtype_of(name))
    total = int(theirs.query(0, size))
    # Half-integers never equal a prefix sum of integer leaves, so no search can stop on a
    # zero leaf: there, and only there, the extension-free tree skips ahead by design.
    halves = st.integers(0, total + 2).map(lambda k: k + 0.5)
    masses = torch.tensor(data.draw(st.lists(halves, min_size=1, max_size=50)), dtype=dtype_of(name))
    assert same(ours.scan_lower_bound(masses), theirs.scan_lower_bound(masses))


@pytest.mark.parametrize("name", NAMES[:2])
def test_result_types_match(name) -> None:
    ours, theirs = both(name, 40)
    fill((ours, theirs), [[(3, 2), (7, 5)]], dtype_of(name))
    for query in (3, np.array([3, 7]), torch.tensor([3, 7])):
        assert type(ours[query]) is type(theirs[query])
    assert type(ours.query(0, 40)) is type(theirs.query(0, 40))
    for mass in (2.5, torch.tensor([2.5, 6.0], dtype=dtype_of(name))):
        assert type(ours.scan_lower_bound(mass)) is type(theirs.scan_lower_bound(mass))
