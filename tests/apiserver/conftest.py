"""Fixtures for the API server's HTTP tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

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
