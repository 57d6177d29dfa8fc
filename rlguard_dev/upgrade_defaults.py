"""Defaults that changed between releases, from the released sources (read by ``upgrade_table``, nothing imported).

Old code that relied on a default runs on a newer release and means something else, or fails far from the
cause. Each entry names the class, the parameter or key, the old and the new value, the first release with the
new one, and how it was found (``found``):

- ``hard-coded``: a value one release set as a constant (``process.daemon = True`` in ``ParallelEnv``, torchrl
  0.10) that the next release takes from a new constructor parameter (``process.daemon = self.daemon``) whose
  default differs (``daemon=False``, 0.11), and the newest release still has. Old code never passed the
  parameter: passing the old value keeps its meaning.
- ``accepted-keys``: a loss's ``_AcceptedKeys`` field whose literal default changed between two releases that
  both define it, where the older release read the field (``self.tensor_keys.<field>``: a key it never read
  had no meaning to keep). ``loss.set_keys(<field>=<old>)`` keeps the old meaning.
- ``review``: where the older release hard-coded a key instead of defining ``_AcceptedKeys``, which of its
  literal keys became which field is not in the source (``DiscreteSACLoss`` read its Q-values at
  ``"state_value"``, the default of the new ``value`` field, yet they became ``action_value``). Such entries
  are written by hand in ``HAND_TENSOR_KEYS`` with their reason, and checked against the wheels: the older
  release's class reads the old key as a literal, the newer one defines the field with the new default.

A default computed at run time (``sample_log_prob: NestedKey = None`` from torchrl 0.7, settled in
``__post_init__`` from ``composite_lp_aggregate``) or named by a constant is not compared: the source does not
hold its value.
"""

from __future__ import annotations

import ast
from typing import Any

from rlguard_dev.upgrade_changes import _bases, _classes, _home, _init, constructor
from rlguard_dev.upgrade_table import Release, _minor, _newest_locations

# Keys a loss hard-coded before it had ``_AcceptedKeys``: (class, field) -> (old key, release of the change, reason).
HAND_TENSOR_KEYS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("DiscreteSACLoss", "action_value"): (
        "state_value", "0.2.1",
        "torchrl 0.1's DiscreteSACLoss read the Q-network's output at the literal \"state_value\" "
        "(`tensordict_qval.get(\"state_value\")`); 0.2 rewrote the loss to read it at `tensor_keys.action_value`, "
        "while its `value` field (default \"state_value\") names the value estimator's key"),
}
_MISSING = object()


def _literal(node: ast.expr | None) -> Any:
    try:
        return ast.literal_eval(node) if node is not None else _MISSING
    except ValueError:
        return _MISSING


def _package(releases: list[Release]) -> str:
    return next(iter(releases[-1].modules)).split(".")[0]


def _source(value: Any) -> str:
    """A value as Python source, a string in double quotes (as most code writes them, ruff's format included)."""
    return f'"{value}"' if isinstance(value, str) and value.isprintable() and '"' not in value and "\\" not in value \
        else repr(value)


def _constant_assignments(node: ast.ClassDef) -> dict[str, Any]:
    """``<target>.<attribute> = <constant>`` anywhere in the class: the target's text -> the constant."""
    found = {}
    for statement in ast.walk(node):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Attribute):
            value = _literal(statement.value)
            if value is not _MISSING:
                found[ast.unparse(statement.targets[0])] = value
    return found


def _parameter_assignments(node: ast.ClassDef) -> dict[str, str]:
    """``<target>.<attribute> = self.<name>``: the target's text -> the name."""
    found = {}
    for statement in ast.walk(node):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Attribute) and isinstance(statement.value, ast.Attribute) \
                and isinstance(statement.value.value, ast.Name) and statement.value.value.id == "self":
            found[ast.unparse(statement.targets[0])] = statement.value.attr
    return found


def _default(classes: dict[str, tuple[str, ast.ClassDef]], name: str, parameter: str) -> Any:
    """The default of ``parameter`` in the nearest constructor of ``name``'s classes that takes it and stores it
    as ``self.<parameter> = <parameter>``; ``_MISSING`` when none does."""
    for base in _bases(classes, name):
        init = _init(classes[base][1])
        if init is None:
            continue
        args = init.args
        positional = [*args.posonlyargs, *args.args]
        defaults: dict[str, ast.expr | None] = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults):],
                                                        args.defaults, strict=True))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)})
        stored = any(isinstance(s, ast.Assign) and ast.unparse(s) == f"self.{parameter} = {parameter}"
                     for s in ast.walk(init))
        if parameter in defaults and stored:
            return _literal(defaults[parameter])
    return _MISSING


def hard_coded_parameters(releases: list[Release]) -> list[dict]:
    """Constants of one release that a new constructor parameter of the next sets, with another default."""
    tables = [_classes(r) for r in releases]
    homes = _newest_locations(releases[-1])
    entries: dict[tuple[str, str], dict] = {}
    for index in range(len(releases) - 1):
        old, new = tables[index], tables[index + 1]
        for name in sorted(set(old) & set(new) & set(tables[-1])):
            constants = _constant_assignments(old[name][1])
            before = constructor(old, name)
            for target, parameter in sorted(_parameter_assignments(new[name][1]).items()):
                value = constants.get(target, _MISSING)
                default = _default(new, name, parameter)
                if value is _MISSING or default is _MISSING or value == default or (name, parameter) in entries \
                        or before is None or parameter in before.params or _default(tables[-1], name, parameter) != default:
                    continue
                module = _home(releases[-1], name, homes.get(name, []), new[name][0])
                entries[(name, parameter)] = {
                    "kind": "parameter", "package": _package(releases), "module": module, "class": name, "name": parameter,
                    "old": _source(value), "new": _source(default), "changed_in": _minor(releases[index + 1].version),
                    "found": "hard-coded", "fix": "unsafe",
                    "note": f"`{target} = {_source(value)}` up to {releases[index].version}; "
                            f"`{target} = self.{parameter}` from {releases[index + 1].version}"}
    return list(entries.values())


def _accepted_keys(node: ast.ClassDef) -> dict[str, Any] | None:
    """A class's ``_AcceptedKeys`` fields and their literal defaults (``_MISSING`` for others); None without one."""
    inner = next((s for s in node.body if isinstance(s, ast.ClassDef) and s.name == "_AcceptedKeys"), None)
    if inner is None:
        return None
    return {s.target.id: _literal(s.value) for s in inner.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None}


def _reads_field(node: ast.ClassDef, field: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == field and isinstance(n.value, ast.Attribute)
               and n.value.attr in ("tensor_keys", "_tensor_keys") for n in ast.walk(node))


def _reads_literal(node: ast.ClassDef, key: str) -> bool:
    """``<x>.get("<key>")`` or ``<x>["<key>"]`` in the class."""
    return any((isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args
                and isinstance(n.args[0], ast.Constant) and n.args[0].value == key)
               or (isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == key)
               for n in ast.walk(node))


def _key_entry(releases: list[Release], name: str, field: str, old: Any, new: Any, changed: str, found: str,
               note: str) -> dict:
    homes = _newest_locations(releases[-1])
    defined = _classes(releases[-1])[name][0]
    return {"kind": "tensor-key", "package": _package(releases), "module": _home(releases[-1], name, homes.get(name, []), defined),
            "class": name, "name": field, "old": _source(old), "new": _source(new), "changed_in": _minor(changed),
            "found": found, "fix": "unsafe", "note": note}


def tensor_key_defaults(releases: list[Release]) -> list[dict]:
    """Losses' key defaults that changed: from ``_AcceptedKeys`` where both releases define it, else
    ``HAND_TENSOR_KEYS`` (checked against the wheels)."""
    tables = [_classes(r) for r in releases]
    entries: dict[tuple[str, str], dict] = {}
    for index in range(len(releases) - 1):
        for name in sorted(set(tables[index]) & set(tables[index + 1]) & set(tables[-1])):
            if not name.endswith("Loss"):
                continue
            node = tables[index][name][1]
            before, after = _accepted_keys(node), _accepted_keys(tables[index + 1][name][1])
            for field, new in sorted((after or {}).items()):
                old = (before or {}).get(field, _MISSING)
                if old in (_MISSING, None) or new in (_MISSING, None) or old == new or not _reads_field(node, field):
                    continue
                entries[(name, field)] = _key_entry(releases, name, field, old, new, releases[index + 1].version,
                                                    "accepted-keys", "")
    versions = [r.version for r in releases]
    for (name, field), (old, version, reason) in sorted(HAND_TENSOR_KEYS.items()):
        if version not in versions[1:]:
            continue  # a table of other releases
        index = versions.index(version)
        previous, changed = tables[index - 1].get(name), tables[index].get(name)
        new = (_accepted_keys(changed[1]) or {}).get(field, _MISSING) if changed else _MISSING
        if previous is None or _accepted_keys(previous[1]) is not None or not _reads_literal(previous[1], old) \
                or not isinstance(new, str):
            raise ValueError(f"HAND_TENSOR_KEYS[{name}.{field}]: the wheels of {releases[index - 1].version} and "
                             f"{version} do not show a hard-coded {old!r} becoming that field")
        entries[(name, field)] = _key_entry(releases, name, field, old, new, version, "review", reason)
    return sorted(entries.values(), key=lambda e: (e["class"], e["name"]))


def changed_defaults(releases: list[Release]) -> list[dict]:
    """Every entry, sorted by class and name."""
    return sorted(hard_coded_parameters(releases) + tensor_key_defaults(releases), key=lambda e: (e["class"], e["name"]))
