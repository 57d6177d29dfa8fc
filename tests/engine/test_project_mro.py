"""One C3 method resolution order in the engine (ProjectIndex.mro), and the rules that read it.

``class D(B, C)`` with ``B(LSTMModule)`` and ``C(LSTMModule)`` defining ``set_recurrent_mode``:
Python takes ``C``'s method (D, B, C, LSTMModule), so RLG002 must stay silent; a depth-first
search (D, B, LSTMModule) would say "will crash".
"""

from __future__ import annotations

import textwrap

import pytest

from rlguard.testing import check_source
from tests.helpers import index_of

DIAMOND = textwrap.dedent("""\
    from torchrl.modules import LSTMModule


    class B(LSTMModule):
        pass


    class C(LSTMModule):
        def set_recurrent_mode(self, mode=True):
            return self


    class D(B, C):
        pass
    """)
BUILD = 'core = {cls}(input_size=3, hidden_size=4, in_key="obs", out_key="h")\ncore.set_recurrent_mode(True)\n'


def rlg(code: str, source: str, files: dict[str, str] | None = None) -> list:
    return [f for f in check_source(source, select=[code], extra_files=files) if f.code == code]


def test_the_index_linearises_like_python(tmp_path):
    index, near = index_of(tmp_path, {"m.py": DIAMOND})
    assert [name for name, _ in index.mro("m.D", near)] == ["m.D", "m.B", "m.C", "torchrl.modules.LSTMModule"]
    assert index.method_owner("m.D", "set_recurrent_mode", near) == "m.C"


def test_an_inconsistent_hierarchy_has_no_order(tmp_path):
    index, near = index_of(tmp_path, {"m.py": "class A:\n    pass\n\n\nclass B(A):\n    pass\n\n\nclass C(A, B):\n    pass\n"})
    assert index.mro("m.C", near) is None
    assert [name for name, _ in index.ancestry("m.C", near)] == ["m.C"]


def test_a_class_cycle_across_files_has_no_order(tmp_path):
    index, near = index_of(tmp_path, {"a.py": "from b import B\n\n\nclass A(B):\n    pass\n",
                                      "b.py": "from a import A\n\n\nclass B(A):\n    pass\n"})
    assert index.mro("a.A", near) is None


def test_the_real_mro_takes_the_second_bases_method():
    """What the rule must agree with: torchrl 0.14.1 runs C's method for a D."""
    torchrl_modules = pytest.importorskip("torchrl.modules")
    namespace: dict = {}
    exec(DIAMOND, namespace)
    core = namespace["D"](input_size=3, hidden_size=4, in_key="obs", out_key="h")
    assert core.set_recurrent_mode(True) is core
    with pytest.raises(RuntimeError, match="removed"):  # B alone inherits the removed method
        namespace["B"](input_size=3, hidden_size=4, in_key="obs", out_key="h").set_recurrent_mode(True)
    assert torchrl_modules.LSTMModule in namespace["D"].__mro__


def test_rlg002_follows_the_mro_in_the_same_file():
    assert rlg("RLG002", DIAMOND + BUILD.format(cls="D")) == []
    assert len(rlg("RLG002", DIAMOND + BUILD.format(cls="B"))) == 1


@pytest.mark.parametrize("cls, flagged", [("D", 0), ("B", 1)])
def test_rlg002_follows_the_mro_across_files(cls, flagged):
    source = "from hierarchy import B, D\n\n" + BUILD.format(cls=cls)
    assert len(rlg("RLG002", source, {"hierarchy.py": DIAMOND})) == flagged


def test_rlg002_when_the_first_base_defines_the_method_python_never_reaches_the_module():
    swapped = DIAMOND.replace("class D(B, C)", "class D(C, B)")
    assert rlg("RLG002", swapped + BUILD.format(cls="D")) == []


HOOKS = textwrap.dedent("""\
    from torchrl.trainers import TrainerHookBase


    class Saves(TrainerHookBase):
        def state_dict(self):
            return {}


    class Loads(TrainerHookBase):
        def load_state_dict(self, state_dict):
            pass

        def register(self, trainer, name):
            pass
    """)


def reported_classes(findings: list) -> set[str]:
    return {f.message.split("`")[1] for f in findings}


def test_rlg005_reads_the_same_mro():
    """Each base alone is incomplete (and reported, built); a class combining them is complete."""
    both = HOOKS + "\n\nclass Both(Saves, Loads):\n    pass\n\n\nhooks = [Saves(), Loads(), Both()]\n"
    one = HOOKS + "\n\nclass One(Saves):\n    pass\n\n\nhooks = [Saves(), Loads(), One()]\n"
    assert reported_classes(rlg("RLG005", both)) == {"Saves", "Loads"}
    assert reported_classes(rlg("RLG005", one)) == {"Saves", "Loads", "One"}
