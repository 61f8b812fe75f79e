"""Serving the dashboard: :class:`DashboardServer` watches a cluster through a client
and serves :class:`~kubewerk.observe.app.DashboardApp` with uvicorn (httptools).

Guarantees: :meth:`DashboardServer.start` binds before it returns (a port in use or an
address that cannot be bound raises ``OSError`` naming it), returns once the first
lists are in (or after ``sync_timeout`` seconds, the page then fills in as they
arrive), and binds to a loopback address only unless ``allow_non_loopback`` — a page
that shows every object of a cluster to whoever reaches it must not be reachable from
the network by accident. :meth:`DashboardServer.stop` stops the server, the watches
and the metrics scraper; the client is the caller's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

from kubewerk.client.client import Client
from kubewerk.observe.app import LOOPBACK_HOSTS, DashboardApp
from kubewerk.observe.metrics import MetricsSampler, Source
from kubewerk.observe.state import ClusterState
from kubewerk.observe.watcher import ClusterWatcher

__all__ = ["DashboardServer", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback IP address."""
    host = host[1:-1] if host.startswith("[") else host
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class DashboardServer:
    """The dashboard of the cluster ``client`` talks to, on ``host:port`` (0: a free
    port; :attr:`url` says which)."""

    def __init__(
        self,
        client: Client,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        namespace: str | None = None,
        metrics: list[Source] | None = None,
        metrics_interval: float = 2.0,
        name: str = "cluster",
        allow_non_loopback: bool = False,
        sync_timeout: float = 30.0,
    ) -> None:
        if not allow_non_loopback and not is_loopback(host):
            raise ValueError(
                f"{host} is not a loopback address: the dashboard shows the whole cluster "
                "to whoever reaches it; bind it to 127.0.0.1 and reach it through an SSH "
                "tunnel or kubectl port-forward"
            )
        self.client = client
        self.host = host
        self.port = port
        self.state = ClusterState(name=name)
        self.watcher = ClusterWatcher(client, self.state, namespace=namespace)
        self.metrics = MetricsSampler(list(metrics or []), interval=metrics_interval)
        allowed = set(LOOPBACK_HOSTS) | {host.strip("[]").lower()}
        self.app = DashboardApp(
            self.state,
            metrics=self.metrics,
            allowed_hosts=allowed if is_loopback(host) else None,
        )
        self.sync_timeout = sync_timeout
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None
        self.address: tuple[str, int] | None = None

    @property
    def url(self) -> str:
        """The page's URL (after :meth:`start`)."""
        if self.address is None:
            raise RuntimeError("the dashboard is not started")
        host, port = self.address
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"

    async def start(self) -> None:
        """Bind, watch, serve (see the module doc)."""
        import uvicorn

        family = socket.AF_INET6 if ":" in self.host.strip("[]") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # inherited by accepted connections: a response's head and body are two writes,
        # and Nagle would hold the body for the client's delayed ACK (~40 ms) on keep-alive
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((self.host.strip("[]"), self.port))
        except OSError as exc:
            sock.close()
            raise OSError(
                exc.errno, f"cannot listen on {self.host}:{self.port}: {exc.strerror}"
            ) from None
        sock.listen(128)
        self.address = sock.getsockname()[:2]

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        config = uvicorn.Config(
            self.app,
            lifespan="off",
            http="httptools",
            log_level="warning",
            access_log=False,
            interface="asgi3",
            timeout_graceful_shutdown=1,
        )
        await self.watcher.start()
        if self.metrics.sources:
            self.metrics.start()
        self._server = Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="dashboard")
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise RuntimeError("the dashboard server stopped while starting")
            await asyncio.sleep(0.01)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.watcher.synced.wait(), self.sync_timeout)

    async def stop(self) -> None:
        """Stop serving, watching and scraping."""
        self.app.close()
        if self._server is not None:
            self._server.should_exit = True
            if self._task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._task, 5)
        await self.metrics.stop()
        await self.watcher.stop()
