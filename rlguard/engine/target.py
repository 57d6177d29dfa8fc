"""Which torchrl version the rules judge against, and where that answer came from.

A pin admits a range, and the code must run on every version in it. A removed API breaks on the
newest version the range admits, so a pin is judged at its newest admitted release (the newest known
one when the range is open above: ``torchrl>=0.7`` resolves to today's torchrl on a fresh install).
``Target.lowest`` keeps the lowest admitted version for behaviour that only old releases have.
``--target-torchrl X`` and ``target-torchrl`` in the config pin exactly one version.
"""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any, NamedTuple

from rlguard.engine.project import project_root as find_project_root, vendored_library
from rlguard.engine.toml_files import TomlError, read_toml

# The newest torchrl release the rules were written against; the default target.
NEWEST_KNOWN_TORCHRL = (0, 14, 1)
# The removed-API table (rlguard_dev/upgrade_table.py) records the releases it was generated from.
REMOVED_API_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules", "removed_api.json")
RELEASES_FILE = os.path.join(os.path.dirname(REMOVED_API_FILE), "releases.json")  # the table's "generated_from"

_SPEC = re.compile(r"^\s*torchrl\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)", re.IGNORECASE)
_CLAUSE = re.compile(r"(?P<op>===|==|~=|>=|<=|!=|>|<)\s*(?P<version>[0-9][0-9A-Za-z.*+!-]*)")


class Target(NamedTuple):
    version: tuple[int, ...]  # the version removals are judged against: a pin's newest admitted one
    source: str  # "flag", "config", "pin ... in <file>", "installed", "default"
    lowest: tuple[int, ...] | None = None  # a pin's lowest admitted version; else the same as ``version``

    @property
    def oldest(self) -> tuple[int, ...]:
        """The version to judge behaviour that only older releases have."""
        return self.lowest if self.lowest is not None else self.version

    @property
    def text(self) -> str:
        return version_text(self.version)


def version_text(version: tuple[int, ...] | None) -> str:
    """A release as every message writes it: ``0.14.1``, or ``?`` when unknown."""
    return ".".join(map(str, version)) if version else "?"


def parse_version(text: str) -> tuple[int, ...]:
    """'0.11.0rc1' -> (0, 11, 0); pre-release tags count as the release they precede."""
    parts = []
    for piece in text.split(".")[:3]:
        digits = re.match(r"\d+", piece)
        if not digits:
            break
        parts.append(int(digits.group()))
    return tuple(parts) or (0,)


def lowest_admitted(spec: str) -> tuple[int, ...] | None:
    """The lowest version a requirement specifier admits, e.g. '>=0.6,<0.9' -> (0, 6)."""
    lows = []
    for match in _CLAUSE.finditer(spec):
        op, version = match.group("op"), parse_version(match.group("version").rstrip(".*"))
        if op in ("==", "===", "~=", ">="):
            lows.append(version)
        elif op == ">":
            lows.append(version[:-1] + (version[-1] + 1,))
    return max(lows) if lows else None


def newest_admitted(spec: str) -> tuple[int, ...] | None:
    """The newest known release a specifier admits: '>=0.7' -> the newest known torchrl, '>=0.6,<0.9'
    -> (0, 8, 1), '==0.7.2' -> (0, 7, 2). None when it admits no known release."""
    admitted = [v for v in (*known_releases(), NEWEST_KNOWN_TORCHRL) if satisfies(v, spec)]
    if not admitted:
        exact = [m for m in _CLAUSE.finditer(spec) if m.group("op") in ("==", "===") and "*" not in m.group("version")]
        return parse_version(exact[0].group("version")) if exact else None
    return max(admitted)


@functools.cache
def removed_api_table() -> dict[str, Any]:
    """The removed-API table as generated (rlguard_dev/upgrade_table.py), read once per process: RLG006 and
    RLG007 build their entries from it, pins their known releases."""
    with open(REMOVED_API_FILE, encoding="utf-8") as handle:
        return json.load(handle)


@functools.cache
def known_releases() -> tuple[tuple[int, ...], ...]:
    """The torchrl releases the removed-API table was generated from, as its generator wrote them beside
    it: a pin needs them in every run, and the table itself (230 kB of JSON) only a run that parses."""
    with open(RELEASES_FILE, encoding="utf-8") as handle:
        return tuple(parse_version(v) for v in json.load(handle)["torchrl"])


def satisfies(version: tuple[int, ...], spec: str) -> bool:
    """Whether a version meets every clause of a specifier like '>=0.14.3,<0.15.0'."""
    for match in _CLAUSE.finditer(spec):
        op, raw = match.group("op"), match.group("version")
        wanted = parse_version(raw.rstrip(".*"))
        width = max(len(version), len(wanted))
        have, want = version + (0,) * (width - len(version)), wanted + (0,) * (width - len(wanted))
        if raw.endswith(".*"):
            have, want = have[: len(wanted)], want[: len(wanted)]
        ok = {
            "==": have == want, "===": have == want, "!=": have != want, ">=": have >= want,
            "<=": have <= want, ">": have > want, "<": have < want,
            "~=": have >= want and have[: len(wanted) - 1] == want[: len(wanted) - 1],
        }[op]
        if not ok:
            return False
    return True


def resolve_target(flag: str | None, config_value: str | None, project_root: str) -> Target:
    if flag:
        return Target(parse_version(flag), "flag")
    if config_value and config_value[0].isdigit():
        return Target(parse_version(config_value), "config")
    if config_value:  # a range, read as a pin: judged at its newest release, its lowest bounds it below
        newest = newest_admitted(config_value) or NEWEST_KNOWN_TORCHRL
        return Target(newest, f"target-torchrl = \"{config_value}\" in the config", lowest_admitted(config_value))
    vendored = vendored_library(find_project_root(project_root), "torchrl")
    if vendored is not None and vendored[1]:  # the project's own copy is what its code imports
        return Target(parse_version(vendored[1]), f"vendored copy in {vendored[0]}")
    pinned = _pinned(project_root)
    if pinned is not None:
        return pinned
    from importlib import metadata  # costs about a third of Python's start-up; most projects pin

    try:
        return Target(parse_version(metadata.version("torchrl")), "installed")
    except metadata.PackageNotFoundError:
        return Target(NEWEST_KNOWN_TORCHRL, "default")


def _pinned(root: str) -> Target | None:
    pyproject = os.path.join(root, "pyproject.toml")
    if os.path.isfile(pyproject):
        try:
            dependencies = read_toml(pyproject).get("project", {}).get("dependencies", [])
        except TomlError:
            dependencies = []
        found = _from_lines(dependencies if isinstance(dependencies, list) else [], pyproject)
        if found is not None:
            return found
    for requirements in _requirements_files(root):
        try:
            with open(requirements, encoding="utf-8", errors="replace") as handle:
                found = _from_lines(handle.read().splitlines(), requirements)
        except OSError:
            continue
        if found is not None:
            return found
    return None


def _requirements_files(root: str) -> list[str]:
    """``requirements*.txt`` in a folder, by name (a listing: the glob module costs more than the search)."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return sorted(os.path.join(root, n) for n in names if n.startswith("requirements") and n.endswith(".txt"))


def _from_lines(lines: list, where: str) -> Target | None:
    for line in lines:
        match = _SPEC.match(str(line)) if isinstance(line, str) else None
        spec = match.group("spec").strip() if match else ""
        newest = newest_admitted(spec) if spec else None
        if newest is not None:
            shown = version_text(newest)
            return Target(newest, f"pin torchrl{spec} in {where} (judged at {shown}, its newest admitted release)",
                          lowest_admitted(spec))
    return None
