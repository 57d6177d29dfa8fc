"""Two rules whose fixes are wrong, as a buggy rule's would be: one leaves the finding in place, the
other writes code that does not parse. ``register()`` adds them to the rule catalog (the default
``Config.rules``) of a test's own process; the fixer must then refuse both fixes and leave the file
as it was."""

from __future__ import annotations

from rlguard.engine.findings import Edit, Fix
from rlguard.engine.lazy import cst
from rlguard.engine.rule_api import Rule
from rlguard.engine.rule_info import RuleInfo
from rlguard.rules import CATALOG


class LeavesTheFinding(Rule):
    code = "RLG990"
    name = "fix-leaves-the-finding"
    summary = "A rule whose fix rewrites `Widget` as `Widget`."

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "Widget":
            self.report(node, "`Widget` is flagged", fix=Fix("safe", "rename nothing", (Edit(node, cst.Name("Widget")),)))


class BreaksTheSyntax(Rule):
    code = "RLG991"
    name = "fix-breaks-the-syntax"
    summary = "A rule whose fix turns `Gadget` into the keyword `class`."

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "Gadget":
            self.report(node, "`Gadget` is flagged", fix=Fix("safe", "use a keyword", (Edit(node, cst.Name("class")),)))


def register() -> None:
    CATALOG.update(
        (rule.code, RuleInfo(rule.code, rule.name, rule.summary, (), None, (((), ((word,),)),), frozenset(), 0, __name__, rule.__name__))
        for rule, word in ((LeavesTheFinding, "Widget"), (BreaksTheSyntax, "Gadget"))
    )
