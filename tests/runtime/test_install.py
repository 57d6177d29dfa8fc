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
from rlguard_runtime_helpers import changed, only, snapshot
from torchrl.objectives import LossModule

from rlguard.runtime import RLGuardError, install, installed, recurrent, uninstall

HERE = Path(__file__).parent
# install() itself may warn (e.g. the segment-tree fallback); these tests are about patching.
pytestmark = pytest.mark.filterwarnings("ignore::rlguard.runtime.errors.RLGuardWarning")


def corrected() -> bool:
    """Whether torchrl's own Collector currently carries rlguard's correction."""
    return "_get_policy_and_device" in vars(torchrl.collectors.Collector)


def recurrent_corrected() -> bool:
    return torchrl.modules.set_recurrent_mode.__enter__ is recurrent._enter


@pytest.fixture
def pristine() -> dict:
    install()  # import every component module once, so that the snapshot sees all they load
    uninstall()
    return snapshot()


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
    assert changed(pristine, snapshot()) == []
    assert not corrected()


def test_install_is_idempotent(pristine: dict) -> None:
    install()
    once = snapshot()
    install()
    assert changed(once, snapshot()) == []
    uninstall()
    assert changed(pristine, snapshot()) == []


def test_components_are_chosen_by_keyword() -> None:
    with installed(**only("recurrent")):
        assert not corrected()
        assert recurrent_corrected()
    with installed(**only("collectors")):
        assert corrected()
        assert not recurrent_corrected()


def test_nested_blocks_keep_the_outer_patches(pristine: dict) -> None:
    with installed():
        outer = snapshot()
        with installed(**only("collectors")):
            assert changed(outer, snapshot()) == []
        assert changed(outer, snapshot()) == []
        with installed():
            pass
        assert changed(outer, snapshot()) == []
    assert changed(pristine, snapshot()) == []


def test_a_block_inside_install_leaves_it_installed(pristine: dict) -> None:
    install()
    with installed():
        pass
    assert corrected()
    with installed(**only("recurrent")):
        uninstall()  # an explicit uninstall wins, and the block's exit must not re-patch
        assert changed(pristine, snapshot()) == []
    assert changed(pristine, snapshot()) == []


def test_overlapping_blocks_in_threads_each_keep_their_patches(pristine: dict) -> None:
    failures: list[str] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(30):
            chosen = only(*rng.sample(["collectors", "recurrent"], k=rng.randint(1, 2)))
            with installed(**chosen):
                if chosen["collectors"] and not corrected():
                    failures.append("collectors block saw an unpatched Collector")
                if rng.random() < 0.3:
                    install(**only("recurrent"))

    run_threads(worker, 8)
    assert failures == []
    uninstall()
    assert changed(pristine, snapshot()) == []


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
    assert changed(pristine, snapshot()) == []


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


def test_a_component_that_fails_leaves_the_previous_state(pristine: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    install(**only("collectors"))
    before = set(changed(pristine, snapshot()))

    def broken() -> list:
        raise ImportError("simulated broken component")

    monkeypatch.setattr(recurrent, "patches", broken)
    with pytest.raises(ImportError, match="simulated"):
        install()
    assert set(changed(pristine, snapshot())) == before and corrected()
    monkeypatch.undo()
    uninstall()
    assert changed(pristine, snapshot()) == []
