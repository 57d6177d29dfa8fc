"""Build the removed-API table (rlguard/rules/removed_api.json) from the real torchrl and tensordict wheels.

``python -m rlguard_dev.upgrade_table --write`` downloads each release's wheel (``pip download --no-deps``)
into a cache folder (tests/fixtures/wheels by default, git-ignored), reads the sources with ``ast``
(nothing is imported), and writes the table. ``--check`` compares the shipped table instead.

What it derives, release after release:
- a public name (class, function or re-export of a public module) present in one release and absent
  from the next and from every later one is *removed* in that next release;
- a name whose definition carries a deprecation warning or docstring is *deprecated* from the first
  release that says so, even while it still exists;
- a public method, or a keyword of a public function or method, that disappears while its last
  release warned about it is removed too (only those: an undocumented change has no evidence).

The replacement comes from the evidence, in this order, and ``how`` says which one gave it:
``message`` (upstream's warning or docstring names it), ``subclass`` (a deprecated shim subclassing
one class), ``alias`` (``Old = New``), ``moved`` (the same name still defined in another public module
of the newest release), or nothing.
"""

from __future__ import annotations

import argparse
import ast
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from rlguard.engine.generated import is_current, write_generated
from rlguard.engine.target import RELEASES_FILE, REMOVED_API_FILE

# The newest patch of each minor release, from the first on the index. tensordict's minor follows torchrl's
# (torchrl 0.N requires tensordict 0.N); tensordict releases past the newest torchrl are left out.
RELEASES: dict[str, tuple[str, ...]] = {
    "torchrl": ("0.0.5", "0.1.1", "0.2.1", "0.3.1", "0.4.0", "0.5.0", "0.6.0", "0.7.2", "0.8.1", "0.9.2", "0.10.1",
                "0.11.1", "0.12.0", "0.13.3", "0.14.1"),
    "tensordict": ("0.0.3", "0.1.2", "0.2.1", "0.3.2", "0.4.0", "0.5.0", "0.6.2", "0.7.2", "0.8.3", "0.9.1", "0.10.0",
                   "0.11.0", "0.12.4", "0.13.0", "0.14.3"),
}
# torchrl 0.0 and 0.1 have no wheel for Python 3.11: the newest Python each has one for is read instead
# (the sources are read, not run).
_PYTHONS = ("3.11", "3.10")
DEFAULT_CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "wheels")

_DEPRECATED = re.compile(r"deprecat", re.IGNORECASE)
_REMOVED_IN = re.compile(r"removed\s+(?:in|from|by)\s+(?:torchrl\s+|tensordict\s+)?v?(\d+\.\d+)", re.IGNORECASE)
_USE = re.compile(
    r"(?:please\s+use|use|replaced\s+by|in\s+favou?r\s+of|renamed\s+to|deprecated\s+version\s+of)\s+"
    r"(?::(?:class|func|meth):)?[`'\"]*~?(?:\{\}\.)?([A-Za-z_][\w.]*)(\(\))?", re.IGNORECASE)  # ``{type(self)}.low``
_NOT_NAMES = frozenset({"the", "a", "an", "it", "this", "that", "instead", "torchrl", "tensordict", "of", "to",
                        "with", "set_keys", "self", "in"})


@dataclass
class Definition:
    node: ast.AST  # ClassDef, FunctionDef or Assign (alias)
    module: str
    extra: list[ast.AST] = field(default_factory=list)  # a legacy metaclass that warns for the class
    alias_of: str | None = None  # ``Old = New``
    _texts: list[str] | None = None

    @property
    def texts(self) -> list[str]:
        """The strings that speak about this definition (read on demand: most are never asked)."""
        if self._texts is None:
            self._texts = _strings(self.node) + [t for n in self.extra for t in _strings(n)]
        return self._texts


@dataclass
class ModuleFacts:
    is_package: bool = False
    names: dict[str, tuple[str, str]] = field(default_factory=dict)  # public name -> (origin module, origin name)
    defs: dict[str, Definition] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)  # modules star-imported
    explicit_all: list[str] | None = None
    module_aliases: dict[str, str] = field(default_factory=dict)  # ``sys.modules["m.old"] = new``: old -> new
    # Other names the module binds: imports from other packages (tensordict.utils' ``implement_for``
    # comes from ``pyvers`` since 0.9), ``import x``, plain assignments. ``from module import name``
    # finds them, so a name that becomes one of them is not removed; they are never offered as public.
    other_bound: set[str] = field(default_factory=set)
    # ``from .llm import as_nested_tensor`` at the top level, outside any ``try``/``if``: the module
    # fails to import when the origin lacks the name (torchrl 0.10.1's transforms.rlhf did).
    required: list[tuple[str, str]] = field(default_factory=list)


# ----- reading one release -----

def _module_name(path: str) -> str:
    parts = path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _strings(node: ast.AST) -> list[str]:
    """String constants under a node; an f-string's constant parts are joined (placeholders as ``{}``)."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.JoinedStr):
            found.append("".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                                 for v in sub.values))
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found.append(sub.value)
    return [" ".join(" ".join(found).split())]


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, through ``if``/``try`` blocks (optional imports)."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _top_statements(statement.body + statement.orelse)
        elif isinstance(statement, ast.Try):
            yield from _top_statements(statement.body + statement.orelse
                                       + [s for h in statement.handlers for s in h.body])
        else:
            yield statement


def _read_module(source: str, module: str, is_package: bool, package: str) -> ModuleFacts | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    facts = ModuleFacts(is_package)
    classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and (origin := _resolve(module, is_package, statement.level,
                                                                          statement.module)).split(".")[0] == package:
            facts.required += [(origin, alias.name) for alias in statement.names if alias.name != "*"]
    for statement in _top_statements(tree.body):
        if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            definition = Definition(statement, module)
            if isinstance(statement, ast.ClassDef):
                for keyword in statement.keywords:  # a legacy metaclass carries the class's warning
                    if keyword.arg == "metaclass" and isinstance(keyword.value, ast.Name) \
                            and keyword.value.id in classes:
                        definition.extra.append(classes[keyword.value.id])
            facts.defs[statement.name] = definition
            facts.names[statement.name] = (module, statement.name)
        elif isinstance(statement, ast.ImportFrom):
            origin = _resolve(module, is_package, statement.level, statement.module)
            if origin.split(".")[0] != package:
                facts.other_bound.update(alias.asname or alias.name for alias in statement.names if alias.name != "*")
                continue
            for alias in statement.names:
                if alias.name == "*":
                    facts.stars.append(origin)
                else:
                    facts.names[alias.asname or alias.name] = (origin, alias.name)
        elif isinstance(statement, ast.Assign) and (module_alias := _module_alias(statement, module)) is not None:
            name, target = module_alias
            facts.module_aliases[name] = target
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 and \
                isinstance(statement.targets[0], ast.Name):
            name = statement.targets[0].id
            if name == "__all__" and isinstance(statement.value, (ast.List, ast.Tuple)):
                facts.other_bound.add(name)
                facts.explicit_all = [e.value for e in statement.value.elts
                                      if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            elif isinstance(statement.value, ast.Name) and statement.value.id in facts.names:
                facts.names[name] = facts.names[statement.value.id]  # ``Old = New``: an alias
                facts.defs[name] = Definition(statement, module, alias_of=statement.value.id)
            else:
                facts.other_bound.add(name)
        elif isinstance(statement, ast.Import):
            facts.other_bound.update(alias.asname or alias.name.partition(".")[0] for alias in statement.names)
        else:
            facts.other_bound |= _stored_names(statement)
    return facts


def _stored_names(statement: ast.stmt) -> set[str]:
    """Module-level names a statement binds (``a, b = ...``, ``X: int = 0``, ``for``, ``with ... as``),
    not those of the functions, classes, lambdas or comprehensions inside it."""
    found: set[str] = set()
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            continue
        if not isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _module_alias(statement: ast.Assign, module: str) -> tuple[str, str] | None:
    """``sys.modules[f"{__name__}.old"] = new``: a module kept importable under an old name."""
    target = statement.targets[0] if len(statement.targets) == 1 else None
    if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)
            and target.value.attr == "modules" and isinstance(statement.value, ast.Name)):
        return None
    key = target.slice
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value, statement.value.id
    if isinstance(key, ast.JoinedStr) and len(key.values) == 2 and isinstance(key.values[1], ast.Constant):
        return module + str(key.values[1].value), statement.value.id
    return None


@dataclass
class Release:
    version: str
    modules: dict[str, ModuleFacts]
    _public: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)  # asked once per name otherwise
    _bound: dict[str, set[str]] = field(default_factory=dict)
    _imports: dict[str, bool] = field(default_factory=dict)

    def public(self, module: str) -> dict[str, tuple[str, str]]:
        """The names a public module offers: ``__all__``, else its public definitions and re-exports."""
        if module not in self._public:
            self._public[module] = self._read_public(module)
        return self._public[module]

    def _read_public(self, module: str) -> dict[str, tuple[str, str]]:
        facts = self.modules[module]
        names = dict(facts.names)
        for star in facts.stars:
            if star in self.modules and star != module:
                names.update(self.public_shallow(star))
        if facts.explicit_all is not None:
            return {n: names.get(n, (module, n)) for n in facts.explicit_all}
        # Without ``__all__``, a plain module offers what it defines; a package also what it imports.
        return {n: v for n, v in names.items() if not n.startswith("_") and (facts.is_package or n in facts.defs)}

    def bound(self, module: str) -> set[str]:
        """Every name ``from module import name`` finds: public or not, defined or imported."""
        if module not in self._bound:
            self._bound[module] = self._read_bound(module)
        return self._bound[module]

    def _read_bound(self, module: str) -> set[str]:
        if not self.imports(module):
            return set()
        facts = self.modules[module]
        names = set(facts.names) | set(facts.explicit_all or ()) | facts.other_bound
        for star in facts.stars:
            if star in self.modules and star != module:
                names |= set(self.public_shallow(star))
        return names

    def imports(self, module: str, seen: frozenset[str] = frozenset()) -> bool:
        """Whether the module's unconditional imports from its own package find what they name."""
        if module not in self._imports:
            ok = True
            for origin, name in self.modules[module].required:
                if origin in seen or origin == module or origin not in self.modules or f"{origin}.{name}" in self.modules:
                    continue  # a cycle, a compiled module, or a submodule: not judged here
                facts = self.modules[origin]
                provided = set(facts.names) | facts.other_bound | set(facts.explicit_all or ()) | \
                    {n for star in facts.stars if star in self.modules for n in self.public_shallow(star)}
                if name not in provided or not self.imports(origin, seen | {module}):
                    ok = False
                    break
            self._imports[module] = ok
        return self._imports[module]

    def public_shallow(self, module: str) -> dict[str, tuple[str, str]]:
        facts = self.modules[module]
        if facts.explicit_all is not None:
            return {n: facts.names.get(n, (module, n)) for n in facts.explicit_all}
        return {n: v for n, v in facts.names.items() if not n.startswith("_")}

    def definition(self, origin: tuple[str, str], depth: int = 0) -> Definition | None:
        """Follow re-exports to the statement that defines a name."""
        module, name = origin
        facts = self.modules.get(module)
        if facts is None or depth > 8:
            return None
        if name in facts.defs:
            return facts.defs[name]
        nxt = facts.names.get(name)
        return self.definition(nxt, depth + 1) if nxt is not None and nxt != origin else None


def _is_public_module(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split("."))


# Most files do not change from one release to the next: each text is parsed once per build.
_READ: dict[tuple[bytes, str, bool], ModuleFacts | None] = {}


def read_release(wheel: str, package: str, version: str) -> Release:
    modules = {}
    with zipfile.ZipFile(wheel) as archive:
        for path in sorted(archive.namelist()):
            if not path.startswith(package + "/") or not path.endswith(".py"):
                continue
            module, is_package, data = _module_name(path), path.endswith("__init__.py"), archive.read(path)
            key = (hashlib.sha256(data).digest(), module, is_package)
            if key not in _READ:
                _READ[key] = _read_module(data.decode("utf-8", "replace"), module, is_package, package)
            facts = _READ[key]
            if facts is not None:
                modules[module] = facts
    for facts in list(modules.values()):
        for alias, name in facts.module_aliases.items():
            origin = facts.names.get(name)
            candidates = [f"{origin[0]}.{origin[1]}", origin[0]] if origin else []
            found = next((c for c in candidates if c in modules), None)
            if found is not None and alias not in modules:
                modules[alias] = modules[found]
    return Release(version, modules)


# ----- comparing releases -----

def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def _minor(text: str) -> str:
    return ".".join(text.split(".")[:2])


def _evidence(definition: Definition | None, name: str) -> tuple[bool, str | None, str | None]:
    """(deprecated, replacement named by the text, removal version the text announces)."""
    if definition is None:
        return False, None, None
    text = " ".join(definition.texts)
    if not _DEPRECATED.search(text):
        return False, None, None
    removed = _REMOVED_IN.search(text)
    replacement = None
    for match in _USE.finditer(text):
        candidate = match.group(1).rstrip(".")
        if candidate.lower() not in _NOT_NAMES and candidate.split(".")[-1] != name and candidate != "{}":
            replacement = candidate
            break
    return True, replacement, removed.group(1) if removed else None


def _subclass_of(definition: Definition | None) -> str | None:
    """The one base of a shim class whose body only documents or passes."""
    node = definition.node if definition else None
    if not isinstance(node, ast.ClassDef) or len(node.bases) != 1:
        return None
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            and not isinstance(s, ast.Pass)]
    base = node.bases[0]
    if body or not isinstance(base, (ast.Name, ast.Attribute)):
        return None
    return base.id if isinstance(base, ast.Name) else base.attr


def _signature(node: ast.AST) -> set[str] | None:
    if isinstance(node, ast.ClassDef):
        init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        return _signature(init) if init is not None else None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self", "cls"}
    return None


def _drop_in(old: Definition | None, how: str) -> bool:
    """A rename is safe when the old name was the new one under another name (alias, move, or a shim
    subclass that adds nothing)."""
    return how in ("alias", "moved") or (how == "subclass" and old is not None) or \
        (how == "message" and _subclass_of(old) is not None)


def _first_deprecated(releases: list[Release], module: str, name: str) -> str | None:
    for release in releases:
        if module in release.modules and name in release.public(module):
            definition = release.definition(release.public(module)[name])
            if definition is not None and _evidence(definition, name)[0] and _about_itself(definition):
                return _minor(release.version)
    return None


def _newest_locations(newest: Release) -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for module in sorted(newest.modules):
        if _is_public_module(module):
            for name in newest.public(module):
                where.setdefault(name, []).append(module)
    return where


def _qualified(replacement: str, module: str, newest_where: dict[str, list[str]]) -> str:
    """``Composite`` said in ``torchrl.data.tensor_specs`` -> where the newest release offers it: the
    same module first, else the shortest public path."""
    short = replacement.rpartition(".")[2]
    homes = newest_where.get(short, [])
    if module in homes:  # importable where the old name was: the import line keeps its module
        return f"{module}.{short}"
    if "." in replacement:
        return replacement
    return f"{min(homes, key=lambda m: (m.count('.'), m))}.{short}" if homes else replacement


def _replacement(old: Definition | None, name: str, module: str, newest_where: dict[str, list[str]],
                 package: str) -> tuple[str | None, str]:
    deprecated, said, _ = _evidence(old, name)
    if said:
        return _qualified(said, module, newest_where), "message"
    base = _subclass_of(old)
    if base and deprecated:
        return _qualified(base, module, newest_where), "subclass"
    if old is not None and old.alias_of is not None:
        return _qualified(old.alias_of, module, newest_where), "alias"
    homes = [m for m in newest_where.get(name, []) if m.split(".")[0] == package]
    if homes:
        # The closest surviving public module: the longest shared prefix, then the shortest path.
        best = max(homes, key=lambda m: (len(os.path.commonprefix([m.split("."), module.split(".")])), -len(m)))
        return f"{best}.{name}", "moved"
    return None, "none"


def removed_names(package: str, releases: list[Release]) -> list[dict]:
    entries: list[dict] = []
    newest = releases[-1]
    newest_where = _newest_locations(newest)
    once_public: dict[str, set[str]] = {}  # module -> names it offered publicly in some release so far
    for index, release in enumerate(releases[:-1]):
        later = releases[index + 1:]
        for module in sorted(release.modules):
            if not _is_public_module(module) or not release.imports(module):
                continue  # private, or failing to import in this release: nothing was importable from it
            offered = once_public.setdefault(module, set())
            offered.update(release.public(module))
            for name, origin in sorted(_still_importable(release, module, offered).items()):
                if any(module in r.modules and name in r.bound(module) or _submodule_imports(r, f"{module}.{name}")
                       for r in later):
                    continue  # still importable (or back) later, if only as an import of that module or a submodule
                if _already_seen(entries, module, name):
                    continue
                old = release.definition(origin)
                replacement, how = _replacement(old, name, module, newest_where, package)
                _, _, announced = _evidence(old, name)
                entries.append({
                    "kind": "name", "package": package, "module": module, "name": name,
                    "deprecated_in": _first_deprecated(releases[: index + 1], module, name),
                    "removed_in": _minor(later[0].version),
                    "announced_removal": announced,
                    "replacement": replacement, "how": how,
                    "fix": "safe" if replacement and _drop_in(old, how) else ("unsafe" if replacement else "none"),
                })
    return entries


def _still_importable(release: Release, module: str, once_public: set[str]) -> dict[str, tuple[str, str]]:
    """The module's public names, and the names it offered publicly in an earlier release that it still
    binds (``RandomPolicy``, defined in torchrl.collectors.collectors up to 0.3, imported there from
    torchrl.envs.utils in 0.6 to 0.10): ``from module import name`` works until the last of them."""
    names = dict(release.public(module))
    facts = release.modules[module]
    for name in sorted(once_public - set(names)):
        if name in release.bound(module):
            names[name] = facts.names.get(name, (module, name))
    return names


def removed_modules(package: str, releases: list[Release]) -> list[dict]:
    """Public modules that import in one release and in no later one: ``import module`` and every
    ``from module import name`` fail from the next release on, private names included. The
    replacement is the newest release's public module offering most of the old module's public names
    (at least half of them); ``provides`` lists those, the names a use may take from it."""
    entries: list[dict] = []
    newest_where = _newest_locations(releases[-1])
    for index, release in enumerate(releases[:-1]):
        later = releases[index + 1:]
        for module in sorted(release.modules):
            if not _is_public_module(module) or not release.imports(module) \
                    or any(_submodule_imports(r, module) for r in later):
                continue
            home, provides = _replacement_module(module, sorted(release.public(module)), package, newest_where)
            parent, _, last = module.rpartition(".")
            entries.append({
                "kind": "module", "package": package, "module": parent, "name": last,
                "deprecated_in": None, "removed_in": _minor(later[0].version), "announced_removal": None,
                "replacement": home, "how": "moved" if home else "none", "fix": "safe" if home else "none",
                "provides": provides,
            })
    return entries


def _replacement_module(module: str, names: list[str], package: str,
                        newest_where: dict[str, list[str]]) -> tuple[str | None, list[str]]:
    """The newest public module of ``package`` that offers most of ``names`` (then the closest to
    ``module``, then the shortest), with the names it offers; None when none offers half of them."""
    offered: dict[str, list[str]] = {}
    for name in names:
        for home in newest_where.get(name, []):
            if home.split(".")[0] == package:
                offered.setdefault(home, []).append(name)
    if not offered:
        return None, []
    best = max(offered, key=lambda m: (len(offered[m]),
                                       len(os.path.commonprefix([m.split("."), module.split(".")])), -len(m)))
    return (best, offered[best]) if 2 * len(offered[best]) >= len(names) else (None, [])


def _submodule_imports(release: Release, module: str) -> bool:
    """``from package import name`` also finds a submodule ``package.name`` that imports."""
    return module in release.modules and release.imports(module)


def _already_seen(entries: list[dict], module: str, name: str) -> bool:
    return any(e["module"] == module and e["name"] == name and e["kind"] == "name" for e in entries)


def deprecated_names(package: str, releases: list[Release]) -> list[dict]:
    """Names of the newest release that warn they are deprecated: flagged only on request."""
    newest = releases[-1]
    newest_where = _newest_locations(newest)
    entries = []
    for module in sorted(newest.modules):
        if not _is_public_module(module):
            continue
        for name, origin in sorted(newest.public(module).items()):
            old = newest.definition(origin)
            if old is None or not isinstance(old.node, ast.ClassDef) and not isinstance(old.node, ast.FunctionDef):
                continue
            deprecated, _, announced = _evidence(old, name)
            # A deprecation must be about the name itself: its docstring or a warning at its top.
            if not deprecated or not _about_itself(old):
                continue
            replacement, how = _replacement(old, name, module, newest_where, package)
            if how == "moved":  # a name still there is not "moved" to itself
                replacement, how = None, "none"
            entries.append({
                "kind": "name", "package": package, "module": module, "name": name,
                "deprecated_in": _first_deprecated(releases, module, name), "removed_in": None,
                "announced_removal": announced, "replacement": replacement, "how": how,
                "fix": "safe" if replacement and _drop_in(old, how) else ("unsafe" if replacement else "none"),
            })
    return entries


def _about_itself(definition: Definition) -> bool:
    node = definition.node
    doc = ast.get_docstring(node) or "" if isinstance(node, (ast.ClassDef, ast.FunctionDef)) else ""
    first = doc.strip().split("\n\n")[0]
    if _DEPRECATED.search(first) or definition.extra:  # docstring, or a legacy metaclass
        return True
    init = next((s for s in getattr(node, "body", []) if isinstance(s, ast.FunctionDef)
                 and s.name in ("__init__", "__new__")), node if isinstance(node, ast.FunctionDef) else None)
    if init is None:
        return False
    head = [s for s in init.body[:3] if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    name = getattr(node, "name", "")
    return any(_DEPRECATED.search(text) and name in text and "warn" in ast.dump(s) for s in head[:2]
               if not isinstance(s, ast.If) for text in _strings(s))


def _callables(release: Release, package: str) -> dict[str, ast.FunctionDef]:
    """Public classes' public methods (``module.Class.method``) and public functions, as defined."""
    found: dict[str, ast.FunctionDef] = {}
    for module, facts in release.modules.items():
        for name, definition in facts.defs.items():
            if name.startswith("_"):
                continue
            node = definition.node
            if isinstance(node, ast.FunctionDef):
                found[f"{module}.{name}"] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and (not item.name.startswith("_") or item.name == "__init__"):
                        found[f"{module}.{name}.{item.name}"] = item
    return found


def removed_members(package: str, releases: list[Release]) -> list[dict]:
    """Methods and keywords that vanished after their last release warned about them."""
    entries: list[dict] = []
    tables = [_callables(r, package) for r in releases]
    for index in range(len(releases) - 1):
        before, after = tables[index], tables[index + 1]
        for qualname, node in sorted(before.items()):
            owner, _, member = qualname.rpartition(".")
            gone = set() if qualname not in after else (_signature(node) or set()) - (_signature(after[qualname]) or set())
            if qualname in after and not gone:
                continue
            text = " ".join(_strings(node))
            if qualname not in after:
                is_method = owner in {f"{m}.{c}" for m, f in releases[index].modules.items() for c in f.defs}
                gone_for_good = all(qualname not in t for t in tables[index + 1:])
                if is_method and member != "__init__" and gone_for_good and _DEPRECATED.search(text) \
                        and owner_exists(owner, tables[-1]):
                    _, replacement, announced = _evidence(Definition(node, "", _texts=[text]), member)
                    entries.append(_member_entry("method", package, owner, member, replacement,
                                                 releases, index, announced))
                continue
            for keyword in sorted(gone):
                if re.search(rf"\b{re.escape(keyword)}\b[^.]*deprecat|deprecat[^.]*\b{re.escape(keyword)}\b", text) \
                        and all(keyword not in (_signature(t[qualname]) or set()) for t in tables[index + 1:]
                                if qualname in t):
                    mentioned = re.search(rf"{re.escape(keyword)}[^.]*?(?:use|in favou?r of|renamed to)\s+[`'\"]*(\w+)",
                                          text)
                    replacement = mentioned.group(1) if mentioned and mentioned.group(1) != keyword else None
                    target = owner if member == "__init__" else qualname
                    entries.append(_member_entry("keyword", package, target, keyword, replacement, releases, index,
                                                 None))
    return entries


def keyword_only_parameters(package: str, releases: list[Release]) -> list[dict]:
    """Parameters passed by position in one release and keyword-only in the next and every later one
    (``SoftUpdate(loss_module, eps)``: ``*, eps`` since torchrl 0.2): a call passing them by position
    raises TypeError. ``position`` counts the positional parameters before it (``self`` aside); the
    fix names the argument, which the old release took as well."""
    entries: list[dict] = []
    tables = [_callables(r, package) for r in releases]
    for index in range(len(releases) - 1):
        for qualname, node in sorted(tables[index].items()):
            after = tables[index + 1].get(qualname)
            if after is None:
                continue
            positional = [a.arg for a in node.args.args if a.arg not in ("self", "cls")]
            became = [p for p in positional if p in {a.arg for a in after.args.kwonlyargs}
                      and all(p in {a.arg for a in t[qualname].args.kwonlyargs} for t in tables[index + 1:] if qualname in t)]
            owner, _, member = qualname.rpartition(".")
            for parameter in became:
                entry = _member_entry("positional", package, owner if member == "__init__" else qualname, parameter,
                                      parameter, releases, index, None)
                entries.append({**entry, "fix": "safe", "found": "signature", "position": positional.index(parameter)})
    return entries


def owner_exists(owner: str, newest: dict[str, ast.FunctionDef]) -> bool:
    prefix = owner + "."
    return any(key.startswith(prefix) for key in newest)


def _member_entry(kind: str, package: str, owner: str, member: str, replacement: str | None,
                  releases: list[Release], index: int, announced: str | None) -> dict:
    module, _, cls = owner.rpartition(".")
    return {
        "kind": kind, "package": package, "module": module, "name": f"{cls}.{member}",
        "deprecated_in": None, "removed_in": _minor(releases[index + 1].version), "announced_removal": announced,
        "replacement": replacement, "how": "message" if replacement else "none",
        "fix": "none",  # a method or keyword change needs a person: the message says what to use
    }


# ----- the table -----

def wheel_path(cache: str, package: str, version: str) -> str | None:
    found = sorted(glob.glob(os.path.join(cache, f"{package}-{version}-*.whl")))
    return found[0] if found else None


def download(cache: str) -> None:
    os.makedirs(cache, exist_ok=True)
    for package, versions in RELEASES.items():
        for version in versions:
            for python in _PYTHONS:
                if wheel_path(cache, package, version) is None:
                    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                                    "--python-version", python, "--platform", "manylinux1_x86_64",
                                    "--platform", "manylinux_2_28_x86_64", "--platform", "any",
                                    f"{package}=={version}", "-d", cache], check=python == _PYTHONS[-1])


def missing_wheels(cache: str) -> list[str]:
    return [f"{p}=={v}" for p, versions in RELEASES.items() for v in versions if wheel_path(cache, p, v) is None]


def build(cache: str, releases: dict[str, tuple[str, ...]] = RELEASES) -> dict:
    from rlguard_dev import upgrade_changes, upgrade_defaults  # they read releases with this module's functions

    entries: list[dict] = []
    forwards: list[dict] = []
    held: dict[str, list[str]] = {}
    every = {package: [read_release(wheel_path(cache, package, v) or "", package, v) for v in versions]
             for package, versions in releases.items()}
    for package, read in every.items():
        elsewhere = tuple(r[-1] for p, r in every.items() if p != package)
        entries += upgrade_changes.amend(package, read, removed_names(package, read) + removed_members(package, read)
                                         + deprecated_names(package, read) + removed_modules(package, read)
                                         + keyword_only_parameters(package, read), elsewhere)
        forwards += upgrade_changes.forwarded_keywords(read)
        held.update(upgrade_changes.holders(read, {e["name"].split(".")[0] for e in entries if e["kind"] == "method"}))
    # tensordict's versions are keyed to the torchrl release that requires them (same minor).
    entries.sort(key=lambda e: (e["package"], e["kind"], e["module"], e["name"]))
    return {
        "generated_from": {p: list(v) for p, v in releases.items()},
        "entries": entries,
        "forwards": sorted(forwards, key=lambda f: (f["class"], f["class_argument"])),
        "holders": held,
        "defaults": upgrade_defaults.changed_defaults(every["torchrl"]) if "torchrl" in every else [],
    }


def render(table: dict) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def render_releases(table: dict) -> str:
    """The releases the table was generated from, in a file of their own (``target.known_releases``)."""
    return json.dumps(table["generated_from"], indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlguard_dev.upgrade_table", description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default=DEFAULT_CACHE, help="folder holding the wheels (downloaded if missing)")
    parser.add_argument("--write", action="store_true", help=f"write {os.path.relpath(REMOVED_API_FILE)}")
    parser.add_argument("--check", action="store_true", help="exit 1 when the shipped table differs")
    parser.add_argument("--no-download", action="store_true", help="use only the wheels already in the cache")
    args = parser.parse_args(argv)
    if not args.no_download:
        download(args.cache)
    missing = missing_wheels(args.cache)
    if missing:
        print(f"{args.cache}: missing wheels {', '.join(missing)}", file=sys.stderr)
        return 2
    table = build(args.cache)
    text, releases = render(table), render_releases(table)
    if args.check:
        return 0 if is_current(REMOVED_API_FILE, text) and is_current(RELEASES_FILE, releases) else 1
    if args.write:
        write_generated(REMOVED_API_FILE, text)
        write_generated(RELEASES_FILE, releases)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
