"""Sum and min segment trees without compiled code, with the interface of torchrl's compiled ones.

torchrl's prioritized samplers use ``SumSegmentTreeFp32`` and friends from its C++
extension, which does not load when torch differs from the build torch. These trees
offer what the samplers call: construction by size (and device), item get and set with
int, numpy or tensor indices, ``query(start, end)`` and ``scan_lower_bound(values)``.
("Pure-PyTorch" elsewhere in rlguard: they need nothing but torch and its numpy.)

Batched updates and prefix-sum searches are array ops over a whole batch; the only Python
loop is over tree levels. Nodes have ``FANOUT`` children, so a million leaves sit four
levels below the root. Each op costs microseconds of overhead whatever its size, so the
code counts ops: an update rebuilds each level of at most ``SMALL_LEVEL`` nodes whole, with
one reduction, and touches only the large levels near the leaves node by node; a search
costs a few ops per level.

On a CPU the levels are read and written through numpy views of the same memory: in a
replay step these ops follow a storage read that evicts their code, and a cold numpy op
costs a fraction of a cold torch op (the search's running sums stay torch's ``cumsum``).
numpy runs on the calling thread. On other devices the ops are torch's, and none handles
more than ``GRAIN // 2`` values: past torch's parallel grain (32768) an op wakes the intra-op
threads, which costs milliseconds per op on a busy machine (100k priorities took 0.3 to
0.65 s with two threads against 16 ms with one). Large writes go a chunk at a time, in order
(so the last write to a leaf still wins). The thread count is left alone: it is
process-wide state that other threads use.

Internal nodes are always recomputed from their children by the same reduction, never
updated by deltas: a node is a pure function of the leaves, so a tree rebuilt from saved
leaves is bit-for-bit the tree that was saved (tested).
"""

from __future__ import annotations

import numbers
import threading
from typing import Any

import numpy as np
import torch

FANOUT_BITS = 5
FANOUT = 1 << FANOUT_BITS
# A level this small costs less to rebuild whole than to index into.
SMALL_LEVEL = 8192
# torch's intra-op parallel grain (at::internal::GRAIN_SIZE): smaller ops run on the calling thread.
GRAIN = 32768
# Indices written per chunk, and rows of FANOUT children reduced per op: both stay under the grain.
WRITE_CHUNK = GRAIN // 2
ROWS = GRAIN // (2 * FANOUT)

DeviceLike = torch.device | str | int | None


class SegmentTree:
    """A tree over ``size`` leaves whose nodes reduce their children.

    Subclasses set the reduction; the ``...Fp32``/``...Fp64`` variants fix the dtype, so
    their constructor is ``(size, device=None)`` like torchrl's CPU and CUDA trees.
    """

    dtype: torch.dtype = torch.float32

    def __init__(self, size: int, device: DeviceLike = None, dtype: torch.dtype | None = None) -> None:
        size = int(size)
        if size < 1:
            raise ValueError(f"a segment tree needs at least one leaf, got size={size}")
        dtype = dtype or type(self).dtype
        if not dtype.is_floating_point:
            raise TypeError(f"segment tree values must be floating point, got {dtype}")
        self._size = size
        self._dtype = dtype
        self._identity = self._identity_for(dtype)
        self._levels = [torch.full((n,), self._identity, dtype=dtype, device=device) for n in _level_lengths(size)]
        self._device = self._levels[0].device  # "cuda" becomes "cuda:0", as tensors report it
        self._numpy_views()

    def _numpy_views(self) -> None:
        """On a CPU, numpy views of the levels for the ``..._on_cpu`` methods, made once, not
        per call: ``_blocks``, the levels below the root with a block of FANOUT children per
        row, and ``_root``."""
        on_cpu = self._device.type == "cpu"
        self._blocks = [level.numpy().reshape(-1, FANOUT) for level in self._levels[:-1]] if on_cpu else []
        self._root = self._levels[-1].numpy() if on_cpu else None

    # A copy's numpy views would not share its levels' memory (copy.deepcopy and pickle copy
    # numpy arrays and tensors apart): they are left out and made again.
    def __getstate__(self) -> dict[str, Any]:
        return {name: value for name, value in self.__dict__.items() if name not in ("_blocks", "_root")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._numpy_views()

    # --- the reduction, set by subclasses -------------------------------------------
    @staticmethod
    def _identity_for(dtype: torch.dtype) -> float:
        raise NotImplementedError

    @staticmethod
    def _combine(children: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Reduce the last dimension (FANOUT children) in a fixed order of operations."""
        raise NotImplementedError

    @staticmethod
    def _fold(values: torch.Tensor, dim: int = -1) -> torch.Tensor:
        """Reduce any number of values (range queries)."""
        raise NotImplementedError

    # ``_combine`` on a CPU, as a numpy ufunc (its ``reduce`` over rows of FANOUT children).
    _numpy_combine: np.ufunc

    # --- properties of torchrl's trees ------------------------------------------------
    @property
    def size(self) -> int:
        return self._size

    @property
    def capacity(self) -> int:
        """Leaf slots allocated (``size`` rounded up to a multiple of FANOUT)."""
        return self._levels[0].numel()

    @property
    def identity_element(self) -> float:
        return self._identity

    @property
    def device(self) -> torch.device:
        return self._device

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self._size}, dtype={self._dtype}, device={self.device})"

    # --- item access --------------------------------------------------------------------
    def __getitem__(self, index: Any) -> Any:
        if _is_scalar_index(index):
            return self._leaves()[self._check_scalar(index)].item()
        idx = self._as_index(index)
        if self._device.type == "cpu":  # numpy's take costs less per call than torch's
            return _like_input(torch.from_numpy(self._blocks[0].reshape(-1).take(idx.numpy())), index)
        return _like_input(self._leaves().take(idx), index)

    at = __getitem__

    def __setitem__(self, index: Any, value: Any) -> None:
        if _count(index) > WRITE_CHUNK:
            self._set_in_chunks(index, value)
            return
        idx = self._as_index(index)
        values = torch.as_tensor(value, dtype=self._dtype, device=self._device)
        if values.requires_grad:
            values = values.detach()
        if values.shape != idx.shape and values.numel() == idx.numel() > 1:
            # torchrl's trees take any shape of as many values (PrioritizedSliceSampler passes
            # (n, 1) priorities for a flattened (n,) index).
            values = values.reshape(idx.shape)
        elif values.shape != idx.shape:
            try:
                values = torch.broadcast_to(values, idx.shape)
            except RuntimeError:
                raise ValueError(f"cannot set {tuple(values.shape)} values at {tuple(idx.shape)} indices") from None
        if idx.dim() != 1:
            idx, values = idx.reshape(-1), values.reshape(-1)
        (self._write_on_cpu if self._device.type == "cpu" else self._write)(idx, values)

    update = __setitem__

    def _set_in_chunks(self, index: Any, value: Any) -> None:
        """Write a large batch a chunk at a time, in order, so no op passes the grain."""
        idx = (index if isinstance(index, torch.Tensor) else torch.as_tensor(np.asarray(index))).reshape(-1)
        # Tensors and arrays as they are (no op on the whole batch): converted per chunk.
        values = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
        if values.numel() not in (1, idx.numel()):
            raise ValueError(f"cannot set {tuple(values.shape)} values at {tuple(idx.shape)} indices")
        values = values.reshape(-1)
        for start in range(0, idx.numel(), WRITE_CHUNK):
            part = values if values.numel() == 1 else values[start : start + WRITE_CHUNK]
            self[idx[start : start + WRITE_CHUNK]] = part

    def leaves(self) -> torch.Tensor:
        """A copy of the ``size`` leaf values."""
        return self._leaves().clone()

    def load_leaves(self, values: torch.Tensor) -> None:
        """Replace every leaf at once and rebuild the nodes above them."""
        values = torch.as_tensor(values, dtype=self._dtype, device=self._device)
        if values.shape != (self._size,):
            raise ValueError(f"expected {self._size} leaf values, got shape {tuple(values.shape)}")
        self._leaves().copy_(values)
        for level in range(len(self._levels) - 1):
            self._rebuild(level)

    # --- queries ------------------------------------------------------------------------
    def query(self, start: Any, end: Any) -> Any:
        """Reduce the leaves in ``[start, end)``; tensors give a tensor of results."""
        if isinstance(start, torch.Tensor) or isinstance(end, torch.Tensor):
            start_t = torch.as_tensor(start, device=self._device)
            end_t = torch.as_tensor(end, device=self._device)
            return self._query_batch(start_t.long(), end_t.long())
        if isinstance(start, np.ndarray) or isinstance(end, np.ndarray):
            result = self._query_batch(torch.as_tensor(start).long(), torch.as_tensor(end).long())
            return result.cpu().numpy()
        return self._query_scalar(int(start), int(end))

    def _query_scalar(self, start: int, end: int) -> float:
        lo, hi = max(start, 0), min(end, self._size)
        if lo >= hi:
            return self._identity
        if lo == 0 and hi == self._size:  # the whole tree, as torchrl's returns it: the root
            return self._levels[-1].item() if self._root is None else float(self._root[0])
        parts = []
        for level in self._levels:
            left_end, right_start = -(-lo // FANOUT) * FANOUT, hi // FANOUT * FANOUT
            if left_end > right_start:  # [lo, hi) lies inside one block
                parts.append(level[lo:hi])
                break
            parts += [level[lo:left_end], level[right_start:hi]]
            lo, hi = left_end // FANOUT, right_start // FANOUT
            if lo >= hi:
                break
        return self._fold(torch.cat(parts)).item()

    def _query_batch(self, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        start, end = torch.broadcast_tensors(start.to(self._device), end.to(self._device))
        lo, hi = start.clamp(0, self._size), end.clamp(0, self._size)
        result = torch.full(lo.shape, self._identity, dtype=self._dtype, device=self._device)
        offsets = torch.arange(FANOUT, device=self._device)
        for level in self._levels[:-1]:
            blocks = level.view(-1, FANOUT)
            left_end = (lo + FANOUT - 1) // FANOUT * FANOUT
            right_start = hi // FANOUT * FANOUT
            spans = left_end <= right_start  # else [lo, hi) lies inside one block
            left_limit = torch.minimum(left_end, hi)
            for block, keep_from, keep_to in (
                (lo // FANOUT, lo, left_limit),
                (hi // FANOUT, torch.where(spans, right_start, hi), hi),
            ):
                block = block.clamp_max(blocks.shape[0] - 1)
                position = block.unsqueeze(-1) * FANOUT + offsets
                mask = (position >= keep_from.unsqueeze(-1)) & (position < keep_to.unsqueeze(-1))
                picked = torch.where(mask, blocks[block], self._identity)
                result = self._fold(torch.stack([result, self._fold(picked)]), dim=0)
            lo = torch.where(spans, left_end // FANOUT, 0)
            hi = torch.where(spans, right_start // FANOUT, 0)
        # What is left of the range now spans the root's single block.
        with_root = self._fold(torch.stack([result, self._levels[-1][0].expand_as(result)]), dim=0)
        return torch.where(lo < hi, with_root, result)

    def _leaves(self) -> torch.Tensor:
        return self._levels[0][: self._size]

    def _check_scalar(self, index: Any) -> int:
        index = int(index)
        if not 0 <= index < self._size:
            raise IndexError(f"index {index} is out of range for a tree of size {self._size}")
        return index

    def _as_index(self, index: Any) -> torch.Tensor:
        if not isinstance(index, torch.Tensor):
            index = torch.as_tensor(np.asarray(index))
        if index.numel() and (index.dtype.is_floating_point or index.dtype == torch.bool):
            raise TypeError(f"segment tree indices must be integers, got {index.dtype}")
        if index.dtype != torch.long or index.device != self._device:
            index = index.to(device=self._device, dtype=torch.long)
        if index.numel():
            if index.device.type == "cpu":
                # One numpy max, a fraction of aminmax's cost: seen unsigned, negatives are huge.
                on_cpu = index.numpy()
                if int(on_cpu.view(np.uint64).max()) < self._size:
                    return index
                low, high = int(on_cpu.min()), int(on_cpu.max())
            else:
                low, high = (int(bound) for bound in torch.aminmax(index))
            if low < 0 or high >= self._size:
                bad = low if low < 0 else high
                raise IndexError(f"index {bad} is out of range for a tree of size {self._size}")
        return index

    def _write(self, index: torch.Tensor, values: torch.Tensor) -> None:
        """The write on any device (``_write_on_cpu`` is the CPU's): leaves, then their parents."""
        if index.numel() > 1:
            index, values = _last_write_wins(index, values)
        self._levels[0].index_copy_(0, index, values)
        nodes = index
        for level, (child, parent) in enumerate(zip(self._levels, self._levels[1:], strict=False)):
            nodes = nodes >> FANOUT_BITS
            if self._rebuilds(child, nodes.numel()):
                self._rebuild(level)
                continue
            blocks = child.view(-1, FANOUT)
            for start in range(0, nodes.numel(), ROWS):
                part = nodes[start : start + ROWS]
                parent.index_copy_(0, part, self._combine(blocks.index_select(0, part)))

    def _write_on_cpu(self, index_tensor: torch.Tensor, values: torch.Tensor) -> None:
        """``_write`` on numpy views of the levels, reduced by numpy too. In a replay step a
        write follows a storage read that evicts the code of every op: each torch op then
        costs tens of microseconds, a numpy op a fraction of that. Writes run in index order,
        so the last of repeated indices wins (tested); ``_rebuild`` reduces CPU levels with the
        same ufunc, so nodes stay bitwise what a rebuild from the leaves gives (tested)."""
        index = index_tensor.numpy()
        self._blocks[0].reshape(-1)[index] = values.numpy()
        nodes = index
        for level, child in enumerate(self._levels[:-1]):
            nodes = nodes >> FANOUT_BITS
            if self._rebuilds(child, nodes.size):
                self._rebuild(level)
            else:
                parents = self._blocks[level + 1].reshape(-1)  # never the root: its children are few
                parents[nodes] = self._numpy_combine.reduce(self._blocks[level].take(nodes, 0), axis=1)

    @staticmethod
    def _rebuilds(child: torch.Tensor, nodes: int) -> bool:
        """Whether to rebuild a parent level whole: reading every child costs less than
        indexing into a small level, or than the nodes' blocks when they cover most of it."""
        return child.numel() <= SMALL_LEVEL or nodes * FANOUT >= child.numel()

    def _rebuild(self, level: int) -> None:
        """Recompute level ``level + 1`` whole from its children."""
        if self._device.type == "cpu":  # numpy runs on this thread whatever the size
            children = self._blocks[level]
            above = self._levels[level + 1].numpy() if level + 1 == len(self._blocks) else self._blocks[level + 1].reshape(-1)
            self._numpy_combine.reduce(children, axis=1, out=above[: children.shape[0]])  # the parent is padded past it
            return
        blocks, parent = self._levels[level].view(-1, FANOUT), self._levels[level + 1]
        rows = blocks.shape[0]  # the parent level is padded past it
        if rows <= ROWS:  # the small levels a write rebuilds: one op
            self._combine(blocks, out=parent[:rows])
            return
        for start in range(0, rows, ROWS):
            end = min(start + ROWS, rows)
            self._combine(blocks[start:end], out=parent[start:end])


class SumSegmentTree(SegmentTree):
    """Sum tree: ``query`` sums a range; ``scan_lower_bound`` finds prefix-sum positions."""

    def __init__(self, size: int, device: DeviceLike = None, dtype: torch.dtype | None = None) -> None:
        super().__init__(size, device, dtype)
        finfo = torch.finfo(self._dtype)
        # The smallest positive mass: asking for at least this much skips zero-valued leaves.
        self._smallest_mass = torch.tensor(finfo.smallest_normal * finfo.eps, dtype=self._dtype, device=self._device)
        self._smallest_mass_np = self._smallest_mass.cpu().numpy()

    @staticmethod
    def _identity_for(dtype: torch.dtype) -> float:
        return 0.0

    # Rows are contiguous and FANOUT long wherever they come from, so each row is reduced by
    # the same kernel in the same order: bitwise reproducible.
    _numpy_combine = np.add

    @staticmethod
    def _combine(children: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        return torch.sum(children, -1, out=out)

    @staticmethod
    def _fold(values: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return values.sum(dim)

    def scan_lower_bound(self, value: Any) -> Any:
        """First index whose prefix sum reaches ``value``, or ``size`` past the total.

        Like torchrl's tree it returns the first ``i`` with ``sum(leaves[:i+1]) >= value``;
        unlike it, it never lands on a zero leaf while the total is positive (a value of 0,
        or one that float rounding pushes past a block, would otherwise pick a leaf that has
        no probability).
        """
        if self._device.type == "cpu":  # numpy in and out: torchrl's masses are numpy arrays
            if isinstance(value, torch.Tensor):
                masses = value.detach().to("cpu", self._dtype).numpy()
            else:
                masses = np.asarray(value, dtype=self._smallest_mass_np.dtype)
            found = self._scan_on_cpu(masses.reshape(-1)).reshape(masses.shape)
            index = torch.from_numpy(found) if isinstance(value, torch.Tensor) else found
        else:
            mass = torch.as_tensor(value, dtype=self._dtype, device=self._device)
            index = self._scan(mass.reshape(-1)).reshape(mass.shape)
        if isinstance(value, torch.Tensor):
            return index
        if isinstance(value, np.ndarray):
            return index.cpu().numpy() if isinstance(index, torch.Tensor) else index
        return int(index.item())

    def _scan(self, mass: torch.Tensor) -> torch.Tensor:
        """The search on any device (``_scan_on_cpu`` is the CPU's)."""
        past_total = mass > self._levels[-1]
        # At least the smallest positive mass, so zero-valued leaves are skipped.
        remaining = torch.clamp_min(mass, self._smallest_mass).unsqueeze(-1)
        # One block of FANOUT children per mass and level. Column 0 stays 0, the mass before
        # the block, so column ``child`` of the cumulative sums is the mass before ``child``.
        rows = torch.zeros((mass.numel(), FANOUT + 1), dtype=self._dtype, device=self._device)
        children, block_total = rows[:, 1:], rows[:, -1:]
        below = torch.empty_like(children)
        # Every mass starts in the root's block: its sums are taken once, not per mass.
        root_block = rows.new_zeros(FANOUT + 1)
        torch.cumsum(self._levels[-2], 0, out=root_block[1:])
        child = self._child(root_block[1:], root_block[-1:], remaining, below)
        remaining.sub_(root_block[child])
        node = child.view(-1)
        for level in reversed(self._levels[:-2]):
            torch.index_select(level.view(-1, FANOUT), 0, node, out=children)
            rows.cumsum_(-1)  # column 0 is 0, so the rest are the children's inclusive sums
            child = self._child(children, block_total, remaining, below)
            remaining.sub_(rows.gather(-1, child))
            node = child.view(-1).add_(node, alpha=FANOUT)
        return torch.where(past_total, self._size, node)

    def _scan_on_cpu(self, masses: np.ndarray) -> np.ndarray:
        """``_scan`` with numpy index ops (a fraction of torch's cost per call) on views of the
        same memory, and the same running sums (torch's ``cumsum``): it finds what ``_scan``
        finds (tested). Every level, the root's included, runs the same few ops: in a replay
        step the search follows a storage read that evicts the code of any op run only once."""
        # At least the smallest positive mass, so zero-valued leaves are skipped.
        remaining = np.maximum(masses, self._smallest_mass_np).reshape(-1, 1)
        rows = _ScanRows.get(masses.size, self._dtype)
        rows.children[:] = self._blocks[-1]  # every mass starts in the root's block
        node = rows.descend(remaining)
        for blocks in reversed(self._blocks[:-1]):
            rows.children[:] = blocks.take(node, 0)
            node = node * FANOUT + rows.descend(remaining)
        node[masses > self._root] = self._size
        return node

    @staticmethod
    def _child(inclusive: torch.Tensor, total: torch.Tensor, remaining: torch.Tensor, below: torch.Tensor) -> torch.Tensor:
        """Per mass, the first child whose inclusive sum reaches the remaining mass.

        Caps ``remaining`` at the block's total first, in place, for the caller's subtraction:
        rounding can leave it just above the total, and capped, the count ends on the last
        child that adds anything, never a zero one after it. The count is then at most
        FANOUT - 1, and 0 for NaN.
        """
        torch.minimum(remaining, total, out=remaining)
        # A comparison, not torch.searchsorted: that one wakes every intra-op thread for more
        # than 200 values, which costs milliseconds on a busy machine. Counted as floats:
        # summing booleans would first convert them to integers.
        return torch.lt(inclusive, remaining, out=below).sum(-1, keepdim=True).long()


class MinSegmentTree(SegmentTree):
    """Min tree: ``query`` gives the smallest leaf of a range."""

    @staticmethod
    def _identity_for(dtype: torch.dtype) -> float:
        # torchrl's tree uses std::numeric_limits<T>::max(), not infinity.
        return torch.finfo(dtype).max

    _numpy_combine = np.minimum

    @staticmethod
    def _combine(children: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        return torch.amin(children, -1, out=out)

    @staticmethod
    def _fold(values: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return values.amin(dim)


class SumSegmentTreeFp32(SumSegmentTree):
    dtype = torch.float32


class SumSegmentTreeFp64(SumSegmentTree):
    dtype = torch.float64


class MinSegmentTreeFp32(MinSegmentTree):
    dtype = torch.float32


class MinSegmentTreeFp64(MinSegmentTree):
    dtype = torch.float64


# torchrl's names for its trees; the CUDA ones take (size, device) as ours do.
TORCHRL_TREE_CLASSES: dict[str, type[SegmentTree]] = {
    "SumSegmentTreeFp32": SumSegmentTreeFp32,
    "SumSegmentTreeFp64": SumSegmentTreeFp64,
    "MinSegmentTreeFp32": MinSegmentTreeFp32,
    "MinSegmentTreeFp64": MinSegmentTreeFp64,
    "CudaSumSegmentTreeFp32": SumSegmentTreeFp32,
    "CudaSumSegmentTreeFp64": SumSegmentTreeFp64,
    "CudaMinSegmentTreeFp32": MinSegmentTreeFp32,
    "CudaMinSegmentTreeFp64": MinSegmentTreeFp64,
}


def _level_lengths(size: int) -> list[int]:
    """Stored length of each level, leaves first: each padded to whole blocks, root last."""
    lengths, nodes = [], size
    while True:
        padded = -(-nodes // FANOUT) * FANOUT
        lengths.append(padded)
        nodes = padded // FANOUT
        if nodes == 1:
            return lengths + [1]


class _ScanRows:
    """Per mass, one block of FANOUT children after a 0 column, for ``_scan_on_cpu``: column
    ``c`` of the rows' running sums is then the mass before child ``c``, and the last column
    the block's total. Kept per thread and reused (the 0 column stays 0)."""

    _kept = threading.local()

    def __init__(self, count: int, dtype: torch.dtype) -> None:
        self.rows = torch.zeros((count, FANOUT + 1), dtype=dtype)
        sums = self.rows.numpy()
        self.children, self.total, self.flat = sums[:, 1:], sums[:, -1:], sums.reshape(-1)
        self.row_starts = np.arange(0, self.flat.size, FANOUT + 1)

    @classmethod
    def get(cls, count: int, dtype: torch.dtype) -> _ScanRows:
        kept: dict[torch.dtype, _ScanRows] = cls._kept.__dict__.setdefault("by_dtype", {})
        rows = kept.get(dtype)
        if rows is None or rows.row_starts.size != count:
            rows = kept[dtype] = cls(count, dtype)
        return rows

    def descend(self, remaining: np.ndarray) -> np.ndarray:
        """Per mass, the child of its block holding the remaining mass; ``remaining`` becomes
        the mass left inside that child.

        Capped at the block's total first, in place (rounding can leave it just above), the
        first child whose running sum reaches it is the last that adds anything, never a zero
        one after it; a NaN mass reaches none and takes child 0. Running sums of non-negative
        values only grow, so that child is where ``children < remaining`` ends.
        """
        self.rows.cumsum_(-1)
        np.minimum(remaining, self.total, out=remaining)
        child = np.less(self.children, remaining).argmin(1)
        remaining -= self.flat.take(self.row_starts + child).reshape(-1, 1)
        return child


def _last_write_wins(index: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Deduplicate indices, keeping the last value written to each (as sequential writes would)."""
    unique, inverse = torch.unique(index, sorted=True, return_inverse=True)
    if unique.numel() == index.numel():
        return index, values
    positions = torch.arange(index.numel(), device=index.device)
    last = torch.full_like(unique, -1).scatter_reduce_(0, inverse, positions, "amax")
    return unique, values.index_select(0, last)  # not values[last]: indexing goes parallel far below the grain


def _count(index: Any) -> int:
    """How many indices ``index`` holds (tensors, arrays, sequences, or 1 for a scalar)."""
    if isinstance(index, torch.Tensor):
        return index.numel()
    if isinstance(index, np.ndarray):
        return index.size
    return len(index) if hasattr(index, "__len__") else 1


def _is_scalar_index(index: Any) -> bool:
    return isinstance(index, numbers.Integral) and not isinstance(index, bool)


def _like_input(result: torch.Tensor, original: Any) -> Any:
    """Tensors in, tensors out; anything else (numpy arrays, lists) gets a numpy array."""
    return result if isinstance(original, torch.Tensor) else result.cpu().numpy()
