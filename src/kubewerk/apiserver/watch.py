"""Watch: fan committed storage events out to HTTP watchers, in revision order.

The store calls ``WatchHub.dispatch`` synchronously after every commit; each ``Watcher``
keeps its own queue, so a watcher never misses, repeats or reorders an event: replay of
the log (``events_since``) and registration happen with no ``await`` in between.

Memory bounds, each in encoded JSON bytes (``Event.size``):

- A watcher's queue (events committed but not yet written to its connection) is bounded
  by ``max_backlog_bytes`` (default 16 MiB): a watcher is closed when a new event finds
  its queue over the bound while its stream is waiting for the client to take data (the
  connection's write buffer is full). Its queue is dropped and its stream ends cleanly,
  so the client re-watches from the last resourceVersion it received (or re-lists on
  410), as when kube-apiserver's cacher terminates an unresponsive watcher. Other
  watchers are not affected. A stream that is not waiting on its client (it has simply
  not run yet) may hold more for a moment, e.g. the events of one request that commits
  many large objects at once, or the replay of a watch from an old resourceVersion (at
  most the store's history bound); it is closed only if its client then falls behind
  with the queue still over the bound.
- Time, as kube-apiserver's cacher bounds its wait for a full watcher: a watcher is also
  closed when events have waited ``max_stall`` seconds (default 5) behind one write its
  client has not taken, however few bytes they are. After closing, what is left of the
  response (the pending write and the last chunk) gets another ``max_stall`` seconds;
  a client that takes it sees the response end normally, one that still does not read
  has its connection closed by the server (it sees the data already sent, then the
  connection's end, and re-watches). So a client that stops reading holds, after at most
  twice ``max_stall``, nothing on the server beyond its connection's buffers.
  Closings are logged and counted per resource (``WatchHub.terminated``, kube's
  ``apiserver_terminated_watchers_total{group,resource}``).
- Encodings shared between watchers (one per event and served version) live in one
  cache bounded by ``encoded_cache_bytes`` (default 32 MiB) for all watchers together; an
  encoding evicted from it is dropped from its event, so a slow watcher's queued events
  never keep encodings alive beyond that bound (it encodes them again when it sends them).
- A stream writes at most ``CHUNK_BYTES`` per write (or one event, if larger, as the
  shared encoding itself), so what waits in a connection's write buffer is small.

``WatchStream`` is one watch request: it checks the watch options, registers a watcher
(with the initial state or the replayed log) and writes the events as chunked NDJSON.
While a plain stream (not Table, not converting, answered through uvicorn's own ``send``)
waits with nothing queued, its events are written by the hub's flush instead of waking the
stream (``Watcher.direct``, ``httpproto.DirectBody``): a push queues the event and puts the
watcher on the hub's flush list; the flush, a callback of the event loop run after the
committing request's turn, writes each listed watcher's whole queue to its connection in
one write, framed as one chunk, ``FLUSH_SLICE`` watchers per turn of the loop. So a commit
never waits for its watchers' writes, and a watcher whose previous events are still
waiting for the flush when the next commit comes gets both in one write, as
kube-apiserver's watch handler flushes its connection only when no further event is
waiting. Streams given the same events in the same served version get the same bytes,
framed once. The flush writes only when ``send`` would have written without waiting and
the queue is under ``CHUNK_BYTES``; otherwise the stream is woken and writes its queue
through ``send``, so order and the bounds above hold.
A stream given ``convert`` (a version of a CRD that converts through a webhook, see
``apiserver.conversion_webhook``) converts the objects of the events it has at hand in one
call before writing them, encodes them for itself only, and ends with an ``ERROR`` event
carrying the ``Status`` when a conversion fails (nothing of that batch is written).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
import random
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from kubewerk.apiserver import decode, table
from kubewerk.apiserver.httpproto import DirectBody, chunk_frame, direct_body
from kubewerk.apiserver.querystring import query_flag
from kubewerk.apiserver.request import (
    Target,
    make_filter,
    parse_resource_version,
    too_large_resource_version,
)
from kubewerk.apiserver.responses import Receive, Send, wants_table, warning_header
from kubewerk.apiserver.rest import ResourceApi
from kubewerk.apiserver.storage.base import Compacted, Event, Store
from kubewerk.core.errors import ApiError, FieldError

JSON = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"

MiB: Final = 1024 * 1024
DEFAULT_MAX_BACKLOG_BYTES: Final = 16 * MiB
"""Per watcher: the encoded size of queued events at which a lagging watcher is closed."""
DEFAULT_MAX_STALL: Final = 5.0
"""Per watcher: seconds events may wait behind a write the client does not take."""
DEFAULT_ENCODED_CACHE_BYTES: Final = 32 * MiB
"""For all watchers together: encodings kept for reuse by other watchers."""
CHUNK_BYTES: Final = 64 * 1024
"""The most a stream joins into one write; a larger event is written on its own."""
FLUSH_SLICE: Final = 128
"""The most watchers the hub's flush writes to in one turn of the event loop (then the
loop runs what else is ready, requests included, before the flush goes on)."""
CONVERT_BATCH: Final = 500
"""The most events a converting stream sends to a conversion webhook in one review."""

log = logging.getLogger("kubewerk.apiserver.watch")


class WatchEvent:
    """One event as it will be sent: type, the stored (not yet served) object and its size.

    The hub makes one shared instance per committed event for every watcher that sends
    it unchanged (``shared``), so its encoded form is computed once per served version
    and reused; only the most recent encoding is kept (``encoded_key``, ``encoded``), and
    the hub's ``EncodedCache`` may drop it. Events made for one stream (initial state,
    replay, selector transitions) are encoded once and never cached.
    """

    __slots__ = (
        "__weakref__",
        "encoded",
        "encoded_key",
        "obj",
        "shared",
        "size",
        "type",
    )

    def __init__(self, type: str, obj: JSON, size: int = 0, shared: bool = False) -> None:
        self.type = type
        self.obj = obj
        self.size = size
        self.shared = shared
        self.encoded_key: str | None = None
        self.encoded: bytes | None = None


class EncodedCache:
    """Bounds the encodings shared events carry, in bytes, across all watchers.

    ``add`` records an encoding just stored on an event; when the recorded total goes
    over ``max_bytes`` the oldest are dropped from their events (if still there). The
    cache holds only weak references to events, so it never keeps an event or its object
    alive; the encodings it has not yet evicted are at most ``max_bytes`` plus the newest.
    """

    def __init__(self, max_bytes: int = DEFAULT_ENCODED_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._ring: collections.deque[tuple[weakref.ref[WatchEvent], bytes]] = collections.deque()

    def add(self, ev: WatchEvent, encoded: bytes) -> None:
        self._ring.append((weakref.ref(ev), encoded))
        self.bytes += len(encoded)
        ring = self._ring
        while self.bytes > self.max_bytes and ring:
            ref, old = ring.popleft()
            self.bytes -= len(old)
            held = ref()
            if held is not None and held.encoded is old:
                held.encoded = held.encoded_key = None


class Watcher:
    """One watch stream's queue; filled by the hub, drained by the HTTP response.

    ``queued_bytes`` is the encoded size of the queued events. ``sending`` is True while
    the stream waits for the client to take a write (or for a conversion webhook), and
    ``writer`` is the stream's task while it waits on its client. The watcher is closed
    (``overflowed``: its queue dropped, ``on_overflow`` called) when a push leaves the
    queue over ``max_backlog_bytes`` while ``sending``, or when events have waited
    ``max_stall`` seconds behind one write to the client. After that, a write to the
    client still waiting ``max_stall`` seconds later is cancelled (``abandoned``), so the
    stream ends without waiting for its client any longer.

    ``direct`` is set by the stream only while it waits for events with no write in
    progress, in the thread of its event loop (``thread``): a push from that thread then
    queues the event and, once per flush, puts the watcher on its hub's flush list
    (``schedule``; ``flush_pending`` while it is there) instead of waking the stream.
    The flush calls ``direct``, which writes the whole queue to the client and empties it,
    or answers False with nothing written (the client is not taking data now, say); the
    stream is then woken and writes the queue itself. Whoever writes, the queue is the
    one place events wait, and only one of the two writes at a time: the flush only while
    ``direct`` is set, the stream only once woken (which clears it). So the events reach
    the connection in push order either way.
    """

    __slots__ = (
        "abandon_timer",
        "abandoned",
        "closed",
        "direct",
        "flush_pending",
        "match",
        "max_backlog_bytes",
        "max_stall",
        "on_overflow",
        "overflowed",
        "prefix",
        "queue",
        "queued_bytes",
        "schedule",
        "sending",
        "stall_timer",
        "thread",
        "waiter",
        "writer",
    )

    def __init__(
        self,
        prefix: str,
        match: Callable[[JSON], bool] | None,
        max_backlog_bytes: int = DEFAULT_MAX_BACKLOG_BYTES,
        on_overflow: Callable[[Watcher], None] | None = None,
        max_stall: float | None = DEFAULT_MAX_STALL,
        schedule: Callable[[Watcher], None] | None = None,
    ) -> None:
        self.prefix = prefix
        self.match = match
        self.max_backlog_bytes = max_backlog_bytes
        self.max_stall = max_stall
        self.on_overflow = on_overflow
        self.queue: collections.deque[WatchEvent] = collections.deque()
        self.queued_bytes = 0
        self.sending = False
        self.writer: asyncio.Task[Any] | None = None
        self.stall_timer: asyncio.TimerHandle | None = None
        self.abandon_timer: asyncio.TimerHandle | None = None
        self.abandoned = False
        self.waiter: asyncio.Future[None] | None = None
        self.direct: Callable[[], bool] | None = None
        self.thread = 0
        self.schedule = schedule
        self.flush_pending = False
        self.overflowed = False
        self.closed = False

    def push(self, event: WatchEvent) -> None:
        if self.closed:
            return
        self.queue.append(event)
        self.queued_bytes += event.size
        if self.direct is not None:
            if self.flush_pending:
                return  # the hub's flush writes it with the events queued before it
            schedule = self.schedule
            if schedule is not None and threading.get_ident() == self.thread:
                self.flush_pending = True
                schedule(self)
                return  # the stream goes on waiting
            self.direct = None  # another thread: the stream writes it (woken below)
        if self.sending:
            if self.queued_bytes > self.max_backlog_bytes:
                self._overflow(
                    f"{self.queued_bytes} bytes of events are waiting "
                    f"(limit {self.max_backlog_bytes})"
                )
            elif (
                self.writer is not None and self.stall_timer is None and self.max_stall is not None
            ):
                # events now wait behind a write the client has not taken: bounded wait
                loop = asyncio.get_running_loop()
                self.stall_timer = loop.call_later(self.max_stall, self._stalled)
        waiter = self.waiter  # wake(), inlined: this runs per event and watcher
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def wake(self) -> None:
        """Wake the stream if it waits for events (``waiter``); no direct writes until it
        waits again."""
        self.direct = None
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def pop(self) -> WatchEvent:
        """The oldest queued event (the queue must not be empty)."""
        ev = self.queue.popleft()
        self.queued_bytes -= ev.size
        return ev

    def write_done(self) -> None:
        """The stream's write to its client returned: no longer waiting on it."""
        self.sending = False
        self.writer = None
        timer = self.stall_timer
        if timer is not None:
            timer.cancel()
            self.stall_timer = None

    def _stalled(self) -> None:
        self.stall_timer = None
        if not self.closed and self.writer is not None:
            assert self.max_stall is not None
            self._overflow(
                f"{len(self.queue)} events ({self.queued_bytes} bytes) have waited "
                f"{self.max_stall:g} s behind a write it has not taken"
            )

    def _overflow(self, why: str) -> None:
        self.overflowed = True
        self.closed = True
        self.queue.clear()
        self.queued_bytes = 0
        if self.on_overflow is not None:
            self.on_overflow(self)
        log.info(
            "closing watcher of %s: the client is not reading and %s; "
            "it will re-watch from its last resourceVersion",
            self.prefix,
            why,
        )
        if self.writer is not None:
            self.arm_abandon()

    def arm_abandon(self) -> None:
        """After closing: give what is left of the response ``max_stall`` seconds (or the
        default) before a write still waiting on the client is cancelled."""
        if self.abandon_timer is None and not self.abandoned:
            grace = self.max_stall if self.max_stall is not None else DEFAULT_MAX_STALL
            loop = asyncio.get_running_loop()
            self.abandon_timer = loop.call_later(grace, self._abandon)

    def _abandon(self) -> None:
        self.abandon_timer = None  # not writing now: the next write arms it again
        writer = self.writer
        if writer is not None and not self.abandoned:
            self.abandoned = True
            log.info(
                "closing the connection of watcher of %s: its client still takes nothing",
                self.prefix,
            )
            writer.cancel()

    def finish(self) -> None:
        """The stream is over: no timer of this watcher fires any more."""
        self.closed = True
        self.direct = None
        for timer in (self.stall_timer, self.abandon_timer):
            if timer is not None:
                timer.cancel()
        self.stall_timer = self.abandon_timer = None
        self.writer = None

    def offer(self, ev: Event, shared: WatchEvent | None = None) -> None:
        """Translate a storage event through the selectors (ADDED/DELETED on transitions).

        ``shared`` is the hub's one ``WatchEvent`` for ``ev``, sent where the type is unchanged.
        """
        if not ev.key.startswith(self.prefix):
            return
        same = shared if shared is not None else WatchEvent(ev.type, ev.obj, ev.size)
        match = self.match
        if match is None:
            self.push(same)
            return
        if ev.type in ("ADDED", "DELETED"):
            if match(ev.obj):
                self.push(same)
        else:
            now = match(ev.obj)
            before = ev.prev is not None and match(ev.prev)
            if now and before:
                self.push(same)
            elif now:
                self.push(WatchEvent("ADDED", ev.obj, ev.size))
            elif before:
                self.push(WatchEvent("DELETED", ev.obj, ev.size))

    def close(self) -> None:
        self.closed = True
        self.wake()


def group_resource(prefix: str) -> tuple[str, str]:
    """``(group, resource)`` of a key prefix ``/<group or "core">/<resource>/...``."""
    parts = prefix.split("/", 3)
    group = parts[1] if len(parts) > 1 else ""
    resource = parts[2] if len(parts) > 2 else ""
    return ("" if group == "core" else group), resource


@dataclass(frozen=True, slots=True)
class WatchStats:
    """The hub's watchers and bounds at one moment (for ``/metrics``)."""

    watchers: dict[tuple[str, str], int]
    """Open watchers per ``(group, resource)`` (kube: ``apiserver_registered_watchers``)."""
    terminated: dict[tuple[str, str], int]
    """Watchers closed for lagging, per ``(group, resource)``, since the hub started
    (kube: ``apiserver_terminated_watchers_total``)."""
    queued_events: int
    """Events queued in all watchers (an event queued for two watchers counts twice)."""
    queued_bytes: int
    """Their encoded size, counted the same way."""
    encoded_cache_bytes: int
    """Encodings held for reuse between watchers."""


class WatchHub:
    """Registry of live watchers; the store's single subscriber for HTTP watches.

    ``max_backlog_bytes`` bounds each watcher's queue, ``max_stall`` how long events wait
    behind a write its client does not take (``None``: no time bound) and
    ``encoded_cache_bytes`` the encodings shared between watchers (see the module
    docstring).
    """

    def __init__(
        self,
        store: Store,
        max_backlog_bytes: int = DEFAULT_MAX_BACKLOG_BYTES,
        encoded_cache_bytes: int = DEFAULT_ENCODED_CACHE_BYTES,
        max_stall: float | None = DEFAULT_MAX_STALL,
    ) -> None:
        if max_backlog_bytes < 0 or encoded_cache_bytes < 0:
            raise ValueError("watch backlog and cache bounds must not be negative")
        if max_stall is not None and not max_stall > 0:
            raise ValueError(f"max_stall must be a positive number of seconds, not {max_stall!r}")
        self.store = store
        self.max_backlog_bytes = max_backlog_bytes
        self.max_stall = max_stall
        self.encoded = EncodedCache(encoded_cache_bytes)
        self.watchers: set[Watcher] = set()
        self.terminated: collections.Counter[tuple[str, str]] = collections.Counter()
        self._overflowing: list[Watcher] = []
        self._dispatching = False
        self._flush_list: collections.deque[Watcher] = collections.deque()
        self._flush_armed = False
        self.loop: asyncio.AbstractEventLoop | None = None  # the streams' loop, set by them
        # the last flush write's events, served version and bytes: the next watcher given
        # the same events in the same version writes the same bytes (see ``framed_for``)
        self._last_events: tuple[WatchEvent, ...] = ()
        self._last_key = ""
        self._last_framed = b""
        self._unsubscribe = store.subscribe(self.dispatch)

    def dispatch(self, ev: Event) -> None:
        if not self.watchers:
            return  # nobody to offer it to (and nothing closed: that happens in here)
        shared = WatchEvent(ev.type, ev.obj, ev.size, shared=True)
        self._dispatching = True
        try:
            for watcher in self.watchers:
                watcher.offer(ev, shared)
        finally:
            self._dispatching = False
        if self._overflowing:  # closed during this dispatch: no more events for them
            for watcher in self._overflowing:
                self.watchers.discard(watcher)
            self._overflowing.clear()

    def new_watcher(self, prefix: str, match: Callable[[JSON], bool] | None) -> Watcher:
        """A watcher with this hub's backlog and stall bounds, not yet registered."""
        return Watcher(
            prefix, match, self.max_backlog_bytes, self._overflowed, self.max_stall, self._schedule
        )

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Flush in ``loop`` (the event loop of the streams that set ``Watcher.direct``);
        a flush armed in a loop that is gone (a server started again) is forgotten."""
        if self.loop is not loop:
            self.loop = loop
            for watcher in self._flush_list:  # listed again by their next push
                watcher.flush_pending = False
            self._flush_list.clear()
            self._flush_armed = False

    def _schedule(self, watcher: Watcher) -> None:
        """``Watcher.schedule``: flush ``watcher`` soon (called in the event loop's thread,
        once until the flush takes it off the list)."""
        self._flush_list.append(watcher)
        if not self._flush_armed:
            assert self.loop is not None  # set by the stream that set ``watcher.direct``
            self._flush_armed = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Write the queues of the listed watchers whose streams still wait (``direct``),
        at most ``FLUSH_SLICE`` of them in this turn of the loop; wake the stream of any
        whose queue cannot be written now, so it writes through ``send``. A write that
        raises is logged and its stream woken: it never stops the flush of the others."""
        pending = self._flush_list
        for _ in range(min(len(pending), FLUSH_SLICE)):
            watcher = pending.popleft()
            watcher.flush_pending = False
            direct = watcher.direct
            if direct is None or not watcher.queue:
                continue
            try:
                if direct():
                    continue
            except Exception:
                log.exception("writing the events of watcher of %s failed", watcher.prefix)
            watcher.wake()
        if pending:
            assert self.loop is not None
            self.loop.call_soon(self._flush)
        else:
            self._flush_armed = False
            self._last_events, self._last_framed = (), b""  # hold no bytes between flushes

    def framed_for(self, events: Sequence[WatchEvent], key: str) -> bytes | None:
        """The chunk the flush wrote last if it was for these very ``events`` served as
        ``key``, else None."""
        last = self._last_events
        n = len(last)
        if n != len(events) or key != self._last_key:
            return None
        if n == 1:  # the common case
            return self._last_framed if last[0] is events[0] else None
        for mine, theirs in zip(last, events, strict=True):
            if mine is not theirs:
                return None
        return self._last_framed

    def remember_framed(self, events: tuple[WatchEvent, ...], key: str, framed: bytes) -> None:
        """Keep ``framed`` (``events`` served as ``key``) for the next watcher of this flush."""
        self._last_events, self._last_key, self._last_framed = events, key, framed

    def register(self, watcher: Watcher) -> None:
        """Start dispatching committed events to ``watcher`` (made by ``new_watcher``, and
        already given whatever it must see first: no commit may happen in between)."""
        self.watchers.add(watcher)

    def unregister(self, watcher: Watcher) -> None:
        watcher.closed = True
        self.watchers.discard(watcher)

    def close_under(self, prefix: str) -> None:
        """Close every watcher of keys under ``prefix`` (a resource whose storage goes
        away); each stream ends cleanly and unregisters its watcher."""
        for watcher in list(self.watchers):
            if watcher.prefix.startswith(prefix):
                watcher.close()

    def _overflowed(self, watcher: Watcher) -> None:
        self.terminated[group_resource(watcher.prefix)] += 1
        if self._dispatching:  # the set is being iterated: removed when dispatch is done
            self._overflowing.append(watcher)
        else:  # a stall timer
            self.watchers.discard(watcher)

    def stats(self) -> WatchStats:
        """Open watchers, terminated watchers and queued bytes, as ``WatchStats``."""
        watchers: collections.Counter[tuple[str, str]] = collections.Counter()
        events = nbytes = 0
        for w in list(self.watchers):
            watchers[group_resource(w.prefix)] += 1
            events += len(w.queue)
            nbytes += w.queued_bytes
        return WatchStats(dict(watchers), dict(self.terminated), events, nbytes, self.encoded.bytes)

    def close(self) -> None:
        for watcher in list(self.watchers):
            watcher.close()
        self.watchers.clear()
        self._unsubscribe()


def _check_watch_options(query: dict[str, str]) -> None:
    """422 for the combinations of ``sendInitialEvents``/``resourceVersionMatch``
    Kubernetes forbids."""
    rv_match = query.get("resourceVersionMatch", "")
    send_initial_raw = query.get("sendInitialEvents")
    errors: list[FieldError] = []
    if send_initial_raw is not None:
        if rv_match != "NotOlderThan":
            errors.append(
                FieldError.forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                )
            )
        if query_flag(query, "sendInitialEvents") and not query_flag(query, "allowWatchBookmarks"):
            errors.append(
                FieldError.forbidden(
                    "allowWatchBookmarks",
                    "sendInitialEvents requires setting allowWatchBookmarks to true",
                )
            )
    elif rv_match:
        errors.append(
            FieldError.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )
        )
    if errors:
        raise ApiError.invalid("ListOptions", "meta.k8s.io", "", errors)


def _watch_timeout(query: dict[str, str]) -> float:
    """``timeoutSeconds`` in seconds; unset → 30 to 60 minutes, as kube-apiserver picks.

    An int64 as kube-apiserver parses it: ``nan``, ``inf``, ``1e400`` or ``1.5`` → 400;
    zero → the default and a negative value → an immediate end, as kube's watch handler.
    """
    text = query.get("timeoutSeconds", "")
    seconds = 0
    if text:
        try:
            seconds = decode.query_int64(text)
        except decode.DecodeError as exc:
            raise ApiError.bad_request(str(exc)) from None
    return float(max(seconds, 0)) if seconds else 1800.0 * (1 + random.random())


class WatchStream:
    """One watch request, from its query to the end of its chunked NDJSON answer.

    ``open`` (synchronous, so nothing commits in between) computes the initial events or
    replays the log and registers the watcher with the hub; ``run`` sends the answer until
    the timeout, the client's disconnect or the watcher's closing. Events are encoded once
    per served version and shared by every stream that sends them unchanged.
    """

    def __init__(
        self,
        hub: WatchHub,
        api: ResourceApi,
        target: Target,
        query: dict[str, str],
        accept: str,
        bookmark_interval: float,
        convert: Callable[[list[JSON]], Awaitable[list[JSON]]] | None = None,
    ) -> None:
        rtype = target.rtype
        self.convert = convert
        query = dict(query)
        if target.name is not None:
            name_sel = f"metadata.name={target.name}"
            query["fieldSelector"] = (
                f"{query['fieldSelector']},{name_sel}" if query.get("fieldSelector") else name_sel
            )
            target = Target(rtype, target.version, target.namespace, None)
        self.hub = hub
        self.api = api
        self.target = target
        self.filter = make_filter(target, query)
        _check_watch_options(query)
        self.timeout = _watch_timeout(query)
        self.send_initial_raw = query.get("sendInitialEvents")
        self.send_initial = query_flag(query, "sendInitialEvents")
        self.bookmarks = query_flag(query, "allowWatchBookmarks")
        self.as_table = wants_table(accept)
        self.include_object = query.get("includeObject", "")
        rv_text = query.get("resourceVersion", "")
        self.rv = parse_resource_version(rv_text) if rv_text not in ("", "0") else None
        self.bookmark_interval = bookmark_interval
        self.watcher = hub.new_watcher(rtype.ns_prefix(target.namespace), self.filter.match)
        self.initial: collections.deque[WatchEvent] = collections.deque()
        self.initial_end_rev: int | None = None
        self.error_event: JSON | None = None
        self._first_table = True
        self._cache_key = f"{target.api_version}@{rtype.crd_generation}"
        self._body: DirectBody | None = None  # set by ``run`` where the hub's flush writes

    def open(self) -> None:
        """Fill the initial events or replay the log, then register; no ``await`` inside."""
        store, watcher, rv = self.hub.store, self.watcher, self.rv
        match = watcher.match
        if self.send_initial or (rv is None and self.send_initial_raw is None):
            items, revision, _ = store.list(watcher.prefix)
            if rv is not None and rv > revision:
                self.error_event = too_large_resource_version(rv, revision).to_status()
            else:
                self.initial = collections.deque(
                    WatchEvent("ADDED", o) for _, o in items if match is None or match(o)
                )
                self.initial_end_rev = revision if self.send_initial else None
        elif rv is not None:
            if rv > store.revision:
                self.error_event = too_large_resource_version(rv, store.revision).to_status()
            else:
                try:
                    for ev in store.events_since(watcher.prefix, rv):
                        watcher.offer(ev)
                except Compacted as exc:
                    self.error_event = ApiError.expired(
                        f"too old resource version: {rv} ({exc.compacted})"
                    ).to_status()
        if self.error_event is None:
            self.hub.register(watcher)

    def encode(self, ev: WatchEvent, served: JSON | None = None) -> bytes:
        """One NDJSON line for ``ev`` as this stream serves it (version, Table or object).

        A shared event's line is kept on it for the next stream serving the same version
        (and recorded in the hub's bounded ``EncodedCache``). ``served``: the event's object
        already served (converted) by this stream, encoded for it alone.
        """
        target = self.target
        if served is not None:
            if not self.as_table:
                return orjson.dumps({"type": ev.type, "object": served}) + b"\n"
        elif not self.as_table:
            key = self._cache_key
            cached = ev.encoded
            if cached is not None and ev.encoded_key == key:
                return cached
            line = orjson.dumps({"type": ev.type, "object": self.api.serve(target, ev.obj)}) + b"\n"
            if ev.shared:
                ev.encoded_key, ev.encoded = key, line
                self.hub.encoded.add(ev, line)
            return line
        obj = served if served is not None else self.api.serve(target, ev.obj)
        rows = table.to_table(
            target.rtype,
            target.version,
            [obj],
            {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            self.include_object,
            headers=self._first_table,
        )
        self._first_table = False
        return orjson.dumps({"type": ev.type, "object": rows}) + b"\n"

    def _flush_direct(self) -> bool:
        """``Watcher.direct`` while the stream waits: write every queued event to the
        connection now, as one chunk, and empty the queue, if the connection takes data
        now (see ``DirectBody``) and the queue is under ``CHUNK_BYTES``; False, with
        nothing written and the queue as it was, otherwise (the stream then writes it).

        Streams flushed one after the other with the same events in the same served
        version write the same bytes, framed once (``WatchHub.framed_for``). An event
        that fails to encode is left to the stream, which meets the same failure where
        it always did.
        """
        body = self._body
        watcher = self.watcher
        if body is None or watcher.queued_bytes > CHUNK_BYTES:
            return False
        queue = watcher.queue
        n = len(queue)
        hub, key = self.hub, self._cache_key
        framed = hub.framed_for(queue, key)
        if framed is None:
            if not body.writable():
                return False  # nothing encoded for a client that is not taking data
            events = tuple(queue)
            try:
                if n == 1:
                    framed = chunk_frame(self.encode(events[0]))
                else:
                    framed = chunk_frame(b"".join([self.encode(ev) for ev in events]))
            except Exception:
                return False
            if all(ev.encoded_key == key for ev in events):  # shared: the same for others
                hub.remember_framed(events, key, framed)
        if not body.write(framed):
            return False
        written = 0
        for _ in range(n):  # exactly those written (a push from another thread may follow)
            written += queue.popleft().size
        watcher.queued_bytes -= written
        return True

    def bookmark(self, revision: int, initial_end: bool = False) -> bytes:
        """A ``BOOKMARK`` line at ``revision`` (annotated as the end of the initial events)."""
        meta: JSON = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        target = self.target
        return (
            orjson.dumps(
                {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": target.rtype.kind,
                        "apiVersion": target.api_version,
                        "metadata": meta,
                    },
                }
            )
            + b"\n"
        )

    async def run(self, receive: Receive, send: Send, warnings: list[str]) -> None:
        """Send the answer: status and headers, the initial events, then changes until the end."""
        headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-cache, private")]
        headers.extend((b"warning", warning_header(w)) for w in warnings)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if not self.as_table and self.convert is None:
            # events of a plain (not Table, not converting) stream may be written by the
            # hub's dispatch itself while the stream waits (``Watcher.direct``)
            self._body = direct_body(send)
            if self._body is not None:
                self.watcher.thread = threading.get_ident()
                self.hub.attach(asyncio.get_running_loop())
        if self.error_event is not None:
            await send(
                {
                    "type": "http.response.body",
                    "body": orjson.dumps({"type": "ERROR", "object": self.error_event}) + b"\n",
                    "more_body": True,
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        watcher = self.watcher
        disconnected = asyncio.Event()

        async def watch_disconnect() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    disconnected.set()
                    watcher.close()
                    return

        loop = asyncio.get_running_loop()
        listener = loop.create_task(watch_disconnect())
        # the events go out from a task of their own: waking it per event resumes only
        # this stream's frames, not the whole request handling chain above ``run``
        sender = loop.create_task(self._send_events(send))
        try:
            try:
                await sender
            except asyncio.CancelledError:
                sender.cancel()
                raise
            self.hub.unregister(watcher)
            if not disconnected.is_set():
                await self._write(send, b"", more_body=False)
        except _Abandoned:
            # the response cannot be completed: the server (uvicorn) closes the connection
            # when this returns; its "returned without completing response" is expected
            _ABANDONED.set(True)
            _quiet_abandoned_responses()
        finally:
            self.hub.unregister(watcher)
            watcher.finish()
            listener.cancel()

    async def _send_events(self, send: Send) -> None:
        watcher, encode, bookmarks = self.watcher, self.encode, self.bookmarks
        direct = self._flush_direct if self._body is not None else None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        # one timer wakes the stream for the deadline or the next bookmark; it is re-armed
        # only when that moment changes, not per event (a wait with a timeout per event
        # cost a task and a timer for every event sent)
        timer: asyncio.TimerHandle | None = None
        timer_at = 0.0

        def fire() -> None:
            nonlocal timer
            timer = None
            watcher.wake()

        try:
            initial = self.initial
            if self.convert is not None:
                batch = list(initial)
                initial.clear()
                for start in range(0, len(batch), CONVERT_BATCH):
                    if watcher.closed:
                        break
                    await self._send_converted(send, batch[start : start + CONVERT_BATCH])
            for chunk in _chunks(
                encode(initial.popleft()) for _ in range(len(initial)) if not watcher.closed
            ):
                await self._write(send, chunk)
            initial.clear()  # left over when the watcher was closed meanwhile
            if self.initial_end_rev is not None and not watcher.closed:
                await self._write(send, self.bookmark(self.initial_end_rev, True))
            next_bookmark = loop.time() + self.bookmark_interval
            while not watcher.closed or watcher.queue:
                if watcher.queue and self.convert is not None:
                    batch = [watcher.pop() for _ in range(min(len(watcher.queue), CONVERT_BATCH))]
                    await self._send_converted(send, batch)
                    continue
                if watcher.queue:
                    if len(watcher.queue) == 1:  # the common case: one event at a time
                        await self._write(send, encode(watcher.pop()))
                    else:
                        for chunk in _chunks(self._drain()):
                            await self._write(send, chunk)
                    continue
                if watcher.closed:
                    break
                now = loop.time()
                if now >= deadline:
                    break
                if bookmarks and now >= next_bookmark:
                    await self._write(send, self.bookmark(self.hub.store.revision))
                    next_bookmark = now + self.bookmark_interval
                    continue  # events may have arrived meanwhile
                wake_at = min(deadline, next_bookmark) if bookmarks else deadline
                if timer is None or timer_at != wake_at:
                    if timer is not None:
                        timer.cancel()
                    timer_at = wake_at
                    timer = loop.call_at(max(wake_at, now + 0.001), fire)
                waiter = watcher.waiter = loop.create_future()
                watcher.direct = direct  # no write is in progress: the flush may write
                try:
                    await waiter
                finally:
                    watcher.direct = None
        finally:
            if timer is not None:
                timer.cancel()
            self.hub.unregister(watcher)  # at once: no more events for a stream that is over

    async def _send_converted(self, send: Send, events: list[WatchEvent]) -> None:
        """Convert ``events``' objects in one call and write them; on a failed conversion
        write an ``ERROR`` event with its Status and close the watcher."""
        assert self.convert is not None
        watcher = self.watcher
        # waiting on the webhook counts as lagging: a backlog over the bound closes it
        watcher.sending = True
        try:
            served = await self.convert([ev.obj for ev in events])
        except ApiError as exc:
            watcher.close()
            watcher.queue.clear()
            watcher.queued_bytes = 0
            await self._write(
                send, orjson.dumps({"type": "ERROR", "object": exc.to_status()}) + b"\n"
            )
            return
        finally:
            watcher.sending = False
        lines = (self.encode(ev, obj) for ev, obj in zip(events, served, strict=True))
        for chunk in _chunks(lines):
            await self._write(send, chunk)

    def _drain(self) -> Iterator[bytes]:
        """Encoded lines of the queued events, popped one at a time while any are queued."""
        watcher, encode = self.watcher, self.encode
        while watcher.queue:
            yield encode(watcher.pop())

    async def _write(self, send: Send, body: bytes, more_body: bool = True) -> None:
        """One body write; while it waits for the client, the watcher counts as lagging.

        Raises ``_Abandoned`` when the watcher gave up waiting for its client (the write
        was cancelled by the watcher's abandon timer; any other cancellation propagates).
        """
        watcher = self.watcher
        task = asyncio.current_task()
        watcher.sending = True
        watcher.writer = task
        if watcher.overflowed:
            watcher.arm_abandon()
        try:
            await send({"type": "http.response.body", "body": body, "more_body": more_body})
        except asyncio.CancelledError:
            if watcher.abandoned and task is not None and task.uncancel() == 0:
                raise _Abandoned from None
            raise
        finally:
            watcher.write_done()


class _Abandoned(Exception):
    """A stream's write was given up: its client took nothing for the stall bound twice."""


_ABANDONED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "kubewerk_watch_abandoned", default=False
)
_UNCOMPLETED = "ASGI callable returned without completing response."


class _AbandonedFilter(logging.Filter):
    """Drops uvicorn's error for a response left incomplete on purpose (an abandoned
    watch, marked in the request task's context); every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == _UNCOMPLETED and _ABANDONED.get())


_abandoned_filter = _AbandonedFilter()


def _quiet_abandoned_responses() -> None:
    """Install ``_AbandonedFilter`` on uvicorn's error logger (once)."""
    logger = logging.getLogger("uvicorn.error")
    if _abandoned_filter not in logger.filters:
        logger.addFilter(_abandoned_filter)


def _chunks(lines: Iterable[bytes]) -> Iterator[bytes]:
    """``lines`` joined into writes of at most ``CHUNK_BYTES``; a longer line is its own.

    Lazy: a line is taken only when the previous writes are done, so a stream keeps
    pulling from its queue, and a line of a shared event is written as the shared object
    itself (no copy) when it is a write of its own.
    """
    parts: list[bytes] = []
    size = 0
    for line in lines:
        n = len(line)
        if size + n > CHUNK_BYTES and parts:
            yield b"".join(parts)
            parts, size = [], 0
        if n >= CHUNK_BYTES:
            yield line
            continue
        parts.append(line)
        size += n
    if parts:
        yield b"".join(parts)
