"""``WebhookServer``: a :class:`~kubewerk.webhook.WebhookApp` on uvicorn (httptools,
uvloop when the loop is uvloop), over TLS or plain HTTP, alone or inside a manager.

::

    server = WebhookServer(app, port=9443, cert_file="tls.crt", key_file="tls.key")
    server.add_to(manager)          # runs while the manager runs, counted on its registry
    # or
    async with server: ...          # started and stopped around a block

Guarantees:

- :meth:`start` binds (``port=0``: a free port, then in ``port``) and returns once
  connections are accepted; a port that cannot be bound is an ``OSError`` naming it, a
  certificate that cannot be loaded an ``OSError``/``ssl.SSLError`` naming the files —
  before anything is served;
- with ``cert_file``/``key_file`` the server speaks only TLS, and follows the files:
  a changed pair is used for new handshakes within ``reload_interval`` seconds (see
  :mod:`kubewerk.webhook.tls`); with ``client_ca_file`` clients must present a
  certificate signed by that CA;
- :meth:`stop` stops accepting, lets requests in progress finish (up to 5 s), and is
  idempotent; a cancelled :meth:`run` stops the server the same way;
- in a manager (:meth:`add_to`) the server runs on every replica (webhooks do not need
  the leader Lease, as in controller-runtime) once the manager's caches have synced,
  and its metrics go to the manager's registry, served on the manager's ``/metrics``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
from collections.abc import Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, Protocol

import uvicorn

from kubewerk.webhook.app import WebhookApp
from kubewerk.webhook.tls import ReloadingTLS, TLSFiles

__all__ = ["ManagerLike", "WebhookServer"]

log = logging.getLogger("kubewerk.webhook.server")


class _HasRegistry(Protocol):
    @property
    def registry(self) -> Any: ...


class ManagerLike(Protocol):
    """What :meth:`WebhookServer.add_to` needs of a :class:`kubewerk.runtime.Manager`."""

    @property
    def metrics(self) -> _HasRegistry: ...

    def add_runnable(
        self, fn: Callable[[], Coroutine[Any, Any, None]], *, needs_leader: bool = ...
    ) -> None: ...


class WebhookServer:
    """Serve ``app`` on ``host:port`` (see the module doc).

    ``host`` defaults to every address (``0.0.0.0``): kube-apiserver reaches a webhook
    through its Service. Without a certificate the server speaks plain HTTP (for tests
    and for a TLS-terminating proxy); kube-apiserver itself only calls ``https`` URLs.
    """

    def __init__(
        self,
        app: WebhookApp,
        *,
        host: str = "0.0.0.0",
        port: int = 9443,
        cert_file: str | os.PathLike[str] | None = None,
        key_file: str | os.PathLike[str] | None = None,
        client_ca_file: str | os.PathLike[str] | None = None,
        reload_interval: float = 1.0,
    ) -> None:
        if (cert_file is None) != (key_file is None):
            raise ValueError("give both cert_file and key_file, or neither")
        if client_ca_file is not None and cert_file is None:
            raise ValueError("client_ca_file needs TLS: give cert_file and key_file too")
        if not reload_interval > 0:
            raise ValueError(
                f"reload_interval must be a positive number of seconds, not {reload_interval!r}"
            )
        self.app = app
        self.host = host
        self.port = port
        self.reload_interval = reload_interval
        self.files = (
            TLSFiles.of(cert_file, key_file, client_ca_file)
            if cert_file is not None and key_file is not None
            else None
        )
        self.tls: ReloadingTLS | None = None
        self._server: Any = None
        self._serve_task: asyncio.Task[None] | None = None
        self._watch_task: asyncio.Task[None] | None = None
        self._sock: socket.socket | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.files is not None else "http"

    @property
    def url(self) -> str:
        """The base URL a client on this machine uses (a wildcard host becomes loopback)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        host = f"[{host}]" if ":" in host else host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def started(self) -> bool:
        return self._server is not None and bool(self._server.started)

    def _bind(self) -> socket.socket:
        host = self.host[1:-1] if self.host.startswith("[") else self.host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only when it is given
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, self.port))
            sock.listen(2048)
        except OSError as exc:
            sock.close()
            raise OSError(
                exc.errno,
                f"cannot serve webhooks on {self.host}:{self.port}: {exc.strerror or exc}",
            ) from None
        sock.setblocking(False)
        return sock

    async def start(self) -> None:
        """Load the certificate, bind, serve; returns once connections are accepted."""
        if self._server is not None:
            raise RuntimeError("the webhook server is already running")
        context: ssl.SSLContext | None = None
        if self.files is not None:
            self.tls = ReloadingTLS(self.files)
            context = self.tls.context
        sock = self._bind()
        self._sock = sock
        self.port = sock.getsockname()[1]

        def ssl_factory(config: Any, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
            assert context is not None
            return context

        config = uvicorn.Config(
            self.app,
            http="httptools",
            loop="none",
            lifespan="off",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            timeout_graceful_shutdown=5,
            backlog=2048,
            ssl_context_factory=ssl_factory if context is not None else None,
        )
        server = _QuietServer(config)
        self._server = server
        self._serve_task = asyncio.create_task(server.serve(sockets=[sock]), name="webhook server")
        while not server.started:
            if self._serve_task.done():
                self._server = None
                self._serve_task.result()
                raise RuntimeError("the webhook server stopped during start-up")
            await asyncio.sleep(0.005)
        if self.tls is not None:
            self._watch_task = asyncio.create_task(
                self.tls.watch(self.reload_interval), name="webhook certificate watcher"
            )
        log.info("serving webhooks %s on %s", ", ".join(self.app.paths), self.url)

    async def stop(self) -> None:
        """Stop accepting, finish requests in progress, close (idempotent)."""
        if self._watch_task is not None:
            self._watch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch_task
            self._watch_task = None
        if self._server is not None:
            self._server.should_exit = True
            if self._serve_task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._serve_task
            self._server = None
            self._serve_task = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    async def run(self) -> None:
        """Start, serve until cancelled, stop."""
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.shield(self.stop())

    def add_to(self, manager: ManagerLike) -> None:
        """Run inside ``manager`` (a :class:`kubewerk.runtime.Manager`): started with it on
        every replica, stopped with it, metrics on its registry (see the module doc)."""
        self.app.use_registry(manager.metrics.registry)
        manager.add_runnable(self.run, needs_leader=False)

    async def __aenter__(self) -> WebhookServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


class _QuietServer(uvicorn.Server):
    """uvicorn's server without its signal handlers: the caller owns signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
