"""install(), uninstall() and installed(): what they patch, and that they always put it all back."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import torchrl
import torchrl.collectors
import torchrl.modules
from rlguard_runtime_helpers import changed, left_patched, only, snapshot
from rlguard_runtime_helpers import collector_corrected as corrected
from torchrl.objectives import LossModule

from rlguard.runtime import RLGuardError, install, installed, recurrent, uninstall

HERE = Path(__file__).parent
# install() itself may warn (e.g. the segment-tree fallback); these tests are about patching.
pytestmark = pytest.mark.filterwarnings("ignore::rlguard.runtime.errors.RLGuardWarning")


def recurrent_corrected() -> bool:
    """Whether torchrl's own set_recurrent_mode, entered twice, restores the mode of each level."""
    reused = torchrl.modules.set_recurrent_mode(True)
    with torchrl.modules.set_recurrent_mode(False):
        with reused, reused:
            pass
        return torchrl.modules.tensordict_module.rnn.recurrent_mode() is False  # stock: True leaks


@pytest.fixture
def pristine() -> dict:
    install()  # import every component module once, so that the snapshot sees all they load
    uninstall()
    return snapshot()


@pytest.fixture
def targets(pristine: dict) -> list:
    """The attributes install() patches."""
    install()
    patched = changed(pristine, snapshot())
    uninstall()
    return patched


def patched_now(keys: list) -> list:
    """The objects now held by the attributes ``keys`` (identity compared, in order)."""
    now = snapshot()
    return [id(now.get(key)) for key in keys]


def test_importing_rlguard_runtime_patches_nothing_and_imports_no_torch() -> None:
    script = """
import json, sys
sys.path.insert(0, sys.argv[1])
first = "torch" in sys.modules
import rlguard.runtime
no_torch = "torch" not in sys.modules
from rlguard_runtime_helpers import changed, snapshot
import torchrl.collectors, torchrl.data, torchrl.modules, torchrl.objectives, torchrl.trainers
before = snapshot()
names = [getattr(rlguard.runtime, name) for name in rlguard.runtime.__all__]
print(json.dumps({"no_torch": no_torch and not first, "changed": len(changed(before, snapshot()))}))
"""
    out = subprocess.run([sys.executable, "-c", script, str(HERE)], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == {"no_torch": True, "changed": 0}


def test_uninstall_restores_the_identical_objects(pristine: dict) -> None:
    install()
    patched = changed(pristine, snapshot())
    assert patched and corrected()
    assert LossModule.get_stateful_net is not pristine[(id(LossModule), "get_stateful_net")]
    uninstall()
    assert left_patched(pristine) == []
    assert not corrected()


def test_install_is_idempotent(pristine: dict) -> None:
    install()
    once = snapshot()
    install()
    assert changed(once, snapshot()) == []
    uninstall()
    assert left_patched(pristine) == []


def test_components_are_chosen_by_keyword() -> None:
    assert not corrected() and not recurrent_corrected()
    with installed(**only("recurrent")):
        assert not corrected()
        assert recurrent_corrected()
    with installed(**only("collectors")):
        assert corrected()
        assert not recurrent_corrected()


def test_nested_blocks_keep_the_patches_and_choose_per_block(pristine: dict, targets: list) -> None:
    with installed():
        outer = patched_now(targets)
        with installed(**only("recurrent")):
            assert not corrected() and recurrent_corrected()
            assert patched_now(targets) == outer
        assert patched_now(targets) == outer
        assert corrected() and recurrent_corrected()
    assert left_patched(pristine) == []


def test_a_block_inside_install_leaves_it_installed(pristine: dict) -> None:
    install()
    with installed(**only("recurrent")):
        assert not corrected()
    assert corrected()
    with installed(**only("recurrent")):
        uninstall()  # an explicit uninstall wins, and the block's exit must not re-patch
        assert left_patched(pristine) == []
        assert not recurrent_corrected()
    assert left_patched(pristine) == []


def test_a_block_applies_to_its_own_thread_only() -> None:
    seen: dict[str, bool] = {}
    with installed(**only("collectors")):
        thread = threading.Thread(target=lambda: seen.update(other=corrected()))
        thread.start()
        thread.join()
        seen["own"] = corrected()
    assert seen == {"own": True, "other": False}


def test_overlapping_blocks_in_threads_never_see_stock_behaviour(pristine: dict, targets: list) -> None:
    """Each thread builds torchrl's own Collector with a locked policy inside and outside its
    blocks while the others open and close blocks with other groups: inside a collectors block
    it must always run in place, outside it must always be stock torchrl."""
    failures: list[str] = []
    held = threading.Event()

    def holder() -> None:
        with installed(**only("collectors", "training")):
            patched = patched_now(targets)
            held.set()
            for _ in range(6):
                if not corrected():
                    failures.append("an open collectors block ran stock torchrl")
            if patched_now(targets) != patched:
                failures.append("patched attributes changed while a block was open")

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        held.wait(30)
        for _ in range(8):
            chosen = only(*rng.sample(["collectors", "recurrent", "training", "buffers"], k=rng.randint(1, 3)))
            with installed(**chosen):
                if corrected() != chosen["collectors"]:
                    failures.append(f"a block of {sorted(k for k, on in chosen.items() if on)} saw the wrong Collector")
            if corrected():
                failures.append("outside any block, torchrl's Collector was corrected")

    threads = [threading.Thread(target=holder)] + [threading.Thread(target=worker, args=(seed,)) for seed in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert left_patched(pristine) == []  # the last block to close restored everything
    install()
    uninstall()
    assert left_patched(pristine) == []


def test_install_and_uninstall_racing_in_threads_end_unpatched(pristine: dict) -> None:
    def block() -> None:
        with installed():
            pass

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(30):
            rng.choice([install, uninstall, block])()

    run_threads(worker, 8)
    uninstall()
    assert left_patched(pristine) == []


def run_threads(target: Callable[[int], None], count: int) -> None:
    threads = [threading.Thread(target=target, args=(seed,)) for seed in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.parametrize("version", ["0.13.2", "0.15.0", "0.5.0"])
def test_an_unsupported_torchrl_is_refused_naming_the_range(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torchrl, "__version__", version)
    pristine = snapshot()
    with pytest.raises(RLGuardError) as error:
        install()
    message = str(error.value)
    assert "supports torchrl >=0.14,<0.15" in message or "supports torchrl >=0.6,<0.15" in message
    assert version in message and "=False" in message and "RLG001" in message
    assert changed(pristine, snapshot()) == []


def test_the_recurrent_corrections_alone_support_older_torchrl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torchrl, "__version__", "0.7.2")
    with pytest.raises(RLGuardError, match=r"install\(collectors=True\) supports torchrl >=0.14,<0.15"):
        install()
    with installed(**only("recurrent")):
        assert recurrent_corrected()


def test_local_builds_of_a_supported_version_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torchrl, "__version__", "0.14.1+cu128")
    with installed(**only("collectors")):
        assert corrected()


def test_a_component_that_fails_patches_nothing(pristine: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> list:
        raise ImportError("simulated broken component")

    monkeypatch.setattr(recurrent, "patches", broken)
    with pytest.raises(ImportError, match="simulated"):
        install(**only("collectors"))
    with pytest.raises(ImportError, match="simulated"), installed():
        pass
    assert changed(pristine, snapshot()) == [] and not corrected()
    monkeypatch.undo()
    install(**only("collectors"))
    assert corrected()
    uninstall()
    assert left_patched(pristine) == []
