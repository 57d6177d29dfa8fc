"""The pre-filter may skip a file only when no rule could fire in it."""

from __future__ import annotations

import os

from rlguard.engine.prefilter import class_bases, derived_class_names, rules_needed
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
    assert derived_class_names(class_bases(sources), frozenset({"Transform"})) == {"Base", "Mid", "Leaf"}


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


def test_a_token_tuple_needs_every_part():
    tokens = {"R": ((("return_types", "max"), "SyncDataCollector"),)}
    assert rules_needed("from tensordict.return_types import max\n", tokens) == ["R"]
    assert rules_needed("best = max(scores)\n", tokens) == []  # ``max`` alone: the builtin
    assert rules_needed("import tensordict.return_types\n", tokens) == []
    assert rules_needed("from torchrl.collectors import SyncDataCollector\n", tokens) == ["R"]


def _removed_uses(change) -> list[str]:
    """Spellings RLG006/RLG007 match a removed name or member by."""
    if change.kind == "member":  # an enum member, in a file that uses a class it raises with
        enum, _, member = change.name.rpartition(".")
        return [f"from {change.module} import {enum}\nfrom torchrl.modules import {change.with_classes[0]}\n\n"
                f"{enum}.{member}\n"]
    if change.found == "raises":  # the import works; building it raises
        return [f"from {change.module} import {change.name}\n\n{change.name}(policy)\n"]
    if change.kind == "name":
        head = change.name.split(".")[0]
        package, _, tail = change.module.rpartition(".")
        parent = [f"from {package} import {tail}\n\n{tail}.{change.name}\n"] if package else []
        return [*parent, f"from {change.module} import {head}\n",
                f"import {change.module} as alias\n\nalias.{change.name}\n",
                f'import {change.module}\n\n\ndef f(x: "{change.module}.{change.name}"):\n    pass\n']
    if change.kind == "module":
        package, _, tail = change.qualname.rpartition(".")
        return [f"import {change.qualname}\n", f"from {package} import {tail}\n", f"from {change.qualname} import _private\n"]
    if change.kind == "key":  # ``env.specs["input_spec"]["action"]`` of a torchrl environment
        _, container, key = change.name.split(".")
        return [f'from torchrl.envs import PendulumEnv\n\nenv = PendulumEnv()\nx = env.specs["{container}"]["{key}"]\n']
    if change.kind == "setter":  # ``self.<attr> = ...`` in a subclass, direct or through a base of the file
        owner, _, attr = change.name.rpartition(".")
        body = f"    def _reset(self, td):\n        self.{attr} = td\n"
        return [f"from {change.module} import {owner}\n\n\nclass E({owner}):\n{body}",
                f"from {change.module} import {owner}\n\n\nclass B({owner}):\n    pass\n\n\nclass E(B):\n{body}"]
    if change.kind == "returns":  # ``_step`` returning its output under "next"
        owner, _, method = change.name.rpartition(".")
        return [f"from tensordict import TensorDict\nfrom {change.module} import {owner}\n\n\nclass E({owner}):\n"
                f"    def {method}(self, td):\n        return TensorDict({{'{change.path[0]}': {{'a': 1}}}}, [])\n"]
    owner, _, member = change.name.rpartition(".")
    package, _, tail = change.module.rpartition(".")
    # A parameter made keyword-only is passed by position; any other by keyword.
    arguments = ", ".join(["1"] * (change.position + 1)) if change.kind == "positional" else f"{member}=1"
    if tail[:1].isupper():  # ``CompositeDistribution`` / ``log_prob.aggregate_probabilities``: a method's keyword
        return [f"from {package} import {tail}\n\n{tail}().{owner}({arguments})\n"]
    use = f"{owner}().{member}" if change.kind == "method" else f"{owner}({arguments})"
    return [f"from {change.module} import {owner}\n\n{use}\n"]


def test_the_removed_api_tokens_admit_every_use_the_rules_match():
    """Soundness over the whole generated table: each spelling is flagged by the rule, so the
    pre-filter must let it through."""
    from rlguard.rules import CATALOG
    from rlguard.rules.data import REMOVED_API
    from rlguard.testing import check_source

    rules = CATALOG
    tokens = {code: rules[code].prefilter_tokens((0, 14)) for code in ("RLG006", "RLG007")}
    for change in REMOVED_API:
        version = change.removed_in or change.deprecated_in
        for use in _removed_uses(change):
            assert rules_needed(use, tokens), (change, use)
            flagged = check_source(use, select=["RLG006", "RLG007"], target=".".join(map(str, version)),
                                   options={"RLG006": {"preview": True}, "RLG007": {"preview": True}})
            assert flagged, (change, use)


def test_removed_names_that_are_common_words_are_parsed_only_beside_their_module(tmp_path):
    """``min``, ``max`` and ``ray`` left tensordict's and torchrl's modules; a file that only uses
    the builtin or the library ``ray`` is not parsed for RLG007, one that imports the old name is flagged."""
    from tests.helpers import analyzed_project

    (tmp_path / "builtins_only.py").write_text("import ray\n\nbest = max(1, 2) + min(3, 4)\nray.init()\n")
    (tmp_path / "old_name.py").write_text("from tensordict.return_types import max\n")
    project = analyzed_project(tmp_path)
    parsed = {os.path.basename(r.path): r.parsed for r in project.results}
    assert parsed == {"builtins_only.py": False, "old_name.py": True}
    [pending] = [p for r in project.results for p in r.pending]
    assert (os.path.basename(pending.finding.path), pending.finding.code) == ("old_name.py", "RLG007")


def test_a_copy_of_torchrl_is_not_parsed_for_the_rules_that_skip_it(tmp_path):
    """RLG006 and RLG007 judge a vendored torchrl by its own version: they never run on its files."""
    from tests.helpers import analyzed_project

    copy = tmp_path / "third_party" / "torchrl" / "data"
    copy.mkdir(parents=True)
    (tmp_path / "third_party" / "torchrl" / "__init__.py").write_text("")
    (copy / "__init__.py").write_text("from torchrl.data.tensor_specs import CompositeSpec\n")
    (tmp_path / "train.py").write_text("from torchrl.data.tensor_specs import CompositeSpec\n")
    project = analyzed_project(tmp_path)
    parsed = {os.path.relpath(r.path, tmp_path): (r.parsed, [p.finding.code for p in r.pending]) for r in project.results}
    assert parsed[os.path.join("third_party", "torchrl", "data", "__init__.py")] == (False, [])
    assert parsed["train.py"] == (True, ["RLG007"])


def test_statements_are_read_only_where_they_start_a_line():
    import re

    from rlguard.engine.prefilter import at_line_start

    pattern = re.compile(r"from[ \t]+(\w+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)")
    text = 'doc = """taken from here import (\n"""\n    from pkg import (A,\n B)\nx = 1  # from y import z\n'
    assert [m.groups() for m in at_line_start(pattern, text)] == [("pkg", "(A,\n B)")]
    assert [m.group(0) for m in at_line_start(re.compile(rb"class \w+"), b"class A:\n  class B: pass  # class C\n")] \
        == [b"class A", b"class B"]


def test_the_json_tokens_admit_every_encoder_spelling():
    """RLG003 needs "json" and "dump" together: every encoder, however imported, spells both."""
    from rlguard.rules import CATALOG
    from rlguard.rules.data import JSON_ENCODERS
    from rlguard.testing import check_source

    tokens = {"RLG003": CATALOG["RLG003"].prefilter_tokens((0, 14))}
    payload = "{'loss': torch.zeros(3)}"
    for encoder in JSON_ENCODERS:
        module, function = encoder.rsplit(".", 1)
        args = payload if JSON_ENCODERS[encoder][0] == 1 else payload + ", handle"
        for use in (f"import {module}\n\n{module}.{function}({args})\n",
                    f"from {module} import {function} as encode\n\nencode({args})\n",
                    f"import {module} as codec\n\ncodec.{function}({args})\n"):
            source = "import torch\n" + use
            assert rules_needed(source, tokens) == ["RLG003"], source
            assert [f.code for f in check_source(source, select=["RLG003"])] == ["RLG003"], source
    assert rules_needed("import json\n\nconfig = json.load(handle)\n", tokens) == []
