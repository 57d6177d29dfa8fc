"""Compatibility code judged by the program that runs: each shim, guard, gate and TYPE_CHECKING shape in a
silent and a flagged form. The silent forms run on torchrl 0.14.1 (installed) and 0.6.0 (its wheels) and
take the branch each release needs; the flagged forms fail on 0.14.1, as their findings say."""

from __future__ import annotations

import pytest

from rlguard.rules.data import NEWEST_KNOWN_TORCHRL
from rlguard.testing import check_source, fix_source
from tests.old_release import old_stack, run_snippets

torchrl = pytest.importorskip("torchrl")
if tuple(int(p) for p in torchrl.__version__.split(".")[:2]) != NEWEST_KNOWN_TORCHRL[:2]:
    pytest.skip(f"the proofs run on torchrl {NEWEST_KNOWN_TORCHRL}, not {torchrl.__version__}", allow_module_level=True)

VERSIONED = ["RLG002", "RLG006", "RLG007"]
NEW, OLD = "BRANCH = 'new'\n", "BRANCH = 'old'\n"
GATE = "import torchrl\nfrom packaging.version import Version\n"

# name: (source, the branch 0.14.1 takes, the branch 0.6.0 takes)
SILENT = {
    "try old name, except new name (snake-hrl)": (
        "try:\n    from torchrl.data import CompositeSpec\n    " + OLD +
        "except ImportError:\n    from torchrl.data import Composite as CompositeSpec\n    " + NEW +
        "spec = CompositeSpec()\n", "new", "old"),
    "try new name, except old name (acegen)": (
        "try:\n    from torchrl.collectors import Collector\n    " + NEW +
        "except ImportError:\n    from torchrl.collectors import SyncDataCollector as Collector\n    " + OLD,
        "new", "old"),
    "a tuple of exceptions, one name per statement": (
        "try:\n    from torchrl.collectors import Collector\n    " + NEW +
        "except (ImportError, AttributeError):\n    from torchrl.collectors import SyncDataCollector as Collector\n"
        "    " + OLD, "new", "old"),
    "a broad handler": (
        "try:\n    from torchrl.data import BoundedTensorSpec\n    " + OLD +
        "except Exception:\n    from torchrl.data import Bounded as BoundedTensorSpec\n    " + NEW, "new", "old"),
    "a bare except": (
        "try:\n    from torchrl.collectors import SyncDataCollector as Collector\n    " + OLD +
        "except:\n    from torchrl.collectors import Collector\n    " + NEW, "new", "old"),
    "an attribute shim": (
        "import torchrl.collectors as tc\ntry:\n    Collector = tc.Collector\n    " + NEW +
        "except AttributeError:\n    Collector = tc.SyncDataCollector\n    " + OLD, "new", "old"),
    "hasattr on a torchrl module": (
        "import torchrl.collectors\nif hasattr(torchrl.collectors, 'Collector'):\n"
        "    from torchrl.collectors import Collector\n    " + NEW +
        "else:\n    from torchrl.collectors import SyncDataCollector as Collector\n    " + OLD, "new", "old"),
    "getattr with a default": (
        "import torchrl.collectors as tc\nif getattr(tc, 'Collector', None) is None:\n"
        "    Collector = tc.SyncDataCollector\n    " + OLD + "else:\n    Collector = tc.Collector\n    " + NEW,
        "new", "old"),
    "packaging Version gate": (
        GATE + "if Version(torchrl.__version__) >= Version('0.11'):\n    from torchrl.data import Composite\n    "
        + NEW + "else:\n    from torchrl.data import CompositeSpec as Composite\n    " + OLD, "new", "old"),
    "packaging parse, elif chain": (
        "import torchrl\nfrom packaging import version\nV = version.parse(torchrl.__version__)\n"
        "if V < version.parse('0.11'):\n    from torchrl.collectors import SyncDataCollector as Collector\n    " + OLD +
        "elif V.minor >= 11:\n    from torchrl.collectors import Collector\n    " + NEW, "new", "old"),
    "importlib.metadata tuple gate": (
        "from importlib.metadata import version\n"
        "TORCHRL = tuple(int(x) for x in version('torchrl').split('.')[:2])\n"
        "if TORCHRL < (0, 13):\n    from torchrl.collectors import SyncDataCollector as Collector\n    " + OLD +
        "else:\n    from torchrl.collectors import Collector\n    " + NEW, "new", "old"),
    "version numbers unpacked into names": (
        "import tensordict\nMAJOR, MINOR = (int(x) for x in tensordict.__version__.split('.')[:2])\n"
        "if (MAJOR, MINOR) < (0, 11):\n    from torchrl.data import CompositeSpec as Composite\n    " + OLD +
        "else:\n    from torchrl.data import Composite\n    " + NEW, "new", "old"),
    "tensordict minor number gate": (
        "import tensordict\nif int(tensordict.__version__.split('.')[1]) >= 11:\n"
        "    from torchrl.data import Composite\n    " + NEW +
        "else:\n    from torchrl.data import CompositeSpec as Composite\n    " + OLD, "new", "old"),
    # Python compares strings character by character: '0.6.0' < '0.11' is False. rlguard reads it the same way.
    "string comparison": (
        "import torchrl\nif torchrl.__version__ < '0.11':\n    from torchrl.data import CompositeSpec as Composite\n    "
        + OLD + "else:\n    from torchrl.data import Composite\n    " + NEW, "new", "new"),
    "TYPE_CHECKING import": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torchrl.data import CompositeSpec\n" + NEW,
        "new", "new"),
    "recurrent mode behind a gate (RLG002)": (
        GATE + "from torchrl.modules import LSTMModule\n"
        "lstm = LSTMModule(input_size=3, hidden_size=4, in_key='x', out_key='y')\n"
        "if Version(torchrl.__version__) < Version('0.7'):\n    lstm = lstm.set_recurrent_mode(True)\n    " + OLD +
        "else:\n    " + NEW, "new", "old"),
}

# name: source, which fails on torchrl 0.14.1 with the exception given
FLAGGED = {
    "ModuleNotFoundError does not catch a removed name": (
        "try:\n    from torchrl.data import CompositeSpec\nexcept ModuleNotFoundError:\n"
        "    from torchrl.data import Composite as CompositeSpec\n", "ImportError"),
    "a handler that binds no replacement": (
        "try:\n    from torchrl.data import CompositeSpec\nexcept ImportError:\n    pass\nspec = CompositeSpec()\n",
        "NameError"),
    "a handler that binds None": (
        "try:\n    from torchrl.data import CompositeSpec\nexcept ImportError:\n    CompositeSpec = None\n"
        "spec = CompositeSpec()\n", "TypeError"),
    "the fallback runs on the target and is removed too": (
        "try:\n    import a_package_nobody_installed\nexcept ImportError:\n    from torchrl.data import CompositeSpec\n",
        "ImportError"),
    "hasattr guard the wrong way round": (
        "import torchrl.collectors\nif hasattr(torchrl.collectors, 'Collector'):\n"
        "    from torchrl.collectors import SyncDataCollector as Collector\nelse:\n    from torchrl.collectors import Collector\n",
        "ImportError"),
    "gate the wrong way round": (
        GATE + "if Version(torchrl.__version__) >= Version('0.11'):\n    from torchrl.data import CompositeSpec\n",
        "ImportError"),
    "string comparison that takes the old branch on 0.14": (
        "import torchrl\nif torchrl.__version__ < '0.9':\n    from torchrl.data import CompositeSpec\n", "ImportError"),
    "an AttributeError handler does not catch an import": (
        "try:\n    from torchrl.collectors import SyncDataCollector as Collector\nexcept AttributeError:\n"
        "    from torchrl.collectors import Collector\n", "ImportError"),
}


@pytest.fixture(scope="module")
def old_results(tmp_path_factory, release_wheels):
    folder = tmp_path_factory.mktemp("torchrl-0.6")
    paths = old_stack(folder, release_wheels, "0.6.0", "0.6.2")
    return run_snippets([source for source, _, _ in SILENT.values()], folder, paths)


@pytest.fixture(scope="module")
def new_results(tmp_path_factory):
    sources = [source for source, _, _ in SILENT.values()] + [source for source, _ in FLAGGED.values()]
    return run_snippets(sources, tmp_path_factory.mktemp("torchrl-0.14"))


@pytest.mark.parametrize("name", list(SILENT))
def test_silent_forms_have_no_version_finding(name):
    source = SILENT[name][0]
    for target in (None, ">=0.6,<0.15"):
        found = [f for f in check_source(source, select=VERSIONED, target=target)
                 if "type checker" not in f.message]
        assert found == [], (target, found)


@pytest.mark.parametrize("name", list(SILENT))
def test_silent_forms_run_their_new_branch_on_the_installed_torchrl(name, new_results):
    verdict = new_results[list(SILENT).index(name)]
    assert verdict == ("ok", SILENT[name][1]), verdict


@pytest.mark.parametrize("name", list(SILENT))
def test_silent_forms_run_their_old_branch_on_torchrl_0_6(name, old_results):
    verdict = old_results[list(SILENT).index(name)]
    assert verdict == ("ok", SILENT[name][2]), verdict


@pytest.mark.parametrize("name", list(FLAGGED))
def test_flagged_forms_are_reported_and_fail_on_the_installed_torchrl(name, new_results):
    source, error = FLAGGED[name]
    found = check_source(source, select=VERSIONED)
    assert len(found) == 1 and "fails at run time" in found[0].message, found
    assert new_results[len(SILENT) + list(FLAGGED).index(name)][0] == error


def test_a_type_checking_import_is_reported_as_a_type_checker_failure():
    found = check_source(SILENT["TYPE_CHECKING import"][0], select=VERSIONED)
    assert len(found) == 1
    assert "type checker fails" in found[0].message and "fails at run time" not in found[0].message


@pytest.mark.parametrize("name", ["ModuleNotFoundError does not catch a removed name", "hasattr guard the wrong way round",
                                  "the fallback runs on the target and is removed too"])
def test_no_fix_rewrites_a_compatibility_branch(name):
    source = FLAGGED[name][0]
    assert fix_source(source, select=VERSIONED, unsafe=True) == source
    (finding,) = check_source(source, select=VERSIONED)
    assert finding.fix is None and "no automatic fix" in finding.remedy


def test_a_fix_outside_compatibility_code_still_applies():
    source = "from torchrl.data import CompositeSpec\nspec = CompositeSpec()\n"
    assert fix_source(source, select=VERSIONED) == "from torchrl.data import Composite\nspec = Composite()\n"


# ----- RLG008: with a pin whose lowest torchrl has the new API, the shims above are dead -----

DEAD_AT_0_13 = [name for name in SILENT if SILENT[name][1] != SILENT[name][2] and "RLG002" not in name]


@pytest.mark.parametrize("name", DEAD_AT_0_13)
def test_outdated_shims_are_reported_and_fixed_into_the_branch_that_runs(name, tmp_path):
    source = SILENT[name][0]
    assert check_source(source, select=["RLG008"], target=">=0.6") == []
    found = check_source(source, select=["RLG008"], target=">=0.13")
    assert len(found) == 1 and "outdated" in found[0].message and found[0].fix is not None, found
    fixed = fix_source(source, select=["RLG008"], target=">=0.13")
    assert "'old'" not in fixed and check_source(fixed, select=["RLG008", *VERSIONED], target=">=0.13") == []
    assert run_snippets([fixed], tmp_path) == [("ok", "new")]
