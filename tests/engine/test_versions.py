"""The versions each block runs at (engine/versions.py), seen through the findings of the version-dependent
rules: a finding stands only where its code runs at an admitted torchrl that has the problem."""

from __future__ import annotations

import libcst as cst
import pytest

from rlguard.engine.names import ImportTable
from rlguard.engine.versions import VersionMap, exists
from rlguard.testing import check_source

VERSIONED = ["RLG002", "RLG006", "RLG007"]
V = "import torchrl\nfrom packaging.version import Version\nTORCHRL = Version(torchrl.__version__)\n"


def _lines(source: str, target: str | None = None) -> list[int]:
    return [f.span.line for f in check_source(source, select=VERSIONED, target=target)]


def _map(source: str, oldest=(0, 14, 1), newest=(0, 14, 1)) -> tuple[cst.Module, VersionMap]:
    module = cst.parse_module(source)
    imports = ImportTable("example", False)
    for statement in module.body:  # module-level imports, as the walk records them
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import):
                imports.add_import(small)
            elif isinstance(small, cst.ImportFrom):
                imports.add_import_from(small)
    return module, VersionMap(module, imports, lambda name: None, oldest, newest)


def test_when_names_exist_comes_from_the_removed_api_table():
    assert exists("torchrl.data.CompositeSpec", (0, 10, 1)) and not exists("torchrl.data.CompositeSpec", (0, 11))
    assert exists("torchrl.collectors.Collector", (0, 11)) and not exists("torchrl.collectors.Collector", (0, 10, 1))
    assert exists("torchrl.envs.PendulumEnv", (0, 4))  # a name the table does not know: every release


def test_a_branch_for_older_releases_is_judged_at_the_versions_the_pin_admits():
    source = V + "if TORCHRL < Version('{}'):\n    from torchrl.data import CompositeSpec\n"
    assert _lines(source.format("0.11"), ">=0.6") == []  # runs on 0.6 to 0.10, where the name exists
    assert _lines(source.format("0.13"), ">=0.6") == [5]  # also runs on 0.11 and 0.12, where it is gone
    assert _lines(source.format("0.13"), ">=0.13") == []  # the pin admits no release that runs it


def test_nested_guards_intersect():
    source = (V + "if TORCHRL >= Version('0.6'):\n"
              "    if TORCHRL < Version('0.11'):\n        from torchrl.data import BoundedTensorSpec\n"
              "    else:\n        from torchrl.data import Bounded\n")
    assert _lines(source, ">=0.4") == []


def test_boolean_operators_and_chained_comparisons():
    both = V + "if Version('0.6') <= TORCHRL < Version('0.11') and True:\n    from torchrl.data import CompositeSpec\n"
    either = V + "if TORCHRL < Version('0.11') or TORCHRL.minor == 14:\n    from torchrl.data import CompositeSpec\n"
    assert _lines(both, ">=0.6") == []
    assert _lines(either, ">=0.6") == [5]  # 0.14 takes the branch too


def test_a_gate_in_a_function_and_a_try_else():
    gate = V + "def make():\n    if TORCHRL < Version('0.13'):\n        from torchrl.collectors import SyncDataCollector\n"
    shim = ("try:\n    from torchrl.collectors import Collector\nexcept ImportError:\n    HAS = False\n"
            "else:\n    HAS = True\n    from torchrl.envs import KLRewardTransform\n")
    assert _lines(gate) == []
    assert _lines(shim) == [7]  # the else runs where the try body imported fine: on 0.14 too


def test_after_an_early_exit_the_rest_of_the_block_is_the_else_branch():
    guard = ("import torchrl.data as data\ndef make():\n    if hasattr(data, 'Unbounded'):\n        return data.Unbounded(3)\n"
             "    return data.UnboundedContinuousTensorSpec(3)\n")
    one_line = guard.replace(":\n        return", ": return")
    loop = (V + "for step in range(3):\n    if TORCHRL >= Version('0.11'):\n        continue\n"
            "    from torchrl.data import CompositeSpec\n")
    assert _lines(guard) == _lines(one_line) == _lines(loop) == []
    # Without the exit, the statement after the guard runs on every release: flagged.
    assert _lines(guard.replace("return data.Unbounded(3)", "spec = data.Unbounded(3)")) == [5]


def test_a_conditional_expression_assigned_or_returned_is_a_gate():
    assigned = ("import torchrl.data as data\n"
                "Composite = data.Composite if hasattr(data, 'Composite') else data.CompositeSpec\n")
    returned = V + "def make():\n    return data.Composite() if TORCHRL >= Version('0.6') else data.CompositeSpec()\n"
    assert _lines(assigned) == _lines("import torchrl.data as data\n" + returned) == []
    # Both branches are old names: the one that runs on 0.14 is flagged, with no fix in a gate.
    found = check_source(assigned.replace("data.Composite if", "data.CompositeSpec if"), select=VERSIONED)
    assert [(f.span.line, f.fix) for f in found] == [(2, None)]


def test_conditions_that_do_not_read_a_library_version_are_no_gates():
    for test in ("numpy.__version__ < '2'", "os.environ.get('OLD')", "sys.version_info < (3, 10)", "False"):
        source = f"import numpy, os, sys\nif {test}:\n    from torchrl.data import CompositeSpec\n"
        assert _lines(source) == [3], test


def test_a_condition_that_cannot_be_evaluated_at_every_version_is_no_gate():
    source = "import torchrl\nif torchrl.__version__.split('.')[7] == '1':\n    from torchrl.data import CompositeSpec\n"
    assert _lines(source) == [3]


def test_a_generator_the_model_cannot_read_leaves_the_condition_unknown():
    """``tuple(<generator>)`` of any other shape than ``int(x) for x in ...`` is no gate, and no endless
    evaluation (numpy's ``test_casting_unittests.py`` reported RLG999 "too deeply nested")."""
    for kinds in ("tuple(type(x) for x in 'ab')", "tuple(x for x in torchrl.__version__)", "(str(x) for x in 'ab')"):
        source = f"import torchrl\nKINDS = {kinds}\nif KINDS == ('a',):\n    from torchrl.data import CompositeSpec\n"
        found = check_source(source)
        assert [(f.code, f.span.line) for f in found] == [("RLG007", 4)], kinds  # judged as ungated code


def test_the_guard_kind_and_compatibility_flag_of_each_block():
    source = ("from typing import TYPE_CHECKING\nimport torchrl.collectors as tc\n"
              "if TYPE_CHECKING:\n    from torchrl.data import CompositeSpec\n"
              "if hasattr(tc, 'Collector'):\n    A = 1\nelse:\n    B = 2\n"
              "try:\n    import gym\nexcept ImportError:\n    gym = None\n"
              "try:\n    run()\nexcept Exception:\n    pass\n")
    module, versions = _map(source)
    kinds = [(versions.branch(s).kind, versions.branch(s).compat) for s in _statements(module)]
    assert kinds == [("type-checking", False), ("hasattr", True), ("hasattr", True), ("try", True), ("except", True),
                     ("try", False), ("except", False)]
    hasattr_guard = module.body[3]
    assert not versions.branch(hasattr_guard.orelse.body.body[0]).runs((0, 14, 1))


def _statements(module: cst.Module) -> list[cst.CSTNode]:
    found = []
    for statement in module.body:
        if isinstance(statement, cst.If):
            found.append(statement.body.body[0])
            if statement.orelse is not None:
                found.append(statement.orelse.body.body[0])
        elif isinstance(statement, cst.Try):
            found += [statement.body.body[0], statement.handlers[0].body.body[0]]
    return found


@pytest.mark.parametrize("gate, flagged", [("< Version('0.7')", False), ("< Version('0.9')", True)])
def test_rlg002_is_judged_under_gates(gate, flagged):
    source = (V + "from torchrl.modules import LSTMModule\nlstm = LSTMModule(input_size=3, hidden_size=4, in_key='x', out_key='y')\n"
              f"if TORCHRL {gate}:\n    lstm = lstm.set_recurrent_mode(True)\n")
    assert bool(_lines(source, ">=0.6")) is flagged


def test_a_range_in_the_config_bounds_the_target_below(tree):
    shim = ("try:\n    from torchrl.collectors import Collector\nexcept ImportError:\n"
            "    from torchrl.collectors import SyncDataCollector as Collector\n")
    tree.write("pkg/shim.py", shim)
    tree.write("pyproject.toml", '[tool.rlguard]\ntarget-torchrl = ">=0.11,<0.15"\n')
    assert "RLG008 outdated `try`/`except` shim" in tree.run("check", "--no-cache", ".").stdout
    tree.write("pyproject.toml", '[tool.rlguard]\ntarget-torchrl = "0.14"\n')  # one version: no lower bound
    assert tree.run("check", "--no-cache", ".").returncode == 0


# ----- any nesting of guards, conditions and bodies: no internal error, and fixes keep the code valid -----

from hypothesis import given, settings, strategies as st  # noqa: E402

_CONDITIONS = ["Version(torchrl.__version__) >= Version('0.11')", "hasattr(tc, 'Collector')", "torchrl.__version__ < '0.9'",
               "TYPE_CHECKING", "not getattr(tc, 'SyncDataCollector', None)", "tuple(int(x) for x in version('torchrl').split('.')[:2]) < (0, 13)",
               "flag", "int(torchrl.__version__.split('.')[9]) > 1"]
_LINES = ["from torchrl.data import CompositeSpec", "from torchrl.data import Composite as CompositeSpec",
          "from torchrl.collectors import SyncDataCollector", "Collector = tc.Collector", "x = tc.SyncDataCollector",
          "pass", "import gym", "HAS = True"]
_HANDLERS = ["except ImportError:", "except (ImportError, AttributeError):", "except ModuleNotFoundError:", "except:",
             "except Exception:"]


@st.composite
def _blocks(draw, depth: int = 0) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["line", "if", "try"] if depth < 3 else ["line"]))
        if kind == "line":
            lines.append(draw(st.sampled_from(_LINES)))
        elif kind == "if":
            lines.append(f"if {draw(st.sampled_from(_CONDITIONS))}:")
            lines += ["    " + line for line in draw(_blocks(depth + 1))]
            if draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + line for line in draw(_blocks(depth + 1))]
        else:
            lines.append("try:")
            lines += ["    " + line for line in draw(_blocks(depth + 1))]
            lines.append(draw(st.sampled_from(_HANDLERS)))
            lines += ["    " + line for line in draw(_blocks(depth + 1))]
    return lines


HEADER = ("import torchrl\nimport torchrl.collectors as tc\nfrom importlib.metadata import version\n"
          "from packaging.version import Version\nfrom typing import TYPE_CHECKING\nflag = 1\n")


@settings(max_examples=30, deadline=None)
@given(_blocks(), st.sampled_from([None, ">=0.6", ">=0.11,<0.13", ">=0.13"]))
def test_any_nesting_is_judged_without_error_and_fixed_into_valid_code(lines, target):
    from rlguard.testing import fix_source

    source = HEADER + "\n".join(lines) + "\n"
    select = [*VERSIONED, "RLG008"]
    assert not [f for f in check_source(source, select=select, target=target) if f.code in ("RLG999", "RLG000")]
    fixed = fix_source(source, select=select, target=target, unsafe=True)
    compile(fixed, "<fixed>", "exec")


def test_changes_beyond_names_are_judged_under_gates_too():
    """A removed keyword, a raising wrapper and an enum member that raises are version findings like a
    removed name: silent in the branch for the releases that have them, flagged (and fixed) outside."""
    keyword = "from torchrl.objectives import ClipPPOLoss\n" + V + \
        "if TORCHRL < Version('0.11'):\n    loss = ClipPPOLoss(actor, critic, entropy_coef=0.01)\n" \
        "else:\n    loss = ClipPPOLoss(actor, critic, entropy_coeff=0.01)\n"
    assert _lines(keyword, ">=0.9") == []
    assert _lines(keyword.replace("< Version('0.11')", "< Version('0.13')"), ">=0.9") == [6]
    wrapper = "from torchrl.modules import OrnsteinUhlenbeckProcessWrapper as OU\n" + V + \
        "if TORCHRL < Version('0.7'):\n    policy = OU(actor)\n"
    assert _lines(wrapper, ">=0.6") == []  # its constructor only raises from 0.7 on
    assert _lines(wrapper.replace("< Version('0.7')", "< Version('0.8')"), ">=0.6") == [6]
    member = "from torchrl.envs.utils import ExplorationType\nfrom torchrl.modules import TanhNormal\n" + V + \
        "MODE = ExplorationType.MODE if TORCHRL < Version('0.6') else ExplorationType.DETERMINISTIC\n"
    assert _lines(member, ">=0.5") == []
    assert _lines(member.replace("< Version('0.6')", "< Version('0.7')"), ">=0.5") == [6]


def test_a_class_whose_constructor_only_raises_still_exists():
    """``hasattr(torchrl.modules, "EGreedyWrapper")`` is true on 0.14: the import works, building raises."""
    assert exists("torchrl.modules.EGreedyWrapper", (0, 14, 1))
    assert not exists("torchrl.data.CompositeSpec", (0, 14, 1))
