"""The docs site: generated rule pages are current, `mkdocs build --strict` passes, and the
hand-written pages agree with the code (CLI options, config keys, TOML examples, runtime names)."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from rlguard.docs import DOCS_URL, explain
from rlguard.cli import build_parser
from rlguard.config import _TOP_KEYS, ConfigError, parse_config
from rlguard.rules import ENGINE_CODES, RULES, RULES_BY_CODE
from rlguard_dev import docs

from tests.integrations.conftest import CHECKOUT

DOCS = CHECKOUT / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md"))


def test_generated_rule_pages_are_current():
    stale = docs.stale_pages(str(DOCS))
    assert not stale, (f"stale generated docs: {', '.join(stale)}. "
                       "Regenerate them with `python -m rlguard_dev.docs --write`.")


def test_every_rule_and_engine_code_has_a_page_and_explain_matches_it():
    generated = docs.generate()
    for rule in RULES:
        page = generated[f"rules/{rule.code}.md"]
        assert explain(rule.code).strip() in page
        assert f"[{rule.code}]({rule.code}.md)" in generated["rules/index.md"]
    for code in ENGINE_CODES:
        assert f"rules/{code}.md" in generated


def test_check_and_write_modes(tmp_path):
    shutil.copytree(DOCS, tmp_path / "docs")
    target = tmp_path / "docs"
    run = lambda *args: subprocess.run([sys.executable, "-m", "rlguard_dev.docs", *args, "--docs-dir", str(target)],
                                       capture_output=True, text=True, timeout=120)
    docs.write_pages(str(target))  # bring the copy up to date first
    assert run("--check").returncode == 0
    page = target / "rules" / f"{RULES[0].code}.md"
    page.write_text(page.read_text() + "\nhand edit\n")
    (target / "rules" / "RLG997.md").write_text("# a rule that no longer exists\n")
    (target / "rules" / "RLG000.md").unlink()
    checked = run("--check")
    assert checked.returncode == 1
    for name in (page.name, "RLG997.md", "RLG000.md"):
        assert name in checked.stdout
    assert "python -m rlguard_dev.docs --write" in checked.stdout
    written = run("--write")
    assert written.returncode == 0, written.stderr
    assert run("--check").returncode == 0
    assert not (target / "rules" / "RLG997.md").exists()
    assert "hand edit" not in page.read_text()


def test_site_url_is_the_docs_url_sarif_links_to():
    config = yaml.safe_load((CHECKOUT / "mkdocs.yml").read_text())
    assert config["site_url"] == DOCS_URL
    nav_files = [next(iter(item.values())) for item in config["nav"]]
    assert "rules/index.md" in nav_files
    for name in ("getting-started.md", "configuration.md", "fixes.md", "runtime.md", "integrations.md", "migrating.md"):
        assert name in nav_files and (DOCS / name).is_file()


def test_mkdocs_build_strict(tmp_path):
    """The site builds with warnings as errors, from the docs as they would be after
    `python -m rlguard_dev.docs --write` (staleness is the test above's business)."""
    pytest.importorskip("mkdocs")
    shutil.copytree(DOCS, tmp_path / "docs")
    docs.write_pages(str(tmp_path / "docs"))
    config = (CHECKOUT / "mkdocs.yml").read_text()
    (tmp_path / "mkdocs.yml").write_text(config)
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    for relative in docs.generate():
        stem = relative[:-3]
        html = site / (stem[: -len("index")] if stem.endswith("index") else stem + "/") / "index.html"
        assert html.is_file(), html
    for page in PAGES:
        assert (site / ("" if page.stem == "index" else page.stem) / "index.html").is_file(), page
    assert "SyncDataCollector" in (site / "rules" / "RLG006" / "index.html").read_text()


def _options_in(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text))


def test_cli_page_documents_every_option_and_no_other():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    real = {option for name in ("check", "fix") for action in subparsers[name]._actions
            for option in action.option_strings if option.startswith("--") and option != "--help"}
    real.add("--version")
    documented = _options_in((DOCS / "cli.md").read_text())
    assert documented == real, (f"undocumented: {sorted(real - documented)}; documented but missing: {sorted(documented - real)}")


def test_every_option_named_in_the_docs_exists():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    real = {option for sub in subparsers.values() for action in sub._actions for option in action.option_strings}
    real |= {"--version", "--rlguard"}  # --rlguard is the pytest plugin's option
    other_tools = {"--index-url", "--all-files", "--strict", "--site-dir", "--unsafe-fixes"} | {"--select", "--target-torchrl"}
    for page in PAGES:
        for option in _options_in(page.read_text()):
            assert option in real | other_tools, f"{page.name} names {option}, which rlguard does not have"


def test_configuration_page_has_a_section_per_key():
    text = (DOCS / "configuration.md").read_text()
    headings = set(re.findall(r"^### `([a-z-]+)`", text, flags=re.M))
    assert headings == set(_TOP_KEYS)


def _toml_blocks() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for block in re.findall(r"```toml\n(.*?)```", page.read_text(), flags=re.S):
            if "[tool.rlguard" in block:
                found.append((page.name, block))
    return found


@pytest.mark.parametrize("page, block", _toml_blocks(), ids=[f"{p}-{i}" for i, (p, _) in enumerate(_toml_blocks())])
def test_toml_examples_are_valid_configuration(page, block):
    import tomllib

    section = tomllib.loads(block)["tool"]["rlguard"]
    # Options of rules that are not registered yet cannot be checked; everything else is.
    pending = [code for code in section.get("rules", {}) if code not in RULES_BY_CODE]
    for code in pending:
        del section["rules"][code]
    section.pop("extend", None)  # an example's base file does not exist; `extend` itself is tested in tests/engine
    try:
        parse_config(section, f"docs/{page}")
    except ConfigError as error:
        pytest.fail(f"docs/{page} shows a configuration rlguard rejects: {error}")


def test_runtime_page_names_exist():
    pytest.importorskip("torchrl")
    import rlguard.runtime as runtime

    text = (DOCS / "runtime.md").read_text()
    for name in ("install", "uninstall", "installed", "RLGuardError", "RLGuardWarning", "uncopyable", "Collector",
                 "set_recurrent_mode", "PrioritizedSampler", "TensorDictReplayBuffer", "TrainingGuard"):
        assert f"`{name}" in text, f"runtime.md does not document {name}"
        assert name in runtime.__all__
    install_keywords = set(inspect.signature(runtime.install).parameters)
    assert install_keywords == set(re.findall(r"^\| `(\w+)` \| what it patches", text, flags=re.M) or
                                   re.findall(r"^\| `(\w+)` \|", text.split("## Errors and warnings")[0], flags=re.M))
    guard_section = text.split("## `TrainingGuard`")[1].split("\n## ")[0]
    documented = set(re.findall(r"^\| `(\w+)` \|", guard_section, flags=re.M)) | {"max_policy_lag", "warn"}
    try:
        guard_keywords = set(inspect.signature(runtime.TrainingGuard.__init__).parameters) - {"self"}
    except (ImportError, AttributeError) as error:  # the module is still being written
        pytest.skip(f"TrainingGuard unavailable: {error}")
    assert documented == guard_keywords
    for fixture_or_marker in ("--rlguard", "rlguard_runtime", "@pytest.mark.rlguard"):
        assert fixture_or_marker in text


def test_generation_does_not_depend_on_hash_seed():
    """Pages must not change between runs (a set's repr in an option default would)."""
    script = "import json, rlguard_dev.docs as d; print(json.dumps(d.generate(), sort_keys=True))"
    outputs = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(outputs) == 1


def test_license_file_matches_the_metadata():
    tomllib = pytest.importorskip("tomllib")
    with open(CHECKOUT / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    assert project["license"] == {"text": "MIT"}
    assert (CHECKOUT / "LICENSE").read_text().startswith("MIT License\n")
    assert project["urls"]["Documentation"] == DOCS_URL
