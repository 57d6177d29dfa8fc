"""The changes beyond names (rlguard_dev/upgrade_changes.py) on small made-up releases, and on the shipped
table for the entries issue 24 names."""

from __future__ import annotations

import os
import zipfile

from rlguard_dev import upgrade_table
from rlguard.rules.data import FORWARDED_KEYWORDS, REMOVED_API


def _wheel(folder, package: str, version: str, files: dict[str, str]) -> None:
    with zipfile.ZipFile(os.path.join(folder, f"{package}-{version}-py3-none-any.whl"), "w") as archive:
        for path, text in files.items():
            archive.writestr(f"{package}/{path}", text)


V1 = {
    "__init__.py": "from .losses import Loss, ClipLoss, Plain, Closed\nfrom .wrap import Wrapper, Module, Dist, Prob, Enum\n",
    "losses.py": (
        "class Base:\n    pass\n"
        "class Loss(Base):\n    def __init__(self, actor, entropy_coef=0.1, gone=1):\n        pass\n"
        "class ClipLoss(Loss):\n    def __init__(self, actor, clip=0.2, **kwargs):\n"
        "        super().__init__(actor, **kwargs)\n"
        "class Plain:\n    def __init__(self, a, b=1, **kwargs):\n        self.other(**kwargs)\n"
        "class Closed:\n    def __init__(self, a, gone=1):\n        pass\n"
    ),
    "wrap.py": (
        "class TensorDictModuleWrapper:\n    pass\n"
        "class Wrapper(TensorDictModuleWrapper):\n    def __init__(self, policy, *, sigma=1.0, spec=None):\n"
        "        self.policy = policy\n"
        "class Module:\n    def __init__(self, spec, sigma=1.0, device=None):\n        pass\n"
        "class Dist:\n    @property\n    def mode(self):\n        return 0\n"
        "class Prob:\n    def __init__(self, distribution_class, distribution_kwargs=None):\n"
        "        self.distribution_class, self.distribution_kwargs = distribution_class, distribution_kwargs\n"
        "    def get_dist(self):\n        return self.distribution_class(**as_dict(self.distribution_kwargs))\n"
        "class Enum:\n    MODE = 'mode'\n"
        "class Box:\n    @property\n    def low(self):\n        return 1\n"
        "    @property\n    def minimum(self):\n"
        "        warnings.warn(f'{type(self)}.minimum is deprecated in favour of {type(self)}.low')\n"
        "        return 1\n"
        "class Spec:\n    space: None | Box\n    def __init__(self):\n        self.box = Box()\n"
    ),
}
V2 = {
    **V1,
    "losses.py": V1["losses.py"].replace(
        "def __init__(self, actor, entropy_coef=0.1, gone=1):\n        pass\n",
        "def __init__(self, actor, entropy_coeff=0.1, **kwargs):\n"
        "        if 'entropy_coef' in kwargs:\n"
        "            warnings.warn('entropy_coef is deprecated and will be removed in v0.3')\n"
        "            entropy_coeff = kwargs.pop('entropy_coef')\n"),
    "wrap.py": V1["wrap.py"].replace("        self.policy = policy\n", "        raise RuntimeError('Please use pkg.Module instead.')\n")
    .replace("        return 0\n", "        raise RuntimeError('No mode. Use ExplorationType.DETERMINISTIC instead.')\n"),
}
V2["wrap.py"] = V2["wrap.py"].replace(
    "    @property\n    def minimum(self):\n"
    "        warnings.warn(f'{type(self)}.minimum is deprecated in favour of {type(self)}.low')\n"
    "        return 1\n", "")
V3 = {
    **V2,
    "losses.py": V2["losses.py"].replace(
        "        if 'entropy_coef' in kwargs:\n"
        "            warnings.warn('entropy_coef is deprecated and will be removed in v0.3')\n"
        "            entropy_coeff = kwargs.pop('entropy_coef')\n",
        "        if 'entropy_coef' in kwargs:\n            raise TypeError('entropy_coef was removed')\n")
    .replace("def __init__(self, a, gone=1):", "def __init__(self, a):"),
}


def _build(tmp_path) -> dict:
    for version, files in (("0.1.0", V1), ("0.2.0", V2), ("0.3.0", V3)):
        _wheel(tmp_path, "pkg", version, files)
    return upgrade_table.build(str(tmp_path), {"pkg": ("0.1.0", "0.2.0", "0.3.0")})


def test_keywords_from_kwargs_blocks_and_signatures(tmp_path):
    table = _build(tmp_path)
    found = {(e["kind"], e["name"]): e for e in table["entries"]}
    renamed = found[("keyword", "Loss.entropy_coef")]
    assert (renamed["deprecated_in"], renamed["removed_in"], renamed["replacement"], renamed["fix"], renamed["found"],
            renamed["announced_removal"]) == ("0.2", "0.3", "entropy_coeff", "safe", "kwargs-block", "0.3")
    # A subclass that forwards **kwargs to its parent takes the parent's keywords and their fate.
    assert found[("keyword", "ClipLoss.entropy_coef")]["replacement"] == "entropy_coeff"
    # Gone from a constructor without **kwargs: removed, with no replacement and no fix.
    gone = found[("keyword", "Closed.gone")]
    assert (gone["removed_in"], gone["replacement"], gone["fix"], gone["found"]) == ("0.3", None, "none", "signature")
    # Near misses: keywords still accepted; one that a **kwargs swallows without a word (no TypeError);
    # a class whose **kwargs goes somewhere unknown.
    assert ("keyword", "Loss.actor") not in found and ("keyword", "ClipLoss.clip") not in found
    assert ("keyword", "Loss.gone") not in found
    assert not any(n.startswith("Plain.") for _, n in found)


def test_constructor_that_only_raises_and_attribute_that_only_raises(tmp_path):
    table = _build(tmp_path)
    found = {(e["kind"], e["module"], e["name"]): e for e in table["entries"]}
    wrapper = found[("name", "pkg", "Wrapper")]
    assert (wrapper["removed_in"], wrapper["replacement"], wrapper["found"], wrapper["fix"], wrapper["rewrite"]) == \
        ("0.2", "pkg.Module", "raises", "unsafe", "policy-then-module")
    assert wrapper["new_parameters"] == ["spec", "sigma", "device"]
    assert not any(e["name"] == "Module" for e in table["entries"])  # the replacement is fine
    # A removed property whose warning names a property of the newest class: a safe rename, and the
    # attributes the library holds that class in (a class-level annotation, a constructor assignment).
    box = found[("method", "pkg.wrap", "Box.minimum")]
    assert (box["removed_in"], box["replacement"], box["fix"]) == ("0.2", "low", "safe")
    assert table["holders"] == {"Box": ["box", "space"]}
    assert table["forwards"] == [{"class": "Prob", "class_argument": "distribution_class",
                                  "kwargs_argument": "distribution_kwargs"}]


def test_shipped_table_has_the_changes_issue_24_names():
    changes = {(c.kind, c.name): c for c in REMOVED_API}
    for loss in ("ClipPPOLoss", "A2CLoss", "PPOLoss", "KLPENPPOLoss"):
        for old, new in (("entropy_coef", "entropy_coeff"), ("critic_coef", "critic_coeff")):
            change = changes[("keyword", f"{loss}.{old}")]
            assert (change.removed_in, change.replacement, change.fix, change.found) == \
                ((0, 11), new, "safe", "kwargs-block")
    for old, new in (("min", "low"), ("max", "high")):
        change = changes[("keyword", f"TanhNormal.{old}")]
        assert (change.removed_in, change.replacement, change.fix) == ((0, 7), new, "safe")
    assert changes[("keyword", "UnsqueezeTransform.unsqueeze_dim")].replacement == "dim"
    for wrapper, module in (("EGreedyWrapper", "EGreedyModule"), ("AdditiveGaussianWrapper", "AdditiveGaussianModule"),
                            ("OrnsteinUhlenbeckProcessWrapper", "OrnsteinUhlenbeckProcessModule")):
        change = changes[("name", wrapper)]
        assert (change.found, change.rewrite, change.new_name) == ("raises", "policy-then-module", module)
    mode = changes[("member", "InteractionType.MODE")]
    assert (mode.removed_in, mode.with_classes, mode.replacement) == \
        ((0, 6), ("TanhNormal",), "InteractionType.DETERMINISTIC")
    assert ("distribution_class", "distribution_kwargs") in FORWARDED_KEYWORDS
    assert all(c.found for c in REMOVED_API if c.how != "review")
