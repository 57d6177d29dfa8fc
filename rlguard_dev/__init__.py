"""Maintainers' tools that build rlguard's generated data and docs, kept apart from what users run.

Each is a ``python -m rlguard_dev.<tool> --write`` (or ``--check``) command; README's maintainer section
lists them. They may import torch, tensordict and torchrl, download wheels and read the rule classes;
the package reads only the files they write. This package is not installed by rlguard's wheel
(pyproject.toml's package list names ``rlguard`` and its subpackages only).

- ``apimodel``: ``rlguard/engine/apimodel.json`` and ``apimodel_classes.json``, from the installed libraries;
- ``upgrade_table``: ``rlguard/rules/removed_api.json``, from the released torchrl and tensordict wheels;
- ``catalog``: ``rlguard/rules/catalog.json``, the rules' metadata and texts, from the rule classes;
- ``docs`` (with ``upgrade_docs``): ``docs/rules/`` and ``docs/upgrading.md``.
"""
