"""The pre-filter may skip a file only when no rule could fire in it."""

from __future__ import annotations

from rlguard.engine.prefilter import derived_class_names, rules_needed
from rlguard.testing import check_source

TOKENS = {"R": (("TensorDict(",), ("transform=",))}
CONDITIONS = {"R": (1, frozenset({"Transform", "ObservationNorm"}))}


def test_tokens_are_a_conjunction_of_groups():
    assert rules_needed("TensorDict(x)\nReplayBuffer(transform=f)", TOKENS) == ["R"]
    assert rules_needed("TensorDict(x)", TOKENS) == []


def test_class_condition_by_base_alias_and_module_attribute():
    body = "\n    def _call(self, td):\n        return TensorDict({}, [])\n"
    assert rules_needed("class A(Transform):" + body, TOKENS, CONDITIONS) == ["R"]
    assert rules_needed("from torchrl.envs import ObservationNorm as ON\nclass A(ON):" + body, TOKENS, CONDITIONS) == ["R"]
    assert rules_needed("import torchrl.envs as E\nclass A(E.ObservationNorm):" + body, TOKENS, CONDITIONS) == ["R"]
    assert rules_needed("class A(EnvBase):" + body, TOKENS, CONDITIONS) == []
    assert rules_needed("x = Transform\n" + body, TOKENS, CONDITIONS) == []


def test_textual_subclasses_across_files():
    sources = [b"class Base(Transform):\n    pass\n", b"class Mid(Base):\n    pass\n", b"class Leaf(\n    Mid,\n):\n    pass\n",
               b"class Other(object):\n    pass\n"]
    assert derived_class_names(sources, frozenset({"Transform"})) == {"Base", "Mid", "Leaf"}


def test_aliased_transform_base_is_checked_end_to_end():
    source = (
        "from tensordict import TensorDict\nfrom torchrl.envs import ObservationNorm as Norm\n\n\n"
        "class Scaled(Norm):\n    def _call(self, tensordict):\n"
        "        return TensorDict({\"obs\": tensordict[\"observation\"]}, batch_size=tensordict.batch_size)\n"
    )
    [finding] = [f for f in check_source(source, select=["RLG004"]) if f.code == "RLG004"]
    assert (finding.span.line, finding.span.column) == (7, 16)


def test_a_finding_that_waited_on_the_index_gets_its_exact_position():
    files = {"pkg/__init__.py": "", "pkg/hooks.py": "from torchrl.trainers import TrainerHookBase\n\n\nclass Base(TrainerHookBase):\n    pass\n"}
    source = "import os\n\nfrom pkg.hooks import Base\n\n\nclass Counter(Base):\n    def register(self, trainer):\n        pass\n"
    [finding] = [f for f in check_source(source, select=["RLG005"], extra_files=files) if f.code == "RLG005"]
    assert (finding.span.line, finding.span.column) == (6, 1)
