"""Rule documentation as a run needs it: `rlguard rules`, `rlguard explain`, and the links reports make.

A rule's page is read from the generated catalog (``rlguard/rules/catalog.json``), so nothing here
imports a rule module. ``rlguard_dev.docs``, a maintainer's tool outside the package, renders the
pages from the rules' metadata and examples, into the catalog and into docs/rules/.
"""

from __future__ import annotations

from rlguard.rules import CATALOG, ENGINE_CODES, TEXTS

# Where the site is published: mkdocs.yml's site_url and the SARIF helpUri both use this.
DOCS_URL = "https://rlguard.readthedocs.io/en/latest/"
RULES_DIR = "rules"

# The engine's own diagnostics: not rules, but they appear in reports and need a page.
ENGINE_DOCS: dict[str, tuple[str, str]] = {
    "RLG000": (
        "A file that does not parse",
        "The file has a syntax error, bytes that do not decode in its declared (or the default UTF-8) "
        "encoding, or a merge-conflict marker. The finding sits on the line Python or libcst points to. "
        "No rule can judge the file until it parses; the rest of the run goes on.\n\n"
        "Fix the file, or exclude it (`exclude` in `[tool.rlguard]`) if it is not meant to be Python "
        "(for example a template). This diagnostic cannot be deselected with `select` or `ignore`.",
    ),
    "RLG100": (
        "A suppression comment that silences nothing",
        "Reported only with `rlguard check --show-unused-noqa`. A `# noqa` (bare or with codes) or a "
        "`# rlguard: ignore[...]` comment whose codes matched no finding on the lines it covers. "
        "Stale suppressions hide the next real finding on that line: remove them. A suppression naming a code "
        "that does not exist is reported too, always.\n\n"
        "**Fix (safe).** `rlguard fix --show-unused-noqa` takes the unused rlguard codes out of each comment, "
        "and the comment out when no code is left (a line left empty goes too); other tools' codes (`F401`) "
        "stay. A bare `# noqa` is left for you to remove: other linters may rely on it. The result is "
        "verified like any fix: every finding stands as before.",
    ),
    "RLG998": (
        "A file rlguard could not check",
        "The file took more than the per-file limit of CPU time (`timeout`, default 120 s), is larger than "
        "`max-file-size`, cannot be read, is not a regular file, or its worker process died. The limit counts "
        "CPU time, not wall time, so the same files are checked however loaded the machine is. The finding "
        "sits on line 1 and names the reason; the rest of the run goes on, and the run exits 1: a clean "
        "report means every file was checked.\n\n"
        "Raise `timeout` or `max-file-size`, or exclude the file (`exclude` in `[tool.rlguard]`) if it is "
        "generated or not meant to be checked; `per-file-ignores` can silence this code for it.",
    ),
    "RLG999": (
        "rlguard failed on this file",
        "A rule raised an unexpected error, or the file is too deeply nested to analyse. The error is "
        "reported as a finding on this file instead of ending the run, and the other files are still "
        "checked. Please report it with the file (or a reduced version of it) that triggers it.",
    ),
}


def rule_url(code: str) -> str:
    """The docs page of one code, as SARIF's ``helpUri`` and the text report link it."""
    return f"{DOCS_URL}{RULES_DIR}/{code}/"


def engine_summary(code: str) -> str:
    """One line on an engine diagnostic, without a final period."""
    return ENGINE_DOCS.get(code, (ENGINE_CODES[code].replace("-", " ").capitalize(),))[0]


def engine_page(code: str) -> str:
    """The page of an engine diagnostic."""
    body = ENGINE_DOCS[code][1] if code in ENGINE_DOCS else ""
    return "\n".join([
        f"# {code} {ENGINE_CODES[code]}\n",
        f"{engine_summary(code)}. This is a diagnostic of the engine itself, not a rule.\n",
        body.strip() + "\n" if body else "",
    ]).rstrip("\n") + "\n"


def rules_table() -> str:
    width = max(len(rule.name) for rule in CATALOG.values())
    rows = [f"{rule.code}  {rule.name:<{width}}  {rule.summary}" for rule in CATALOG.values()]
    rows += [f"{code}  {name:<{width}}  (engine diagnostic)" for code, name in ENGINE_CODES.items()]
    return "\n".join(rows)


def explain(code: str) -> str | None:
    """The page of a rule or an engine diagnostic: every code `rlguard rules` lists."""
    code = code.strip().upper()
    if code in TEXTS:
        return TEXTS[code].page
    return engine_page(code) if code in ENGINE_CODES else None
