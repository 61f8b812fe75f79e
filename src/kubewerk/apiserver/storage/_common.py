"""Pieces both backends share: key ranges, stamping, snapshot merging, subscriber fan-out.

Private to the storage package; the public surface is ``base``, ``memory``, ``sqlite`` and
``open_store``.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from operator import itemgetter
from typing import TypeVar

from .base import JSON, Compacted, Event, FutureRevision, Subscriber

log = logging.getLogger("kubewerk.apiserver.storage")

V = TypeVar("V")

_MAX_CHAR = 0x10FFFF


def prefix_end(prefix: str) -> str | None:
    """The smallest string above every string that starts with ``prefix``.

    None when there is no such bound (empty prefix, or one ending in U+10FFFF): every
    key is then below it. Python's ``str`` order is code-point order, and SQLite's
    BINARY collation compares UTF-8 bytes, which orders identically.
    """
    if not prefix or ord(prefix[-1]) == _MAX_CHAR:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def check_limit(limit: int | None) -> int | None:
    """Normalise ``limit``: None or 0 means no limit (as Kubernetes' ``limit=0``)."""
    if limit is None or limit == 0:
        return None
    if limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    return limit


def stamp(obj: JSON, revision: int) -> JSON:
    """A shallow copy of ``obj`` with ``metadata.resourceVersion`` set to ``revision``.

    Only the top level and ``metadata`` are copied; nested values are shared with ``obj``
    (objects are immutable by contract, so sharing is safe and cheap).
    """
    meta = obj.get("metadata")
    new_meta = dict(meta) if meta else {}
    new_meta["resourceVersion"] = str(revision)
    new = dict(obj)
    new["metadata"] = new_meta
    return new


def revision_of(obj: Mapping[str, object]) -> int:
    """The revision stamped into a stored object."""
    meta = obj["metadata"]
    assert isinstance(meta, Mapping)
    rv = meta["resourceVersion"]
    assert isinstance(rv, str)
    return int(rv)


def check_read_revision(requested: int, compacted: int, current: int) -> None:
    """Raise ``Compacted``/``FutureRevision`` unless ``requested`` is readable."""
    if requested < compacted:
        raise Compacted(requested, compacted)
    if requested > current:
        raise FutureRevision(f"revision {requested} is newer than the current revision {current}")


def merge_snapshot(
    prefix: str,
    start_after: str | None,
    limit: int | None,
    current: Iterable[tuple[str, V]],
    changed: Mapping[str, V | None],
) -> tuple[list[tuple[str, V]], bool]:
    """One page of the snapshot "current state with ``changed`` keys rolled back".

    ``current`` yields today's ``(key, value)`` under ``prefix`` with key > ``start_after``
    in key order; ``changed`` maps every key written since the snapshot revision to its
    value at that revision (None: absent then). Returns the page and whether more follow.
    """
    lower = start_after if start_after is not None and start_after >= prefix else None
    revived = sorted(
        (
            (k, v)
            for k, v in changed.items()
            if v is not None and k.startswith(prefix) and (lower is None or k > lower)
        ),
        key=itemgetter(0),
    )
    kept = ((k, v) for k, v in current if k not in changed)
    merged: Iterable[tuple[str, V]] = heapq.merge(kept, revived, key=itemgetter(0))
    if limit is None:
        return list(merged), False
    page = list(islice(merged, limit + 1))
    more = len(page) > limit
    return page[:limit], more


class Fanout:
    """Subscriber registry and in-order delivery, shared by both stores.

    ``publish`` is called by a store with its write lock held, right after a commit.
    Each event reaches every subscriber before the next event is delivered, so delivery
    is in revision order. A write made from inside a subscriber (same thread, the lock is
    re-entrant) is committed at once, but its event is queued and delivered after the
    current event has reached every subscriber; that nested write call returns before
    its own event is delivered. An exception raised by a subscriber is logged and does
    not stop delivery to the others (the write is already committed).
    """

    __slots__ = ("_active", "_delivering", "_next_id", "_pending", "_subs")

    def __init__(self) -> None:
        self._subs: dict[int, Subscriber] = {}
        self._active: tuple[Subscriber, ...] = ()
        self._next_id = 0
        self._pending: deque[Event] = deque()
        self._delivering = False

    def subscribe(self, fn: Subscriber, lock: threading.RLock) -> Callable[[], None]:
        with lock:
            sub_id = self._next_id
            self._next_id += 1
            self._subs[sub_id] = fn
            self._active = tuple(self._subs.values())

        def unsubscribe() -> None:
            with lock:
                if self._subs.pop(sub_id, None) is not None:
                    self._active = tuple(self._subs.values())

        return unsubscribe

    def publish(self, event: Event) -> None:
        if not self._active:
            return
        if self._delivering:
            self._pending.append(event)
            return
        pending = self._pending
        if pending:
            # events a delivery ended by a BaseException left: they go first, in order
            pending.append(event)
            event = pending.popleft()
        self._delivering = True
        try:
            # the event itself first, then those its subscribers' writes queued, each to
            # the subscribers of the moment its delivery starts
            ev = event
            while True:
                for fn in self._active:
                    try:
                        fn(ev)
                    except Exception:
                        log.exception(
                            "storage subscriber %r failed on revision %d", fn, ev.revision
                        )
                if not pending:
                    break
                ev = pending.popleft()
        finally:
            self._delivering = False
