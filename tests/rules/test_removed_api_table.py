"""The removed-API table: the generator on small made-up releases, and the shipped table against the real wheels."""

from __future__ import annotations

import json
import os
import zipfile

import pytest

from rlguard_dev import upgrade_table
from rlguard.engine.target import NEWEST_KNOWN_TORCHRL, RELEASES_FILE, known_releases
from rlguard.rules.data import REMOVED_API, REMOVED_API_FILE, REMOVED_API_REVIEW


def _wheel(folder, package: str, version: str, files: dict[str, str]) -> None:
    with zipfile.ZipFile(os.path.join(folder, f"{package}-{version}-py3-none-any.whl"), "w") as archive:
        for path, text in files.items():
            archive.writestr(f"{package}/{path}", text)


OLD = {
    "__init__.py": "from .specs import Composite, CompositeSpec, Helper\nfrom .util import *\n",
    "specs.py": (
        "import warnings\n"
        "class Composite:\n"
        "    def __init__(self, shape=None, legacy=None):\n"
        "        if legacy is not None:\n"
        "            warnings.warn('legacy is deprecated, use shape instead')\n"
        "    def old_method(self):\n"
        "        warnings.warn('old_method is deprecated and will be removed in v0.3; use new_method instead')\n"
        "class CompositeSpec(Composite):\n"
        "    '''Deprecated version of :class:`pkg.Composite`.'''\n"
        "class Helper:\n"
        "    pass\n"
    ),
    "util.py": "__all__ = ['tool']\ndef tool():\n    pass\ndef _private():\n    pass\n",
    "moved_from.py": "def wanderer():\n    pass\n",
}
NEW = {
    "__init__.py": "from .specs import Composite\nfrom .util import *\nfrom .elsewhere import wanderer\n",
    "specs.py": "class Composite:\n    def __init__(self, shape=None):\n        pass\n    def new_method(self):\n        pass\n",
    "util.py": "__all__ = []\n",
    "elsewhere.py": "def wanderer():\n    pass\n",
}


def test_generator_on_made_up_releases(tmp_path):
    _wheel(tmp_path, "pkg", "0.1.0", OLD)
    _wheel(tmp_path, "pkg", "0.3.0", NEW)
    table = upgrade_table.build(str(tmp_path), {"pkg": ("0.1.0", "0.3.0")})
    found = {(e["kind"], e["module"], e["name"]): e for e in table["entries"]}
    shim = found[("name", "pkg", "CompositeSpec")]
    assert (shim["removed_in"], shim["replacement"], shim["how"], shim["fix"]) == ("0.3", "pkg.Composite", "message", "safe")
    assert found[("name", "pkg.specs", "CompositeSpec")]["deprecated_in"] == "0.1"
    # No evidence, nowhere else: removed with no replacement and no fix.
    helper = found[("name", "pkg", "Helper")]
    assert (helper["replacement"], helper["fix"]) == (None, "none")
    # A star import re-exports __all__; ``tool`` left it.
    assert found[("name", "pkg", "tool")]["removed_in"] == "0.3"
    moved = found[("name", "pkg.moved_from", "wanderer")]
    assert (moved["replacement"], moved["how"]) == ("pkg.wanderer", "moved")  # the shortest public path
    method = found[("method", "pkg.specs", "Composite.old_method")]
    assert (method["replacement"], method["announced_removal"]) == ("new_method", "0.3")
    # A keyword is listed where users import its class from, in the newest release and the last that took it.
    keyword = found[("keyword", "pkg", "Composite.legacy")]
    assert keyword["replacement"] == "shape"
    # Near misses: a private helper and a name still there are not in the table.
    assert not any(e["name"] in ("_private", "Composite") for e in table["entries"])


@pytest.mark.slow  # derives the whole table: a minute or two
def test_shipped_table_matches_the_wheels(release_wheels):
    derived = upgrade_table.render(upgrade_table.build(release_wheels))
    with open(REMOVED_API_FILE, encoding="utf-8") as handle:
        assert handle.read() == derived, "stale table: run `python -m rlguard_dev.upgrade_table --write`"


def test_the_releases_beside_the_table_are_the_ones_it_was_generated_from():
    """``target.known_releases`` reads them from their own file, written with the table."""
    with open(REMOVED_API_FILE, encoding="utf-8") as handle:
        table = json.load(handle)
    assert upgrade_table.render_releases(table) == open(RELEASES_FILE, encoding="utf-8").read()
    assert known_releases()[-1] == NEWEST_KNOWN_TORCHRL and len(known_releases()) == len(table["generated_from"]["torchrl"])


def test_review_names_real_entries():
    """Every hand-reviewed key is an entry of the generated table: a review cannot silently go stale."""
    with open(REMOVED_API_FILE, encoding="utf-8") as handle:
        generated = {(e["module"], e["name"]) for e in json.load(handle)["entries"]}
    assert set(REMOVED_API_REVIEW) <= generated
    assert not any((c.module, c.name) in REMOVED_API_REVIEW and REMOVED_API_REVIEW[(c.module, c.name)] is None
                   for c in REMOVED_API)


HANDLERS = {"handlers.py": "from .utils import HANDLED\n\n\nclass Handler:\n    pass\n"}


def test_a_name_bound_from_another_package_or_in_a_failing_module(tmp_path):
    """``implement_for`` re-exported from ``pyvers`` is still importable: not removed. A module whose own
    relative import names what its origin lacks fails to import: nothing came from it, and its names are
    gone from the release where it starts to fail."""
    _wheel(tmp_path, "pkg", "0.1.0", {
        "__init__.py": "", "utils.py": "def implement_for():\n    pass\nHANDLED: dict = {}\n",
        "llm.py": "class KL:\n    pass\n", "rlhf.py": "from .llm import KL\n__all__ = [\"KL\"]\n", **HANDLERS,
    })
    _wheel(tmp_path, "pkg", "0.2.0", {
        "__init__.py": "", "utils.py": "from pyvers import implement_for\nHANDLED: dict = {}\n",
        "llm.py": "class KL:\n    pass\n", "rlhf.py": "from .llm import KL, as_nested\n__all__ = [\"KL\", \"as_nested\"]\n",
        **HANDLERS,
    })
    _wheel(tmp_path, "pkg", "0.3.0", {"__init__.py": "", "utils.py": "from pyvers import implement_for\nHANDLED: dict = {}\n",
                                      "llm.py": "class KL:\n    pass\n", **HANDLERS})
    table = upgrade_table.build(str(tmp_path), {"pkg": ("0.1.0", "0.2.0", "0.3.0")})
    found = {(e["module"], e["name"]): e["removed_in"] for e in table["entries"]}
    assert ("pkg.utils", "implement_for") not in found  # imports fine on every release
    assert found[("pkg.rlhf", "KL")] == "0.2"  # rlhf fails to import from 0.2 on
    assert ("pkg.rlhf", "as_nested") not in found  # never importable
    assert ("pkg.handlers", "Handler") not in found  # ``HANDLED: dict = {}`` binds what it imports
