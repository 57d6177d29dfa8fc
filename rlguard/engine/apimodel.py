"""The libraries' types as data: what torch, tensordict and torchrl functions, methods and classes give.

``apimodel.json`` is generated from the installed libraries by ``python -m rlguard_dev.apimodel --write``
(a maintainer's tool outside the package); this module only reads it, and never imports torch. The same command writes
``apimodel_classes.json``, a small extract: the names of the library's transforms, replay buffers, trainers
and recurrent modules, which the pre-filter needs on every run (the whole model, only some files need).

Kinds of values: ``tensor``; ``tensors`` (a tuple or list of tensors); ``tensor_iter`` (an iterator of
tensors, or of (name, tensor) pairs: ``parameters()``); ``bulk`` (a dict of tensors: ``state_dict()``);
``tensordict``; ``td_iter`` (an iterator of TensorDicts: a collector); ``self`` (the receiver's own
class); ``value`` (plain Python values). Classes have kinds of their own: ``module``, ``tdmodule``,
``recurrent`` (LSTMModule/GRUModule), ``transform``, ``loss``, ``collector``, ``env``, ``replay_buffer``,
``tensordict``, ``tensor``, ``optimizer``, ``scheduler``, ``distribution``, ``trainer``. Anything else is unknown,
which the rules never report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from rlguard.engine.mro import c3_merge

MODEL_PATH = Path(__file__).with_name("apimodel.json")
CLASSES_PATH = Path(__file__).with_name("apimodel_classes.json")
# Where each kind of class lives: a rule recognises one by its name under that package, whatever module
# users import it from (``torchrl.envs.StepCounter``, ``torchrl.envs.transforms.transforms.StepCounter``).
KIND_PACKAGES = {"recurrent": "torchrl.modules", "transform": "torchrl.envs", "replay_buffer": "torchrl.data",
                 "trainer": "torchrl.trainers"}
TENSOR = "torch.Tensor"
TENSORDICT = "tensordict.TensorDictBase"

# One overload of a stubbed function: [kind, positional parameter names (in order), how many of them
# are required, whether it takes ``*args``, keyword-only names, required keyword-only names,
# {parameter: the bool literal it must be}].
Overload = list[Any]


@dataclass(frozen=True)
class CallShape:
    """What a call passes, as far as overload selection needs it."""

    positional: int
    keywords: Mapping[str, bool | None]  # keyword -> its value when a True/False literal, else None


class ApiModel:
    def __init__(self, data: dict[str, Any]) -> None:
        self.versions: dict[str, str] = data["versions"]
        self._functions: dict[str, Any] = data["functions"]
        self._classes: dict[str, dict[str, Any]] = data["classes"]
        self._names: dict[str, str] = data["names"]
        self.tuple_fields: frozenset[str] = frozenset(data["tuple_fields"])
        self._names_of_kind: dict[tuple[str, str], frozenset[str]] = {}
        self._mro: dict[str, list[str]] = {}

    # ----- classes -----
    def class_name(self, qualname: str) -> str | None:
        """The class's own qualified name for a public one (``torchrl.envs.Transform``), or None if unknown."""
        own = self._names.get(qualname, qualname)
        return own if own in self._classes else None

    def class_kind(self, qualname: str) -> str | None:
        own = self.class_name(qualname)
        return self._classes[own]["kind"] if own is not None else None

    def names_of_kind(self, kind: str, package: str) -> frozenset[str]:
        """Short names of the classes of ``kind`` that ``package`` or a module under it defines or exports
        (``names_of_kind("transform", "torchrl.envs")``: ``StepCounter``, ``Compose``, ...)."""
        key = (kind, package)
        found = self._names_of_kind.get(key)
        if found is None:
            prefix = package + "."
            qualnames = [*self._classes, *self._names]
            found = self._names_of_kind[key] = frozenset(
                qualname.rpartition(".")[2] for qualname in qualnames
                if qualname.startswith(prefix) and self.class_kind(qualname) == kind
            )
        return found

    def ancestry(self, qualname: str) -> list[str]:
        """The class and its modelled ancestors in Python's method resolution order (C3), as a
        project class's are (``ProjectIndex.mro``); empty for a class the model does not know."""
        own = self.class_name(qualname)
        return self._linearisation(own) if own is not None else []

    def _linearisation(self, own: str) -> list[str]:
        found = self._mro.get(own)
        if found is None:
            bases = self._classes[own]["bases"]
            parents = [self._linearisation(base) for base in bases]
            # The model keeps only modelled bases, and real classes have an order, so the merge succeeds;
            # were it ever to fail, the parents' orders one after another still name every ancestor.
            merged = c3_merge([*parents, bases], key=str)
            found = self._mro[own] = [own, *(merged if merged is not None else dict.fromkeys(a for p in parents for a in p))]
        return found

    def method(self, qualname: str, method: str) -> Any:
        """What ``instance.method(...)`` gives for an instance of the class (a kind or overloads); None: unknown."""
        for cls in self.ancestry(qualname):
            found = self._classes[cls]["methods"].get(method)
            if found is not None:
                return found
        return None

    def methods_of_kind(self, qualname: str, kinds: frozenset[str]) -> frozenset[str]:
        """The methods of a class (its own and inherited) whose result is one of ``kinds``."""
        return frozenset(method for cls in self.ancestry(qualname) for method, spec in self._classes[cls]["methods"].items()
                         if spec in kinds)

    def attribute(self, qualname: str, attr: str) -> str | None:
        for cls in self.ancestry(qualname):
            found = self._classes[cls].get("attrs", {}).get(attr)
            if found is not None:
                return found
        return None

    # ----- functions -----
    def function(self, qualname: str) -> Any:
        """What calling ``qualname`` gives (a kind or overloads); a class call gives ``@<class>``."""
        own = self.class_name(qualname)
        if own is not None:
            return "@" + own
        return self._functions.get(qualname)


def select(spec: Any, shape: CallShape) -> str | None:
    """The kind a call gives, choosing among overloads by what it passes; None when unknown.

    When the overloads that fit disagree but all give tensors, the result is ``tensors``
    (``torch.max(x, y)`` and ``torch.max(x, 1)`` read alike).
    """
    if spec is None or isinstance(spec, str):
        return spec
    fitting = {overload[0] for overload in spec if _fits(overload, shape)}
    if len(fitting) == 1:
        return fitting.pop()
    return "tensors" if fitting and fitting <= {"tensor", "tensors"} else None


def _fits(overload: Overload, shape: CallShape) -> bool:
    _, positional, required, varargs, keyword_only, required_keywords, literals = overload
    if shape.positional > len(positional) and not varargs:
        return False
    by_keyword = set(positional[shape.positional:]) | set(keyword_only)
    if any(keyword not in by_keyword for keyword in shape.keywords):
        return False
    if any(name not in shape.keywords for name in positional[shape.positional:required]):
        return False
    if any(name not in shape.keywords for name in required_keywords):
        return False
    # A flag written as True/False picks its overloads (``nonzero(x, as_tuple=True)``); any other value fits both.
    return all(shape.keywords[name] == wanted for name, wanted in literals.items()
               if shape.keywords.get(name) is not None)


@cache
def class_names() -> dict[str, frozenset[str]]:
    """Short names of the library's classes of each kind of ``KIND_PACKAGES`` (read once per process)."""
    data = json.loads(CLASSES_PATH.read_text(encoding="utf-8"))
    return {kind: frozenset(names) for kind, names in data["names"].items()}


@cache
def model() -> ApiModel:
    """The shipped model (read once per process)."""
    return ApiModel(json.loads(MODEL_PATH.read_text(encoding="utf-8")))
