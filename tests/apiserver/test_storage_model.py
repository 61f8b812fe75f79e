"""Both stores against a deliberately naive model, driven by a hypothesis state machine.

The model keeps the whole history as a list and recomputes every answer from it (replay
from revision 0), so it shares no code or cleverness with the stores. Every step runs
the same operation on the memory store, the SQLite store and the model, and compares
results, errors, subscriber deliveries and (as invariants) the full current state.
The SQLite store is also closed and reopened at random points.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kubewerk.apiserver.storage import (
    Compacted,
    Event,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    MemoryStore,
    RevisionConflict,
    SQLiteStore,
    Store,
)

# few keys, so that writes often hit existing objects
KEYS = [
    "/core/configmaps/a/x",
    "/core/configmaps/a/x2",
    "/core/configmaps/b/x",
    "/ex.com/widgets//w",
]
PREFIXES = [
    "",
    "/core/",
    "/core/configmaps/",
    "/core/configmaps/a/",
    "/core/configmaps/a/x",
    "/ex.com/",
    "/none/",
]
RETAIN_EVENTS = 12
RETAIN_SECONDS = 30.0


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rec:
    """One model log entry."""

    type: str
    key: str
    rev: int
    obj: dict[str, Any]
    prev: dict[str, Any] | None
    ts: float


def stamped(obj: dict[str, Any], rev: int) -> dict[str, Any]:
    return {**obj, "metadata": {**obj.get("metadata", {}), "resourceVersion": str(rev)}}


class Model:
    def __init__(self) -> None:
        self.log: list[Rec] = []
        self.compacted = 0

    @property
    def rev(self) -> int:
        return len(self.log)

    def state_at(self, rev: int) -> dict[str, dict[str, Any]]:
        state: dict[str, dict[str, Any]] = {}
        for r in self.log[:rev]:
            if r.type == "DELETED":
                del state[r.key]
            else:
                state[r.key] = r.obj
        return state

    def write(self, type_: str, key: str, obj: dict[str, Any], ts: float) -> Rec:
        prev = self.state_at(self.rev).get(key)
        rec = Rec(type_, key, self.rev + 1, stamped(obj, self.rev + 1), prev, ts)
        self.log.append(rec)
        return rec


def outcome(fn: Any, *args: Any, **kw: Any) -> tuple[str, Any]:
    """A call's result or the storage error it raised, in a comparable form."""
    try:
        return "ok", fn(*args, **kw)
    except (KeyExists, KeyNotFound, FutureRevision) as e:
        return type(e).__name__, None
    except RevisionConflict as e:
        return "RevisionConflict", e.current
    except Compacted as e:
        return "Compacted", (e.requested, e.compacted)


def ev_tuple(e: Event | Rec) -> tuple[Any, ...]:
    if isinstance(e, Rec):
        return (e.type, e.key, e.rev, e.obj, e.prev)
    return (e.type, e.key, e.revision, e.obj, e.prev)


class StoresVsModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="kw-model-"))
        self.clock = Clock()
        self.model = Model()
        self.delivered: dict[str, list[Event]] = {"memory": [], "sqlite": []}
        self.mem = MemoryStore(
            retain_events=RETAIN_EVENTS, retain_seconds=RETAIN_SECONDS, clock=self.clock
        )
        self.mem.subscribe(self.delivered["memory"].append)
        self.sql = self._open_sqlite()

    def _open_sqlite(self) -> SQLiteStore:
        s = SQLiteStore(
            self.dir / "s.db",
            retain_events=RETAIN_EVENTS,
            retain_seconds=RETAIN_SECONDS,
            clock=self.clock,
        )
        s.subscribe(self.delivered["sqlite"].append)
        return s

    def teardown(self) -> None:
        self.mem.close()
        self.sql.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def stores(self) -> list[Store]:
        return [self.mem, self.sql]

    def both(self, fn_name: str, *args: Any, **kw: Any) -> tuple[str, Any]:
        results = [outcome(getattr(s, fn_name), *args, **kw) for s in self.stores]
        assert results[0] == results[1], (fn_name, args, kw, results)
        return results[0]

    @initialize()
    def start(self) -> None:
        assert self.mem.revision == self.sql.revision == 0

    # -- writes ----------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), v=st.integers(0, 9))
    def create(self, key: str, v: int) -> None:
        obj = {"metadata": {"name": key.rsplit("/", 1)[1]}, "v": v}
        got = self.both("create", key, obj)
        if key in self.model.state_at(self.model.rev):
            assert got == ("KeyExists", None)
        else:
            rec = self.model.write("ADDED", key, obj, self.clock.now)
            assert got == ("ok", rec.obj)

    @rule(
        key=st.sampled_from(KEYS),
        v=st.integers(0, 9),
        expect=st.sampled_from(["none", "current", "stale"]),
    )
    def update(self, key: str, v: int, expect: str) -> None:
        cur = self.model.state_at(self.model.rev).get(key)
        expected = self._expected(cur, expect)
        obj = {"metadata": {"name": "changed"}, "v": v, "spec": {"n": [v]}}
        got = self.both("update", key, obj, expected)
        if cur is None:
            assert got == ("KeyNotFound", None)
        elif expect == "stale":
            assert got == ("RevisionConflict", cur)
        else:
            rec = self.model.write("MODIFIED", key, obj, self.clock.now)
            assert got == ("ok", rec.obj)

    @rule(key=st.sampled_from(KEYS), expect=st.sampled_from(["none", "current", "stale"]))
    def delete(self, key: str, expect: str) -> None:
        cur = self.model.state_at(self.model.rev).get(key)
        expected = self._expected(cur, expect)
        got = self.both("delete", key, expected)
        if cur is None:
            assert got == ("KeyNotFound", None)
        elif expect == "stale":
            assert got == ("RevisionConflict", cur)
        else:
            rec = self.model.write("DELETED", key, cur, self.clock.now)
            assert got == ("ok", rec.obj)

    @staticmethod
    def _expected(cur: dict[str, Any] | None, expect: str) -> int | None:
        if expect == "none" or cur is None:
            return None if expect == "none" else 1
        r = int(cur["metadata"]["resourceVersion"])
        return r if expect == "current" else r + 1

    # -- reads -----------------------------------------------------------------------

    def pick_revision(self, where: str, n: int) -> int:
        """A revision in one of the interesting ranges relative to the model's log."""
        m = self.model
        if where == "kept":  # readable: compacted .. current
            return m.compacted + n % (m.rev - m.compacted + 1)
        if where == "oldest":  # the oldest readable revision
            return m.compacted
        if where == "recent":  # just below the current revision
            return max(m.rev - 1 - n % 3, 0)
        if where == "compacted":
            return m.compacted - 1 - n % 3
        return m.rev + 1 + n % 3  # future

    @rule(
        prefix=st.sampled_from(PREFIXES),
        where=st.sampled_from(["now", "kept", "kept", "oldest", "compacted", "future"]),
        n=st.integers(0, 1000),
        limit=st.one_of(st.none(), st.integers(1, 4)),
        start_after=st.one_of(st.none(), st.sampled_from([*KEYS, "/core/configmaps/a/"])),
    )
    def list(
        self, prefix: str, where: str, n: int, limit: int | None, start_after: str | None
    ) -> None:
        at = None if where == "now" else self.pick_revision(where, n)
        got = self.both("list", prefix, at_revision=at, start_after=start_after, limit=limit)
        m = self.model
        rev = m.rev if at is None else at
        if rev > m.rev:
            assert got == ("FutureRevision", None)
            return
        if rev < m.compacted:
            assert got == ("Compacted", (rev, m.compacted))
            return
        items = sorted(
            (k, o)
            for k, o in m.state_at(rev).items()
            if k.startswith(prefix) and (start_after is None or k > start_after)
        )
        more = limit is not None and len(items) > limit
        assert got == ("ok", (items[:limit] if limit else items, rev, more))

    @rule(
        prefix=st.sampled_from(PREFIXES),
        where=st.sampled_from(["kept", "oldest", "compacted", "future"]),
        n=st.integers(0, 1000),
    )
    def events_since(self, prefix: str, where: str, n: int) -> None:
        since = self.pick_revision(where, n)
        got = self.both("events_since", prefix, since)
        if since < self.model.compacted:
            assert got == ("Compacted", (since, self.model.compacted))
            return
        assert got[0] == "ok"
        want = [ev_tuple(r) for r in self.model.log[max(since, 0) :] if r.key.startswith(prefix)]
        assert [ev_tuple(e) for e in got[1]] == want

    @rule(prefix=st.sampled_from(PREFIXES))
    def count(self, prefix: str) -> None:
        n = sum(k.startswith(prefix) for k in self.model.state_at(self.model.rev))
        assert self.both("count", prefix) == ("ok", n)

    # -- compaction, time, restart ----------------------------------------------------

    @rule(where=st.sampled_from(["kept", "recent", "compacted", "future"]), n=st.integers(0, 1000))
    def compact(self, where: str, n: int) -> None:
        target = self.pick_revision(where, n)
        got = self.both("compact", target)
        if target > self.model.rev:
            assert got == ("FutureRevision", None)
        else:
            assert got == ("ok", None)
            self.model.compacted = max(self.model.compacted, target)

    @rule()
    def compact_by_policy(self) -> None:
        m = self.model
        target = max(m.compacted, m.rev - RETAIN_EVENTS)
        cutoff = self.clock.now - RETAIN_SECONDS
        old = [r.rev for r in m.log if r.ts < cutoff]
        if old:
            target = max(target, old[-1])
        m.compacted = target
        assert self.both("compact_by_policy") == ("ok", target)

    @rule(seconds=st.sampled_from([1.0, 10.0, 29.0, 31.0]))
    def tick(self, seconds: float) -> None:
        self.clock.now += seconds

    @rule()
    def reopen_sqlite(self) -> None:
        self.sql.close()
        self.sql = self._open_sqlite()

    # -- invariants -------------------------------------------------------------------

    @invariant()
    def same_state(self) -> None:
        m = self.model
        for s in self.stores:
            assert s.revision == m.rev
            assert s.compacted_revision == m.compacted
        want = sorted(m.state_at(m.rev).items())
        assert self.mem.list("") == (want, m.rev, False)
        assert self.sql.list("") == (want, m.rev, False)
        for k in KEYS:
            assert self.mem.get(k) == self.sql.get(k) == m.state_at(m.rev).get(k)

    @invariant()
    def oldest_readable_revision_is_complete(self) -> None:
        """The full log above the compacted revision, and the snapshot at it."""
        m = self.model
        want_events = [ev_tuple(r) for r in m.log[m.compacted :]]
        want_items = (sorted(m.state_at(m.compacted).items()), m.compacted, False)
        for s in self.stores:
            assert [ev_tuple(e) for e in s.events_since("", m.compacted)] == want_events
            assert s.list("", at_revision=m.compacted) == want_items

    @invariant()
    def subscribers_saw_every_write_in_order(self) -> None:
        want = [ev_tuple(r) for r in self.model.log]
        for name in ("memory", "sqlite"):
            assert [ev_tuple(e) for e in self.delivered[name]] == want


StoresVsModel.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_stores_match_the_model = StoresVsModel.TestCase
