"""``rlguard check --watch``: run, then run again whenever a checked file or a configuration changes.

File events come from watchdog (the ``watch`` extra), which uses the platform's notifications
(inotify, FSEvents, ReadDirectoryChangesW). A burst of events (an editor's save, a ``git
checkout``) gives one run. Each run is the whole ``check`` again, served by the result cache, so
findings that depend on other files follow their changes too. Ctrl-C ends it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence

from rlguard.config import clear_config_cache
from rlguard.engine.discovery import SKIPPED_DIRS, SUFFIXES

DEBOUNCE_S = 0.3  # events closer together than this give one run
_CONFIG_SUFFIX = ".toml"  # pyproject.toml, a file `extend` names, the one `--config` names


class WatchUnavailable(Exception):
    """watchdog is not installed."""


def relevant(path: str) -> bool:
    """Whether a change to ``path`` can change a verdict: a source file or a TOML configuration,
    outside the folders discovery never enters (the cache, version control, virtual environments)."""
    parts = path.replace(os.sep, "/").split("/")
    return path.endswith((*SUFFIXES, _CONFIG_SUFFIX)) and not any(part in SKIPPED_DIRS for part in parts[:-1])


def watch(paths: Sequence[str], run: Callable[[], object]) -> int:
    """Call ``run`` now and after every relevant change under ``paths``, until interrupted."""
    try:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer
    except ImportError as error:
        raise WatchUnavailable(f"--watch needs the `watch` extra, watchdog (`pip install watchdog`): {error}") from None

    changed = threading.Event()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type in ("opened", "closed_no_write"):
                return  # reading a file changes nothing (rlguard's own reads included)
            names = (event.src_path, getattr(event, "dest_path", "") or "")
            if any(relevant(os.fsdecode(name)) for name in names if name):
                changed.set()

    observer = Observer()
    for folder in sorted({os.path.abspath(p if os.path.isdir(p) else os.path.dirname(p) or ".") for p in paths or ["."]}):
        observer.schedule(Handler(), folder, recursive=True)
    observer.start()
    try:
        while True:
            _announce()
            run()
            _announce("Watching for file changes (Ctrl-C to stop).")
            changed.wait()
            while changed.wait(DEBOUNCE_S):  # let a burst of events settle
                changed.clear()
            clear_config_cache()  # an edited pyproject.toml applies to the next run
    finally:
        observer.stop()
        observer.join()


def _announce(line: str | None = None) -> None:
    """Flush what the run printed (a pipe would hold it back), then say what happens next."""
    sys.stdout.flush()
    if line:
        print(line, file=sys.stderr, flush=True)
