"""The project-wide index of class and factory facts.

Workers collect facts for every file they parse; the main process merges them here and
answers the rules' requirements. A class that a requirement names, in a file the
pre-filter skipped, is indexed on demand: only what can matter is ever parsed.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple, TypeVar
from collections.abc import Callable, Mapping

from rlguard.engine.mro import c3_merge


class AttrFact(NamedTuple):
    """One ``self.<attr> = <value>`` seen in a method of a class."""

    # The class of the value: the call that built it (a class, or a function or method of the project,
    # whose returns the index follows), or the one type its annotation admits; None when unknown.
    callee: str | None
    tensor: bool = False  # the value is tensor-valued (see engine.inference)
    # A container literal (``{"cam": threading.Lock()}``, ``[a, b]``, ``dict(...)``): (where in it, as
    # ``["cam"]`` or ``[0]``, the call that built that item), for the items calls build.
    items: tuple[tuple[str, str], ...] = ()
    # The value is the constructor's parameter ``param`` (``self.guard = guard``, ``options["guard"]`` of
    # ``**options``, a dataclass field), filled by positional argument ``position`` (None: by keyword only).
    param: str | None = None
    position: int | None = None
    # Set outside the constructor under a test that it is unset (``if self._lock is None:``): a fresh
    # instance does not hold it yet.
    lazy: bool = False
    # The calls that built the value, where they were given the values of other calls
    # (``TensorDictModule(LockedNet(), ...)``): what a wrapper holds, what a constructor is given; or
    # item ``i`` of what a call returns (``self.actor, self.critic = make_models()``: ``callee`` is None).
    built: Built | None = None
    # Constructor parameters passed on to the call that built the value: (slot in that call, parameter,
    # its position), slot ``"**"`` for the ``**kwargs`` parameter passed on whole (``Inner(**kwargs)``).
    forwards: tuple[tuple[int | str, str, int | None], ...] = ()


class ClassFacts:
    # Plain classes, not dataclasses, here and below: a run served from the cache unpickles them
    # and should not pay for importing ``dataclasses``.
    __slots__ = ("qualname", "path", "bases", "decorators", "methods", "stubs", "abstract", "attrs")

    def __init__(self, qualname: str, path: str, bases: tuple[str, ...], decorators: tuple[str, ...] = ()) -> None:
        self.qualname = qualname
        self.path = path
        self.bases = bases  # qualified names; unresolvable bases are kept as written
        self.decorators = decorators
        self.methods: set[str] = set()
        # Methods whose body only raises NotImplementedError: defined, but failing like a missing one.
        self.stubs: set[str] = set()
        self.abstract: set[str] = set()  # methods declared ``@abstractmethod``: the class is an abstract base
        self.attrs: dict[str, list[AttrFact]] = {}

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]


TUPLE = "<tuple>"  # the callee of a returned tuple; its args are keyed by position


class Built(NamedTuple):
    """A call that builds a value, and the calls that build its arguments.

    ``callee`` is a qualified name, ``.name`` for a method called on ``receiver``, ``[i]`` for
    item ``i`` of what ``receiver`` returns, ``TUPLE`` for ``return a, b``, or ``self.name`` for the
    attribute ``name`` of the method's own instance (``return self._policy``).
    ``marked_by`` holds the callees of calls that took the value, by name, as their first
    argument before it was returned (``uncopyable(policy)``).
    """

    callee: str
    args: tuple[tuple[str | None, Built], ...] = ()  # (keyword or None, argument)
    receiver: Built | None = None
    marked_by: tuple[str, ...] = ()


class Returned(NamedTuple):
    """What one ``return`` statement gives, as the engine typed it in the function's own scope."""

    kind: str | None = None  # a value kind of engine.values ("tensor", "holds", "tensordict", ...); None: unknown
    # The class the value is an instance of (the call that built it, or its annotation), or the project
    # function or method whose result it is (followed through the index); None when unknown.
    built: str | None = None
    # The value is a TensorDict built in this function with no device (see ``engine.tensordicts.unplaced_tensordict``).
    unplaced: bool = False
    # When ``kind`` is unknown: (parameter, kind it is given, kind the value then has), for the parameters
    # that decide it (``return (pred - target).pow(2).mean()`` is a tensor when ``pred`` is one).
    given: tuple[tuple[str, str, str], ...] = ()
    # The type of container the value is built as, where it is a new one ("dict", "list", "tuple", "set"):
    # iterating a dict gives its keys, not what it holds.
    container: str | None = None


ANY_KIND = "*"  # an argument kind ``reaches_sink`` matches with every flow into a sink


class Flow(NamedTuple):
    """Where a parameter of a function goes (``FunctionFacts.flows``)."""

    param: str
    callee: str
    # None: ``param``, given a value of the summary kind ``kind`` (``engine.values.SUMMARY_KINDS``; the
    # ``**kwargs`` parameter: "holds-dict", given any keyword holding tensors), makes the first argument of
    # ``callee``, a rule's sink (``Rule.sinks``), hold tensors; when ``when`` is not empty, only if one of
    # its conditions holds (``engine.conditions``: what a project call the value passes through gives).
    # Otherwise: it is passed on as is to the project callable ``callee`` at that position or keyword
    # ("**": as ``**kwargs``).
    slot: int | str | None
    kind: str | None = None
    when: frozenset[Any] = frozenset()


class FunctionFacts:
    """A module-level function or a method (``module.Class.method``), and what its ``return`` statements give."""

    __slots__ = ("qualname", "path", "params", "kwargs", "flows", "passes", "returns", "typed", "opaque", "is_property")

    def __init__(self, qualname: str, path: str, params: tuple[str, ...] = (), kwargs: str | None = None) -> None:
        self.qualname = qualname
        self.path = path
        # The parameters a call's positional arguments fill, in order (a method's ``self`` left out),
        # then the keyword-only ones; and the ``**kwargs`` parameter, which takes the other keywords.
        self.params = params
        self.kwargs = kwargs
        self.flows: list[Flow] = []  # where parameters go: into a rule's sink, or on to another callable
        # Parameters, and in a method attributes of its instance ("self.policy"), handed as they are to a
        # callable outside the project: (parameter, callee, position or keyword, whether the call runs on every
        # path through the body), the keyword "**" for a ``**kwargs`` parameter passed on whole
        # (``ReplayBuffer(..., **kwargs)``).
        self.passes: list[tuple[str, str, int | str, bool]] = []
        self.is_property = False  # a method read as an attribute (``@property``): ``obj.name`` gives its value
        self.returns: list[Built] = []  # the calls that build returned values
        self.typed: list[Returned] = []  # one per ``return`` statement, in order
        # The value is not what the returns say: a generator, a coroutine, a decorator that may wrap it,
        # a ``return`` without a value, or a body that may end without returning.
        self.opaque = False


class FileFacts:
    __slots__ = ("path", "module", "imports", "classes", "functions")

    def __init__(self, path: str, module: str, imports: dict[str, str]) -> None:
        self.path = path
        self.module = module
        self.imports = imports  # local name -> qualified name, to follow re-exports
        self.classes: dict[str, ClassFacts] = {}
        self.functions: dict[str, FunctionFacts] = {}


def module_name_for(path: str) -> tuple[str, bool]:
    """Dotted module name of a file (walking up through packages), and whether it is a package."""
    directory, filename = os.path.split(os.path.abspath(path))
    stem = filename.rsplit(".", 1)[0]
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    while os.path.isfile(os.path.join(directory, "__init__.py")) or os.path.isfile(
        os.path.join(directory, "__init__.pyi")
    ):
        directory, package = os.path.split(directory)
        parts.append(package)
        if not package:
            break
    return ".".join(reversed(parts)), is_package


Loader = Callable[[str], FileFacts | None]
# (module, asking file) -> the files on disk that define the module, first match first (see engine.project).
Resolver = Callable[[str, str], tuple[str, ...]]
Ancestor = tuple[str, "ClassFacts | None"]


def _name(ancestor: Ancestor) -> str:
    return ancestor[0]
_MAX_MRO_DEPTH = 64
_MAX_FOLLOWED = 16  # factories followed through other factories
_T = TypeVar("_T")


class ProjectIndex:
    """Class and function facts of the project, answered as Python would resolve the names.

    A qualified name is looked up in the files its module resolves to *from the asking file*
    (``near``): two folders may each hold a ``utils.py``, and each script sees its own. Files
    reached that way are indexed on demand through the loader, whether or not they were linted.
    """

    def __init__(self, loader: Loader | None = None, resolver: Resolver | None = None,
                 unindexed: Mapping[str, bytes] | None = None) -> None:
        self._loader = loader
        self._resolver = resolver
        self._files: dict[str, FileFacts] = {}  # by absolute path
        self._modules: dict[str, list[FileFacts]] = {}
        # The run's files that no rule needed, so were never parsed: a question about every file
        # (``importers``) indexes those whose text could answer it.
        self._unindexed = dict(unindexed or {})

    def __getstate__(self) -> dict:
        # Workers get the index after resolution loaded what it needed; the loader stays home.
        return {**self.__dict__, "_loader": None, "_unindexed": {}}

    def add(self, facts: FileFacts) -> None:
        key = os.path.abspath(facts.path)
        if key in self._files:
            return
        self._files[key] = facts
        self._modules.setdefault(facts.module, []).append(facts)

    def _file(self, path: str) -> FileFacts | None:
        key = path if path in self._files else os.path.abspath(path)  # the resolver's paths are the keys already
        if key not in self._files and self._loader is not None:
            self._files[key] = FileFacts(path, "", {})  # guards against import cycles while loading
            loaded = self._loader(path)
            del self._files[key]
            self.add(loaded or FileFacts(path, module_name_for(path)[0], {}))
        return self._files.get(key)

    def module_files(self, module: str, near: str = "") -> list[FileFacts]:
        """Facts of the files ``module`` means in ``near``: resolved on disk, else by module name."""
        if self._resolver is not None and near:
            found = [f for path in self._resolver(module, near) if (f := self._file(path)) is not None]
            asking = self._files.get(os.path.abspath(near)) if not found else None
            if asking is not None and asking.module == module:
                found = [asking]  # a file Python cannot import by name (``my-script.py``) still sees itself
            return found
        return self._modules.get(module, [])

    def get_class(self, qualname: str, near: str = "") -> ClassFacts | None:
        """Facts of a class, following re-exports through package ``__init__`` imports."""
        return self._find("classes", qualname, near)

    def get_function(self, qualname: str, near: str = "") -> FunctionFacts | None:
        """Facts of a module-level function, following re-exports like ``get_class``; for a method
        (``module.Class.method``), of the definition the class's MRO reaches first."""
        found = self._find("functions", qualname, near)
        owner, _, method = qualname.rpartition(".")
        if found is not None or not owner:
            return found
        cls = self.get_class(owner, near)
        if cls is None:
            return None
        for _, facts in self.ancestry(cls.qualname, cls.path):
            if facts is not None and method in facts.methods:
                return self._find("functions", f"{facts.qualname}.{method}", facts.path)
        return None

    def built_class(self, qualname: str, near: str = "", seen: tuple[str, ...] = ()) -> tuple[str, str] | None:
        """(class, file naming it) whose instance a call of the project function or method ``qualname``
        gives: the one class every ``return`` builds, through other factories. None when ``qualname`` is
        not such a function, or its returns are unknown or differ."""
        function = self.get_function(qualname, near)
        if function is None or function.opaque or not function.typed or len(seen) > _MAX_FOLLOWED:
            return None
        built = {returned.built for returned in function.typed}
        if len(built) != 1 or None in built or function.qualname in seen:
            return None
        cls = built.pop()
        assert cls is not None
        inner = self.built_class(cls, function.path, seen + (function.qualname,))
        if inner is None and self.get_function(cls, function.path) is not None:
            return None  # a project function whose result is unknown
        return inner or (cls, function.path)

    def value_class(self, built: Built, near: str, same_value_methods: frozenset[str]) -> str | None:
        """The class (as its builder spelled it) of the value ``built`` describes (see ``value_origin``); None
        when it comes out of a method that is not one of ``same_value_methods``, or is unknown."""
        origin = self.value_origin(built, near, same_value_methods)
        return origin[0].callee if origin is not None and not origin[0].callee.startswith(".") else None

    def value_origin(self, built: Built, near: str, same_value_methods: frozenset[str],
                     seen: tuple[str, ...] = ()) -> tuple[Built, str] | None:
        """The call that made the value ``built`` describes, and the file whose names it spells, followed
        through the project: item ``i`` of a tuple a project function returns, a call of ``same_value_methods``
        (``.to(device)``) to its receiver, and a project factory to what every return builds. It ends at a
        class or library function, or at another method called on a value (``ac.get_value_head()``). None
        when the returns differ or anything on the way is unknown."""
        if len(seen) > _MAX_FOLLOWED:
            return None
        if built.callee.startswith("."):
            if built.receiver is None:
                return None
            if built.callee[1:] not in same_value_methods:
                return built, near
            return self.value_origin(built.receiver, near, same_value_methods, seen)
        position = None
        if built.callee.startswith("["):  # item i of what a factory returns
            if built.receiver is None or built.receiver.callee.startswith((".", "[")):
                return None
            position, built = built.callee[1:-1], built.receiver
        function = self.get_function(built.callee, near)
        if function is None:
            return (built, near) if position is None else None  # a class, or a function of a library
        if function.opaque or not function.returns or function.qualname in seen:
            return None
        origins = set()
        for returned in function.returns:
            item: Built | None = returned
            if position is not None:
                item = dict(returned.args).get(position) if returned.callee == TUPLE else None
            origins.add(self.value_origin(item, function.path, same_value_methods, seen + (function.qualname,))
                        if item is not None else None)
        return origins.pop() if len(origins) == 1 else None

    def returned_kind(self, qualname: str, near: str = "", seen: tuple[str, ...] = (),
                      args: tuple[tuple[int | str, str], ...] = ()) -> str | None:
        """The value kind (engine.values) every ``return`` of the project function or method gives, for a
        call passing ``args`` ((position or keyword, kind) of the arguments whose kind is known); None when
        any return is unknown or they differ (recursion and cycles count as unknown)."""
        kinds = self._every_return(qualname, near, seen, lambda function, returned: _given_kind(
            function, returned, args), self.returned_kind)
        return kinds[0] if kinds and len(set(kinds)) == 1 else None

    def returned_container(self, qualname: str, near: str = "", seen: tuple[str, ...] = ()) -> str | None:
        """The container type ("dict", "list", ...) every ``return`` of the project function or method
        builds, itself or through the factories it returns; None when unknown or they differ."""
        types = self._every_return(qualname, near, seen, lambda _, returned: returned.container,
                                   self.returned_container)
        return types[0] if types and len(set(types)) == 1 else None

    def reaches_sink(self, qualname: str, args: tuple[tuple[int | str, str], ...], near: str = "",
                     holds: Callable[[frozenset[Any], str], bool] = lambda when, path: not when,
                     seen: tuple[str, ...] = ()) -> tuple[int | str, str] | None:
        """(the argument, the sink) when an argument a call of the project function, method or lambda passes
        (``args``: position or keyword, summary kind or ``ANY_KIND``) reaches a rule's sink inside it, or in
        what it calls. ``holds`` answers a flow's conditions, asked in the file of the function
        (``engine.conditions``)."""
        function = self.get_function(qualname, near)
        if function is None or function.qualname in seen or len(seen) > _MAX_FOLLOWED:
            return None
        for slot, kind in args:
            param = _parameter(function, slot)
            for flow in function.flows:
                if flow.param != param:
                    continue
                if flow.slot is None:  # the sink: reached when given this kind (any, through ``**kwargs``)
                    if (kind in (flow.kind, ANY_KIND) or param == function.kwargs) and holds(flow.when, function.path):
                        return slot, flow.callee
                    continue
                passed = slot if flow.slot == "**" else flow.slot
                found = self.reaches_sink(flow.callee, ((passed, kind),), function.path, holds,
                                          seen + (function.qualname,))
                if found is not None:
                    return slot, found[1]
        return None

    def argument_reaches(self, qualname: str, slot: int | str, accept: Callable[[str, int | str], bool],
                         near: str = "", seen: tuple[str, ...] = (), every_path: bool = False) -> str | None:
        """The callable outside the project that the argument ``slot`` (position or keyword) of a call of
        the project function, method or class ``qualname`` is passed to, at a position or by a keyword
        ``accept(callee, slot)`` takes (``transform=`` of a replay buffer, the object of ``copy.deepcopy``),
        inside it or in the project functions it passes it on to, as it is or in ``**kwargs``; with
        ``every_path``, only by calls that run on every path through their function. A class's argument goes
        through its ``__init__``, and, stored as ``self.x``, to what any method hands ``self.x``."""
        function = self.get_function(qualname, near)
        if function is None:
            cls = self.get_class(qualname, near) if qualname not in seen and len(seen) <= _MAX_FOLLOWED else None
            return self._stored_reaches(cls, slot, accept, seen + (qualname,), every_path) if cls is not None else None
        if function.qualname in seen or len(seen) > _MAX_FOLLOWED:
            return None
        return self._passed_reaches(function, _parameter(function, slot), slot, accept, seen + (function.qualname,),
                                    every_path)

    def _passed_reaches(self, function: FunctionFacts, name: str | None, slot: int | str,
                        accept: Callable[[str, int | str], bool], seen: tuple[str, ...], every_path: bool) -> str | None:
        """``argument_reaches`` for the value the function holds as ``name`` (a parameter, "self.x"); a
        keyword its ``**kwargs`` takes is also read as ``kwargs["key"]``."""
        read = f'{name}["{slot}"]' if name is not None and name == function.kwargs and isinstance(slot, str) else None
        for held, callee, passed_as, always in function.passes:
            passed = slot if passed_as == "**" else passed_as  # in ``**kwargs``, an argument keeps its keyword
            if held in (name, read) and (always or not every_path) and accept(callee, passed):
                return callee
        for flow in function.flows:  # (recorded only where they run on every path)
            if flow.param != name or flow.slot is None:
                continue
            passed = slot if flow.slot == "**" else flow.slot
            found = self.argument_reaches(flow.callee, passed, accept, function.path, seen, every_path)
            if found is not None:
                return found
        return None

    def _stored_reaches(self, cls: ClassFacts, slot: int | str, accept: Callable[[str, int | str], bool],
                        seen: tuple[str, ...], every_path: bool) -> str | None:
        """``argument_reaches`` for a constructor call: through ``__init__``, then through the members that
        store the argument (``self.policy = policy``, a dataclass field) to what the methods hand them."""
        ancestry = [facts for _, facts in self.ancestry(cls.qualname, cls.path) if facts is not None]
        init = self.get_function(f"{cls.qualname}.__init__", cls.path)
        found = self.argument_reaches(init.qualname, slot, accept, init.path, seen, every_path) \
            if init is not None else None
        stored = {attr for facts in ancestry for attr, assigned in facts.attrs.items()
                  if any(fact.param is not None and slot in (fact.param, fact.position) for fact in assigned)}
        for facts in ancestry if found is None and stored else ():
            for method in sorted(facts.methods):
                function: FunctionFacts | None = self._find("functions", f"{facts.qualname}.{method}", facts.path)
                for attr in sorted(stored):
                    if found is None and function is not None:
                        found = self._passed_reaches(function, f"self.{attr}", slot, accept, seen, every_path)
        return found

    def unplaced_tensordict(self, qualname: str, near: str = "", seen: tuple[str, ...] = ()) -> FunctionFacts | None:
        """The project function that builds the TensorDict with no device that every ``return`` of the
        project function or method ``qualname`` gives, itself or through other factories; None when any
        return is something else or unknown (recursion and cycles count as unknown)."""
        builders = self._every_return(qualname, near, seen, lambda function, returned: function if returned.unplaced
                                      else None, self.unplaced_tensordict)
        return builders[0] if builders else None

    def _every_return(self, qualname: str, near: str, seen: tuple[str, ...],
                      direct: Callable[[FunctionFacts, Returned], _T | None],
                      follow: Callable[[str, str, tuple[str, ...]], _T | None]) -> list[_T] | None:
        """One answer per ``return`` of the project function or method: ``direct`` of the return, else
        ``follow`` asked of the factory it calls. None when it is no plain project function (unknown,
        opaque, recursive, followed too deep) or any return has no answer."""
        function = self.get_function(qualname, near)
        if function is None or function.opaque or not function.typed or function.qualname in seen \
                or len(seen) > _MAX_FOLLOWED:
            return None
        answers = []
        for returned in function.typed:
            answer = direct(function, returned)
            if answer is None and returned.built is not None:
                answer = follow(returned.built, function.path, seen + (function.qualname,))
            if answer is None:
                return None
            answers.append(answer)
        return answers

    def _find(self, table: str, qualname: str, near: str) -> Any | None:
        for _ in range(8):  # re-export chains are short; this bounds cycles
            located = self._locate(qualname, near)
            if located is None:
                return None
            files, local = located
            head, _, rest = local.partition(".")
            for facts in files:
                found = getattr(facts, table).get(f"{facts.module}.{local}" if facts.module else local)
                if found is not None:
                    return found
            target = next(((f.imports[head], f.path) for f in files if head in f.imports), None)
            if target is None:
                return None
            next_name = f"{target[0]}.{rest}" if rest else target[0]
            if next_name == qualname:
                return None
            qualname, near = next_name, target[1]
        return None

    def _locate(self, qualname: str, near: str) -> tuple[list[FileFacts], str] | None:
        """The files of the longest module prefix of ``qualname`` that exists, and the rest of the name."""
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            files = self.module_files(".".join(parts[:cut]), near)
            if files:
                return files, ".".join(parts[cut:])
        return None

    def canonical(self, qualname: str, near: str = "") -> str:
        cls = self.get_class(qualname, near)
        return cls.qualname if cls else qualname

    def mro(self, qualname: str, near: str = "", leaf: Callable[[str], bool] | None = None) -> list[Ancestor] | None:
        """The class's C3 method resolution order, as Python computes it: (qualified name, facts).

        Classes outside the index (library classes) and those ``leaf`` accepts end the search
        upwards. None when no consistent order exists (Python would refuse the class).
        ``qualname`` may name a project function or method (``make_encoder``): the order is that of
        the class its calls build (see ``built_class``), so every rule reads factories alike.
        """
        memo: dict[str, list[Ancestor] | None] = {}
        if self.get_class(qualname, near) is None:
            qualname, near = self.built_class(qualname, near) or (qualname, near)

        def linearise(name: str, origin: str, depth: int) -> list[Ancestor] | None:
            cls = self.get_class(name, origin)
            key = cls.qualname if cls is not None else name
            if key in memo:
                return memo[key]
            if depth > _MAX_MRO_DEPTH:
                return None
            memo[key] = None  # a class among its own ancestors has no order
            if cls is None or (leaf is not None and (leaf(name) or leaf(key))):
                memo[key] = [(name if cls is None else key, cls)]
                return memo[key]
            found = [linearise(base, cls.path, depth + 1) for base in cls.bases if base != "?"]
            parents = [p for p in found if p is not None]
            if len(parents) < len(found):
                return None
            merged = c3_merge([*parents, [p[0] for p in parents if p]], key=_name)
            memo[key] = None if merged is None else [(key, cls), *merged]
            return memo[key]

        return linearise(qualname, near, 0)

    def ancestry(self, qualname: str, near: str = "") -> list[Ancestor]:
        """The class and its ancestors in MRO order; just the class when no order exists."""
        order = self.mro(qualname, near)
        if order is not None:
            return order
        cls = self.get_class(qualname, near)
        return [(cls.qualname if cls else qualname, cls)]

    def derives_from(self, qualname: str, roots: Callable[[str], bool], near: str = "") -> bool:
        """True when the class, or any ancestor, satisfies ``roots`` (by qualified name)."""
        return any(roots(name) for name, _ in self.ancestry(qualname, near))

    def method_owner(self, qualname: str, method: str, near: str = "") -> str | None:
        """The class Python takes ``method`` from, among the indexed classes of the MRO."""
        for name, cls in self.ancestry(qualname, near):
            if cls is not None and method in cls.methods:
                return name
        return None

    def importers(self, qualname: str) -> list[str]:
        """Paths of the run's files that import ``qualname`` by name (``from m import X``)."""
        name = qualname.rpartition(".")[2].encode()
        for path in [path for path, data in self._unindexed.items() if name in data]:
            del self._unindexed[path]
            self._file(path)
        return sorted(facts.path for facts in self._files.values() if qualname in facts.imports.values())


def _parameter(function: FunctionFacts, slot: int | str) -> str | None:
    """The parameter an argument fills: by position, by keyword, or ``**kwargs`` for another keyword."""
    if isinstance(slot, int):
        return function.params[slot] if slot < len(function.params) else None
    if slot.startswith("self."):  # a member of the method's instance (``Returned.given``)
        return slot
    return slot if slot in function.params else function.kwargs


def _given_kind(function: FunctionFacts, returned: Returned, args: tuple[tuple[int | str, str], ...]) -> str | None:
    """What one ``return`` gives: its kind, else what its summary says for the arguments a call passes."""
    if returned.kind is not None or not returned.given:
        return returned.kind
    for slot, kind in args:
        param = _parameter(function, slot)
        for name, assumed, result in returned.given:
            if name == param and assumed == kind:
                return result
    return None

