"""The extension-free segment trees against a plain per-item reference, and their interface."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rlguard_runtime_helpers import largest_op

from rlguard.runtime.segment_tree import (
    GRAIN,
    WRITE_CHUNK,
    FANOUT,
    SMALL_LEVEL,
    MinSegmentTreeFp32,
    MinSegmentTreeFp64,
    SumSegmentTreeFp32,
    SumSegmentTreeFp64,
)

SUM_TREES = (SumSegmentTreeFp32, SumSegmentTreeFp64)
MIN_TREES = (MinSegmentTreeFp32, MinSegmentTreeFp64)


class Reference:
    """One Python float per leaf, every operation item by item."""

    def __init__(self, size: int, identity: float) -> None:
        self.leaves = [identity] * size
        self.identity = identity

    def set(self, index: list[int], values: list[float]) -> None:
        for i, value in zip(index, values, strict=False):
            self.leaves[i] = value

    def total(self, start: int, end: int, fold) -> float:
        part = self.leaves[max(start, 0) : max(min(end, len(self.leaves)), 0)]
        return fold(part) if part else self.identity

    def lower_bound(self, mass: float) -> int:
        """First leaf whose prefix sum reaches ``mass`` and is positive; ``size`` past the total."""
        if mass > sum(self.leaves):
            return len(self.leaves)
        prefix = 0.0
        for i, leaf in enumerate(self.leaves):
            prefix += leaf
            if prefix >= mass and prefix > 0:
                return i
        return 0  # an all-zero tree, like torchrl's


# Sizes straddle one block, two and three levels of FANOUT children, and the size above
# which a level is updated node by node instead of rebuilt whole.
sizes = st.one_of(
    st.integers(1, 2 * FANOUT + 1),
    st.integers(FANOUT**2 - 2, FANOUT**2 + 40),
    st.integers(SMALL_LEVEL - 2, SMALL_LEVEL + 2 * FANOUT),
)
# Small integers keep every sum exact in float32 too, so results compare with ==.
priorities = st.integers(0, 6).map(float)


@st.composite
def scenarios(draw):
    size = draw(sizes)
    index = st.integers(0, size - 1)
    batches = draw(st.lists(st.lists(st.tuples(index, priorities), min_size=1, max_size=40), min_size=1, max_size=6))
    bounds = st.integers(-3, size + 3)
    queries = draw(st.lists(st.tuples(bounds, bounds), min_size=1, max_size=10))
    masses = draw(st.lists(st.integers(0, 7 * size).map(float), min_size=1, max_size=20))
    return size, batches, queries, masses


@settings(max_examples=60, deadline=None)
@given(scenarios(), st.sampled_from(SUM_TREES))
def test_sum_tree_matches_reference(scenario, tree_class) -> None:
    size, batches, queries, masses = scenario
    tree, reference = tree_class(size), Reference(size, 0.0)
    for batch in batches:
        index, values = (list(column) for column in zip(*batch, strict=False))
        tree[torch.tensor(index)] = torch.tensor(values)
        reference.set(index, values)

    assert tree[torch.arange(size)].tolist() == reference.leaves
    for start, end in queries:
        expected = reference.total(start, end, sum)
        assert tree.query(start, end) == expected
        assert tree.query(torch.tensor([start]), torch.tensor([end])).tolist() == [expected]
    found = tree.scan_lower_bound(torch.tensor(masses))
    assert found.tolist() == [reference.lower_bound(mass) for mass in masses]


@settings(max_examples=40, deadline=None)
@given(scenarios(), st.sampled_from(MIN_TREES))
def test_min_tree_matches_reference(scenario, tree_class) -> None:
    size, batches, queries, _ = scenario
    tree = tree_class(size)
    reference = Reference(size, tree.identity_element)
    for batch in batches:
        index, values = (list(column) for column in zip(*batch, strict=False))
        tree[np.array(index)] = np.array(values)
        reference.set(index, values)

    starts, ends = (torch.tensor(column) for column in zip(*queries, strict=False))
    expected = [reference.total(start, end, min) for start, end in queries]
    assert tree.query(starts, ends).tolist() == expected
    assert [tree.query(start, end) for start, end in queries] == expected


def test_repeated_index_keeps_the_last_value_written() -> None:
    tree = SumSegmentTreeFp64(10)
    tree[torch.tensor([3, 5, 3, 3])] = torch.tensor([1.0, 2.0, 7.0, 4.0])
    assert tree[3] == 4.0
    assert tree.query(0, 10) == 6.0


@pytest.mark.parametrize("tree_class", SUM_TREES + MIN_TREES)
def test_index_types_give_torchrl_result_types(tree_class) -> None:
    tree = tree_class(40)
    tree[2] = 5.0
    tree[np.array([3, 4])] = np.array([1.0, 2.0])
    tree[torch.tensor([[6], [7]])] = 3.0  # a scalar spreads over any index shape
    assert isinstance(tree[2], float) and tree[2] == 5.0
    assert isinstance(tree[np.array([3, 4])], np.ndarray)
    got = tree[torch.tensor([[6], [7]])]
    assert isinstance(got, torch.Tensor) and got.shape == (2, 1) and got.dtype == tree_class.dtype
    assert len(tree) == tree.size == 40


@pytest.mark.parametrize("tree_class", SUM_TREES)
def test_scan_lower_bound_result_types(tree_class) -> None:
    tree = tree_class(8)
    tree[torch.arange(8)] = 1.0
    assert tree.scan_lower_bound(2.5) == 2
    assert tree.scan_lower_bound(np.array([0.5, 8.5])).tolist() == [0, 8]
    assert tree.scan_lower_bound(torch.tensor([[3.0]])).tolist() == [[2]]


@pytest.mark.parametrize("bad", [10, -1, [0, 10], torch.tensor([-1, 2])])
def test_out_of_range_index_raises(bad) -> None:
    tree = SumSegmentTreeFp32(10)
    with pytest.raises(IndexError, match="out of range for a tree of size 10"):
        tree[bad] = 1.0
    with pytest.raises(IndexError):
        tree[bad]


def test_float_indices_are_rejected() -> None:
    with pytest.raises(TypeError, match="must be integers"):
        SumSegmentTreeFp32(4)[torch.tensor([1.0])] = 2.0


def test_mismatched_value_count_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"cannot set \(3,\) values at \(2,\) indices"):
        SumSegmentTreeFp32(4)[torch.tensor([0, 1])] = torch.tensor([1.0, 2.0, 3.0])


@pytest.mark.parametrize("count", [2, 300, WRITE_CHUNK])
def test_heavily_repeated_indices_keep_the_last_value_in_one_chunk(count: int) -> None:
    # CPU writes are not deduplicated: the last-write-wins order comes from the write itself.
    rng = np.random.default_rng(count)
    index, values = rng.integers(0, 40, count), rng.uniform(0, 9, count)
    tree, leaves = SumSegmentTreeFp64(40), np.zeros(40)
    tree[torch.from_numpy(index)] = torch.from_numpy(values)
    leaves[index] = values  # numpy keeps the last of repeated indices
    assert np.array_equal(tree.leaves().numpy(), leaves)


def test_as_many_values_in_another_shape_are_flattened_as_torchrl_does() -> None:
    tree = SumSegmentTreeFp32(8)
    tree[torch.tensor([1, 5])] = torch.tensor([[2.0], [3.0]])  # PrioritizedSliceSampler's shape
    assert tree.leaves().tolist() == [0.0, 2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0]


def test_scan_skips_zero_leaves() -> None:
    # torchrl's tree returns leaf 0 for mass 0 even when that leaf has no probability.
    tree = SumSegmentTreeFp32(100)
    tree[torch.tensor([40, 41, 97])] = torch.tensor([0.0, 2.5, 1.0])
    masses = torch.cat([torch.zeros(1), torch.rand(1000) * tree.query(0, 100), torch.tensor([3.5])])
    leaves = tree[tree.scan_lower_bound(masses)]
    assert (leaves > 0).all()


def test_rounding_never_lands_on_a_zero_leaf() -> None:
    # Masses at the very top of float32 sums of many unequal leaves.
    torch.manual_seed(0)
    tree = SumSegmentTreeFp32(5000)
    tree[torch.arange(0, 5000, 3)] = torch.rand(1667) * 1e3 + 1e-3
    total = tree.query(0, 5000)
    masses = torch.full((200,), total) - torch.rand(200) * 1e-3
    assert (tree[tree.scan_lower_bound(masses)] > 0).all()


@pytest.mark.parametrize("size", [FANOUT**2 + 7, SMALL_LEVEL * FANOUT + 7])
@pytest.mark.parametrize("tree_class", SUM_TREES + MIN_TREES)
def test_rebuilding_from_leaves_gives_a_bitwise_identical_tree(tree_class, size) -> None:
    # The larger size has two levels updated node by node, the smaller none.
    torch.manual_seed(1)
    tree = tree_class(size)
    for _ in range(20):
        tree[torch.randint(0, size, (50,))] = torch.rand(50) * torch.logspace(-6, 6, 50)
    rebuilt = tree_class(size)
    rebuilt.load_leaves(tree.leaves())
    for level, again in zip(tree._levels, rebuilt._levels, strict=False):
        assert torch.equal(level, again)


@pytest.mark.parametrize("tree_class", SUM_TREES)
def test_large_tree_matches_numpy(tree_class) -> None:
    # Every level below the top small ones is written and searched node by node here.
    rng = np.random.default_rng(2)
    size = SMALL_LEVEL * FANOUT + 11
    tree, leaves = tree_class(size), np.zeros(size)
    for _ in range(30):
        index = rng.integers(0, size, 256)
        values = rng.integers(0, 5, 256).astype(float)
        tree[torch.from_numpy(index)] = torch.from_numpy(values)
        leaves[index] = values  # numpy also keeps the last of repeated indices
    assert np.array_equal(tree.leaves().numpy(), leaves)
    cumulative = np.cumsum(leaves)
    assert tree.query(0, size) == cumulative[-1]
    masses = np.concatenate([rng.uniform(0, cumulative[-1], 500).round(), [cumulative[-1], cumulative[-1] + 1]])
    # The first leaf whose inclusive prefix sum reaches the mass (sums of small integers are exact).
    expected = np.searchsorted(cumulative, np.maximum(masses, 1e-30), side="left")
    assert tree.scan_lower_bound(masses).tolist() == expected.tolist()


def test_deepcopy_is_independent() -> None:
    tree = SumSegmentTreeFp32(5)
    tree[1] = 2.0
    clone = copy.deepcopy(tree)
    clone[1] = 9.0
    assert tree[1] == 2.0 and clone.query(0, 5) == 9.0


def test_a_pickled_tree_writes_and_searches_its_own_levels() -> None:
    tree = SumSegmentTreeFp32(FANOUT**2 + 3)
    tree[torch.tensor([2, 40])] = torch.tensor([1.0, 3.0])
    clone = pickle.loads(pickle.dumps(tree))
    clone[torch.tensor([2, 500])] = torch.tensor([0.0, 5.0])
    assert tree.query(0, tree.size) == 4.0 and clone.query(0, clone.size) == 8.0
    assert clone.scan_lower_bound(torch.tensor([0.5, 3.5])).tolist() == [40, 500]
    assert tree.scan_lower_bound(torch.tensor([0.5, 3.5])).tolist() == [2, 40]


def test_construction_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least one leaf"):
        SumSegmentTreeFp32(0)
    with pytest.raises(TypeError, match="floating point"):
        SumSegmentTreeFp32(4, dtype=torch.int64)


@pytest.mark.parametrize("tree_class", [SumSegmentTreeFp32, MinSegmentTreeFp64])
def test_a_large_write_stays_under_the_parallel_grain_and_keeps_the_last_value(tree_class) -> None:
    size, count = 200_000, 3 * WRITE_CHUNK + 5
    rng = np.random.default_rng(5)
    index = rng.integers(0, size, count)
    index[-1] = index[0]  # written again in another chunk: the later value must win
    values = rng.uniform(0, 9, count)
    tree, leaves = tree_class(size), np.full(size, tree_class(1).identity_element)
    leaves[index] = values  # numpy keeps the last of repeated indices
    # Past the grain each op would wake the intra-op threads (0.3-0.65 s for 100k priorities
    # on a busy 2-thread machine, against 16 ms on one); the tree holds far more than that.
    index_tensor, values_tensor = torch.from_numpy(index), torch.from_numpy(values)
    assert largest_op(lambda: tree.__setitem__(index_tensor, values_tensor), tree) <= GRAIN
    assert np.array_equal(tree.leaves().numpy(), leaves.astype(np.float32 if tree.dtype == torch.float32 else np.float64))
    rebuilt = tree_class(size)
    rebuilt.load_leaves(tree.leaves())
    for level, again in zip(tree._levels, rebuilt._levels, strict=False):
        assert torch.equal(level, again)


@pytest.mark.parametrize("size", [1, FANOUT + 3, FANOUT**2 * 3 + 5, SMALL_LEVEL * FANOUT + 7])
@pytest.mark.parametrize("tree_class", SUM_TREES + MIN_TREES)
def test_the_cpu_write_builds_the_tree_the_device_write_and_a_rebuild_build(size, tree_class) -> None:
    # The CPU's numpy write against the torch write every other device uses, and against a
    # rebuild from its own leaves: numpy and torch may add in different orders (sums agree to
    # rounding), and a node must be bitwise what a rebuild gives.
    generator = torch.Generator().manual_seed(size)
    on_cpu, generic = tree_class(size), tree_class(size)
    for count in (1, 7, 256, 3000):
        index = torch.randint(0, size, (count,), generator=generator)
        values = torch.rand(count, generator=generator, dtype=on_cpu.dtype)
        values *= torch.logspace(-6, 6, count, dtype=on_cpu.dtype)
        on_cpu[index] = values
        generic._write(index, values)
        rebuilt = tree_class(size)
        rebuilt.load_leaves(on_cpu.leaves())
        for level, again, other in zip(on_cpu._levels, rebuilt._levels, generic._levels, strict=True):
            assert torch.equal(level, again)
            torch.testing.assert_close(level, other, rtol=1e-5 if tree_class in SUM_TREES else 0, atol=0)


@pytest.mark.parametrize("size", [1, FANOUT + 3, FANOUT**2 * 3 + 5, SMALL_LEVEL * FANOUT + 7])
@pytest.mark.parametrize("tree_class", SUM_TREES)
def test_the_cpu_search_finds_what_the_device_search_finds(size, tree_class) -> None:
    generator = torch.Generator().manual_seed(size)
    tree = tree_class(size)
    leaves = torch.rand(size, generator=generator, dtype=tree.dtype) * torch.logspace(-3, 3, size, dtype=tree.dtype)
    leaves[torch.rand(size, generator=generator) < 0.3] = 0  # zero leaves to skip
    leaves[size // 2] = 1.0  # and a positive total
    tree.load_leaves(leaves)
    total = tree.query(0, size)
    masses = torch.cat(
        [
            torch.rand(2000, generator=generator, dtype=tree.dtype) * total,
            torch.tensor([0.0, total, total * (1 - 1e-7), total * 2, float("nan")], dtype=tree.dtype),
        ]
    )
    found = tree.scan_lower_bound(masses)
    assert torch.equal(found, tree._scan(masses))
    landed = found[:-1][found[:-1] < size]  # a NaN mass (the last) reaches no leaf: it takes leaf 0
    assert (tree[landed] > 0).all()
    assert tree.scan_lower_bound(masses[:0]).shape == (0,)
