"""The lifecycle event bus shared by several processes, on Redis Streams.

Needs the ``redis`` extra (``pip install 'kubewerk[redis]'``: redis-py's asyncio client)
and Redis 7.0 or later (``XAUTOCLAIM`` with deleted-entry reporting, consumer-group lag).

Layout: **one stream** per bus (``stream``, default ``kubewerk:lifecycle``), every event
one entry ``{"event": <JSON>}`` added with ``XADD ... MAXLEN ~ maxlen``. One stream rather
than one per event type, because event types are free strings (a subscription without a
type filter must see types nobody has published yet) and because one stream keeps all
events of an object in one order. Each subscription is a **consumer group** named after
the subscription; every process that subscribes under that name is a consumer of it, so
an entry reaches exactly one process per group, and every group sees every entry. Entries
that do not pass the subscription's filters are acknowledged without calling the handler.

Guarantees, per group:

- **Acknowledged after success.** An entry is ``XACK``-ed once its handler returned (acks
  are batched); one whose handler finally failed (after the retries of
  :class:`~kubewerk.lifecycle.bus.RetryPolicy`, or a ``TerminalError``) is copied to the
  dead-letter stream (``<stream>:dead``, with the group, the consumer and the error),
  counted as ``failed``, logged, and then acknowledged: never lost silently.
- **At least once.** A consumer that dies leaves its entries pending; any consumer of the
  group claims those idle for longer than ``min_idle`` seconds (``XAUTOCLAIM``, checked
  every ``min_idle / 3``) and handles them again, so a handler may see an event twice after
  a crash: make it idempotent. A live consumer keeps the entries it holds from looking idle
  (``XCLAIM ... JUSTID`` to itself every ``min_idle / 3``), so a slow handler is not
  mistaken for a dead one. An entry delivered more than ``max_deliveries`` times (a handler
  that kills its process) is dead-lettered instead of being handled again.
- **Resuming.** A group keeps its position in Redis: a bus started again (in this process
  or another) continues after the last entry the group read, and a consumer started again
  under the same ``consumer`` name first takes back the entries it held.
- **Order** per key within one consumer for the entries it reads in stream order, as on
  the in-process bus; an entry claimed from a dead consumer arrives late, and across the
  consumers of a group events of one key may be handled at the same time.
- **Bounded memory**: a consumer reads only as many entries as its lane has free slots
  (``capacity``); Redis holds at most about ``maxlen`` entries. Trimming removes the oldest
  entries whether every group has read them or not: an entry trimmed while pending is
  reported by ``XAUTOCLAIM``, counted as ``failed`` (type ``unknown``) and logged. Publishers
  do not wait for consumers here (``XADD`` only); size ``maxlen`` above the backlog a slow
  group may build.

A new group starts at the end of the stream (``start_id="$"``): it receives events
published after it was created, at :meth:`RedisStreamsBus.start` or at ``subscribe`` on a
started bus. Metrics are the in-process bus's; ``kubewerk_bus_queue_length{topic}`` is the
group's backlog (entries not read yet plus entries read and not acknowledged, from
``XINFO GROUPS``), refreshed every ``min_idle / 3``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Iterable, Sequence
from typing import Any

import redis.asyncio as aioredis
from prometheus_client import CollectorRegistry
from redis.exceptions import RedisError, ResponseError
from redis.typing import StreamIdT

from kubewerk.lifecycle.bus import (
    BusClosed,
    BusMetrics,
    DeliveryLane,
    EventDecodeError,
    Handler,
    LifecycleEvent,
    RetryPolicy,
    Subscription,
)

logger = logging.getLogger("kubewerk.lifecycle.bus")

UNKNOWN_TYPE = "unknown"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def default_consumer_name() -> str:
    """``host-pid-random``: unique per process (a restarted process is a new consumer;
    its predecessor's pending entries are claimed after ``min_idle``)."""
    return f"{socket.gethostname()}-{os.getpid()}-{os.urandom(3).hex()}"


class RedisStreamsBus:
    """The lifecycle bus on one Redis stream (the guarantees are the module's).

    Give either ``url`` (the bus makes and closes its own client) or ``client`` (a
    ``redis.asyncio.Redis`` that the caller owns and closes). ``capacity``,
    ``concurrency`` and ``retry`` are per subscription, as on the in-process bus;
    ``batch`` bounds the entries one read takes, ``block`` how long (seconds) a read waits
    for new entries.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: aioredis.Redis | None = None,
        stream: str = "kubewerk:lifecycle",
        consumer: str | None = None,
        registry: CollectorRegistry | None = None,
        metrics: BusMetrics | None = None,
        maxlen: int = 100_000,
        capacity: int = 1024,
        concurrency: int = 16,
        retry: RetryPolicy | None = None,
        batch: int = 128,
        block: float = 1.0,
        min_idle: float = 30.0,
        max_deliveries: int = 10,
        forget_consumers_after: float = 3600.0,
        start_id: str = "$",
    ) -> None:
        if (url is None) == (client is None):
            raise ValueError("RedisStreamsBus needs exactly one of url= and client=")
        if client is None:
            assert url is not None
            client = aioredis.Redis.from_url(url)
            self._owns_client = True
        else:
            self._owns_client = False
        if maxlen < 1 or batch < 1 or block <= 0 or min_idle <= 0 or max_deliveries < 1:
            raise ValueError("maxlen, batch, max_deliveries must be >= 1; block, min_idle > 0")
        self.client: aioredis.Redis = client
        self.stream = stream
        self.dead_letter_stream = f"{stream}:dead"
        self.consumer = consumer if consumer is not None else default_consumer_name()
        self.metrics = metrics if metrics is not None else BusMetrics(registry)
        self.maxlen = maxlen
        self.capacity = capacity
        self.concurrency = concurrency
        self.retry = retry if retry is not None else RetryPolicy()
        self.batch = batch
        self.block = block
        self.min_idle = min_idle
        self.max_deliveries = max_deliveries
        self.forget_consumers_after = forget_consumers_after
        self.start_id = start_id
        self._groups: dict[str, _GroupConsumer] = {}
        self._started = False
        self._closed = False

    @property
    def subscriptions(self) -> list[Subscription]:
        """The current subscriptions, in the order they were made."""
        return [group.subscription for group in self._groups.values()]

    def lane(self, subscription: Subscription) -> DeliveryLane:
        """The local delivery lane of ``subscription``."""
        return self._groups[subscription.name].lane

    async def publish(self, event: LifecycleEvent) -> None:
        """Append ``event`` to the stream (``XADD``, trimmed to about ``maxlen``).
        Returns when Redis stored it; Redis errors propagate (nothing was published)."""
        if self._closed:
            raise BusClosed("the bus is stopped")
        await self.client.xadd(
            self.stream, {"event": event.to_json()}, maxlen=self.maxlen, approximate=True
        )
        self.metrics.of(event.event_type).published.inc()

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
        """Join the consumer group ``name`` (created when missing) with ``handler``.
        Processes that subscribe under one name share its events; names are unique per
        bus. On a started bus the group's consumer starts at once."""
        if self._closed:
            raise BusClosed("the bus is stopped")
        subscription = Subscription(
            handler, event_type=event_type, kind=kind, to_phase=to_phase, name=name
        )
        if subscription.name in self._groups:
            raise ValueError(
                f"a subscription named {subscription.name!r} exists already on this bus: "
                "pass name= to tell them apart"
            )
        group = _GroupConsumer(
            self,
            subscription,
            capacity=capacity if capacity is not None else self.capacity,
            concurrency=concurrency if concurrency is not None else self.concurrency,
            retry=retry if retry is not None else self.retry,
        )
        self._groups[subscription.name] = group
        if self._started:
            group.start()
        return subscription

    async def unsubscribe(self, subscription: Subscription, timeout: float = 10.0) -> None:
        """Leave the group: stop reading, finish the entries held within ``timeout``
        seconds; entries left unfinished stay pending for the group's other consumers.
        The group itself stays in Redis (other processes may use it)."""
        group = self._groups.get(subscription.name)
        if group is None or group.subscription is not subscription:
            raise ValueError(f"{subscription!r} is not subscribed to this bus")
        del self._groups[subscription.name]
        await group.stop(timeout)
        self.metrics.queue_length.remove(subscription.name)

    async def start(self) -> None:
        """Create the missing consumer groups and start reading (idempotent)."""
        if self._closed:
            raise BusClosed("the bus is stopped")
        if self._started:
            return
        for group in self._groups.values():
            await group.ensure_group()
        self._started = True
        for group in self._groups.values():
            group.start()

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop reading, finish the entries this process holds within ``timeout`` seconds
        and acknowledge them; what is left stays pending in Redis for the group (claimed by
        another consumer after ``min_idle``, or by this consumer name when it starts
        again). Closes the client when the bus made it. Final for this object."""
        self._closed = True
        deadline = time.monotonic() + timeout
        for group in list(self._groups.values()):
            await group.stop(max(0.0, deadline - time.monotonic()))
        if self._owns_client:
            await self.client.aclose()


class _GroupConsumer:
    """This process's consumer of one subscription's group: a reader task, a maintenance
    task (reclaim, keep-alive, backlog gauge, forgetting dead consumers) and a lane."""

    def __init__(
        self,
        bus: RedisStreamsBus,
        subscription: Subscription,
        *,
        capacity: int,
        concurrency: int,
        retry: RetryPolicy,
    ) -> None:
        self.bus = bus
        self.subscription = subscription
        self.group = subscription.name
        self.lane = DeliveryLane(
            subscription,
            bus.metrics,
            capacity=capacity,
            concurrency=concurrency,
            retry=retry,
            settle=self._settled,
        )
        self._held: set[str] = set()  # entry ids in the lane, not settled
        self._acks: list[str] = []
        self._dead: list[tuple[str, LifecycleEvent | None, str]] = []
        self._flush_task: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        self._group_ready = False
        self._backlog = 0
        bus.metrics.queue_length.labels(self.group).set_function(lambda: self._backlog)

    # -- group -------------------------------------------------------------------------

    async def ensure_group(self) -> None:
        """Create the group at ``start_id`` (and the stream) unless it exists."""
        try:
            await self.bus.client.xgroup_create(
                self.bus.stream, self.group, id=self.bus.start_id, mkstream=True
            )
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    def start(self) -> None:
        self.lane.start()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._read_loop(), name=f"kubewerk-bus-read:{self.group}"),
            loop.create_task(self._maintain_loop(), name=f"kubewerk-bus-claim:{self.group}"),
        ]

    async def stop(self, timeout: float) -> None:
        """Stop reading, drain the lane within ``timeout``, flush acknowledgements.

        The loops end at the stop flag as well as by cancellation: redis-py can swallow
        a cancellation that arrives while a blocking read times out (the read then
        returns nothing), so a loop checks the flag after every Redis call and waits
        on the flag instead of sleeping."""
        self._stopping.set()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, late = await asyncio.wait(self._tasks, timeout=self.bus.block + 1.0)
            for task in late:  # still in a Redis call: it ends at its next flag check
                logger.warning("bus: %s did not stop in time", task.get_name())
        self._tasks = []
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.lane.join(), timeout)
        left = await self.lane.abort()
        try:
            await asyncio.wait_for(self._final_flush(), max(1.0, timeout))
        except TimeoutError:
            logger.warning(
                "bus: group %s: %d acknowledgement(s) not sent before stop; those entries "
                "will be delivered again",
                self.group,
                len(self._acks),
            )
        if left:
            logger.info(
                "bus: %d event(s) of group %s left pending in Redis for another consumer",
                len(left),
                self.group,
            )

    # -- reading -----------------------------------------------------------------------

    async def _read_loop(self) -> None:
        """Take back this consumer's own pending entries, then read new ones, each read
        no larger than the lane's free slots."""
        bus = self.bus
        if not self._group_ready:
            await self._retrying(self.ensure_group)
        await self._retrying(self._read_own_pending)
        failures = 0
        while not self._stopping.is_set():
            reserved = await self._reserve_some()
            used = 0
            try:
                response = await bus.client.xreadgroup(
                    self.group,
                    bus.consumer,
                    {bus.stream: ">"},
                    count=reserved,
                    block=max(1, int(bus.block * 1000)),
                )
                used = self._accept(_entries(response))
            except ResponseError as exc:
                if "NOGROUP" in str(exc):  # the stream or group was deleted: make it again
                    self._group_ready = False
                else:
                    failures = await self._pause_after(exc, failures)
            except (RedisError, OSError) as exc:
                failures = await self._pause_after(exc, failures)
            else:
                failures = 0
            finally:
                self.lane.unreserve(reserved - used)
            if not self._group_ready:
                await self._retrying(self.ensure_group)

    async def _reserve_some(self) -> int:
        """Reserve between 1 and ``batch`` lane slots, waiting for the first one."""
        reserved = self.lane.try_reserve(self.bus.batch)
        if reserved == 0:
            await self.lane.reserve()
            reserved = 1 + self.lane.try_reserve(self.bus.batch - 1)
        return reserved

    async def _read_own_pending(self) -> None:
        """Entries delivered to this consumer name before (a restart under the same name)
        and never acknowledged: handle them first."""
        bus = self.bus
        start = "0"
        while not self._stopping.is_set():
            reserved = await self._reserve_some()
            used = 0
            try:
                response = await bus.client.xreadgroup(
                    self.group, bus.consumer, {bus.stream: start}, count=reserved
                )
                entries = _entries(response)
                used = self._accept(entries)
            finally:
                self.lane.unreserve(reserved - used)
            if not entries:
                return
            start = _text(entries[-1][0])

    def _accept(self, entries: Sequence[tuple[Any, dict[Any, Any] | None]]) -> int:
        """Put decoded, matching entries into reserved lane slots; acknowledge the others.
        Returns the number of slots used."""
        used = 0
        for raw_id, fields in entries:
            entry_id = _text(raw_id)
            if entry_id in self._held:
                continue  # claimed back while this process still holds it
            if not fields:  # trimmed or deleted while pending
                self._lost(entry_id)
                continue
            payload = fields.get(b"event", fields.get("event"))
            try:
                if payload is None:
                    raise EventDecodeError("lifecycle event: the entry has no 'event' field")
                event = LifecycleEvent.from_json(payload)
            except EventDecodeError as exc:
                self.bus.metrics.of(UNKNOWN_TYPE).failed.inc()
                logger.error(
                    "bus: group %s: entry %s of %s is not a lifecycle event: %s",
                    self.group,
                    entry_id,
                    self.bus.stream,
                    exc,
                )
                self._dead.append((entry_id, None, f"undecodable entry: {exc}"))
                self._acks.append(entry_id)
                self._schedule_flush()
                continue
            if not self.subscription.matches(event):
                self._acks.append(entry_id)
                self._schedule_flush()
                continue
            self._held.add(entry_id)
            self.lane.enqueue(event, entry_id)
            used += 1
        return used

    def _lost(self, entry_id: str) -> None:
        self.bus.metrics.of(UNKNOWN_TYPE).failed.inc()
        logger.error(
            "bus: group %s: entry %s of %s was trimmed (MAXLEN) or deleted before it was handled",
            self.group,
            entry_id,
            self.bus.stream,
        )
        self._acks.append(entry_id)
        self._schedule_flush()

    # -- settling ----------------------------------------------------------------------

    def _settled(self, event: LifecycleEvent, token: Any, error: BaseException | None) -> None:
        entry_id = str(token)
        self._held.discard(entry_id)
        if error is not None:
            self._dead.append((entry_id, event, repr(error)))
        self._acks.append(entry_id)
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.get_running_loop().create_task(self._flush_soon())

    async def _final_flush(self) -> None:
        if self._flush_task is not None:
            await asyncio.gather(self._flush_task, return_exceptions=True)
        await self._flush()

    async def _flush_soon(self) -> None:
        await asyncio.sleep(0)  # gather the acks of this loop iteration into one round trip
        await self._flush()

    async def _flush(self) -> None:
        """Dead-letter and acknowledge what is settled, in one pipeline; on a Redis error
        keep them for the next flush (retried every second)."""
        while self._acks or self._dead:
            acks, dead = self._acks, self._dead
            self._acks, self._dead = [], []
            try:
                async with self.bus.client.pipeline(transaction=False) as pipe:
                    for entry_id, event, error in dead:
                        pipe.xadd(
                            self.bus.dead_letter_stream,
                            {
                                "group": self.group,
                                "consumer": self.bus.consumer,
                                "id": entry_id,
                                "event": event.to_json() if event is not None else b"",
                                "error": error,
                            },
                            maxlen=self.bus.maxlen,
                            approximate=True,
                        )
                    if acks:
                        pipe.xack(self.bus.stream, self.group, *acks)
                    await pipe.execute()
            except (RedisError, OSError) as exc:
                self._acks[:0] = acks
                self._dead[:0] = dead
                if self._stopping.is_set():
                    logger.warning(
                        "bus: group %s: %d acknowledgement(s) not sent at stop (%r); those "
                        "entries will be delivered again",
                        self.group,
                        len(acks),
                        exc,
                    )
                    return
                logger.warning(
                    "bus: group %s: could not acknowledge %d entries (retrying): %r",
                    self.group,
                    len(acks),
                    exc,
                )
                await self._pause(1.0)

    # -- maintenance -------------------------------------------------------------------

    async def _maintain_loop(self) -> None:
        interval = max(0.01, self.bus.min_idle / 3)
        failures = 0
        while not self._stopping.is_set():
            try:
                await self._keep_alive()
                await self._reclaim()
                await self._refresh_backlog()
                await self._forget_dead_consumers()
                failures = 0
            except (RedisError, OSError) as exc:
                failures = await self._pause_after(exc, failures)
                continue
            await self._pause(interval)

    async def _keep_alive(self) -> None:
        """Reset the idle time of the entries this consumer holds (XCLAIM JUSTID to
        itself: the delivery count stays), so nobody claims them while they are handled.
        Only entries still owned here are touched: one claimed away while this process
        stalled is left to its new owner."""
        if not self._held:
            return
        bus = self.bus
        held = sorted(self._held, key=_id_order)
        # Within the range of held ids this consumer's pending entries are the held ones
        # and acknowledgements not flushed yet.
        pending = await bus.client.xpending_range(
            bus.stream,
            self.group,
            min=held[0],
            max=held[-1],
            count=len(held) + len(self._acks) + bus.batch,
            consumername=bus.consumer,
        )
        owned = {_text(row["message_id"]) for row in pending}
        mine: list[StreamIdT] = [entry_id for entry_id in held if entry_id in owned]
        lost = len(held) - len(mine)
        if lost:
            logger.warning(
                "bus: group %s: %d held entries were claimed by another consumer (this "
                "process stalled for over min_idle?); they may be handled twice",
                self.group,
                lost,
            )
        if mine:
            await bus.client.xclaim(bus.stream, self.group, bus.consumer, 0, mine, justid=True)

    async def _reclaim(self) -> None:
        """Claim entries idle for over ``min_idle`` (their consumer died), as many as the
        lane has free slots; dead-letter those delivered too often."""
        bus = self.bus
        start = "0-0"
        while True:
            reserved = self.lane.try_reserve(bus.batch)
            if reserved == 0:
                return
            used = 0
            try:
                response = await bus.client.xautoclaim(
                    bus.stream,
                    self.group,
                    bus.consumer,
                    int(bus.min_idle * 1000),
                    start_id=start,
                    count=reserved,
                )
                start = _text(response[0])
                claimed: list[tuple[Any, dict[Any, Any] | None]] = list(response[1] or [])
                deleted = [_text(x) for x in (response[2] if len(response) > 2 else [])]
                for entry_id in deleted:
                    self._lost(entry_id)
                if claimed:
                    logger.info(
                        "bus: group %s: consumer %s claimed %d entries idle for over %.3gs",
                        self.group,
                        bus.consumer,
                        len(claimed),
                        bus.min_idle,
                    )
                    claimed = await self._drop_poison(claimed)
                used = self._accept(claimed)
            finally:
                self.lane.unreserve(reserved - used)
            if start == "0-0":
                return

    async def _drop_poison(
        self, claimed: list[tuple[Any, dict[Any, Any] | None]]
    ) -> list[tuple[Any, dict[Any, Any] | None]]:
        """Dead-letter the claimed entries delivered more than ``max_deliveries`` times."""
        bus = self.bus
        ids = [_text(raw_id) for raw_id, _ in claimed]
        rows = await bus.client.xpending_range(
            bus.stream,
            self.group,
            min=ids[0],
            max=ids[-1],
            count=len(ids) + len(self._held) + len(self._acks) + bus.batch,
            consumername=bus.consumer,
        )
        deliveries = {_text(row["message_id"]): int(row["times_delivered"]) for row in rows}
        keep: list[tuple[Any, dict[Any, Any] | None]] = []
        for entry in claimed:
            entry_id = _text(entry[0])
            if deliveries.get(entry_id, 0) <= bus.max_deliveries:
                keep.append(entry)
                continue
            event = _decode(entry[1])
            event_type = event.event_type if event is not None else UNKNOWN_TYPE
            bus.metrics.of(event_type).failed.inc()
            logger.error(
                "bus: group %s: entry %s (%s) was delivered %d times without being "
                "acknowledged: dead-lettered",
                self.group,
                entry_id,
                event.to_json().decode() if event is not None else "undecodable",
                deliveries[entry_id],
            )
            self._dead.append(
                (entry_id, event, f"delivered {deliveries[entry_id]} times, never acknowledged")
            )
            self._acks.append(entry_id)
            self._schedule_flush()
        return keep

    async def _refresh_backlog(self) -> None:
        for info in await self.bus.client.xinfo_groups(self.bus.stream):
            if _text(info.get("name")) == self.group:
                lag = info.get("lag")
                self._backlog = int(info.get("pending") or 0) + int(lag or 0)
                return

    async def _forget_dead_consumers(self) -> None:
        """Delete consumers of the group that hold nothing and were idle for over
        ``forget_consumers_after`` seconds (restarted processes leave one each)."""
        bus = self.bus
        limit_ms = bus.forget_consumers_after * 1000
        for info in await bus.client.xinfo_consumers(bus.stream, self.group):
            name = _text(info.get("name"))
            if name == bus.consumer or int(info.get("pending") or 0) > 0:
                continue
            inactive = info.get("inactive")  # Redis 7.2+: since the last successful read
            idle = inactive if inactive is not None and int(inactive) >= 0 else info.get("idle")
            if idle is not None and int(idle) > limit_ms:
                await bus.client.xgroup_delconsumer(bus.stream, self.group, name)

    # -- errors ------------------------------------------------------------------------

    async def _pause_after(self, exc: BaseException, failures: int) -> int:
        delay = min(0.1 * 2**failures, 5.0)
        logger.warning("bus: group %s: Redis error (retrying in %.2gs): %r", self.group, delay, exc)
        await self._pause(delay)
        return failures + 1

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when the bus stops; a cancellation always ends it
        (asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation that
        arrives as the bus stops, and the caller's loop would go on)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stopping.wait()

    async def _retrying(self, step: Any) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                await step()
                return
            except (RedisError, OSError) as exc:
                failures = await self._pause_after(exc, failures)


def _entries(response: Any) -> list[tuple[Any, dict[Any, Any] | None]]:
    """The entries of an XREADGROUP reply for one stream (RESP2 list or RESP3 map)."""
    if not response:
        return []
    streams: Iterable[Any] = (
        response.values()
        if isinstance(response, dict)
        else (entries for _name, entries in response)
    )
    out: list[tuple[Any, dict[Any, Any] | None]] = []
    for entries in streams:
        if entries and isinstance(entries[0], list) and len(entries) == 1:
            entries = entries[0]  # RESP3 wraps the entry list once more
        out.extend((raw_id, fields) for raw_id, fields in entries)
    return out


def _id_order(entry_id: str) -> tuple[int, int]:
    """A stream entry id ("ms-seq") as a sortable pair."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def _decode(fields: dict[Any, Any] | None) -> LifecycleEvent | None:
    if not fields:
        return None
    payload = fields.get(b"event", fields.get("event"))
    if payload is None:
        return None
    try:
        return LifecycleEvent.from_json(payload)
    except EventDecodeError:
        return None
