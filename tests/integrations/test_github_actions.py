"""The composite action (action.yml) and this repository's workflows.

GitHub's runner cannot run here, so:
- every file parses as YAML and validates against SchemaStore's schemas for actions and workflows
  (vendored in tests/integrations/schemas/);
- a structure test checks what the schemas cannot: the action's steps reference only inputs it
  declares, every input is used, inputs reach scripts through `env` only, step outputs refer to
  earlier steps;
- the action's own bash steps are executed, in order, by a small stand-in for the runner that
  evaluates the few expression forms the action uses (and the structure test keeps it to those).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.integrations.conftest import CHECKOUT, clean_env

SCHEMAS = Path(__file__).parent / "schemas"
ACTION = CHECKOUT / "action.yml"
WORKFLOWS = sorted((CHECKOUT / ".github" / "workflows").glob("*.yml"))
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# The only expression forms the action may use, so that the stand-in runner below covers all of them.
VALUE_FORMS = re.compile(r"^(inputs\.[\w-]+|steps\.[\w-]+\.outputs\.[\w-]+|github\.action_path)$")
CONDITION_FORM = re.compile(r"^inputs\.(?P<name>[\w-]+) (?P<op>!=|==) ''$")
RISKY = "from torchrl.collectors import SyncDataCollector\n"


def load(path: Path) -> dict:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)


def workflow(path: Path) -> dict:
    document = load(path)
    # YAML 1.1 reads the key `on` as True; GitHub reads it as "on".
    if True in document:
        document["on"] = document.pop(True)
    return document


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


def expressions(value) -> list[str]:
    if isinstance(value, str):
        return EXPRESSION.findall(value)
    if isinstance(value, dict):
        return [e for v in value.values() for e in expressions(v)]
    if isinstance(value, list):
        return [e for v in value for e in expressions(v)]
    return []


# --- validation ---------------------------------------------------------------------------------

def test_action_validates_against_the_schema():
    jsonschema.Draft7Validator(schema("github-actions.json")).validate(load(ACTION))


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_workflow_validates_against_the_schema(path):
    jsonschema.Draft7Validator(schema("github-workflows.json")).validate(workflow(path))


def test_schemas_reject_a_broken_action():
    broken = load(ACTION)
    broken["runs"]["steps"][1].pop("shell")  # a composite `run` step needs a shell
    assert list(jsonschema.Draft7Validator(schema("github-actions.json")).iter_errors(broken))


def test_action_structure():
    action = load(ACTION)
    declared = set(action["inputs"])
    assert {"version", "paths", "sarif-file", "fail-on-findings"} <= declared
    assert action["inputs"]["fail-on-findings"]["default"] == "true"
    assert action["inputs"]["sarif-file"]["default"] == ""
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]

    used = set()
    ids: list[str] = []
    for step in steps:
        found = expressions(step)
        if "if" in step:
            condition = CONDITION_FORM.match(step["if"])
            assert condition, f"unsupported condition: {step['if']}"
            found.append(f"inputs.{condition.group('name')}")
        for expression in found:
            assert VALUE_FORMS.match(expression), f"unsupported expression: {expression}"
            kind, name, *rest = expression.split(".")
            if kind == "inputs":
                assert name in declared, f"step {step.get('name')} references undeclared input {name!r}"
                used.add(name)
            elif kind == "steps":
                assert name in ids, f"step {step.get('name')} references step {name!r} before it runs"
        if "run" in step:
            assert step.get("shell") == "bash"
            assert "${{" not in step["run"], "inputs must reach a script through env, not be spliced into it"
        else:
            assert re.match(r"^[\w-]+/[\w-]+@v\d+$", step["uses"]), step["uses"]
        if "id" in step:
            assert step["id"] not in ids
            ids.append(step["id"])
    assert used == declared, f"declared but unused inputs: {declared - used}"
    for output in action["outputs"].values():
        for expression in expressions(output["value"]):
            assert expression.split(".")[1] in ids


def test_action_runs_rlguard_check_with_the_github_format():
    scripts = "\n".join(step.get("run", "") for step in load(ACTION)["runs"]["steps"])
    assert '"$RLGUARD" check --format github' in scripts
    assert '"$RLGUARD" check --format sarif' in scripts


def test_workflows_use_the_action_on_this_repo_and_run_the_tests():
    steps = {path.name: [s for job in workflow(path)["jobs"].values() for s in job["steps"]] for path in WORKFLOWS}
    self_check = [s for found in steps.values() for s in found if s.get("uses") == "./"]
    assert self_check, "no workflow uses the action on this repository"
    assert self_check[0]["with"]["version"] == ""  # the code under review, not a release
    uploads = [s for found in steps.values() for s in found if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    assert uploads and uploads[0]["if"].startswith("always()")
    runs = "\n".join(s.get("run", "") for found in steps.values() for s in found)
    torch_line = next(line for line in runs.splitlines() if "torch==2.13.0" in line)
    assert "--index-url https://download.pytorch.org/whl/cpu" in torch_line
    assert "mkdocs build --strict" in runs
    assert "python -m rlguard_dev.docs --check" in runs


def _readme_test_command() -> str:
    """The command .ci/checks runs, found as it finds it (its own line, run by bash)."""
    line = next(line for line in (CHECKOUT / ".ci" / "checks").read_text().splitlines() if line.startswith("test_command="))
    return subprocess.run(["bash", "-c", f'{line}\nprintf %s "$test_command"'], cwd=CHECKOUT, capture_output=True, text=True,
                          check=True).stdout


def test_ci_runs_what_ci_run_runs_on_every_supported_python():
    """.ci/run and the workflow both run .ci/checks: the README's test command, ruff and mypy."""
    tomllib = pytest.importorskip("tomllib")
    command = _readme_test_command()
    assert "-c constraints.txt" in command and '".[runtime,test]"' in command and command.endswith("python -m pytest")
    checks = (CHECKOUT / ".ci" / "checks").read_text()
    assert 'eval "$test_command"' in checks
    assert "\nruff check rlguard rlguard_dev tests benchmarks\n" in checks and "\nmypy\n" in checks
    assert (CHECKOUT / ".ci" / "run").read_text().rstrip().endswith("\n.ci/checks")
    job = workflow(CHECKOUT / ".github" / "workflows" / "ci.yml")["jobs"]["tests"]
    runs = [step.get("run", "") for step in job["steps"]]
    assert ".ci/checks" in runs
    # torch's CPU build is installed first, so the README command's `pip install torch==...` is satisfied by it.
    assert min(i for i, r in enumerate(runs) if "download.pytorch.org/whl/cpu" in r) < runs.index(".ci/checks")
    with open(CHECKOUT / "pyproject.toml", "rb") as handle:
        lowest = tomllib.load(handle)["project"]["requires-python"].removeprefix(">=")
    assert job["strategy"]["matrix"]["python-version"] == [lowest, "3.11", "3.12", "3.13"]


# --- the action's steps, executed -----------------------------------------------------------------

class Runner:
    """Runs the composite action's steps as GitHub's runner would, for the expression forms above."""

    def __init__(self, action_path: Path, workspace: Path, temp: Path) -> None:
        self.action = load(ACTION)
        self.action_path = action_path
        self.workspace = workspace
        self.temp = temp

    def run(self, inputs: dict[str, str], skip: dict[str, dict[str, str]] | None = None) -> tuple[int, str, dict]:
        values = {name: spec.get("default", "") for name, spec in self.action["inputs"].items()}
        values.update(inputs)
        outputs: dict[str, dict[str, str]] = dict(skip or {})
        log = []

        def evaluate(expression: str) -> str:
            kind, name, *rest = expression.split(".")
            if kind == "inputs":
                return values[name]
            if kind == "steps":
                return outputs.get(name, {}).get(rest[1], "")
            return str(self.action_path)

        for step in self.action["runs"]["steps"]:
            if step.get("id") in (skip or {}):
                continue
            if "if" in step:
                condition = CONDITION_FORM.match(step["if"])
                equal = values[condition.group("name")] == ""
                if equal != (condition.group("op") == "=="):
                    continue
            if "uses" in step:
                assert step["uses"].startswith("actions/setup-python@")
                outputs[step["id"]] = {"python-path": sys.executable}
                continue
            env = {k: EXPRESSION.sub(lambda m: evaluate(m.group(1)), str(v)) for k, v in step.get("env", {}).items()}
            output_file = self.temp / f"output-{step.get('id', 'step')}"
            output_file.write_text("")
            result = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                cwd=self.workspace, capture_output=True, text=True, timeout=600,
                env=clean_env(**env, GITHUB_OUTPUT=str(output_file), RUNNER_TEMP=str(self.temp), GITHUB_ACTIONS="true"),
            )
            log.append(result.stdout + result.stderr)
            if "id" in step:
                outputs[step["id"]] = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
            if result.returncode != 0:
                return result.returncode, "".join(log), outputs
        return 0, "".join(log), outputs


@pytest.fixture(scope="module")
def installed(tmp_path_factory, checkout_snapshot) -> tuple[Runner, dict]:
    """The action's install step, run for real once: a venv with rlguard from the action's own source."""
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    temp = tmp_path_factory.mktemp("runner-temp")
    runner = Runner(checkout_snapshot[0], tmp_path_factory.mktemp("workspace"), temp)
    steps = runner.action["runs"]["steps"]
    assert all("id" in s for s in steps)
    install_only = {s["id"]: {} for s in steps if s["id"] not in ("python", "install")}
    code, log, outputs = runner.run({"version": ""}, skip=install_only)
    assert code == 0, log
    rlguard = outputs["install"]["rlguard"]
    assert Path(rlguard).is_file() and str(temp) in rlguard
    return runner, {"python": outputs["python"], "install": outputs["install"]}


def workspace(runner: Runner, files: dict[str, str]) -> None:
    for child in runner.workspace.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    for name, text in files.items():
        (runner.workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (runner.workspace / name).write_text(text, encoding="utf-8")


def annotations(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("::error ")]


def test_action_fails_on_findings_and_writes_sarif(installed):
    runner, done = installed
    workspace(runner, {"src/train.py": RISKY, "src/clean.py": "x = 1\n", "other/old.py": RISKY, "skipped/old.py": RISKY})
    code, log, outputs = runner.run({"paths": "src\nother", "sarif-file": "out/rlguard.sarif"}, skip=done)
    assert code == 1, log
    found = annotations(log)
    assert len(found) == 2, log
    assert {re.search(r"file=([^,]+)", a).group(1) for a in found} == {"src/train.py", "other/old.py"}
    assert all("title=RLG006 removed-collector-name::" in a for a in found), found
    sarif = json.loads((runner.workspace / "out" / "rlguard.sarif").read_text())
    assert len(sarif["runs"][0]["results"]) == 2
    assert outputs["sarif"]["path"] == "out/rlguard.sarif"


def test_action_can_report_without_failing(installed):
    runner, done = installed
    workspace(runner, {"train.py": RISKY})
    code, log, outputs = runner.run({"fail-on-findings": "false"}, skip=done)
    assert code == 0, log
    assert len(annotations(log)) == 1
    assert "sarif" not in outputs  # no sarif-file: the step is skipped
    assert not list(runner.workspace.rglob("*.sarif"))


def test_action_passes_a_clean_tree_and_forwards_args(installed):
    runner, done = installed
    workspace(runner, {"train.py": RISKY, "clean.py": "x = 1\n"})
    code, log, _ = runner.run({"args": "--ignore RLG006"}, skip=done)
    assert code == 0, log
    assert annotations(log) == []


def test_action_fails_on_a_configuration_error_even_when_not_failing_on_findings(installed):
    runner, done = installed
    workspace(runner, {"train.py": RISKY, "pyproject.toml": "[tool.rlguard]\nselectt = ['RLG006']\n"})
    code, log, _ = runner.run({"fail-on-findings": "false"}, skip=done)
    assert code == 2, log
    assert "selectt" in log


def test_action_rejects_a_bad_fail_on_findings(installed):
    runner, done = installed
    workspace(runner, {"clean.py": "x = 1\n"})
    code, log, _ = runner.run({"fail-on-findings": "maybe"}, skip=done)
    assert code == 2
    assert "fail-on-findings must be true or false" in log
