"""The removed-API generator on made-up releases: a name that leaves a module, comes back through a
re-export and leaves again; a module that goes, with the module that took its names."""

from __future__ import annotations

from rlguard_dev import upgrade_table
from tests.rules.test_removed_api_table import _wheel

UTILS = "class RandomPolicy:\n    pass\n"


def test_a_name_back_through_a_re_export_is_removed_when_the_re_export_goes(tmp_path):
    # Defined in ``collectors`` (0.1), gone (0.2), imported there from ``utils`` (0.3), gone again (0.4):
    # ``from pkg.collectors import RandomPolicy`` works up to 0.3 and fails from 0.4.
    releases = {
        "0.1.0": {"__init__.py": "", "collectors.py": UTILS + "class Collector:\n    pass\n", "utils.py": ""},
        "0.2.0": {"__init__.py": "", "collectors.py": "class Collector:\n    pass\n", "utils.py": UTILS},
        "0.3.0": {"__init__.py": "", "collectors.py": "from .utils import RandomPolicy\nclass Collector:\n    pass\n",
                  "utils.py": UTILS},
        "0.4.0": {"__init__.py": "from .utils import RandomPolicy\n", "collectors.py": "class Collector:\n    pass\n",
                  "utils.py": UTILS},
    }
    for version, files in releases.items():
        _wheel(tmp_path, "pkg", version, files)
    table = upgrade_table.build(str(tmp_path), {"pkg": tuple(releases)})
    found = {(e["kind"], e["module"], e["name"]): e for e in table["entries"]}
    entry = found[("name", "pkg.collectors", "RandomPolicy")]
    assert (entry["removed_in"], entry["replacement"], entry["fix"]) == ("0.4", "pkg.RandomPolicy", "safe")
    # Near misses: a name imported but never public there (``utils`` in ``collectors``), a name still there.
    assert not any(e["name"] in ("Collector", "utils") for e in table["entries"])


def test_a_removed_module_names_the_module_that_took_most_of_its_names(tmp_path):
    _wheel(tmp_path, "pkg", "0.1.0", {
        "__init__.py": "", "vec_env.py": "class ParallelEnv:\n    pass\nclass SerialEnv:\n    pass\nclass _Batched:\n    pass\n",
        "old_tools.py": "def a():\n    pass\ndef b():\n    pass\ndef c():\n    pass\n",
    })
    _wheel(tmp_path, "pkg", "0.2.0", {
        "__init__.py": "from .batched import ParallelEnv, SerialEnv\n",
        "batched.py": "class ParallelEnv:\n    pass\nclass SerialEnv:\n    pass\n", "misc.py": "def a():\n    pass\n",
    })
    table = upgrade_table.build(str(tmp_path), {"pkg": ("0.1.0", "0.2.0")})
    modules = {e["name"]: e for e in table["entries"] if e["kind"] == "module"}
    assert set(modules) == {"vec_env", "old_tools"}
    vec_env = modules["vec_env"]
    # Both modules offer both names: the shorter path wins.
    assert (vec_env["module"], vec_env["removed_in"], vec_env["replacement"], vec_env["fix"]) == \
        ("pkg", "0.2", "pkg", "safe")
    assert vec_env["provides"] == ["ParallelEnv", "SerialEnv"]
    # One name of three found elsewhere is no replacement for the module.
    assert (modules["old_tools"]["replacement"], modules["old_tools"]["fix"]) == (None, "none")
