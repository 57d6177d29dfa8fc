"""PrioritizedSampler: extension detection, the tree fallback, and the state round trip."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch
import torchrl
from rlguard_runtime_helpers import current_state, largest_op, only, tree_values
from tensordict import TensorDict
from torchrl.data import (
    LazyTensorStorage,
    PrioritizedReplayBuffer,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)
from torchrl.data.replay_buffers.samplers import PrioritizedSliceSampler
from torchrl.data.replay_buffers.samplers import prioritized as torchrl_prioritized

from rlguard.runtime import RLGuardError, RLGuardWarning, installed
from rlguard.runtime._patch import PatchSet
from rlguard.runtime.extension import probe, short_symbol
from rlguard.runtime.sampler import PrioritizedSampler, missing_tree_names, patches
from rlguard.runtime.sampler import PrioritizedSliceSampler as RLGuardSliceSampler
from rlguard.runtime.segment_tree import GRAIN, TORCHRL_TREE_CLASSES, WRITE_CHUNK

StockSampler = torchrl_prioritized.PrioritizedSampler
# torchrl's own methods, kept before any patch, to write states exactly as torchrl does.
STOCK = {name: vars(StockSampler)[name] for name in ("dumps", "loads", "state_dict")}
CAPACITY = 40
EXTENSION_LOADS = torchrl_prioritized.SumSegmentTreeFp32 is not None


@pytest.fixture
def patched() -> Iterator[PatchSet]:
    applied = PatchSet()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)  # the fallback notice, tested on its own
        for patch in patches():
            applied.apply(patch)
    yield applied
    applied.restore_all()


@pytest.fixture
def stock_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lets torchrl's own sampler run here, with nothing of rlguard but the trees."""
    for name in ("SumSegmentTreeFp32", "SumSegmentTreeFp64", "MinSegmentTreeFp32", "MinSegmentTreeFp64"):
        monkeypatch.setattr(torchrl_prioritized, name, TORCHRL_TREE_CLASSES[name])


def filled(sampler_class: type = PrioritizedSampler, **kwargs: Any) -> Any:
    """A sampler holding random priorities over most of its capacity."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        sampler = sampler_class(CAPACITY, alpha=0.7, beta=0.5, **kwargs)
    generator = torch.Generator().manual_seed(3)
    index = torch.randint(0, CAPACITY - 5, (60,), generator=generator)
    sampler.update_priority(index, torch.rand(60, generator=generator) * 10)
    return sampler


def fresh(**kwargs: Any) -> PrioritizedSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        return PrioritizedSampler(CAPACITY, alpha=0.7, beta=0.5, **kwargs)


def draws(sampler: Any, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    sampler._rng = torch.Generator().manual_seed(seed)
    storage = LazyTensorStorage(CAPACITY)
    storage.set(torch.arange(CAPACITY), TensorDict(x=torch.zeros(CAPACITY), batch_size=[CAPACITY]))
    index, info = sampler.sample(storage, 500)
    return index, info["priority_weight"]


def leaves(tree: Any) -> torch.Tensor:
    return torch.as_tensor(tree[torch.arange(CAPACITY)])


def contents(tree: Any) -> list[torch.Tensor]:
    """Every level of an extension-free tree; the leaves and total of a compiled one, which
    shows nothing else (these tests also run where torchrl's extension loads)."""
    if hasattr(tree, "_levels"):
        return list(tree._levels)
    return [leaves(tree), torch.tensor(tree.query(0, CAPACITY))]


def assert_same_state(loaded: Any, original: Any) -> None:
    """Identical trees (so identical sampling) and torchrl's attribute types."""
    for name in ("_sum_tree", "_min_tree"):
        mine, theirs = getattr(loaded, name), getattr(original, name)
        assert type(mine) is type(theirs)
        for level, other in zip(contents(mine), contents(theirs), strict=False):
            assert torch.equal(level, other)
    assert (loaded._alpha, loaded._beta, loaded._eps) == (original._alpha, original._beta, original._eps)
    for mine, theirs in zip(loaded._max_priority, original._max_priority, strict=False):
        assert isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor)
        assert mine.dtype == theirs.dtype and torch.equal(mine, theirs)
    for mine, theirs in zip(draws(loaded), draws(original), strict=False):
        assert torch.equal(mine, theirs)


class Unchanged:
    """Every attribute of a sampler, kept to prove a failed load touched nothing."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler
        self.attributes = dict(vars(sampler))
        self.levels = [level.clone() for tree in (sampler._sum_tree, sampler._min_tree) for level in contents(tree)]
        self.max_priority = [t.clone() for t in sampler._max_priority if t is not None]

    def check(self) -> None:
        now = vars(self.sampler)
        assert now.keys() == self.attributes.keys()
        assert all(now[key] is value for key, value in self.attributes.items())
        levels = [level for tree in (self.sampler._sum_tree, self.sampler._min_tree) for level in contents(tree)]
        assert all(torch.equal(a, b) for a, b in zip(levels, self.levels, strict=False))
        current = [t for t in self.sampler._max_priority if t is not None]
        assert all(torch.equal(a, b) for a, b in zip(current, self.max_priority, strict=False))


# --- the extension ---------------------------------------------------------------------------


def test_probe_agrees_with_torchrl_and_keeps_the_loader_error() -> None:
    status = probe()
    assert status.loads == EXTENSION_LOADS
    assert status.torchrl_version == torchrl.__version__
    if not status.loads:
        assert status.error and status.path and status.path in status.error
        assert status.fix and status.cause
        if status.missing_symbol:
            assert short_symbol(status.missing_symbol) in status.cause


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="no c++filt to demangle with")
def test_a_symbol_is_demangled_without_its_parameters() -> None:
    assert short_symbol("_ZN2at6Tensor4viewEN3c108ArrayRefIlEE") == "at::Tensor::view(...)"


def test_a_long_symbol_is_cut_and_a_short_plain_one_kept() -> None:
    long_name = "x" * 300  # no C++ mangling: c++filt, where present, gives it back as it is
    assert short_symbol(long_name) == "x" * 57 + "..."
    assert short_symbol("cudaMalloc") == "cudaMalloc"


@pytest.mark.skipif(not probe().missing_symbol, reason="the extension loads here, or fails for another reason")
def test_the_fallback_warning_names_the_missing_symbol_once_and_short() -> None:
    symbol = probe().missing_symbol
    with installed(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(8))
    (notice,) = [str(w.message) for w in caught if "compiled segment trees are unavailable" in str(w.message)]
    assert symbol not in notice and len(symbol) > 100
    assert notice.count(short_symbol(symbol)) == 1, notice


def run_probe(*arguments: str, code: str = "") -> tuple[int, dict[str, Any]]:
    """``python -m rlguard.runtime.extension`` in a subprocess, as doctor runs it."""
    script = f"import sys\n{code}\nfrom rlguard.runtime.extension import main\nsys.exit(main({list(arguments)!r}))"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    return run.returncode, json.loads(run.stdout)


def test_cli_reports_a_broken_shared_object_as_json(tmp_path: Path) -> None:
    broken = tmp_path / "_torchrl.so"
    broken.write_bytes(b"\x7fELF not really")
    returncode, report = run_probe("--path", str(broken))
    assert returncode == 1
    assert report["loads"] is False and report["problem"] == "loader" and report["path"] == str(broken)
    assert str(broken) in report["error"] and report["fallback"]


def test_cli_reports_a_broken_torch_without_raising() -> None:
    returncode, report = run_probe(code="sys.modules['torch'] = None")  # import torch now fails
    assert returncode == 1
    assert report["problem"] == "torch-import" and report["cause"].startswith("torch does not import")


# --- the tree fallback -----------------------------------------------------------------------


@pytest.mark.skipif(EXTENSION_LOADS, reason="torchrl's extension loads here")
def test_stock_prioritized_buffer_fails_without_the_patches() -> None:
    with pytest.raises(RuntimeError, match="SumSegmentTreeFp32 is not available"):
        PrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(CAPACITY))


@pytest.mark.skipif(EXTENSION_LOADS, reason="torchrl's extension loads here")
def test_patches_wire_the_trees_in_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RLGuardWarning)  # the fallback notice waits for a sampler
        first, second = patches(), patches()
    wired = {(patch.owner, patch.name): patch.value for patch in first}
    assert wired[(torchrl_prioritized, "SumSegmentTreeFp32")] is TORCHRL_TREE_CLASSES["SumSegmentTreeFp32"]
    # Once applied, the same patches are computed again (install() re-applies after restoring).
    applied = PatchSet()
    for patch in first:
        applied.apply(patch)
    assert [(p.owner, p.name) for p in patches()] == [(p.owner, p.name) for p in second]
    applied.restore_all()
    assert torchrl_prioritized.SumSegmentTreeFp32 is None


@pytest.mark.skipif(not EXTENSION_LOADS, reason="torchrl's extension does not load here")
def test_compiled_trees_are_left_alone() -> None:
    import torchrl._torchrl as compiled

    assert not [name for name in missing_tree_names() if not name.startswith("Cuda")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RLGuardWarning)  # no fallback notice either
        with installed(collectors=False, recurrent=False, buffers=False, training=False):
            assert torchrl_prioritized.SumSegmentTreeFp32 is compiled.SumSegmentTreeFp32
            buffer = PrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(CAPACITY))
            assert type(buffer._sampler._sum_tree) is compiled.SumSegmentTreeFp32


def test_stock_prioritized_buffer_samples_in_proportion_to_priority(patched: PatchSet) -> None:
    np.random.seed(0)
    buffer = PrioritizedReplayBuffer(alpha=1.0, beta=0.5, storage=LazyTensorStorage(8), batch_size=4000)
    buffer.extend(torch.arange(8))
    priority = torch.tensor([1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 6.0, 8.0])
    buffer.update_priority(torch.arange(8), priority)
    sample, info = buffer.sample(return_info=True)
    counts = torch.bincount(sample, minlength=8).double()
    expected = (priority + 1e-8) / (priority + 1e-8).sum() * counts.sum()
    seen = expected > 1
    chi2 = ((counts[seen] - expected[seen]) ** 2 / expected[seen]).sum()
    assert chi2 < 22.5  # chi-square, 5 degrees of freedom, p = 0.0005
    assert counts[~seen].sum() == 0
    weight = torch.as_tensor(info["priority_weight"])
    p_min = torch.tensor(1e-8)  # the zero priorities hold eps
    assert torch.allclose(weight, ((priority[sample] + 1e-8) / p_min) ** -0.5, rtol=1e-4)


def test_stock_tensordict_prioritized_buffer_end_to_end(patched: PatchSet) -> None:
    torch.manual_seed(0)
    buffer = TensorDictPrioritizedReplayBuffer(
        alpha=0.7, beta=0.5, storage=LazyTensorStorage(16), batch_size=8, priority_key="td_error"
    )
    buffer.extend(TensorDict(obs=torch.arange(12.0), batch_size=[12]))
    batch = buffer.sample()
    assert batch["index"].shape == batch["priority_weight"].shape == (8,)
    hot = batch["index"][0]
    batch["td_error"] = torch.where(batch["index"] == hot, 1e6, 1e-3)
    buffer.update_tensordict_priority(batch)
    later = buffer.sample()
    assert (later["index"] == hot).float().mean() > 0.9
    assert torch.isfinite(later["priority_weight"]).all()


def test_stock_prioritized_slice_sampler_runs_on_the_trees(patched: PatchSet) -> None:
    # It reads and writes the trees with numpy indices, the other half of their interface.
    sampler = PrioritizedSliceSampler(max_capacity=40, alpha=0.7, beta=0.5, num_slices=2, traj_key="episode")
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(40), sampler=sampler, batch_size=8)
    buffer.extend(TensorDict(obs=torch.arange(40.0), episode=torch.arange(40) // 10, batch_size=[40]))
    batch = buffer.sample()
    assert batch["episode"].view(2, 4).unique(dim=1).shape == (2, 1)  # two slices, each in one episode
    buffer.update_priority(batch["index"], torch.rand(8))
    assert buffer.sample().batch_size == (8,)


def test_stock_buffer_checkpoint_round_trips_twice(tmp_path: Path, patched: PatchSet) -> None:
    def buffer() -> TensorDictPrioritizedReplayBuffer:
        return TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(20), batch_size=6)

    def seeded_sample(replay: TensorDictPrioritizedReplayBuffer) -> TensorDict:
        replay.set_rng(torch.Generator().manual_seed(1))
        return replay.sample()

    original = buffer()
    original.extend(TensorDict(obs=torch.arange(12.0), batch_size=[12]))
    batch = original.sample()
    batch["td_error"] = torch.rand(6)
    original.update_tensordict_priority(batch)
    original.dumps(tmp_path)
    restored = buffer()
    restored.loads(tmp_path)
    restored.loads(tmp_path)
    expected, got = seeded_sample(original), seeded_sample(restored)
    assert torch.equal(got["index"], expected["index"])
    assert torch.equal(got["priority_weight"], expected["priority_weight"])


@pytest.mark.filterwarnings("ignore::rlguard.runtime.RLGuardWarning")
def test_installed_wires_the_fallback_into_stock_buffers() -> None:
    with installed(**only("samplers")):
        buffer = PrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=LazyTensorStorage(4))
        buffer.extend(torch.arange(4))
        assert buffer.sample(2).shape == (2,)


def test_rlguard_sampler_needs_no_install() -> None:
    with pytest.warns(RLGuardWarning, match="extension-free") if not EXTENSION_LOADS else warnings.catch_warnings():
        sampler = PrioritizedSampler(CAPACITY, alpha=0.7, beta=0.5)
    sampler.update_priority(torch.tensor([2]), torch.tensor([3.0]))
    assert sampler._sum_tree[2] == pytest.approx((3.0 + 1e-8) ** 0.7)


def test_stock_slice_sampler_fails_without_the_patches() -> None:
    if EXTENSION_LOADS:
        pytest.skip("torchrl's compiled trees load here")
    with pytest.raises(RuntimeError, match="SumSegmentTreeFp32 is not available"):
        PrioritizedSliceSampler(max_capacity=40, alpha=0.7, beta=0.5, num_slices=2, traj_key="episode")


def test_rlguard_slice_sampler_needs_no_install(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        sampler = RLGuardSliceSampler(max_capacity=40, alpha=0.7, beta=0.5, num_slices=2, traj_key="episode")
    assert isinstance(sampler, PrioritizedSliceSampler)
    assert vars(StockSampler)["dumps"] is STOCK["dumps"]  # nothing of torchrl was patched
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(40), sampler=sampler, batch_size=8)
    buffer.extend(TensorDict(obs=torch.arange(40.0), episode=torch.arange(40) // 10, batch_size=[40]))
    batch = buffer.sample()
    assert batch["episode"].view(2, 4).unique(dim=1).shape == (2, 1)  # two slices, each in one episode
    hot = batch["index"][0]
    buffer.update_priority(batch["index"], torch.where(batch["index"] == hot, 1000.0, 1e-3))
    later = torch.cat([buffer.sample()["episode"] for _ in range(20)])
    assert (later == batch["episode"][0]).float().mean() > 0.5  # the prioritized episode dominates
    sampler.dumps(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        loaded = RLGuardSliceSampler(max_capacity=40, alpha=0.7, beta=0.5, num_slices=2, traj_key="episode")
    loaded.loads(tmp_path)
    assert torch.equal(tree_values(loaded._sum_tree, 40), tree_values(sampler._sum_tree, 40))


def test_a_large_update_stays_under_the_parallel_grain_with_torchrl_semantics() -> None:
    # 100k priorities took 0.3-0.65 s on two busy intra-op threads against 16 ms on one:
    # torchrl's element-wise ops on the whole batch each woke the threads.
    capacity, count = 200_000, 3 * WRITE_CHUNK + 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RLGuardWarning)
        chunked, whole = (PrioritizedSampler(capacity, alpha=0.7, beta=0.5) for _ in range(2))
    generator = torch.Generator().manual_seed(8)
    index = torch.randint(0, capacity, (count,), generator=generator)
    index[-1] = index[0]  # given again in a later chunk: the later priority wins
    priority = torch.rand(count, generator=generator) * 5
    assert largest_op(lambda: chunked.update_priority(index, priority), chunked._sum_tree, chunked._min_tree) <= GRAIN
    _, last = np.unique(index.numpy()[::-1], return_index=True)
    keep = torch.from_numpy(count - 1 - last)  # each index once, with its last priority
    StockSampler.update_priority(whole, index[keep], priority[keep])  # torchrl's own, unchunked
    # pow's vectorised and scalar paths may round one ulp apart, and deduplicating moved elements.
    for tree in ("_sum_tree", "_min_tree"):
        mine, theirs = tree_values(getattr(chunked, tree), capacity), tree_values(getattr(whole, tree), capacity)
        assert torch.equal(mine == 0, theirs == 0) and torch.allclose(mine, theirs, rtol=1e-6, atol=0)
    assert torch.equal(chunked._max_priority[0], whole._max_priority[0])
    chunked.update_priority(index[:5], 2.0)  # a scalar and a small batch go to torchrl whole
    assert chunked._sum_tree[int(index[0])] == pytest.approx((2.0 + 1e-8) ** 0.7)


# --- the round trip --------------------------------------------------------------------------


def test_dumps_writes_plain_json(tmp_path: Path) -> None:
    filled().dumps(tmp_path)
    text = (current_state(tmp_path) / "sampler_metadata.json").read_text()

    def refuse(constant: str) -> None:
        raise AssertionError(f"not plain JSON: {constant}")

    metadata = json.loads(text, parse_constant=refuse)
    leaves = [metadata]
    while leaves:
        value = leaves.pop()
        assert isinstance(value, (dict, list, str, int, float, type(None)))
        leaves += list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    assert metadata["_max_capacity"] == CAPACITY and isinstance(metadata["_max_priority"][1], int)


def test_dumps_loads_round_trip_twice(tmp_path: Path) -> None:
    original = filled()
    original.dumps(tmp_path)
    loaded = fresh()
    loaded.loads(tmp_path)
    loaded.loads(tmp_path)
    assert_same_state(loaded, original)


def test_state_dict_round_trip_twice_through_torch_save(tmp_path: Path) -> None:
    original = filled()
    torch.save(original.state_dict(), tmp_path / "state.pt")
    state = torch.load(tmp_path / "state.pt")  # weights_only: plain tensors and numbers
    loaded = fresh()
    loaded.load_state_dict(state)
    loaded.load_state_dict(state)
    assert_same_state(loaded, original)
    loaded.update_priority(torch.tensor([0]), torch.tensor([99.0]))
    assert state["_sum_tree"][0] != loaded._sum_tree[0]  # the state was copied, not shared


def test_empty_sampler_round_trips_to_a_fresh_one(tmp_path: Path) -> None:
    fresh().dumps(tmp_path)
    loaded = filled()
    loaded.loads(tmp_path)
    assert loaded._max_priority == (None, None)
    assert loaded._sum_tree.query(0, CAPACITY) == 0.0


def test_a_float32_state_loads_into_a_float64_sampler(tmp_path: Path) -> None:
    original = filled()
    original.dumps(tmp_path)
    wider = fresh(dtype=torch.float64)
    wider.loads(tmp_path)
    assert torch.equal(leaves(wider._sum_tree), leaves(original._sum_tree).double())
    empty = leaves(original._sum_tree) == 0
    assert (leaves(wider._min_tree)[empty] == torch.finfo(torch.float64).max).all()


def test_dumps_refuses_a_non_finite_max_priority(tmp_path: Path) -> None:
    sampler = filled()
    sampler._max_priority = (torch.tensor(math.inf), torch.tensor(1))
    with pytest.raises(RLGuardError, match="_max_priority.*non-finite"):
        sampler.dumps(tmp_path / "dump")
    assert not (tmp_path / "dump").exists()


# --- states written by torchrl ---------------------------------------------------------------


def test_loads_what_torchrl_0_14_dumps(tmp_path: Path, stock_trees: None) -> None:
    original = filled(StockSampler)
    STOCK["dumps"](original, tmp_path)
    loaded = fresh()
    loaded.loads(tmp_path)
    loaded.loads(tmp_path)
    assert_same_state(loaded, original)


def test_torchrl_0_14_loads_what_rlguard_dumps(tmp_path: Path, stock_trees: None) -> None:
    original = filled()
    original.dumps(tmp_path)
    stock = filled(StockSampler)
    STOCK["loads"](stock, current_state(tmp_path))  # each generation is in torchrl's layout
    for level, other in zip(contents(stock._sum_tree), contents(original._sum_tree), strict=False):
        assert torch.equal(level, other)


def test_loads_a_torchrl_state_dict_holding_tree_objects(stock_trees: None) -> None:
    original = filled(StockSampler)
    loaded = fresh()
    loaded.load_state_dict(STOCK["state_dict"](original))
    assert_same_state(loaded, original)


def write_old_dump(path: Path, metadata: dict[str, Any] | str, leaves: torch.Tensor) -> None:
    path.mkdir(exist_ok=True)
    text = metadata if isinstance(metadata, str) else json.dumps(metadata)
    (path / "sampler_metadata.json").write_text(text)
    empty = torch.finfo(torch.float32).max
    (path / "sumtree.memmap").write_bytes(leaves.double().numpy().tobytes())
    (path / "mintree.memmap").write_bytes(torch.where(leaves > 0, leaves, empty).double().numpy().tobytes())


def old_leaves() -> torch.Tensor:
    leaves = torch.zeros(CAPACITY)
    leaves[[3, 7, 9]] = torch.tensor([2.0, 8.0, 4.0]) ** 0.7
    return leaves


def test_loads_old_torchrl_with_a_bare_max_priority(tmp_path: Path) -> None:
    # Before max_priority_within_buffer, torchrl wrote _max_priority as one float, no schema version.
    metadata = {"_alpha": 0.7, "_beta": 0.5, "_eps": 1e-8, "_max_priority": 8.0, "_max_capacity": CAPACITY}
    write_old_dump(tmp_path, metadata, old_leaves())
    loaded = fresh()
    loaded.loads(tmp_path)
    value, index = loaded._max_priority
    assert isinstance(value, torch.Tensor) and value.item() == 8.0 and index.item() == 7
    assert loaded._sum_tree.query(0, CAPACITY) == pytest.approx(old_leaves().sum().item())


def test_loads_schemaless_torchrl_and_recomputes_a_transformed_max(tmp_path: Path) -> None:
    # torchrl between the (value, index) pair and schema 1 wrote tree_map(float, ...): a float
    # capacity, no schema version, and with max_priority_within_buffer possibly the tree's
    # transformed value as the max (pytorch/rl#3925).
    metadata = {"_alpha": 0.7, "_beta": 0.5, "_eps": 1e-8, "_max_priority": [8.0**0.7, 7.0], "_max_capacity": 40.0}
    write_old_dump(tmp_path, metadata, old_leaves())
    loaded = fresh(max_priority_within_buffer=True)
    loaded.loads(tmp_path)
    value, index = loaded._max_priority
    assert value.item() == pytest.approx(8.0, rel=1e-5) and index.item() == 7


META, SUM, MIN = "sampler_metadata.json", "sumtree.memmap", "mintree.memmap"


def overwrite(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda path: (path / name).write_bytes(data)


def truncate(name: str, keep: int) -> Callable[[Path], None]:
    return lambda path: (path / name).write_bytes((path / name).read_bytes()[:keep])


BAD_DUMPS: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # name: (how to damage a good dump, file named, field or phrase named)
    "truncated json (RLG003)": (overwrite(META, b'{"_alpha": 0.7, "_max_priority": ['), META, "_max_priority"),
    "garbage json": (overwrite(META, b"\x00\xffnot json"), META, "not valid JSON"),
    "missing metadata": (lambda p: (p / META).unlink(), META, "missing"),
    "missing tree file": (lambda p: (p / MIN).unlink(), MIN, "_min_tree"),
    "truncated tree file": (truncate(SUM, 100), SUM, "_sum_tree"),
    "other capacity in the metadata": (lambda p: edit(p, _max_capacity=CAPACITY * 2), META, "_max_capacity"),
    "other capacity in a tree file": (overwrite(SUM, bytes(8 * (CAPACITY + 8))), SUM, "_sum_tree"),
    "float64 state into float32": (lambda p: make_float64(p), SUM, "dtype=torch.float64"),
    "wrong field type": (lambda p: edit(p, _alpha="0.7"), META, "_alpha"),
    "missing field": (lambda p: edit(p, drop="_eps"), META, "_eps"),
    "tensor written as text (RLG003)": (lambda p: edit(p, _beta="tensor(0.5000)"), META, "RLG003"),
    "index out of range": (lambda p: edit(p, _max_priority=[1.0, CAPACITY + 3]), META, "_max_priority"),
    "half a max priority": (lambda p: edit(p, _max_priority=[1.0, None]), META, "_max_priority"),
    "unknown dtype": (lambda p: edit(p, _dtype="int8"), META, "_dtype"),
    "NaN leaf": (lambda p: poke(p, SUM, math.nan), SUM, "_sum_tree"),
    "trees disagree": (lambda p: poke(p, MIN, 0.123), MIN, "different dumps"),
    "tree from another dump": (lambda p: other_dump_tree(p, SUM), SUM, "does not match sampler_metadata.json"),
}


def edit(path: Path, drop: str | None = None, **fields: Any) -> None:
    metadata = json.loads((path / "sampler_metadata.json").read_text())
    metadata.update(fields)
    metadata.pop(drop, None)
    (path / "sampler_metadata.json").write_text(json.dumps(metadata))


def poke(path: Path, name: str, value: float) -> None:
    leaves = np.fromfile(path / name, dtype=np.float64)
    leaves[1] = value
    leaves.tofile(path / name)


def other_dump_tree(path: Path, name: str) -> None:
    other = fresh()
    other.update_priority(torch.arange(3), torch.tensor([1.0, 2.0, 3.0]))
    other.dumps(path / "other")
    (path / name).write_bytes((current_state(path / "other") / name).read_bytes())


def make_float64(path: Path) -> None:
    sampler = fresh(dtype=torch.float64)
    sampler.update_priority(torch.arange(5), torch.rand(5, dtype=torch.float64) * 10)
    sampler.dumps(path / "float64")
    for file in current_state(path / "float64").iterdir():
        (path / file.name).write_bytes(file.read_bytes())


@pytest.mark.parametrize("damage", BAD_DUMPS.values(), ids=BAD_DUMPS.keys())
def test_a_bad_dump_raises_naming_file_and_field_and_changes_nothing(tmp_path: Path, damage) -> None:
    how, file, field = damage
    filled().dumps(tmp_path)
    how(current_state(tmp_path))
    sampler = filled(max_priority_within_buffer=True)
    sampler.update_priority(torch.tensor([39]), torch.tensor([0.25]))
    before = Unchanged(sampler)
    with pytest.raises(RLGuardError) as raised:
        sampler.loads(tmp_path)
    message = str(raised.value)
    assert file in message and field in message
    assert "Traceback" not in message
    before.check()


def test_loading_from_a_missing_directory_names_it(tmp_path: Path) -> None:
    sampler = filled()
    before = Unchanged(sampler)
    with pytest.raises(RLGuardError, match=r"nowhere: missing or not a directory"):
        sampler.loads(tmp_path / "nowhere")
    before.check()


def state_with(**fields: Any) -> dict[str, Any]:
    state = filled().state_dict()
    state.update(fields)
    return {key: value for key, value in state.items() if value is not None}


BAD_STATES = {
    "missing tree": (state_with(_min_tree=None), "_min_tree"),
    "other capacity": (state_with(_sum_tree=torch.ones(CAPACITY + 1)), "_sum_tree"),
    "other capacity field": (state_with(_max_capacity=7), "_max_capacity"),
    "not a tensor": (state_with(_sum_tree="leaves"), "_sum_tree"),
    "negative alpha": (state_with(_alpha=-1.0), "_alpha"),
    "max priority of three": (state_with(_max_priority=(1.0, 2, 3)), "_max_priority"),
    "not a mapping": ([("_alpha", 0.7)], "state_dict()"),
}


@pytest.mark.parametrize("state, field", BAD_STATES.values(), ids=BAD_STATES.keys())
def test_a_bad_state_dict_raises_naming_the_field_and_changes_nothing(state: Any, field: str) -> None:
    sampler = filled()
    before = Unchanged(sampler)
    with pytest.raises(RLGuardError, match="PrioritizedSampler.load_state_dict") as raised:
        sampler.load_state_dict(state)
    assert field in str(raised.value)
    before.check()


def test_patches_give_torchrl_sampler_the_safe_round_trip(tmp_path: Path, patched: PatchSet) -> None:
    original = filled(StockSampler)
    original.dumps(tmp_path)
    loaded = filled(StockSampler)
    loaded.loads(tmp_path)
    loaded.loads(tmp_path)  # torchrl's own loads fails here: 'float' object has no attribute 'copy_'
    assert_same_state(loaded, original)
