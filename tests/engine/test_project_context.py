"""The small public interface rules read facts through (FileContext), one answer per question."""

from __future__ import annotations

import pathlib
import textwrap

import libcst as cst

import rlguard.rules
from rlguard.engine.context import FileContext
from rlguard.engine.traversal import bookkeeping, walk

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

    from rlguard.config import Config
    from rlguard.engine.findings import Requirement
    from rlguard.engine.runner import RunOptions, analyze_project
    from rlguard.engine.target import NEWEST_KNOWN_TORCHRL, Target

    (tmp_path / "base.py").write_text("from torchrl.modules import LSTMModule\n\n\nclass Core(LSTMModule):\n    pass\n")
    (tmp_path / "use.py").write_text("from base import Core\n\ncore = Core()\ncore.set_recurrent_mode(True)\n")
    project = analyze_project([str(tmp_path)], Config(root=str(tmp_path)), RunOptions(jobs=1, use_cache=False),
                              Target(NEWEST_KNOWN_TORCHRL, "default"))
    requires = [r for result in project.results for pending in result.pending for r in pending.requires]
    assert requires
    for requirement in requires:
        assert isinstance(requirement, Requirement) and dataclasses.is_dataclass(requirement)
        assert requirement.__dataclass_params__.frozen
    assert {type(r).__name__ for r in requires} == {"RecurrentClass"}
