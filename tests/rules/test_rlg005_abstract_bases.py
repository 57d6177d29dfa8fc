"""RLG005: a hook class without a working ``register`` may be an abstract base that subclasses complete.

Such a class is reported where the class itself is built: at its statement when its own file builds
it, at the call in another file that builds it. A project laid out like blind case 034 (the base in
``hooks/base.py``, the subclass that completes it in ``hooks/counters.py``, built in ``main.py``) is run
against a real ``torchrl.trainers.Trainer`` (torchrl 0.14.1): the silent layout checkpoints the hook's
state, the flagged one raises ``NotImplementedError``. Each layout is checked as a whole project and one
file at a time, as pre-commit passes them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from rlguard.testing import check_source  # noqa: E402
from tests.rules.test_rlg005_execution import trainer  # noqa: E402, F401  (the real-Trainer fixture)

BASE = '''\
from torchrl.trainers import TrainerHookBase


class StatefulHook(TrainerHookBase):
    """Checkpoints every attribute listed in `state_keys`."""

    state_keys = ()

    def state_dict(self):
        return {key: getattr(self, key) for key in self.state_keys}

    def load_state_dict(self, state_dict):
        for key in self.state_keys:
            setattr(self, key, state_dict[key])
'''

COUNTERS = '''\
from hooks.base import StatefulHook


class FrameCounter(StatefulHook):
    state_keys = ("frames",)

    def __init__(self):
        self.frames = 0

    def __call__(self, batch):
        self.frames += batch.numel()

    def register(self, trainer, name="frame_counter"):
        trainer.register_module(name, self)
        trainer.register_op("pre_steps_log", self)
'''

MAIN = '''\
from hooks.counters import FrameCounter


def attach(trainer):
    counter = FrameCounter()
    counter.register(trainer)
    return counter
'''

MAIN_BUILDS_THE_BASE = '''\
from hooks.base import StatefulHook as Hook


def attach(trainer):
    hook = Hook()
    hook.register(trainer, "stateful")
    return hook
'''


def project(tmp_path, main):
    files = {"hooks/__init__.py": "", "hooks/base.py": BASE, "hooks/counters.py": COUNTERS, "main.py": main}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return files


def rlguard(folder, *paths):
    """``rlguard check`` on ``paths`` (one file: as pre-commit runs it): (path, line, message) per finding."""
    run = subprocess.run([sys.executable, "-m", "rlguard", "check", "--no-cache", "--select", "RLG005",
                          "--output-format", "json", "--exit-zero", *paths], cwd=folder, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    return [(f["path"], f["line"], f["message"]) for f in json.loads(run.stdout)]


def run_main(folder, trainer):  # noqa: F811
    sys.path.insert(0, str(folder))
    try:
        import main
        return main.attach(trainer)
    finally:
        sys.path.remove(str(folder))
        for name in ("main", "hooks", "hooks.base", "hooks.counters"):
            sys.modules.pop(name, None)


def test_a_base_completed_by_its_subclass_is_silent_and_checkpoints(tmp_path, trainer):  # noqa: F811
    for name in [".", *project(tmp_path, MAIN)]:
        assert rlguard(tmp_path, name) == [], name
    counter = run_main(tmp_path, trainer)
    counter.frames = 32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.save_trainer(force_save=True)
        state = torch.load(trainer.save_trainer_file, weights_only=False)
    assert dict(state["frame_counter"]) == {"frames": 32}


def test_the_base_built_in_another_file_is_reported_at_the_call_and_crashes(tmp_path, trainer):  # noqa: F811
    files = project(tmp_path, MAIN_BUILDS_THE_BASE)
    expected = [("main.py", 5, "`Hook(...)` builds a hook without a working `register`")]
    assert rlguard(tmp_path, ".") == expected
    assert rlguard(tmp_path, "main.py") == expected  # pre-commit passing the file that builds it
    for name in files:
        if name != "main.py":
            assert rlguard(tmp_path, name) == [], name  # the base's file alone: nothing to say
    with pytest.raises(NotImplementedError):
        run_main(tmp_path, trainer)


HOOK_HEAD = "from torchrl.trainers import TrainerHookBase\n\n\n"
NO_REGISTER = HOOK_HEAD + '''\
class Stateless(TrainerHookBase):
    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        pass
'''
NO_LOAD = HOOK_HEAD + '''\
class Half(TrainerHookBase):
    def state_dict(self):
        return {}

    def register(self, trainer, name="half"):
        trainer.register_module(name, self)
'''


def rlg005(source, files=None):
    return [(f.line, f.message) for f in check_source(source, select=["RLG005"], extra_files=files) if f.code == "RLG005"]


def test_built_in_its_own_file_it_is_reported_at_its_statement_and_crashes(trainer, tmp_path):  # noqa: F811
    source = NO_REGISTER + "\n\ndef attach(trainer):\n    Stateless().register(trainer, 'stateless')\n"
    assert [line for line, _ in rlg005(source)] == [4]
    path = tmp_path / "own.py"
    path.write_text(source)
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)
    with pytest.raises(NotImplementedError):
        namespace["attach"](trainer)


@pytest.mark.parametrize("main", [
    "from hooks_base import Stateless\n\n\nclass Tick(Stateless):\n"
    "    def register(self, trainer, name='tick'):\n        trainer.register_op('post_steps', self)\n\n\n"
    "Tick().register(trainer)\n",  # a subclass that completes it is built
    "from hooks_base import Half\n\nHalf().register(trainer)\n",  # concrete: reported at its own statement
    "from hooks_base import Abstract\n\nAbstract().register(trainer)\n",  # declares abstract methods itself
    "from hooks_base import Scheduler\n\nScheduler().register(trainer)\n",  # not a hook
])
def test_calls_that_build_no_abstract_looking_hook_are_not_reported(main):
    abstract = ("import abc\n" + HOOK_HEAD + "class Abstract(TrainerHookBase):\n"
                "    @abc.abstractmethod\n    def log(self, batch):\n        ...\n")
    base = NO_REGISTER + "\n\n" + NO_LOAD.removeprefix(HOOK_HEAD) + "\n\n" + abstract + "\n\nclass Scheduler:\n    pass\n"
    assert rlg005(main, {"hooks_base.py": base}) == []


def test_the_concrete_class_is_reported_at_its_statement_whether_or_not_it_is_built():
    assert [line for line, _ in rlg005(NO_LOAD)] == [4]
    assert [line for line, _ in rlg005(NO_LOAD + "\n\nHalf()\n")] == [4]
