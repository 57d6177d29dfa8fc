"""The rule registry: every ``rlgNNN_*.py`` module in this package holds exactly one rule.

Codes are stable. Discovery by module name keeps adding a rule to one new file.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

from rlguard.engine.findings import ENGINE_CODES
from rlguard.engine.rule_api import Rule, register_rules

_RULE_MODULE = re.compile(r"^rlg\d{3}_\w+$")


def _discover() -> tuple[type[Rule], ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if _RULE_MODULE.match(info.name):
            module = importlib.import_module(f"{__name__}.{info.name}")
            rules = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Rule) and v is not Rule
                     and v.__module__ == module.__name__]
            if len(rules) != 1:
                raise ImportError(f"{module.__name__} must define exactly one rule, found {len(rules)}")
            found.append(rules[0])
    return tuple(found)


RULES: tuple[type[Rule], ...] = _discover()
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in RULES}
register_rules(RULES)

__all__ = ["ENGINE_CODES", "RULES", "RULES_BY_CODE"]
