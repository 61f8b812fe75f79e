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

Marked ``@pytest.mark.kubewerk_rbac`` (or with ``--kubewerk-rbac``), the server
authenticates bearer tokens and authorizes with RBAC; ``kube_client`` and
``kube_kubeconfig`` are its admin (``system:masters``), and ``run_manager(mgr,
namespace=..., rbac=...)`` runs the manager (or a ``Platform``) as its ServiceAccount
with its generated RBAC; a request the ServiceAccount is refused fails the test with
kube-apiserver's 403 message (see :mod:`kubewerk.testing.rbac`).
"""

from __future__ import annotations

import secrets
import tempfile
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client.client import Client
from kubewerk.testing.helpers import install_crds as _install_crds

RBAC_MARKER = "kubewerk_rbac"
"""The marker asking for an authenticating, RBAC-authorizing ``kube_server``."""


class _Rbac:
    """What the fixtures share about an authorizing server: its admin token, its
    recording authorizer and a private directory for kubeconfigs."""

    def __init__(self, token: str, recorder: Any) -> None:
        self.token = token
        self.recorder = recorder
        self.directory = Path(tempfile.mkdtemp(prefix="kubewerk-test-"))


_RBAC: weakref.WeakKeyDictionary[EmbeddedServer, _Rbac] = weakref.WeakKeyDictionary()


def _wants_rbac(request: pytest.FixtureRequest) -> bool:
    if request.node.get_closest_marker(RBAC_MARKER) is not None:
        return True
    return bool(request.config.getoption("kubewerk_rbac", default=False))


def _admin_kubeconfig(server: EmbeddedServer, rbac: _Rbac, path: Path) -> Path:
    from kubewerk.testing.rbac import write_kubeconfig

    return write_kubeconfig(path, server.url, rbac.token)


@pytest_asyncio.fixture
async def kube_server(request: pytest.FixtureRequest) -> AsyncIterator[EmbeddedServer]:
    """A fresh in-memory embedded API server (authenticating and authorizing with RBAC
    when the test is marked ``kubewerk_rbac``)."""
    if not _wants_rbac(request):
        async with EmbeddedServer("memory", bookmark_interval=0.5) as srv:
            yield srv
        return
    from kubewerk.testing.rbac import authorizing_server

    token = secrets.token_urlsafe(32)
    server, recorder = authorizing_server(token)
    rbac = _Rbac(token, recorder)
    _RBAC[server] = rbac
    try:
        async with server as srv:
            yield srv
    finally:
        import shutil

        shutil.rmtree(rbac.directory, ignore_errors=True)


@pytest_asyncio.fixture
async def kube_client(kube_server: EmbeddedServer) -> AsyncIterator[Client]:
    """A client bound to ``kube_server`` (its admin when it authorizes)."""
    rbac = _RBAC.get(kube_server)
    if rbac is None:
        client = Client.from_url(kube_server.url)
    else:
        path = _admin_kubeconfig(kube_server, rbac, rbac.directory / "admin.kubeconfig")
        client = Client.from_environment(str(path))
    async with client:
        yield client


@pytest.fixture
def kube_kubeconfig(kube_server: EmbeddedServer, tmp_path: Path) -> Path:
    """A kubeconfig file for ``kube_server`` (its admin when it authorizes)."""
    rbac = _RBAC.get(kube_server)
    if rbac is not None:
        return _admin_kubeconfig(kube_server, rbac, tmp_path / "kubeconfig")
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
    rbac = _RBAC.get(kube_server)
    harness: Any = None

    async def run(mgr: Any, wait_leader: bool = True, **as_service_account: Any) -> Manager:
        nonlocal harness
        if rbac is not None:
            from kubewerk.testing.rbac import ServiceAccountRun

            if harness is None:
                path = _admin_kubeconfig(kube_server, rbac, rbac.directory / "run.kubeconfig")
                admin = Client.from_environment(str(path))
                clients.append(admin)
                harness = ServiceAccountRun(kube_server, rbac.recorder, admin, rbac.directory)
            manager: Manager = await harness.start(mgr, **as_service_account)
            started.append(manager)
            return manager
        if as_service_account:
            raise TypeError(
                f"run_manager: {', '.join(sorted(as_service_account))} only apply to a test "
                "marked kubewerk_rbac"
            )
        plain: Manager = getattr(mgr, "manager", mgr)  # a Platform runs its manager
        if not plain.has_client:
            client = Client.from_url(kube_server.url)
            clients.append(client)
            plain.use_client(client)
        await plain.start()
        started.append(plain)
        if wait_leader and not plain.leader_election:
            assert plain.is_leader
        return plain

    yield run
    for mgr in reversed(started):
        await mgr.stop()
    if harness is not None:
        await harness.close()
    for client in clients:
        await client.close()
    if harness is not None and harness.denials():
        pytest.fail(harness.report(), pytrace=False)
