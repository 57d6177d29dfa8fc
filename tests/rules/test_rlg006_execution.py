"""RLG006 against the real torchrl: the unfixed code fails, the fixed code imports and runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from rlguard.rules.data import COLLECTOR_OLD_NAME_MODULES, COLLECTOR_RENAMES
from rlguard.testing import check_source, fix_source

torchrl = pytest.importorskip("torchrl")
if tuple(int(p) for p in torchrl.__version__.split(".")[:2]) < (0, 13):
    pytest.skip("the old names still exist before torchrl 0.13", allow_module_level=True)


def _fix(source: str, **kwargs) -> str:
    fixed = fix_source(source, select=["RLG006"], **kwargs)
    assert [f for f in check_source(fixed, select=["RLG006"], **kwargs) if f.code == "RLG006"] == []
    return fixed


def _run(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<example>", "exec"), namespace)
    return namespace


PAIRS = [(old, module) for old, modules in COLLECTOR_OLD_NAME_MODULES.items() for module in modules]


@pytest.mark.parametrize("old, module", PAIRS)
def test_fixed_from_import_imports(old, module):
    source = f"from {module} import {old}\n\ncls = {old}\n"
    with pytest.raises(ImportError, match=old):
        _run(source)
    fixed = _fix(source)
    new = COLLECTOR_RENAMES[old]
    assert fixed == f"from {module} import {new}\n\ncls = {new}\n"
    assert _run(fixed)["cls"].__name__ == new


@pytest.mark.parametrize("old, module", PAIRS)
def test_fixed_module_attribute_resolves(old, module):
    source = f"import {module} as m\n\ncls = m.{old}\n"
    with pytest.raises(AttributeError):
        _run(source)
    assert _run(_fix(source))["cls"].__name__ == COLLECTOR_RENAMES[old]


def test_fixed_alias_is_kept_and_imports():
    source = "from torchrl.collectors import MultiaSyncDataCollector as Multi, DataCollectorBase\n" \
             "ok = issubclass(Multi, DataCollectorBase)\n"
    with pytest.raises(ImportError):
        _run(source)
    fixed = _fix(source)
    assert fixed.startswith("from torchrl.collectors import MultiAsyncCollector as Multi, BaseCollector\n")
    assert _run(fixed)["ok"] is True


def test_fixed_import_of_both_names_imports():
    source = textwrap.dedent("""
        from torchrl.collectors import (
            Collector,
            SyncDataCollector,
        )

        same = SyncDataCollector is Collector
    """)
    fixed = _fix(source)
    assert "SyncDataCollector" not in fixed
    assert _run(fixed)["same"] is True


def test_fixed_star_import_use_runs():
    source = "from torchrl.collectors import *\n\ncls = SyncDataCollector\n"
    with pytest.raises(NameError):
        _run(source)
    assert _run(_fix(source))["cls"].__name__ == "Collector"


def test_fixed_collector_script_collects(tmp_path):
    """A whole pre-0.13 script, fixed, collects real frames from a real environment."""
    source = textwrap.dedent("""
        import torchrl.collectors as tc
        from torchrl.collectors import SyncDataCollector
        from torchrl.envs import PendulumEnv

        env = PendulumEnv()
        collector = SyncDataCollector(env, None, frames_per_batch=16, total_frames=32)
        assert isinstance(collector, tc.DataCollectorBase)
        frames = 0
        for batch in collector:
            frames += batch.numel()
        collector.shutdown()
        print("frames", frames)
    """)
    script = tmp_path / "train.py"
    script.write_text(source)
    before = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert before.returncode != 0 and "ImportError" in before.stderr
    script.write_text(_fix(source))
    after = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert after.returncode == 0, after.stderr
    assert "frames 32" in after.stdout


def test_reexporting_module_keeps_its_public_name(tmp_path):
    """A project module re-exporting the old name still serves its importers after the fix."""
    package = tmp_path / "proj"
    package.mkdir()
    compat = ("from torchrl.collectors import SyncDataCollector, MultiSyncDataCollector\n\n"
              "__all__ = [\"SyncDataCollector\", \"MultiSyncDataCollector\"]\n")
    fixed = _fix(compat)
    assert fixed.startswith("from torchrl.collectors import Collector as SyncDataCollector, "
                            "MultiSyncCollector as MultiSyncDataCollector\n")
    (package / "__init__.py").write_text("")
    (package / "compat.py").write_text(fixed)
    user = "from proj.compat import *\nfrom proj.compat import SyncDataCollector\nprint(SyncDataCollector.__name__)\n"
    result = subprocess.run([sys.executable, "-c", user], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Collector"


def test_fixed_string_annotations_resolve_to_the_new_collector():
    import typing

    source = (
        "import torchrl.collectors as tc\n"
        "from torchrl.collectors import MultiSyncDataCollector, SyncDataCollector\n\n"
        "def run(c: 'SyncDataCollector', m: 'tc.MultiSyncDataCollector') -> 'list[SyncDataCollector] | None':\n"
        "    return None\n"
    )
    with pytest.raises(ImportError):
        _run(source)
    namespace = _run(_fix(source))
    hints = typing.get_type_hints(namespace["run"], namespace)
    assert hints == {"c": torchrl.collectors.Collector, "m": torchrl.collectors.MultiSyncCollector,
                     "return": list[torchrl.collectors.Collector] | None}
