"""RLG009 unguarded-worker-start: a torchrl class that starts worker processes, built at module level
outside an ``if __name__ == "__main__":`` guard, in a program that leaves torchrl's start method (spawn)."""

from __future__ import annotations

from typing import NamedTuple

from rlguard.engine.lazy import cst

from rlguard.engine.findings import Fix
from rlguard.engine.names import dotted_name
from rlguard.fix.main_guard import main_guard, plan
from rlguard.rules.base import Example, Rule
from rlguard.rules.data import MULTI_PROCESS_COLLECTORS

# The classes whose workers torchrl starts with its default start method: the multiprocess collectors
# (``data.MULTI_PROCESS_COLLECTORS``), which start them when built, and ParallelEnv, which starts them when
# first used (a reset, a step, a collector built on it: torchrl 0.14.1's batched_envs.py, and run).
WORKER_CLASSES = MULTI_PROCESS_COLLECTORS | {"ParallelEnv"}
LAZY_WORKER_CLASSES = frozenset({"ParallelEnv"})
# Start methods under which a worker does not import the main module again.
INHERITING_METHODS = frozenset({"fork"})


def _literal(node: cst.BaseExpression) -> str | None:
    value = node.evaluated_value if isinstance(node, cst.SimpleString) else None
    return value if isinstance(value, str) else None


class Switch(NamedTuple):
    """A parameter that defaults to a falsy literal (``parallel=False``), by name and position."""

    name: str
    position: int

    def passed(self, call: cst.Call) -> bool:
        """The call passes it, as anything but a falsy literal."""
        positional = [a for a in call.args if a.keyword is None and not a.star]
        given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == self.name), None)
        if given is None and len(positional) > self.position:
            given = positional[self.position].value
        if given is None:
            return any(a.star for a in call.args)  # ``f(**options)`` may pass it
        return not _falsy(given)


def _falsy(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("False", "None") or \
        isinstance(node, cst.Integer) and node.evaluated_value == 0


def _switches(params: cst.Parameters) -> dict[str, Switch]:
    ordered = [*params.posonly_params, *params.params]
    found = {p.name.value: Switch(p.name.value, i) for i, p in enumerate(ordered)
             if p.default is not None and _falsy(p.default)}
    found.update({p.name.value: Switch(p.name.value, 1 << 30) for p in params.kwonly_params
                  if p.default is not None and _falsy(p.default)})
    return found


class UnguardedWorkerStart(Rule):
    code = "RLG009"
    name = "unguarded-worker-start"
    summary = "Builds a multiprocess collector or ParallelEnv at module level without a `__main__` guard"
    what = (
        "Flags each call, at module level and outside an `if __name__ == \"__main__\":` block, of a torchrl "
        "class whose workers torchrl starts as processes: the multiprocess collectors (`MultiSyncCollector`, "
        "`MultiaSyncDataCollector`, `AsyncCollector`, ...), which start them when built, also through a function "
        "of the file that builds one, and `ParallelEnv`, which starts them when first used: flagged where "
        "module-level code outside the guard uses it (`env.rollout(...)`, a collector built on it). Silent inside "
        "functions and "
        "classes, under the guard, when the call passes `mp_start_method=\"fork\"`, and in a file that sets a "
        "start method other than `spawn` or `forkserver` itself (`multiprocessing.set_start_method(\"fork\")`)."
    )
    why = (
        "Every torchrl release sets the `spawn` start method when it is imported, unless the program chose one "
        "first (from the first release, 0.0.5, to 0.10 in `torchrl/__init__.py`; 0.11 on through "
        "`_get_default_mp_start_method`, which the "
        "collectors and ParallelEnv read too). A spawned worker starts a fresh interpreter that imports the "
        "main module again: a collector built at module level is built again in the worker, which fails "
        "(\"An attempt has been made to start a new process before the current process has finished its "
        "bootstrapping phase\"), and the parent waits for a worker that never answers. Tutorials written as "
        "notebooks or gallery pages hit this as soon as they are run as scripts."
    )
    fix_doc = (
        "Unsafe (`--unsafe-fixes`). The module-level statements from the first one that starts workers (itself "
        "or through the functions it calls) to the end of the file go under one `if __name__ == \"__main__\":` "
        "at the end (an existing guard among them is merged in). A spawned worker imports the module by name "
        "and looks up there, by name, what it was sent: the functions and classes pickled by reference (an env "
        "factory, a policy's class) and the module-level names their code reads. So what stays is decided from "
        "names: a `def`, `class` or import after the first start stays at module level, above the guard, unless "
        "it reads or rebinds a name the moved code binds, or its name is bound elsewhere in the file (then it "
        "moves too). The fix is offered only when\n\n"
        "- no function, lambda or generator that stays at module level reads, when it runs, a name the moved "
        "code binds, rebinds, deletes or changes in place (`x = ...`, `x += ...`, `x.a = ...`, `x[i] = ...`): "
        "a worker running it would not find the name, or would see its old value;\n"
        "- no function or class defined in the moved code is used up to the last statement that starts workers: "
        "pickled by name, a worker would not find it;\n"
        "- the moved code has no `from ... import *`, whose names cannot be listed.\n\n"
        "Otherwise the finding stays without a fix, and its remedy names the function and the name in the way. "
        "It is unsafe because names other modules import from this one move under the guard, and a change the "
        "moved code makes through a method call (`config.update(...)`) is not seen by the workers. Setting "
        "`multiprocessing.set_start_method(\"fork\")` before torchrl is imported is the other remedy, where fork "
        "is safe (Linux, no CUDA initialised in the parent)."
    )
    tokens = (("Collector", "ParallelEnv"),)
    # A module of torchrl or tensordict is imported, never run as the program whose module level spawns.
    library_copies = False
    valid = (
        Example("from torchrl.collectors import MultiSyncCollector\n\n\ndef main():\n"
                "    collector = MultiSyncCollector([make_env] * 2, policy, frames_per_batch=64)\n\n\n"
                "if __name__ == \"__main__\":\n    main()\n",
                note="Inside a function called under the guard."),
        Example("from torchrl.envs import ParallelEnv\n\nif __name__ == \"__main__\":\n"
                "    env = ParallelEnv(2, make_env)\n", note="Under the guard."),
        Example("import multiprocessing\n\nfrom torchrl.envs import ParallelEnv\n\n"
                "multiprocessing.set_start_method(\"fork\")\nenv = ParallelEnv(2, make_env)\n",
                note="The program chose `fork`: workers do not import the module again."),
        Example("from torchrl.collectors import Collector\n\ncollector = Collector(make_env(), policy, "
                "frames_per_batch=64)\n", note="A collector that runs in the calling process."),
    )
    invalid = (
        Example("from torchrl.collectors import MultiaSyncDataCollector\n\n"
                "collector = MultiaSyncDataCollector([make_env] * 2, policy, frames_per_batch=64)\n"
                "for batch in collector:\n    train(batch)\n\n\ndef train(batch):\n    ...\n",
                fixed="from torchrl.collectors import MultiaSyncDataCollector\n\n\ndef train(batch):\n    ...\n\n\n"
                "if __name__ == \"__main__\":\n"
                "    collector = MultiaSyncDataCollector([make_env] * 2, policy, frames_per_batch=64)\n"
                "    for batch in collector:\n        train(batch)\n",
                unsafe=True, target="0.12", message="starts workers",
                note="The definitions after it stay at module level, above the guard."),
        Example("import torchrl.envs\n\nenv = torchrl.envs.ParallelEnv(2, make_env)\nenv.rollout(10)\n",
                fixed="import torchrl.envs\n\nif __name__ == \"__main__\":\n    env = torchrl.envs.ParallelEnv(2, make_env)\n"
                "    env.rollout(10)\n", unsafe=True, message="at module level"),
        Example("from torchrl.envs import ParallelEnv\n\n\ndef make_env():\n    return GymEnv(name)\n\n\n"
                "env = ParallelEnv(2, make_env)\nname = \"Pendulum-v1\"\nenv.rollout(10)\n",
                message="starts workers",
                note="No fix: the env factory the workers run reads `name`, which would move under the guard."),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._guards = 0  # ``if __name__ == "__main__":`` blocks the walk is in
        self._calls: list[tuple[cst.Call, str]] = []  # unguarded module-level worker starts, + what is called
        self._chosen = False  # the file sets a start method under which workers inherit the parent
        self._functions: list[str] = []  # the module-level function the walk is in, innermost last
        # module-level function -> (a worker class it builds, the switch it builds it under, if any)
        self._starts: dict[str, tuple[str, Switch | None]] = {}
        self._callees: dict[str, list[cst.Call]] = {}  # module-level function -> its calls of a plain name
        self._local_calls: list[cst.Call] = []  # unguarded module-level calls of a plain name
        self._switches: dict[str, Switch] = {}  # the current function's parameters that default to a falsy literal
        # enclosing ``if`` tests, each with whether the walk is in its ``else``, and that ``else``
        self._branches: list[list] = []
        self._assigned: dict[int, str] = {}  # module-level ``name = <call>``: the call's id -> name
        self._targets: set[int] = set()  # those names' Name nodes (a binding, not a read)
        self._reads: list[str] = []  # names read by unguarded module-level code, in source order
        # ``env = ParallelEnv(...)`` unguarded at module level: (call, name, reads before it, what is called)
        self._lazy: list[tuple[cst.Call, str, int, str]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self._functions:
            self._switches = _switches(node.params)
        self._functions.append(node.name.value if not self._functions else "")

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._functions.append("")  # methods are not called by a plain name

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._functions.pop()

    def visit_If(self, node: cst.If) -> None:
        self._guards += main_guard(node.test)
        self._branches.append([node.test, False, node.orelse])

    def visit_Else(self, node: cst.Else) -> None:
        if self._branches and self._branches[-1][2] is node:  # not the ``else`` of a ``for``, ``while`` or ``try``
            self._branches[-1][1] = True

    def leave_If(self, node: cst.If) -> None:
        self._guards -= main_guard(node.test)
        self._branches.pop()

    def _switch(self) -> Switch | None:
        """The parameter (defaulting to a falsy literal) that the enclosing ``if <parameter>:`` tests, the
        walk being in its body: the function builds the class only when a caller passes it."""
        for test, in_else, _ in reversed(self._branches):
            if isinstance(test, cst.Name) and test.value in self._switches and not in_else:
                return self._switches[test.value]
        return None

    def visit_Call(self, node: cst.Call) -> None:
        callee = self.ctx.callee(node) or ""
        short = callee.rpartition(".")[2]
        if short == "set_start_method" and callee.split(".")[0] in ("multiprocessing", "torch"):
            method = _literal(node.args[0].value) if node.args else None
            self._chosen |= method is None or method in INHERITING_METHODS
            return
        owner = self._functions[0] if self._functions else None
        if owner and isinstance(node.func, cst.Name):
            self._callees.setdefault(owner, []).append(node)
        if owner is None and isinstance(node.func, cst.Name) and not self._guards and self.ctx.at_module_level:
            self._local_calls.append(node)
        if not callee.startswith("torchrl.") or short not in WORKER_CLASSES or self._guards:
            return
        if owner:  # a worker start inside a module-level function: flagged where module-level code calls it
            if short in LAZY_WORKER_CLASSES:
                return  # built, not started: where the caller uses it is not followed
            switch = self._switch()
            if owner not in self._starts or self._starts[owner][1] is not None and switch is None:
                self._starts[owner] = (short, switch)
            return
        if owner is not None or not self.ctx.at_module_level:
            return
        passed = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "mp_start_method"), None)
        if passed is not None and (_literal(passed) is None or _literal(passed) in INHERITING_METHODS):
            return
        what = f"`{dotted_name(node.func) or short}(...)`"
        if short in LAZY_WORKER_CLASSES and id(node) in self._assigned:
            self._lazy.append((node, self._assigned[id(node)], len(self._reads), what))
        else:
            self._calls.append((node, what))

    def visit_Assign(self, node: cst.Assign) -> None:
        """``env = ParallelEnv(...)`` at module level: its workers start where module-level code reads ``env``."""
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and not self._functions:
            self._assigned[id(node.value)] = node.targets[0].target.value
            self._targets.add(id(node.targets[0].target))

    def visit_Name(self, node: cst.Name) -> None:
        if not self._functions and not self._guards and id(node) not in self._targets and self.ctx.at_module_level:
            self._reads.append(node.value)

    def _builds(self, call: cst.Call, starts: dict[str, str]) -> str | None:
        """The worker class that this call of a module-level function builds: always, or because the call
        switches on the parameter it is built under (``make_env(parallel=True)``)."""
        name = call.func.value if isinstance(call.func, cst.Name) else ""
        if name in starts:
            return starts[name]
        built, switch = self._starts.get(name, ("", None))
        return built if switch is not None and switch.passed(call) else None

    def leave_Module(self, node: cst.Module) -> None:
        if self._chosen:
            return
        starts = {f: built for f, (built, switch) in self._starts.items() if switch is None}
        while True:  # through the functions each calls, to a fixed point (a switched start must be switched on)
            more = {f: built for f, calls in self._callees.items() if f not in starts
                    for call in calls if (built := self._builds(call, starts))}
            if not more:
                break
            starts.update(more)
        for call in self._local_calls:
            built = self._builds(call, starts)
            if built:
                name = call.func.value  # type: ignore[attr-defined]  # a Name, by ``visit_Call``
                self._calls.append((call, f"`{name}(...)`, which builds a `{built}`,"))
        self._calls += [(call, what) for call, name, before, what in self._lazy if name in self._reads[before:]]
        if not self._calls:
            return
        planned = plan(node, [call for call, _ in self._calls])
        fix = planned if isinstance(planned, Fix) else None
        why_not = "" if fix else f"No automatic fix: {planned}. "
        for call, what in self._calls:  # one fix moves them all
            self.report(call, f"{what} starts workers at module level: each `spawn`ed worker re-runs this module and fails",
                        fix=fix,
                        remedy=(f"{why_not}torchrl starts them with `spawn`, so each imports this module again, runs this line "
                                "and fails while the parent waits for it: put the module-level code from here on under `if __name__ == \"__main__\":` (or in "
                                "a `main()` called there), keeping at module level the functions and classes the "
                                "workers run and the names they read; or call "
                                "`multiprocessing.set_start_method(\"fork\")` before importing torchrl where fork "
                                "is safe (Linux, no CUDA in the parent)"))
