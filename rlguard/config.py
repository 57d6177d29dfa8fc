"""``[tool.rlguard]`` in the nearest pyproject.toml, validated into a frozen Config.

Every bad key or value is an error naming the file and the key: nothing is ignored silently.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from typing import Any, NamedTuple
from collections.abc import Mapping

from rlguard.engine.rule_info import RuleInfo
from rlguard.engine.toml_files import TomlError, read_toml
from rlguard.engine.suggest import closest
from rlguard.rules import CATALOG, ENGINE_CODES

_VERSION = re.compile(r"^\d+(\.\d+){0,2}([abc]|rc|\.dev|\.post)?\d*$")
_SPECIFIER_OPERATOR = re.compile(r"^(===|==|~=|>=|<=|!=|>|<)\s*")
_TOP_KEYS = ("extend", "select", "extend-select", "ignore", "exclude", "per-file-ignores", "target-torchrl", "rules", "timeout",
             "max-file-size", "include-vendored")


class ConfigError(Exception):
    """A configuration problem; its message is one line naming the file and the key."""


class Config(NamedTuple):
    path: str | None = None  # the pyproject.toml read, if any
    root: str = "."  # its directory: where relative excludes and the cache live
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()  # added to ``select`` (or to all rules); a --select replaces both
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    target_torchrl: str | None = None
    rule_options: Mapping[str, Mapping[str, Any]] = {}  # shared by every default Config: read only
    timeout: float = 120.0  # CPU seconds per file
    max_file_size: int = 10_000_000  # bytes
    # The rules the engine chooses from (select, ignore, target), by code: the engine is handed them
    # here and keeps no registry of its own. Shared by every default Config: read only.
    rules: Mapping[str, RuleInfo] = CATALOG
    include_vendored: bool = False  # check vendored torchrl/tensordict trees (at their own version)

    def excludes(self, path: str) -> bool:
        """Whether ``exclude`` matches this file (its path relative to the root, any folder on it, or its name)."""
        relative = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        parts = relative.split("/")
        folders = ["/".join(parts[:n]) for n in range(1, len(parts))]
        return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(parts[-1], p)
                   or any(fnmatch.fnmatch(f, p.rstrip("/")) or fnmatch.fnmatch(f.rpartition("/")[2], p.rstrip("/"))
                          for f in folders)
                   for p in self.exclude)

    def ignored_codes(self, path: str) -> list[str]:
        """Codes that ``per-file-ignores`` switches off for this file."""
        relative = os.path.relpath(path, self.root).replace(os.sep, "/")
        return [code for glob, codes in self.per_file_ignores if fnmatch.fnmatch(relative, glob) for code in codes]


def find_pyproject(start: str) -> str | None:
    current = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        candidate = os.path.join(current, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


_ROOT_MARKERS = (".git", ".hg", ".svn")


def project_root(start: str) -> str | None:
    """The nearest folder at or above ``start`` that holds a version-control marker (``.git``)."""
    current = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        if any(os.path.exists(os.path.join(current, marker)) for marker in _ROOT_MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def config_for(path: str) -> Config:
    """The configuration of one file: the nearest ``pyproject.toml`` with a ``[tool.rlguard]`` table,
    searched from the file's folder up to the project root. Without one, the defaults, rooted at the
    project root (or, outside any repository, the working folder), which is also where the cache goes."""
    folder = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path) or ".")
    return _config_in(folder, _root_of(folder))


@functools.lru_cache(maxsize=1024)
def _root_of(folder: str) -> str | None:
    """``project_root``, once per folder: a run asks for every file, and most share a folder."""
    return project_root(folder)


@functools.lru_cache(maxsize=256)
def _config_in(folder: str, root: str | None) -> Config:
    current = folder
    while True:
        candidate = os.path.join(current, "pyproject.toml")
        if os.path.isfile(candidate):
            document = _read_toml(candidate)
            if "rlguard" in document.get("tool", {}):
                return parse_config(document["tool"]["rlguard"], candidate)
        parent = os.path.dirname(current)
        if current == root or parent == current:
            return Config(root=root or os.path.abspath("."))
        current = parent


def clear_config_cache() -> None:
    """Forget configurations read so far (a long-lived process calls this when a pyproject.toml changes)."""
    _config_in.cache_clear()
    _root_of.cache_clear()


def _read_toml(path: str) -> dict[str, Any]:
    try:
        return read_toml(path)
    except TomlError as error:
        raise ConfigError(f"{path}: cannot read: {error}") from None


def load_config(start: str = ".") -> Config:
    path = find_pyproject(start)
    if path is None:
        return Config(root=os.path.abspath(start if os.path.isdir(start) else "."))
    section = _read_toml(path).get("tool", {}).get("rlguard", {})
    return parse_config(section, path)


def parse_config(section: Any, path: str, extended_by: tuple[str, ...] = ()) -> Config:
    """The validated settings of one ``[tool.rlguard]`` table, read from ``path``; with ``extend``,
    laid over the settings of the file it names."""
    where = f"{path}: [tool.rlguard]"
    if not isinstance(section, dict):
        raise ConfigError(f"{where} must be a table")
    for key in section:
        if key not in _TOP_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}{_did_you_mean(key, _TOP_KEYS)}")
    if "extend" in section:
        section = _extended(section, path, extended_by)
    select = section.get("select")
    return Config(
        path=path,
        root=os.path.dirname(os.path.abspath(path)),
        select=tuple(_codes(select, f"{where} select")) if select is not None else None,
        extend_select=tuple(_codes(section.get("extend-select", []), f"{where} extend-select")),
        ignore=tuple(_codes(section.get("ignore", []), f"{where} ignore")),
        exclude=tuple(_strings(section.get("exclude", []), f"{where} exclude")),
        per_file_ignores=_per_file_ignores(section.get("per-file-ignores", {}), where),
        target_torchrl=_version(section.get("target-torchrl"), f"{where} target-torchrl"),
        rule_options=_rule_options(section.get("rules", {}), where),
        timeout=_positive(section.get("timeout", 120.0), f"{where} timeout"),
        max_file_size=int(_positive(section.get("max-file-size", 10_000_000), f"{where} max-file-size")),
        include_vendored=_bool(section.get("include-vendored", False), f"{where} include-vendored"),
    )


def _extended(section: dict[str, Any], path: str, extended_by: tuple[str, ...]) -> dict[str, Any]:
    """``section`` laid over the ``[tool.rlguard]`` of the file its ``extend`` names (as ruff's
    ``extend``): a key set here replaces the base's, ``extend-select`` adds to the base's, and
    ``rules`` are merged rule by rule. The path is relative to the folder of ``path``; ``~`` and
    environment variables are expanded. The base is validated as its own file, so an error names it."""
    where = f"{path}: [tool.rlguard] extend"
    value = section["extend"]
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be the path of a pyproject.toml, got {value!r}")
    base_path = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expandvars(os.path.expanduser(value))))
    chain = (*extended_by, os.path.abspath(path))
    if base_path in chain:
        raise ConfigError(f"{where}: {value!r} extends itself (through {' -> '.join(chain)})")
    if not os.path.isfile(base_path):
        raise ConfigError(f"{where}: {base_path}: no such file")
    base = _read_toml(base_path).get("tool", {}).get("rlguard")
    if base is None:
        raise ConfigError(f"{where}: {base_path} has no [tool.rlguard] table")
    parse_config(base, base_path, chain)  # its own mistakes are reported against it
    if isinstance(base, dict) and "extend" in base:
        base = _extended(base, base_path, chain)
    merged = {**base, **section}
    merged.pop("extend")
    merged["extend-select"] = [*_listed(base.get("extend-select")), *_listed(section.get("extend-select"))]
    own_rules = section.get("rules", {})
    if isinstance(own_rules, dict):  # otherwise left as it is, for its error
        rules = dict(base.get("rules", {}))
        for code, table in own_rules.items():
            rules[code] = {**rules[code], **table} if isinstance(table, dict) and isinstance(rules.get(code), dict) else table
        merged["rules"] = rules
    return merged


def _listed(codes: Any) -> list[str]:
    """``extend-select`` as a list (one comma-separated string is allowed, as for every code list)."""
    if codes is None:
        return []
    return codes.split(",") if isinstance(codes, str) else list(codes)


def config_file(path: str) -> Config:
    """The configuration ``--config PATH`` names, for every file of the run: the ``[tool.rlguard]``
    table of that TOML file (the defaults if it has none), rooted at its folder."""
    if not os.path.isfile(path):
        raise ConfigError(f"--config: {path}: no such file")
    section = _read_toml(path).get("tool", {}).get("rlguard")
    if section is None:
        return Config(path=os.path.abspath(path), root=os.path.dirname(os.path.abspath(path)))
    return parse_config(section, os.path.abspath(path))


def validate_codes(codes: Any, where: str) -> list[str]:
    """Rule codes from config or the command line; unknown codes are errors."""
    return _codes(codes, where)


def validate_version(value: str | None, where: str) -> str | None:
    return _version(value, where)


def _did_you_mean(word: str, choices: Any) -> str:
    close = closest(word, choices)
    return f" (did you mean {close!r}?)" if close else ""


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings, got {value!r}")
    return value


def _codes(value: Any, where: str) -> list[str]:
    codes = [c.strip().upper() for c in (value.split(",") if isinstance(value, str) else _strings(value, where))]
    known = set(CATALOG) | set(ENGINE_CODES)
    for code in codes:
        if code == "ALL" or code in known or any(k.startswith(code) for k in known) and code.startswith("RLG"):
            continue
        # Compared without separators (`RLG_001`, `rlg-001`); ``ALL`` is a choice too.
        raise ConfigError(f"{where}: unknown rule code {code!r}{_did_you_mean(re.sub(r'[^A-Z0-9]', '', code), ['ALL', *sorted(known)])}")
    return codes


def _version(value: Any, where: str) -> str | None:
    """A version (``0.14``), or a range as a pin writes it (``>=0.11,<0.15``): each clause's version checked."""
    if value is None:
        return None
    clauses = [c.strip() for c in value.split(",")] if isinstance(value, str) else []
    versions = [_SPECIFIER_OPERATOR.sub("", c, count=1).removesuffix(".*") for c in clauses]
    if not clauses or not all(_VERSION.match(v) for v in versions) \
            or (len(clauses) > 1 and not all(_SPECIFIER_OPERATOR.match(c) for c in clauses)):
        raise ConfigError(f"{where}: {value!r} is not a version like '0.14' or '0.14.1', or a range like '>=0.11,<0.15'")
    return value.strip()


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def _positive(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{where} must be a positive number, got {value!r}")
    return float(value)


def _per_file_ignores(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} per-file-ignores must be a table of glob = [codes]")
    return tuple((glob, tuple(_codes(codes, f"{where} per-file-ignores {glob!r}"))) for glob, codes in value.items())


def _rule_options(value: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} rules must be a table of [tool.rlguard.rules.RLGxxx] tables")
    options: dict[str, dict[str, Any]] = {}
    for code, table in value.items():
        rule = CATALOG.get(code)
        if rule is None:
            raise ConfigError(f"{where}.rules: unknown rule code {code!r}{_did_you_mean(code, CATALOG)}")
        if not isinstance(table, dict):
            raise ConfigError(f"{where}.rules.{code} must be a table")
        declared = {option.name: option for option in rule.options}
        for key, setting in table.items():
            option = declared.get(key)
            if option is None:
                hint = _did_you_mean(key, declared) or (f"; {code} has options: {', '.join(declared)}" if declared else f"; {code} has no options")
                raise ConfigError(f"{where}.rules.{code}: unknown option {key!r}{hint}")
            _check_option_type(setting, option.kind, f"{where}.rules.{code}.{key}")
        options[code] = dict(table)
    return options


def _check_option_type(value: Any, kind: type, where: str) -> None:
    if kind is list:
        _strings(value, where)
    elif kind is bool and not isinstance(value, bool) or kind is not bool and (isinstance(value, bool) or not isinstance(value, kind)):
        raise ConfigError(f"{where} must be a {kind.__name__}, got {value!r}")
