"""Fixtures for the API server's HTTP tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    """An HTTP helper for ``aserver`` with the demo Database CRD installed and Established."""
    client = Api(aserver.url)
    await client.install_demo_crd()
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedServer]:
    """An in-memory API server in a background thread, shared by the tests of one module
    (a module that needs other settings defines its own ``server``)."""
    srv = EmbeddedServer().start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()
