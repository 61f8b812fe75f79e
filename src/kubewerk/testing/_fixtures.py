"""The kubewerk pytest plugin's server fixtures (``kubewerk.testing.plugin`` loads them
when pytest-asyncio is installed; ``kubewerk.testing._without_asyncio`` stands in otherwise).

Fixtures (function-scoped, each test gets a fresh in-memory API server):

``kube_server``
    an :class:`~kubewerk.apiserver.server.EmbeddedServer` on a free loopback port,
    serving real HTTP (bookmarks every 0.5 s so watch resumption is exercised).
``kube_client``
    a :class:`~kubewerk.client.Client` bound to it (closed after the test).
``kube_kubeconfig``
    the path of a kubeconfig (context ``kubewerk``) for it, for subprocesses.
``install_crds``
    ``await install_crds(Model, ...)``: create the CRDs and wait until Established.
``run_manager``
    ``await run_manager(mgr)``: bind a :class:`~kubewerk.runtime.Manager` to the server
    (unless it has a client), start it in the background, return it once its caches
    synced; every manager is stopped after the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client.client import Client
from kubewerk.testing.helpers import install_crds as _install_crds


@pytest_asyncio.fixture
async def kube_server() -> AsyncIterator[EmbeddedServer]:
    """A fresh in-memory embedded API server."""
    async with EmbeddedServer("memory", bookmark_interval=0.5) as srv:
        yield srv


@pytest_asyncio.fixture
async def kube_client(kube_server: EmbeddedServer) -> AsyncIterator[Client]:
    """A client bound to ``kube_server``."""
    async with Client.from_url(kube_server.url) as client:
        yield client


@pytest.fixture
def kube_kubeconfig(kube_server: EmbeddedServer, tmp_path: Path) -> Path:
    """A kubeconfig file for ``kube_server``."""
    return kube_server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def install_crds(kube_client: Client) -> Callable[..., Awaitable[list[dict[str, Any]]]]:
    """``await install_crds(Model, ...)``."""

    async def install(*models: Any, timeout: float = 10.0) -> list[dict[str, Any]]:
        return await _install_crds(kube_client, *models, timeout=timeout)

    return install


@pytest_asyncio.fixture
async def run_manager(kube_server: EmbeddedServer) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    """``await run_manager(mgr)``: start a manager against ``kube_server`` in the background."""
    from kubewerk.runtime.manager import Manager

    started: list[Manager] = []
    clients: list[Client] = []

    async def run(mgr: Manager, wait_leader: bool = True) -> Manager:
        if not mgr.has_client:
            client = Client.from_url(kube_server.url)
            clients.append(client)
            mgr.use_client(client)
        await mgr.start()
        started.append(mgr)
        if wait_leader and not mgr.leader_election:
            assert mgr.is_leader
        return mgr

    yield run
    for mgr in reversed(started):
        await mgr.stop()
    for client in clients:
        await client.close()
