"""RLG008 outdated-compat-code: a shim, guard or version gate for torchrl releases the pin no longer admits."""

from __future__ import annotations

from collections.abc import Sequence

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Edit, Fix
from rlguard.engine.target import version_text
from rlguard.engine.versions import Guard, Predicate, Version, block_statements, dated_names
from rlguard.rules.base import Example, Rule

_KINDS = {"try": "`try`/`except` shim", "gate": "version gate", "hasattr": "`hasattr` guard"}
_CODE = (
    "import torchrl\n"
    "from packaging.version import Version\n\n"
)


class OutdatedCompatCode(Rule):
    code = "RLG008"
    name = "outdated-compat-code"
    summary = "A torchrl version shim, guard or gate whose old-release branch no admitted torchrl runs"
    what = (
        "Flags compatibility code for torchrl releases older than the lowest one the project's pin admits: "
        "a `try`/`except ImportError` shim, an `if hasattr(torchrl..., \"Name\")` guard, or a gate on "
        "`torchrl.__version__` / `tensordict.__version__` / `importlib.metadata.version(\"torchrl\")`, when "
        "one branch ran only on those older releases and another runs on every admitted one. It is the "
        "torchrl counterpart of ruff's outdated-version-block (UP036). It needs a lower bound: a pin such as "
        "`torchrl>=0.11` in `pyproject.toml` or a `requirements*.txt`, or a range in the config "
        "(`target-torchrl = \">=0.11\"`); without one (no pin, `--target-torchrl 0.14`), nothing is dead and it "
        "stays silent. How rlguard decides which branch runs where is described in "
        "[Versions](../versions.md)."
    )
    why = (
        "Once no supported torchrl takes the old branch, it is dead code that still looks load-bearing: "
        "readers keep two APIs in mind, the old names keep drawing deprecation searches and linter "
        "findings, and the shim hides the day it breaks (a fallback import of a removed name fails only "
        "on the release that needed it)."
    )
    fix_doc = (
        "Safe. The guard is replaced by the branch that runs on every admitted torchrl: the `try` body "
        "(with its `else` and `finally`) when the `except` branch is dead, the handler's body (with the "
        "`finally`) when the `try` body fails on every admitted release, or the gate's live branch. "
        "Comments above the guard stay; comments inside the dead branch go with it. Imports only the guard "
        "read (`packaging.version.Version`) stay: ruff's unused-import fix removes them. This is the one fix "
        "allowed to rewrite compatibility branches: every other rule leaves code under a shim, guard or "
        "gate as it is."
    )
    rewrites_compat_code = True
    # A library's own compatibility code is judged by its own version, not by the project's pin.
    library_copies = False
    # A guard needs its syntax, and either a version read or a name whose releases the table knows.
    tokens = (("__version__", "version(", "hasattr", "getattr", "except"),
              ("__version__", "version(", *sorted(dated_names())))
    valid = (
        Example(
            "try:\n    from torchrl.data import Composite\nexcept ImportError:\n"
            "    from torchrl.data import CompositeSpec as Composite\n",
            target=">=0.5",
            note="torchrl 0.5 has no `Composite`: the fallback still runs on an admitted release.",
        ),
        Example(
            "try:\n    from torchrl.data import Composite\nexcept ImportError:\n"
            "    from torchrl.data import CompositeSpec as Composite\n",
            note="Without a lower bound (no pin), no release is ruled out.",
        ),
        Example(
            _CODE + "if Version(torchrl.__version__) >= Version(\"0.11\"):\n    from torchrl.data import Composite\n"
            "else:\n    from torchrl.data import CompositeSpec as Composite\n",
            target=">=0.10,<0.15",
        ),
        Example(
            "try:\n    import gymnasium as gym\nexcept ImportError:\n    import gym\n",
            target=">=0.11",
            note="A shim for another package says nothing about torchrl.",
        ),
    )
    invalid = (
        Example(
            "try:\n    from torchrl.data import Composite\nexcept ImportError:\n"
            "    from torchrl.data import CompositeSpec as Composite\n\nspec = Composite()\n",
            fixed="from torchrl.data import Composite\n\nspec = Composite()\n",
            target=">=0.6",
            message="`except` branch runs only on torchrl 0.5.0 and older",
        ),
        Example(
            "# before 0.11 the spec had another name\n"
            "try:\n    from torchrl.data import CompositeSpec\nexcept ImportError:\n"
            "    from torchrl.data import Composite as CompositeSpec\n",
            fixed="# before 0.11 the spec had another name\nfrom torchrl.data import Composite as CompositeSpec\n",
            target=">=0.11",
            note="The old name first: from 0.11 on the `try` body always fails and the handler always runs.",
        ),
        Example(
            _CODE + "if Version(torchrl.__version__) >= Version(\"0.11\"):\n    from torchrl.data import Composite\n"
            "else:\n    from torchrl.data import CompositeSpec as Composite\n",
            fixed=_CODE + "from torchrl.data import Composite\n",
            target=">=0.11",
        ),
        Example(
            "import torchrl.collectors as tc\n\n"
            "def make(env, policy):\n"
            "    if not hasattr(tc, \"Collector\"):\n"
            "        return tc.SyncDataCollector(env, policy)\n"
            "    return tc.Collector(env, policy)\n",
            fixed="import torchrl.collectors as tc\n\n"
            "def make(env, policy):\n"
            "    return tc.Collector(env, policy)\n",
            target="~=0.12.0",
            note="A guard without an `else`: the dead branch goes.",
        ),
    )

    def leave_Module(self, node: cst.Module) -> None:
        if self.ctx.lowest is None:  # no lower bound: every older release may still run this code
            return
        versions = self.ctx.versions
        admitted, older = versions.admitted(), versions.below_oldest()
        guards = {id(guard.node): guard for guard in versions.guards}
        for guard in versions.guards:
            live = _live(guard, admitted)
            dead = [b for b in guard.branches if b is not live and any(b[2](v) for v in older)]
            if live is None or not dead:
                continue
            label, statements, runs = dead[0]
            last, lowest = version_text(max(v for v in older if runs(v))), version_text(self.ctx.lowest)
            if statements:
                what = f"its `{label}` branch runs only on torchrl {last} and older"
            else:  # ``if`` without ``else``: the condition alone is outdated
                what = f"its condition fails only on torchrl {last} and older"
            message = f"outdated {_KINDS[guard.kind]}: {what}"
            remedy = f"the pin admits no torchrl older than {lowest}: keep only the branch that runs"
            label, statements = live[0], live[1]
            # ``elif``: the next test of the chain may be decided on every admitted release too.
            while len(statements) == 1 and id(statements[0]) in guards:
                inner = _live(guards[id(statements[0])], admitted)
                if inner is None:
                    break
                label, statements = inner[0], inner[1]
            self.report(_anchor(guard, dead[0][1]), message, remedy=remedy,
                        fix=_keep(guard, label, statements))


def _live(guard: Guard, admitted: list[Version]) -> tuple[str, Sequence[cst.BaseStatement], Predicate] | None:
    """The one branch that runs on every admitted release, when no other runs on any."""
    live = [b for b in guard.branches if any(b[2](v) for v in admitted)]
    return live[0] if len(live) == 1 and all(live[0][2](v) for v in admitted) else None


def _anchor(guard: Guard, dead: Sequence[cst.BaseStatement]) -> cst.CSTNode:
    """Where the finding points: the gate's test, or the first statement of the dead branch."""
    if isinstance(guard.node, cst.If):
        return guard.node.test
    return dead[0] if dead else guard.node


def _keep(guard: Guard, label: str, statements: Sequence[cst.BaseStatement]) -> Fix:
    node = guard.node
    kept = list(statements)
    if isinstance(node, cst.Try):
        if label == "try" and node.orelse is not None:
            kept += list(block_statements(node.orelse.body))
        if node.finalbody is not None:
            kept += list(block_statements(node.finalbody.body))
    if not kept and len(guard.parent) == 1:
        kept = [cst.SimpleStatementLine([cst.Pass()])]  # the block must keep a statement
    if kept:  # comments above the guard stay above what replaces it
        kept[0] = kept[0].with_changes(leading_lines=(*node.leading_lines, *getattr(kept[0], "leading_lines", ())))
    replacement = cst.FlattenSentinel(kept) if kept else cst.RemovalSentinel.REMOVE
    return Fix("safe", f"Keep only the `{label}` branch", (Edit(node, replacement),))
