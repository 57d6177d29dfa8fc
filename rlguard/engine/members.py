"""What the members of a value hold: a search through the project index for a member path that ends in
a value a rule looks for (RLG001: one that cannot be deep-copied).

A value is asked about as an instance of a class built with some arguments (``Policy(lock)``), as what
a project function returns (or item ``i`` of the tuple it returns), or as ``self.<attr>`` of a class.
An instance holds what its methods assign to ``self`` (in any method, in any base class, C3 order),
the constructor arguments its ``__init__`` stores (``self.guard = guard``, ``self.guard =
options["guard"]``, a dataclass field), items of container literals, and, through other classes of
the project, their members in turn. A member set lazily, under a test that it is still unset
(``if self._lock is None: self._lock = Lock()`` outside the constructor), is held only once that
method ran: a fresh instance does not hold it, but reading the attribute (or a property caching it)
gives it.
"""

from __future__ import annotations

import os
import re
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from rlguard.engine.index import TUPLE, AttrFact, Built, ClassFacts, ProjectIndex
from rlguard.engine.source_lines import class_block, source_lines

_MAX_DEPTH = 8  # how far classes, factories and wrappers are followed
Args = tuple[tuple[int | str, str], ...]  # (position or keyword, class of the argument) of a constructor call


@dataclass(frozen=True, eq=False)
class Search:
    """What a rule looks for in members, and where the search stops. Compared by identity (a rule
    builds one per configuration), which keys the memo."""

    # A factory or type name -> how a finding names what it builds, when that is what is looked for.
    what: Callable[[str], str | None]
    # A class whose instances are left alone (it copies by its own rules, it is marked).
    stops: Callable[[ClassFacts], bool]
    # Callees whose result is never looked into (``uncopyable(policy)``).
    ignored: frozenset[str] = frozenset()
    # Library callables that hold what they are given: the keywords they take it by (positional too).
    wrappers: Mapping[str, frozenset[str]] | None = None
    # Methods that return their receiver (``module.to(device)``).
    same_value_methods: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Culprit:
    """Why a value holds what was looked for: the member path from it, what that holds, where it was set."""

    holder: str  # qualified name of the class asked about
    member: tuple[str, ...]  # attribute path, e.g. ("camera", "lock")
    what: str
    path: str
    line: int


_MEMO: weakref.WeakKeyDictionary[ProjectIndex, dict] = weakref.WeakKeyDictionary()


def instance_holding(index: ProjectIndex, qualname: str, near: str, search: Search, args: Args = (),
                     stack: tuple[str, ...] = ()) -> Culprit | None:
    """The member of an instance of the class ``qualname`` (built with ``args``) holding what ``search``
    looks for; for a project function, of what it returns."""
    memo = _MEMO.setdefault(index, {})
    key = (qualname, os.path.dirname(near), search, args)
    if key in memo:
        return memo[key]
    cls = index.get_class(qualname, near)
    found = None
    if cls is not None and cls.qualname not in stack and len(stack) < _MAX_DEPTH:
        found = _class_holding(index, cls.qualname, cls.path, search, args, stack + (cls.qualname,))
    elif cls is None:  # ``make_policy()``: what the factory returns
        found = returned_holding(index, qualname, None, near, search, stack)
    if not stack or found is not None:  # a result inside a cycle depends on the path: do not keep it
        memo[key] = found
    return found


def returned_holding(index: ProjectIndex, qualname: str, position: int | None, near: str, search: Search,
                     stack: tuple[str, ...] = ()) -> Culprit | None:
    """What the project function ``qualname`` returns holds: the value itself, or with a ``position``,
    that item of a returned tuple (``actor, critic = make_models()``)."""
    factory = index.get_function(qualname, near)
    if factory is None or factory.qualname in stack or len(stack) >= _MAX_DEPTH:
        return None
    inner = stack + (factory.qualname,)
    owner = qualname.rpartition(".")[0]
    for returned in factory.returns:
        built: Built | None = returned
        if position is not None:
            built = dict(returned.args).get(str(position)) if returned.callee == TUPLE else None
        found = _built_holding(index, built, factory.path, search, owner, inner) if built is not None else None
        if found is not None:
            return found
    return None


def attribute_holding(index: ProjectIndex, class_qualname: str, attr: str, near: str,
                      search: Search) -> Culprit | None:
    """What reading ``<instance>.<attr>`` of the class gives, when it holds what ``search`` looks for:
    a value assigned to ``self.<attr>`` in any method (lazily set ones included, since reading it comes
    after), or what a property of that name returns."""
    for _, facts in index.ancestry(class_qualname, near):
        if facts is None:
            continue
        for fact in facts.attrs.get(attr, ()):
            for _, callee, built, _ in _held(fact, ()):
                found = _value_holding(index, callee, built, facts.path, search, ())
                if found is not None:
                    return found
    function = index.get_function(f"{class_qualname}.{attr}", near)
    if function is not None and function.is_property:
        return returned_holding(index, function.qualname, None, function.path, search)
    return None


def _value_holding(index: ProjectIndex, callee: str, built: Built | None, near: str,
                   search: Search, stack: tuple[str, ...], args: Args = ()) -> Culprit | None:
    if built is not None:  # the calls that built it say more: what a wrapper holds, what a class was given
        return _built_holding(index, built, near, search, "", stack)
    if not callee or callee.startswith("<"):
        return None
    return instance_holding(index, callee, near, search, args, stack)


def _built_holding(index: ProjectIndex, built: Built, near: str, search: Search, owner: str,
                   stack: tuple[str, ...]) -> Culprit | None:
    """What the value a factory returns holds (``owner``: the factory's class, for ``self.x``)."""
    if search.ignored.intersection(built.marked_by) or built.callee in search.ignored:
        return None  # deliberately left alone
    if built.callee.startswith("self."):  # ``return self._policy``
        return attribute_holding(index, owner, built.callee[5:], near, search) if owner else None
    if built.callee.startswith("["):  # item i of what a factory returns
        receiver = built.receiver
        if receiver is None or receiver.callee.startswith((".", "[", "self.")):
            return None
        return returned_holding(index, receiver.callee, int(built.callee[1:-1]), near, search, stack)
    if built.callee.startswith("."):  # policy.to(device) is the policy
        if built.receiver is None or built.callee[1:] not in search.same_value_methods:
            return None
        return _built_holding(index, built.receiver, near, search, owner, stack)
    keywords = (search.wrappers or {}).get(built.callee)
    if keywords is not None:
        wrapped = (arg for keyword, arg in built.args if keyword is None or keyword in keywords)
        return next((c for arg in wrapped if (c := _built_holding(index, arg, near, search, owner, stack))), None)
    if built.callee.startswith(("builtins.", "typing.")):
        return None
    args = tuple((keyword, arg.callee) for keyword, arg in built.args
                 if keyword is not None and not arg.callee.startswith((".", "[", "<", "self.")))
    return instance_holding(index, built.callee, near, search, args, stack)


def _class_holding(index: ProjectIndex, qualname: str, path: str, search: Search, args: Args,
                   stack: tuple[str, ...]) -> Culprit | None:
    chain = [facts for _, facts in index.ancestry(qualname, path) if facts is not None]
    if any(search.stops(facts) for facts in chain):
        return None
    # A member holding what is looked for itself is a better answer than one found through another class.
    for facts in chain:
        for attr, attr_facts in facts.attrs.items():
            for nth, fact in enumerate(attr_facts):
                for where, callee, _, _ in _held(fact, args, constructing=True):
                    what = search.what(callee) if callee else None
                    if what is None and callee and not callee.startswith("<"):
                        what = search.what(index.canonical(callee, facts.path))  # re-exported project class
                    if what is not None:
                        line = _assignment_line(facts.path, facts.name, attr, callee, nth, len(attr_facts))
                        return Culprit(qualname, (attr + where,), what, facts.path, line)
    for facts in chain:
        for attr, attr_facts in facts.attrs.items():
            for fact in attr_facts:
                for where, callee, built, passed in _held(fact, args, constructing=True):
                    inner = _value_holding(index, callee, built, facts.path, search, stack, passed)
                    if inner is not None:
                        return Culprit(qualname, (attr + where, *inner.member), inner.what, inner.path, inner.line)
    return None


Held = tuple[str, str, "Built | None", Args]


def _held(fact: AttrFact, args: Args, constructing: bool = False) -> Iterator[Held]:
    """(where, class or factory, the calls that built it, the arguments it was given) for what a member holds: itself
    (where ""), then the items of a container literal. ``constructing``: as a new instance holds it,
    built with ``args`` (a stored constructor argument is the argument given; a lazily set member is
    not held yet)."""
    if constructing and fact.lazy:
        return
    passed = _argument(fact, args) if fact.param is not None else None
    if passed is not None:
        yield "", passed, None, ()
    elif fact.callee is not None or fact.built is not None:
        inner = _forwarded(fact, args)
        built = None if fact.items or inner else fact.built  # items name the path better
        yield "", fact.callee or "", built, inner
    for where, callee in fact.items:
        yield where, callee, None, ()


def _forwarded(fact: AttrFact, args: Args) -> Args:
    """The arguments the call that built the member got from the constructor's (``Inner(guard, **kwargs)``)."""
    found: list[tuple[int | str, str]] = []
    named = {param for _, param, _ in fact.forwards}
    for slot, param, position in fact.forwards:
        if slot == "**":  # every keyword the constructor took into ``**kwargs``
            found += [(key, cls) for key, cls in args if isinstance(key, str) and key not in named]
            continue
        found += [(slot, cls) for key, cls in args if key == param or (isinstance(key, int) and key == position)]
    return tuple(found)


def _argument(fact: AttrFact, args: Args) -> str | None:
    """The class of the constructor argument that fills the parameter the member stores."""
    for slot, cls in args:
        if slot == fact.param or (isinstance(slot, int) and slot == fact.position):
            return cls
    return None


def _assignment_line(path: str, class_name: str, attr: str, callee: str | None, nth: int, count: int) -> int:
    """The line of the ``nth`` of ``count`` assignments ``self.<attr> = ...`` in class ``class_name`` (0 if
    not found); a dataclass field ``attr: ...`` when there is no assignment.

    Only findings need it, so it is read from the text (``engine/source_lines.py``). When the text and
    the index disagree on the number of assignments, the first one that names the constructor wins,
    else the first one.
    """
    lines = source_lines(path)
    if lines is None:
        return 0
    start, end = class_block(lines, class_name) or (0, len(lines))
    own = rf"\w+\.{re.escape(attr)}"
    # ``self.x = ...``, ``self.x: T = ...``, and ``self.a, self.x = ...`` (a tuple of attributes)
    target = re.compile(rf"^\s*({own}\s*(:[^=]*)?|(\w+\.\w+\s*,\s*)*{own}\s*(,\s*\w+\.\w+\s*)*,?\s*)=(?!=)")
    assignments = [number for number in range(start + 1, end + 1) if target.match(lines[number - 1])]
    if not assignments:
        field = re.compile(rf"^\s*{re.escape(attr)}\s*:")
        assignments = [number for number in range(start + 1, end + 1) if field.match(lines[number - 1])]
    if len(assignments) == count:
        return assignments[nth]
    name = "for" if callee == "<generator>" else (callee or "").rpartition(".")[2]
    named = [n for n in assignments if name and re.search(rf"\b{re.escape(name)}\b", lines[n - 1])]
    return (named or assignments or [0])[0]
