"""Watch: fan committed storage events out to HTTP watchers, in revision order.

The store calls ``WatchHub.dispatch`` synchronously after every commit; each ``Watcher``
keeps its own queue, so a watcher never misses, repeats or reorders an event: replay of
the log (``events_since``) and registration happen with no ``await`` in between. A watcher
that falls more than ``max_backlog`` events behind is closed (the client re-watches from
its last resourceVersion, as with kube-apiserver's cacher).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any

from kubewerk.apiserver.storage.base import Event, Store

JSON = dict[str, Any]
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
