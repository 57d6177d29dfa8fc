"""RLG006 removed-collector-name: an old collector name that torchrl 0.13 removed.

The collector part of the removed-API table; RLG007 covers the rest of it with the same visitor
(rules/removed_api.py). Selecting RLG006 alone keeps its old behaviour.
"""

from __future__ import annotations

from rlguard.rules.base import Example
from rlguard.rules.data import COLLECTOR_NAMES_REMOVED_IN, COLLECTOR_RENAMES, ApiChange
from rlguard.rules.removed_api import RemovedApiRule


def _is_collector(change: ApiChange) -> bool:
    return change.kind == "name" and change.name in COLLECTOR_RENAMES


class RemovedCollectorName(RemovedApiRule):
    code = "RLG006"
    name = "removed-collector-name"
    summary = "Imports or uses a collector name that torchrl 0.13 removed"
    what = (
        "Flags each import and use of an old collector name (`SyncDataCollector`, `MultiaSyncDataCollector`, "
        "`DataCollectorBase`, ...) when the target torchrl is 0.13 or newer. RLG006 is the collector part of "
        "the removed-API table that [RLG007](RLG007.md) reads for every other torchrl and tensordict API: "
        "selecting RLG006 alone keeps its behaviour, and selecting both reports each site once."
    )
    options = ()  # every old collector name is gone from 0.13 on, where this rule applies: nothing to preview
    why = (
        "TorchRL 0.11 renamed its collectors (`SyncDataCollector` became `Collector`, "
        "`MultiaSyncDataCollector` became `MultiAsyncCollector`, ...) and 0.13 removed the old "
        "names. Code that still imports them fails with `ImportError` as soon as it runs on a "
        "current torchrl, often deep inside a launcher or a worker process; `tc.SyncDataCollector` "
        "raises `AttributeError` the same way."
    )
    fix_doc = (
        "Safe. The import and every use in the file are renamed to the new name, including uses "
        "in string annotations (`\"SyncDataCollector\"`), which would otherwise name nothing; "
        "`Literal[...]` values and `Annotated[...]` metadata are strings, not types, and stay. An "
        "alias (`import ... as X`) is kept, so uses of the alias do not change. Where the same import "
        "statement already imports the new name, the old one is removed instead. Where the module "
        "re-exports the old name in `__all__`, the new name is imported under the old one "
        "(`from torchrl.collectors import Collector as SyncDataCollector`) so that importers of "
        "this module keep working. The new names exist since torchrl 0.11, so the fixed code needs "
        "torchrl >= 0.11. The other removed torchrl and tensordict names are RLG007's; both rules "
        "read one table generated from the released wheels (see docs/upgrading.md)."
    )
    owns = staticmethod(_is_collector)
    min_target = COLLECTOR_NAMES_REMOVED_IN
    valid = (
        Example("from torchrl.collectors import Collector\n\ncollector = Collector(env, policy, frames_per_batch=64)\n"),
        Example("from torchrl.collectors import SyncDataCollector\n", target="0.12",
                note="Before 0.13 the old name still exists."),
        Example("from my_project.collectors import SyncDataCollector\n",
                note="A class of the same name from another package is not torchrl's."),
    )
    invalid = (
        Example(
            "from torchrl.collectors import SyncDataCollector\n\ncollector = SyncDataCollector(env, policy, frames_per_batch=64)\n",
            fixed="from torchrl.collectors import Collector\n\ncollector = Collector(env, policy, frames_per_batch=64)\n",
            message="use `Collector`",
        ),
        Example(
            "from torchrl.collectors import SyncDataCollector\n\n"
            "def collect(collector: \"SyncDataCollector\") -> \"list[SyncDataCollector]\":\n"
            "    return [collector]\n",
            fixed="from torchrl.collectors import Collector\n\n"
            "def collect(collector: \"Collector\") -> \"list[Collector]\":\n"
            "    return [collector]\n",
            note="String annotations are renamed with the import.",
        ),
        Example(
            "from torchrl.collectors import MultiaSyncDataCollector as Multi\n\nc = Multi([make_env] * 2, policy)\n",
            fixed="from torchrl.collectors import MultiAsyncCollector as Multi\n\nc = Multi([make_env] * 2, policy)\n",
            note="An alias is kept.",
        ),
        Example(
            "import torchrl.collectors as tc\n\nc = tc.SyncDataCollector(env, policy)\n",
            fixed="import torchrl.collectors as tc\n\nc = tc.Collector(env, policy)\n",
        ),
        Example(
            "from torchrl.collectors import Collector, SyncDataCollector\n\n"
            "def make(env, policy, legacy=False):\n"
            "    cls = SyncDataCollector if legacy else Collector\n"
            "    return cls(env, policy)\n",
            fixed="from torchrl.collectors import Collector\n\n"
            "def make(env, policy, legacy=False):\n"
            "    cls = Collector if legacy else Collector\n"
            "    return cls(env, policy)\n",
            note="When the statement already imports the new name, the old one is dropped.",
        ),
        Example(
            "from torchrl.collectors.distributed import DistributedDataCollector\n\n"
            "__all__ = [\"DistributedDataCollector\"]\n",
            fixed="from torchrl.collectors.distributed import DistributedCollector as DistributedDataCollector\n\n"
            "__all__ = [\"DistributedDataCollector\"]\n",
            note="A re-exported name keeps its public spelling.",
        ),
    )
