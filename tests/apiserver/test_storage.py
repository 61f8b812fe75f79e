"""The storage contract (kubewerk.apiserver.storage.base), run against both backends."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

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
    StoreClosed,
    StoreOpenError,
    open_store,
)


class FakeClock:
    """A settable clock for age-based compaction."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


StoreFactory = Callable[..., Store]


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(backend: str, tmp_path: Path) -> Iterator[StoreFactory]:
    """Build stores of the parametrised backend; all are closed at teardown."""
    made: list[Store] = []

    def make(**kw: Any) -> Store:
        s: Store
        if backend == "memory":
            s = MemoryStore(**kw)
        else:
            s = SQLiteStore(tmp_path / f"store{len(made)}.db", **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(make_store: StoreFactory, clock: FakeClock) -> Store:
    return make_store(clock=clock)


def cm(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": dict(data),
    }


def key(name: str, ns: str = "default", resource: str = "configmaps") -> str:
    return f"/core/{resource}/{ns}/{name}"


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def keys_of(items: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [k for k, _ in items]


# -- CRUD -----------------------------------------------------------------------------


def test_empty_store(store: Store) -> None:
    assert store.revision == 0
    assert store.compacted_revision == 0
    assert store.get(key("a")) is None
    assert store.list("/") == ([], 0, False)
    assert store.count("") == 0
    assert store.events_since("", 0) == []


def test_create_stamps_revision_and_leaves_input_alone(store: Store) -> None:
    obj = cm("a", x="1")
    obj["metadata"]["resourceVersion"] = "999"
    created = store.create(key("a"), obj)
    assert obj["metadata"]["resourceVersion"] == "999"  # caller's dict untouched
    assert created["metadata"]["resourceVersion"] == "1"
    assert created["data"] == {"x": "1"}
    assert store.revision == 1
    assert store.get(key("a")) == created
    second = store.create(key("b"), {"kind": "ConfigMap"})  # no metadata at all
    assert second["metadata"] == {"resourceVersion": "2"}


def test_create_existing_key_fails_without_taking_a_revision(store: Store) -> None:
    store.create(key("a"), cm("a"))
    with pytest.raises(KeyExists):
        store.create(key("a"), cm("a", x="2"))
    assert store.revision == 1
    assert store.get(key("a"))["data"] == {}  # type: ignore[index]
    assert store.create(key("b"), cm("b"))["metadata"]["resourceVersion"] == "2"


def test_update(store: Store) -> None:
    a = store.create(key("a"), cm("a", x="1"))
    store.create(key("b"), cm("b"))
    up = store.update(key("a"), cm("a", x="2"), expected_revision=rv(a))
    assert rv(up) == 3 and up["data"] == {"x": "2"}
    assert store.get(key("a")) == up
    up2 = store.update(key("a"), cm("a", x="3"))  # unconditional
    assert rv(up2) == 4


def test_update_conflict_and_missing(store: Store) -> None:
    a = store.create(key("a"), cm("a", x="1"))
    store.update(key("a"), cm("a", x="2"))
    with pytest.raises(RevisionConflict) as exc:
        store.update(key("a"), cm("a", x="stale"), expected_revision=rv(a))
    assert exc.value.current["data"] == {"x": "2"}
    assert rv(exc.value.current) == 2
    with pytest.raises(KeyNotFound):
        store.update(key("missing"), cm("missing"))
    assert store.revision == 2
    assert store.get(key("a"))["data"] == {"x": "2"}  # type: ignore[index]


def test_delete(store: Store) -> None:
    a = store.create(key("a"), cm("a", x="1"))
    store.create(key("b"), cm("b"))
    with pytest.raises(RevisionConflict):
        store.delete(key("a"), expected_revision=rv(a) + 1)
    gone = store.delete(key("a"), expected_revision=rv(a))
    assert rv(gone) == 3
    assert gone["data"] == {"x": "1"}
    assert store.get(key("a")) is None
    with pytest.raises(KeyNotFound):
        store.delete(key("a"))
    assert store.revision == 3
    again = store.create(key("a"), cm("a", x="new"))  # re-create after delete
    assert rv(again) == 4


def test_one_global_revision_across_keys_and_resources(store: Store) -> None:
    seen = []
    for i in range(5):
        seen.append(rv(store.create(key(f"o{i}", ns=f"ns{i % 2}"), cm(f"o{i}"))))
        seen.append(rv(store.create(f"/example.com/widgets//w{i}", {"metadata": {}})))
    seen.append(rv(store.update(key("o1", ns="ns1"), cm("o1"))))
    seen.append(rv(store.delete("/example.com/widgets//w0")))
    assert seen == list(range(1, 13))
    assert store.revision == 12


# -- list, count, snapshots ----------------------------------------------------------


KEYS = [
    "/core/configmaps/default/a",
    "/core/configmaps/default/b",
    "/core/configmaps/ns1/a",
    "/core/configmaps/ns10/a",
    "/core/configmaps/ns2/z",
    "/core/namespaces//default",
    "/core/secrets/default/s",
    "/example.com/widgets/default/w",
    "/example.com/widgetsets/default/w",
    "/odd",  # a key with fewer segments still lists and counts correctly
]


def fill(store: Store, keys: list[str] = KEYS) -> None:
    for i, k in enumerate(reversed(keys)):  # insert out of order
        store.create(k, {"metadata": {"name": k.rsplit("/", 1)[-1]}, "i": i})


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("", KEYS),
        ("/", KEYS),
        ("/core/", KEYS[:7]),
        ("/core/configmaps/", KEYS[:5]),
        ("/core/configmaps/ns1/", ["/core/configmaps/ns1/a"]),
        ("/core/configmaps/ns1", KEYS[2:4]),
        ("/core/configmaps/default/", KEYS[:2]),
        ("/core/configmaps/default/a", KEYS[:1]),
        ("/core/namespaces/", ["/core/namespaces//default"]),
        ("/example.com/widgets/", ["/example.com/widgets/default/w"]),
        ("/example.com/widgets", KEYS[7:9]),
        ("/o", ["/odd"]),
        ("/nothing/", []),
    ],
)
def test_list_prefix_in_key_order(store: Store, prefix: str, expected: list[str]) -> None:
    fill(store)
    items, revision, more = store.list(prefix)
    assert keys_of(items) == expected
    assert revision == store.revision and not more
    assert all(obj == store.get(k) for k, obj in items)
    assert store.count(prefix) == len(expected)


def test_list_pages_with_start_after_and_limit(store: Store) -> None:
    fill(store)
    got: list[str] = []
    start = None
    pages = 0
    while True:
        items, _, more = store.list("/core/", start_after=start, limit=3)
        got += keys_of(items)
        pages += 1
        if not more:
            break
        assert len(items) == 3
        start = items[-1][0]
    assert got == KEYS[:7] and pages == 3
    # exactly a page's worth: more is False
    items, _, more = store.list("/core/configmaps/", limit=5)
    assert len(items) == 5 and not more
    # start_after outside the prefix: below it lists all, above it lists none
    assert keys_of(store.list("/core/secrets/", start_after="/a")[0]) == KEYS[6:7]
    assert store.list("/core/secrets/", start_after="/z")[0] == []
    assert keys_of(store.list("", limit=0)[0]) == KEYS  # 0 = no limit
    with pytest.raises(ValueError, match="negative"):
        store.list("", limit=-1)


def test_list_at_old_revision_sees_that_state(store: Store) -> None:
    store.create(key("a"), cm("a", v="1"))  # 1
    store.create(key("b"), cm("b", v="1"))  # 2
    store.create(key("c"), cm("c", v="1"))  # 3
    snap = store.revision
    store.update(key("b"), cm("b", v="2"))  # 4
    store.delete(key("a"))  # 5
    store.create(key("aa"), cm("aa", v="1"))  # 6
    store.delete(key("c"))  # 7
    store.create(key("c"), cm("c", v="new"))  # 8
    store.create(key("d", ns="other"), cm("d"))  # 9

    items, revision, more = store.list("/core/configmaps/default/", at_revision=snap)
    assert revision == snap and not more
    assert [(k, o["data"]["v"], rv(o)) for k, o in items] == [
        (key("a"), "1", 1),
        (key("b"), "1", 2),
        (key("c"), "1", 3),
    ]
    items, _, _ = store.list("/core/configmaps/default/", at_revision=6)
    assert [(k, o["data"]["v"]) for k, o in items] == [
        (key("aa"), "1"),
        (key("b"), "2"),
        (key("c"), "1"),
    ]
    assert store.list("/core/", at_revision=0) == ([], 0, False)
    now, revision, _ = store.list("/core/configmaps/")
    assert revision == 9
    assert keys_of(now) == [key("aa"), key("b"), key("c"), key("d", ns="other")]


def test_paginated_list_reads_later_pages_at_the_first_pages_revision(store: Store) -> None:
    for i in range(0, 20, 2):
        store.create(key(f"o{i:02d}"), cm(f"o{i:02d}", v="old"))
    page1, snap, more = store.list("/core/configmaps/", limit=4)
    assert more and keys_of(page1) == [key(f"o{i:02d}") for i in (0, 2, 4, 6)]
    # writes between pages: before and after the cursor, updates and deletes
    store.create(key("o01"), cm("o01"))
    store.create(key("o09"), cm("o09"))
    store.delete(key("o08"))
    store.update(key("o10"), cm("o10", v="new"))
    store.delete(key("o02"))
    store.create(key("o99"), cm("o99"))
    seen = keys_of(page1)
    start = page1[-1][0]
    while more:
        page, revision, more = store.list(
            "/core/configmaps/", at_revision=snap, start_after=start, limit=4
        )
        assert revision == snap
        assert all(o["data"]["v"] == "old" and rv(o) <= snap for _, o in page)
        seen += keys_of(page)
        start = page[-1][0] if page else start
    assert seen == [key(f"o{i:02d}") for i in range(0, 20, 2)]


def test_list_revision_bounds(store: Store) -> None:
    for i in range(5):
        store.create(key(f"o{i}"), cm(f"o{i}"))
    with pytest.raises(FutureRevision):
        store.list("/", at_revision=6)
    store.compact(3)
    with pytest.raises(Compacted) as exc:
        store.list("/", at_revision=2)
    assert (exc.value.requested, exc.value.compacted) == (2, 3)
    items, revision, _ = store.list("/", at_revision=3)  # the compacted revision itself
    assert revision == 3 and keys_of(items) == [key("o0"), key("o1"), key("o2")]


# -- events ---------------------------------------------------------------------------


def test_events_since(store: Store) -> None:
    a = store.create(key("a"), cm("a", v="1"))
    store.create(key("x", resource="secrets"), cm("x"))
    a2 = store.update(key("a"), cm("a", v="2"))
    gone = store.delete(key("a"))
    evs = store.events_since("", 0)
    assert [(e.type, e.key, e.revision) for e in evs] == [
        ("ADDED", key("a"), 1),
        ("ADDED", key("x", resource="secrets"), 2),
        ("MODIFIED", key("a"), 3),
        ("DELETED", key("a"), 4),
    ]
    assert all(rv(e.obj) == e.revision for e in evs)
    assert evs[0].obj == a and evs[0].prev is None
    assert evs[2].obj == a2 and evs[2].prev == a
    assert evs[3].obj == gone and evs[3].prev == a2
    assert [e.revision for e in store.events_since("/core/configmaps/", 1)] == [3, 4]
    assert [e.revision for e in store.events_since("/core/secrets/", 0)] == [2]
    assert store.events_since("", 4) == []
    assert store.events_since("", 40) == []  # future: nothing yet, no error


def test_events_since_compacted(store: Store) -> None:
    for i in range(6):
        store.create(key(f"o{i}"), cm(f"o{i}"))
    store.compact(4)
    assert store.compacted_revision == 4
    with pytest.raises(Compacted) as exc:
        store.events_since("", 3)
    assert (exc.value.requested, exc.value.compacted) == (3, 4)
    assert [e.revision for e in store.events_since("", 4)] == [5, 6]
    assert store.count("") == 6  # current state is kept


# -- subscribers ----------------------------------------------------------------------


def test_subscribers_see_each_commit_in_order(store: Store) -> None:
    got: list[tuple[str, int, bool]] = []
    other: list[int] = []

    def sub(ev: Event) -> None:
        # called after commit: the store already shows the write
        got.append((ev.type, ev.revision, store.revision == ev.revision))

    unsub = store.subscribe(sub)
    unsub_other = store.subscribe(lambda ev: other.append(ev.revision))
    store.create(key("a"), cm("a"))
    store.update(key("a"), cm("a", v="1"))
    with pytest.raises(KeyExists):
        store.create(key("a"), cm("a"))  # failures publish nothing
    store.delete(key("a"))
    unsub()
    unsub()  # idempotent
    store.create(key("b"), cm("b"))
    assert got == [("ADDED", 1, True), ("MODIFIED", 2, True), ("DELETED", 3, True)]
    assert other == [1, 2, 3, 4]
    unsub_other()


def test_failing_subscriber_does_not_break_the_write(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    got: list[int] = []

    def bad(ev: Event) -> None:
        raise RuntimeError("boom")

    store.subscribe(bad)
    store.subscribe(lambda ev: got.append(ev.revision))
    created = store.create(key("a"), cm("a"))
    assert rv(created) == 1 and got == [1]
    assert "boom" in caplog.text


def test_nested_write_in_subscriber_is_delivered_in_order(store: Store) -> None:
    first: list[int] = []
    second: list[int] = []

    def reactor(ev: Event) -> None:
        first.append(ev.revision)
        if ev.key == key("a") and ev.type == "ADDED":
            nested = store.create(key("child"), cm("child"))
            assert rv(nested) == ev.revision + 1

    store.subscribe(reactor)
    store.subscribe(lambda ev: second.append(ev.revision))
    store.create(key("a"), cm("a"))
    assert first == [1, 2] and second == [1, 2]


def test_concurrent_writers_get_dense_ordered_revisions(store: Store) -> None:
    delivered: list[int] = []
    store.subscribe(lambda ev: delivered.append(ev.revision))
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(50):
                k = key(f"t{t}-{i}")
                o = store.create(k, cm(k))
                store.update(k, cm(k, v="x"), expected_revision=rv(o))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert delivered == list(range(1, 401))
    assert [e.revision for e in store.events_since("", 0)] == delivered
    assert store.count("/core/configmaps/") == 200


# -- compaction -----------------------------------------------------------------------


def test_compact_bounds(store: Store) -> None:
    for i in range(3):
        store.create(key(f"o{i}"), cm(f"o{i}"))
    with pytest.raises(FutureRevision):
        store.compact(4)
    store.compact(2)
    store.compact(1)  # below: no-op
    assert store.compacted_revision == 2
    store.compact(3)  # everything: still readable at the current revision
    assert store.events_since("", 3) == []
    assert keys_of(store.list("/")[0]) == [key("o0"), key("o1"), key("o2")]
    assert rv(store.create(key("o3"), cm("o3"))) == 4


def test_compact_by_count(make_store: StoreFactory) -> None:
    store = make_store(retain_events=5, retain_seconds=None)
    assert store.compact_by_policy() == 0
    for i in range(12):
        store.create(key(f"o{i}"), cm(f"o{i}"))
    assert store.compact_by_policy() == 7
    assert [e.revision for e in store.events_since("", 7)] == [8, 9, 10, 11, 12]
    assert store.compact_by_policy() == 7  # idempotent
    store.update(key("o0"), cm("o0", v="1"))
    assert store.compact_by_policy() == 8


def test_compact_by_age(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(retain_events=None, retain_seconds=10.0, clock=clock)
    for i in range(6):  # revisions 1..6 at t0, t0+2, ..., t0+10
        store.create(key(f"o{i}"), cm(f"o{i}"))
        clock.now += 2
    clock.now -= 2
    # now = t0+10: everything is at most 10 s old
    assert store.compact_by_policy() == 0
    clock.now += 5  # cutoff t0+5: revisions 1..3 (t0, t0+2, t0+4) are too old
    assert store.compact_by_policy() == 3
    clock.now += 100
    assert store.compact_by_policy() == 6  # all older than the window
    assert store.events_since("", 6) == []
    assert store.count("") == 6


def test_compact_by_age_survives_a_clock_going_backwards(
    make_store: StoreFactory, clock: FakeClock
) -> None:
    store = make_store(retain_events=None, retain_seconds=10.0, clock=clock)
    store.create(key("a"), cm("a"))
    clock.now -= 50  # the wall clock jumps back: commit times stay monotonic
    store.create(key("b"), cm("b"))
    clock.now += 55
    assert store.compact_by_policy() == 0
    clock.now += 6
    assert store.compact_by_policy() == 2


def test_both_policies_take_the_stricter(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(retain_events=3, retain_seconds=10.0, clock=clock)
    for i in range(4):
        store.create(key(f"o{i}"), cm(f"o{i}"))
    assert store.compact_by_policy() == 1  # by count
    clock.now += 11
    assert store.compact_by_policy() == 4  # by age


def test_policy_rejects_negative(make_store: StoreFactory) -> None:
    with pytest.raises(ValueError):
        make_store(retain_events=-1)
    with pytest.raises(ValueError):
        make_store(retain_seconds=-1.0)


# -- lifecycle ------------------------------------------------------------------------


def test_closed_store_raises(store: Store) -> None:
    store.create(key("a"), cm("a"))
    store.close()
    store.close()  # no-op
    for call in (
        lambda: store.get(key("a")),
        lambda: store.list("/"),
        lambda: store.count("/"),
        lambda: store.create(key("b"), cm("b")),
        lambda: store.update(key("a"), cm("a")),
        lambda: store.delete(key("a")),
        lambda: store.events_since("", 0),
        lambda: store.compact(1),
        lambda: store.compact_by_policy(),
        lambda: store.subscribe(print),
    ):
        with pytest.raises(StoreClosed):
            call()


# -- open_store -----------------------------------------------------------------------


def test_open_store_memory() -> None:
    s = open_store("memory", retain_events=10)
    assert isinstance(s, MemoryStore) and s.retain_events == 10
    s.close()
    with pytest.raises(ValueError, match="durable"):
        open_store("memory", durable=True)
    with pytest.raises(ValueError, match="bad option"):
        open_store("memory", retain=3)


@pytest.mark.parametrize(
    "spec", ["", "mem", "memory:x", "sqlite", "sqlite:", "etcd:x", "postgres://db"]
)
def test_open_store_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError, match=r"store spec|names no file") as exc:
        open_store(spec)
    assert "sqlite:PATH" in str(exc.value)


def test_open_store_sqlite_creates_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "kw.db"
    s = open_store(f"sqlite:{path}", durable=True)
    assert isinstance(s, SQLiteStore) and s.durable
    s.create(key("a"), cm("a"))
    s.close()
    assert path.is_file()
    mem = open_store("sqlite::memory:")
    mem.create(key("a"), cm("a"))
    assert mem.revision == 1
    mem.close()


def test_open_store_sqlite_clear_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not an sqlite database at all" * 200)
    with pytest.raises(StoreOpenError, match=r"garbage\.db.*not a database"):
        open_store(f"sqlite:{garbage}")

    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreOpenError, match="not a kubewerk store"):
        open_store(f"sqlite:{foreign}")

    with pytest.raises(StoreOpenError, match="directory"):
        open_store(f"sqlite:{tmp_path}")

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreOpenError, match="cannot create its directory"):
        open_store(f"sqlite:{blocker}/sub/kw.db")


def test_sqlite_file_is_owned_by_one_store(tmp_path: Path) -> None:
    path = tmp_path / "kw.db"
    first = SQLiteStore(path)
    first.create(key("a"), cm("a"))
    with pytest.raises(StoreOpenError, match="in use"):
        SQLiteStore(path)
    first.close()
    second = SQLiteStore(path)
    assert second.revision == 1
    second.close()


def test_sqlite_restart_continues_revisions(tmp_path: Path) -> None:
    path = tmp_path / "kw.db"
    clock = FakeClock()
    s = SQLiteStore(path, clock=clock, retain_events=None, retain_seconds=10.0)
    for i in range(5):
        s.create(key(f"o{i}"), cm(f"o{i}"))
        clock.now += 5
    s.update(key("o0"), cm("o0", v="1"))
    s.delete(key("o1"))
    s.compact(2)
    s.close()

    s = SQLiteStore(path, clock=clock, retain_events=None, retain_seconds=10.0)
    assert (s.revision, s.compacted_revision) == (7, 2)
    assert [e.revision for e in s.events_since("", 2)] == [3, 4, 5, 6, 7]
    with pytest.raises(Compacted):
        s.events_since("", 1)
    assert keys_of(s.list("/", at_revision=4)[0]) == [key(f"o{i}") for i in range(4)]
    assert rv(s.create(key("o9"), cm("o9"))) == 8
    assert s.get(key("o0"))["data"] == {"v": "1"}  # type: ignore[index]
    # commit times persist too: now is t0+25, so revisions 1..3 (t0, +5, +10) are too old
    assert s.compact_by_policy() == 3
    s.compact(8)
    s.close()
    s = SQLiteStore(path)
    assert (s.revision, s.compacted_revision) == (8, 8)  # fully compacted log
    assert rv(s.create(key("o10"), cm("o10"))) == 9
    s.close()


def test_sqlite_compaction_keeps_only_rows_still_needed(tmp_path: Path) -> None:
    s = SQLiteStore(tmp_path / "kw.db")
    s.create(key("a"), cm("a", v="1"))  # 1: replaced by 4        -> dropped
    s.create(key("b"), cm("b", v="1"))  # 2: replaced by 6        -> dropped
    s.create(key("c"), cm("c", v="1"))  # 3: prev of 7 (above C)  -> kept
    s.update(key("a"), cm("a", v="2"))  # 4: replaced by 5        -> dropped
    s.update(key("a"), cm("a", v="3"))  # 5: current              -> kept
    s.delete(key("b"))  # 6: a deletion           -> dropped
    s.update(key("c"), cm("c", v="2"))  # 7: above C              -> kept
    s.compact(6)
    conn = s._conn
    assert conn is not None
    assert [r[0] for r in conn.execute("SELECT rev FROM log ORDER BY rev")] == [3, 5, 7]
    [ev] = s.events_since("", 6)
    assert ev.prev is not None and ev.prev["data"] == {"v": "1"} and rv(ev.prev) == 3
    items, _, _ = s.list("/", at_revision=6)
    assert [(k, o["data"]["v"]) for k, o in items] == [(key("a"), "3"), (key("c"), "1")]
    s.compact(7)
    assert [r[0] for r in conn.execute("SELECT rev FROM log ORDER BY rev")] == [5, 7]
    s.close()


def test_sqlite_refuses_another_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "kw.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE kubewerk_meta SET value = 99 WHERE name = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreOpenError, match="schema version 99"):
        SQLiteStore(path)


def test_count_after_a_key(store: Store) -> None:
    for name in ("a", "b", "c"):
        store.create(key(name), cm(name))
    store.create(key("z", ns="other"), cm("z", ns="other"))
    prefix = "/core/configmaps/default/"
    assert store.count(prefix) == 3
    assert store.count(prefix, start_after=key("a")) == 2
    assert store.count(prefix, start_after=key("c")) == 0
    assert (
        store.count(prefix, start_after="/core/") == 3
    )  # a bound below the prefix changes nothing
    assert store.count("/core/configmaps/", start_after=key("c")) == 1
