"""RLG005: a hook method whose body only raises NotImplementedError counts as missing.

Checked against a real ``torchrl.trainers.Trainer`` (torchrl 0.14.1): such a ``state_dict``
makes the first checkpoint fail exactly like a missing one.
"""

from __future__ import annotations

import runpy

import pytest

pytest.importorskip("torchrl")

from rlguard.testing import check_source  # noqa: E402
from tests.rules.test_rlg005_execution import trainer  # noqa: E402, F401  (the real-Trainer fixture)

STUB_HOOK = '''\
from torchrl.trainers import TrainerHookBase


class Flush(TrainerHookBase):
    def state_dict(self):
        """Not checkpointed yet."""
        raise NotImplementedError("no state yet")

    def load_state_dict(self, state_dict):
        pass

    def register(self, trainer, name="flush"):
        trainer.register_module(name, self)
'''

WORKING_HOOK = STUB_HOOK.replace('''        raise NotImplementedError("no state yet")''', '''        if getattr(self, "closed", False):
            raise NotImplementedError("closed")
        return {}''')


def rlg005(source: str, files: dict[str, str] | None = None):
    return [f for f in check_source(source, select=["RLG005"], extra_files=files) if f.code == "RLG005"]


def test_a_stub_state_dict_is_reported_and_breaks_the_real_checkpoint(trainer, tmp_path):  # noqa: F811
    (finding,) = rlg005(STUB_HOOK)
    assert "working `state_dict`" in finding.message and "load_state_dict" not in finding.message
    path = tmp_path / "hook.py"
    path.write_text(STUB_HOOK)
    runpy.run_path(str(path))["Flush"]().register(trainer)
    with pytest.raises(NotImplementedError):
        trainer.state_dict()


def test_a_method_that_raises_only_on_one_path_works_with_the_real_trainer(trainer, tmp_path):  # noqa: F811
    assert rlg005(WORKING_HOOK) == []
    path = tmp_path / "hook.py"
    path.write_text(WORKING_HOOK)
    runpy.run_path(str(path))["Flush"]().register(trainer)
    assert "flush" in trainer.state_dict()


def test_a_stub_inherited_from_another_file_counts_and_an_override_repairs_it():
    base = {"hooks_base.py": STUB_HOOK}
    child = "from hooks_base import Flush\n\n\nclass Child(Flush):\n    pass\n"
    repaired = child.replace("    pass\n", "    def state_dict(self):\n        return {}\n")
    assert [f.message.split("`")[1] for f in rlg005(child, base)] == ["Child"]
    assert rlg005(repaired, base) == []


def test_an_abstract_declaration_is_not_a_stub():
    source = STUB_HOOK.replace("    def state_dict(self):", "    @abc.abstractmethod\n    def state_dict(self):")
    assert rlg005("import abc\n" + source) == []
