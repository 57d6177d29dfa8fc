"""Build the API model (``apimodel.json``) from the installed torch, tensordict and torchrl.

Run ``python -m rlguard_dev.apimodel --write`` after upgrading any of them (``--check`` says whether the
shipped files are current). This module imports the libraries; it is a maintainer's tool, not shipped in
the wheel, and the linter only reads the JSON files it writes (``rlguard.engine.apimodel``).

Sources, in order of trust:
- torch's own stubs: ``torch/_C/_VariableFunctions.pyi`` (``torch.<fn>``) and the ``TensorBase``
  class of ``torch/_C/__init__.pyi`` (Tensor methods and attributes), overloads included;
- the return annotations of Python functions and methods (``torch.nn``, tensordict, torchrl);
- for torch builtins that have no stub (``torch.linalg``, ``torch.special``, ``torch.fft``), the
  signature line their docstring starts with (``linalg.svd(A, ...) -> (Tensor, Tensor, Tensor)``);
- the class hierarchy, which gives each class its kind (``_CLASS_KINDS``).

A few facts no annotation states are listed in ``_FACTS``, each with its reason.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import sys
import warnings
from pathlib import Path
from typing import Any

# Modules whose public names the model covers.
MODULES = (
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.utils", "torch.linalg", "torch.special", "torch.fft",
    "torch.optim", "torch.optim.lr_scheduler", "torch.distributions",
    "tensordict", "tensordict.nn",
    "tensordict.tensordict",  # the old import path of TensorDict and TensorDictBase, still served
    "torchrl.envs", "torchrl.envs.transforms", "torchrl.modules", "torchrl.objectives", "torchrl.collectors",
    "torchrl.data", "torchrl.data.datasets", "torchrl.trainers", "torchrl.trainers.algorithms",
    "torchrl.testing.mocking_classes",  # the environments of tests and examples that need no simulator
)

# A class's kind is that of the first of these roots it derives from (more specific roots first).
_CLASS_KINDS = (
    ("torchrl.modules.LSTMModule", "recurrent"),
    ("torchrl.modules.GRUModule", "recurrent"),
    ("torchrl.objectives.LossModule", "loss"),
    ("torchrl.envs.Transform", "transform"),
    ("torchrl.envs.EnvBase", "env"),
    ("torchrl.collectors.BaseCollector", "collector"),
    ("torchrl.data.ReplayBuffer", "replay_buffer"),
    ("tensordict.nn.TensorDictModuleBase", "tdmodule"),
    ("torch.nn.Module", "module"),
    ("tensordict.TensorDictBase", "tensordict"),
    ("torch.Tensor", "tensor"),
    ("torch.optim.Optimizer", "optimizer"),
    ("torch.optim.lr_scheduler.LRScheduler", "scheduler"),
    ("torch.distributions.Distribution", "distribution"),
    ("torchrl.trainers.Trainer", "trainer"),
)

# Facts the annotations do not state: (class, method) -> kind.
_FACTS = {
    # nn.Module.state_dict is annotated ``dict[str, Any]``; its values are the parameters and buffers.
    ("torch.nn.Module", "state_dict"): "bulk",
    # Optimizer.state_dict holds the per-parameter state (``exp_avg``, ...), tensors.
    ("torch.optim.Optimizer", "state_dict"): "bulk",
    # A scheduler's state is its step counts and learning rates.
    ("torch.optim.lr_scheduler.LRScheduler", "state_dict"): "value",
    ("torch.optim.swa_utils.SWALR", "state_dict"): "value",
    # Calling a TensorDict module or a loss returns the TensorDict it writes (``forward`` is unannotated
    # or ``-> None`` in TensorDictModuleBase).
    ("tensordict.nn.TensorDictModuleBase", "__call__"): "tensordict",
    ("torchrl.objectives.LossModule", "__call__"): "tensordict",
    # TensorDictReplayBuffer.sample is annotated ``Any``: it returns the sampled TensorDict.
    ("torchrl.data.TensorDictReplayBuffer", "sample"): "tensordict",
    # TensorDict.to_dict is annotated ``dict[str, Any]``: nested dicts of the tensors.
    ("tensordict.TensorDictBase", "to_dict"): "bulk",
}

# ``torch.unique(x)`` is a tensor; with ``return_inverse=True`` or ``return_counts=True``, a tuple of them
# (a Python function dispatching on those flags, without annotations).
_UNIQUE_FLAGS = ["return_inverse", "return_counts"]
_UNIQUE: list[list[Any]] = [
    ["tensor", ["sorted", *_UNIQUE_FLAGS, "dim"], 0, False, [], [], dict.fromkeys(_UNIQUE_FLAGS, False)],
    *(["tensors", ["sorted", *_UNIQUE_FLAGS, "dim"], 0, False, [], [flag], {flag: True}] for flag in _UNIQUE_FLAGS),
]
_FUNCTION_FACTS = {
    "torch.unique": [[kind, ["input", *names], required + 1, *rest] for kind, names, required, *rest in _UNIQUE],
    "torch.norm": "tensor",  # unannotated Python function; every branch returns a tensor
}
_TENSOR_NAMES = frozenset({"Tensor", "TensorBase", "Parameter", "UninitializedParameter", "Buffer"})
_TENSORDICT_NAMES = frozenset({"TensorDictBase", "TensorDict", "LazyStackedTensorDict", "TensorDictParams",
                               "PersistentTensorDict", "TensorCollection"})
_VALUE_NAMES = frozenset({
    "bool", "int", "float", "str", "complex", "bytes", "None", "NoneType", "_bool", "_int", "_float", "_complex",
    "_size", "Size", "Number", "_dtype", "dtype", "device", "_device", "_layout", "layout", "memory_format",
    "_qscheme", "Literal", "SymInt", "_symsize", "Storage", "TypedStorage", "UntypedStorage",
})
_SEQUENCES = frozenset({"list", "List", "Sequence", "tuple", "Tuple"})
_ITERATORS = frozenset({"Iterator", "Iterable", "Generator"})
_MAPPINGS = frozenset({"dict", "Dict", "Mapping", "OrderedDict", "MutableMapping"})
_TENSORISH = frozenset({"tensor", "tensors"})


def classify(annotation: ast.expr | None) -> str:
    """The kind of value an annotation promises: tensor, tensors, tensor_iter, td_iter, bulk, tensordict,
    self, value, or unknown (including ``Optional[...]``: it may be None)."""
    if annotation is None:
        return "unknown"
    if isinstance(annotation, ast.Constant):
        if annotation.value is None:
            return "value"
        if isinstance(annotation.value, str):
            try:
                return classify(ast.parse(annotation.value, mode="eval").body)
            except SyntaxError:
                return "unknown"
        return "unknown"
    if isinstance(annotation, (ast.Name, ast.Attribute)):
        dotted = ast.unparse(annotation)
        last = dotted.rpartition(".")[2]
        if ".return_types." in f".{dotted}":
            return "tensors"
        if last in _TENSOR_NAMES or (last.endswith("Tensor") and not last.startswith("Nested")):
            return "tensor"
        if last in _TENSORDICT_NAMES:
            return "tensordict"
        if last == "Self" or re.fullmatch(r"_?T(_[A-Za-z]+)?", last):
            return "self"
        return "value" if last in _VALUE_NAMES else "unknown"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _union([annotation.left, annotation.right])
    if isinstance(annotation, ast.Subscript):
        origin = ast.unparse(annotation.value).rpartition(".")[2]
        args = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        args = [arg for arg in args if not (isinstance(arg, ast.Constant) and arg.value is Ellipsis)]
        kinds = [classify(arg) for arg in args]
        if origin == "Literal":
            return "value"
        if origin in ("Optional", "Union"):
            return _union(args)
        if origin in _SEQUENCES and kinds:
            if all(kind in _TENSORISH for kind in kinds):
                return "tensors"
            return "value" if all(kind == "value" for kind in kinds) else "unknown"
        if origin in _ITERATORS and kinds:
            item = kinds[0]
            if item == "tensor" or (item == "unknown" and _pairs_with_tensor(args[0])):
                return "tensor_iter"
            return "td_iter" if item == "tensordict" else "unknown"
        if origin in _MAPPINGS and len(kinds) == 2:
            if kinds[1] in _TENSORISH or kinds[1] == "bulk":
                return "bulk"
            return "value" if kinds == ["value", "value"] else "unknown"
    return "unknown"


def _pairs_with_tensor(node: ast.expr) -> bool:
    """``tuple[str, Parameter]``: what ``named_parameters()`` yields."""
    return isinstance(node, ast.Subscript) and ast.unparse(node.value).rpartition(".")[2] in ("tuple", "Tuple") \
        and isinstance(node.slice, ast.Tuple) and classify(node.slice.elts[-1]) == "tensor"


def _union(members: list[ast.expr]) -> str:
    kinds = {classify(member) for member in members}
    if len(kinds) == 1:
        return kinds.pop()
    return "tensors" if kinds <= _TENSORISH else "unknown"


# ----- overloads of stubbed functions -----
def _overload(function: ast.FunctionDef, method: bool) -> list[Any]:
    """One overload as ``apimodel.Overload`` stores it."""
    args = function.args
    positional = [*args.posonlyargs, *args.args][1 if method else 0:]
    required = len(positional) - len(args.defaults)
    required_keywords = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    literals = {}
    for arg in [*positional, *args.kwonlyargs]:
        note = arg.annotation
        if isinstance(note, ast.Subscript) and ast.unparse(note.value).endswith("Literal") \
                and isinstance(note.slice, ast.Constant) and isinstance(note.slice.value, bool):
            literals[arg.arg] = note.slice.value
    return [classify(function.returns), [a.arg for a in positional], required, args.vararg is not None,
            sorted(a.arg for a in args.kwonlyargs), sorted(required_keywords), literals]


def _stub_functions(body: list[ast.stmt], method: bool) -> dict[str, Any]:
    """name -> kind, or the list of overloads when they disagree on the kind."""
    overloads: dict[str, list[list[Any]]] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            overloads.setdefault(node.name, []).append(_overload(node, method))
    return {name: _collapse(found) for name, found in overloads.items()}


def _collapse(overloads: list[list[Any]]) -> Any:
    kinds = {overload[0] for overload in overloads}
    return kinds.pop() if len(kinds) == 1 else overloads


def _stub_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _tensor_class(torch: Any) -> dict[str, Any]:
    stubs = Path(torch.__file__).parent / "_C"
    tree = _stub_tree(stubs / "__init__.pyi")
    base = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TensorBase")
    methods = {name: spec for name, spec in _stub_functions(base.body, method=True).items() if spec != "unknown"}
    attrs = {}
    for node in base.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and not node.target.id.startswith("_"):
            attrs[node.target.id] = classify(node.annotation)
        elif isinstance(node, ast.FunctionDef) and any(ast.unparse(d) == "property" for d in node.decorator_list):
            attrs[node.name] = classify(node.returns)
    for name, member in vars(torch.Tensor).items():  # methods written in Python (torch/_tensor.py)
        if not name.startswith("_") and name not in methods and callable(member):
            kind = _annotation_kind(member)
            if kind != "unknown":
                methods[name] = kind
    methods["unique"] = _UNIQUE
    methods["tolist"] = methods["item"] = "value"  # builtins whose stub returns Any: plain Python values
    return {"kind": "tensor", "bases": [], "methods": methods,
            "attrs": {name: kind for name, kind in attrs.items() if kind != "unknown"}}


# ----- Python functions and classes -----
def _annotation_kind(function: Any) -> Any:
    dispatch = _boolean_dispatch(function)
    if dispatch is not None:
        return dispatch
    try:
        returns = inspect.signature(function).return_annotation
    except (TypeError, ValueError):
        return _docstring_kind(function)
    if returns is inspect.Signature.empty:
        return "unknown"
    if isinstance(returns, str):
        text = returns
    elif isinstance(returns, type):
        text = f"{returns.__module__}.{returns.__qualname__}"
    else:
        text = repr(returns).replace("typing.", "")
    try:
        return classify(ast.parse(text, mode="eval").body)
    except SyntaxError:
        return "unknown"


def _boolean_dispatch(function: Any) -> list[Any] | None:
    """``F.max_pool1d``: torch's ``boolean_dispatch`` calls ``if_true`` or ``if_false`` by one flag."""
    try:
        found = inspect.getclosurevars(function).nonlocals if inspect.isfunction(function) else {}
    except (TypeError, ValueError):
        return None
    if not {"arg_name", "arg_index", "if_true", "if_false"} <= found.keys():
        return None
    flag, index = found["arg_name"], found["arg_index"]
    names = list(inspect.signature(found["if_false"]).parameters)
    kinds = {False: _annotation_kind(found["if_false"]), True: _annotation_kind(found["if_true"])}
    # Without the flag, ``if_false`` runs: only the other overload requires it (by keyword, as it is written).
    overloads = [[kinds[value], names[:index + 1], 1, False, [], [flag] if value else [], {flag: value}]
                 for value in (False, True)]
    return _collapse(overloads)


_DOC_RETURNS = re.compile(r"^\s*[\w.]+\(.*\)\s*->\s*(.+?)\s*$", re.MULTILINE)


def _docstring_kind(function: Any) -> str:
    """A builtin's documented result: ``linalg.svd(A, ...) -> (Tensor, Tensor, Tensor)``."""
    match = _DOC_RETURNS.search(inspect.getdoc(function) or "")
    if match is None:
        return "unknown"
    text = match.group(1)
    parts = {part.strip() for part in re.split(r",|\bor\b|[()]", text) if part.strip()}
    if parts and all(part.endswith("Tensor") for part in parts):
        return "tensor" if text.strip().endswith("Tensor") and "(" not in text and " or " not in text else "tensors"
    return "unknown"


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class _Builder:
    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.roots = [(self._resolve(path), kind) for path, kind in _CLASS_KINDS]
        self.functions: dict[str, Any] = {}
        self.classes: dict[str, dict[str, Any]] = {"torch.Tensor": _tensor_class(torch)}
        self.names: dict[str, str] = {}  # public name -> the class's own qualified name
        stubs = Path(torch.__file__).parent / "_C" / "_VariableFunctions.pyi"
        self.torch_stubs = _stub_functions(_stub_tree(stubs).body, method=False)

    @staticmethod
    def _resolve(path: str) -> type:
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name)

    def build(self) -> dict[str, Any]:
        for module_name in MODULES:
            module = importlib.import_module(module_name)
            for name in sorted(getattr(module, "__all__", None) or dir(module)):
                if name.startswith("_"):
                    continue
                try:
                    value = getattr(module, name)
                except Exception:  # noqa: BLE001 - lazy attributes that fail to import are not part of the model
                    continue
                self._add(module_name, name, value)
        for (cls, method), kind in _FACTS.items():
            own = self._add_class(self._resolve(cls))
            assert own is not None, cls
            self.classes[own]["methods"][method] = kind
        self.functions.update(_FUNCTION_FACTS)
        return {"functions": dict(sorted(self.functions.items())), "classes": dict(sorted(self.classes.items())),
                "names": dict(sorted(self.names.items())), "tuple_fields": self._tuple_fields()}

    def _tuple_fields(self) -> list[str]:
        """Fields of the named tuples torch returns (``torch.max(x, 1).values``): tensors."""
        types = vars(self.torch.return_types).values()
        return sorted({field for cls in types if isinstance(cls, type) for field in getattr(cls, "__match_args__", ())})

    def _add(self, module: str, name: str, value: Any) -> None:
        public = f"{module}.{name}"
        if isinstance(value, type):
            own = self._add_class(value)
            if own is not None and own != public:
                self.names[public] = own
        elif callable(value):
            kind = self.torch_stubs.get(name, "unknown") if module == "torch" else "unknown"
            if kind == "unknown":
                kind = _annotation_kind(value)
            if kind != "unknown":
                self.functions[public] = kind

    def _add_class(self, cls: type) -> str | None:
        if cls is self.torch.Tensor:
            return "torch.Tensor"
        own = _qualname(cls)
        if isinstance(cls, type(self.torch.FloatTensor)):  # the legacy typed tensors: torch.FloatTensor(...)
            self.classes[own] = {"kind": "tensor", "bases": ["torch.Tensor"], "methods": {}}
            return own
        kind = next((kind for root, kind in self.roots if issubclass(cls, root)), None)
        if kind is None:
            return None
        if own in self.classes:
            return own
        entry: dict[str, Any] = {"kind": kind, "bases": [], "methods": {}}
        self.classes[own] = entry
        entry["bases"] = [b for b in (self._add_class(base) for base in cls.__bases__) if b is not None]
        for method, member in sorted(vars(cls).items()):
            if method.startswith("_") and method not in ("__call__", "__getitem__", "__iter__"):
                continue
            function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
            # ``forward = _forward_unimplemented`` (nn.Module) and abstract methods say nothing of the overrides.
            if callable(function) and getattr(function, "__name__", method) == method \
                    and not getattr(function, "__isabstractmethod__", False):
                method_kind = _annotation_kind(function)
                if method_kind != "unknown":
                    entry["methods"][method] = method_kind
        return own


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {package: version(package) for package in ("torch", "tensordict", "torchrl")}


def build_model() -> dict[str, Any]:
    """The model of the installed stack, as ``apimodel.json`` stores it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _Builder().build()
    return {"versions": versions(), **model}


def render(model: dict[str, Any]) -> str:
    return json.dumps(model, sort_keys=True, separators=(",", ":")) + "\n"


def render_classes(model: dict[str, Any]) -> str:
    """``apimodel_classes.json``: for each kind of ``KIND_PACKAGES``, the names of its classes, from the model."""
    from rlguard.engine.apimodel import KIND_PACKAGES, ApiModel

    reader = ApiModel(model)
    names = {kind: sorted(reader.names_of_kind(kind, package)) for kind, package in KIND_PACKAGES.items()}
    return json.dumps({"versions": model["versions"], "packages": KIND_PACKAGES, "names": names}, sort_keys=True,
                      indent=0) + "\n"


def main(argv: list[str]) -> int:
    from rlguard.engine.apimodel import CLASSES_PATH, MODEL_PATH
    from rlguard.engine.generated import is_current, write_generated

    model = build_model()
    outputs = {MODEL_PATH: render(model), CLASSES_PATH: render_classes(model)}
    if "--write" in argv:
        for path, text in outputs.items():
            write_generated(path, text)
            print(f"wrote {path} ({len(text)} bytes)")
        return 0
    stale = [path for path, text in outputs.items() if not is_current(path, text)]
    print("stale: run python -m rlguard_dev.apimodel --write" if stale else "up to date")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
