"""RLG001 through container members: ``self.handles = {"cam": threading.Lock()}`` cannot be copied either.

The engine records the items of a container literal a member is set to (dicts, lists, tuples, sets,
``dict(...)``/``list(...)`` of them, comprehensions, ``nn.ModuleList``/``nn.Sequential``), and the
rule names the path to the item (``self.handles["cam"]``), in the same file and across files.
"""

from __future__ import annotations

import copy
import textwrap
import threading

import pytest
from torch import nn

from rlguard.testing import check_source


def flagged(source: str, files: dict[str, str] | None = None) -> list[str]:
    found = check_source(textwrap.dedent(source), select=["RLG001"], extra_files=files)
    return [f.full_message for f in found if f.code == "RLG001"]


POLICY = """\
import copy
import threading
import queue

import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(3, 1)
        self.handles = {value}


copy.deepcopy(Policy())
"""


@pytest.mark.parametrize(("value", "member", "what"), [
    ('{"cam": threading.Lock()}', 'self.handles["cam"]', "a thread lock"),
    ("{'cam': threading.Lock(), 'ok': 1}", "self.handles['cam']", "a thread lock"),
    ("[nn.Linear(2, 2), threading.RLock()]", "self.handles[1]", "a thread lock"),
    ("(threading.Lock(),)", "self.handles[0]", "a thread lock"),
    ("{threading.Lock()}", "self.handles", "a thread lock"),
    ("dict(cam=threading.Lock())", "self.handles['cam']", "a thread lock"),
    ('dict({"cam": queue.Queue()})', 'self.handles["cam"]', "a thread queue"),
    ("list([threading.Lock()])", "self.handles[0]", "a thread lock"),
    ("tuple((threading.Lock(), 2))", "self.handles[0]", "a thread lock"),
    ("[threading.Lock() for _ in range(4)]", "self.handles[...]", "a thread lock"),
    ('{"cams": [threading.Lock()]}', 'self.handles["cams"][0]', "a thread lock"),
    ("nn.ModuleList([nn.Linear(2, 2), Locked()])", "self.handles[1].lock", "a thread lock"),
    ("nn.Sequential(nn.Linear(2, 2), Locked())", "self.handles[1].lock", "a thread lock"),
])
def test_an_uncopyable_item_is_named_by_its_path(value, member, what):
    source = POLICY.replace("{value}", value).replace(
        "class Policy", "class Locked(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                        "        self.lock = threading.Lock()\n\n\nclass Policy")
    (message,) = flagged(source)
    assert f"`{member}` holds {what}" in message


@pytest.mark.parametrize("value", [
    '{"head": nn.Linear(2, 2), "lr": 0.1}', "[1, 2, 3]", "(nn.Linear(2, 2),)", "dict(lr=0.1)", "list(range(3))",
    "{n: nn.Linear(2, 2) for n in 'ab'}", "[threading.Lock]", "{'kind': threading.Lock.__name__}",
    "nn.ModuleList([nn.Linear(2, 2)])",
])
def test_containers_of_copyable_things_are_not_flagged(value):
    assert flagged(POLICY.replace("{value}", value)) == []


def test_a_container_replaced_before_it_is_stored_is_not_flagged():
    source = POLICY.replace("        self.handles = {value}\n",
                            '        handles = {"cam": threading.Lock()}\n'
                            "        handles = {}\n"
                            "        self.handles = handles\n")
    assert flagged(source) == []
    kept = POLICY.replace("        self.handles = {value}\n",
                          '        handles = {"cam": threading.Lock()}\n'
                          "        self.handles = handles\n")
    assert len(flagged(kept)) == 1


def test_a_class_that_copies_itself_or_is_marked_is_not_flagged():
    hooked = POLICY.replace("{value}", '{"cam": threading.Lock()}').replace(
        "    def __init__(self):", "    def __deepcopy__(self, memo):\n        return self\n\n    def __init__(self):")
    assert flagged(hooked) == []
    marked = POLICY.replace("{value}", '{"cam": threading.Lock()}').replace(
        "copy.deepcopy(Policy())", "from rlguard.runtime import uncopyable\n\npolicy = Policy()\n"
                                   "uncopyable(policy)\ncopy.deepcopy(policy)")
    assert flagged(marked) == []


MODELS = """\
import threading

from torch import nn


class Camera:
    def __init__(self):
        self.handles = {"cam": threading.Lock()}


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.sensors = [Camera()]
        self.head = nn.Linear(3, 1)
"""

COLLECT = """\
from torchrl.collectors import Collector

from robot.models import Policy

collector = Collector(None, Policy(), frames_per_batch=1, total_frames=1, policy_device="cuda:0")
"""


def test_an_item_held_in_another_file_is_found_and_located():
    files = {"robot/__init__.py": "", "robot/models.py": MODELS}
    (message,) = flagged(COLLECT, files)
    assert '`self.sensors[0].handles["cam"]` holds a thread lock' in message
    assert "robot/models.py:8" in message


def test_an_item_of_a_copyable_class_in_another_file_is_not_flagged():
    files = {"robot/__init__.py": "", "robot/models.py": MODELS.replace('{"cam": threading.Lock()}', '{"cam": 0}')}
    assert flagged(COLLECT, files) == []


def test_the_flagged_policy_cannot_be_deep_copied():
    """What the finding says, checked on the real objects: a lock inside a dict member stops
    ``copy.deepcopy`` (and so a collector's ``policy_device`` move) with TypeError."""

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(3, 1)
            self.handles = {"cam": threading.Lock()}

    with pytest.raises(TypeError, match="lock"):
        copy.deepcopy(Policy())
    copy.deepcopy(nn.ModuleDict({"head": nn.Linear(3, 1)}))  # the near miss copies


def test_a_container_rebuilt_from_itself_is_read_without_endless_recursion():
    source = POLICY.replace("        self.handles = {value}\n",
                            "        handles = dict(shared)\n"
                            "        handles = dict(handles)\n"
                            "        self.handles = handles\n")
    found = check_source(source, extra_files=None)
    assert [f.code for f in found] == []
