"""One project whatever paths are given: the root, first-party imports on disk, vendored libraries,
and the guarantee that checking one file finds on it what checking the project finds."""

from __future__ import annotations

import os
import pathlib
import textwrap

import pytest

from rlguard.config import Config
from rlguard.engine.index import ProjectIndex
from rlguard.engine.project import ModuleResolver, package_top, project_root, vendored_library
from rlguard.engine.runner import RunOptions, check
from rlguard.engine.target import NEWEST_KNOWN_TORCHRL, Target
from tests.helpers import analyzed_project

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
TARGET = Target(NEWEST_KNOWN_TORCHRL, "default")


def write(root: pathlib.Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def findings(paths: list[str], root: str, cache_dir: str | None = None) -> list[tuple]:
    options = RunOptions(jobs=1, use_cache=cache_dir is not None, cache_dir=cache_dir)
    report, _ = check(paths, Config(root=root), options, TARGET)
    return [(os.path.abspath(f.path), f.span, f.code, f.message) for f in report.findings]


def assert_same_findings_alone_and_together(root: pathlib.Path) -> int:
    """For every file F under root: findings on F from ``check F`` == those on F from ``check root``."""
    together = findings([str(root)], str(root))
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    for path in files:
        alone = findings([str(path)], str(root))
        assert alone == [f for f in together if f[0] == str(path.resolve())], path
    return len(together)


# A project with a src layout, relative imports, a re-export through __init__.py, a namespace
# package and an import cycle; each script's finding depends on a class in another file.
MULTI_PACKAGE = {
    "pyproject.toml": "[project]\nname = 'robot'\n",
    "src/robot/__init__.py": "from .models import CameraPolicy, MemoryCore\nfrom .hooks import HookBase\n",
    "src/robot/models.py": """\
        import threading

        from torch import nn
        from torchrl.modules import LSTMModule

        from .cycle import helper  # robot.cycle imports this module back


        class CameraPolicy(nn.Module):
            def __init__(self):
                super().__init__()
                self.lock = threading.Lock()
                self.head = nn.Linear(3, 1)


        class MemoryCore(LSTMModule):
            pass
        """,
    "src/robot/cycle.py": "from robot import models\n\n\ndef helper():\n    return models\n",
    "src/robot/hooks.py": """\
        from torchrl.trainers import TrainerHookBase


        class HookBase(TrainerHookBase):
            def state_dict(self):
                return {}
        """,
    "src/robot/transforms/base.py": """\
        from torchrl.envs import Transform


        class MyBase(Transform):
            pass
        """,
    "src/robot/transforms/scaled.py": """\
        from tensordict import TensorDict

        from .base import MyBase


        class Scaled(MyBase):
            def _reset(self, tensordict, tensordict_reset):
                return TensorDict({}, batch_size=[])
        """,
    "scripts/collect.py": """\
        from tensordict.nn import TensorDictModule
        from torchrl.collectors import Collector
        from torchrl.envs import PendulumEnv

        from robot import CameraPolicy

        policy = TensorDictModule(CameraPolicy(), in_keys=["observation"], out_keys=["action"])
        collector = Collector(PendulumEnv(), policy, frames_per_batch=64, total_frames=256, policy_device="cpu:0")
        """,
    "scripts/train.py": """\
        from robot.models import MemoryCore

        core = MemoryCore(input_size=3, hidden_size=8, in_key="obs", out_key="features")
        core.set_recurrent_mode(True)
        """,
    "scripts/hooks_user.py": """\
        from robot import HookBase


        class Counter(HookBase):
            def register(self, trainer, name):
                trainer.register_op("post_loss", self)
        """,
    "scripts/more_transforms.py": """\
        from tensordict import TensorDict

        from robot.transforms.scaled import Scaled


        class Shifted(Scaled):
            def _reset(self, tensordict, tensordict_reset):
                return TensorDict({}, batch_size=[])
        """,
}


def test_project_root_is_the_nearest_folder_with_a_marker(tmp_path):
    write(tmp_path, {"setup.cfg": "", "pkg/sub/mod.py": "", "pkg/sub/pyproject.toml": ""})
    assert project_root(str(tmp_path / "pkg" / "sub" / "mod.py")) == str(tmp_path / "pkg" / "sub")
    write(tmp_path, {"other/deep/x.py": ""})
    assert project_root(str(tmp_path / "other" / "deep" / "x.py")) == str(tmp_path)


def test_imports_resolve_to_files_on_disk(tmp_path):
    write(tmp_path, MULTI_PACKAGE)
    resolver = ModuleResolver()
    script = str(tmp_path / "scripts" / "collect.py")
    assert resolver.resolve("robot", script) == (str(tmp_path / "src" / "robot" / "__init__.py"),)
    assert resolver.resolve("robot.models", script) == (str(tmp_path / "src" / "robot" / "models.py"),)
    # robot/transforms has no __init__.py: a namespace package still resolves.
    assert resolver.resolve("robot.transforms.base", script) == (str(tmp_path / "src" / "robot" / "transforms" / "base.py"),)
    assert resolver.resolve("torch.nn", script) == ()  # not first-party
    assert resolver.resolve("robot.missing", script) == ()


def test_a_package_wins_over_a_module_of_the_same_name(tmp_path):
    write(tmp_path, {".git/HEAD": "", "lib.py": "", "lib/__init__.py": "", "main.py": ""})
    assert ModuleResolver().resolve("lib", str(tmp_path / "main.py")) == (str(tmp_path / "lib" / "__init__.py"),)


def test_a_script_sees_its_own_folder_first(tmp_path):
    write(tmp_path, {".git/HEAD": "", "utils.py": "", "tools/utils.py": "", "tools/run.py": "", "pkg/__init__.py": "",
                     "pkg/run.py": ""})
    resolver = ModuleResolver()
    assert resolver.resolve("utils", str(tmp_path / "tools" / "run.py")) == (str(tmp_path / "tools" / "utils.py"),)
    # Inside a package, the folder above the package is what sys.path holds.
    assert package_top(str(tmp_path / "pkg" / "run.py")) == str(tmp_path)
    assert resolver.resolve("utils", str(tmp_path / "pkg" / "run.py")) == (str(tmp_path / "utils.py"),)


def test_the_index_answers_from_the_asking_files_folder(tmp_path):
    """torchrl's own layout has one utils.py per folder: each script sees its own."""
    write(tmp_path, {
        ".git/HEAD": "",
        "a/utils.py": "import threading\n\n\nclass Policy:\n    def __init__(self):\n        self.lock = threading.Lock()\n",
        "b/utils.py": "class Policy:\n    def act(self):\n        pass\n",
        "a/run.py": "from utils import Policy\n",
        "b/run.py": "from utils import Policy\n",
    })
    project = analyzed_project(tmp_path, target=TARGET)
    index = project.index
    assert index is not None
    near_a, near_b = str(tmp_path / "a" / "run.py"), str(tmp_path / "b" / "run.py")
    assert index.get_class("utils.Policy", near_a).path.endswith(os.path.join("a", "utils.py"))
    assert index.get_class("utils.Policy", near_b).path.endswith(os.path.join("b", "utils.py"))
    assert "lock" in index.get_class("utils.Policy", near_a).attrs
    assert "lock" not in index.get_class("utils.Policy", near_b).attrs


COLLECT_WITH_LOCAL_POLICY = """\
    from tensordict.nn import TensorDictModule
    from torchrl.collectors import Collector
    from torchrl.envs import PendulumEnv

    from utils import Policy

    policy = TensorDictModule(Policy(), in_keys=["observation"], out_keys=["action"])
    collector = Collector(PendulumEnv(), policy, frames_per_batch=64, total_frames=256, policy_device="cpu:0")
    """


@pytest.mark.parametrize("order", ["a_first", "b_first"])
def test_a_sibling_folders_class_is_never_taken_for_the_local_one(tmp_path, order):
    locked = ("import threading\n\nfrom torch import nn\n\n\nclass Policy(nn.Module):\n    def __init__(self):\n"
              "        super().__init__()\n        self.lock = threading.Lock()\n")
    plain = "from torch import nn\n\n\nclass Policy(nn.Module):\n    pass\n"
    first, second = ("a", "b") if order == "a_first" else ("b", "a")
    write(tmp_path, {".git/HEAD": "", f"{first}/utils.py": locked, f"{second}/utils.py": plain,
                     "a/collect.py": COLLECT_WITH_LOCAL_POLICY, "b/collect.py": COLLECT_WITH_LOCAL_POLICY})
    flagged = {pathlib.Path(f[0]).parent.name for f in findings([str(tmp_path)], str(tmp_path)) if f[2] == "RLG001"}
    assert flagged == {first}


def test_a_file_named_alone_sees_classes_in_files_not_given(tmp_path):
    write(tmp_path, MULTI_PACKAGE)
    by_script = {}
    for name in ("collect", "train", "hooks_user", "more_transforms"):
        path = tmp_path / "scripts" / f"{name}.py"
        by_script[name] = {f[2] for f in findings([str(path)], str(tmp_path))}
    assert by_script == {"collect": {"RLG001"}, "train": {"RLG002"}, "hooks_user": {"RLG005"}, "more_transforms": {"RLG004"}}


def test_files_reached_but_not_given_get_no_findings(tmp_path):
    write(tmp_path, MULTI_PACKAGE)
    reported = {f[0] for f in findings([str(tmp_path / "scripts" / "more_transforms.py")], str(tmp_path))}
    assert reported == {str(tmp_path / "scripts" / "more_transforms.py")}
    # The reached file has a finding of its own when it is asked for.
    scaled = tmp_path / "src" / "robot" / "transforms" / "scaled.py"
    assert [f[2] for f in findings([str(scaled)], str(tmp_path))] == ["RLG004"]


def test_one_file_or_the_project_same_findings_multi_package(tmp_path):
    write(tmp_path, MULTI_PACKAGE)
    assert assert_same_findings_alone_and_together(tmp_path) >= 5


def test_one_file_or_the_project_same_findings_examples(tmp_path):
    assert assert_same_findings_alone_and_together(EXAMPLES) >= 5


def test_the_cache_gives_the_same_findings_for_one_file(tmp_path):
    write(tmp_path / "project", MULTI_PACKAGE)
    root = tmp_path / "project"
    script = str(root / "scripts" / "collect.py")
    cold = findings([script], str(root), cache_dir=str(tmp_path / "cache"))
    warm = findings([script], str(root), cache_dir=str(tmp_path / "cache"))
    assert cold == warm == [f for f in findings([str(root)], str(root)) if f[0] == script]


def test_the_index_follows_re_exports_and_survives_cycles(tmp_path):
    write(tmp_path, {
        ".git/HEAD": "",
        "pkg/__init__.py": "from .a import Thing\nfrom .loop import Loop\n",
        "pkg/a.py": "from .b import Thing\n",
        "pkg/b.py": "class Thing:\n    def go(self):\n        pass\n",
        "pkg/loop.py": "from pkg import Loop\n",  # a re-export that points back at itself
        "main.py": "",
    })
    project = analyzed_project(tmp_path, [tmp_path / "main.py"], target=TARGET)
    index = project.index
    near = str(tmp_path / "main.py")
    assert index.get_class("pkg.Thing", near).qualname == "pkg.b.Thing"
    assert index.get_class("pkg.Loop", near) is None


def test_vendored_library_version_from_its_metadata_or_version_file(tmp_path):
    write(tmp_path, {
        ".git/HEAD": "",
        "third_party/rl/setup.py": "from setuptools import setup\n\nsetup(name=\"torchrl\")\n",
        "third_party/rl/torchrl/__init__.py": "",
        "third_party/rl/torchrl/version.py": "__version__ = '0.6.0'\ngit_version = 'abc'\n",
        "vendor/tensordict/__init__.py": "",
        "vendor/tensordict-0.5.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tensordict\nVersion: 0.5.0\n",
    })
    root = str(tmp_path)
    assert vendored_library(root, "torchrl") == (str(tmp_path / "third_party" / "rl"), "0.6.0")
    assert vendored_library(root, "tensordict") == (str(tmp_path / "vendor"), "0.5.0")


def test_no_vendored_copy_in_a_virtual_environment(tmp_path):
    write(tmp_path, {".git/HEAD": "", ".venv/lib/torchrl/__init__.py": "", "build/torchrl/__init__.py": ""})
    assert vendored_library(str(tmp_path), "torchrl") is None


def test_a_package_merely_named_torchrl_is_not_a_vendored_copy(tmp_path):
    """OmniDrones' ``omni_drones/utils/torchrl/``, or a copy without packaging metadata, is no library copy."""
    write(tmp_path, {".git/HEAD": "", "setup.py": "from setuptools import setup\n\nsetup(name=\"omni_drones\")\n",
                     "omni_drones/__init__.py": "", "omni_drones/utils/__init__.py": "",
                     "omni_drones/utils/torchrl/__init__.py": "", "third_party/rl/torchrl/__init__.py": ""})
    assert vendored_library(str(tmp_path), "torchrl") is None


def test_imports_of_a_vendored_copy_are_first_party(tmp_path):
    write(tmp_path, {
        ".git/HEAD": "",
        "third_party/rl/pyproject.toml": "[project]\nname = \"torchrl\"\nversion = \"0.6.0\"\n",
        "third_party/rl/torchrl/__init__.py": "",
        "third_party/rl/torchrl/collectors.py": "class SyncDataCollector:\n    pass\n",
        "scripts/run.py": "",
    })
    found = ModuleResolver().resolve("torchrl.collectors", str(tmp_path / "scripts" / "run.py"))
    assert found == (str(tmp_path / "third_party" / "rl" / "torchrl" / "collectors.py"),)


def test_an_index_without_a_resolver_reads_only_what_it_was_given():
    index = ProjectIndex()
    assert index.get_class("pkg.Missing", "x.py") is None
    assert index.mro("pkg.Missing") == [("pkg.Missing", None)]


VENDORED = {
    ".git/HEAD": "",
    "third_party/rl/setup.py": "package_name = \"torchrl\"\n",
    "third_party/rl/torchrl/__init__.py": "from .version import __version__\n",
    "third_party/rl/torchrl/version.py": "__version__ = '0.6.0'\n",
    "third_party/rl/torchrl/collectors/__init__.py": "from .collectors import SyncDataCollector\n",
    "third_party/rl/torchrl/collectors/collectors.py": "class SyncDataCollector:\n    pass\n",
    "scripts/collect.py": "from torchrl.collectors import SyncDataCollector\n\ncollector = SyncDataCollector(env, policy)\n",
}


def test_a_vendored_torchrl_is_the_target(tmp_path):
    from rlguard.engine.target import resolve_target

    write(tmp_path, VENDORED)
    target = resolve_target(None, None, str(tmp_path))
    assert target.version == (0, 6, 0) and "third_party" in target.source
    assert resolve_target("0.13", None, str(tmp_path)).version == (0, 13)  # the flag still wins


@pytest.mark.parametrize("vendored", [True, False])
def test_code_written_for_the_vendored_copy_is_judged_against_it(tmp_path, vendored):
    import subprocess
    import sys

    write(tmp_path, VENDORED if vendored else {k: v for k, v in VENDORED.items() if "third_party" not in k})
    run = subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "--select", "RLG006", "scripts"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ("RLG006" in run.stdout) is not vendored, run.stdout + run.stderr


_OPENED: list[str] | None = None


def _record_opens(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str) and args[0].endswith(".py"):
        _OPENED.append(os.path.abspath(args[0]))


def test_a_one_file_run_reads_only_what_the_file_reaches(tmp_path):
    global _OPENED
    import sys

    write(tmp_path, {**MULTI_PACKAGE, "unrelated/big.py": "from robot import CameraPolicy\n\n\nclass X(CameraPolicy):\n    pass\n"})
    findings([str(tmp_path / "scripts" / "collect.py")], str(tmp_path))  # warm imports before recording
    if _record_opens not in getattr(sys, "_rlguard_test_hooks", ()):
        sys.addaudithook(_record_opens)  # audit hooks cannot be removed: the flag turns it off
        sys._rlguard_test_hooks = (_record_opens,)  # type: ignore[attr-defined]
    _OPENED = []
    try:
        findings([str(tmp_path / "scripts" / "collect.py")], str(tmp_path))
        opened = {pathlib.Path(p).relative_to(tmp_path).as_posix() for p in _OPENED if p.startswith(str(tmp_path))}
    finally:
        _OPENED = None
    assert "scripts/collect.py" in opened and "src/robot/models.py" in opened
    assert not opened & {"unrelated/big.py", "scripts/train.py", "scripts/hooks_user.py", "src/robot/transforms/base.py"}


def test_the_command_line_on_one_script_finds_what_it_finds_on_the_tree(tmp_path):
    """What pre-commit runs on a commit touching one file: ``rlguard check scripts/collect.py``."""
    import subprocess
    import sys

    write(tmp_path, MULTI_PACKAGE)

    def rlguard(*paths: str) -> list[str]:
        run = subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "--format", "json", *paths],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert run.returncode in (0, 1), run.stderr
        import json

        return sorted(f"{os.path.normpath(f['path'])}:{f['line']}:{f['code']}" for f in json.loads(run.stdout)
                      if f["path"].endswith("collect.py"))

    alone = rlguard("scripts/collect.py")
    assert alone == rlguard(".") and [entry.rpartition(":")[2] for entry in alone] == ["RLG001"]


def test_the_pre_filter_reach_follows_every_import_form_of_a_base(tmp_path):
    from rlguard.engine.project import reached_by_class_bases

    write(tmp_path, {
        ".git/HEAD": "",
        "pkg/__init__.py": "",
        "pkg/a.py": "from torchrl.envs import Transform\n\n\nclass A(Transform):\n    pass\n",
        "pkg/b.py": "from torchrl.envs import Transform\n\n\nclass B(Transform):\n    pass\n",
        "pkg/c.py": "from torchrl.envs import Transform\n\n\nclass C(Transform):\n    pass\n",
        "pkg/unused.py": "class U:\n    pass\n",
        "main.py": ("import pkg.a as first\nfrom pkg import (\n    b,\n    unused,\n)\nfrom pkg.c import C as Third\n\n\n"
                    "class X(first.A, b.B, Third):\n    pass\n"),
    })
    main = tmp_path / "main.py"
    reached = reached_by_class_bases({str(main): main.read_bytes()}, ModuleResolver())
    names = sorted(pathlib.Path(p).relative_to(tmp_path).as_posix() for p in reached)
    assert names == ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/c.py"]
