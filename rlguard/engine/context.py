"""What rules know about the file being walked: names, scopes, bindings, enclosing class.

The traversal keeps this up to date as it walks, so every rule shares one resolution
instead of re-deriving it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple
from collections.abc import Mapping, Sequence

from rlguard.engine.lazy import cst

from rlguard.engine.index import TUPLE, AttrFact, Built, ClassFacts, FileFacts, Flow, FunctionFacts, ProjectIndex
from rlguard.engine.names import ImportTable, dotted_name
from rlguard.engine.annotations import type_alternatives
from rlguard.engine.member_facts import field_default, forwarded, has_fields, keyword_read, lazily_set, stored_parameter
from rlguard.engine.containers import assigned_item, augmented, container_kind, literal_item, literal_items, mutation_added
from rlguard.engine.builtins_model import mutated_kind
from rlguard.engine.reach import argument_slots
from rlguard.engine.summaries import parameters_reaching, returned_value
from rlguard.engine.class_lookup import may_be_project
from rlguard.engine.inference import annotated_tensors, is_tensor_valued

if TYPE_CHECKING:
    from rlguard.engine.versions import VersionMap

_MAX_BUILT_DEPTH = 6  # names followed plus calls nested, in what one ``return`` builds


@dataclass
class Binding:
    """The latest thing a name was bound to in a scope, in source order."""

    value: cst.BaseExpression | None = None  # the assigned expression, when simple
    annotation: cst.BaseExpression | None = None  # a parameter's or variable's annotation
    opaque: bool = False  # bound by something we do not model (loop target, unpacking, ...)
    # The binding this one replaced in the same scope: what the name meant while ``value`` was
    # evaluated (``x = x.mean()`` reads the previous ``x``).
    previous: Binding | None = None
    # ``actor, critic = make_models()``: the unpacked expression and this name's position in it.
    # Such a binding stays opaque; only readers that understand positions follow it.
    unpacked: tuple[cst.BaseExpression, int] | None = None
    # ``for x in iterated``: the loop binds each item (the binding stays opaque); ``for k, v in iterated``
    # binds item ``position`` of each item.
    iterated: cst.BaseExpression | None = None
    position: int | None = None
    # Bound by a comprehension without ``if``: it takes every item in turn, so what it builds holds what
    # any item holds (a loop's body may skip some).
    every_item: bool = False
    # Mutations of a container bound here, in any scope (see ``Added``): the values it gained.
    added: list[Added] = field(default_factory=list)
    # A parameter assumed, while a function's summary is computed, to receive a value of this kind.
    assumed: str | None = None
    # A name bound to a lambda: the qualified name its summary is kept under in the index (``FileFacts.functions``).
    summary: str | None = None


class Added(NamedTuple):
    """A value a container gained after it was bound: ``d[k] = v``, ``items.append(v)`` (one item),
    ``items.extend(vs)``, ``d.update(other)``, ``items += vs`` (each item of ``value``: ``spread``)."""

    value: cst.BaseExpression
    spread: bool = False
    # The bindings the value's names had where it was added (a loop variable rebound later still names
    # what was added then): (name, (binding, whether in the innermost scope)).
    names: tuple[tuple[str, tuple[Binding, bool]], ...] = ()


# What a name means while a bound value is read: ``x = x.to(device)`` reads the previous ``x``.
Shadow = dict[str, "Binding | None"]


@dataclass(frozen=True)
class Instance:
    """What the engine can tell about the class of an expression's value (``FileContext.instance_of``).

    ``kind`` is "built" (the value a call of ``names[0]`` returns: a class, or a factory: a function, or
    a method named ``module.Class.method``, whose returns the index follows), "annotated" (declared as
    one of ``names``), "imported" (a module-level object imported as ``names[0]``), "self" (``self`` in
    class ``names[0]``), "self-attr" (``self.<attr>`` of class ``names[0]``), "super" (``super()`` in
    class ``names[0]``) or "item" (item ``position`` of what a call of ``names[0]`` returns:
    ``actor, critic = make_models()``).
    """

    kind: str
    names: tuple[str, ...]
    attr: str | None = None
    position: int | None = None
    # The expression reached (the call that builds the value, ``self.x``, an annotated name) and the
    # shadow it is read in: a rule may look into a wrapper's arguments (``TensorDictModule(net, ...)``).
    node: cst.BaseExpression | None = field(default=None, compare=False)
    shadow: Shadow = field(default_factory=dict, compare=False)
    via: tuple[str, ...] = ()  # the names followed to reach it, outermost first
    # For "annotated" names also bound to a value (``net: nn.Module = LockedNet()``): what the value is.
    value: Instance | None = None


@dataclass
class Scope:
    kind: str  # "module", "class", "function" or "lambda"
    node: cst.CSTNode | None
    bindings: dict[str, Binding] = field(default_factory=dict)
    class_facts: ClassFacts | None = None  # for class scopes
    self_name: str | None = None  # for methods: the first parameter's name
    # Branching statements (``if``, loops, ``try``, ``match``) of this scope the walk is inside: what
    # runs there runs on some paths only.
    branches: int = 0


class FileContext:
    """Per-file state shared by all rules during the single traversal."""

    def __init__(
        self,
        path: str,
        module: str,
        is_package: bool,
        target: tuple[int, ...],
        options: Mapping[str, Mapping[str, Any]],
        index: ProjectIndex | None = None,
        oldest: tuple[int, ...] | None = None,
        sinks: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.path = path
        self.sinks = sinks or {}  # every known rule's sinks (``Settings.sinks``): where parameters may go
        self.target = target  # removals are judged here: the newest version a pin admits
        self.oldest_target = oldest or target  # behaviour only old releases have is judged here
        self.options = options  # rule code -> its configured options
        self.index = index  # complete only in the fix pass; rules use requirements otherwise
        self.imports = ImportTable(module, is_package)
        self.scopes: list[Scope] = [Scope("module", None)]
        self.parameter_kinds = True  # summaries try kinds for parameters (``Returned.given``)
        self.assumed_members: dict[str, str] = {}  # ``self.<attr>`` -> the kind a summary takes it to hold
        self.facts = FileFacts(path, module, self.imports.names)
        self._callees_taking: dict[int, dict[str, tuple[str, ...]]] = {}  # by id of the function
        self.lowest = oldest  # a pin's lowest admitted torchrl; None when nothing bounds it below
        self._tree: cst.Module | None = None
        self._module_binds: dict[str, int] | None = None  # see ``rebound_at_module_level``
        self._versions: VersionMap | None = None
        self._lazy_values: dict[int, frozenset[int]] = {}  # by id of the method (see ``member_facts.lazily_set``)
        # By id of a lambda: its summary and its scope, until a name is bound to it (``_record_lambda``).
        self._lambdas: dict[int, tuple[FunctionFacts, Scope]] = {}

    # ----- queries for rules -----
    @property
    def module(self) -> str:
        return self.imports.module

    def lookup(self, name: str) -> Binding | None:
        """The binding of a name as seen from the current scope (class scopes are not enclosing)."""
        found = self.find_binding(name)
        return found[0] if found is not None else None

    def find_binding(self, name: str) -> tuple[Binding, bool] | None:
        """Like ``lookup``, with whether the binding is in the innermost scope."""
        position = self._binding_scope(name)
        if position is None:
            return None
        return self.scopes[position].bindings[name], position == len(self.scopes) - 1

    def _binding_scope(self, name: str) -> int | None:
        innermost = len(self.scopes) - 1
        for position in range(innermost, -1, -1):
            scope = self.scopes[position]
            if scope.kind == "class" and position != innermost:
                continue
            if name in scope.bindings:
                return position
        return None

    # The shape of the place being walked. Rules ask these, never the scope tables.
    @property
    def at_module_level(self) -> bool:
        return len(self.scopes) == 1

    def in_class_body(self) -> bool:
        """Directly in a class body (not in one of its methods)."""
        return self.scopes[-1].kind == "class"

    @property
    def scope_node(self) -> cst.CSTNode | None:
        """The function or class whose body is being walked; None at module level."""
        return self.scopes[-1].node

    def method_class(self) -> ClassFacts | None:
        """The class, when the innermost scope is one of its methods (a function directly in its body)."""
        if len(self.scopes) >= 2 and self.scopes[-1].kind == "function" and self.scopes[-2].kind == "class":
            return self.scopes[-2].class_facts
        return None

    def current_method(self) -> cst.FunctionDef | None:
        """The method being walked directly (not a function nested in it)."""
        return self.scopes[-1].node if self.method_class() is not None else None  # type: ignore[return-value]

    def enclosing_method(self) -> cst.FunctionDef | None:
        """The method of the innermost class being walked, nested functions included."""
        for position in range(len(self.scopes) - 1, 0, -1):
            if self.scopes[position].kind == "class":
                return None
            if self.scopes[position].kind == "function" and self.scopes[position - 1].kind == "class":
                return self.scopes[position].node  # type: ignore[return-value]
        return None

    def rebound_at_module_level(self, name: str) -> bool:
        """Whether a module-level name may hold another value by the time a function reads it: the
        module binds it more than once (in any block), or a function declares it ``global``."""
        if self._module_binds is None:
            assert self._tree is not None, "declare_definitions runs before any rule"
            self._module_binds = _module_binds(self._tree)
        return self._module_binds.get(name, 0) > 1

    def enclosing_functions(self) -> list[cst.FunctionDef]:
        """The functions being walked that are not methods (functions nested in a method included),
        outermost first."""
        return [scope.node for position, scope in enumerate(self.scopes)  # type: ignore[misc]
                if scope.kind == "function" and self.scopes[position - 1].kind != "class"]

    def is_self(self, name: str) -> bool:
        """``name`` is, where it is read, the ``self`` parameter of a method (nested functions
        included), not rebound since: the one answer every rule uses."""
        position = self._binding_scope(name)
        if position is None:
            return False
        scope = self.scopes[position]
        binding = scope.bindings[name]
        return scope.self_name == name and binding.value is None and not binding.opaque

    def self_class(self, node: cst.BaseExpression) -> ClassFacts | None:
        """The class an expression is an instance of when it is ``self``."""
        if isinstance(node, cst.Name) and self.is_self(node.value):
            return self.current_class
        return None

    def qualname(self, node: cst.CSTNode) -> str | None:
        """Fully qualified name of a Name/Attribute, unless its head is a local variable."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head = dotted.partition(".")[0]
        if self.lookup(head) is not None:
            return None  # a local name: a parameter or assignment, even one shadowing an import
        return self.imports.resolve_dotted(dotted)

    def callee(self, node: cst.CSTNode) -> str | None:
        """Qualified name of the function a Call calls."""
        return self.qualname(node.func) if type(node) is cst.Call else None  # not isinstance: see dotted_name

    def summarised_callee(self, node: cst.Call) -> str | None:
        """The qualified name the index keeps the summary of what a call calls under: the function's, a
        method of ``self``'s class, or the lambda a name is bound to (``dump = lambda d: json.dumps(d)``)."""
        callee = self.callee(node)
        if callee is None and isinstance(node.func, cst.Attribute):  # ``self.log(...)``
            cls = self.self_class(node.func.value)
            callee = f"{cls.qualname}.{node.func.attr.value}" if cls is not None else None
        if callee is None and isinstance(node.func, cst.Name):
            binding = self.lookup(node.func.value)
            callee = binding.summary if binding is not None else None
        return callee

    def project_callee(self, node: cst.Call) -> str | None:
        """``summarised_callee``, and for a method called on an instance of a project class
        (``Evaluator(env).evaluate(policy)``, ``evaluator.evaluate(policy)``) the method as the index names
        it (``module.Evaluator.evaluate``, found along the class's MRO); None when not the project's."""
        callee = self.summarised_callee(node) or self._instance_method(node)
        return callee if callee is not None and may_be_project(callee) else None

    def _instance_method(self, node: cst.Call) -> str | None:
        """The method a call names on an instance of a project class (``evaluator.evaluate(policy)``)."""
        if not isinstance(node.func, cst.Attribute):
            return None
        cls = self.class_of(node.func.value)
        return f"{cls}.{node.func.attr.value}" if cls is not None and may_be_project(cls) else None

    def binding_in(self, name: str, shadow: Shadow) -> tuple[Binding | None, Shadow]:
        """The binding of ``name`` under ``shadow``, and the shadow its value was evaluated in
        (where ``name`` meant the binding it replaced): the one way bindings are followed."""
        binding = shadow[name] if name in shadow else self.lookup(name)
        return binding, ({**shadow, name: binding.previous} if binding is not None else shadow)

    def instance_of(self, node: cst.BaseExpression, same_value_methods: frozenset[str] = frozenset(),
                    shadow: Shadow | None = None, depth: int = 0, via: tuple[str, ...] = ()) -> Instance | None:
        """What ``node`` is an instance of, following names to what they were bound to (``x = x.to(d)``
        included), unpacking (``a, b = make()``) and calls of ``same_value_methods`` to their receiver;
        None when unknown. The one answer every rule reads."""
        shadow = shadow or {}
        if depth > _MAX_BUILT_DEPTH:
            return None
        if isinstance(node, cst.Call):
            return self._call_instance(node, same_value_methods, shadow, depth, via)
        if isinstance(node, cst.Attribute):
            if _local_head(node, shadow):
                return None  # an attribute of a name as it was before the bindings followed: unknown
            attr = self.is_self_attr(node)
            cls = self.current_class
            if attr is not None and cls is not None:
                return Instance("self-attr", (cls.qualname,), attr, node=node, shadow=shadow, via=via)
            qualname = self.qualname(node)
            return Instance("imported", (qualname,), node=node, via=via) if qualname is not None else None
        if not isinstance(node, cst.Name):
            return None
        cls = self.self_class(node) if node.value not in shadow else None
        if cls is not None:
            return Instance("self", (cls.qualname,), node=node, via=via)
        binding, inner = self.binding_in(node.value, shadow)
        via = via + (node.value,)
        if binding is None:
            qualname = self.qualname(node) if node.value not in shadow else None
            return Instance("imported", (qualname,), node=node, via=via) if qualname is not None else None
        if binding.unpacked is not None:
            return self._item_instance(*binding.unpacked, same_value_methods, shadow, depth, via)
        if binding.opaque:
            return None
        value = self.instance_of(binding.value, same_value_methods, inner, depth + 1, via) \
            if binding.value is not None else None
        if binding.annotation is not None:
            names = tuple(q for t in type_alternatives(binding.annotation, self) if (q := self.qualname(t)) is not None)
            if names:
                return Instance("annotated", names, node=node, shadow=shadow, via=via, value=value)
        return value

    def _call_instance(self, node: cst.Call, same_value_methods: frozenset[str], shadow: Shadow, depth: int,
                       via: tuple[str, ...]) -> Instance | None:
        if isinstance(node.func, cst.Name) and node.func.value == "super" and self.lookup("super") is None:
            cls = self.current_class
            return Instance("super", (cls.qualname,), node=node, via=via) if cls is not None else None
        callee = self.qualname(node.func) if not _local_head(node.func, shadow) else None
        if callee is not None:
            return Instance("built", (callee,), node=node, shadow=shadow, via=via)
        if not isinstance(node.func, cst.Attribute):
            return None
        if node.func.attr.value in same_value_methods:
            return self.instance_of(node.func.value, same_value_methods, shadow, depth + 1, via)
        cls = self.self_class(node.func.value) if not _local_head(node.func, shadow) else None
        if cls is not None:  # ``self.make_policy()``: what the method returns (resolved through the MRO)
            return Instance("built", (f"{cls.qualname}.{node.func.attr.value}",), node=node, shadow=shadow, via=via)
        return None

    def _item_instance(self, source: cst.BaseExpression, position: int, same_value_methods: frozenset[str],
                       shadow: Shadow, depth: int, via: tuple[str, ...]) -> Instance | None:
        """Item ``position`` of an unpacked tuple literal, or of what a call returns."""
        if isinstance(source, (cst.Tuple, cst.List)):
            item = literal_item(source, position)
            return self.instance_of(item, same_value_methods, shadow, depth + 1, via) if item is not None else None
        if isinstance(source, cst.Call) and not _local_head(source.func, shadow):
            callee = self.qualname(source.func)
            if callee is not None:
                return Instance("item", (callee,), position=position, node=source, shadow=shadow, via=via)
        return None

    def value_of(self, node: cst.BaseExpression, depth: int = 4) -> cst.BaseExpression:
        """Follow simple name bindings (``x = expr``) to the expression behind a name."""
        while depth and isinstance(node, cst.Name):
            binding = self.lookup(node.value)
            if binding is None or binding.value is None:
                break
            node = binding.value
            depth -= 1
        return node

    @property
    def current_class(self) -> ClassFacts | None:
        """The class whose body (or method) the traversal is in."""
        for scope in reversed(self.scopes):
            if scope.class_facts is not None:
                return scope.class_facts
        return None

    @property
    def current_function(self) -> cst.FunctionDef | None:
        for scope in reversed(self.scopes):
            if scope.kind == "function":
                return scope.node  # type: ignore[return-value]
        return None

    def self_name(self) -> str | None:
        """Name of ``self`` when directly inside a method."""
        return self.scopes[-1].self_name if self.method_class() is not None else None

    def is_self_attr(self, node: cst.CSTNode) -> str | None:
        """``attr`` when node is ``self.attr`` inside a method, else None."""
        if type(node) is cst.Attribute and type(node.value) is cst.Name and self.is_self(node.value.value):
            return node.attr.value
        return None

    @property
    def versions(self) -> VersionMap:
        """The torchrl versions each block of the file runs at (shims, guards, gates). Complete once
        the walk is done: ask it from ``leave_Module`` or later."""
        if self._versions is None:
            from rlguard.engine.versions import VersionMap  # here: it imports the traversal, which imports this

            assert self._tree is not None, "declare_definitions runs before any rule"
            self._versions = VersionMap(self._tree, self.imports, self._module_value, self.oldest_target, self.target)
        return self._versions

    def _module_value(self, name: str) -> cst.BaseExpression | None:
        """What a module-level name was bound to; ``major, minor = expr`` gives ``expr[0]`` for ``major``."""
        binding = self.scopes[0].bindings.get(name)
        if binding is not None and binding.unpacked is not None:
            unpacked, position = binding.unpacked
            return cst.Subscript(unpacked, [cst.SubscriptElement(cst.Index(cst.Integer(str(position))))])
        return binding.value if binding is not None and not binding.opaque else None

    # ----- updates, called by the traversal -----
    def declare_definitions(self, module: cst.Module) -> None:
        """Module-level classes and functions, known before the walk: a function body may use
        one defined further down, since it runs after the whole module was executed."""
        self._tree = module
        for statement in module.body:
            if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
                self.imports.add_local_definition(statement.name.value)

    def enter_class(self, node: cst.ClassDef) -> None:
        outer = self.current_class
        prefix = outer.qualname if outer is not None else self.module
        qualname = f"{prefix}.{node.name.value}" if prefix else node.name.value
        bases = tuple(self._base_name(arg.value) for arg in node.bases if arg.keyword is None)
        decorators = tuple(self.qualname(d.decorator) or dotted_name(d.decorator) or "" for d in node.decorators)
        facts = ClassFacts(qualname, self.path, bases, decorators)
        self.facts.classes[qualname] = facts
        if outer is None and len(self.scopes) == 1:
            self.imports.add_local_definition(node.name.value)
        self.scopes[-1].bindings.pop(node.name.value, None)
        self.scopes.append(Scope("class", node, class_facts=facts))

    def _base_name(self, expr: cst.BaseExpression) -> str:
        if isinstance(expr, cst.Subscript):  # Generic[T], Base[...]
            expr = expr.value
        return self.qualname(expr) or dotted_name(expr) or "?"

    def enter_function(self, node: cst.FunctionDef) -> None:
        enclosing = self.scopes[-1]
        if enclosing.kind == "class" and enclosing.class_facts is not None:
            enclosing.class_facts.methods.add(node.name.value)
            if only_raises_not_implemented(node):
                enclosing.class_facts.stubs.add(node.name.value)
            if any((dotted_name(d.decorator) or "").rpartition(".")[2] == "abstractmethod" for d in node.decorators):
                enclosing.class_facts.abstract.add(node.name.value)
        if len(self.scopes) == 1:
            self.imports.add_local_definition(node.name.value)
            enclosing.bindings.pop(node.name.value, None)
        else:
            enclosing.bindings[node.name.value] = Binding(opaque=True)
        scope = Scope("function", node)
        params = node.params
        ordered = [*params.posonly_params, *params.params]
        if enclosing.kind == "class" and ordered and not _is_static(node):
            scope.self_name = ordered[0].name.value
        for param in (*ordered, *params.kwonly_params):
            scope.bindings[param.name.value] = Binding(annotation=param.annotation.annotation if param.annotation else None)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bindings[star.name.value] = Binding(opaque=True)
        self.scopes.append(scope)

    @property
    def lambdas(self) -> list[cst.Lambda]:
        """The lambdas being walked, innermost last: each is a scope."""
        return [scope.node for scope in self.scopes if scope.kind == "lambda" and isinstance(scope.node, cst.Lambda)]

    def enter_lambda(self, node: cst.Lambda) -> None:
        """A lambda is a scope: its parameters shadow outer names in its body. Where its parameters go is
        recorded while its body is walked, in a summary kept until a name is bound to it (``bind``)."""
        params = node.params
        ordered = [param.name.value for param in (*params.posonly_params, *params.params, *params.kwonly_params)]
        kwargs = params.star_kwarg.name.value if isinstance(params.star_kwarg, cst.Param) else None
        scope = Scope("lambda", node)
        for name in ordered:
            scope.bindings[name] = Binding()
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bindings[star.name.value] = Binding(opaque=True)
        self.scopes.append(scope)
        self._lambdas[id(node)] = FunctionFacts("<lambda>", self.path, tuple(ordered), kwargs), scope

    def leave_scope(self) -> None:
        self.scopes.pop()

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None, annotation=None) -> None:
        """Record an assignment target: names in the current scope, ``self.x`` in class facts."""
        if isinstance(target, cst.Name):
            bindings = self.scopes[-1].bindings
            bindings[target.value] = Binding(value=value, annotation=annotation, previous=bindings.get(target.value))
            if isinstance(value, cst.Lambda):
                bindings[target.value].summary = self._record_lambda(target.value, value)
            if annotation is not None and self.scopes[-1].kind == "class":  # a field: ``loss: Tensor`` in a dataclass
                self._record_field(target.value, value, annotation)
        elif isinstance(target, cst.Subscript) and value is not None:  # ``metrics[k] = v``
            container = self.mutable_container(target.value)
            if container is not None:
                added = assigned_item(container[1], target, value)
                if added is not None:
                    container[0].added.append(self.pinned(added))
        elif isinstance(target, (cst.Tuple, cst.List)):
            unpacked = None if has_starred(target.elements) else value  # a starred target shifts positions
            for position, element in enumerate(target.elements):
                self.bind_opaque(element.value)
                if unpacked is not None and isinstance(element.value, cst.Name):
                    self.scopes[-1].bindings[element.value.value].unpacked = (unpacked, position)
                attr = self.is_self_attr(element.value) if unpacked is not None else None
                if attr is not None and unpacked is not None:  # ``self.actor, self.critic = make_models()``
                    self._record_unpacked_attr(attr, unpacked, position)
        elif value is not None:
            attr = self.is_self_attr(target)
            if attr is not None:
                self._record_attr(attr, value, annotation)

    def _record_lambda(self, name: str, node: cst.Lambda) -> str | None:
        """Keep the summary of a lambda bound to a name at module level or in a module-level function or a
        method (``main.<locals>.dump``), under the qualified name callers reach it by; None elsewhere."""
        found = self._lambdas.pop(id(node), None)
        if found is None or self.scopes[-1].kind == "class":
            return None
        owner = self._function_facts() if len(self.scopes) > 1 else None
        if len(self.scopes) > 1 and owner is None:
            return None
        facts, scope = found
        facts.qualname = f"{owner.qualname}.<locals>.{name}" if owner is not None else \
            f"{self.module}.{name}" if self.module else name
        self.scopes.append(scope)  # what its body gives, typed in its own scope again
        facts.typed.append(returned_value(node.body, self, facts.params))
        self.scopes.pop()
        self.facts.functions[facts.qualname] = facts
        return facts.qualname

    def record_return(self, node: cst.Return) -> None:
        """What a module-level function or a method returns: the calls that build it (factories, for
        RLG001) and its type (``FunctionFacts.typed``), for every rule through the index."""
        facts = self._function_facts()
        if facts is None:
            return
        function = self.scopes[-1].node
        assert isinstance(function, cst.FunctionDef)
        if not facts.typed and not facts.opaque:  # the first return: what the whole definition allows
            facts.opaque = _opaque_function(function, self)
        if node.value is None:
            facts.opaque = True
            return
        facts.typed.append(returned_value(node.value, self, facts.params if self.parameter_kinds else ()))
        attr = self.is_self_attr(node.value)
        if attr is not None:  # ``return self._policy`` (a property caching a policy)
            if Built(f"self.{attr}") not in facts.returns:
                facts.returns.append(Built(f"self.{attr}"))
            return
        if isinstance(node.value, (cst.Tuple, cst.List)):  # return actor, critic
            if has_starred(node.value.elements):
                return
            items = ((str(i), self.built(e.value, marks_in=function)) for i, e in enumerate(node.value.elements))
            built: Built | None = Built(TUPLE, tuple((i, b) for i, b in items if b is not None))
        else:
            built = self.built(node.value, marks_in=function)
        if built is not None and built not in facts.returns:  # ``return net`` on several branches is one fact
            facts.returns.append(built)

    def record_yield(self, _node: cst.CSTNode) -> None:
        """A generator gives an iterator, not what its ``return`` statements say."""
        facts = self._function_facts()
        if facts is not None:
            facts.opaque = True

    def _function_facts(self) -> FunctionFacts | None:
        """Facts of the function being walked directly, when the index can name it: a module-level
        function (``module.f``) or a method (``module.Class.f``)."""
        if len(self.scopes) < 2 or self.scopes[-1].kind != "function" or self.scopes[-2].kind == "function":
            return None
        function = self.scopes[-1].node
        assert isinstance(function, cst.FunctionDef)
        owner = self.scopes[-2].class_facts
        prefix = owner.qualname if owner is not None else self.module
        qualname = f"{prefix}.{function.name.value}" if prefix else function.name.value
        facts = self.facts.functions.get(qualname)
        if facts is None:
            kwargs = function.params.star_kwarg
            facts = self.facts.functions[qualname] = FunctionFacts(
                qualname, self.path, _parameters(function, owner), kwargs.name.value if kwargs is not None else None)
            facts.is_property = owner is not None and any(
                self.qualname(d.decorator) in _PROPERTIES for d in function.decorators)
        return facts

    def record_flow(self, node: cst.Call) -> None:
        """Where the function being walked sends its parameters (``FunctionFacts.flows``): into a rule's
        sink, or on to another function of the project as they are."""
        facts = self._flow_facts()
        if facts is None:
            return
        callee = self.summarised_callee(node)
        if callee is None and self._passes_parameter(node, facts):  # ``evaluator.evaluate(**kwargs)``
            callee = self._instance_method(node)
        if callee is None:
            return
        sinks = self.sinks
        if callee not in sinks and not may_be_project(callee):
            self._record_passes(node, callee)
            return
        if self.scopes[-1].branches:  # a branch or loop may not run it
            return
        if callee in sinks:
            self._record_sink(node, callee, sinks[callee], facts)
        else:
            self._record_forwards(node, callee, facts)

    def _flow_facts(self) -> FunctionFacts | None:
        """The summary the flows of the body being walked go to: a module-level function's, a method's,
        or a lambda's (directly in it: a lambda in a lambda is not followed)."""
        if self.scopes[-1].kind == "lambda":
            found = self._lambdas.get(id(self.scopes[-1].node))
            return found[0] if found is not None else None
        return self._function_facts()

    def enter_branch(self, _node: cst.CSTNode) -> None:
        self.scopes[-1].branches += 1

    def leave_branch(self, _node: cst.CSTNode) -> None:
        self.scopes[-1].branches -= 1

    def _record_sink(self, node: cst.Call, callee: str, escapes: tuple[str, ...], facts: FunctionFacts) -> None:
        if any(arg.star for arg in node.args) or any(
                arg.keyword is not None and arg.keyword.value in escapes for arg in node.args) or not node.args:
            return
        payload = node.args[0].value if node.args[0].keyword is None else None
        if payload is None:
            return
        for param, kind, when in parameters_reaching(payload, self, (*facts.params, *filter(None, [facts.kwargs]))):
            flow = Flow(param, callee, None, kind, when)
            if flow not in facts.flows:
                facts.flows.append(flow)

    @staticmethod
    def _passes_parameter(node: cst.Call, facts: FunctionFacts) -> bool:
        names = (*facts.params, *filter(None, [facts.kwargs]))
        return any(isinstance(value, cst.Name) and value.value in names for _, value in argument_slots(node))

    def _record_forwards(self, node: cst.Call, callee: str, facts: FunctionFacts) -> None:
        names = (*facts.params, *filter(None, [facts.kwargs]))
        for slot, value in argument_slots(node):
            if isinstance(value, cst.Name) and value.value in names and self._is_parameter(value.value):
                if Flow(value.value, callee, slot) not in facts.flows:
                    facts.flows.append(Flow(value.value, callee, slot))

    def _record_passes(self, node: cst.Call, callee: str) -> None:
        """Parameters, and in a method the attributes of its instance (``self.policy``, as "self.policy"),
        handed as they are to a callable outside the project (``FunctionFacts.passes``), on any path, with
        whether the call runs on every path through the body: where a caller's argument may end up
        (``copy.deepcopy(policy)``, ``ReplayBuffer(transform=transform)``). Builtins (``len(x)``,
        ``isinstance(x, T)``) hand nothing on."""
        if callee.startswith("builtins."):
            return
        facts = self._function_facts()
        if facts is None:
            return
        passed = [(name, slot) for slot, value in argument_slots(node) if (name := self._passed_name(value, facts))]
        names = (*facts.params, *filter(None, [facts.kwargs]))
        always = not self.scopes[-1].branches
        for name, slot in passed:
            held = name.partition("[")[0]  # ``kwargs["policy"]`` is held by ``kwargs``
            if (name.startswith("self.") or held in names and self._is_parameter(held)) \
                    and (name, callee, slot, always) not in facts.passes:
                facts.passes.append((name, callee, slot, always))

    def _passed_name(self, value: cst.BaseExpression, facts: FunctionFacts) -> str | None:
        """A parameter's name, ``kwargs["key"]`` for a keyword read from the ``**kwargs`` parameter
        (``kwargs["policy"]``, ``kwargs.get("policy")``), or "self.<attr>" for an attribute of the
        method's own instance."""
        if isinstance(value, cst.Name):
            return value.value
        key = keyword_read(value, facts.kwargs) if facts.kwargs is not None else None
        if key is not None:
            return f'{facts.kwargs}["{key}"]'
        attr = self.is_self_attr(value) if isinstance(value, cst.Attribute) else None
        return f"self.{attr}" if attr is not None and self.method_class() is not None else None

    def _is_parameter(self, name: str) -> bool:
        binding = self.scopes[-1].bindings.get(name)
        return binding is not None and binding.value is None and binding.iterated is None \
            and binding.previous is None

    def built(self, expr: cst.BaseExpression, depth: int = 0, shadow: Shadow | None = None,
              marks_in: cst.FunctionDef | None = None) -> Built | None:
        """The calls that build ``expr``, following simple name bindings; None if not a call.

        A value reached through a name records the calls in ``marks_in`` that took that name.
        """
        shadow = shadow or {}
        named = expr.value if isinstance(expr, cst.Name) else None
        found = self._built(expr, depth, shadow, marks_in)
        if found is not None and named is not None and marks_in is not None:
            taking = self._callees_taking.get(id(marks_in))
            if taking is None:  # one scan of the body, however many returns and names
                taking = self._callees_taking[id(marks_in)] = _callees_taking(self, marks_in)
            found = found._replace(marked_by=taking.get(named, ()))
        return found

    def _built(self, expr: cst.BaseExpression, depth: int, shadow: Shadow,
               marks_in: cst.FunctionDef | None) -> Built | None:
        while isinstance(expr, cst.Name) and depth <= _MAX_BUILT_DEPTH:
            binding, evaluated_in = self.binding_in(expr.value, shadow)
            if binding is not None and binding.unpacked is not None:
                source, position = binding.unpacked
                if not isinstance(source, (cst.Tuple, cst.List)):  # item ``position`` of what a call returns
                    inner = self.built(source, depth + 1, shadow, marks_in)
                    return Built(f"[{position}]", receiver=inner) if inner is not None else None
                item = literal_item(source, position)
                if item is None:
                    return None
                expr, depth = item, depth + 1
                continue
            if binding is None or binding.opaque or binding.value is None:
                return None
            # ``policy = policy.to(device)`` reads the previous ``policy``.
            expr, depth, shadow = binding.value, depth + 1, evaluated_in
        if not isinstance(expr, cst.Call) or depth > _MAX_BUILT_DEPTH:
            return None
        callee, receiver = self.callee(expr), None
        if callee is None:  # a method of a value: ``policy.to(device)``
            if not isinstance(expr.func, cst.Attribute):
                return None
            receiver = self.built(expr.func.value, depth + 1, shadow, marks_in)
            if receiver is None:
                return None
            callee = "." + expr.func.attr.value
        args = []
        for arg in expr.args:
            if arg.star:
                continue
            keyword = arg.keyword.value if arg.keyword is not None else None
            for element in literal_items(arg.value):
                inner = self.built(element, depth + 1, shadow, marks_in)
                if inner is not None:
                    args.append((keyword, inner))
        return Built(callee, tuple(args), receiver)

    def mutable_container(self, node: cst.BaseExpression) -> tuple[Binding, str] | None:
        """(binding, "list"/"dict"/"set") for a name bound, in this scope or an enclosing one, to a new
        container whose items the value model follows."""
        if not isinstance(node, cst.Name):
            return None
        binding = self.lookup(node.value)
        if binding is None or binding.opaque or binding.value is None:
            return None
        kind = container_kind(binding.value, self)
        return (binding, kind) if kind is not None else None

    def pinned(self, added: Added) -> Added:
        """``added`` with the bindings its names have here (``Added.names``)."""
        from rlguard.engine.traversal import iter_nodes  # the traversal imports this module

        names = {node.value for node in iter_nodes(added.value) if isinstance(node, cst.Name)}
        return added._replace(names=tuple((name, found) for name in sorted(names)
                                          if (found := self.find_binding(name)) is not None))

    def record_mutation(self, node: cst.Call) -> None:
        """``items.append(v)``, ``metrics.update(other)``: the values a followed container gains."""
        if not isinstance(node.func, cst.Attribute):
            return
        container = self.mutable_container(node.func.value)
        if container is not None:
            container[0].added.extend(map(self.pinned, mutation_added(container[1], node.func.attr.value, node)))
            return
        # ``history[key].append(v)``: an item of a followed container gains ``v``, so the container holds it
        # (one level deeper, which is what the rules ask: whether a tensor is anywhere inside).
        target = node.func.value
        outer = self.mutable_container(target.value) if isinstance(target, cst.Subscript) else None
        item_kind = mutated_kind(node.func.attr.value)
        if outer is not None and item_kind is not None:
            outer[0].added.extend(map(self.pinned, mutation_added(item_kind, node.func.attr.value, node)))

    def record_augmented(self, node: cst.AugAssign) -> None:
        """``items += more``: the container gains the items; any other augmented assignment rebinds."""
        container = self.mutable_container(node.target)
        added = augmented(container[1], node.operator, node.value) if container is not None else None
        if container is not None and added is not None:
            container[0].added.append(self.pinned(added))
        else:
            self.bind_opaque(node.target)

    def bind_iterated(self, target: cst.BaseExpression, iterated: cst.BaseExpression) -> None:
        """``for x in xs`` / ``for k, v in d.items()``: each name binds an item, or a position of each item."""
        self.bind_opaque(target)
        bindings = self.scopes[-1].bindings
        if isinstance(target, cst.Name):
            bindings[target.value].iterated = iterated
        elif isinstance(target, (cst.Tuple, cst.List)) and not has_starred(target.elements):
            for position, element in enumerate(target.elements):
                if isinstance(element.value, cst.Name):
                    bindings[element.value.value].iterated = iterated
                    bindings[element.value.value].position = position

    def _record_field(self, name: str, value: cst.BaseExpression | None, annotation: cst.BaseExpression) -> None:
        """A class-body annotation as an attribute of the class: in a dataclass, attrs class or NamedTuple,
        a constructor parameter (its position counts the annotations before it in the class body; base
        classes' fields are not counted) holding its argument, else its default (``field(default_factory=
        ...)`` included), else its annotated type; elsewhere only an annotation that promises tensors
        (``loss: Tensor``) counts, since a plain class's annotation declares a class attribute."""
        cls = self.current_class
        if cls is None:
            return
        if has_fields(cls.decorators, cls.bases):  # a constructor parameter, holding its argument or default
            default = field_default(value, self.callee(value) if isinstance(value, cst.Call) else None)
            fields = self.scopes[-1].bindings
            position = sum(1 for b in fields.values() if b.annotation is not None) - 1  # this one is bound already
            callee = self.class_of(default) if default is not None else self.class_of(cst.Name(name), annotation)
            cls.attrs.setdefault(name, []).append(AttrFact(
                callee=callee, tensor=annotated_tensors(annotation, self), param=name, position=position))
        elif annotated_tensors(annotation, self):
            cls.attrs.setdefault(name, []).append(AttrFact(callee=None, tensor=True))

    def bind_opaque(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.scopes[-1].bindings[target.value] = Binding(opaque=True)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind_opaque(element.value)
        elif isinstance(target, cst.StarredElement):
            self.bind_opaque(target.value)

    def _record_attr(self, attr: str, value: cst.BaseExpression, annotation: cst.BaseExpression | None = None) -> None:
        if isinstance(value, cst.IfExp):  # ``open(path) if path else None``: either branch may be what it holds
            self._record_attr(attr, value.body, annotation)
            self._record_attr(attr, value.orelse, annotation)
            return
        resolved = self.value_of(value)
        cls = self.current_class
        assert cls is not None
        # A generator expression has no callee; it is recorded as "<generator>" (they cannot be copied).
        callee = "<generator>" if isinstance(resolved, cst.GeneratorExp) else self.class_of(value, annotation)
        method = self.enclosing_method()
        constructing = method is not None and method.name.value == "__init__"
        stored = stored_parameter(method, value) if method is not None and constructing else None
        built = self.built(value) if stored is None else None
        fact = AttrFact(callee=callee, tensor=is_tensor_valued(resolved, self), items=self._container_items(resolved),
                        param=stored[0] if stored else None, position=stored[1] if stored else None,
                        lazy=method is not None and id(value) in self._lazily_set(method),
                        built=built if built is not None and built.args else None,
                        forwards=forwarded(method, value) if method is not None and constructing else ())
        cls.attrs.setdefault(attr, []).append(fact)

    def _record_unpacked_attr(self, attr: str, value: cst.BaseExpression, position: int) -> None:
        """``self.<attr>`` bound to item ``position`` of a tuple literal, or of what a call returns."""
        if isinstance(value, (cst.Tuple, cst.List)):
            item = literal_item(value, position)
            if item is not None:
                self._record_attr(attr, item)
            return
        cls = self.current_class
        callee = self.class_of(value) if isinstance(value, cst.Call) else None
        if cls is not None and callee is not None:  # not the class of the value: what it is an item of
            cls.attrs.setdefault(attr, []).append(AttrFact(callee=None, built=Built(f"[{position}]", receiver=Built(callee))))

    def _lazily_set(self, method: cst.FunctionDef) -> frozenset[int]:
        found = self._lazy_values.get(id(method))
        if found is None:
            params = [*method.params.posonly_params, *method.params.params]
            found = self._lazy_values[id(method)] = lazily_set(method, params[0].name.value) if params else frozenset()
        return found

    def class_of(self, node: cst.BaseExpression, annotation: cst.BaseExpression | None = None) -> str | None:
        """The one class ``node`` is known to be an instance of (the call that builds it, a factory of the
        project, or a single annotated type); None when unknown or when an annotation admits several."""
        instance = self.instance_of(node)
        if instance is not None and instance.kind == "annotated" and instance.value is not None:
            instance = instance.value  # ``x: nn.Module = Net()``: the value is a ``Net``
        if instance is not None and instance.kind == "built":
            return instance.names[0]
        names = instance.names if instance is not None and instance.kind == "annotated" else ()
        if annotation is not None and instance is None:
            names = tuple(q for t in type_alternatives(annotation, self) if (q := self.qualname(t)) is not None)
        names = tuple(name for name in names if name != "builtins.None")
        return names[0] if len(names) == 1 else None

    def _container_items(self, value: cst.BaseExpression, depth: int = 0) -> tuple[tuple[str, str], ...]:
        """(where, class) for the items of a container literal that calls build: ``{"cam": Lock()}``
        gives ``('["cam"]', "threading.Lock")``; ``dict(...)``, ``list(...)``, ``tuple(...)``, ``set(...)``
        of literals, keywords and comprehensions, nested up to a few levels."""
        if depth > _MAX_CONTAINER_DEPTH:
            return ()
        found: list[tuple[str, str]] = []
        for where, item in self._container_elements(value, depth):
            item = self.value_of(item)
            callee = "<generator>" if isinstance(item, cst.GeneratorExp) else self.class_of(item)
            if callee is not None and callee not in _CONTAINER_CALLS:
                found.append((where, callee))
            found.extend((where + inner, cls) for inner, cls in self._container_items(item, depth + 1))
        return tuple(found)

    def _container_elements(self, value: cst.BaseExpression, depth: int) -> list[tuple[str, cst.BaseExpression]]:
        if isinstance(value, cst.Dict):
            return [(f"[{_key_text(e.key)}]", e.value) for e in value.elements if isinstance(e, cst.DictElement)]
        if isinstance(value, (cst.List, cst.Tuple)):
            starred = has_starred(value.elements)
            return [("[...]" if starred else f"[{i}]", e.value) for i, e in enumerate(value.elements)
                    if not isinstance(e, cst.StarredElement)]
        if isinstance(value, cst.Set):
            return [("", e.value) for e in value.elements if not isinstance(e, cst.StarredElement)]
        if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return [("" if isinstance(value, cst.SetComp) else "[...]", value.elt)]
        if isinstance(value, cst.DictComp):
            return [("[...]", value.value)]
        callee = self.callee(value) if isinstance(value, cst.Call) and depth <= _MAX_CONTAINER_DEPTH else None
        if isinstance(value, cst.Call) and callee in _CONTAINER_CALLS:
            keywords = [(f"[{e.keyword.value!r}]", e.value) for e in value.args if e.keyword is not None]
            args = [a.value for a in value.args if a.keyword is None and not a.star]
            if callee in _SEQUENCE_CALLS:  # nn.Sequential(a, b): items by position
                return [(f"[{i}]", arg) for i, arg in enumerate(args)] if len(args) > 1 else \
                    [(where, item) for arg in args for where, item in self._container_elements(self.value_of(arg), depth + 1)]
            return keywords + [(where, item) for arg in args[:1]
                               for where, item in self._container_elements(self.value_of(arg), depth + 1)]
        return []


def _key_text(key: cst.BaseExpression) -> str:
    """A dict key as a member path shows it: the literal as written, else ``...``."""
    if isinstance(key, (cst.SimpleString, cst.Integer)):
        return key.value
    return "..."


_MAX_CONTAINER_DEPTH = 3
# Calls that build a container of the items of their first argument (``list([a, b])``) and of their
# keywords (``dict(cam=lock)``); ``nn.Sequential(a, b)`` holds its arguments themselves, by position.
_SEQUENCE_CALLS = frozenset({"torch.nn.Sequential"})
_CONTAINER_CALLS = frozenset({"builtins.dict", "builtins.list", "builtins.tuple", "builtins.set", "builtins.frozenset",
                              "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.ParameterList"}) | _SEQUENCE_CALLS


def _opaque_function(function: cst.FunctionDef, ctx: FileContext) -> bool:
    """The call's value may differ from what the ``return`` statements give: a coroutine, a decorator
    that may wrap the function, or a body that may end without returning (giving None)."""
    if function.asynchronous is not None:
        return True
    for decorator in (d.decorator for d in function.decorators):
        written = decorator.func if isinstance(decorator, cst.Call) else decorator  # ``@torch.no_grad()``
        if ctx.qualname(written) not in _TRANSPARENT_DECORATORS:
            return True
    return _may_fall_through(function.body)


# Decorators (bare or called) that leave what a call returns as the body returns it.
_PROPERTIES = frozenset({"builtins.property", "functools.cached_property"})


@cache  # a function, not a constant: libcst loads on first use (engine/lazy.py)
def _module_binds(module: cst.Module) -> dict[str, int]:
    """How often each name is bound at module level (a ``global`` declaration counts as rebinding)."""
    from rlguard.engine.traversal import children  # the traversal imports this module

    counts: dict[str, int] = {}
    stack: list[tuple[cst.CSTNode, bool]] = [(statement, False) for statement in module.body]
    while stack:
        node, nested = stack.pop()
        names: Sequence[cst.BaseExpression] = ()
        if isinstance(node, cst.Global):
            names = [item.name for item in node.names] * 2
        elif not nested and isinstance(node, cst.Assign):
            names = [target.target for target in node.targets]
        elif not nested and isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr)):
            names = [node.target]
        elif not nested and isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            names = [node.name]
        elif not nested and isinstance(node, cst.WithItem) and node.asname is not None:
            names = [node.asname.name]
        for target in names:
            for name in _bound_names(target):
                counts[name] = counts.get(name, 0) + 1
        inner = nested or isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
        stack.extend((child, inner) for child in children(node))
    return counts


def _bound_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _bound_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    return []


# Decorators (bare or called) that leave what a call returns as the body returns it (a property: what
# reading the attribute gives, see ``FunctionFacts.is_property``).
_TRANSPARENT_DECORATORS = frozenset({
    "builtins.staticmethod", "builtins.classmethod", "abc.abstractmethod", "functools.cache", "functools.lru_cache",
    "typing.override", "typing_extensions.override", "torch.no_grad", "torch.inference_mode",
}) | _PROPERTIES


def _may_fall_through(body: cst.BaseSuite) -> bool:
    """The block may end without ``return`` or ``raise`` (judged from its last statement)."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    return not statements or _statement_falls_through(statements[-1])


def _statement_falls_through(last: cst.CSTNode) -> bool:
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return not any(isinstance(small, (cst.Return, cst.Raise)) for small in last.body)
    if isinstance(last, cst.If):
        if last.orelse is None or _may_fall_through(last.body):
            return True
        return _statement_falls_through(last.orelse) if isinstance(last.orelse, cst.If) \
            else _may_fall_through(last.orelse.body)
    if isinstance(last, cst.With):
        return _may_fall_through(last.body)
    if isinstance(last, cst.Try):
        return last.orelse is not None or _may_fall_through(last.body) \
            or any(_may_fall_through(handler.body) for handler in last.handlers)
    return True


def only_raises_not_implemented(node: cst.FunctionDef) -> bool:
    """A body of (a docstring and) ``raise NotImplementedError`` or ``raise NotImplementedError(...)``."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body]
    statements = [s for s in body if not _is_docstring(s)]
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return False
    small = statements[0].body
    if len(small) != 1 or not isinstance(small[0], cst.Raise) or small[0].exc is None:
        return False
    raised = small[0].exc.func if isinstance(small[0].exc, cst.Call) else small[0].exc
    return isinstance(raised, cst.Name) and raised.value == "NotImplementedError"


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.SimpleString))


def _local_head(node: cst.BaseExpression, shadow: Shadow) -> bool:
    """The dotted expression starts with a name the shadow rebinds (its import meaning does not apply)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value in shadow


def has_starred(elements: Sequence[cst.BaseElement]) -> bool:
    return any(isinstance(element, cst.StarredElement) for element in elements)


def _callees_taking(ctx: FileContext, function: cst.FunctionDef) -> dict[str, tuple[str, ...]]:
    """For each name, the callees of the calls in ``function`` whose first argument is that name."""
    from rlguard.engine.traversal import iter_nodes  # the traversal imports this module

    found: dict[str, dict[str, None]] = {}
    for node in iter_nodes(function.body):
        if type(node) is cst.Call and node.args and node.args[0].keyword is None:
            first = node.args[0].value
            if type(first) is cst.Name:
                callee = ctx.callee(node)
                if callee is not None:
                    found.setdefault(first.value, {})[callee] = None
    return {name: tuple(callees) for name, callees in found.items()}


def _parameters(function: cst.FunctionDef, owner: ClassFacts | None) -> tuple[str, ...]:
    """The parameters a call's positional arguments fill, in order, then the keyword-only ones; a
    method's ``self`` (or a classmethod's ``cls``) is left out."""
    params = function.params
    ordered = [param.name.value for param in (*params.posonly_params, *params.params)]
    if owner is not None and ordered and not any(dotted_name(d.decorator) == "staticmethod" for d in function.decorators):
        ordered = ordered[1:]
    return (*ordered, *(param.name.value for param in params.kwonly_params))


def _is_static(node: cst.FunctionDef) -> bool:
    return any(dotted_name(d.decorator) in ("staticmethod", "classmethod") for d in node.decorators)
