"""Run the embedded API server: in-process (``async with EmbeddedServer()``), in a thread
(``EmbeddedServer().start_in_thread()``), or from the CLI (``kubewerk up``).

The server binds before it reports ready, so ``url`` is usable as soon as ``start``
returns; ``write_kubeconfig`` gives a kubeconfig with a ``kubewerk`` context that kubectl,
the official clients and kopf use unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import Store, open_store

try:  # uvloop is optional (not on Windows)
    import uvloop  # noqa: F401

    _LOOP = "uvloop"
except ImportError:  # pragma: no cover
    _LOOP = "asyncio"


def kubeconfig_text(url: str, context: str = "kubewerk", namespace: str = "default") -> str:
    """A kubeconfig (YAML) pointing at ``url`` with one context named ``context``."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": url}}],
        "users": [{"name": context, "user": {}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


class EmbeddedServer:
    """The embedded control plane on a real HTTP socket.

    ``store`` is a ``Store`` or a spec for ``open_store`` (``"memory"``,
    ``"sqlite:PATH"``). ``port=0`` picks a free port.
    """

    def __init__(
        self,
        store: Store | str = "memory",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_requests: bool = False,
        bookmark_interval: float = 60.0,
        **store_policy: Any,
    ) -> None:
        self.store = open_store(store, **store_policy) if isinstance(store, str) else store
        self._owns_store = isinstance(store, str)
        self.app = ApiServer(self.store, log_requests=log_requests, bookmark_interval=bookmark_interval)
        self.host = host
        self.port = port
        self._server: Any = None
        self._serve_task: asyncio.Task[None] | None = None
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def write_kubeconfig(self, path: str | Path, context: str = "kubewerk") -> Path:
        target = Path(path).expanduser()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(kubeconfig_text(self.url, context))
        target.chmod(0o600)
        return target

    # -- asyncio -------------------------------------------------------------------

    async def start(self) -> None:
        import uvicorn

        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only
        # when the socket says so; without it every response waits ~40 ms (Nagle + delayed ACK)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        sock.listen(2048)
        sock.setblocking(False)
        self._sock = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            lifespan="on",
            http="httptools",
            loop="none",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=2,
            timeout_keep_alive=30,
            backlog=2048,
            proxy_headers=False,  # no proxy in front; skip X-Forwarded-* handling per request
        )
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # the caller owns signals
        self._serve_task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._serve_task.done():
                self._serve_task.result()
                raise RuntimeError("the API server stopped during start-up")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            # open watches end when the server shuts down
            self.app.hub.close()
            if self._serve_task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._serve_task
            self._server = None
        await self.app.stop()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._owns_store:
            self.store.close()

    async def __aenter__(self) -> EmbeddedServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    # -- thread ----------------------------------------------------------------------

    def start_in_thread(self) -> EmbeddedServer:
        """Serve from a background thread with its own event loop; returns once listening."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = _new_loop()
            self._thread_loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="kubewerk-apiserver", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def stop_thread(self) -> None:
        if self._thread is None or self._thread_loop is None:
            return
        self._thread_loop.call_soon_threadsafe(self._thread_loop.stop)
        self._thread.join(timeout=10)
        self._thread = None
        self._thread_loop = None

    def __enter__(self) -> EmbeddedServer:
        return self.start_in_thread()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop_thread()


def _new_loop() -> asyncio.AbstractEventLoop:
    if _LOOP == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The fastest event loop available (uvloop when installed)."""
    return _new_loop()
