"""pytest plugin (entry point ``pytest11``): run tests with ``rlguard.runtime`` installed.

- ``pytest --rlguard`` installs every correction for the whole session, uninstalls at the end;
  ``--rlguard=SPEC`` (or the ini option ``rlguard = SPEC``) chooses groups, single checks, warn
  mode and the policy-lag threshold (``rlguard.runtime.settings.SPEC_HELP``);
- the fixture ``rlguard_runtime`` installs for one test and yields ``rlguard.runtime``;
- the marker ``@pytest.mark.rlguard`` (an optional SPEC, keyword arguments as for ``install()``)
  does the same, over the session's settings: ``rlguard(training=False)`` switches the training
  checks off for that test even under ``--rlguard``.

Each test runs in its own installed block, so a warning rlguard shows once is shown once per
test, whatever the order. In an environment without torch, torchrl or tensordict, each of these
ends with one line saying how to install them (``INSTALL_RUNTIME``: from a checkout until rlguard is released).

This module loads in every pytest session, so it imports neither torch nor torchrl: the runtime
is imported only when one of the three is used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from rlguard.runtime.errors import MissingRuntimeError, RLGuardError
from rlguard.runtime.settings import SPEC_HELP, merged, parse_spec

_MARKER_HELP = (
    "rlguard(spec='', **settings): run the test with rlguard.runtime installed; keyword "
    "arguments as for rlguard.runtime.install(), e.g. rlguard(training=False)"
)
_OPTION = "--rlguard"
_SESSION = pytest.StashKey[dict[str, Any]]()  # install() keywords of --rlguard and the ini option


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("rlguard").addoption(
        _OPTION,
        nargs="?",
        const="",
        default=None,
        metavar="SPEC",
        help=f"install rlguard.runtime's TorchRL corrections and training assertions for the whole session. SPEC: {SPEC_HELP}",
    )
    parser.addini("rlguard", f"settings for --rlguard, the fixture and the marker. SPEC: {SPEC_HELP}", default="")


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    # A bare --rlguard takes no value: keep argparse from reading the next path as its SPEC.
    args[:] = [f"{_OPTION}=" if arg == _OPTION else arg for arg in args]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    option = config.getoption("rlguard")
    try:
        config.stash[_SESSION] = merged(parse_spec(str(config.getini("rlguard"))), parse_spec(option or ""))
    except RLGuardError as error:
        raise pytest.UsageError(f"{_OPTION}: {error}") from None
    if option is None:
        return
    from rlguard.runtime.install import install, uninstall

    try:
        install(**config.stash[_SESSION])
    except (RLGuardError, MissingRuntimeError) as error:
        raise pytest.UsageError(f"{_OPTION}: {error}") from None
    config.add_cleanup(uninstall)


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption("rlguard") is None:
        return None
    import torchrl

    return f"rlguard: runtime installed for the session (torchrl {torchrl.__version__})"


@pytest.fixture
def rlguard_runtime(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """rlguard.runtime installed for this test, uninstalled after it."""
    import rlguard.runtime

    with contextlib.ExitStack() as stack:
        _install_for_test(stack, request.config.stash[_SESSION])
        yield rlguard.runtime


@pytest.fixture(autouse=True)
def _rlguard_per_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """The marker's settings for a marked test; under --rlguard, a fresh warn-once scope per test."""
    marker = request.node.get_closest_marker("rlguard")
    if marker is None and request.config.getoption("rlguard") is None:
        yield
        return
    layers = [request.config.stash[_SESSION]]
    try:
        layers += [parse_spec(spec) for spec in marker.args] + [marker.kwargs] if marker is not None else []
    except RLGuardError as error:
        problem = f"@pytest.mark.rlguard: {error}"
    else:
        with contextlib.ExitStack() as stack:
            _install_for_test(stack, merged(*layers))
            yield
        return
    pytest.fail(problem, pytrace=False)  # outside the except: no chained exception in the report


def _install_for_test(stack: contextlib.ExitStack, settings: dict[str, Any]) -> None:
    """Enter an installed() block on ``stack``; a bad setting or environment fails the test in one line."""
    from rlguard.runtime.install import installed

    try:
        stack.enter_context(installed(**settings))
        return
    except (RLGuardError, MissingRuntimeError) as error:
        problem = str(error)
    except TypeError as error:  # a keyword install() does not take
        problem = f"@pytest.mark.rlguard: {error}"
    pytest.fail(problem, pytrace=False)  # outside the except: no chained exception in the report
