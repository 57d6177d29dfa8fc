"""The rule API lives in the engine (``rlguard.engine.rule_api``); rules import it from here too."""

from rlguard.engine.rule_api import Example, Option, Report, Rule

__all__ = ["Example", "Option", "Report", "Rule"]
