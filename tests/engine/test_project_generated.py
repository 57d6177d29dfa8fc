"""The one-file guarantee over generated projects: packages with classes deriving across files,
imported absolutely, relatively or through a re-export, in a flat or a src layout, with import cycles."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

import pathlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.test_project import assert_same_findings_alone_and_together, write

LIBRARY_BASES = {
    "LSTMModule": "from torchrl.modules import LSTMModule",
    "Transform": "from torchrl.envs import Transform",
    "TrainerHookBase": "from torchrl.trainers import TrainerHookBase",
    "nn.Module": "from torch import nn",
}
METHODS = {
    "state_dict": "    def state_dict(self):\n        return {}\n",
    "load_state_dict": "    def load_state_dict(self, state_dict):\n        raise NotImplementedError\n",
    "register": "    def register(self, trainer, name):\n        trainer.register_op('post_loss', self)\n",
    "set_recurrent_mode": "    def set_recurrent_mode(self, mode=True):\n        return self\n",
    "_reset": "    def _reset(self, tensordict, tensordict_reset):\n        return TensorDict({}, batch_size=[])\n",
    "__init__": "    def __init__(self):\n        super().__init__()\n        self.lock = threading.Lock()\n",
}
USES = {
    "recurrent": "core = {cls}()\ncore.set_recurrent_mode(True)\n",
    "collect": ("policy = TensorDictModule({cls}(), in_keys=['observation'], out_keys=['action'])\n"
                "collector = Collector(PendulumEnv(), policy, frames_per_batch=8, total_frames=16, policy_device='cpu:0')\n"),
    "subclass": "class Local({cls}):\n    def _reset(self, tensordict, tensordict_reset):\n        return TensorDict({{}}, batch_size=[])\n",
    "hook": "class Hook({cls}):\n    def register(self, trainer, name):\n        pass\n",
    "registered": "hook = {cls}()\nhook.register(trainer, 'hook')\n",  # RLG005 reports a hook base built here
}
SCRIPT_HEADER = ("from tensordict import TensorDict\nfrom tensordict.nn import TensorDictModule\n"
                 "from torchrl.collectors import Collector\nfrom torchrl.envs import PendulumEnv\n")


@dataclass(frozen=True)
class ClassSpec:
    base: str  # a library base, or the index of an earlier class of the project
    methods: tuple[str, ...]


@st.composite
def projects(draw) -> dict[str, str]:
    src = draw(st.booleans())
    count = draw(st.integers(1, 4))
    modules: list[list[ClassSpec]] = []
    owners: list[int] = []  # class number -> module number
    for module in range(count):
        classes = []
        for _ in range(draw(st.integers(1, 2))):
            earlier = len(owners)
            choices = [*LIBRARY_BASES, *range(earlier)]
            base = draw(st.sampled_from(choices))
            methods = tuple(draw(st.lists(st.sampled_from(sorted(METHODS)), max_size=3, unique=True)))
            classes.append(ClassSpec(str(base), methods))
            owners.append(module)
        modules.append(classes)
    styles = draw(st.lists(st.sampled_from(["absolute", "relative", "reexport"]), min_size=count, max_size=count))
    cycle = draw(st.booleans())
    prefix = "src/" if src else ""
    files = {"pyproject.toml": "[project]\nname = 'gen'\n"}
    exports = "".join(f"from .m{owners[n]} import C{n}\n" for n in range(len(owners)))
    files[f"{prefix}gen/__init__.py"] = exports
    number = 0
    for module, classes in enumerate(modules):
        lines = ["import threading", "from tensordict import TensorDict", *LIBRARY_BASES.values()]
        body = []
        for spec in classes:
            if spec.base.isdigit():
                owner = owners[int(spec.base)]
                if owner != module:
                    lines.append({"absolute": f"from gen.m{owner} import C{spec.base}",
                                  "relative": f"from .m{owner} import C{spec.base}",
                                  "reexport": f"from gen import C{spec.base}"}[styles[module]])
                base = f"C{spec.base}"
            else:
                base = spec.base
            methods = "".join(METHODS[m] for m in spec.methods) or "    pass\n"
            body.append(f"\n\nclass C{number}({base}):\n{methods}")
            number += 1
        if cycle and count > 1:
            lines.append(f"from . import m{(module + 1) % count}  # an import cycle")
        files[f"{prefix}gen/m{module}.py"] = "\n".join(lines) + "\n" + "".join(body)
    for position, use in enumerate(draw(st.lists(st.sampled_from(sorted(USES)), min_size=1, max_size=3))):
        target = draw(st.integers(0, len(owners) - 1))
        how = draw(st.sampled_from(["from gen import C{n}", "from gen.m{m} import C{n}"]))
        importing = how.format(n=target, m=owners[target])
        files[f"scripts/s{position}.py"] = f"{SCRIPT_HEADER}{importing}\n\n{USES[use].format(cls=f'C{target}')}"
    return files


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(projects())
def test_generated_project_same_findings_alone_and_together(files):
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder).resolve()
        write(root, files)
        assert_same_findings_alone_and_together(root)


def test_the_generator_makes_projects_with_cross_file_findings():
    """The property is only worth something if generated projects have findings that need other files."""
    files = {
        "pyproject.toml": "[project]\nname = 'gen'\n",
        "src/gen/__init__.py": "from .m0 import C0\n",
        "src/gen/m0.py": "from torchrl.modules import LSTMModule\n\n\nclass C0(LSTMModule):\n    pass\n",
        "scripts/s0.py": f"{SCRIPT_HEADER}from gen import C0\n\n{USES['recurrent'].format(cls='C0')}",
    }
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder).resolve()
        write(root, files)
        assert assert_same_findings_alone_and_together(root) == 1
