"""Asks the torchrl and tensordict on ``sys.path`` whether entries of the removed-API table exist.

Run as a script in a fresh interpreter (``python release_probe.py < entries.json``), so that the
release under test, put first on ``PYTHONPATH``, is the one imported. Reads a JSON list of the
table's entries (``kind``, ``module``, ``name``, ``found``, ``replacement``, ``with``) and prints a
JSON list of answers, one per entry: ``[verdict, how]``, the verdict ``"present"``, ``"absent"``, or
``"unimportable: <error>"`` when the module itself cannot be imported here (an optional dependency),
and how it was reached (imported, built, signature, called, source read, attribute read). Imports
only the libraries, never rlguard.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import inspect
import json
import re
import sys
import textwrap
import types
import warnings
from typing import Any


def _object(dotted: str) -> Any:
    """The object a dotted path names: the longest importable module, then attributes. A module that
    does not exist is skipped; one that exists but fails to import raises."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            found: Any = importlib.import_module(name)
        except ModuleNotFoundError as missing:
            if missing.name is not None and not name.startswith(missing.name):
                raise  # a dependency of the module is missing: the module exists
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise ModuleNotFoundError(dotted)


def answer(entry: dict) -> tuple[str, str]:
    """Whether the entry's API works here, asked the way its kind says it breaks: ``from module import
    name``; a class whose constructor only raises (``found: raises``) built; the class's method; a
    keyword passed to the callable; an enum member's value read from the classes it raises with; a module
    imported; a parameter passed by position (``positional``) read from the signature.
    Returns the verdict and how it was reached."""
    kind, module, name = entry["kind"], entry["module"], entry["name"]
    _import_library(module.partition(".")[0])  # the library itself must import here
    if kind == "key":
        return _spec_key(entry), "spec read"
    if kind == "setter":
        return _setter(entry), "assigned"
    if kind == "returns":
        return _step_output(entry), "stepped"
    if kind == "module":
        return ("present" if _imports(f"{module}.{name}") else "absent"), "imported"
    owner, _, member = f"{module}.{name}".rpartition(".")
    try:
        target = _object(owner)
    except (ModuleNotFoundError, AttributeError):
        return "absent", "imported"
    if kind == "name":
        if not (hasattr(target, member) or _imports(f"{owner}.{member}")):
            return "absent", "imported"
        if entry.get("found") == "raises":
            return _built(getattr(target, member), entry.get("replacement")), "built"
        return "present", "imported"
    if kind == "method":
        return "present" if hasattr(target, member) else "absent", "imported"
    if kind == "member":
        return _member(target, member, entry), "attribute read"
    if kind == "positional":
        return _positional(target, member), "signature"
    return _keyword(target, member)


def _spec_key(entry: dict) -> str:
    """``env.<container>["<key>"]`` on an environment whose spec property (the entry's replacement) was set:
    to a Composite where the key held one whole (its ``path`` is one key), else to a leaf."""
    _, container, key = entry["name"].split(".")
    torch, data = importlib.import_module("torch"), importlib.import_module("torchrl.data")
    envs = importlib.import_module("torchrl.envs")
    composite = getattr(data, "Composite", None) or data.CompositeSpec
    unbounded = getattr(data, "Unbounded", None) or data.UnboundedContinuousTensorSpec

    def unused(*_args: Any, **_kwargs: Any) -> Any:
        raise NotImplementedError

    # An environment whose spec containers are all this reads: EnvBase with its abstract steps filled in.
    env = type("Env", (envs.EnvBase,), {"_reset": unused, "_step": unused, "_set_seed": lambda self, seed: seed})()
    leaf = unbounded(shape=(1,), dtype=torch.bool if key == "done" else torch.float32)
    spec = composite(observation=leaf, shape=()) if len(entry.get("path", ())) == 1 else leaf
    setattr(env, entry["replacement"].rpartition(".")[2], spec)
    try:
        getattr(env, container)[key]
    except KeyError:
        return "absent"
    return "present"


def _stub_env(spec: bool = False) -> Any:
    """An ``EnvBase`` subclass with its abstract steps filled in, built on the CPU; with ``spec``, a
    one-entry observation ``obs``, a one-entry action and reward."""
    torch, data = importlib.import_module("torch"), importlib.import_module("torchrl.data")
    envs = importlib.import_module("torchrl.envs")
    composite = getattr(data, "Composite", None) or data.CompositeSpec
    unbounded = getattr(data, "Unbounded", None) or data.UnboundedContinuousTensorSpec
    tensordict = importlib.import_module("tensordict").TensorDict

    def unused(*_args: Any, **_kwargs: Any) -> Any:
        raise NotImplementedError

    def reset(self: Any, td: Any = None, **_kwargs: Any) -> Any:
        return tensordict({"obs": torch.zeros(1), "done": torch.zeros(1, dtype=torch.bool)}, [])

    env = type("Env", (envs.EnvBase,), {"_reset": reset, "_step": unused, "_set_seed": lambda self, seed: seed})(
        device="cpu")
    if spec:
        env.observation_spec = composite(obs=unbounded(shape=(1,)), shape=())
        env.action_spec = unbounded(shape=(1,))
        env.reward_spec = unbounded(shape=(1,))
    return env


def _setter(entry: dict) -> str:
    """``obj.<attr> = <its own value>`` on a built instance of the entry's class (an ``EnvBase`` subclass,
    or the class wrapping one): "absent" when the assignment raises."""
    owner, _, attr = entry["name"].rpartition(".")
    env = _stub_env()
    if owner != "EnvBase":
        env = getattr(importlib.import_module(entry["module"]), owner)(env)
    value = getattr(env, attr)
    try:
        setattr(env, attr, value)
    except Exception:
        return "absent"
    return "present"


def _step_output(entry: dict) -> str:
    """A ``_step`` returning its output under the entry's key (``"next"``): "present" when ``step`` gives
    the entries where the old layout put them (``("next", "obs")``), "absent" otherwise."""
    torch = importlib.import_module("torch")
    tensordict = importlib.import_module("tensordict").TensorDict
    key = entry["path"][0]
    env = _stub_env(spec=True)

    def step(self: Any, td: Any) -> Any:
        return tensordict({key: {"obs": td["obs"] + 1, "reward": torch.ones(1),
                                 "done": torch.zeros(1, dtype=torch.bool)}}, [])

    type(env)._step = step
    try:
        td = env.reset()
        td["action"] = torch.zeros(1)
        out = env.step(td)
        found = out.get(("next", "obs"))
    except Exception:
        return "absent"
    return "present" if found is not None and float(found.reshape(-1)[0]) == 1.0 else "absent"


def _positional(target: Any, parameter: str) -> str:
    """"present" while ``parameter`` may be passed by position, "absent" once it is keyword-only."""
    function = target.__dict__.get("__init__", target.__init__) if inspect.isclass(target) else target
    found = inspect.signature(function).parameters.get(parameter)
    if found is None:
        return "absent"
    return "absent" if found.kind is found.KEYWORD_ONLY else "present"


def _placeholders(function: Any, value: Any, optional: bool = False) -> dict[str, Any]:
    """``value`` for each parameter ``function`` requires (``self`` aside), or with ``optional``,
    for each that defaults to None."""
    parameters = list(inspect.signature(function).parameters.values())[1:]
    return {p.name: value for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and (p.default is None if optional else p.default is p.empty)}


def _raised_by(error: BaseException, code: Any) -> bool:
    """Whether ``error`` was raised by ``code``'s own frame, not by something it called."""
    trace = error.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    return trace is not None and trace.tb_frame.f_code is code


def _built(cls: Any, replacement: str | None) -> str:
    """A class whose constructor only raises: "absent" when building it (``None`` for what its
    constructor requires) raises from the constructor's own body, naming the replacement or saying
    the class is removed or deprecated; "present" when building it gets past that."""
    init = cls.__init__
    try:
        cls(**_placeholders(init, None))
    except Exception as error:  # what the placeholders break is not the question; the raise is
        words = [replacement.rpartition(".")[2]] if replacement else []
        text = str(error).lower()
        said = any(w.lower() in text for w in (*words, "removed", "deprecated"))
        return "absent" if said and _raised_by(error, init.__code__) else "present"
    return "present"


def _member(enum: Any, member: str, entry: dict) -> str:
    """``InteractionType.MODE`` with ``TanhNormal``: "absent" when reading the member's attribute
    (``.mode``) of each class it is listed with raises, naming the member to use instead; "present"
    when the member exists and the attribute gives a value."""
    import torch

    if not hasattr(enum, member):
        return "absent"
    attribute = member.lower()  # "MODE, MEDIAN and MEAN point to the property / attribute with the same name"
    advice = (entry.get("replacement") or "").rpartition(".")[2]
    answers = set()
    for short in entry.get("with", ()):
        cls = _distribution(short)
        instance = cls(**_placeholders(cls.__init__, torch.ones(3)))
        try:
            getattr(instance, attribute)
        except Exception as error:
            answers.add("absent" if advice and advice in str(error) else f"unusable: {type(error).__name__}: {error}")
        else:
            answers.add("present")
    return answers.pop() if len(answers) == 1 else f"mixed: {sorted(answers)}"


def _distribution(short: str) -> Any:
    """A class a member entry lists (torchrl's distributions), from the public module that exports them."""
    return getattr(importlib.import_module("torchrl.modules"), short)


def _keyword(target: Any, keyword: str) -> tuple[str, str]:
    """Whether ``target(keyword=...)`` is accepted: a parameter of its signature (a class's own
    ``__init__``, then its parents' while they take ``**kwargs`` too: a metaclass's ``__call__`` hides
    it from ``inspect.signature(cls)``), refused by Python when the constructor takes no ``**kwargs``,
    or else asked by calling (``None`` for what the constructor requires, 1 for the keyword): a
    warning naming the keyword (a deprecation block reads it) is "present", an error naming it
    (Python's, or a block that refuses it) is "absent"."""
    functions = [k.__dict__["__init__"] for k in target.__mro__ if "__init__" in k.__dict__] \
        if inspect.isclass(target) else [target]
    init = functions[0]
    for depth, function in enumerate(functions):
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):
            return "absent", "signature"
        if keyword in parameters:
            return "present", "signature"
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            if depth == 0:
                return "absent", "signature"
            break  # a parent that does not take it: whether ``**kwargs`` reaches it, the call says
    # What the constructor requires: None, then a small tensor, then -1 for what defaults to None
    # too (``SqueezeTransform(dim=None)`` raises unless given one).
    for arguments in (_placeholders(init, None), _placeholders(init, _tensor()),
                      {**_placeholders(init, None), **_placeholders(init, -1, optional=True)}):
        said, raised = _call(target, {**arguments, keyword: 1})
        if any(_names(w.message, keyword) for w in said):
            return "present", "called"
        if raised is not None and _names(raised, keyword):
            return "absent", "called"
        if raised is None:
            return "present", "called"  # taken without a word: a ``**kwargs`` that ignores it
    # The call fails on the placeholders before it reaches the keyword: read the constructors of the
    # class this release gives, its own and its parents' (``ClipPPOLoss`` passes ``**kwargs`` to
    # ``PPOLoss``, which reads ``entropy_coef``): the class found by importing, not by the generator.
    read = {_block(function, keyword) for function in functions} - {None}
    if len(read) == 1:
        return "present" if read == {"reads"} else "absent", "source read"
    return f"unknown: the call neither warned nor failed about `{keyword}` ({type(raised).__name__}: {raised})"[:300], "called"


def _tensor() -> Any:
    import torch

    return torch.ones(3)


def _call(target: Any, arguments: dict[str, Any]) -> tuple[list[warnings.WarningMessage], Exception | None]:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            target(**arguments)
        except Exception as error:
            return said, error
    return said, None


def _names(text: object, keyword: str) -> bool:
    """Whether a message names ``keyword`` ("Maximum is deprecated" names ``maximum``)."""
    return re.search(rf"\b{re.escape(keyword)}\b", str(text), re.IGNORECASE) is not None


def _block(function: Any, keyword: str) -> str | None:
    """``if "keyword" in kwargs:`` in ``function``'s own source: "refuses" when its body only raises,
    "reads" otherwise; None without one."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return None
    definition = tree.body[0]
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) or definition.args.kwarg is None:
        return None
    kwargs = definition.args.kwarg.arg
    for node in ast.walk(definition):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) \
                and isinstance(node.test.left, ast.Constant) and node.test.left.value == keyword \
                and isinstance(node.test.ops[0], ast.In) and isinstance(node.test.comparators[0], ast.Name) \
                and node.test.comparators[0].id == kwargs:
            return "refuses" if all(isinstance(b, ast.Raise) for b in node.body) else "reads"
    return None


def _imports(module: str) -> bool:
    """A submodule that ``from package import name`` would import."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as missing:
        if missing.name is not None and not module.startswith(missing.name):
            raise
        return False
    return True


def _restore_what_old_releases_import() -> None:
    """torch 2.13 no longer re-exports ``ForkingPickler`` from ``torch.multiprocessing.reductions``,
    which tensordict < 0.6 imports at start-up; it is the standard library's own class. torchrl < 0.2
    imports ``pkg_resources`` at start-up, only to list the installed distributions
    (``pkg_resources.working_set``); setuptools, which provided it, is not installed here: an empty
    list stands in (no optional library found, which is true of gym, dm_control and the rest here)."""
    import multiprocessing.reduction

    import torch.multiprocessing.reductions

    if not hasattr(torch.multiprocessing.reductions, "ForkingPickler"):
        torch.multiprocessing.reductions.ForkingPickler = multiprocessing.reduction.ForkingPickler  # type: ignore[attr-defined]
    if importlib.util.find_spec("pkg_resources") is None:
        stand_in = types.ModuleType("pkg_resources")
        stand_in.working_set = []  # type: ignore[attr-defined]
        sys.modules["pkg_resources"] = stand_in


def _import_library(package: str) -> None:
    """Import torchrl or tensordict. torchrl < 0.2 imports its compiled extension unconditionally
    (``from torchrl._torchrl import safetanh``), and that extension does not load against torch 2.13
    (undefined symbols); later releases tolerate its absence with a warning. For those, the Python
    layer is imported with a stand-in extension whose every attribute raises when used: the table's
    questions (names, methods, signatures) never call into it, and the newest release is never given it."""
    try:
        importlib.import_module(package)
    except ImportError as error:
        if package != "torchrl" or "_torchrl" not in str(error):
            raise
        for name in [m for m in sys.modules if m == "torchrl" or m.startswith("torchrl.")]:
            del sys.modules[name]
        sys.modules["torchrl._torchrl"] = _stand_in_extension()
        importlib.import_module(package)


def _stand_in_extension() -> types.ModuleType:
    def unavailable(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("torchrl's compiled extension does not load against this torch")

    extension = types.ModuleType("torchrl._torchrl")
    extension.__spec__ = importlib.machinery.ModuleSpec("torchrl._torchrl", None)
    # ``SumSegmentTreeFp32`` and the like are classes, ``safetanh`` a function: each raises when used.
    def attribute(name: str) -> Any:
        return type(name, (), {"__init__": unavailable}) if name[:1].isupper() else unavailable

    extension.__dict__["__getattr__"] = attribute  # a module's __getattr__ answers names it lacks (PEP 562)
    return extension


def main() -> None:
    warnings.simplefilter("ignore")
    _restore_what_old_releases_import()
    answers = []
    for entry in json.load(sys.stdin):
        try:
            answers.append(answer(entry))
        except Exception as error:  # the module cannot be imported here
            answers.append((f"unimportable: {type(error).__name__}: {error}"[:300], "imported"))
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
