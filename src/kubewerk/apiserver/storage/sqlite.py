"""The SQLite store: current state and change log in one SQLite file (stdlib ``sqlite3``).

Tables (etcd's layout: every version is stored once, in the log):

- ``log(rev PRIMARY KEY, ts, type, key, value, prev_rev)``: one row per committed write:
  the object after the write (orjson bytes; for DELETED the last state stamped with the
  deletion's revision), the revision of the version it replaced (``prev_rev``, NULL for
  ADDED) and its commit time (seconds, kept monotonic) for age-based compaction;
- ``kv(key PRIMARY KEY, rev)``: the current state, a key -> revision index; a read is a
  key lookup in ``kv`` plus a rowid lookup in ``log`` and never scans the log;
- ``kubewerk_meta(name, value)``: schema version and the compacted revision.

Compaction to revision C deletes the log rows at or below C except those still needed:
current versions (referenced by ``kv``) and versions that a row above C replaced
(its ``prev_rev``). So ``value`` is written once per write (an update writes one object
and a small index row, not the object twice), and every event above C can name its
previous object. Rows kept below C are never returned as events.

Every write is one transaction touching ``kv`` and ``log``. The current revision is not
stored separately: it is the newest ``log.rev`` (or the compacted revision if greater),
so revisions continue after a restart and a compaction survives it.

Durability: WAL journal. With the default ``synchronous=NORMAL`` a committed write is in
the WAL file when the call returns, so it survives ``kill -9`` of the process (not a
power loss; the newest commits may then be lost, never the file's consistency). With
``durable=True`` (``synchronous=FULL``) each commit is fsynced before the call returns
and also survives a power loss, at the cost of one fsync per write.

The file is opened in SQLite's EXCLUSIVE locking mode: one store (one process) owns it
while open, since the revision counter lives in that process. A second opener gets a
``StoreOpenError`` saying the file is in use.

One connection, guarded by a re-entrant lock: safe to call from the event-loop thread
and from other threads (calls are serialised).

Bounds: every committed object passes the storage boundary (``boundary``). The history
is on disk, but a watch that resumes from an old revision decodes the events it replays
into memory, so it is bounded in encoded bytes by ``retain_bytes`` as in the memory store
(same default, checked at every commit, compacting the oldest events to 15/16 of the
bound); that also bounds the file's growth between the periodic count/age compactions.

Encryption at rest: with ``encryption`` (an ``EncryptionConfig``, see ``encryption``) the
values of the resources it names are stored transformed by their first provider
(``k8s:enc:aesgcm:v1:NAME:...``), in ``log.value``, every version of them: the file holds
no plaintext of those objects. Reads decrypt with any provider of the chain; a value none
opens raises ``UndecryptableValue`` (kube-apiserver's words). At open, every stored value
not written by its resource's first provider (stale after a key rotation, or plaintext
written before encryption was turned on) is rewritten with it, in batches, in place (same
revision): so rotating is "add the new key first, restart, drop the old key". Values no
provider can open are left as they are (and logged). Sizes in ``stats()`` and the
``retain_bytes`` bound count stored bytes (ciphertext with its prefix, nonce and tag).

Files: the database file and its ``-wal``/``-shm`` files are created readable by their
owner only (0600, whatever the umask) and a missing parent directory is created 0700 by
``open_store``; an existing file's mode is left as it is, with a warning when group or
others can read it.
"""

from __future__ import annotations

import builtins
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import orjson

from ._common import Fanout, check_limit, check_read_revision, merge_snapshot, prefix_end, stamp
from .base import (
    JSON,
    Compacted,
    Event,
    EventType,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    StorageError,
    StoreClosed,
    StoreOpenError,
    StoreStats,
    Subscriber,
)
from .boundary import EMBED_HEADROOM, encode_storable
from .encryption import (
    ENCRYPTED_PREFIX,
    IDENTITY_READ,
    EncryptionConfig,
    UndecryptableValue,
    open_unmatched,
)
from .memory import DEFAULT_RETAIN_BYTES

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

log = logging.getLogger("kubewerk.apiserver.storage")

SCHEMA_VERSION: Final = 2  # 1: the first layout (values in kv, prev blobs in log)

_TYPES: Final[tuple[EventType, EventType, EventType]] = ("ADDED", "MODIFIED", "DELETED")
_ADDED, _MODIFIED, _DELETED = 0, 1, 2

_SCHEMA: Final = (
    "CREATE TABLE kubewerk_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "CREATE TABLE kv (key TEXT PRIMARY KEY, rev INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE log (rev INTEGER PRIMARY KEY, ts REAL NOT NULL, type INTEGER NOT NULL,"
    " key TEXT NOT NULL, value BLOB NOT NULL, prev_rev INTEGER)",
)
_CURRENT: Final = "kv JOIN log ON log.rev = kv.rev"

_loads = orjson.loads
_dumps = orjson.dumps


def _range_sql(col: str, prefix: str, lower: str | None = None) -> tuple[str, list[object]]:
    """A ``WHERE`` fragment selecting ``col`` under ``prefix`` (and above ``lower``)."""
    params: list[object]
    if lower is None:
        sql, params = f"{col} >= ?", [prefix]
    else:
        sql, params = f"{col} > ?", [lower]
    end = prefix_end(prefix)
    if end is not None:
        sql += f" AND {col} < ?"
        params.append(end)
    return sql, params


def _create_private(path: str) -> None:
    """Create ``path`` empty with mode 0600 unless it exists; warn if an existing one is shared.

    SQLite treats an empty file as an empty database and creates the ``-wal`` (and, when
    it uses one, ``-shm``) file with the database file's mode, so all of them are private
    from their first byte; the umask can only narrow 0600. A file that exists keeps its
    mode (it may be shared on purpose); when group or others have access, say so.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        _warn_if_shared(path)
        return
    except OSError:
        return  # sqlite3.connect fails on the same path and says why
    os.close(fd)


def _warn_if_shared(path: str) -> None:
    """Log a warning for each of the store's files that group or others may access."""
    for name in (path, path + "-wal", path + "-shm"):
        try:
            mode = os.stat(name).st_mode & 0o777
        except OSError:
            continue
        if mode & 0o077:
            log.warning(
                "SQLite store file %s has mode %04o: other users may read it, and it holds "
                "every stored object, Secrets included; kubewerk leaves an existing file's "
                "mode as it is (chmod 600 %s to make it private)",
                name,
                mode,
                name,
            )


class SQLiteStore:
    """A ``Store`` in one SQLite file; see the module docstring for layout and guarantees.

    ``path`` may be ``":memory:"`` (a private in-memory database, for tests). Raises
    ``StoreOpenError`` if the file cannot be opened, is not an SQLite database, belongs
    to something else, or is held by another process.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        durable: bool = False,
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
        self.path = str(path)
        self.durable = durable
        self.retain_events = retain_events
        self.retain_seconds = retain_seconds
        self.retain_bytes = retain_bytes
        self._objects = self._object_bytes = 0
        self._history_events = self._history_bytes = 0
        self._compactions = self._compacted_events = self._compacted_bytes = 0
        self._clock = clock
        self._encryption = encryption
        self._lock = threading.RLock()
        self._fanout = Fanout()
        self._conn: sqlite3.Connection | None = None
        if self.path not in ("", ":memory:"):
            _create_private(self.path)
        try:
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=0.5
            )
        except sqlite3.Error as e:
            raise StoreOpenError(f"cannot open SQLite store {self.path}: {e}") from e
        try:
            self._rev, self._compacted, self._last_time = self._open(conn)
        except StoreOpenError:
            conn.close()
            raise
        except sqlite3.Error as e:
            conn.close()
            msg = str(e)
            if "locked" in msg or "busy" in msg:
                raise StoreOpenError(
                    f"cannot open SQLite store {self.path}: it is in use by another process ({msg})"
                ) from e
            raise StoreOpenError(f"cannot open SQLite store {self.path}: {msg}") from e
        self._conn = conn
        try:
            self._check_readable()
        except StorageError:
            self.close()
            raise

    def _open(self, conn: sqlite3.Connection) -> tuple[int, int, float]:
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal" and self.path != ":memory:":
            raise StoreOpenError(
                f"cannot open SQLite store {self.path}: WAL journal mode unavailable ({mode})"
            )
        conn.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if not tables:
                for stmt in _SCHEMA:
                    conn.execute(stmt)
                conn.executemany(
                    "INSERT INTO kubewerk_meta(name, value) VALUES (?, ?)",
                    [("schema_version", SCHEMA_VERSION), ("compacted", 0)],
                )
            elif not {"kubewerk_meta", "kv", "log"} <= tables:
                raise StoreOpenError(
                    f"cannot open SQLite store {self.path}: it is an SQLite database but not "
                    f"a kubewerk store (tables: {', '.join(sorted(tables))})"
                )
            meta = dict(conn.execute("SELECT name, value FROM kubewerk_meta").fetchall())
            if meta.get("schema_version") != SCHEMA_VERSION:
                raise StoreOpenError(
                    f"cannot open SQLite store {self.path}: schema version "
                    f"{meta.get('schema_version')!r} is not the supported {SCHEMA_VERSION}"
                )
            compacted = int(meta["compacted"])
            newest = conn.execute("SELECT rev, ts FROM log ORDER BY rev DESC LIMIT 1").fetchone()
            self._count_sizes(conn, compacted)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if newest is None:
            return compacted, compacted, float("-inf")
        return max(int(newest[0]), compacted), compacted, float(newest[1])

    def _count_sizes(self, conn: sqlite3.Connection, compacted: int) -> None:
        """Count the stored objects and history and their stored bytes (at open)."""
        # length() of a BLOB reads the record header, not the value
        self._objects, self._object_bytes = conn.execute(
            f"SELECT count(*), coalesce(sum(length(log.value)), 0) FROM {_CURRENT}"
        ).fetchone()
        self._history_events, self._history_bytes = conn.execute(
            "SELECT count(*), coalesce(sum(length(value)), 0) FROM log WHERE rev > ?",
            (compacted,),
        ).fetchone()

    # -- encryption at rest ------------------------------------------------------------

    def _seal(self, key: str, blob: bytes | memoryview) -> bytes | memoryview:
        """What is stored for ``blob`` (the object's JSON) under ``key``."""
        enc = self._encryption
        if enc is None:
            return blob
        sealer = enc.sealer_for(key)
        if sealer is None or sealer.writes_plaintext:
            return blob
        return sealer.seal(key, bytes(blob))

    def _decode(self, key: str, raw: bytes) -> JSON:
        """The object stored as ``raw`` under ``key``; ``UndecryptableValue`` if unreadable."""
        enc = self._encryption
        if enc is None:
            try:
                obj: JSON = _loads(raw)
            except orjson.JSONDecodeError:
                open_unmatched(key, raw)  # raises for an encrypted value
                raise
            return obj
        sealer = enc.sealer_for(key)
        plain = open_unmatched(key, raw) if sealer is None else sealer.open(key, raw)[0]
        obj = _loads(plain)
        return obj

    def _check_readable(self) -> None:
        """At open: rewrite stale values (with a configuration), and refuse a file that
        holds values the configuration cannot read, with ``StoreOpenError``.

        The server reads every stored object when it starts (garbage-collector index), so
        a value it cannot decrypt would fail it later with less context; this names the
        first such key, the cause in kube-apiserver's words and what to do.
        """
        if self._encryption is not None:
            _, unreadable, first = self._rewrite(500)
        else:
            row = (
                self._connection()
                .execute(
                    "SELECT key FROM log WHERE substr(value, 1, ?) = ? LIMIT 1",
                    (len(ENCRYPTED_PREFIX), ENCRYPTED_PREFIX),
                )
                .fetchone()
            )
            unreadable = 0 if row is None else 1
            first = None if row is None else str(UndecryptableValue(row[0], IDENTITY_READ))
        if unreadable:
            raise StoreOpenError(
                f"cannot open SQLite store {self.path}: it holds encrypted values the "
                f"encryption configuration cannot read ({first}); give the encryption "
                "provider configuration the provider and key that wrote them"
            )

    def rewrite_stale(self, batch: int = 500) -> int:
        """Rewrite every stored value (all versions) that its resource's first provider
        did not write, with that provider; returns how many were rewritten.

        Run at open when the store has an encryption configuration. A value no provider
        opens is left as it is and logged (reading it raises ``UndecryptableValue``). Each
        batch of ``batch`` rows is one transaction; revisions do not change. Values the
        first provider wrote are not rewritten; the first of them per resource is opened,
        so a key replaced under its old name is found here.
        """
        return self._rewrite(batch)[0]

    def _rewrite(self, batch: int) -> tuple[int, int, str | None]:
        """``rewrite_stale``; returns (rewritten, unreadable, the first unreadable's error)."""
        enc = self._encryption
        if enc is None:
            return 0, 0, None
        rewritten = unreadable = 0
        first: str | None = None
        verified: set[int] = set()
        after = -1
        with self._lock:
            conn = self._connection()
            while True:
                rows = conn.execute(
                    "SELECT rev, key, value FROM log WHERE rev > ? ORDER BY rev LIMIT ?",
                    (after, batch),
                ).fetchall()
                if not rows:
                    break
                after = rows[-1][0]
                updates: builtins.list[tuple[bytes | memoryview, int]] = []
                for rev, key, raw in rows:
                    sealer = enc.sealer_for(key)
                    if sealer is None:
                        if raw.startswith(ENCRYPTED_PREFIX):  # no rule names it any more
                            unreadable += 1
                            first = first or str(UndecryptableValue(key, IDENTITY_READ))
                        continue
                    prefix = sealer.write_prefix
                    if prefix and raw.startswith(prefix):
                        # current: open one value per resource to prove the key is right
                        # (a key replaced under the same name fails here, not at a read)
                        if id(sealer) not in verified:
                            try:
                                sealer.open(key, raw)
                                verified.add(id(sealer))
                            except UndecryptableValue as e:
                                unreadable += 1
                                first = first or str(e)
                        continue
                    if not prefix and not raw.startswith(ENCRYPTED_PREFIX):
                        continue
                    try:
                        plain, _ = sealer.open(key, raw)
                    except UndecryptableValue as e:
                        unreadable += 1
                        first = first or str(e)
                        if unreadable <= 5:
                            log.warning(
                                "SQLite store %s: cannot rewrite revision %d: %s", self.path, rev, e
                            )
                        continue
                    updates.append((sealer.seal(key, plain), rev))
                if updates:
                    with self._transaction(conn, timed=False):
                        conn.executemany("UPDATE log SET value = ? WHERE rev = ?", updates)
                    rewritten += len(updates)
            if rewritten:
                self._count_sizes(conn, self._compacted)
                log.info(
                    "SQLite store %s: rewrote %d stored values with the first encryption provider",
                    self.path,
                    rewritten,
                )
            if unreadable:
                log.warning(
                    "SQLite store %s: %d stored values cannot be opened by any configured "
                    "encryption provider (reading them fails)",
                    self.path,
                    unreadable,
                )
        return rewritten, unreadable, first

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
        """The current object at ``key`` (freshly decoded), or None."""
        with self._lock:
            row = (
                self._connection()
                .execute(f"SELECT log.value FROM {_CURRENT} WHERE kv.key = ?", (key,))
                .fetchone()
            )
        return None if row is None else self._decode(key, row[0])

    def list(
        self,
        prefix: str,
        *,
        at_revision: int | None = None,
        start_after: str | None = None,
        limit: int | None = None,
    ) -> tuple[builtins.list[tuple[str, JSON]], int, bool]:
        """Objects under ``prefix`` in key order as of ``at_revision``; see ``Store.list``.

        Cost: one index range scan of the page for the current revision; for an older
        revision add a scan of the log since it to roll the changed keys back.
        """
        limit = check_limit(limit)
        with self._lock:
            conn = self._connection()
            current = self._rev
            at = current if at_revision is None else at_revision
            check_read_revision(at, self._compacted, current)
            lower = start_after if start_after is not None and start_after >= prefix else None
            where, params = _range_sql("kv.key", prefix, lower)
            changed: dict[str, bytes | None] = {}
            if at != current:
                # each key written since `at`: its value then is the version its first
                # write after `at` replaced (kept by compaction, see the module docstring)
                lwhere, lparams = _range_sql("key", prefix)
                changed = dict(
                    conn.execute(
                        "SELECT f.key, p.value FROM (SELECT key, prev_rev, min(rev) FROM log"
                        f" WHERE rev > ? AND {lwhere} GROUP BY key) AS f"
                        " LEFT JOIN log AS p ON p.rev = f.prev_rev",
                        [at, *lparams],
                    ).fetchall()
                )
            n = -1 if limit is None else limit + 1 + len(changed)
            rows: builtins.list[tuple[str, bytes]] = conn.execute(
                f"SELECT kv.key, log.value FROM {_CURRENT} WHERE {where} ORDER BY kv.key LIMIT ?",
                [*params, n],
            ).fetchall()
        if changed:
            page, more = merge_snapshot(prefix, start_after, limit, rows, changed)
        else:
            more = limit is not None and len(rows) > limit
            page = rows[:limit] if more else rows
        if self._encryption is None:
            try:
                return [(k, _loads(v)) for k, v in page], at, more
            except orjson.JSONDecodeError:
                pass  # find the value and say why (an encrypted one without configuration)
        decode = self._decode
        return [(k, decode(k, v)) for k, v in page], at, more

    def count(self, prefix: str, *, start_after: str | None = None) -> int:
        """How many objects are under ``prefix`` now (keys > ``start_after`` if given)."""
        lower = start_after if start_after is not None and start_after >= prefix else None
        where, params = _range_sql("key", prefix, lower)
        with self._lock:
            row = (
                self._connection()
                .execute(f"SELECT count(*) FROM kv WHERE {where}", params)
                .fetchone()
            )
        return int(row[0])

    def events_since(self, prefix: str, revision: int) -> builtins.list[Event]:
        """Logged events under ``prefix`` with revision > ``revision``, in revision order.

        Raises ``Compacted`` if ``revision`` < ``compacted_revision``; a ``revision`` at or
        above the current one gives an empty list.
        """
        where, params = _range_sql("l.key", prefix)
        with self._lock:
            conn = self._connection()
            if revision < self._compacted:
                raise Compacted(revision, self._compacted)
            if revision >= self._rev:
                return []
            rows = conn.execute(
                "SELECT l.rev, l.type, l.key, l.value, p.value FROM log AS l"
                " LEFT JOIN log AS p ON p.rev = l.prev_rev"
                f" WHERE l.rev > ? AND {where} ORDER BY l.rev",
                [revision, *params],
            ).fetchall()
        if self._encryption is None:
            try:
                return [
                    Event(_TYPES[t], k, rev, _loads(v), None if p is None else _loads(p), len(v))
                    for rev, t, k, v, p in rows
                ]
            except orjson.JSONDecodeError:
                pass  # find the value and say why (an encrypted one without configuration)
        decode = self._decode
        out: builtins.list[Event] = []
        for rev, t, k, v, p in rows:
            obj = decode(k, v)
            out.append(
                Event(_TYPES[t], k, rev, obj, None if p is None else decode(k, p), len(_dumps(obj)))
            )
        return out

    # -- writes ------------------------------------------------------------------------

    def create(self, key: str, obj: JSON) -> JSON:
        """Store a new object; returns it with its resourceVersion. Raises ``KeyExists``."""
        with self._lock:
            conn = self._connection()
            rev = self._rev + 1
            new = stamp(obj, rev)
            wrapped, size = encode_storable(key, new)
            blob = self._seal(key, memoryview(wrapped)[EMBED_HEADROOM : EMBED_HEADROOM + size])
            try:
                with self._transaction(conn) as now:
                    conn.execute("INSERT INTO kv(key, rev) VALUES (?, ?)", (key, rev))
                    conn.execute(
                        "INSERT INTO log(rev, ts, type, key, value, prev_rev)"
                        " VALUES (?, ?, 0, ?, ?, NULL)",
                        (rev, now, key, blob),
                    )
            except sqlite3.IntegrityError as e:
                if "kv.key" in str(e):
                    raise KeyExists(f"key {key!r} already exists") from None
                raise StorageError(f"SQLite store write failed: {e}") from e
            self._rev = rev
            self._objects += 1
            self._object_bytes += len(blob)
            self._logged(len(blob))
            self._fanout.publish(Event("ADDED", key, rev, new, None, size))
            return new

    def update(self, key: str, obj: JSON, expected_revision: int | None = None) -> JSON:
        """Replace the object (only if its revision is ``expected_revision``, when given).

        Raises ``KeyNotFound`` or ``RevisionConflict``.
        """
        with self._lock:
            conn = self._connection()
            prev_rev, prev_blob = self._current_for_write(conn, key, expected_revision)
            prev = self._decode(key, prev_blob)
            rev = self._rev + 1
            new = stamp(obj, rev)
            wrapped, size = encode_storable(key, new)
            blob = self._seal(key, memoryview(wrapped)[EMBED_HEADROOM : EMBED_HEADROOM + size])
            with self._transaction(conn) as now:
                conn.execute("UPDATE kv SET rev = ? WHERE key = ?", (rev, key))
                conn.execute(
                    "INSERT INTO log(rev, ts, type, key, value, prev_rev)"
                    " VALUES (?, ?, 1, ?, ?, ?)",
                    (rev, now, key, blob, prev_rev),
                )
            self._rev = rev
            self._object_bytes += len(blob) - len(prev_blob)
            self._logged(len(blob))
            self._fanout.publish(Event("MODIFIED", key, rev, new, prev, size))
            return new

    def delete(self, key: str, expected_revision: int | None = None) -> JSON:
        """Remove the object; returns its last state stamped with the deletion's revision.

        Raises ``KeyNotFound`` or ``RevisionConflict``.
        """
        with self._lock:
            conn = self._connection()
            prev_rev, prev_blob = self._current_for_write(conn, key, expected_revision)
            prev = self._decode(key, prev_blob)
            rev = self._rev + 1
            last = stamp(prev, rev)
            plain = _dumps(last)
            blob = self._seal(key, plain)
            with self._transaction(conn) as now:
                conn.execute("DELETE FROM kv WHERE key = ?", (key,))
                conn.execute(
                    "INSERT INTO log(rev, ts, type, key, value, prev_rev)"
                    " VALUES (?, ?, 2, ?, ?, ?)",
                    (rev, now, key, blob, prev_rev),
                )
            self._rev = rev
            self._objects -= 1
            self._object_bytes -= len(prev_blob)
            self._logged(len(blob))
            self._fanout.publish(Event("DELETED", key, rev, last, prev, len(plain)))
            return last

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call ``fn`` synchronously after each commit, in revision order.

        Returns an idempotent unsubscribe function. See ``Fanout`` for re-entrancy.
        """
        self._connection()
        return self._fanout.subscribe(fn, self._lock)

    # -- compaction --------------------------------------------------------------------

    def compact(self, revision: int) -> None:
        """Drop log entries at or below ``revision`` (current state is kept); persistent.

        A ``revision`` at or below ``compacted_revision`` is a no-op; one above the
        current revision raises ``FutureRevision``.
        """
        with self._lock:
            conn = self._connection()
            if revision > self._rev:
                raise FutureRevision(
                    f"cannot compact to revision {revision}: current revision is {self._rev}"
                )
            if revision <= self._compacted:
                return
            old = self._compacted
            with self._transaction(conn, timed=False):
                events, nbytes = conn.execute(
                    "SELECT count(*), coalesce(sum(length(value)), 0) FROM log"
                    " WHERE rev > ? AND rev <= ?",
                    (old, revision),
                ).fetchone()
                conn.execute(
                    "DELETE FROM log WHERE rev <= ?1"
                    " AND rev NOT IN (SELECT rev FROM kv WHERE rev <= ?1)"
                    " AND rev NOT IN (SELECT prev_rev FROM log"
                    "                 WHERE rev > ?1 AND prev_rev <= ?1)",
                    (revision,),
                )
                conn.execute(
                    "UPDATE kubewerk_meta SET value = ? WHERE name = 'compacted'", (revision,)
                )
            self._compacted = revision
            self._history_events -= events
            self._history_bytes -= nbytes
            if events:
                self._compactions += 1
                self._compacted_events += events
                self._compacted_bytes += nbytes

    def compact_by_policy(self) -> int:
        """Compact to keep at most ``retain_events`` events, none older than
        ``retain_seconds``; returns the compacted revision afterwards."""
        with self._lock:
            conn = self._connection()
            target = self._compacted
            if self.retain_events is not None:
                target = max(target, self._rev - self.retain_events)
            if self.retain_seconds is not None:
                cutoff = self._clock() - self.retain_seconds
                # commit times are monotonic in revision: binary-search the first kept one
                lo, hi = max(target, self._compacted) + 1, self._rev + 1
                while lo < hi:
                    mid = (lo + hi) // 2
                    ts = conn.execute("SELECT ts FROM log WHERE rev = ?", (mid,)).fetchone()[0]
                    if ts < cutoff:
                        lo = mid + 1
                    else:
                        hi = mid
                target = max(target, lo - 1)
            self.compact(target)
            return self._compacted

    def stats(self) -> StoreStats:
        """Current sizes and compaction counters (counted at open, kept up by every write)."""
        with self._lock:
            return StoreStats(
                revision=self._rev,
                compacted_revision=self._compacted,
                objects=self._objects,
                object_bytes=self._object_bytes,
                history_events=self._history_events,
                history_bytes=self._history_bytes,
                compactions=self._compactions,
                compacted_events=self._compacted_events,
                compacted_bytes=self._compacted_bytes,
            )

    def close(self) -> None:
        """Close the file (checkpointing the WAL); later calls raise ``StoreClosed``.

        Closing again is a no-op.
        """
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- internals ---------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """The open connection; ``StoreClosed`` once the store is closed."""
        conn = self._conn
        if conn is None:
            raise StoreClosed()
        return conn

    def _logged(self, size: int) -> None:
        """Count a committed event of ``size`` bytes; compact if over ``retain_bytes``.

        The write is committed already: a failing compaction is logged, not raised (the
        next commit or the periodic compaction tries again).
        """
        self._history_events += 1
        self._history_bytes += size
        limit = self.retain_bytes
        if limit is None or self._history_bytes <= limit:
            return
        excess = self._history_bytes - (limit - limit // 16)
        conn = self._connection()
        target, dropped = self._compacted, 0
        rows = conn.execute(
            "SELECT rev, length(value) FROM log WHERE rev > ? ORDER BY rev", (self._compacted,)
        )
        for rev, n in rows:
            target, dropped = rev, dropped + n
            if dropped >= excess:
                break
        rows.close()
        try:
            self.compact(target)
        except StorageError:
            log.exception("compaction of SQLite store %s to revision %d failed", self.path, target)

    def _current_for_write(
        self, conn: sqlite3.Connection, key: str, expected_revision: int | None
    ) -> tuple[int, bytes]:
        """The key's current revision and bytes; raises for a missing key or conflict."""
        row = conn.execute(
            f"SELECT kv.rev, log.value FROM {_CURRENT} WHERE kv.key = ?", (key,)
        ).fetchone()
        if row is None:
            raise KeyNotFound(f"key {key!r} not found")
        if expected_revision is not None and row[0] != expected_revision:
            raise RevisionConflict(self._decode(key, row[1]))
        blob: bytes = row[1]
        return int(row[0]), blob

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection, *, timed: bool = True) -> Iterator[float]:
        """One write transaction; yields its commit time (monotonic across commits)."""
        now = self._last_time
        if timed:
            now = max(self._clock(), now)
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield now
            conn.execute("COMMIT")
        except sqlite3.IntegrityError:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        except sqlite3.Error as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StorageError(f"SQLite store write failed: {e}") from e
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._last_time = now
