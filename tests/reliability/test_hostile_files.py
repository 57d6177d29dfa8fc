"""Input the linter was not written for: each file gets a clear message or a skip reason, and
the run finishes with an exit code that follows the contract."""

from __future__ import annotations

import json
import os

import pytest

from tests.helpers import OLD_IMPORT

HOSTILE = {
    "empty.py": b"",
    "bom_only.py": b"\xef\xbb\xbf",
    "latin1.py": b"name = 'caf\xe9'\n",
    "bad_cookie.py": b"# -*- coding: klingon -*-\nx = 1\n",
    "nul.py": b"x = 1\n\x00y = 2\n",
    "crlf.py": b"import os\r\nx = 1\r\n",
    "mixed.py": b"import os\r\nx = 1\ny = 2\r\n",
    "deep.py": b"x = " + b"(" * 10_000 + b"1" + b")" * 10_000 + b"\n",
    "deep_blocks.py": b"".join(b"    " * i + b"if x:\n" for i in range(50)) + b"    " * 50 + b"pass\n",
    "too_deep_blocks.py": b"".join(b"    " * i + b"if x:\n" for i in range(100)) + b"    " * 100 + b"pass\n",
    "späce d/nön ascii.py": OLD_IMPORT.encode(),
}
EXPECTED_RLG000 = {"latin1.py": 1, "bad_cookie.py": 1, "nul.py": 2, "too_deep_blocks.py": 101}


def _json_run(tree, *args):
    result = tree.run("check", "--no-cache", "--format", "json", *args)
    assert "Traceback" not in result.stderr, result.stderr
    return result, json.loads(result.stdout)


def test_hostile_files_each_get_a_clear_outcome(tree):
    for name, data in HOSTILE.items():
        tree.write(name, data, mode="wb")
    result, findings = _json_run(tree, ".")
    assert result.returncode == 1
    by_file = {}
    for f in findings:
        by_file.setdefault(os.path.relpath(f["path"], "."), []).append(f)
    for name, line in EXPECTED_RLG000.items():
        [finding] = by_file[name]
        assert (finding["code"], finding["line"]) == ("RLG000", line), finding
    assert "unknown encoding" in by_file["bad_cookie.py"][0]["message"]
    assert "NUL" in by_file["nul.py"][0]["message"]
    assert [f["code"] for f in by_file["späce d/nön ascii.py"]] == ["RLG006"]
    for clean in ("empty.py", "bom_only.py", "crlf.py", "mixed.py", "deep_blocks.py"):
        assert clean not in by_file
    # Python itself cannot compile 10,000 nested parentheses: a parse error, or a worker that dies on
    # it (reported unchecked), never the end of the run.
    assert [f["code"] for f in by_file.get("deep.py", [])] in ([], ["RLG000"], ["RLG998"])


def test_unreadable_file_is_skipped_with_a_reason(tree):
    if os.geteuid() == 0:
        pytest.skip("root reads chmod 000 files")  # pragma: no cover - CI runs as root; see the next test
    path = tree.write("secret.py", OLD_IMPORT)
    os.chmod(path, 0)
    result = tree.run("check", "--no-cache", ".")
    assert "secret.py:1:1: RLG998 not checked: cannot read" in result.stdout and result.returncode == 1


def test_unreadable_file_as_root_is_still_reported(tree, monkeypatch):
    """As root, chmod 000 is readable; simulate an unreadable file through the real read path."""
    import builtins

    from rlguard.config import Config
    from rlguard.engine.runner import RunOptions, check
    from rlguard.engine.target import Target

    path = tree.write("secret.py", OLD_IMPORT)
    real_open = builtins.open

    def deny(file, *args, **kwargs):
        if str(file) == path:
            raise PermissionError(13, "Permission denied", file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", deny)
    report, project = check([tree.root], Config(root=tree.root), RunOptions(jobs=1, use_cache=False), Target((0, 14), "flag"))
    assert (path, "cannot read: Permission denied") in project.skipped
    assert [(f.code, f.message) for f in report.findings] == [("RLG998", "not checked: cannot read: Permission denied")]


def test_large_file_is_skipped_with_a_reason(tree):
    big = tree.write("big.py", b"x = 1\n" * (50 * 2**20 // 6), mode="wb")
    assert os.path.getsize(big) > 50_000_000
    tree.write("old.py", OLD_IMPORT)
    result = tree.run("check", "--no-cache", ".")
    assert result.returncode == 1
    assert "big.py:1:1: RLG998 not checked: larger than `max-file-size` (10000000 bytes)" in result.stdout


def test_per_file_time_limit(tree):
    # A long but legal file and a tiny limit: the file is reported unchecked, the run goes on.
    tree.write("pyproject.toml", "[tool.rlguard]\ntimeout = 0.5\n")
    tree.write("slow.py", OLD_IMPORT + "x = [\n" + "    1,\n" * 80_000 + "]\n")
    tree.write("old.py", OLD_IMPORT)
    for jobs in ("1", "2"):  # in-process, and in worker processes
        result = tree.run("check", "--no-cache", "--output-format", "json", "--jobs", jobs, ".")
        found = {(f["path"], f["code"], f["message"]) for f in json.loads(result.stdout)}
        assert found == {("old.py", "RLG006", found_message(found, "old.py")),
                         ("slow.py", "RLG998", "not checked: took more than the per-file limit of 0.5 s of CPU time (`timeout`)")}
        assert result.returncode == 1 and result.stderr == ""
    ignored = tree.write("pyproject.toml", "[tool.rlguard]\ntimeout = 0.5\nper-file-ignores = { 'slow.py' = ['RLG998'] }\n")
    assert ignored and "slow.py" not in tree.run("check", "--no-cache", "--jobs", "1", ".").stdout


def found_message(found: set, path: str) -> str:
    return next(message for where, _, message in found if where == path)


def test_the_time_limit_counts_cpu_time_not_waiting():
    """A busy machine makes a file wait, not compute: waiting must never make it time out."""
    import time

    from rlguard.engine.analyze import FileTimeout, time_limit

    with time_limit(0.3) as fired:
        time.sleep(0.6)  # wall time passes, CPU time does not
    assert fired == [False]
    with pytest.raises(FileTimeout), time_limit(0.3):
        deadline = time.process_time() + 5
        while time.process_time() < deadline:
            pass


def test_unknown_code_in_a_suppression_is_reported(tree):
    tree.write("a.py", "x = 1  # noqa: RLG123, E501\n")
    result = tree.run("check", "--no-cache", ".")
    assert result.returncode == 1
    assert "a.py:1:1: RLG100 suppression names unknown rule code RLG123" in result.stdout
    assert "E501" not in result.stdout
