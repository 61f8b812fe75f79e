"""The kubewerk pytest plugin, registered as the ``pytest11`` entry point ``kubewerk``.

Installed kubewerk makes its fixtures available in every pytest run, with nothing to
configure: :data:`FIXTURES` (see ``kubewerk.testing._fixtures``). The server fixtures
are async and need pytest-asyncio, which ``pip install 'kubewerk[testing]'`` brings.
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
