"""The manager: runs caches and controllers, leader election, probes, metrics, shutdown.

Lifecycle guarantees:

- :meth:`Manager.start` opens the client, starts the shared informers and the probe
  server, waits until every cache has synced (``/readyz`` turns 200), then starts the
  controllers -- at once, or, with leader election, only after this process holds the
  Lease (caches stay warm on standbys so a failover starts from a full cache);
- losing the Lease stops the manager (``run`` raises :class:`LeaderElectionLost`), so two
  processes never reconcile at the same time: at the moment the renew deadline passes,
  before anyone else can take the Lease, every controller stops handing out work and
  the reconciles under way are cancelled (as controller-runtime cancels their context),
  and so are the runnables that need the leader; whether the manager was started with
  :meth:`Manager.run` or :meth:`Manager.start`;
- :meth:`Manager.stop` (and SIGTERM/SIGINT under :meth:`Manager.run_until_signal`) stops
  taking new work, waits up to ``graceful_shutdown_timeout`` for in-flight reconciles,
  flushes event series, releases the Lease, stops informers and closes the client;
- ``/healthz`` answers 200 while the manager runs, ``/readyz`` 200 once caches synced,
  ``/metrics`` serves the Prometheus exposition of this manager's registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from kubewerk.client.client import Client, RetryPolicy
from kubewerk.client.errors import ConfigError, NotFound
from kubewerk.client.resources import resource_type_of
from kubewerk.client.watch import WATCH_IDLE_TIMEOUT, WATCH_TIMEOUT
from kubewerk.core.openfiles import raise_open_file_limit
from kubewerk.runtime.controller import Controller, Mapper, Reconciler, Watch
from kubewerk.runtime.events import EventRecorder
from kubewerk.runtime.informer import Cache, Scope
from kubewerk.runtime.leaderelection import (
    LEASE_DURATION,
    RENEW_DEADLINE,
    RETRY_PERIOD,
    LeaderElector,
)
from kubewerk.runtime.metrics import Metrics
from kubewerk.runtime.predicates import Predicate
from kubewerk.runtime.queue import RateLimiter

log = logging.getLogger("kubewerk.runtime.manager")

T = TypeVar("T")
Runnable = Callable[[], Coroutine[Any, Any, None]]
AsgiApp = Callable[
    [dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]
"""An ASGI application (what :meth:`Manager.mount` serves on the probe port)."""
_PROBE_PATHS = ("/healthz", "/readyz", "/metrics")


class LeaderElectionLost(Exception):
    """This manager lost its Lease and stopped."""


class KindNotServed(Exception):
    """A controller's kind is not served by the API server (its CRD is missing)."""


class CacheSyncTimeout(Exception):
    """The caches did not complete their first list in time."""


class Builder:
    """``mgr.controller(Kind).owns(Child).watches(Other, fn).complete(reconcile)``."""

    def __init__(self, manager: Manager, kind: Any) -> None:
        self._manager = manager
        self._kind = kind
        self._name: str | None = None
        self._watches: list[Watch] = []
        self._predicates: list[Predicate] = []
        self._options: dict[str, Any] = {}

    def named(self, name: str) -> Builder:
        """The controller's name (metrics label, logs, events); default: the kind, lowercased."""
        self._name = name
        return self

    def owns(self, kind: Any, *predicates: Predicate) -> Builder:
        """Reconcile the owner when a child it controls changes."""
        self._watches.append(Watch(kind, None, predicates))
        return self

    def watches(self, kind: Any, mapper: Mapper, *predicates: Predicate) -> Builder:
        """Reconcile whatever ``mapper(obj)`` names (keys, (namespace, name) pairs or objects)."""
        self._watches.append(Watch(kind, mapper, predicates))
        return self

    def with_predicates(self, *predicates: Predicate) -> Builder:
        """Filter events on the For kind."""
        self._predicates.extend(predicates)
        return self

    def with_options(
        self,
        *,
        max_concurrent_reconciles: int | None = None,
        reconcile_timeout: float | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> Builder:
        """Concurrency, per-reconcile timeout, rate limiter."""
        if max_concurrent_reconciles is not None:
            self._options["max_concurrent_reconciles"] = max_concurrent_reconciles
        if reconcile_timeout is not None:
            self._options["reconcile_timeout"] = reconcile_timeout
        if rate_limiter is not None:
            self._options["rate_limiter"] = rate_limiter
        return self

    def complete(self, reconcile: Reconciler[Any]) -> Controller[Any]:
        """Create the controller and add it to the manager."""
        ctrl: Controller[Any] = Controller(
            self._name or resource_type_of(self._kind).kind.lower(),
            self._kind,
            reconcile,
            watches=self._watches,
            predicates=self._predicates,
            **self._options,
        )
        self._manager.add(ctrl)
        return ctrl


def _probe_server(app: Any, host: str, port: int) -> Any:
    import uvicorn

    class ProbeServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        access_log=False,
        interface="asgi3",
    )
    return ProbeServer(config)


class Manager:
    """Runs controllers over shared caches; see the module guarantees."""

    def __init__(
        self,
        client: Client | None = None,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        namespaces: Iterable[str] | None = None,
        by_kind: Mapping[Any, Scope] | None = None,
        resync_period: float | None = None,
        watch_timeout: int = WATCH_TIMEOUT,
        watch_idle_timeout: float | None = WATCH_IDLE_TIMEOUT,
        leader_election: bool = False,
        leader_election_id: str | None = None,
        leader_election_namespace: str | None = None,
        lease_duration: float = LEASE_DURATION,
        renew_deadline: float = RENEW_DEADLINE,
        retry_period: float = RETRY_PERIOD,
        identity: str | None = None,
        probe_host: str = "0.0.0.0",
        probe_port: int | None = 8081,
        graceful_shutdown_timeout: float = 30.0,
        cache_sync_timeout: float = 120.0,
        metrics: Metrics | None = None,
        name: str = "kubewerk",
    ) -> None:
        self._client = client
        self._own_client = client is None
        self.kubeconfig = kubeconfig
        self.kube_context = context
        self.namespaces = tuple(namespaces) if namespaces else None
        self.by_kind = dict(by_kind or {})
        self.resync_period = resync_period
        self.watch_timeout = watch_timeout
        self.watch_idle_timeout = watch_idle_timeout
        self.leader_election = leader_election
        self.leader_election_id = leader_election_id or f"{name}-leader"
        self.leader_election_namespace = leader_election_namespace
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.identity = identity
        self.probe_host = probe_host
        self.probe_port = probe_port
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self.cache_sync_timeout = cache_sync_timeout
        self.metrics = metrics or Metrics()
        self.name = name
        self.controllers: list[Controller[Any]] = []
        self._runnables: list[tuple[Runnable, bool]] = []
        self._mounts: list[tuple[str, AsgiApp]] = []
        self._indexes: list[tuple[Any, str, Callable[[dict[str, Any]], Iterable[str]]]] = []
        self._runnable_tasks: list[asyncio.Task[None]] = []
        self._leader_tasks: list[asyncio.Task[None]] = []
        self._recorders: list[EventRecorder] = []
        self.cache: Cache | None = None
        self.elector: LeaderElector | None = None
        self._le_task: asyncio.Task[bool] | None = None
        self._probe: Any = None
        self._probe_task: asyncio.Task[None] | None = None
        self.probe_address: tuple[str, int] | None = None
        self._stopped = asyncio.Event() if _has_loop() else None
        self._started = False
        self._running = False
        self._controllers_started = False
        self._lost = False
        self._ready = False
        self._stopping = False
        self._stop_task: asyncio.Future[None] | None = None

    # -- building -----------------------------------------------------------------------

    def add(self, controller: Controller[Any]) -> None:
        """Add a controller (before :meth:`start`)."""
        if any(c.name == controller.name for c in self.controllers):
            raise ValueError(
                f"a controller named {controller.name!r} already exists; name it with .named()"
            )
        if self._started:
            raise RuntimeError("add controllers before starting the manager")
        self.controllers.append(controller)

    def controller(self, kind: Any) -> Builder:
        """Start building a controller for ``kind``."""
        return Builder(self, kind)

    def reconciler(
        self,
        kind: Any,
        *,
        owns: Sequence[Any] = (),
        watches: Sequence[tuple[Any, Mapper]] = (),
        predicates: Sequence[Predicate] = (),
        name: str | None = None,
        max_concurrent_reconciles: int = 1,
        reconcile_timeout: float | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> Callable[[Reconciler[T]], Reconciler[T]]:
        """Register a reconcile function in one line::

        @mgr.reconciler(Database, owns=[SECRET, CONFIGMAP])
        async def reconcile(db: Database, ctx: Context) -> Result: ...
        """

        def register(fn: Reconciler[T]) -> Reconciler[T]:
            ctrl: Controller[T] = Controller(
                name or resource_type_of(kind).kind.lower(),
                kind,
                fn,
                owns=owns,
                watches=[Watch(k, m) for k, m in watches],
                predicates=predicates,
                max_concurrent_reconciles=max_concurrent_reconciles,
                reconcile_timeout=reconcile_timeout,
                rate_limiter=rate_limiter,
            )
            self.add(ctrl)
            return fn

        return register

    def index(self, kind: Any, name: str, fn: Callable[[dict[str, Any]], Iterable[str]]) -> None:
        """Add an indexer ``name`` to the shared informer of ``kind`` (answered by
        :meth:`kubewerk.runtime.informer.Cache.by_index`)."""
        self._indexes.append((kind, name, fn))
        if self.cache is not None:
            self.cache.informer(kind).add_indexer(name, fn)

    def mount(self, prefix: str, app: AsgiApp) -> None:
        """Serve ``app`` on the probe server for ``prefix`` and every path below it
        (``/dashboard``, ``/dashboard/...``); the probe paths stay the manager's. The app
        gets the request's scope unchanged (its path includes ``prefix``)."""
        if not prefix.startswith("/") or prefix.endswith("/") or prefix in _PROBE_PATHS:
            raise ValueError(
                f"mount prefix {prefix!r} must start with '/', not end with one, and not be "
                "a probe path"
            )
        if any(prefix == p for p, _ in self._mounts):
            raise ValueError(f"something is already mounted at {prefix}")
        self._mounts.append((prefix, app))

    def add_runnable(self, fn: Runnable, *, needs_leader: bool = True) -> None:
        """Run ``fn()`` while the manager runs (only while leading when ``needs_leader``)."""
        self._runnables.append((fn, needs_leader))

    def use_client(self, client: Client) -> None:
        """Talk to the API server through ``client`` instead of building one at
        :meth:`start` (before the manager starts). The caller keeps it: the manager does
        not close it when it stops."""
        if self._started:
            raise RuntimeError("set the manager's client before starting it")
        self._client = client
        self._own_client = False

    # -- state --------------------------------------------------------------------------

    @property
    def client(self) -> Client:
        """The API client (available once started, or when passed in)."""
        if self._client is None:
            raise RuntimeError("the manager has no client before it starts")
        return self._client

    @property
    def has_client(self) -> bool:
        """True when a client was passed in (or the manager started): :meth:`start` will
        not build one from the kubeconfig."""
        return self._client is not None

    @property
    def is_leader(self) -> bool:
        """True when controllers run here (always, without leader election)."""
        return self._controllers_started and not self._lost

    @property
    def ready(self) -> bool:
        """True once every cache completed its first list."""
        return self._ready

    @property
    def running(self) -> bool:
        """True between start and stop."""
        return self._running

    # -- probes -------------------------------------------------------------------------

    async def _asgi(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        content_type = b"text/plain; charset=utf-8"
        if path == "/healthz":
            ok = self._running
            body = b"ok" if ok else b"manager not running"
        elif path == "/readyz":
            ok = self._running and self._ready
            body = b"ok" if ok else b"caches not synced"
        elif path == "/metrics":
            from prometheus_client import CONTENT_TYPE_LATEST

            ok = True
            body = self.metrics.exposition()
            content_type = CONTENT_TYPE_LATEST.encode()
        else:
            for prefix, app in self._mounts:
                if path == prefix or path.startswith(prefix + "/"):
                    await app(scope, receive, send)
                    return
            await send(
                {
                    "type": "http.response.start",
                    "status": 404,
                    "headers": [(b"content-type", content_type)],
                }
            )
            await send({"type": "http.response.body", "body": b"not found"})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200 if ok else 503,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _bind_probes(self) -> socket.socket | None:
        """The listening socket for the probe server (None when probes are off). An
        address that cannot be bound (in use, not local, a privileged port) raises
        :class:`~kubewerk.client.errors.ConfigError` saying which and why."""
        if self.probe_port is None:
            return None
        host = self.probe_host[1:-1] if self.probe_host.startswith("[") else self.probe_host
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            if os.name == "posix":  # as every server: restart while old connections linger
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # inherited by accepted connections: without it a keep-alive response's body
            # waits for the client's delayed ACK (~40 ms)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((host, self.probe_port))
            sock.listen()
        except OSError as exc:
            sock.close()
            why = exc.strerror or str(exc)
            raise ConfigError(
                f"cannot serve probes on {self.probe_host}:{self.probe_port}: {why}"
            ) from None
        return sock

    async def _start_probes(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        self._probe = _probe_server(self._asgi, self.probe_host, sock.getsockname()[1])
        self._probe_task = asyncio.create_task(self._probe.serve(sockets=[sock]), name="probes")
        for _ in range(500):
            if self._probe.started or self._probe_task.done():
                break
            await asyncio.sleep(0.01)
        if self._probe_task.done():
            exc = self._probe_task.exception()
            raise RuntimeError(f"cannot serve probes on {self.probe_host}:{self.probe_port}: {exc}")
        host, port = sock.getsockname()[:2]
        self.probe_address = (host, port)
        log.info("probes and metrics on http://%s:%d (/healthz /readyz /metrics)", host, port)

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start everything (returns once controllers run, or are waiting for the Lease).

        Fails before anything runs when the probe address cannot be bound
        (:class:`~kubewerk.client.errors.ConfigError`), the server cannot be reached or
        refuses the client, or a watched kind is not served (:class:`KindNotServed`).
        """
        if self._started:
            raise RuntimeError("the manager was already started")
        self._started = True
        self._stopped = asyncio.Event()
        # a watch per kind holds a descriptor per kind: lift the soft limit as Go programs do
        raise_open_file_limit()
        if self._client is None:
            self._client = Client.from_environment(self.kubeconfig, self.kube_context)
        client = self._client
        probe_socket: socket.socket | None = None
        try:
            probe_socket = self._bind_probes()
            await self._preflight(client)
        except BaseException:
            self._started = False
            if probe_socket is not None:
                probe_socket.close()
            if self._own_client:
                await client.close()
            raise
        self.cache = Cache(
            client,
            namespaces=self.namespaces,
            by_kind=self.by_kind,
            resync_period=self.resync_period,
            watch_timeout=self.watch_timeout,
            watch_idle_timeout=self.watch_idle_timeout,
        )
        for kind, index_name, index_fn in self._indexes:
            self.cache.informer(kind).add_indexer(index_name, index_fn)
        for ctrl in self.controllers:
            recorder = EventRecorder(client, ctrl.name)
            self._recorders.append(recorder)
            ctrl.bind(client, self.cache, self.metrics, recorder)
        self._running = True
        await self._start_probes(probe_socket)
        self.cache.start()
        for rec in self._recorders:
            rec.start()
        if not await self.cache.wait_synced(self.cache_sync_timeout):
            await self.stop()
            raise CacheSyncTimeout(f"caches did not sync within {self.cache_sync_timeout:.0f}s")
        self._ready = True
        for fn, needs_leader in self._runnables:
            if not needs_leader:
                self._runnable_tasks.append(asyncio.create_task(fn()))
        if not self.leader_election:
            self._start_controllers()
            return
        self.elector = LeaderElector(
            client,
            self.leader_election_id,
            self.leader_election_namespace or client.namespace,
            self.identity,
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            status_gauge=self.metrics.leader_status,
        )
        self._le_task = asyncio.create_task(self.elector.run(self._lead), name="leader election")
        self._le_task.add_done_callback(self._on_election_done)

    async def _preflight(self, client: Client) -> None:
        """Fail fast, with one clear error, when the server is unreachable or rejects us."""
        with contextlib.suppress(NotFound):  # an API server without /version still serves the API
            await client.request("GET", "/version", retry=RetryPolicy(max_retries=3, base=0.2))
        for ctrl in self.controllers:
            for kind in [ctrl.kind, *(w.kind for w in ctrl.watches)]:
                rt = resource_type_of(kind)
                try:
                    await client.resolve(rt.api_version, rt.kind)
                except NotFound as exc:
                    raise KindNotServed(
                        f"{exc.message} (controller {ctrl.name}: is the CRD installed?)"
                    ) from None

    def _start_controllers(self) -> None:
        for ctrl in self.controllers:
            ctrl.start()
        for fn, needs_leader in self._runnables:
            if needs_leader:
                task = asyncio.create_task(fn())
                self._runnable_tasks.append(task)
                self._leader_tasks.append(task)
        self._controllers_started = True
        log.info("manager %s: %d controller(s) started", self.name, len(self.controllers))

    async def _lead(self) -> None:
        self._start_controllers()
        try:
            await asyncio.Event().wait()  # lead until cancelled or the lease is lost
        finally:
            if not self._stopping:  # the lease is lost (a clean stop drains first)
                self._halt_leader_work()

    def _halt_leader_work(self) -> None:
        """No longer leading: stop every controller and leader runnable at once."""
        self._lost = True
        for ctrl in self.controllers:
            ctrl.halt()
        for t in self._leader_tasks:
            t.cancel()

    def _on_election_done(self, task: asyncio.Task[bool]) -> None:
        if task.cancelled():
            return
        if (task.exception() is not None or task.result() is False) and not self._stopping:
            log.error("manager %s: leader election lost; stopping", self.name)
            self._lost = True
            if self._stopped is not None:
                self._stopped.set()

    async def stop(self) -> None:
        """Graceful shutdown (idempotent; concurrent callers all wait for it to finish)."""
        if self._stop_task is None:
            self._stopping = True
            self._stop_task = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._stop_task)

    async def _shutdown(self) -> None:
        await asyncio.gather(
            *(c.stop(self.graceful_shutdown_timeout) for c in self.controllers if c.running)
        )
        for t in self._runnable_tasks:
            t.cancel()
        for t in self._runnable_tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        for rec in self._recorders:
            with contextlib.suppress(Exception):
                await rec.stop()
        if self._le_task is not None:
            self._le_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._le_task
        if self.cache is not None:
            await self.cache.stop()
        self._running = False
        self._ready = False
        self._controllers_started = False
        if self._probe is not None:
            self._probe.should_exit = True
            if self._probe_task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.wait_for(self._probe_task, 5)
        if self._own_client and self._client is not None:
            await self._client.close()
        if self._stopped is not None:
            self._stopped.set()

    async def wait(self) -> None:
        """Block until the manager stops (by :meth:`stop` or a lost Lease)."""
        assert self._stopped is not None
        await self._stopped.wait()

    async def run(self) -> None:
        """Start, run until stopped, shut down; raises :class:`LeaderElectionLost` if
        the Lease was lost."""
        await self.start()
        try:
            await self.wait()
        finally:
            await self.stop()
        if self._lost:
            raise LeaderElectionLost(f"manager {self.name} lost lease {self.leader_election_id}")

    async def run_until_signal(self) -> None:
        """:meth:`run` with SIGTERM and SIGINT triggering a graceful stop."""
        loop = asyncio.get_running_loop()
        stop_requested = asyncio.Event()

        def request_stop() -> None:
            log.info("manager %s: signal received, shutting down", self.name)
            stop_requested.set()

        installed: list[signal.Signals] = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, request_stop)
                installed.append(sig)
        try:
            starting = asyncio.create_task(self.start())
            waiter = asyncio.create_task(stop_requested.wait())
            await asyncio.wait({starting, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if not starting.done():  # a signal while waiting for caches or the server
                starting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await starting
            else:
                starting.result()  # start-up errors propagate
                stopped = asyncio.create_task(self.wait())
                await asyncio.wait({waiter, stopped}, return_when=asyncio.FIRST_COMPLETED)
                stopped.cancel()
            waiter.cancel()
        finally:
            await self.stop()
            for sig in installed:
                loop.remove_signal_handler(sig)
        if self._lost:
            raise LeaderElectionLost(f"manager {self.name} lost lease {self.leader_election_id}")


def _has_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
