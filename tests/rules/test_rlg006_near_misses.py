"""RLG006 removed-collector-name: resolution, near misses, versions and the shape of fixes."""

from __future__ import annotations

import textwrap

import pytest

from rlguard.testing import check_source, fix_source


def findings(source: str, **kwargs):
    return [f for f in check_source(textwrap.dedent(source), select=["RLG006"], **kwargs) if f.code == "RLG006"]


def fix(source: str, **kwargs) -> str:
    return fix_source(textwrap.dedent(source), select=["RLG006"], **kwargs)


# ----- not torchrl's collectors -----

def test_user_class_named_like_an_old_collector():
    assert findings("""
        from torchrl.collectors import Collector

        class SyncDataCollector(Collector):
            \"\"\"Our own wrapper, kept under the old name.\"\"\"

        collector = SyncDataCollector(env, policy, frames_per_batch=64)
    """) == []


def test_user_package_of_the_same_name():
    assert findings("""
        from my_project.collectors import SyncDataCollector, MultiaSyncDataCollector
        import my_project.collectors as tc

        a = SyncDataCollector(env, policy)
        b = tc.MultiSyncDataCollector([env], policy)
    """) == []


def test_user_class_in_another_file_of_the_project():
    extra = {"pkg/__init__.py": "", "pkg/collectors.py": "class SyncDataCollector:\n    pass\n"}
    assert findings("from pkg.collectors import SyncDataCollector\n\nc = SyncDataCollector()\n",
                    extra_files=extra) == []


@pytest.mark.parametrize("source", [
    "obj.SyncDataCollector\n",
    "self.SyncDataCollector = None\n",
    "make(SyncDataCollector=True)\n",
    "def f(SyncDataCollector):\n    return SyncDataCollector\n",
    "name = 'SyncDataCollector'\n",
    "# SyncDataCollector was renamed\n",
    '"""See torchrl.collectors.SyncDataCollector."""\n',
    "import torchrl\n\nx = torchrl.collectors.Collector\n",
])
def test_names_that_are_not_the_removed_collector(source):
    assert findings(source) == []


def test_distributed_names_never_lived_in_torchrl_collectors():
    # These imports never worked in any torchrl: not this rule's finding, and renaming would not help.
    assert findings("""
        from torchrl.collectors import DistributedDataCollector
        import torchrl.collectors.collectors as c

        x = c.RPCDataCollector
    """) == []


def test_star_import_from_another_module():
    assert findings("from my_project import *\n\nc = SyncDataCollector(env, policy)\n") == []


# ----- torchrl's, under any spelling -----

@pytest.mark.parametrize("source, line", [
    ("from torchrl.collectors import SyncDataCollector\n", 1),
    ("from torchrl.collectors import SyncDataCollector as SDC\n", 1),
    ("from torchrl.collectors.collectors import MultiSyncDataCollector\n", 1),
    ("from torchrl.collectors._single import SyncDataCollector\n", 1),
    ("from torchrl.collectors.distributed import DistributedSyncDataCollector\n", 1),
    ("from torchrl.collectors.distributed.rpc import RPCDataCollector\n", 1),
    ("import torchrl.collectors.collectors as c\n\nc.aSyncDataCollector(env, policy)\n", 3),
    ("import torchrl.collectors as tc\n\nclass Mine(tc.DataCollectorBase):\n    pass\n", 3),
    ("import torchrl\n\ncollector = torchrl.collectors.SyncDataCollector(env, policy)\n", 3),
    ("from torchrl import collectors\n\ncollectors._MultiDataCollector\n", 3),
    ("from torchrl.collectors import (\n    Collector,\n    MultiaSyncDataCollector,\n)\n", 3),
    ("from torchrl.collectors import *\n\nc = SyncDataCollector(env, policy)\n", 3),
])
def test_resolved_through_imports_and_aliases(source, line):
    (finding,) = findings(source)
    assert finding.line == line
    assert finding.fix is not None and finding.fix.applicability == "safe"


def test_every_use_of_an_alias_is_left_alone():
    source = """
        from torchrl.collectors import SyncDataCollector as SDC

        def make(env, policy):
            return SDC(env, policy, frames_per_batch=64)
    """
    assert fix(source) == textwrap.dedent(source).replace("import SyncDataCollector as", "import Collector as")


def test_attribute_use_message_names_the_failing_expression():
    (finding,) = findings("import torchrl.collectors as tc\n\ntc.SyncDataCollector(env, policy)\n")
    assert "`tc.SyncDataCollector` raises AttributeError" in finding.full_message and "`Collector`" in finding.full_message


# ----- versions -----

@pytest.mark.parametrize("target, expected", [("0.10", 0), ("0.11", 0), ("0.12", 0), ("0.13", 1), ("0.14", 1)])
def test_target_versions(target, expected):
    assert len(findings("from torchrl.collectors import SyncDataCollector\n", target=target)) == expected


def test_old_name_imported_for_0_12_is_left_alone_by_fix():
    source = "from torchrl.collectors import SyncDataCollector\n"
    assert fix(source, target="0.12") == source


# ----- fixes -----

def test_file_importing_both_names_drops_the_old_one():
    source = """
        from torchrl.collectors import Collector, SyncDataCollector

        def make(env, policy, legacy):
            if legacy:
                return SyncDataCollector(env, policy)
            return Collector(env, policy)
    """
    (finding,) = findings(source)
    assert "`SyncDataCollector`" in finding.full_message
    fixed = fix(source)
    assert "from torchrl.collectors import Collector\n" in fixed
    assert "return Collector(env, policy)\n            return Collector(env, policy)" not in fixed
    assert fixed.count("Collector(env, policy)") == 2 and "SyncDataCollector" not in fixed


@pytest.mark.parametrize("imports, expected", [
    ("from torchrl.collectors import SyncDataCollector, Collector  # both\n",
     "from torchrl.collectors import Collector  # both\n"),
    ("from torchrl.collectors import Collector, SyncDataCollector\n", "from torchrl.collectors import Collector\n"),
    ("from torchrl.collectors import (\n    Collector,\n    SyncDataCollector,\n)\n",
     "from torchrl.collectors import (\n    Collector,\n)\n"),
    ("from torchrl.collectors import (\n    Collector,\n    SyncDataCollector\n)\n",
     "from torchrl.collectors import (\n    Collector\n)\n"),
    ("from torchrl.collectors import (\n    SyncDataCollector,  # old\n    Collector,\n)\n",
     "from torchrl.collectors import (\n    Collector,\n)\n"),
    ("from torchrl.collectors import Collector, MultiSyncDataCollector, SyncDataCollector\n",
     "from torchrl.collectors import Collector, MultiSyncCollector\n"),
    ("from torchrl.collectors import Collector as C, SyncDataCollector\n",
     "from torchrl.collectors import Collector as C, Collector\n"),
])
def test_import_statement_shapes(imports, expected):
    fixed = fix(imports + "\nx = SyncDataCollector\n")
    assert fixed == expected + "\nx = Collector\n"


def test_separate_statements_importing_both_stay_valid():
    fixed = fix("from torchrl.collectors import Collector\nfrom torchrl.collectors import SyncDataCollector\n")
    assert fixed == "from torchrl.collectors import Collector\nfrom torchrl.collectors import Collector\n"


def test_fix_leaves_other_names_and_imports_alone():
    source = """
        from torchrl.collectors import SyncDataCollector
        from legacy.compat import SyncDataCollector as LegacyCollector

        def run(SyncDataCollector=None):
            return configure(SyncDataCollector=SyncDataCollector)

        registry.SyncDataCollector = LegacyCollector
        c = SyncDataCollector(env, policy)  # the real one
    """
    fixed = fix(source)
    assert "from torchrl.collectors import Collector\n" in fixed
    assert "from legacy.compat import SyncDataCollector as LegacyCollector" in fixed
    assert "configure(SyncDataCollector=" in fixed and "registry.SyncDataCollector" in fixed
    assert "c = Collector(env, policy)  # the real one" in fixed


def test_all_renamed_in_one_run():
    source = """
        from torchrl.collectors import (
            SyncDataCollector,
            MultiSyncDataCollector,
            MultiaSyncDataCollector,
            aSyncDataCollector,
            DataCollectorBase,
        )
        from torchrl.collectors.distributed import DistributedDataCollector, RPCDataCollector

        kinds = [SyncDataCollector, MultiSyncDataCollector, MultiaSyncDataCollector, aSyncDataCollector,
                 DataCollectorBase, DistributedDataCollector, RPCDataCollector]
    """
    fixed = fix(source)
    assert findings(fixed) == []
    assert "kinds = [Collector, MultiSyncCollector, MultiAsyncCollector, AsyncCollector,\n" in fixed
    assert "BaseCollector, DistributedCollector, RPCCollector]" in fixed


def test_crlf_is_kept():
    source = "from torchrl.collectors import SyncDataCollector\r\n\r\nc = SyncDataCollector(env, p)\r\n"
    assert fix_source(source, select=["RLG006"]) == source.replace("SyncDataCollector", "Collector")


def test_module_imported_from_by_another_file_keeps_the_old_spelling():
    extra = {"train.py": "from example import SyncDataCollector\n\nc = SyncDataCollector(env, policy)\n"}
    fixed = fix("from torchrl.collectors import SyncDataCollector\n", extra_files=extra)
    assert fixed == "from torchrl.collectors import Collector as SyncDataCollector\n"


def test_module_without_importers_renames():
    extra = {"train.py": "from example import Collector\n"}
    assert fix("from torchrl.collectors import SyncDataCollector\n", extra_files=extra) == \
        "from torchrl.collectors import Collector\n"


def test_all_reexport_keeps_the_old_spelling():
    fixed = fix("""
        from torchrl.collectors import SyncDataCollector, Collector

        __all__ = ("SyncDataCollector", "Collector")
    """)
    assert "from torchrl.collectors import Collector as SyncDataCollector, Collector\n" in fixed


def test_star_import_fix_renames_each_use():
    fixed = fix("""
        from torchrl.collectors import *

        def make(env, policy):
            base = DataCollectorBase
            return SyncDataCollector(env, policy)
    """)
    assert "base = BaseCollector" in fixed and "return Collector(env, policy)" in fixed


# ----- string annotations -----

def test_strings_that_are_not_types_stay():
    source = """
        from typing import Annotated, Literal
        from torchrl.collectors import SyncDataCollector

        def make(kind: Literal["SyncDataCollector"], c: Annotated[int, "SyncDataCollector"]) -> None:
            \"\"\"Builds a SyncDataCollector.\"\"\"
            print("SyncDataCollector")
    """
    fixed = fix(source)
    assert 'Literal["SyncDataCollector"]' in fixed and 'Annotated[int, "SyncDataCollector"]' in fixed
    assert '"""Builds a SyncDataCollector."""' in fixed and 'print("SyncDataCollector")' in fixed
    assert "import Collector\n" in fixed


def test_string_annotations_follow_the_import_not_the_spelling():
    # Aliased: the strings name the alias's old spelling, which the fix keeps unbound anyway.
    aliased = fix("""
        from torchrl.collectors import SyncDataCollector as SDC

        def run(c: "SDC", d: "SyncDataCollector") -> None: ...
    """)
    assert '"SDC"' in aliased and '"SyncDataCollector"' in aliased
    # Escapes, prefixes and strings that are not expressions are left alone.
    odd = fix("""
        from torchrl.collectors import SyncDataCollector

        def run(a: "Sync\\x44ataCollector", b: r"SyncDataCollector", c: "SyncDataCollector(") -> None: ...
    """)
    assert 'r"SyncDataCollector"' in odd and '"SyncDataCollector("' in odd


def test_dotted_string_annotation_is_flagged_where_the_module_is_torchrls():
    found = findings("""
        import torchrl.collectors as tc
        import my_project.collectors as mine

        def run(a: "tc.SyncDataCollector", b: "mine.SyncDataCollector", c: Literal["tc.SyncDataCollector"]) -> None:
            pass
    """)
    assert [(f.line, f.span.column) for f in found] == [(5, 12)]
    assert "annotation `tc.SyncDataCollector` names nothing" in found[0].full_message


def test_string_annotations_with_several_old_names_are_all_renamed():
    fixed = fix("""
        from torchrl.collectors import MultiSyncDataCollector, SyncDataCollector

        x: "dict[SyncDataCollector, MultiSyncDataCollector] | None" = None
    """)
    assert 'x: "dict[Collector, MultiSyncCollector] | None" = None' in fixed


def test_a_notebook_importing_the_old_name_keeps_it_too():
    """The notebook names no ``collectors`` module, so no rule parses it: its import is still seen."""
    import json

    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["from example import SyncDataCollector\n"]}
    notebook = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    fixed = fix("from torchrl.collectors import SyncDataCollector\n", extra_files={"explore.ipynb": notebook})
    assert fixed == "from torchrl.collectors import Collector as SyncDataCollector\n"
