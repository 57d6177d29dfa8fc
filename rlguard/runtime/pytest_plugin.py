"""pytest plugin (entry point ``pytest11``): run tests with ``rlguard.runtime`` installed.

- ``pytest --rlguard`` installs every correction for the whole session, uninstalls at the end;
- the fixture ``rlguard_runtime`` installs for one test and yields ``rlguard.runtime``;
- the marker ``@pytest.mark.rlguard`` (keyword arguments as for ``install()``) does the same.

This module loads in every pytest session, so it imports neither torch nor torchrl: the runtime
is imported only when one of the three is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

_MARKER_HELP = (
    "rlguard(**components): run the test with rlguard.runtime installed; keyword arguments "
    "as for rlguard.runtime.install(), e.g. rlguard(training=False)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("rlguard").addoption(
        "--rlguard",
        action="store_true",
        default=False,
        help="install rlguard.runtime's TorchRL corrections and training assertions for the whole session",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    if not config.getoption("rlguard"):
        return
    from rlguard.runtime.errors import RLGuardError
    from rlguard.runtime.install import install, uninstall

    try:
        install()
    except RLGuardError as error:
        raise pytest.UsageError(f"--rlguard: {error}") from None
    config.add_cleanup(uninstall)


def pytest_report_header(config: pytest.Config) -> str | None:
    if not config.getoption("rlguard"):
        return None
    import torchrl

    return f"rlguard: runtime installed for the session (torchrl {torchrl.__version__})"


@pytest.fixture
def rlguard_runtime() -> Iterator[ModuleType]:
    """rlguard.runtime installed for this test, uninstalled after it."""
    import rlguard.runtime
    from rlguard.runtime.install import installed

    with installed():
        yield rlguard.runtime


@pytest.fixture(autouse=True)
def _rlguard_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    marker = request.node.get_closest_marker("rlguard")
    if marker is None:
        yield
        return
    from rlguard.runtime.install import installed

    with installed(**marker.kwargs):
        yield
