"""Changes beyond names, derived from the released sources (read by ``upgrade_table``, nothing imported).

Each entry says how it was found (``found``):
- ``kwargs-block``: a constructor reads an old keyword out of ``**kwargs`` and assigns it to one of its
  parameters (``high = kwargs.pop("max")``) while warning: the old keyword is renamed to that parameter.
  It is removed in the first later release whose constructor (with the parents it forwards ``**kwargs``
  to) accepts it no more. Releases between the last that honours it and that removal whose constructor
  takes ``**kwargs`` and never reads it drop it without a word: the entry's ``ignored_in`` is the first
  (torchrl 0.6's ``TanhNormal(min=...)`` ran with the default bounds).
- ``signature``: a constructor keyword of one release that no later release accepts, where the later
  constructors take no ``**kwargs`` (so passing it raises ``TypeError``). No replacement: no evidence.
- ``raises``: a class whose constructor body only raises. Removed from that release; the replacement
  is the class its message names.
- ``raises-attribute``: a distribution property whose body only raises (``TanhNormal.mode``); the
  ``InteractionType`` member of that value (``MODE``) then raises with that distribution, and the
  message's advice (``DETERMINISTIC``) is the replacement.
- ``raising-setter``: a property of a public class whose setter refuses every value in the newest release,
  where an earlier release let it be set (a plain attribute or a setter that stored it): ``obj.device = d``
  on an environment. The replacement is the method its message says to call (``env.to(device)``), or for a
  spec container the property that now sets what it held besides its moved keys (``input_spec``:
  ``state_spec``).
- ``step-output``: ``EnvBase.step`` read ``_step``'s output under ``"next"`` up to a release and takes it
  whole as the next step from the following one: a ``_step`` returning ``{"next": {...}}`` nests it twice.
- ``forwards`` (not an entry): a class that calls one constructor argument with another's items as
  keywords (``self.distribution_class(**self.distribution_kwargs)``): the keys of a dict literal passed
  as the second are keywords of the class passed as the first.
- ``holders`` (not an entry): the attributes through which the newest release's classes hold an instance
  of a class (``space: Box`` in TensorSpec holds a ContinuousBox): ``spec.space.minimum`` reaches
  ContinuousBox's removed ``minimum`` without knowing what ``spec`` is.
A removed property whose replacement (named by its warning) is a property of the newest class is a
safe rename.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from rlguard_dev.upgrade_table import (_NOT_NAMES, _REMOVED_IN, _USE, Release, _is_public_module, _minor,
                                      _newest_locations, _strings)

# ``InteractionType``'s members are the names of the distribution attributes they read: its docstring
# says "MODE, MEDIAN and MEAN point to the property / attribute with the same name" (tensordict 0.4-0.14,
# tensordict/nn/probabilistic.py), and torchrl re-exports it as ``ExplorationType``.
INTERACTION_ENUM = ("tensordict.nn", "InteractionType")
INTERACTION_ENUM_NAMES = ("InteractionType", "ExplorationType")
# A wrapper that held a policy and became a module placed after the policy: hand-known structure
# (torchrl 0.4's docs: "EGreedyWrapper(policy)" is "TensorDictSequential(policy, EGreedyModule(spec))").
# The module takes the policy's spec, cloned: the module writes to the spec it is given, and the
# actor's own spec then no longer matches its out_keys.
WRAPPER_BASE = "TensorDictModuleWrapper"


@dataclass(frozen=True)
class Constructor:
    """What one release's class accepts by keyword."""

    params: tuple[str, ...]  # in order, ``self`` left out
    renamed: dict[str, str]  # old keyword -> parameter, read from a warning ``**kwargs`` block
    announced: dict[str, str]  # old keyword -> removal version the block's warning announces
    open_kwargs: bool  # takes ``**kwargs`` that go somewhere unknown
    refused: frozenset[str] = frozenset()  # ``if "old" in kwargs: raise ...``: read only to refuse it
    swallows: bool = False  # takes ``**kwargs`` and never reads it: any other keyword is dropped unseen


def _classes(release: Release, prefer: dict[str, str] | None = None) -> dict[str, tuple[str, ast.ClassDef]]:
    """Class name -> (defining module, node), private modules included. A name defined twice is left
    out, unless one of its definitions is in the module ``prefer`` gives for it (the newest release's)."""
    found: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for module, facts in release.modules.items():
        for name, definition in facts.defs.items():
            if isinstance(definition.node, ast.ClassDef) and not name.startswith("_") \
                    and definition.module == module:
                found.setdefault(name, []).append((module, definition.node))
    chosen = {}
    for name, definitions in found.items():
        preferred = [d for d in definitions if prefer and d[0] == prefer.get(name)]
        if len(definitions) == 1 or len(preferred) == 1:
            chosen[name] = (definitions if len(definitions) == 1 else preferred)[0]
    return chosen


def _same_class(release: Release, defined_in: str, newest_module: str, homes: list[str], name: str) -> bool:
    """Whether ``name`` of ``release`` (defined in ``defined_in``) is the class the newest release
    defines in ``newest_module``: the same module, or a public module both offer it from (``homes``,
    the newest's). torchrl 0.9 had two ``KLRewardTransform`` classes; the one ``torchrl.envs.llm``
    offers never took ``actor``."""
    return defined_in == newest_module or any(
        m in release.modules and name in release.public(m) for m in homes)


def _home(release: Release, name: str, homes: list[str], default: str) -> str:
    """The public module, among ``homes`` (the newest release's), that ``release`` offered ``name``
    from too: where users imported the class from in both (the shortest), else ``default``."""
    shared = [m for m in homes if m in release.modules and name in release.public(m) and release.imports(m)]
    return min(shared, key=lambda m: (m.count("."), m)) if shared else default


def _init(node: ast.ClassDef) -> ast.FunctionDef | None:
    return next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)


def _kwargs_blocks(init: ast.FunctionDef) -> tuple[dict[str, str], dict[str, str], frozenset[str]]:
    """``if "old" in kwargs: <warn>; new = kwargs.pop("old")``: old -> new, and old -> announced removal;
    and the old keywords whose block only raises."""
    kwargs = init.args.kwarg.arg if init.args.kwarg else None
    params = {a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)}
    renamed: dict[str, str] = {}
    announced: dict[str, str] = {}
    refused: set[str] = set()
    if kwargs is None:
        return renamed, announced, frozenset()
    for node in ast.walk(init):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and isinstance(node.test.left, ast.Constant) and isinstance(node.test.left.value, str)
                and isinstance(node.test.ops[0], ast.In) and isinstance(node.test.comparators[0], ast.Name)
                and node.test.comparators[0].id == kwargs):
            continue
        old = node.test.left.value
        if all(isinstance(s, ast.Raise) for s in node.body):
            refused.add(old)
        warns = any(isinstance(c, ast.Call) and "warn" in ast.unparse(c.func).lower() for c in ast.walk(node))
        for statement in ast.walk(node):
            if warns and isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                    and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id in params \
                    and _reads_key(statement.value, kwargs, old):
                renamed[old] = statement.targets[0].id
                said = _REMOVED_IN.search(" ".join(_strings(node)))
                if said:
                    announced[old] = said.group(1)
    return renamed, announced, frozenset(refused)


def _reads_key(value: ast.expr, kwargs: str, key: str) -> bool:
    """``kwargs.pop("key")``, ``kwargs.get("key")`` or ``kwargs["key"]``."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("pop", "get"):
        owner, args = value.func.value, value.args
    elif isinstance(value, ast.Subscript):
        owner, args = value.value, [value.slice]
    else:
        return False
    return isinstance(owner, ast.Name) and owner.id == kwargs and bool(args) \
        and isinstance(args[0], ast.Constant) and args[0].value == key


def _forwards_to_super(init: ast.FunctionDef) -> bool:
    """``super().__init__(..., **kwargs)``: the rest of the keywords go to the parent."""
    kwargs = init.args.kwarg.arg if init.args.kwarg else None
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__" \
                and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name) \
                and node.func.value.func.id == "super":
            return any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwargs
                       for k in node.keywords)
    return False


def constructor(classes: dict[str, tuple[str, ast.ClassDef]], name: str, depth: int = 0) -> Constructor | None:
    """What ``name(...)`` accepts in this release, following the parents ``**kwargs`` goes to; None when
    a parent is outside the release (torch's, or unknown)."""
    if name not in classes or depth > 10:
        return None
    node = classes[name][1]
    init = _init(node)
    parent = node.bases[0] if len(node.bases) >= 1 else None
    parent_name = parent.id if isinstance(parent, ast.Name) else parent.attr if isinstance(parent, ast.Attribute) \
        else None
    if init is None:
        return constructor(classes, parent_name, depth + 1) if parent_name else None
    args = init.args
    params = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg not in ("self", "cls"))
    renamed, announced, refused = _kwargs_blocks(init)
    if args.kwarg is None:
        return Constructor(params, renamed, announced, False)
    inherited = constructor(classes, parent_name, depth + 1) if parent_name and _forwards_to_super(init) else None
    if inherited is None:
        return Constructor(params, renamed, announced, True, refused, _never_read(init, args.kwarg.arg))
    return Constructor(params + tuple(p for p in inherited.params if p not in params),
                       {**inherited.renamed, **renamed}, {**inherited.announced, **announced},
                       inherited.open_kwargs, refused | inherited.refused)


def _never_read(init: ast.FunctionDef, kwargs: str) -> bool:
    """``**kwargs`` that the body never names: torchrl 0.6's TanhNormal took ``min=`` so, and dropped it."""
    return not any(isinstance(n, ast.Name) and n.id == kwargs for n in ast.walk(init))


def _honours(built: Constructor | None, keyword: str) -> bool:
    """The keyword reaches a parameter: its own, or one a ``**kwargs`` block renames it to."""
    return built is not None and (keyword in built.params or keyword in built.renamed)


def _accepts(built: Constructor | None, keyword: str) -> bool:
    if built is not None and keyword in built.refused:
        return False
    return built is None or built.open_kwargs or keyword in built.params or keyword in built.renamed


def keyword_changes(package: str, releases: list[Release]) -> list[dict]:
    """Constructor keywords renamed through a ``**kwargs`` block, or gone without one. Each entry names
    the class where users import it from in the newest release and in the last one that took the keyword."""
    newest = _classes(releases[-1])
    prefer = {name: module for name, (module, _) in newest.items()}
    tables = [_classes(r, prefer) for r in releases[:-1]] + [newest]
    built = [{name: constructor(t, name) for name in t} for t in tables]
    homes = _newest_locations(releases[-1])
    entries = []
    for name in sorted(newest):
        module = newest[name][0]
        history = [(i, b[name]) for i, b in enumerate(built) if name in b
                   and _same_class(releases[i], tables[i][name][0], module, homes.get(name, []), name)]
        keywords = dict.fromkeys(k for _, c in history if c is not None for k in (*c.params, *c.renamed))
        for keyword in keywords:
            entry = _keyword_entry(keyword, history, releases)
            if entry is not None:
                last = max(i for i, c in history if _accepts(c, keyword))
                entries.append({"kind": "keyword", "package": package,
                                "module": _home(releases[last], name, homes.get(name, []), module),
                                "name": f"{name}.{keyword}", **entry})
    return entries


def _keyword_entry(keyword: str, history: list[tuple[int, Constructor | None]],
                   releases: list[Release]) -> dict | None:
    """The keyword's fate over the releases that have the class: removed after the last release that
    accepts it (when every later one is known to refuse it), or deprecated while a block still reads it."""
    accepting = [i for i, c in history if _accepts(c, keyword)]
    blocks = [(i, c) for i, c in history if c is not None and keyword in c.renamed]
    newest = history[-1][1]
    if accepting and accepting[-1] == history[-1][0]:
        if not blocks or blocks[-1][0] != history[-1][0]:
            return None  # still accepted as it always was
        removed_at = None
    else:
        removed_at = next(i for i, _ in history if i > accepting[-1]) if accepting else None
        if removed_at is None:
            return None
    source = blocks[-1][1] if blocks else None
    new = source.renamed[keyword] if source else None
    ignored = _ignored_from(keyword, history, removed_at)
    return {
        **({"ignored_in": _minor(releases[ignored].version)} if ignored is not None else {}),
        "deprecated_in": _minor(releases[blocks[0][0]].version) if blocks else None,
        "removed_in": _minor(releases[removed_at].version) if removed_at is not None else None,
        "announced_removal": source.announced.get(keyword) if source else None,
        "replacement": new, "how": "message" if new else "none",
        "found": "kwargs-block" if new else "signature",
        "fix": "safe" if new is not None and newest is not None and new in newest.params else "none",
    }


def _ignored_from(keyword: str, history: list[tuple[int, Constructor | None]], removed_at: int | None) -> int | None:
    """The first release after the last one that honours the keyword from which every release up to its
    removal takes it through a ``**kwargs`` it never reads: the call runs and the value is dropped."""
    honouring = [i for i, c in history if _honours(c, keyword)]
    if not honouring or removed_at is None:
        return None
    between = [(i, c) for i, c in history if honouring[-1] < i < removed_at]
    swallowing = all(c is not None and c.swallows and keyword not in c.refused for _, c in between)
    return between[0][0] if between and swallowing else None


def _only_raises(function: ast.FunctionDef) -> ast.Raise | None:
    """The ``raise`` of a body that does nothing else (a docstring aside)."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return body[0] if len(body) == 1 and isinstance(body[0], ast.Raise) else None


def _named_in(text: str, name: str) -> str | None:
    """The replacement a message names (``Please use torchrl.modules.EGreedyModule instead``)."""
    for match in _USE.finditer(text):
        candidate = match.group(1).rstrip(".")
        if candidate.lower() not in _NOT_NAMES and candidate.split(".")[-1] != name:
            return candidate
    return None


def raising_constructors(releases: list[Release], elsewhere: tuple[Release, ...] = ()) -> dict[str, dict]:
    """Class name -> what replaces it, for classes whose constructor only raises in the newest release:
    removed from the first release where it raises. A policy wrapper (first parameter ``policy``)
    replaced by a module that takes a ``spec`` gets the structural rewrite (``rewrite:
    "policy-then-module"``), with both signatures: the rule rewrites a call whose keywords the module takes.
    A module wrapper whose replacement does the rest of its work after the wrapped module
    (``_module_after_operator``) gets ``rewrite: "operator-then-module"``. The replacement may be a class
    of another package (``elsewhere``: the newest releases of the others; torchrl names tensordict's)."""
    tables = [_classes(r) for r in releases]
    newest_classes = {**{n: c for r in elsewhere for n, c in _classes(r).items()}, **tables[-1]}
    found: dict[str, dict] = {}
    for name, (module, node) in sorted(tables[-1].items()):
        init = _init(node)
        raised = _only_raises(init) if init is not None else None
        if raised is None:
            continue
        first = next(i for i, t in enumerate(tables) if name in t and (n := _init(t[name][1])) is not None
                     and _only_raises(n) is not None)
        replacement = _named_in(" ".join(_strings(raised)), name)
        if replacement is None:
            continue
        short = replacement.rpartition(".")[2]
        # The signature users wrote: the last release before it raised, else the raising one (it kept it).
        working = next((t[name][1] for t in reversed(tables[:first]) if name in t), node)
        old = constructor({name: (module, working)}, name)
        new = constructor(newest_classes, short)
        bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
        rewrite = ""
        if old is not None and new is not None:
            if WRAPPER_BASE in bases and old.params[:1] == ("policy",) and "spec" in new.params:
                rewrite = "policy-then-module"
            elif _module_after_operator(working, old, new):
                rewrite = "operator-then-module"
        found[name] = {
            "removed_in": _minor(releases[first].version), "replacement": replacement, "how": "message",
            "found": "raises", "fix": "unsafe" if rewrite else "none",
            **({"rewrite": rewrite, "old_parameters": list(old.params),
                "new_parameters": list(new.params)} if rewrite and old and new else {}),
        }
    return found


def _module_after_operator(working: ast.ClassDef, old: Constructor, new: Constructor) -> bool:
    """The old class (as its last working release defined it) kept its first argument and called it
    first on what it was given (``net_output = self.operator(*tensors)``), and the replacement takes the
    old class's other parameters, in order: ``Old(net, *rest)`` did ``torch.nn.Sequential(net,
    New(*rest))``'s work (torchrl 0.6's NormalParamWrapper and tensordict's NormalParamExtractor)."""
    init = _init(working)
    forward = next((s for s in working.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
    if init is None or forward is None or not old.params or old.params[1:] != new.params:
        return False
    held = {_self_attribute(s.targets[0]) for s in init.body if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.value, ast.Name) and s.value.id == old.params[0]}
    body = [s for s in forward.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    first = body[0].value if body and isinstance(body[0], (ast.Assign, ast.Return)) else None
    inputs = [a.arg for a in forward.args.args[1:]] + ([forward.args.vararg.arg] if forward.args.vararg else [])
    called = [a.value.id if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name) else
              a.id if isinstance(a, ast.Name) else None for a in first.args] if isinstance(first, ast.Call) else []
    return isinstance(first, ast.Call) and _self_attribute(first.func) in held - {None} \
        and not first.keywords and called == inputs and bool(inputs)


def raising_interactions(releases: list[Release]) -> list[dict]:
    """``InteractionType.<MEMBER>`` with a distribution whose attribute of the member's value only raises
    (``TanhNormal.mode`` from torchrl 0.6): the member raises with it, and the message's advice names
    the member to use."""
    tables = [_classes(r) for r in releases]
    by_member: dict[str, dict] = {}
    for name, (_, node) in sorted(tables[-1].items()):
        for item in node.body:
            if not (isinstance(item, ast.FunctionDef) and item.name in ("mode", "mean", "median")
                    and any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list)
                    and _only_raises(item) is not None):
                continue
            advice = re.search(r"\b[A-Z][a-z]+(?:Type|Mode)\.([A-Z]+)\b", " ".join(_strings(item)))
            if advice is None:
                continue
            first = next(i for i, t in enumerate(tables) if name in t and any(
                isinstance(s, ast.FunctionDef) and s.name == item.name and _only_raises(s) is not None
                for s in t[name][1].body))
            entry = by_member.setdefault(item.name.upper(), {
                "kind": "member", "package": "tensordict", "module": INTERACTION_ENUM[0],
                "name": f"{INTERACTION_ENUM[1]}.{item.name.upper()}", "deprecated_in": None,
                "removed_in": _minor(releases[first].version), "announced_removal": None,
                "replacement": f"{INTERACTION_ENUM[1]}.{advice.group(1)}", "how": "message",
                "found": "raises-attribute", "fix": "unsafe", "with": [],
                "aliases": list(INTERACTION_ENUM_NAMES)})
            entry["with"].append(name)
    return list(by_member.values())


# The environment base class, whose spec properties read the containers ``input_spec`` and ``output_spec``.
ENV_BASE = "EnvBase"


def _self_subscripts(node: ast.AST) -> list[tuple[str, str]]:
    """``self.<container>["<key>"]`` read under ``node``: (container, key) pairs."""
    return [(n.value.attr, n.slice.value) for n in ast.walk(node)
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) and isinstance(n.value.value, ast.Name)
            and n.value.value.id == "self" and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)]


def _accessors(node: ast.ClassDef, kind: str) -> dict[str, ast.FunctionDef]:
    """The class's property getters (``kind`` "getter") or setters ("setter"), by name."""
    found = {}
    for item in node.body:
        if isinstance(item, ast.FunctionDef):
            names = {ast.unparse(d) for d in item.decorator_list}
            if (kind == "getter" and "property" in names) or (kind == "setter" and f"{item.name}.setter" in names):
                found[item.name] = item
    return found


def _refuses_leaves(setter: ast.FunctionDef | None) -> bool:
    """``if not isinstance(value, CompositeSpec): raise ...``: the property only ever held a Composite."""
    return setter is not None and any(
        isinstance(n, ast.If) and isinstance(n.test, ast.UnaryOp) and isinstance(n.test.op, ast.Not)
        and isinstance(n.test.operand, ast.Call) and ast.unparse(n.test.operand.func) == "isinstance"
        and "Composite" in ast.unparse(n.test.operand.args[1]) and any(isinstance(b, ast.Raise) for b in n.body)
        for n in ast.walk(setter))


def _wraps_leaf_as(setter: ast.FunctionDef | None, key: str) -> bool:
    """``Composite(<key>=value, ...)``: the setter stores a leaf spec under ``key`` of the container."""
    return setter is not None and any(
        isinstance(n, ast.Call) and ast.unparse(n.func).startswith("Composite")
        and any(k.arg == key and "value" in ast.unparse(k.value) for k in n.keywords) for n in ast.walk(setter))


def spec_key_moves(releases: list[Release]) -> list[dict]:
    """Keys of the environment's spec containers that moved: a spec property whose getter returned
    ``self.<container>["<key>"]`` (each of its returns) reads another key of that container from the first release whose
    ``EnvBase`` no longer reads the old one (torchrl 0.2: ``output_spec["observation"]`` became
    ``output_spec["full_observation_spec"]``). The old entry was the property's spec: where it was always
    a Composite (its setter refused anything else) the new key holds it whole; where it could be a leaf,
    the newest setter says under which key of the new Composite a leaf goes (``Composite(action=value)``),
    and that key must be the old one. Entries (``kind: "key"``) name the container and the old key; ``path``
    is the new keys, in order."""
    bases = [_classes(r).get(ENV_BASE) for r in releases]
    newest = bases[-1]
    if newest is None:
        return []
    entries: dict[tuple[str, str], dict] = {}
    for index, base in enumerate(bases[:-1]):
        if base is None:
            continue
        for name, getter in _accessors(base[1], "getter").items():
            returned = {r for n in ast.walk(getter) if isinstance(n, ast.Return) for r in _self_subscripts(n)}
            read = list(returned) if all(isinstance(n, ast.Return) == bool(_self_subscripts(n)) for n in ast.walk(getter)
                                         if isinstance(n, ast.Return)) else []
            if len(read) != 1 or read[0] in entries:
                continue
            container, key = read[0]
            later = next((i for i in range(index + 1, len(bases)) if (b := bases[i]) is not None
                          and (container, key) not in _self_subscripts(b[1])), None)
            found = bases[later] if later is not None else None
            moved = _accessors(found[1], "getter").get(name) if found is not None else None
            keys = [k for c, k in _self_subscripts(moved) if c == container and k != key] if moved else []
            if later is None or not keys:
                continue
            setter = _accessors(newest[1], "setter").get(name)
            if _refuses_leaves(_accessors(base[1], "setter").get(name)):
                path = [keys[0]]
            elif _wraps_leaf_as(setter, key):
                path = [keys[0], key]
            else:
                continue  # no evidence of where a leaf went
            entries[(container, key)] = {
                "kind": "key", "package": "torchrl", "module": "torchrl.envs", "name": f"{ENV_BASE}.{container}.{key}",
                "deprecated_in": None, "removed_in": _minor(releases[later].version), "announced_removal": None,
                "replacement": f"{ENV_BASE}.{name}", "path": path, "how": "property", "found": "spec-layout",
                "fix": "safe"}
    return list(entries.values())


def forwarded_keywords(releases: list[Release]) -> list[dict]:
    """Constructor arguments whose items the class passes as keywords to another argument:
    ``self.distribution_class(**dist_kwargs, **self.distribution_kwargs)``."""
    found = set()
    for name, (_, node) in _classes(releases[-1]).items():
        init = _init(node)
        if init is None:
            continue
        params = {a.arg for a in (*init.args.args, *init.args.kwonlyargs)}
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            callee = _self_attribute(call.func)
            for keyword in call.keywords:
                value = keyword.value  # ``**as_dict(self.distribution_kwargs)`` spreads it too
                if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
                    value = value.args[0]
                spread = _self_attribute(value) if keyword.arg is None else None
                if callee in params and spread in params:
                    found.add((name, callee, spread))
    return [{"class": c, "class_argument": a, "kwargs_argument": k} for c, a, k in sorted(found)]


def _self_attribute(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == "self" else None


def amend(package: str, releases: list[Release], entries: list[dict],
          elsewhere: tuple[Release, ...] = ()) -> list[dict]:
    """The name table's entries with what this module finds: keyword entries replaced by the constructor
    reading, names whose constructor only raises marked removed, ``found`` on every entry. ``elsewhere``:
    the other packages' newest releases, where a replacement may live."""
    keywords = {e["name"]: e for e in keyword_changes(package, releases)}
    raising = raising_constructors(releases, elsewhere)
    amended = []
    for entry in entries:
        if entry["kind"] == "keyword" and entry["name"] in keywords:
            mine = keywords[entry["name"]]
            if mine["replacement"] is None and entry["replacement"] is not None:  # the warning named it
                keywords[entry["name"]] = {**mine, "replacement": entry["replacement"], "how": entry["how"],
                                           "found": "deprecation"}
            continue
        if entry["kind"] == "name" and entry["name"] in raising and entry["removed_in"] is None:
            entry = {**entry, **raising[entry["name"]]}  # (one gone from this module altogether stands as it is)
        elif entry["kind"] == "name" and raising.get(entry["name"], {}).get("rewrite") \
                and (entry["replacement"] or "").rpartition(".")[2] == raising[entry["name"]]["replacement"].rpartition(".")[2]:
            # Gone from this module, while the class still raises where it is defined: a call needs the
            # same rewrite (``NormalParamExtractor(net)`` would take ``net`` for its scale mapping).
            structure = raising[entry["name"]]
            entry = {**entry, **{k: structure[k] for k in ("rewrite", "old_parameters", "new_parameters")}}
        amended.append({"found": "removal" if entry["removed_in"] else "deprecation", **entry})
    newest = releases[-1]
    offered = {n for m in newest.modules if _is_public_module(m) for n in newest.public(m)}
    amended = [_checked_replacement(e, offered) for e in amended]
    listed = {(e["module"], e["name"]) for e in amended if e["kind"] == "name"}
    for module in sorted(m for m in newest.modules if _is_public_module(m)):
        for name in sorted(set(newest.public(module)) & set(raising)):
            if (module, name) not in listed:
                amended.append({"kind": "name", "package": package, "module": module, "name": name,
                                "deprecated_in": None, "announced_removal": None, **raising[name]})
    moves = spec_key_moves(releases) if package == "torchrl" else []
    amended += refused_assignments(releases, moves)
    if package == "torchrl":
        amended += raising_interactions(releases) + moves + step_output_moves(releases)
    return renamed_properties(releases, amended) + list(keywords.values())


def _checked_replacement(entry: dict, offered: set[str]) -> dict:
    """A name's replacement must be a public name of the newest release: words read from a message
    ("use the ActorValueOperator") or a private base class (``_SubTensorDict``) are no replacement."""
    replacement = entry["replacement"]
    if entry["kind"] != "name" or replacement is None or entry["how"] == "review" \
            or replacement.rpartition(".")[2] in offered:
        return entry
    return {**entry, "replacement": None, "how": "none", "fix": "none"}


def _bases(classes: dict[str, tuple[str, ast.ClassDef]], name: str) -> list[str]:
    """``name`` and its base classes found in the release, nearest first."""
    found: list[str] = []
    todo = [name]
    while todo and len(found) < 20:
        current = todo.pop(0)
        if current in found or current not in classes:
            continue
        found.append(current)
        todo += [b.id if isinstance(b, ast.Name) else b.attr for b in classes[current][1].bases
                 if isinstance(b, (ast.Name, ast.Attribute))]
    return found


def holders(releases: list[Release], owners: set[str]) -> dict[str, list[str]]:
    """Class in ``owners`` -> attribute names the newest release's classes hold one in: a class-level
    annotation naming it or a base (``space: None | Box``), or ``self.<attr> = Class(...)``."""
    classes = _classes(releases[-1])
    by_type: dict[str, set[str]] = {}
    for _, node in classes.values():
        for item in ast.walk(node):
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                for named in ast.walk(item.annotation):
                    if isinstance(named, ast.Name):
                        by_type.setdefault(named.id, set()).add(item.target.id)
            elif isinstance(item, ast.Assign) and len(item.targets) == 1 and _self_attribute(item.targets[0]) \
                    and isinstance(item.value, ast.Call) and isinstance(item.value.func, ast.Name):
                by_type.setdefault(item.value.func.id, set()).add(_self_attribute(item.targets[0]) or "")
    found = {}
    for owner in sorted(owners):
        attributes = sorted({a for base in _bases(classes, owner) for a in by_type.get(base, ()) if not a.startswith("_")})
        if attributes:
            found[owner] = attributes
    return found


def _property_names(node: ast.ClassDef) -> set[str]:
    return {s.name for s in node.body if isinstance(s, ast.FunctionDef)
            and any(isinstance(d, ast.Name) and d.id == "property" for d in s.decorator_list)}


def renamed_properties(releases: list[Release], entries: list[dict]) -> list[dict]:
    """Removed properties whose replacement is a property of the newest class: a safe rename."""
    tables = [_classes(r) for r in releases]
    amended = []
    for entry in entries:
        owner, _, member = entry["name"].rpartition(".")
        replacement = entry["replacement"]
        if entry["kind"] == "method" and replacement and owner in tables[-1] \
                and replacement in _property_names(tables[-1][owner][1]) \
                and any(owner in t and member in _property_names(t[owner][1]) for t in tables):
            entry = {**entry, "fix": "safe"}
        amended.append(entry)
    return amended


# ----- assignments a later release refuses -----
# "device cannot be set. Call env.to(device) instead.": the method the message tells the caller to call.
_CALL_INSTEAD = re.compile(r"\bcall\s+`?\w+\.(\w+)\(", re.IGNORECASE)


def _refuses_every_value(setter: ast.FunctionDef) -> ast.Raise | None:
    """The setter's ``raise`` when it ends in one and no test before it reads the assigned value: it
    raises whatever is assigned. A guard on the stored state only (``if self._device is None: <store>;
    return``) lets the first assignment through, before the constructor stores one."""
    body = [s for s in setter.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    value = setter.args.args[1].arg if len(setter.args.args) > 1 else None
    if not body or not isinstance(body[-1], ast.Raise) or value is None:
        return None
    tests = [n.test for s in body[:-1] for n in ast.walk(s) if isinstance(n, (ast.If, ast.IfExp, ast.While))]
    reads = any(isinstance(n, ast.Name) and n.id == value for t in tests for n in ast.walk(t))
    return None if reads else body[-1]


def _guarded(setter: ast.FunctionDef) -> bool:
    """Statements before the final ``raise`` (``_refuses_every_value`` let them through: they test no
    value): a first value, before the constructor stores one, is taken."""
    return len([s for s in setter.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]) > 1


def _settable(classes: dict[str, tuple[str, ast.ClassDef]], name: str, attr: str) -> bool:
    """``obj.<attr> = v`` worked on the class: the first property of that name along its bases has a
    setter that does not refuse every value, or none of them has the property and one assigns
    ``self.<attr>`` (a plain attribute)."""
    chain = _bases(classes, name)
    for base in chain:
        node = classes[base][1]
        if attr in _accessors(node, "getter"):
            setter = _accessors(node, "setter").get(attr)
            return setter is not None and _refuses_every_value(setter) is None
    return any(isinstance(n, ast.Assign) and any(_self_attribute(t) == attr for t in n.targets)
               for base in chain for n in ast.walk(classes[base][1]))


def _container_home(node: ast.ClassDef, container: str, moves: list[dict]) -> str | None:
    """The property that sets what a spec container held besides its moved keys: the newest class's
    properties that read ``self.<container>["<key>"]`` and have a setter, by key; the keys the moved
    entries went to (``full_action_spec``) left out, one key must remain (torchrl 0.2's
    ``input_spec``: ``full_state_spec``, set through ``state_spec``)."""
    moved = {m["path"][0] for m in moves if m["name"].split(".")[1] == container}
    setters = _accessors(node, "setter")
    by_key: dict[str, list[str]] = {}
    for name, getter in _accessors(node, "getter").items():
        for read_container, key in _self_subscripts(getter):
            if read_container == container and key not in moved and name in setters:
                by_key.setdefault(key, []).append(name)
    if len(by_key) != 1:
        return None
    return min(next(iter(by_key.values())), key=len)


def refused_assignments(releases: list[Release], moves: list[dict]) -> list[dict]:
    """``obj.<attr> = v`` on a public class whose property setter refuses every value in the newest release,
    where an earlier release let it be set (``_settable``): removed from the first release that refuses it.
    The replacement is the method the message says to call (``env.to(device)``: ``kind`` "setter",
    ``rewrite`` "call"), else, for a spec container whose keys moved (``moves``), the property that now
    sets the rest (``_container_home``), else none."""
    tables = [_classes(r) for r in releases]
    newest = releases[-1]
    homes = _newest_locations(newest)
    entries = []
    for name, (module, node) in sorted(tables[-1].items()):
        for attr, setter in sorted(_accessors(node, "setter").items()):
            raised = _refuses_every_value(setter)
            if raised is None or attr.startswith("_"):
                continue
            refusing = [i for i, t in enumerate(tables) if name in t
                        and (s := _accessors(t[name][1], "setter").get(attr)) is not None and _refuses_every_value(s)]
            first = refusing[0]
            if not all(i in refusing for i in range(first, len(tables)) if name in tables[i]) \
                    or not any(_settable(t, name, attr) for t in tables[:first] if name in t):
                continue
            message = " ".join(_strings(raised))
            called = _CALL_INSTEAD.search(message)
            home = None if called else _container_home(node, attr, moves)
            replacement = f"{name}.{called.group(1)}" if called else f"{name}.{home}" if home else None
            public = [m for m in homes.get(name, []) if _is_public_module(m)]
            keys = [f"`{m['replacement'].rpartition('.')[2]}`" for m in moves if m["name"].split(".")[1] == attr]
            entries.append({
                "kind": "setter", "package": "torchrl" if module.startswith("torchrl") else "tensordict",
                "module": min(public, key=lambda m: (m.count("."), m)) if public else module,
                "name": f"{name}.{attr}", "deprecated_in": None, "removed_in": _minor(releases[first].version),
                "announced_removal": None, "replacement": replacement, "how": "message" if called else
                "property" if home else "none", "found": "raising-setter", "fix": "unsafe" if replacement else "none",
                **({"rewrite": "call"} if called else {}), **({"once": True} if _guarded(setter) else {}),
                "note": f"upstream: \"{message}\"" + (f"; what it held is set through {', '.join(keys)}" + (f" and, for the rest, `{home}`" if home else "")
                   if keys else "")})
    return entries


def step_output_moves(releases: list[Release]) -> list[dict]:
    """``EnvBase._step``'s output: read under ``"next"`` by ``step`` (``out = self._step(td)`` then
    ``out.get("next")``) up to a release, taken whole as the next step from the following one (torchrl 0.2
    nests it itself: ``tensordict.set("next", self._step(tensordict))``). One entry (``kind``
    "returns") with the release that changed; ``path`` is the key the output no longer has."""
    nested: list[bool | None] = []  # None: no ``EnvBase.step`` in that release
    for table in (_classes(r) for r in releases):
        base = table.get(ENV_BASE)
        step = next((s for s in base[1].body if isinstance(s, ast.FunctionDef) and s.name == "step"), None) \
            if base is not None else None
        if step is None:
            nested.append(None)
            continue
        outputs = {t.id for s in ast.walk(step) if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                   and _self_attribute(s.value.func) == "_step" for t in s.targets if isinstance(t, ast.Name)}
        nested.append(any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
                          and isinstance(n.func.value, ast.Name) and n.func.value.id in outputs and n.args
                          and isinstance(n.args[0], ast.Constant) and n.args[0].value == "next" for n in ast.walk(step)))
    changed = next((i for i in range(1, len(nested)) if nested[i] is False and nested[i - 1]), None)
    if changed is None or any(nested[changed:]):
        return []
    return [{"kind": "returns", "package": "torchrl", "module": "torchrl.envs", "name": f"{ENV_BASE}._step",
             "deprecated_in": None, "removed_in": _minor(releases[changed].version), "announced_removal": None,
             "replacement": None, "how": "step", "found": "step-output", "fix": "unsafe", "path": ["next"],
             "rewrite": "next-to-root"}]
