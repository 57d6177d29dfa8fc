"""The small public interface rules read facts through (FileContext), one answer per question."""

from __future__ import annotations

import pathlib
import textwrap

import libcst as cst

import rlguard.rules
from rlguard.engine.context import FileContext
from rlguard.engine.traversal import bookkeeping, walk
from tests.helpers import analyzed_project

RULES = pathlib.Path(rlguard.rules.__file__).parent


def walk_recording(source: str, on: type[cst.CSTNode], ask) -> list:
    """Walk ``source`` with the engine's bookkeeping, recording ``ask(ctx, node)`` at each ``on`` node."""
    ctx = FileContext("m.py", "m", False, (0, 14, 1), {})
    module = cst.parse_module(textwrap.dedent(source))
    ctx.declare_definitions(module)
    on_visit, on_leave = bookkeeping(ctx)
    answers: list = []
    on_visit.setdefault(on, []).append(lambda node: answers.append(ask(ctx, node)))
    walk(module, on_visit, on_leave)
    return answers


SELF_CASES = """\
    class A:
        def method(self, other):
            self.x
            other.x

            def nested():
                self.y

            self = other
            self.z

        @staticmethod
        def static(self):
            self.w

    def function(self):
        self.v
    """


def test_is_self_is_the_parameter_of_a_method_not_rebound():
    answers = walk_recording(SELF_CASES, cst.Attribute, lambda ctx, node: (node.attr.value, ctx.is_self(node.value.value)))
    assert answers == [("x", True), ("x", False), ("y", True), ("z", False), ("w", False), ("v", False)]


def test_self_class_is_the_method_class():
    answers = walk_recording(SELF_CASES, cst.Attribute, lambda ctx, node: (node.attr.value, ctx.self_class(node.value)))
    assert [(attr, cls.qualname if cls else None) for attr, cls in answers] == [
        ("x", "m.A"), ("x", None), ("y", "m.A"), ("z", None), ("w", None), ("v", None)]


def test_where_the_walk_is():
    source = """\
        class A:
            value = 1

            def method(self):
                def nested():
                    pass
        """
    answers = walk_recording(source, cst.FunctionDef, lambda ctx, node: (
        node.name.value, ctx.method_class() is not None, ctx.current_method() is node,
        ctx.enclosing_method().name.value))
    assert answers == [("method", True, True, "method"), ("nested", False, False, "method")]
    body = walk_recording(source, cst.Assign, lambda ctx, node: (ctx.in_class_body(), ctx.at_module_level))
    assert body == [(True, False)]


def test_rules_never_read_the_scope_tables():
    readers = sorted(path.name for path in RULES.glob("*.py") if ".scopes" in path.read_text(encoding="utf-8"))
    assert readers == []


def test_cross_file_requirements_are_typed_objects(tmp_path):
    """What a pending finding waits on is a frozen dataclass of the rule, not a tuple of strings."""
    import dataclasses

    from rlguard.engine.findings import Requirement

    (tmp_path / "base.py").write_text("from torchrl.modules import LSTMModule\n\n\nclass Core(LSTMModule):\n    pass\n")
    (tmp_path / "use.py").write_text("from base import Core\n\ncore = Core()\ncore.set_recurrent_mode(True)\n")
    project = analyzed_project(tmp_path)
    requires = [r for result in project.results for pending in result.pending for r in pending.requires]
    assert requires
    for requirement in requires:
        assert isinstance(requirement, Requirement) and dataclasses.is_dataclass(requirement)
        assert requirement.__dataclass_params__.frozen
    assert {type(r).__name__ for r in requires} == {"RecurrentClass"}


INSTANCES = """\
    from typing import Optional

    import torch
    from torchrl.modules import LSTMModule
    from torchrl.trainers import Trainer


    def run(trainer: Optional[Trainer], other):
        core = LSTMModule(input_size=3, hidden_size=4, in_key="obs", out_key="h")
        core = core.to("cpu")
        core
        trainer
        other = other.to("cpu")
        other
        made = torch.zeros(3).mean()
        made


    class Hook:
        def __init__(self, core: LSTMModule):
            self.core = core

        def method(self):
            self
            self.core
            super()
    """


def test_one_answer_to_what_an_expression_is_an_instance_of():
    def ask(ctx, node):
        target = node.value
        found = ctx.instance_of(target, frozenset({"to"}))
        label = cst.Module([]).code_for_node(target)
        return label, (found.kind, found.names, found.attr) if found else None

    answers = dict(walk_recording(INSTANCES, cst.Expr, ask))
    assert answers == {
        "core": ("built", ("torchrl.modules.LSTMModule",), None),  # through ``core = core.to("cpu")``
        "trainer": ("annotated", ("torchrl.trainers.Trainer",), None),
        "other": None,  # ``other.to(...)`` of a parameter nothing is known about
        "made": None,  # ``.mean()`` is not a method that keeps the value
        "self": ("self", ("m.Hook",), None),
        "self.core": ("self-attr", ("m.Hook",), "core"),
        "super()": ("super", ("m.Hook",), None),
    }


def test_rlg005_reads_the_engines_answer_for_an_optional_trainer():
    """``register_hook`` is judged only on a receiver known to be a Trainer: an ``Optional[Trainer]``
    parameter is one; an ``Optional`` of another class is not."""
    from rlguard.testing import check_source

    source = textwrap.dedent("""\
        from typing import Optional

        from torchrl.trainers import Trainer


        def add(trainer: Optional[Trainer], fn):
            trainer.register_hook("post_step", fn)
        """)
    assert [f.code for f in check_source(source, select=["RLG005"])] == ["RLG005"]
    other = source.replace("from torchrl.trainers import Trainer", "from logging import Logger").replace(
        "Optional[Trainer]", "Optional[Logger]")
    assert check_source(other, select=["RLG005"]) == []


REBOUND = textwrap.dedent("""\
    from torchrl.modules import LSTMModule


    class Wrapped(LSTMModule):
        def set_recurrent_mode(self, mode=True):
            return self


    def train(device):
        core = {cls}(input_size=3, hidden_size=8, in_key="obs", out_key="h")
        core = core.to(device)
        core.set_recurrent_mode(True)
    """)


def test_rlg002_follows_a_name_rebound_to_a_method_of_itself():
    """``core = core.to(device)`` reads the previous ``core``: the engine's one way of following bindings."""
    from rlguard.testing import check_source

    flagged = check_source(REBOUND.format(cls="LSTMModule"), select=["RLG002"])
    assert [(f.code, f.line) for f in flagged] == [("RLG002", 12)]
    assert "LSTMModule" in flagged[0].message or "set_recurrent_mode" in flagged[0].message
    assert check_source(REBOUND.format(cls="Wrapped"), select=["RLG002"]) == []  # its own method runs
