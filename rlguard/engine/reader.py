"""The reader every part of the value model derives from: the file's context, whether conditions are
deferred to the index, the API model, and names looked up honouring an environment of overrides.

The model is one object (``inference._Inference``) built from parts that ask each other: class and
attribute lookup (``class_lookup``), container items (``items``), tensor-valued parts (``leaves``) and
expression typing (``inference``). The questions a part asks of another are declared here for the type
checker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlguard.engine.apimodel import model

if TYPE_CHECKING:
    from rlguard.engine.context import Binding, FileContext
    from rlguard.engine.lazy import cst
    from rlguard.engine.values import ArgKinds, Leaf, Shape, ValueType, _Env, _Kind, _Typed


class Reader:
    def __init__(self, ctx: FileContext, deferred: bool) -> None:
        self.ctx = ctx
        self.deferred = deferred
        self.model = model()
        # Parameter bindings whose kind a summary may assume (by id), and whether the inference has read
        # one where an assumed kind would be taken (``name_type``): if it never did, no assumption can
        # change what it gives.
        self.watched: frozenset[int] = frozenset()
        self.read_watched = False
        self.watched_members: frozenset[str] = frozenset()  # the same for ``self.<attr>`` (``assumed_members``)
        self.read_members = False

    def lookup(self, name: str, env: _Env) -> tuple[Binding, bool] | None:
        """(binding, whether it is in the innermost scope) for a name, honouring ``env``."""
        if name in env:
            return env[name]
        return self.ctx.find_binding(name)

    @staticmethod
    def inside(name: str, binding: Binding, local: bool, env: _Env) -> _Env:
        """The environment in which ``binding.value`` was evaluated: ``x = x.mean()`` reads the old ``x``."""
        return {**env, name: (binding.previous, local) if binding.previous is not None else None}

    if TYPE_CHECKING:  # answered by the other parts of ``_Inference``
        def typed(self, node: cst.BaseExpression, env: _Env, depth: int) -> _Typed: ...
        def kind(self, node: cst.BaseExpression, env: _Env, depth: int) -> _Kind: ...
        def returned_operand(self, operands: tuple[cst.BaseExpression, ...], env: _Env, depth: int) -> _Typed: ...
        def chained_link(self, typed: _Typed, link: tuple[str, Shape, ArgKinds]) -> _Typed: ...
        def leaves(self, node: cst.BaseExpression, env: _Env, depth: int, bindings: tuple, via: tuple,
                   local: bool, encodable: bool, consumed: bool = False) -> list[Leaf]: ...
        def is_new_container(self, node: cst.BaseExpression) -> bool: ...
        def overridden(self, value: ValueType, method: str) -> bool: ...
