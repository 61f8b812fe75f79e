"""The storage contract every backend (memory, SQLite) keeps.

Keys are strings ``/<group or "core">/<resource>/<namespace or "">/<name>``; a prefix
ending in ``/`` selects a resource (all namespaces) or one namespace of it. Values are
JSON objects (``dict``) treated as immutable once handed over: callers never mutate what
they pass in or get back.

One writer: every successful ``create``/``update``/``delete`` is one transaction that takes
the next global revision (``current_revision + 1``) and writes it into the stored object
as ``metadata.resourceVersion`` (a decimal string). A deleted object's final state is
recorded with the deletion's revision. Writes are synchronous: when the call returns the
change is committed (for SQLite: in the WAL, surviving ``kill -9``) and every subscriber
has been called with the event, in revision order.

The storage boundary: a store commits only objects the server can write back in every
answer that embeds them (see ``boundary``); ``create`` and ``update`` raise
``UnstorableObject`` for any other and then change nothing (no state, log, revision or
event). Each event records its object's encoded JSON size, on which the memory store
bounds its history and the watch layer bounds each watcher's backlog.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

JSON = dict[str, Any]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True, slots=True)
class Event:
    """One committed change; ``obj`` carries ``resourceVersion == str(revision)``.

    ``size`` is the length of ``obj``'s JSON encoding in bytes (what an answer carrying
    it costs), 0 only for events built outside a store.
    """

    type: EventType
    key: str
    revision: int
    obj: JSON
    prev: JSON | None
    size: int = 0


@dataclass(frozen=True, slots=True)
class StoreStats:
    """A store's size and compaction counters at one moment (for ``/metrics``).

    Byte counts are encoded JSON bytes (``Event.size``): the memory an object takes as
    Python values is typically one to four times that. Counters start at 0 when the store
    is opened (they are not persisted).
    """

    revision: int
    """The newest committed revision."""
    compacted_revision: int
    """Events at or below this revision are gone from the history."""
    objects: int
    """Objects stored now."""
    object_bytes: int
    """Encoded size of the objects stored now."""
    history_events: int
    """Events the history holds (revisions above ``compacted_revision``)."""
    history_bytes: int
    """Encoded size of the objects those events carry."""
    compactions: int
    """Compactions that dropped at least one event since the store was opened."""
    compacted_events: int
    """Events those compactions dropped."""
    compacted_bytes: int
    """Encoded size of the objects those events carried."""


class StorageError(Exception):
    """Base for storage failures the API maps onto ``Status`` errors."""


class KeyExists(StorageError):
    """``create`` of a key that already holds an object."""


class UnstorableObject(StorageError):
    """``create``/``update`` of an object the server could not write back in its answers.

    Too deeply nested, an integer beyond 64 bits, a lone surrogate, a non-JSON value: see
    ``boundary``. Nothing was stored. ``key`` names the object, ``reason`` says why in a
    sentence fit for an API error message; ``str()`` joins both.
    """

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"object {key} cannot be stored: {reason}")
        self.key = key
        self.reason = reason


class KeyNotFound(StorageError):
    """``update``/``delete`` of a key that holds nothing."""


class RevisionConflict(StorageError):
    """``expected_revision`` did not match the key's current revision."""

    def __init__(self, current: JSON) -> None:
        super().__init__("revision conflict")
        self.current = current


class Compacted(StorageError):
    """The requested revision is older than the oldest one the log still holds."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"revision {requested} compacted (oldest kept: {compacted})")
        self.requested = requested
        self.compacted = compacted


class FutureRevision(StorageError):
    """The requested revision is newer than the current one."""


class StoreClosed(StorageError):
    """An operation on a store after ``close()``."""

    def __init__(self) -> None:
        super().__init__("store is closed")


class StoreOpenError(StorageError):
    """A store could not be opened (unreadable, corrupt, foreign or locked file).

    The message names the file and the cause and is fit to show to a user as is.
    """


Subscriber = Callable[[Event], None]


class Store(Protocol):
    """A revisioned key-value store with a change log (etcd's model, in one process)."""

    @property
    def revision(self) -> int:
        """The newest committed revision (0 for an empty, never-written store)."""

    @property
    def compacted_revision(self) -> int:
        """The log holds every event with a revision above this; reads at or after it work."""

    def get(self, key: str) -> JSON | None:
        """The current object at ``key``, or None.

        The memory store returns the stored dict itself (no copy): never mutate it.
        """

    def list(
        self,
        prefix: str,
        *,
        at_revision: int | None = None,
        start_after: str | None = None,
        limit: int | None = None,
    ) -> tuple[list[tuple[str, JSON]], int, bool]:
        """Objects under ``prefix`` in key order as of ``at_revision`` (default: now).

        Returns ``(items, revision, more)``: the page (keys > ``start_after``, at most
        ``limit``), the revision the snapshot was read at, and whether more keys follow.
        ``limit`` None or 0 means no limit (as Kubernetes' ``limit=0``); negative raises
        ``ValueError``. To page, pass the returned revision as ``at_revision`` and the
        last key as ``start_after``: later writes do not show in later pages.
        Raises ``Compacted`` if ``at_revision`` < ``compacted_revision``,
        ``FutureRevision`` if it is > ``revision``.
        """

    def count(self, prefix: str, *, start_after: str | None = None) -> int:
        """How many objects are under ``prefix`` now (only keys > ``start_after`` if given)."""

    def create(self, key: str, obj: JSON) -> JSON:
        """Store a new object; returns it with its resourceVersion.

        Raises ``KeyExists``, or ``UnstorableObject`` (see ``boundary``).
        """

    def update(self, key: str, obj: JSON, expected_revision: int | None = None) -> JSON:
        """Replace the object (optionally only if its revision matches).

        Raises ``KeyNotFound``, ``RevisionConflict`` or ``UnstorableObject``.
        """

    def delete(self, key: str, expected_revision: int | None = None) -> JSON:
        """Remove the object; returns its last state stamped with the deletion's revision.

        Raises ``KeyNotFound`` or ``RevisionConflict``.
        """

    def events_since(self, prefix: str, revision: int) -> builtins.list[Event]:
        """Logged events under ``prefix`` with revision > ``revision``, in order.

        Raises ``Compacted`` if ``revision`` < ``compacted_revision``. A ``revision`` at
        or above the current one gives ``[]`` (no error: the caller decides whether a
        future revision is acceptable). ADDED events have ``prev`` None; MODIFIED and
        DELETED carry the object as it was before the write.
        """

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call ``fn`` synchronously after each commit; returns an unsubscribe function.

        Events reach subscribers in revision order, each event every subscriber before
        the next. ``fn`` runs with the store's lock held: keep it short and never block
        on another thread that uses the store. A write made inside ``fn`` commits at
        once, but its own event is delivered after the current one (so that nested write
        returns before its event is delivered). An exception from ``fn`` is logged and
        does not affect the write or the other subscribers. Unsubscribing twice is fine.
        """

    def compact(self, revision: int) -> None:
        """Drop log entries at or below ``revision`` (current state is kept).

        Afterwards ``compacted_revision == revision``: reads at ``revision`` still work,
        older ones raise ``Compacted``. A ``revision`` at or below ``compacted_revision``
        is a no-op; one above ``revision`` (the property) raises ``FutureRevision``.
        """

    def compact_by_policy(self) -> int:
        """Apply the store's retention policy; returns ``compacted_revision`` afterwards.

        The policy comes from the constructor: keep at most ``retain_events`` events
        (default 100,000) and none committed more than ``retain_seconds`` ago (default
        3600); None disables either limit. The server calls this periodically. The one
        bound a store applies on its own, at every commit, is ``retain_bytes``: the
        history's encoded size (see each store).
        """

    def stats(self) -> StoreStats:
        """Current sizes and compaction counters; cheap (no scan), safe from any thread."""

    def close(self) -> None:
        """Release files and connections; later calls raise ``StoreClosed``.

        Closing an already closed store is a no-op.
        """
