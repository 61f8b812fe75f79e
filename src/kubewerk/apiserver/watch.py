"""Watch: fan committed storage events out to HTTP watchers, in revision order.

The store calls ``WatchHub.dispatch`` synchronously after every commit; each ``Watcher``
keeps its own queue, so a watcher never misses, repeats or reorders an event: replay of
the log (``events_since``) and registration happen with no ``await`` in between. A watcher
that falls more than ``max_backlog`` events behind is closed (the client re-watches from
its last resourceVersion, as with kube-apiserver's cacher).

``WatchStream`` is one watch request: it checks the watch options, registers a watcher
(with the initial state or the replayed log) and writes the events as chunked NDJSON.
"""

from __future__ import annotations

import asyncio
import collections
import random
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from kubewerk.apiserver import decode, table
from kubewerk.apiserver.responses import wants_table, warning_header
from kubewerk.apiserver.rest import (
    ResourceApi,
    Target,
    make_filter,
    parse_resource_version,
    too_large_resource_version,
)
from kubewerk.apiserver.storage.base import Compacted, Event, Store
from kubewerk.core.errors import ApiError, FieldError

JSON = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class WatchEvent:
    """One event as it will be sent: type and the stored (not yet served) object.

    One instance is shared by every watcher that sends it unchanged, so its encoded form
    (``encoded``, per served version) is computed once per event, not once per watcher.
    """

    __slots__ = ("encoded", "obj", "type")

    def __init__(self, type: str, obj: JSON) -> None:
        self.type = type
        self.obj = obj
        self.encoded: dict[str, bytes] = {}


class Watcher:
    """One watch stream's queue; filled by the hub, drained by the HTTP response."""

    def __init__(self, prefix: str, match: Callable[[JSON], bool] | None, max_backlog: int) -> None:
        self.prefix = prefix
        self.match = match
        self.max_backlog = max_backlog
        self.queue: collections.deque[WatchEvent] = collections.deque()
        self.wakeup = asyncio.Event()
        self.overflowed = False
        self.closed = False

    def push(self, event: WatchEvent) -> None:
        if self.closed:
            return
        if len(self.queue) >= self.max_backlog:
            self.overflowed = True
            self.closed = True
        else:
            self.queue.append(event)
        self.wakeup.set()

    def offer(self, ev: Event, shared: WatchEvent | None = None) -> None:
        """Translate a storage event through the selectors (ADDED/DELETED on transitions).

        ``shared`` is the hub's one ``WatchEvent`` for ``ev``, sent where the type is unchanged.
        """
        if not ev.key.startswith(self.prefix):
            return
        same = shared if shared is not None else WatchEvent(ev.type, ev.obj)
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
                self.push(WatchEvent("ADDED", ev.obj))
            elif before:
                self.push(WatchEvent("DELETED", ev.obj))

    def close(self) -> None:
        self.closed = True
        self.wakeup.set()


class WatchHub:
    """Registry of live watchers; the store's single subscriber for HTTP watches."""

    def __init__(self, store: Store, max_backlog: int = 100_000) -> None:
        self.store = store
        self.max_backlog = max_backlog
        self.watchers: set[Watcher] = set()
        self._unsubscribe = store.subscribe(self.dispatch)

    def dispatch(self, ev: Event) -> None:
        shared = WatchEvent(ev.type, ev.obj)
        for watcher in self.watchers:
            watcher.offer(ev, shared)

    def register(self, prefix: str, match: Callable[[JSON], bool] | None) -> Watcher:
        watcher = Watcher(prefix, match, self.max_backlog)
        self.watchers.add(watcher)
        return watcher

    def unregister(self, watcher: Watcher) -> None:
        watcher.closed = True
        self.watchers.discard(watcher)

    def close(self) -> None:
        for watcher in list(self.watchers):
            watcher.close()
        self.watchers.clear()
        self._unsubscribe()


def _check_watch_options(query: dict[str, str]) -> None:
    """422 for the combinations of ``sendInitialEvents``/``resourceVersionMatch`` Kubernetes forbids."""
    rv_match = query.get("resourceVersionMatch", "")
    send_initial_raw = query.get("sendInitialEvents")
    errors: list[FieldError] = []
    if send_initial_raw is not None:
        if rv_match != "NotOlderThan":
            errors.append(FieldError.forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if send_initial_raw.lower() == "true" and query.get("allowWatchBookmarks", "").lower() != "true":
            errors.append(FieldError.forbidden(
                "allowWatchBookmarks", "sendInitialEvents requires setting allowWatchBookmarks to true"))
    elif rv_match:
        errors.append(FieldError.forbidden(
            "resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
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

    def __init__(self, hub: WatchHub, api: ResourceApi, target: Target, query: dict[str, str],
                 accept: str, bookmark_interval: float) -> None:
        rtype = target.rtype
        query = dict(query)
        if target.name is not None:
            name_sel = f"metadata.name={target.name}"
            query["fieldSelector"] = f"{query['fieldSelector']},{name_sel}" if query.get("fieldSelector") else name_sel
            target = Target(rtype, target.version, target.namespace, None)
        self.hub = hub
        self.api = api
        self.target = target
        self.filter = make_filter(target, query)
        _check_watch_options(query)
        self.timeout = _watch_timeout(query)
        self.send_initial_raw = query.get("sendInitialEvents")
        self.send_initial = (self.send_initial_raw or "").lower() == "true"
        self.bookmarks = query.get("allowWatchBookmarks", "").lower() == "true"
        self.as_table = wants_table(accept)
        self.include_object = query.get("includeObject", "")
        rv_text = query.get("resourceVersion", "")
        self.rv = parse_resource_version(rv_text) if rv_text not in ("", "0") else None
        self.bookmark_interval = bookmark_interval
        self.watcher = Watcher(rtype.ns_prefix(target.namespace), self.filter.match, hub.max_backlog)
        self.initial: list[WatchEvent] = []
        self.initial_end_rev: int | None = None
        self.error_event: JSON | None = None
        self._first_table = True
        self._cache_key = f"{target.api_version}@{rtype.crd_generation}"

    def open(self) -> None:
        """Fill the initial events or replay the log, then register; no ``await`` inside."""
        store, watcher, rv = self.hub.store, self.watcher, self.rv
        match = watcher.match
        if self.send_initial or (rv is None and self.send_initial_raw is None):
            items, revision, _ = store.list(watcher.prefix)
            if rv is not None and rv > revision:
                self.error_event = too_large_resource_version(rv, revision).to_status()
            else:
                self.initial = [WatchEvent("ADDED", o) for _, o in items if match is None or match(o)]
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
                        f"too old resource version: {rv} ({exc.compacted})").to_status()
        if self.error_event is None:
            self.hub.watchers.add(watcher)

    def encode(self, ev: WatchEvent) -> bytes:
        """One NDJSON line for ``ev`` as this stream serves it (version, Table or object)."""
        target = self.target
        if not self.as_table:
            cached = ev.encoded.get(self._cache_key)
            if cached is None:
                obj = self.api.serve(target, ev.obj)
                cached = ev.encoded[self._cache_key] = orjson.dumps({"type": ev.type, "object": obj}) + b"\n"
            return cached
        obj = self.api.serve(target, ev.obj)
        rows = table.to_table(target.rtype, target.version, [obj],
                              {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                              self.include_object, headers=self._first_table)
        self._first_table = False
        return orjson.dumps({"type": ev.type, "object": rows}) + b"\n"

    def bookmark(self, revision: int, initial_end: bool = False) -> bytes:
        """A ``BOOKMARK`` line at ``revision`` (annotated as the end of the initial events)."""
        meta: JSON = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        target = self.target
        return orjson.dumps({"type": "BOOKMARK", "object": {
            "kind": target.rtype.kind, "apiVersion": target.api_version, "metadata": meta}}) + b"\n"

    async def run(self, receive: Receive, send: Send, warnings: list[str]) -> None:
        """Send the answer: status and headers, the initial events, then changes until the end."""
        headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-cache, private")]
        headers.extend((b"warning", warning_header(w)) for w in warnings)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if self.error_event is not None:
            await send({"type": "http.response.body",
                        "body": orjson.dumps({"type": "ERROR", "object": self.error_event}) + b"\n",
                        "more_body": True})
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
        try:
            await self._send_events(send)
        finally:
            self.hub.unregister(watcher)
            listener.cancel()
        if not disconnected.is_set():
            await send({"type": "http.response.body", "body": b""})

    async def _send_events(self, send: Send) -> None:
        watcher, encode, bookmarks = self.watcher, self.encode, self.bookmarks
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
            watcher.wakeup.set()

        try:
            if self.initial:
                await send({"type": "http.response.body", "body": b"".join(encode(e) for e in self.initial),
                            "more_body": True})
                self.initial = []
            if self.initial_end_rev is not None:
                await send({"type": "http.response.body", "body": self.bookmark(self.initial_end_rev, True),
                            "more_body": True})
            next_bookmark = loop.time() + self.bookmark_interval
            while not watcher.closed or watcher.queue:
                if watcher.queue:
                    chunk: list[bytes] = []
                    while watcher.queue:
                        chunk.append(encode(watcher.queue.popleft()))
                    await send({"type": "http.response.body", "body": b"".join(chunk), "more_body": True})
                    continue
                if watcher.closed:
                    break
                now = loop.time()
                if now >= deadline:
                    break
                if bookmarks and now >= next_bookmark:
                    await send({"type": "http.response.body", "body": self.bookmark(self.hub.store.revision),
                                "more_body": True})
                    next_bookmark = now + self.bookmark_interval
                    continue  # events may have arrived meanwhile
                wake_at = min(deadline, next_bookmark) if bookmarks else deadline
                if timer is None or timer_at != wake_at:
                    if timer is not None:
                        timer.cancel()
                    timer_at = wake_at
                    timer = loop.call_at(max(wake_at, now + 0.001), fire)
                watcher.wakeup.clear()
                await watcher.wakeup.wait()
        finally:
            if timer is not None:
                timer.cancel()
