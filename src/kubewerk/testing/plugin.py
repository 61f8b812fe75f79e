"""The kubewerk pytest plugin, registered as the ``pytest11`` entry point ``kubewerk``.

Installed kubewerk makes its fixtures available in every pytest run, with nothing to
configure: :data:`FIXTURES` (see ``kubewerk.testing._fixtures``). The server fixtures
are async and need pytest-asyncio (kubewerk's ``testing`` extra brings it).
Without it they are still registered, as stand-ins that fail the test asking for one
with a one-line message saying what to install; ``wait_for`` works either way, and a
test that uses none of them is never affected by kubewerk being installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kubewerk.testing.helpers import wait_for as _wait_for

FIXTURES = (
    "kube_server",
    "kube_client",
    "kube_kubeconfig",
    "install_crds",
    "run_manager",
    "wait_for",
)
"""Every fixture the plugin registers."""

if importlib.util.find_spec("pytest_asyncio") is not None:
    from kubewerk.testing._fixtures import (
        install_crds,
        kube_client,
        kube_kubeconfig,
        kube_server,
        run_manager,
    )
else:
    from kubewerk.testing._without_asyncio import (
        install_crds,
        kube_client,
        kube_kubeconfig,
        kube_server,
        run_manager,
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--kubewerk-rbac``: every ``kube_server`` authenticates and authorizes with RBAC,
    as the ``kubewerk_rbac`` marker asks for one test."""
    group = parser.getgroup("kubewerk")
    group.addoption(
        "--kubewerk-rbac",
        action="store_true",
        dest="kubewerk_rbac",
        default=False,
        help="kubewerk: run kube_server with token authentication and RBAC, and managers "
        "under run_manager as their ServiceAccounts with their generated RBAC",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kubewerk_rbac: kube_server authenticates and authorizes with RBAC; run_manager runs "
        "managers as their ServiceAccounts with the RBAC kubewerk gen rbac derives",
    )


@pytest.fixture
def wait_for() -> Callable[..., Awaitable[Any]]:
    """:func:`kubewerk.testing.wait_for`: ``await wait_for(condition, timeout=10)``."""
    return _wait_for


__all__ = [
    "FIXTURES",
    "install_crds",
    "kube_client",
    "kube_kubeconfig",
    "kube_server",
    "run_manager",
    "wait_for",
]
