"""Which torchrl version the rules judge against, and where that answer came from."""

from __future__ import annotations

import glob
import os
import re
import sys
from dataclasses import dataclass

from rlguard.engine.project import project_root as find_project_root, vendored_library

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# The newest torchrl release the rules were written against; the default target.
NEWEST_KNOWN_TORCHRL = (0, 14, 1)

_SPEC = re.compile(r"^\s*torchrl\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)", re.IGNORECASE)
_CLAUSE = re.compile(r"(?P<op>===|==|~=|>=|<=|!=|>|<)\s*(?P<version>[0-9][0-9A-Za-z.*+!-]*)")


@dataclass(frozen=True)
class Target:
    version: tuple[int, ...]
    source: str  # "flag", "config", "pin in <file>", "installed", "default"

    @property
    def text(self) -> str:
        return ".".join(map(str, self.version))


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
    if config_value:
        return Target(parse_version(config_value), "config")
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
            with open(pyproject, "rb") as handle:
                dependencies = tomllib.load(handle).get("project", {}).get("dependencies", [])
        except (OSError, tomllib.TOMLDecodeError):
            dependencies = []
        found = _from_lines(dependencies if isinstance(dependencies, list) else [])
        if found is not None:
            return Target(found, f"pin in {pyproject}")
    for requirements in sorted(glob.glob(os.path.join(root, "requirements*.txt"))):
        try:
            with open(requirements, encoding="utf-8", errors="replace") as handle:
                found = _from_lines(handle.read().splitlines())
        except OSError:
            continue
        if found is not None:
            return Target(found, f"pin in {requirements}")
    return None


def _from_lines(lines: list) -> tuple[int, ...] | None:
    for line in lines:
        match = _SPEC.match(str(line)) if isinstance(line, str) else None
        if match and match.group("spec").strip():
            low = lowest_admitted(match.group("spec"))
            if low is not None:
                return low
    return None
