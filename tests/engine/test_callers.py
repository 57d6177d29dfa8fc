"""A file that never names a rule's sink is still checked by that rule when it calls, through its
imports, a project function or class that reaches the sink (``engine.callers``): the tensor handed to
``log_metrics(step, loss=loss)`` is reported in the caller, whether the project or the caller alone is
checked, and the fixed caller runs.
"""

from __future__ import annotations

import os
import runpy
import sys

import pytest

from rlguard.config import Config
from rlguard.engine.callers import SinkCallers
from rlguard.engine.project import ModuleResolver, read_bytes
from rlguard.engine.runner import RunOptions, check
from rlguard.rules.data import NEWEST_KNOWN_TORCHRL
from rlguard.engine.target import Target
from rlguard.testing import check_source, fix_source

pytest.importorskip("torch")

LOGUTIL = "import json\n\n\ndef log_metrics(step, **metrics):\n    record = {'step': step}\n    record.update(metrics)\n    return json.dumps(record)\n"
HELPERS = "from logutil import log_metrics\n\n\ndef record(step, **metrics):\n    return log_metrics(step, **metrics)\n"
TRACKER = ("import json\n\n\nclass Tracker:\n    def log(self, **values):\n        return self.write(values)\n\n"
           "    def write(self, row):\n        return json.dumps(row)\n")
SHOUT = "def shout(step, **metrics):\n    return {'step': step, **metrics}\n"
HEAD = "import torch\n\n"
LOSS = "loss = torch.ones(3).mean()\n"

# name -> (the project's other files, the caller's imports, its call of the helper)
FLAGGED = {
    "a function of another module": ({"logutil.py": LOGUTIL}, "from logutil import log_metrics\n", "out = log_metrics(1, loss=loss)"),
    "a module imported under another name": ({"logutil.py": LOGUTIL}, "import logutil as lu\n", "out = lu.log_metrics(1, loss=loss)"),
    "a module of a package": ({"tools/__init__.py": "", "tools/logutil.py": LOGUTIL}, "from tools import logutil\n",
                              "out = logutil.log_metrics(1, loss=loss)"),
    "a name a package re-exports": ({"tools/__init__.py": "from .logutil import log_metrics\n", "tools/logutil.py": LOGUTIL},
                                    "from tools import log_metrics\n", "out = log_metrics(1, loss=loss)"),
    "a helper of a third module that forwards to it": ({"logutil.py": LOGUTIL, "helpers.py": HELPERS},
                                                       "from helpers import record\n", "out = record(1, loss=loss)"),
    "a method of an imported class, through another of its methods": ({"tracker.py": TRACKER}, "from tracker import Tracker\n",
                                                                      "out = Tracker().log(loss=loss)"),
    "a method of an instance bound to a name": ({"tracker.py": TRACKER}, "from tracker import Tracker\n",
                                                "tracker = Tracker()\nout = tracker.log(loss=loss)"),
}
MODULES = ("logutil", "helpers", "tracker", "tools", "tools.logutil", "shout", "evaluation")


def _program(case: str, call: str | None = None) -> tuple[dict[str, str], str]:
    files, imports, default_call = FLAGGED[case]
    return files, HEAD + imports + "\n" + LOSS + (call or default_call) + "\n"


def _run(root, files: dict[str, str], source: str) -> dict:
    for name, text in {**files, "example.py": source}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sys.path.insert(0, str(root))
    try:
        return runpy.run_path(str(root / "example.py"))
    finally:
        sys.path.remove(str(root))
        for module in MODULES:
            sys.modules.pop(module, None)


def _checked_alone(root, files: dict[str, str], source: str, code: str = "RLG003") -> list:
    """Findings when only the caller is given, as pre-commit passes it."""
    for name, text in {**files, "example.py": source}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    previous = os.getcwd()
    os.chdir(root)
    try:
        report, _ = check(["example.py"], Config(root=str(root)), RunOptions(select=[code], jobs=1, use_cache=False),
                          Target(NEWEST_KNOWN_TORCHRL, "default"))
    finally:
        os.chdir(previous)
    return [f for f in report.findings if f.code == code]


@pytest.mark.parametrize("case", list(FLAGGED))
def test_a_caller_that_never_names_json_is_reported_alone_or_in_its_project_and_its_fix_runs(tmp_path, case):
    files, source = _program(case)
    assert "json" not in source
    with pytest.raises(TypeError, match="not JSON serializable"):
        _run(tmp_path / "original", files, source)
    in_project = check_source(source, select=["RLG003"], extra_files=files)
    alone = _checked_alone(tmp_path / "alone", files, source)
    assert [f.line for f in in_project] == [f.line for f in alone] == [source.count("\n")], case  # the last line
    fixed = fix_source(source, select=["RLG003"], unsafe=True, extra_files=files)
    assert fixed != source and check_source(fixed, select=["RLG003"], extra_files=files) == []
    assert "1.0" in _run(tmp_path / "fixed", files, fixed)["out"]


@pytest.mark.parametrize("case", list(FLAGGED))
def test_the_same_call_with_a_number_is_not_reported_and_runs(tmp_path, case):
    _, _, call = FLAGGED[case]
    files, source = _program(case, call.replace("loss=loss", "loss=loss.item()"))
    assert check_source(source, select=["RLG003"], extra_files=files) == []
    assert _checked_alone(tmp_path / "alone", files, source) == []
    _run(tmp_path / "run", files, source)


def _calls_into_sink(tmp_path, files: dict[str, str], source: str) -> bool:
    for name, text in {**files, "example.py": source}.items():
        (tmp_path / name).write_text(text)
    callers = SinkCallers(((("json", "dump"),),), ModuleResolver().resolve, read_bytes)
    return callers.calls_into_sink(str(tmp_path / "example.py"), source.encode())


@pytest.mark.parametrize("files, source", [
    ({"shout.py": SHOUT}, "from shout import shout\nshout(1, loss=2)\n"),  # the helper encodes nothing
    ({"logutil.py": LOGUTIL}, "import logutil\n"),  # imported, never called
    ({}, "from torchrl.record.loggers import CSVLogger\nCSVLogger('x').log_scalar('loss', 1.0)\n"),  # a library's
    ({"logutil.py": "# log_metrics: json.dumps is not used here\nimport json\n\n\ndef log_metrics(step):\n    return step\n"},
     "from logutil import log_metrics\nlog_metrics(1)\n"),  # the module names json, the function dumps nothing
])
def test_files_whose_imports_reach_no_sink_are_not_given_to_the_rule(tmp_path, files, source):
    assert not _calls_into_sink(tmp_path, files, source)


def test_a_file_whose_import_reaches_a_sink_is_given_to_the_rule(tmp_path):
    assert _calls_into_sink(tmp_path, {"logutil.py": LOGUTIL}, "from logutil import log_metrics\nlog_metrics(1)\n")


def test_a_cached_caller_is_checked_again_once_its_helper_starts_encoding(tmp_path):
    """The rules a caller gets for its imports are part of its cache key: its own text did not change."""
    files, source = _program("a function of another module")
    (tmp_path / "logutil.py").write_text(SHOUT.replace("shout", "log_metrics"))
    (tmp_path / "example.py").write_text(source)
    options = RunOptions(select=["RLG003"], jobs=1, cache_dir=str(tmp_path / "cache"))

    def findings() -> list:
        previous = os.getcwd()
        os.chdir(tmp_path)
        try:
            report, _ = check(["."], Config(root=str(tmp_path)), options, Target(NEWEST_KNOWN_TORCHRL, "default"))
        finally:
            os.chdir(previous)
        return [f.path for f in report.findings if f.code == "RLG003"]

    assert findings() == []
    (tmp_path / "logutil.py").write_text(files["logutil.py"])
    assert findings() == ["example.py"]


SNAPSHOT = "import copy\n\n\ndef snapshot(policy):\n    return copy.deepcopy(policy)\n"
POLICY = ("import threading\n\nimport torch\n\nfrom evaluation import snapshot\n\n\n"
          "class Policy(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
          "        self.net = torch.nn.Linear(2, 2)\n        self.lock = threading.Lock()\n\n\nout = snapshot(Policy())\n")


def test_a_policy_handed_to_a_helper_that_copies_it_is_reported_in_a_caller_that_never_names_a_copy(tmp_path):
    """RLG001 through imports: the caller names no copy, no collector and no loss."""
    files = {"evaluation.py": SNAPSHOT}
    with pytest.raises(TypeError, match="pickle"):
        _run(tmp_path / "original", files, POLICY)
    in_project = [f.line for f in check_source(POLICY, select=["RLG001"], extra_files=files) if f.code == "RLG001"]
    report_alone = _checked_alone(tmp_path / "alone", files, POLICY, "RLG001")
    assert in_project == [f.line for f in report_alone] == [POLICY.count("\n")]
    copyable = POLICY.replace("        self.lock = threading.Lock()\n", "")
    assert check_source(copyable, select=["RLG001"], extra_files=files) == []
    _run(tmp_path / "copyable", files, copyable)
