"""The in-memory store: the whole state and change log in Python dicts and lists.

Nothing is copied on read: ``get`` and ``list`` hand out the stored dicts themselves, and
``create``/``update`` store a shallow copy of the caller's object (top level and
``metadata`` copied, everything below shared). Callers must treat every object they pass
in or get back as immutable; mutating one corrupts the store's history.

Layout: ``_data`` maps key -> current object. Keys are also kept sorted per *bucket*, the
key up to its third ``/`` (``/<group>/<resource>/``), each bucket a ``SortedList`` (a
list of short sorted sublists), so inserting or removing a key costs O(log n) whatever
the resource's size (a flat sorted list would move half its pointers per insert: ~30 µs
at 50,000 objects), and a list of one resource or namespace is a bisect plus a slice.
The log is a list of ``Event`` whose index is ``revision - compacted_revision - 1``
(revisions are dense), with a parallel list of commit times for age-based compaction.

Memory bounds: every committed object passes the storage boundary (``boundary``), which
also gives its encoded size. The history (the log) is bounded in those bytes by
``retain_bytes`` at every commit, besides the count and age policy that
``compact_by_policy`` applies: when a commit takes the history over ``retain_bytes`` the
oldest events are compacted until it is at most 15/16 of it (the slack makes compaction
an occasional batch, not a list shift per write). So the history never holds more than
``retain_bytes`` of encoded objects once a write returns; the objects stored now are not
bounded here (they are the data, not history).

Encryption at rest: the store takes the same ``encryption`` configuration as the SQLite
store (validated by the time it is built), so a server switches stores with one flag;
nothing of this store is ever at rest, so values are kept as objects and nothing is
encrypted.
"""

from __future__ import annotations

import builtins
import threading
import time
from bisect import bisect_left, insort
from collections.abc import Callable
from typing import Any

from sortedcontainers import SortedList  # type: ignore[import-untyped]

from ._common import (
    Fanout,
    check_limit,
    check_read_revision,
    merge_snapshot,
    prefix_end,
    revision_of,
    stamp,
)
from .base import (
    JSON,
    Compacted,
    Event,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    StoreClosed,
    StoreStats,
    Subscriber,
)
from .boundary import encode_storable
from .encryption import EncryptionConfig

__all__ = ["DEFAULT_RETAIN_BYTES", "MemoryStore"]

DEFAULT_RETAIN_BYTES = 64 * 1024 * 1024
"""The memory store's default history bound: 64 MiB of encoded objects.

Enough for tens of thousands of ordinary changes (a few KiB each), so watches resume and
paginated lists continue across minutes of activity on a developer's cluster; small
enough that the history, as Python objects (one to four times the encoded size), stays
within a few hundred MiB whatever is written.
"""


def _bucket_of(key: str) -> str:
    """``key`` up to and including its third ``/``, or all of it if it has fewer."""
    i = key.find("/")
    if i >= 0:
        i = key.find("/", i + 1)
        if i >= 0:
            i = key.find("/", i + 1)
            if i >= 0:
                return key[: i + 1]
    return key


def _has_bucket(prefix: str) -> bool:
    """Whether ``prefix`` contains a third ``/`` (then it lies inside one bucket)."""
    return prefix.count("/") >= 3


class MemoryStore:
    """A ``Store`` kept entirely in memory; see the module docstring for the layout.

    ``retain_events``/``retain_seconds`` are the compaction policy applied by
    ``compact_by_policy`` (None: no limit of that kind); ``retain_bytes`` bounds the
    history's encoded size at every commit (None: no bound; see the module docstring);
    ``clock`` gives commit times in seconds (wall clock by default; tests inject a fake
    one). Thread-safe: every operation that touches more than one structure runs under
    one re-entrant lock.
    """

    def __init__(
        self,
        *,
        retain_events: int | None = 100_000,
        retain_seconds: float | None = 3600.0,
        retain_bytes: int | None = DEFAULT_RETAIN_BYTES,
        clock: Callable[[], float] = time.time,
        encryption: EncryptionConfig | None = None,
    ) -> None:
        if retain_events is not None and retain_events < 0:
            raise ValueError(f"retain_events must not be negative, got {retain_events}")
        if retain_seconds is not None and retain_seconds < 0:
            raise ValueError(f"retain_seconds must not be negative, got {retain_seconds}")
        if retain_bytes is not None and retain_bytes < 0:
            raise ValueError(f"retain_bytes must not be negative, got {retain_bytes}")
        self.retain_events = retain_events
        self.retain_seconds = retain_seconds
        self.retain_bytes = retain_bytes
        self.encryption = encryption  # nothing at rest: see the module docstring
        self._clock = clock
        self._lock = threading.RLock()
        self._fanout = Fanout()
        self._data: dict[str, JSON] = {}
        self._buckets: dict[str, Any] = {}  # bucket -> SortedList of its keys
        self._bucket_names: builtins.list[str] = []
        self._sizes: dict[str, int] = {}  # key -> encoded size of the current object
        self._object_bytes = 0
        self._log: builtins.list[Event] = []
        self._times: builtins.list[float] = []
        self._history_bytes = 0
        self._compactions = 0
        self._compacted_events = 0
        self._compacted_bytes = 0
        self._last_time = float("-inf")
        self._rev = 0
        self._compacted = 0
        self._closed = False

    # -- reads -------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The newest committed revision (0 for an empty, never-written store)."""
        return self._rev

    @property
    def compacted_revision(self) -> int:
        """The log holds every event with a revision above this."""
        return self._compacted

    def get(self, key: str) -> JSON | None:
        """The current object at ``key`` (the stored dict itself, not a copy), or None."""
        if self._closed:
            raise StoreClosed()
        return self._data.get(key)

    def list(
        self,
        prefix: str,
        *,
        at_revision: int | None = None,
        start_after: str | None = None,
        limit: int | None = None,
    ) -> tuple[builtins.list[tuple[str, JSON]], int, bool]:
        """Objects under ``prefix`` in key order as of ``at_revision``; see ``Store.list``.

        Cost: O(page) for the current revision; for an older revision add O(events since
        it) to roll the changed keys back.
        """
        limit = check_limit(limit)
        with self._lock:
            self._check_open()
            current = self._rev
            at = current if at_revision is None else at_revision
            check_read_revision(at, self._compacted, current)
            lower = start_after if start_after is not None and start_after >= prefix else None
            data = self._data
            if at == current:
                keys = self._current_keys(prefix, lower, None if limit is None else limit + 1)
                more = limit is not None and len(keys) > limit
                if more:
                    del keys[limit:]
                return [(k, data[k]) for k in keys], at, more
            changed: dict[str, JSON | None] = {}
            log = self._log
            for i in range(at - self._compacted, len(log)):
                ev = log[i]
                if ev.key not in changed and ev.key.startswith(prefix):
                    changed[ev.key] = ev.prev
            keys = self._current_keys(
                prefix, lower, None if limit is None else limit + 1 + len(changed)
            )
            page, more = merge_snapshot(
                prefix, start_after, limit, ((k, data[k]) for k in keys), changed
            )
            return page, at, more

    def count(self, prefix: str, *, start_after: str | None = None) -> int:
        """How many objects are under ``prefix`` now (keys > ``start_after`` if given)."""
        with self._lock:
            self._check_open()
            end = prefix_end(prefix)
            total = 0
            for name in self._buckets_for(prefix):
                keys = self._buckets[name]
                lo = keys.bisect_left(prefix)
                if start_after is not None and start_after >= prefix:
                    lo = max(lo, keys.bisect_right(start_after))
                hi = len(keys) if end is None else max(lo, keys.bisect_left(end))
                total += hi - lo
            return total

    def events_since(self, prefix: str, revision: int) -> builtins.list[Event]:
        """Logged events under ``prefix`` with revision > ``revision``, in revision order.

        Raises ``Compacted`` if ``revision`` < ``compacted_revision``; a ``revision`` at or
        above the current one gives an empty list.
        """
        with self._lock:
            self._check_open()
            if revision < self._compacted:
                raise Compacted(revision, self._compacted)
            if revision >= self._rev:
                return []
            tail = self._log[revision - self._compacted :]
            if not prefix:
                return tail
            return [ev for ev in tail if ev.key.startswith(prefix)]

    # -- writes ------------------------------------------------------------------------

    def create(self, key: str, obj: JSON) -> JSON:
        """Store a new object; returns it with its resourceVersion. Raises ``KeyExists``."""
        with self._lock:
            if self._closed:
                raise StoreClosed()
            data = self._data
            if key in data:
                raise KeyExists(f"key {key!r} already exists")
            rev = self._rev + 1
            new = stamp(obj, rev)
            _, size = encode_storable(key, new)
            data[key] = new
            self._sizes[key] = size
            self._object_bytes += size
            bucket = _bucket_of(key)
            keys = self._buckets.get(bucket)
            if keys is None:
                self._buckets[bucket] = SortedList((key,))
                insort(self._bucket_names, bucket)
            else:
                keys.add(key)
            self._commit(Event("ADDED", key, rev, new, None, size))
            return new

    def update(self, key: str, obj: JSON, expected_revision: int | None = None) -> JSON:
        """Replace the object (only if its revision is ``expected_revision``, when given).

        Raises ``KeyNotFound`` or ``RevisionConflict``.
        """
        with self._lock:
            self._check_open()
            data = self._data
            prev = data.get(key)
            if prev is None:
                raise KeyNotFound(f"key {key!r} not found")
            if expected_revision is not None and revision_of(prev) != expected_revision:
                raise RevisionConflict(prev)
            rev = self._rev + 1
            new = stamp(obj, rev)
            _, size = encode_storable(key, new)
            data[key] = new
            sizes = self._sizes
            self._object_bytes += size - sizes[key]
            sizes[key] = size
            self._commit(Event("MODIFIED", key, rev, new, prev, size))
            return new

    def delete(self, key: str, expected_revision: int | None = None) -> JSON:
        """Remove the object; returns its last state stamped with the deletion's revision.

        Raises ``KeyNotFound`` or ``RevisionConflict``.
        """
        with self._lock:
            self._check_open()
            data = self._data
            prev = data.get(key)
            if prev is None:
                raise KeyNotFound(f"key {key!r} not found")
            if expected_revision is not None and revision_of(prev) != expected_revision:
                raise RevisionConflict(prev)
            rev = self._rev + 1
            last = stamp(prev, rev)
            old_size = self._sizes.pop(key)
            self._object_bytes -= old_size
            # only the resourceVersion string differs from the stored object's encoding
            size = old_size + len(str(rev)) - len(prev["metadata"]["resourceVersion"])
            del data[key]
            bucket = _bucket_of(key)
            keys = self._buckets[bucket]
            keys.remove(key)
            if not keys:
                del self._buckets[bucket]
                del self._bucket_names[bisect_left(self._bucket_names, bucket)]
            self._commit(Event("DELETED", key, rev, last, prev, size))
            return last

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call ``fn`` synchronously after each commit, in revision order.

        Returns an idempotent unsubscribe function. See ``Fanout`` for re-entrancy.
        """
        self._check_open()
        return self._fanout.subscribe(fn, self._lock)

    # -- compaction --------------------------------------------------------------------

    def compact(self, revision: int) -> None:
        """Drop log entries at or below ``revision`` (current state is kept).

        A ``revision`` at or below ``compacted_revision`` is a no-op; one above the
        current revision raises ``FutureRevision``.
        """
        with self._lock:
            self._check_open()
            if revision > self._rev:
                raise FutureRevision(
                    f"cannot compact to revision {revision}: current revision is {self._rev}"
                )
            n = revision - self._compacted
            if n > 0:
                self._drop_oldest(n)

    def compact_by_policy(self) -> int:
        """Compact to keep at most ``retain_events`` events, none older than
        ``retain_seconds``; returns the compacted revision afterwards."""
        with self._lock:
            self._check_open()
            target = self._compacted
            if self.retain_events is not None:
                target = max(target, self._rev - self.retain_events)
            if self.retain_seconds is not None:
                cutoff = self._clock() - self.retain_seconds
                target = max(target, self._compacted + bisect_left(self._times, cutoff))
            self.compact(target)
            return self._compacted

    def stats(self) -> StoreStats:
        """Current sizes and compaction counters (kept up to date by every write)."""
        with self._lock:
            return StoreStats(
                revision=self._rev,
                compacted_revision=self._compacted,
                objects=len(self._data),
                object_bytes=self._object_bytes,
                history_events=len(self._log),
                history_bytes=self._history_bytes,
                compactions=self._compactions,
                compacted_events=self._compacted_events,
                compacted_bytes=self._compacted_bytes,
            )

    def close(self) -> None:
        """Drop all state; later calls raise ``StoreClosed`` (closing again is a no-op)."""
        with self._lock:
            self._closed = True
            self._data = {}
            self._sizes = {}
            self._object_bytes = 0
            self._buckets = {}
            self._bucket_names = []
            self._log = []
            self._times = []
            self._history_bytes = 0

    # -- internals ---------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed()

    def _commit(self, ev: Event) -> None:
        now = self._clock()
        if now < self._last_time:  # keep commit times monotonic for bisecting
            now = self._last_time
        self._last_time = now
        self._log.append(ev)
        self._times.append(now)
        self._rev = ev.revision
        self._history_bytes += ev.size
        limit = self.retain_bytes
        if limit is not None and self._history_bytes > limit:
            self._drop_bytes(self._history_bytes - (limit - limit // 16))
        self._fanout.publish(ev)

    def _drop_bytes(self, excess: int) -> None:
        """Compact the fewest oldest events whose sizes add up to at least ``excess``."""
        log = self._log
        n = dropped = 0
        while n < len(log) and dropped < excess:
            dropped += log[n].size
            n += 1
        self._drop_oldest(n, dropped)

    def _drop_oldest(self, n: int, dropped: int | None = None) -> None:
        """Remove the ``n`` oldest events (``n`` >= 1; ``dropped``: their sizes' sum, if
        known) and count the compaction."""
        log = self._log
        if dropped is None:
            dropped = sum(ev.size for ev in log[:n]) if n < len(log) else self._history_bytes
        del log[:n]
        del self._times[:n]
        self._compacted += n
        self._history_bytes -= dropped
        self._compactions += 1
        self._compacted_events += n
        self._compacted_bytes += dropped

    def _buckets_for(self, prefix: str) -> builtins.list[str]:
        """The buckets, in key order, that can hold keys starting with ``prefix``."""
        if _has_bucket(prefix):
            bucket = _bucket_of(prefix)
            return [bucket] if bucket in self._buckets else []
        names = self._bucket_names
        lo = bisect_left(names, prefix)
        end = prefix_end(prefix)
        hi = len(names) if end is None else bisect_left(names, end, lo)
        return names[lo:hi]

    def _current_keys(self, prefix: str, lower: str | None, n: int | None) -> builtins.list[str]:
        """Up to ``n`` current keys under ``prefix`` and above ``lower``, in order."""
        end = prefix_end(prefix)
        out: builtins.list[str] = []
        for name in self._buckets_for(prefix):
            keys = self._buckets[name]
            lo = keys.bisect_left(prefix)
            if lower is not None:
                lo = max(lo, keys.bisect_right(lower))
            hi = len(keys) if end is None else max(lo, keys.bisect_left(end))
            if n is not None:
                hi = min(hi, lo + n - len(out))
            out.extend(keys.islice(lo, hi))
            if n is not None and len(out) >= n:
                break
        return out
