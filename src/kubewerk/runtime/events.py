"""An events.k8s.io/v1 Event recorder with client-go's series de-duplication.

Guarantees (as ``k8s.io/client-go/tools/events``):

- events are *isomorphic* when they share action, reason, reporting controller,
  regarding and related object; the first one is created as an Event;
- the second isomorphic event turns it into a series: the Event is patched with
  ``series: {count: 2, lastObservedTime}``; later ones only bump the cached count, which
  is written when the series is refreshed (every ``refresh_every``, 30 min by default),
  when it finishes (no new occurrence for ``finish_after``, 6 min), or on :meth:`flush`;
- a series whose Event vanished (NotFound on patch) is created again;
- recording never blocks or fails a reconcile: writes run in the background from a
  bounded queue (1,000 pending, extra events dropped with a log line), each retried a
  few times on connection errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from kubewerk.client.client import Client
from kubewerk.client.errors import ApiError, NotFound, ServerUnreachable
from kubewerk.client.resources import EVENT, to_dict

log = logging.getLogger("kubewerk.runtime.events")

EventType = Literal["Normal", "Warning"]
MAX_NOTE_BYTES = 1024
MAX_QUEUED = 1000
FINISH_AFTER = 6 * 60.0
REFRESH_EVERY = 30 * 60.0


def micro_time(epoch: float) -> str:
    """metav1.MicroTime text for an epoch time."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def object_reference(obj: Any) -> dict[str, Any]:
    """The ObjectReference (apiVersion, kind, namespace, name, uid, resourceVersion) of
    an object."""
    data = obj if isinstance(obj, Mapping) else to_dict(obj)
    meta = data.get("metadata") or {}
    ref: dict[str, Any] = {}
    for key, value in (
        ("apiVersion", data.get("apiVersion")),
        ("kind", data.get("kind")),
        ("namespace", meta.get("namespace")),
        ("name", meta.get("name")),
        ("uid", meta.get("uid")),
        ("resourceVersion", meta.get("resourceVersion")),
    ):
        if value:
            ref[key] = value
    return ref


def _ref_key(ref: Mapping[str, Any] | None) -> tuple[str, ...]:
    if not ref:
        return ()
    # resourceVersion is left out: occurrences on successive versions of an object are one series
    return tuple(str(ref.get(k, "")) for k in ("apiVersion", "kind", "namespace", "name", "uid"))


def _truncate(note: str) -> str:
    raw = note.encode()
    if len(raw) <= MAX_NOTE_BYTES:
        return note
    return raw[: MAX_NOTE_BYTES - 3].decode(errors="ignore") + "..."


@dataclass
class _Cached:
    event: dict[str, Any]
    first: float
    last: float
    count: int = 1
    written_count: int = 1
    series: bool = False


@dataclass
class SeriesCache:
    """The pure de-duplication logic: what to write for each new occurrence."""

    events: dict[tuple[Any, ...], _Cached] = field(default_factory=dict)

    @staticmethod
    def key(event: Mapping[str, Any]) -> tuple[Any, ...]:
        """The isomorphism key: action, reason, reporting controller, regarding, related."""
        return (
            event.get("action", ""),
            event.get("reason", ""),
            event.get("reportingController", ""),
            _ref_key(event.get("regarding")),
            _ref_key(event.get("related")),
        )

    def observe(self, event: dict[str, Any], now: float) -> tuple[str, dict[str, Any]] | None:
        """Record one occurrence. Returns ("create", event), ("series", event) — patch
        the existing Event with its series — or None (count bumped in the cache only)."""
        key = self.key(event)
        cached = self.events.get(key)
        if cached is None:
            self.events[key] = _Cached(event=event, first=now, last=now)
            return ("create", event)
        cached.count += 1
        cached.last = now
        if cached.series:
            return None
        cached.series = True
        cached.written_count = cached.count
        return ("series", self.series_body(cached))

    @staticmethod
    def series_body(cached: _Cached) -> dict[str, Any]:
        """The Event with its current series stanza."""
        body = dict(cached.event)
        body["series"] = {"count": cached.count, "lastObservedTime": micro_time(cached.last)}
        return body

    def due(
        self, now: float, finish_after: float, refresh_every: float, flush_all: bool = False
    ) -> list[tuple[str, dict[str, Any]]]:
        """Series writes that are due; finished series and stale singletons leave the cache."""
        out: list[tuple[str, dict[str, Any]]] = []
        for key, cached in list(self.events.items()):
            finished = now - cached.last >= finish_after
            if cached.series:
                stale = cached.count != cached.written_count
                if finished or (stale and (flush_all or now - cached.first >= refresh_every)):
                    cached.written_count = cached.count
                    out.append(("series", self.series_body(cached)))
                if finished:
                    del self.events[key]
            elif finished:
                del self.events[key]
        return out

    def recorded(self, event: Mapping[str, Any]) -> None:
        """Remember the server's copy (name, resourceVersion) of a written Event."""
        cached = self.events.get(self.key(event))
        if cached is not None:
            meta = event.get("metadata") or {}
            cached.event.setdefault("metadata", {})["name"] = meta.get(
                "name", cached.event.get("metadata", {}).get("name")
            )


class EventRecorder:
    """Records Events for one reporting controller (``reportingInstance`` = controller-hostname)."""

    def __init__(
        self,
        client: Client,
        controller: str,
        instance: str | None = None,
        *,
        finish_after: float = FINISH_AFTER,
        refresh_every: float = REFRESH_EVERY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.controller = controller
        self.instance = instance or f"{controller}-{socket.gethostname()}"
        self.finish_after = finish_after
        self.refresh_every = refresh_every
        self.clock = clock
        self.cache = SeriesCache()
        self._queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue(MAX_QUEUED)
        self._task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.written: int = 0

    def build(
        self,
        regarding: Any,
        type: EventType,
        reason: str,
        note: str,
        action: str,
        related: Any = None,
    ) -> dict[str, Any]:
        """The Event object for one occurrence (not yet de-duplicated)."""
        ref = object_reference(regarding)
        now = self.clock()
        event: dict[str, Any] = {
            "apiVersion": EVENT.api_version,
            "kind": "Event",
            "metadata": {
                "name": f"{ref.get('name', 'event')}.{time.time_ns():x}",
                "namespace": ref.get("namespace") or "default",
            },
            "eventTime": micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "note": _truncate(note),
            "type": type,
            "regarding": ref,
        }
        if related is not None:
            event["related"] = object_reference(related)
        return event

    def event(
        self,
        regarding: Any,
        type: EventType,
        reason: str,
        note: str = "",
        *,
        action: str = "Reconcile",
        related: Any = None,
    ) -> None:
        """Record one occurrence (non-blocking)."""
        if type not in ("Normal", "Warning"):
            raise ValueError(f"event type must be Normal or Warning, not {type!r}")
        event = self.build(regarding, type, reason, note, action, related)
        todo = self.cache.observe(event, self.clock())
        if todo is None:
            return
        try:
            self._queue.put_nowait(todo)
        except asyncio.QueueFull:
            log.warning(
                "event queue full; dropping %s event %s for %s",
                type,
                reason,
                event["regarding"].get("name"),
            )

    def start(self) -> None:
        """Start the background writer and the series timer."""
        if self._task is None:
            self._task = asyncio.create_task(self._writer(), name=f"events {self.controller}")
            self._ticker = asyncio.create_task(self._tick(), name=f"event series {self.controller}")

    async def stop(self, flush: bool = True) -> None:
        """Write pending series counts (when ``flush``), drain the queue, stop the tasks."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        if flush:
            for todo in self.cache.due(
                self.clock(), self.finish_after, self.refresh_every, flush_all=True
            ):
                with contextlib.suppress(asyncio.QueueFull):
                    self._queue.put_nowait(todo)
        if self._task is not None:
            await self._queue.put(None)
            try:
                await asyncio.wait_for(self._task, 5.0)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
            self._task = None

    async def flush(self) -> None:
        """Write every series whose count changed since it was last written, and wait
        for the queue."""
        for todo in self.cache.due(
            self.clock(), self.finish_after, self.refresh_every, flush_all=True
        ):
            await self._queue.put(todo)
        if self._task is None:
            while not self._queue.empty():
                item = self._queue.get_nowait()
                if item is not None:
                    await self._write(*item)
        else:
            await self._queue.join()

    async def _tick(self) -> None:
        period = min(self.finish_after, self.refresh_every) / 4
        while True:
            await asyncio.sleep(period)
            for todo in self.cache.due(self.clock(), self.finish_after, self.refresh_every):
                with contextlib.suppress(asyncio.QueueFull):
                    self._queue.put_nowait(todo)

    async def _writer(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                if item is None:
                    return
                await self._write(*item)
            finally:
                self._queue.task_done()

    async def _write(self, what: str, event: dict[str, Any]) -> None:
        for attempt in range(3):
            try:
                if what == "series":
                    try:
                        written = await self.client.patch(
                            EVENT,
                            event["metadata"]["name"],
                            {"series": event["series"]},
                            event["metadata"]["namespace"],
                        )
                    except NotFound:
                        fresh = dict(event)
                        fresh["metadata"] = {
                            k: v for k, v in event["metadata"].items() if k != "resourceVersion"
                        }
                        written = await self.client.create(fresh)
                else:
                    written = await self.client.create(event)
                self.cache.recorded(written)
                self.written += 1
                return
            except ServerUnreachable:
                await asyncio.sleep(0.5 * (attempt + 1))
            except ApiError as exc:
                log.warning(
                    "server rejected event %s/%s: %s",
                    event["reason"],
                    event["regarding"].get("name"),
                    exc,
                )
                return
