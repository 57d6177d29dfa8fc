"""Rule documentation generated from rule metadata and examples: `rlguard explain`, docs/rules/."""

from __future__ import annotations

from typing import Optional

from rlguard.rules import ENGINE_CODES, RULES, RULES_BY_CODE
from rlguard.rules.base import Example, Rule


def rules_table() -> str:
    width = max(len(rule.name) for rule in RULES)
    rows = [f"{rule.code}  {rule.name:<{width}}  {rule.summary}" for rule in RULES]
    rows += [f"{code}  {name:<{width}}  (engine diagnostic)" for code, name in ENGINE_CODES.items()]
    return "\n".join(rows)


def _example_block(example: Example, fixed: bool = False) -> str:
    lines = []
    if example.note:
        lines.append(example.note + "\n")
    if example.target:
        lines.append(f"With `target-torchrl = \"{example.target}\"`:\n")
    lines.append("```python\n" + example.code.rstrip("\n") + "\n```\n")
    if fixed and example.fixed is not None:
        safety = "unsafe fix (`--unsafe-fixes`)" if example.unsafe else "safe fix"
        lines.append(f"After the {safety}:\n\n```python\n" + example.fixed.rstrip("\n") + "\n```\n")
    return "\n".join(lines)


def rule_page(rule: type[Rule]) -> str:
    parts = [
        f"# {rule.code} {rule.name}\n",
        f"{rule.summary}.\n" if not rule.summary.endswith(".") else f"{rule.summary}\n",
        "## What it does\n",
        rule.what.strip() + "\n" if getattr(rule, "what", None) else rule.summary + ".\n",
        "## Why is this bad?\n",
        rule.why.strip() + "\n",
        "## Example\n",
        "\n".join(_example_block(e, fixed=True) for e in rule.invalid),
        "## Not flagged\n",
        "\n".join(_example_block(e) for e in rule.valid),
        "## Fix and its safety\n",
        rule.fix_doc.strip() + "\n",
        "## Options\n",
    ]
    if rule.options:
        parts.append("\n".join(f"- `{o.name}` ({o.kind.__name__}, default `{o.default!r}`): {o.description}" for o in rule.options) + "\n")
        parts.append(f"Set them under `[tool.rlguard.rules.{rule.code}]` in `pyproject.toml`.\n")
    else:
        parts.append("None.\n")
    if rule.min_target:
        parts.append(f"Applies when the target torchrl is {'.'.join(map(str, rule.min_target))} or newer.\n")
    return "\n".join(parts)


def explain(code: str) -> Optional[str]:
    rule = RULES_BY_CODE.get(code.strip().upper())
    return rule_page(rule) if rule else None
