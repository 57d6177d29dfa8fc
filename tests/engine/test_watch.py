"""`rlguard check --watch`, run as a user runs it: a real process, real file edits, then terminated."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from rlguard.watch import relevant
from tests.helpers import OLD_IMPORT

pytest.importorskip("watchdog")

WATCHING = "Watching for file changes (Ctrl-C to stop)."


class Watcher:
    """`rlguard check --watch` in a subprocess, its output lines collected as they come."""

    def __init__(self, root: str, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "rlguard", "check", "--watch", "--no-cache",
                                         "--output-format", "concise", *args], cwd=root, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_run(self, timeout: float = 60) -> list[str]:
        """The lines of the next run, up to the watching notice."""
        found, deadline = [], time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            if line == WATCHING:
                return found
            found.append(line)


def test_a_change_is_checked_again_until_the_process_is_stopped(tree):
    tree.write("a.py", "x = 1\n")
    watcher = Watcher(tree.root, ".")
    try:
        assert watcher.next_run() == ["All checks passed (1 file checked)."]
        time.sleep(0.5)  # the observer is armed once the first run is announced; leave it a moment
        tree.write("a.py", OLD_IMPORT)
        second = watcher.next_run()
        assert second[0].startswith("a.py:1:32: RLG006 ") and second[-1] == "1 fixable with `rlguard fix` ([*])."
        tree.write("pyproject.toml", "[tool.rlguard]\nignore = ['RLG006']\n")  # a configuration change counts too
        assert watcher.next_run() == ["All checks passed (1 file checked)."]
        tree.write(".rlguard_cache/x.py", "import os\n")  # rlguard's own cache folder does not
        tree.write("notes.txt", "hello\n")  # nor does a file no run reads
        with pytest.raises(queue.Empty):
            watcher.lines.get(timeout=2)
    finally:
        watcher.process.send_signal(signal.SIGINT)  # Ctrl-C
        code = watcher.process.wait(timeout=60)
    assert code == 130
    assert not any("Traceback" in line for line in list(watcher.lines.queue))


def test_watch_refuses_stdin_and_missing_paths(tree):
    for args in (["-"], ["missing"]):
        result = tree.run("check", "--watch", *args)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr


def test_what_counts_as_a_change():
    assert relevant("src/a.py") and relevant("nb.ipynb") and relevant("pyproject.toml") and relevant("stubs/x.pyi")
    assert not relevant(os.path.join(".rlguard_cache", "ab", "x.py")) and not relevant("notes.txt")
    assert not relevant(os.path.join(".git", "HEAD.py")) and not relevant(os.path.join("src", "__pycache__", "a.py"))


def test_without_watchdog_one_line_says_what_to_install(tree):
    script = ("import sys; sys.modules['watchdog'] = None; from rlguard.cli import main; "
              "sys.exit(main(['check', '--watch', '.']))")  # None in sys.modules: the import fails
    result = subprocess.run([sys.executable, "-c", script], cwd=tree.root, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: --watch needs the `watch` extra, watchdog (`pip install watchdog`)")
    assert len(result.stderr.splitlines()) == 1
