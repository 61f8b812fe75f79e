"""The lifecycle event bus: typed events, the :class:`Bus` protocol and the in-process bus.

Every phase transition, dependency change and refused transition is published as a
:class:`LifecycleEvent`. Handlers subscribe with filters (event type, kind, target phase)
and run concurrently; the guarantees of :class:`InProcessBus`, per subscription:

- **Bounded memory, backpressure.** A subscription accepts at most ``capacity`` events
  that are not finished (waiting, being handled, or waiting for a retry). When it is full,
  :meth:`InProcessBus.publish` *waits* until the subscription frees a slot: nothing is
  dropped and nothing grows without bound; a slow handler slows its publishers down.
  Waiting publishers get slots in the order they asked for them.
- **Order per key.** Events of one object key reach a handler in the order they were
  published (one event of a key at a time, retries included: a later event of the key
  waits until the earlier one is delivered or has finally failed).
- **Concurrency across keys.** Up to ``concurrency`` handler calls of different keys run at
  once. Workers are tasks started on demand and gone when the subscription is idle.
- **Retries, never lost silently.** A handler that raises is called again after an
  exponential backoff (:class:`RetryPolicy`), without holding a worker while it waits.
  After the last attempt, or at once for :class:`~kubewerk.runtime.TerminalError`, the
  event counts as ``failed`` and is logged (logger ``kubewerk.lifecycle.bus``, ERROR) with
  its JSON and the exception. Events still unfinished when :meth:`InProcessBus.stop` runs
  out of time are counted and logged the same way.

A handler that publishes onto the bus it is called from should use another subscription's
capacity with care: if every worker of a subscription waits to publish into that same
full subscription, none of them frees a slot. Give such a subscription room
(``capacity`` above the burst it creates) or publish from a task of its own.

Metrics (registered in the ``CollectorRegistry`` passed in, e.g. the manager's
``mgr.metrics.registry``): ``kubewerk_bus_events_total{type,status}`` with status
``published`` (once per published event), ``delivered`` (once per subscription that
handled it), ``retried`` (once per repeated attempt) and ``failed`` (once per subscription
that gave up on it); ``kubewerk_bus_processing_seconds{type}`` (every handler call,
failed ones included); ``kubewerk_bus_queue_length{topic}`` (a subscription's unfinished
events, read at scrape time; topic is the subscription's name).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Protocol

import orjson
from prometheus_client import CollectorRegistry, Gauge

from kubewerk.runtime.controller import TerminalError
from kubewerk.runtime.metrics import LoopCounter, LoopHistogram

logger = logging.getLogger("kubewerk.lifecycle.bus")

STATUS_PUBLISHED = "published"
STATUS_DELIVERED = "delivered"
STATUS_RETRIED = "retried"
STATUS_FAILED = "failed"

# Handler run times: 100 us to 60 s (a handler may call an API server or a cloud).
PROCESSING_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)


def new_trace_id() -> str:
    """A random W3C trace-context trace id: 32 lowercase hex digits, never all zero."""
    while True:
        trace_id = secrets.token_hex(16)
        if trace_id != "0" * 32:
            return trace_id


class EventDecodeError(ValueError):
    """A wire message is not a lifecycle event (bad JSON, missing or mistyped fields)."""


@dataclass(frozen=True, slots=True)
class LifecycleEvent:
    """One thing that happened to one object: a phase change, a dependency change, a
    refused transition ...

    ``event_type`` is a free string ("PhaseChanged", "IllegalTransition",
    "DependenciesChanged", ...); ``kind`` names the kind as ``Kind.group`` (e.g.
    "Database.example.com"); ``key`` is the object's "namespace/name" (or "name" for a
    cluster-scoped object). ``from_phase``/``to_phase`` are None where they do not apply.
    ``trace_id`` (32 hex digits, generated when not given) follows the event through
    handlers and processes; ``time`` is when it happened, in seconds since the epoch.
    """

    event_type: str
    kind: str
    key: str
    from_phase: str | None = None
    to_phase: str | None = None
    reason: str = ""
    message: str = ""
    trace_id: str = field(default_factory=new_trace_id)
    time: float = field(default_factory=time.time)

    def to_json(self) -> bytes:
        """The wire form: a JSON object with camelCase names (``type``, ``kind``, ``key``,
        ``from``, ``to``, ``reason``, ``message``, ``traceId``, ``time``)."""
        return orjson.dumps(
            {
                "type": self.event_type,
                "kind": self.kind,
                "key": self.key,
                "from": self.from_phase,
                "to": self.to_phase,
                "reason": self.reason,
                "message": self.message,
                "traceId": self.trace_id,
                "time": self.time,
            }
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> LifecycleEvent:
        """Read the wire form back; unknown fields are ignored (a newer writer may add
        some). Raises :class:`EventDecodeError` for anything that is not an event."""
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise EventDecodeError(f"lifecycle event: invalid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise EventDecodeError(
                f"lifecycle event: expected a JSON object, got {type(obj).__name__}"
            )
        strings: dict[str, str] = {}
        for name in ("type", "kind", "key", "traceId"):
            value = obj.get(name)
            if not isinstance(value, str) or not value:
                raise EventDecodeError(f"lifecycle event: {name!r} must be a non-empty string")
            strings[name] = value
        phases: dict[str, str | None] = {}
        for name in ("from", "to"):
            value = obj.get(name)
            if value is not None and not isinstance(value, str):
                raise EventDecodeError(f"lifecycle event: {name!r} must be a string or null")
            phases[name] = value
        texts: dict[str, str] = {}
        for name in ("reason", "message"):
            value = obj.get(name, "")
            if not isinstance(value, str):
                raise EventDecodeError(f"lifecycle event: {name!r} must be a string")
            texts[name] = value
        when = obj.get("time")
        if isinstance(when, bool) or not isinstance(when, int | float) or not math.isfinite(when):
            raise EventDecodeError("lifecycle event: 'time' must be a finite number")
        return cls(
            event_type=strings["type"],
            kind=strings["kind"],
            key=strings["key"],
            from_phase=phases["from"],
            to_phase=phases["to"],
            reason=texts["reason"],
            message=texts["message"],
            trace_id=strings["traceId"],
            time=float(when),
        )


Handler = Callable[[LifecycleEvent], Awaitable[None]]
"""A subscriber: ``async def handler(event) -> None``; raising means "try again later"."""


class BusClosed(RuntimeError):
    """The bus was stopped: it takes no more events."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how fast a failing handler is called again.

    Attempt ``n`` (1-based) that fails is followed by attempt ``n + 1`` after
    ``min(initial * factor ** (n - 1), max_delay)`` seconds, up to ``attempts`` attempts in
    all (``attempts=1``: no retry).
    """

    attempts: int = 5
    initial: float = 0.1
    factor: float = 2.0
    max_delay: float = 10.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be at least 1")
        if self.initial < 0 or self.max_delay < 0 or self.factor < 1:
            raise ValueError("RetryPolicy: delays must be >= 0 and factor >= 1")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based)."""
        return min(self.initial * self.factor ** (attempt - 1), self.max_delay)


class Subscription:
    """A handler and the events it wants: all of ``event_type``, ``kind`` and ``to_phase``
    that are not None must equal the event's.

    ``name`` identifies the subscription: the ``topic`` of its queue-length metric, and on
    :class:`~kubewerk.lifecycle.redis_bus.RedisStreamsBus` its consumer group (processes
    that subscribe under the same name share its events). It defaults to the handler's
    module and qualified name plus the filters, which is stable across processes.
    """

    __slots__ = ("event_type", "handler", "kind", "name", "to_phase")

    def __init__(
        self,
        handler: Handler,
        *,
        event_type: str | None = None,
        kind: str | None = None,
        to_phase: str | None = None,
        name: str | None = None,
    ) -> None:
        self.handler = handler
        self.event_type = event_type
        self.kind = kind
        self.to_phase = to_phase
        self.name = name if name is not None else default_name(handler, event_type, kind, to_phase)
        if not self.name:
            raise ValueError("a subscription's name must not be empty")

    def matches(self, event: LifecycleEvent) -> bool:
        """Whether ``event`` passes this subscription's filters."""
        return (
            (self.event_type is None or self.event_type == event.event_type)
            and (self.kind is None or self.kind == event.kind)
            and (self.to_phase is None or self.to_phase == event.to_phase)
        )

    def __repr__(self) -> str:
        return f"Subscription({self.name!r})"


def default_name(
    handler: Handler, event_type: str | None, kind: str | None, to_phase: str | None
) -> str:
    """``module.qualname`` of the handler, with the filters that are set in brackets."""
    module = getattr(handler, "__module__", None) or ""
    qualname = getattr(handler, "__qualname__", None) or type(handler).__qualname__
    base = f"{module}.{qualname}" if module else qualname
    filters = [
        f"{label}={value}"
        for label, value in (("type", event_type), ("kind", kind), ("to", to_phase))
        if value is not None
    ]
    return f"{base}[{','.join(filters)}]" if filters else base


class Bus(Protocol):
    """What the lifecycle kernel needs of an event bus (in-process or shared)."""

    async def publish(self, event: LifecycleEvent) -> None:
        """Hand ``event`` to every matching subscription (may wait: backpressure)."""
        ...

    def subscribe(
        self,
        handler: Handler,
        *,
        event_type: str | None = None,
        kind: str | None = None,
        to_phase: str | None = None,
        name: str | None = None,
    ) -> Subscription:
        """Call ``handler`` for every later event that passes the filters."""
        ...

    async def unsubscribe(self, subscription: Subscription) -> None:
        """Stop routing events to ``subscription``; its accepted events are still handled."""
        ...

    async def start(self) -> None:
        """Start delivering."""
        ...

    async def stop(self, timeout: float = 10.0) -> None:
        """Take no more events, finish the accepted ones within ``timeout`` seconds."""
        ...


class _TypeMetrics:
    """The metric children of one event type, looked up once."""

    __slots__ = ("delivered", "failed", "published", "retried", "seconds")

    def __init__(self, metrics: BusMetrics, event_type: str) -> None:
        self.published = metrics.events.labels(event_type, STATUS_PUBLISHED)
        self.delivered = metrics.events.labels(event_type, STATUS_DELIVERED)
        self.retried = metrics.events.labels(event_type, STATUS_RETRIED)
        self.failed = metrics.events.labels(event_type, STATUS_FAILED)
        self.seconds = metrics.processing.labels(event_type)


class BusMetrics:
    """The bus's metric families on one registry (one bus per registry)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.events = LoopCounter(
            "kubewerk_bus_events",  # the client appends _total
            "Lifecycle bus events by type and status (published, delivered, retried, failed)",
            ["type", "status"],
            registry=self.registry,
        )
        self.processing = LoopHistogram(
            "kubewerk_bus_processing_seconds",
            "Time spent in lifecycle bus handlers per event type (every attempt)",
            ["type"],
            buckets=PROCESSING_BUCKETS,
            registry=self.registry,
        )
        self.queue_length = Gauge(
            "kubewerk_bus_queue_length",
            "Lifecycle bus events accepted for a subscription and not finished yet",
            ["topic"],
            registry=self.registry,
        )
        self._types: dict[str, _TypeMetrics] = {}

    def of(self, event_type: str) -> _TypeMetrics:
        """The children for ``event_type`` (created on first use)."""
        children = self._types.get(event_type)
        if children is None:
            children = self._types[event_type] = _TypeMetrics(self, event_type)
        return children


Settle = Callable[[LifecycleEvent, Any, BaseException | None], None]
"""Called once per event a lane finished: the event, its token, and None when the handler
succeeded or the last exception when it finally failed."""


class DeliveryLane:
    """One subscription's bounded, key-ordered, concurrent delivery with retries.

    The building block of both buses (the guarantees are the module's). Slots: ``size``
    counts events accepted and not finished plus slots reserved for events about to be
    accepted; it never exceeds ``capacity``. Each event carries an opaque ``token`` (the
    Redis bus passes the stream entry id) handed back to ``settle`` when it is finished.
    Lanes belong to one event loop and are not thread-safe.
    """

    def __init__(
        self,
        subscription: Subscription,
        metrics: BusMetrics,
        *,
        capacity: int,
        concurrency: int,
        retry: RetryPolicy,
        settle: Settle | None = None,
    ) -> None:
        if capacity < 1 or concurrency < 1:
            raise ValueError("capacity and concurrency must be at least 1")
        self.subscription = subscription
        self.capacity = capacity
        self.concurrency = concurrency
        self._handler = subscription.handler
        self._metrics = metrics
        self._retry = retry
        self._settle = settle
        self.size = 0
        self._pending: dict[str, deque[tuple[LifecycleEvent, Any]]] = {}
        self._ready: deque[str] = deque()
        self._inflight: dict[str, tuple[LifecycleEvent, Any]] = {}
        self._redo: dict[str, tuple[LifecycleEvent, Any, int]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._slot_waiters: deque[asyncio.Future[None]] = deque()
        self._idle_waiters: list[asyncio.Future[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._workers = 0
        self._running = False
        self._dead = False

    @property
    def closed(self) -> bool:
        """Whether the lane was aborted (it accepts nothing more)."""
        return self._dead

    # -- slots -------------------------------------------------------------------------

    def try_reserve(self, wanted: int = 1) -> int:
        """Reserve up to ``wanted`` free slots at once (none while others wait for one);
        returns how many were reserved."""
        if self._slot_waiters or self._dead:
            return 0
        got = min(wanted, self.capacity - self.size)
        if got <= 0:
            return 0
        self.size += got
        return got

    async def reserve(self) -> None:
        """Wait for one slot (first come, first served) and reserve it."""
        if self._dead:
            raise BusClosed(f"subscription {self.subscription.name!r} is closed")
        if not self._slot_waiters and self.size < self.capacity:
            self.size += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._slot_waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.unreserve(1)  # the slot was handed over already: pass it on
            else:
                with contextlib.suppress(ValueError):
                    self._slot_waiters.remove(waiter)
            raise

    def unreserve(self, count: int) -> None:
        """Give back ``count`` reserved slots that were not used."""
        while count > 0 and self._slot_waiters:
            self._free_slot()
            count -= 1
        if count > 0:
            self.size -= count
            if self.size == 0 and self._idle_waiters:
                self._wake_idle()

    def _free_slot(self) -> None:
        while self._slot_waiters:
            waiter = self._slot_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot goes to the waiter: size stays
                return
        self.size -= 1
        if self.size == 0 and self._idle_waiters:
            self._wake_idle()

    def _wake_idle(self) -> None:
        for waiter in self._idle_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._idle_waiters.clear()

    # -- accepting ---------------------------------------------------------------------

    def enqueue(self, event: LifecycleEvent, token: Any = None) -> None:
        """Accept ``event`` into a slot reserved before."""
        key = event.key
        queue = self._pending.get(key)
        if queue is None:
            self._pending[key] = deque(((event, token),))
            if key not in self._inflight:
                self._ready.append(key)
                if self._running and self._workers < self.concurrency:
                    self._spawn()
        else:
            queue.append((event, token))

    def offer(self, event: LifecycleEvent, token: Any = None) -> bool:
        """Accept ``event`` if a slot is free right now; False if the caller must wait."""
        if self._slot_waiters or self.size >= self.capacity or self._dead:
            return False
        self.size += 1
        self.enqueue(event, token)
        return True

    async def put(self, event: LifecycleEvent, token: Any = None) -> None:
        """Accept ``event``, waiting for a slot while the lane is full (backpressure)."""
        if not self.offer(event, token):
            await self.reserve()
            self.enqueue(event, token)

    # -- running -----------------------------------------------------------------------

    def start(self) -> None:
        """Start workers for what is waiting; later events start them as needed."""
        if self._dead:
            raise BusClosed(f"subscription {self.subscription.name!r} is closed")
        self._running = True
        while self._ready and self._workers < self.concurrency:
            self._spawn()

    def _spawn(self) -> None:
        self._workers += 1
        task = asyncio.get_running_loop().create_task(
            self._work(), name=f"kubewerk-bus:{self.subscription.name}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _work(self) -> None:
        ready = self._ready
        try:
            while ready and self._running:
                key = ready.popleft()
                redo = self._redo.pop(key, None) if self._redo else None
                if redo is None:
                    queue = self._pending[key]
                    event, token = queue.popleft()
                    if not queue:
                        del self._pending[key]
                    attempt = 1
                else:
                    event, token, attempt = redo
                self._inflight[key] = (event, token)
                await self._attempt(key, event, token, attempt)
        finally:
            self._workers -= 1

    async def _attempt(self, key: str, event: LifecycleEvent, token: Any, attempt: int) -> None:
        children = self._metrics.of(event.event_type)
        started = perf_counter()
        try:
            await self._handler(event)
        except Exception as exc:
            children.seconds.observe(perf_counter() - started)
            if attempt < self._retry.attempts and not isinstance(exc, TerminalError):
                children.retried.inc()
                delay = self._retry.delay(attempt)
                logger.debug(
                    "bus: %s failed on %s (attempt %d, retrying in %.3gs): %r",
                    self.subscription.name,
                    event.key,
                    attempt,
                    delay,
                    exc,
                )
                self._timers[key] = asyncio.get_running_loop().call_later(
                    delay, self._retry_due, key, event, token, attempt + 1
                )
                return
            children.failed.inc()
            logger.error(
                "bus: subscription %s gave up on event %s after %d attempt(s): %r",
                self.subscription.name,
                event.to_json().decode(),
                attempt,
                exc,
                exc_info=exc,
            )
            self._finish(key, event, token, exc)
            return
        children.seconds.observe(perf_counter() - started)
        children.delivered.inc()
        self._finish(key, event, token, None)

    def _retry_due(self, key: str, event: LifecycleEvent, token: Any, attempt: int) -> None:
        del self._timers[key]
        self._redo[key] = (event, token, attempt)
        self._ready.appendleft(key)  # the key stays in flight: put() does not ready it again
        if self._running and self._workers < self.concurrency:
            self._spawn()

    def _finish(
        self, key: str, event: LifecycleEvent, token: Any, error: BaseException | None
    ) -> None:
        del self._inflight[key]
        if key in self._pending:
            self._ready.append(key)
            if self._workers < self.concurrency and self._running:
                self._spawn()
        if self._settle is not None:
            self._settle(event, token, error)
        self._free_slot()

    # -- stopping ----------------------------------------------------------------------

    async def join(self) -> None:
        """Return when every accepted event is finished (``size`` is 0)."""
        if self.size == 0:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._idle_waiters.append(waiter)
        await waiter

    async def abort(self) -> list[tuple[LifecycleEvent, Any]]:
        """Stop at once: cancel running handlers and retry timers, refuse waiting
        publishers (:class:`BusClosed`); returns the events that were not finished, in
        the order of their keys' queues."""
        self._dead = True
        self._running = False
        for handle in self._timers.values():
            handle.cancel()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        left: list[tuple[LifecycleEvent, Any]] = list(self._inflight.values())
        left.extend((event, token) for event, token, _ in self._redo.values())
        for queue in self._pending.values():
            left.extend(queue)
        self._inflight.clear()
        self._redo.clear()
        self._timers.clear()
        self._pending.clear()
        self._ready.clear()
        self.size = 0
        while self._slot_waiters:
            waiter = self._slot_waiters.popleft()
            if not waiter.done():
                waiter.set_exception(BusClosed(f"subscription {self.subscription.name!r} closed"))
        for waiter in self._idle_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._idle_waiters.clear()
        return left


class InProcessBus:
    """The event bus inside one process (the guarantees are the module's).

    ``capacity`` and ``concurrency`` are per subscription (``subscribe`` may override
    them). Events published before :meth:`start` wait in their subscriptions (within
    capacity); :meth:`stop` is final.
    """

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        capacity: int = 1024,
        concurrency: int = 16,
        retry: RetryPolicy | None = None,
        metrics: BusMetrics | None = None,
    ) -> None:
        self.metrics = metrics if metrics is not None else BusMetrics(registry)
        self.capacity = capacity
        self.concurrency = concurrency
        self.retry = retry if retry is not None else RetryPolicy()
        self._lanes: dict[str, DeliveryLane] = {}
        self._routes: dict[tuple[str, str, str | None], tuple[DeliveryLane, ...]] = {}
        self._started = False
        self._closed = False

    @property
    def subscriptions(self) -> list[Subscription]:
        """The current subscriptions, in the order they were made."""
        return [lane.subscription for lane in self._lanes.values()]

    def lane(self, subscription: Subscription) -> DeliveryLane:
        """The delivery lane of ``subscription`` (its size, capacity; for tests, metrics)."""
        return self._lanes[subscription.name]

    def subscribe(
        self,
        handler: Handler,
        *,
        event_type: str | None = None,
        kind: str | None = None,
        to_phase: str | None = None,
        name: str | None = None,
        capacity: int | None = None,
        concurrency: int | None = None,
        retry: RetryPolicy | None = None,
    ) -> Subscription:
        """Call ``handler`` for every event published from now on that passes the
        filters. Names are unique per bus (``ValueError`` otherwise)."""
        if self._closed:
            raise BusClosed("the bus is stopped")
        subscription = Subscription(
            handler, event_type=event_type, kind=kind, to_phase=to_phase, name=name
        )
        if subscription.name in self._lanes:
            raise ValueError(
                f"a subscription named {subscription.name!r} exists already on this bus: "
                "pass name= to tell them apart"
            )
        lane = DeliveryLane(
            subscription,
            self.metrics,
            capacity=capacity if capacity is not None else self.capacity,
            concurrency=concurrency if concurrency is not None else self.concurrency,
            retry=retry if retry is not None else self.retry,
        )
        self._lanes[subscription.name] = lane
        self._routes.clear()
        self.metrics.queue_length.labels(subscription.name).set_function(lambda: lane.size)
        if self._started:
            lane.start()
        return subscription

    async def unsubscribe(self, subscription: Subscription, timeout: float = 10.0) -> None:
        """Route no more events to ``subscription``, finish its accepted events within
        ``timeout`` seconds (then give up on the rest: counted and logged as failed)."""
        lane = self._lanes.pop(subscription.name, None)
        if lane is None or lane.subscription is not subscription:
            if lane is not None:
                self._lanes[subscription.name] = lane
            raise ValueError(f"{subscription!r} is not subscribed to this bus")
        self._routes.clear()
        await self._close_lanes([lane], timeout)
        self.metrics.queue_length.remove(subscription.name)

    def _route(self, event: LifecycleEvent) -> tuple[DeliveryLane, ...]:
        route = (event.event_type, event.kind, event.to_phase)
        lanes = self._routes.get(route)
        if lanes is None:
            lanes = tuple(lane for lane in self._lanes.values() if lane.subscription.matches(event))
            self._routes[route] = lanes
        return lanes

    async def publish(self, event: LifecycleEvent) -> None:
        """Hand ``event`` to every matching subscription, in subscription order. Returns
        once every one of them accepted it: waits while one is full (backpressure).
        Raises :class:`BusClosed` after :meth:`stop` began."""
        if self._closed:
            raise BusClosed("the bus is stopped")
        self.metrics.of(event.event_type).published.inc()
        for lane in self._route(event):
            if lane.offer(event) or lane.closed:  # closed: unsubscribed meanwhile
                continue
            try:
                await lane.put(event)
            except BusClosed:
                if self._closed:
                    raise

    async def start(self) -> None:
        """Start delivering (idempotent)."""
        if self._closed:
            raise BusClosed("the bus is stopped")
        self._started = True
        for lane in self._lanes.values():
            lane.start()

    async def stop(self, timeout: float = 10.0) -> None:
        """Take no more events (``publish`` raises :class:`BusClosed`), let handlers
        finish what was accepted — publishers already waiting for a slot included — for
        at most ``timeout`` seconds, then cancel what is left, counting each unfinished
        event as ``failed`` and logging it. Final: a stopped bus does not start again."""
        self._closed = True
        if not self._started:  # nothing ran: deliver what waits, within the same bound
            self._started = True
            for lane in self._lanes.values():
                lane.start()
        await self._close_lanes(list(self._lanes.values()), timeout)

    async def _close_lanes(self, lanes: Iterable[DeliveryLane], timeout: float) -> None:
        lanes = list(lanes)
        if not lanes:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(lane.join() for lane in lanes)), timeout)
        for lane in lanes:
            for event, _token in await lane.abort():
                self.metrics.of(event.event_type).failed.inc()
                logger.error(
                    "bus: subscription %s stopped before it delivered event %s",
                    lane.subscription.name,
                    event.to_json().decode(),
                )
