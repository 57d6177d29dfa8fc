"""The index's answer to "does every return of this project function give a TensorDict built with no
device?" (``Returned.unplaced``, ``ProjectIndex.unplaced_tensordict``), which RLG004 asks of factories
a transform returns from. Unknown stays unknown: any doubt gives None."""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import index_of

FACTORIES = textwrap.dedent("""\
    from tensordict import TensorDict
    from tensordict import TensorDict as TD


    def bare(td):
        return TensorDict({"a": td["a"]}, batch_size=td.batch_size)


    def aliased(td):
        return TD({"a": td["a"]}, td.batch_size, None)


    def written_none(td):
        return TensorDict({"a": td["a"]}, batch_size=[], device=None)


    def via_name(td):
        out = TensorDict.from_dict({"a": td["a"]})
        return out.clone()


    def nested(td):
        return bare(td)


    def placed(td):
        return TensorDict({"a": td["a"]}, batch_size=[], device=td.device)


    def positional_device(td):
        return TensorDict({"a": td["a"]}, [], td.device)


    def moved(td, device):
        return TensorDict({"a": td["a"]}, batch_size=[]).to(device)


    def options(td, **kw):
        return TensorDict({"a": td["a"]}, batch_size=[], **kw)


    def differ(td, flag):
        if flag:
            return placed(td)
        return bare(td)


    def rebound(td, flag):
        out = TensorDict({"a": td["a"]}, batch_size=[])
        if flag:
            out = placed(td)
        return out


    def forever(td):
        return forever(td)


    def many(td):
        yield TensorDict({"a": td["a"]}, batch_size=[])
    """)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return index_of(tmp_path_factory.mktemp("unplaced"), {"m.py": FACTORIES})


@pytest.mark.parametrize(("name", "builder"), [
    ("m.bare", "m.bare"), ("m.aliased", "m.aliased"), ("m.written_none", "m.written_none"),
    ("m.via_name", "m.via_name"), ("m.nested", "m.bare"),
    ("m.placed", None), ("m.positional_device", None), ("m.moved", None), ("m.options", None), ("m.differ", None),
    ("m.rebound", None), ("m.forever", None), ("m.many", None), ("m.missing", None), ("tensordict.TensorDict", None),
])
def test_unplaced_tensordict(index, name, builder):
    found, near = index
    facts = found.unplaced_tensordict(name, near)
    assert (facts.qualname if facts else None) == builder
