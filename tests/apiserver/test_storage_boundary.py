"""The storage boundary: a store commits only objects the server can write back.

Both stores refuse, with ``UnstorableObject`` and without a trace, objects that orjson
cannot encode inside the envelopes the server wraps around stored objects (lists, watch
events, Tables); every event records its object's encoded size; ``stats()`` counts
objects and history in those bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.storage import (
    MAX_STORED_DEPTH,
    Event,
    MemoryStore,
    SQLiteStore,
    Store,
    StoreStats,
    UnstorableObject,
)
from kubewerk.apiserver.storage.boundary import EMBED_HEADROOM, ENCODER_MAX_DEPTH, encode_storable
from tests.apiserver.helpers import Api

StoreFactory = Callable[..., Store]
KEY = "/example.dev/blobs/default/b"


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    made: list[Store] = []

    def make(**kw: Any) -> Store:
        s: Store = (
            MemoryStore(**kw)
            if request.param == "memory"
            else SQLiteStore(tmp_path / f"s{len(made)}.db", **kw)
        )
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


@pytest.fixture
def store(make_store: StoreFactory) -> Store:
    return make_store()


def nested(depth: int) -> Any:
    """A value of exactly ``depth`` nested containers (alternating maps and lists)."""
    value: Any = 1
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


def blob(name: str = "b", spec: Any = None) -> dict[str, Any]:
    return {
        "apiVersion": "example.dev/v1",
        "kind": "Blob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec if spec is not None else {},
    }


def deep_blob(depth: int) -> dict[str, Any]:
    """A Blob whose whole nesting (the object itself is level 1) is ``depth`` levels."""
    return blob(spec={"x": nested(depth - 2)})


UNSTORABLE: dict[str, tuple[dict[str, Any], str]] = {
    "too deep by one": (deep_blob(MAX_STORED_DEPTH + 1), "nested more than 248 levels"),
    "encoder limit": (deep_blob(ENCODER_MAX_DEPTH + 5), "nested more than"),
    "int above uint64": (blob(spec={"n": 2**64}), "64-bit range"),
    "int below int64": (blob(spec={"n": -(2**63) - 1}), "64-bit range"),
    "lone surrogate": (blob(spec={"s": "a\ud800b"}), "lone surrogate"),
    "non-string key": (blob(spec={1: "x"}), "JSON cannot represent"),
    "a set": (blob(spec={"s": {1, 2}}), "JSON cannot represent"),
}


def snapshot(store: Store) -> tuple[Any, ...]:
    return (
        store.revision,
        store.get(KEY),
        store.list("/example.dev/"),
        store.events_since("", 0),
        store.stats(),
    )


def test_headroom_literal_matches_the_constant() -> None:
    wrapped, size = encode_storable(KEY, {"a": 1})
    assert wrapped == b"[" * EMBED_HEADROOM + b'{"a":1}' + b"]" * EMBED_HEADROOM
    assert size == len(b'{"a":1}')
    assert MAX_STORED_DEPTH == ENCODER_MAX_DEPTH - EMBED_HEADROOM


def test_the_encoder_limit_is_what_the_boundary_assumes() -> None:
    orjson.dumps(nested(ENCODER_MAX_DEPTH))
    with pytest.raises(orjson.JSONEncodeError, match="Recursion"):
        orjson.dumps(nested(ENCODER_MAX_DEPTH + 1))


@pytest.mark.parametrize("case", sorted(UNSTORABLE))
def test_create_of_an_unstorable_object_leaves_no_trace(store: Store, case: str) -> None:
    obj, reason = UNSTORABLE[case]
    store.create("/example.dev/blobs/default/other", blob("other"))
    seen: list[Event] = []
    store.subscribe(seen.append)
    before = snapshot(store)
    with pytest.raises(UnstorableObject, match=reason) as err:
        store.create(KEY, obj)
    assert err.value.key == KEY and KEY in str(err.value)
    assert snapshot(store) == before
    assert seen == []
    # the revision was not taken: the next write gets the next number
    assert store.create(KEY, blob())["metadata"]["resourceVersion"] == str(before[0] + 1)


@pytest.mark.parametrize("case", sorted(UNSTORABLE))
def test_update_to_an_unstorable_object_keeps_the_old_one(store: Store, case: str) -> None:
    obj, reason = UNSTORABLE[case]
    old = store.create(KEY, blob(spec={"v": 1}))
    seen: list[Event] = []
    store.subscribe(seen.append)
    before = snapshot(store)
    with pytest.raises(UnstorableObject, match=reason):
        store.update(KEY, obj, expected_revision=int(old["metadata"]["resourceVersion"]))
    assert snapshot(store) == before
    assert store.get(KEY) == old
    assert seen == []
    assert store.update(KEY, blob(spec={"v": 2}))["spec"] == {"v": 2}


def test_the_deepest_storable_object_is_written_back_in_every_envelope(store: Store) -> None:
    obj = deep_blob(MAX_STORED_DEPTH)
    stored = store.create(KEY, obj)
    got = store.get(KEY)
    items, _, _ = store.list("/example.dev/")
    # the deepest envelope the server writes: a watch event carrying a Table row's object
    orjson.dumps(
        {"type": "ADDED", "object": {"kind": "Table", "rows": [{"cells": [], "object": got}]}}
    )
    orjson.dumps({"kind": "BlobList", "items": [o for _, o in items]})
    orjson.dumps({"type": "ADDED", "object": stored})
    assert got == stored


def test_events_record_the_encoded_size(store: Store) -> None:
    seen: list[Event] = []
    store.subscribe(seen.append)
    store.create(KEY, blob(spec={"v": "x" * 100}))
    store.update(KEY, blob(spec={"v": "y" * 300}))
    store.delete(KEY)
    store.create(KEY, blob(spec={"é": "ü"}))
    assert [e.size for e in seen] == [len(orjson.dumps(e.obj)) for e in seen]
    replayed = store.events_since("", 0)
    assert [e.size for e in replayed] == [e.size for e in seen]
    assert all(e.size > 0 for e in seen)


def test_stats_count_objects_and_history_in_bytes(store: Store) -> None:
    assert store.stats() == StoreStats(0, 0, 0, 0, 0, 0, 0, 0, 0)
    a = store.create("/example.dev/blobs/default/a", blob("a", {"v": "x" * 1000}))
    b = store.create("/example.dev/blobs/default/b", blob("b"))
    b2 = store.update("/example.dev/blobs/default/b", blob("b", {"v": "y" * 500}))
    last = store.delete("/example.dev/blobs/default/a")
    size = [len(orjson.dumps(o)) for o in (a, b, b2, last)]
    s = store.stats()
    assert (s.revision, s.objects, s.object_bytes) == (4, 1, size[2])
    assert (s.history_events, s.history_bytes) == (4, sum(size))
    assert (s.compactions, s.compacted_events, s.compacted_bytes) == (0, 0, 0)
    store.compact(2)
    s = store.stats()
    assert (s.compacted_revision, s.history_events, s.history_bytes) == (2, 2, size[2] + size[3])
    assert (s.compactions, s.compacted_events, s.compacted_bytes) == (1, 2, size[0] + size[1])
    store.compact(2)  # a no-op is not a compaction
    assert store.stats().compactions == 1


def test_sqlite_counts_the_same_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    s = SQLiteStore(path)
    for i in range(5):
        s.create(f"/example.dev/blobs/default/b{i}", blob(f"b{i}", {"v": "x" * i * 100}))
    s.update("/example.dev/blobs/default/b1", blob("b1", {"v": "changed"}))
    s.delete("/example.dev/blobs/default/b2")
    s.compact(3)
    before = s.stats()
    s.close()
    s = SQLiteStore(path)
    try:
        after = s.stats()
    finally:
        s.close()
    # sizes and history are recounted from the file; compaction counters start again
    assert after == StoreStats(
        before.revision,
        before.compacted_revision,
        before.objects,
        before.object_bytes,
        before.history_events,
        before.history_bytes,
        0,
        0,
        0,
    )


# -- over HTTP: a write the server could not read back is refused and leaves no trace ------

FREE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "blobs.example.dev"},
    "spec": {
        "group": "example.dev",
        "names": {"kind": "Blob", "plural": "blobs"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                        },
                    }
                },
            }
        ],
    },
}
BLOBS = "/apis/example.dev/v1/namespaces/default/blobs"


def deep_json(depth: int) -> bytes:
    """``{"spec": {"x": [{"a": [...]}]}}`` text with ``depth`` levels below ``spec``."""
    opens = b"".join(b'{"a":' if i % 2 else b"[" for i in range(depth))
    closes = b"".join(b"}" if i % 2 else b"]" for i in reversed(range(depth)))
    return opens + b"1" + closes


@pytest.fixture(params=["memory", "sqlite"])
async def served(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    spec = "memory" if request.param == "memory" else f"sqlite:{tmp_path / 'api.db'}"
    async with EmbeddedServer(spec, bookmark_interval=0.5) as srv:
        client = Api(srv.url)
        try:
            status, body = await client.post(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", FREE_CRD
            )
            assert status == 201, body
            await client.wait_established("blobs.example.dev")
            yield client
        finally:
            await client.close()


async def test_unreadable_writes_are_refused_and_the_resource_stays_readable(served: Api) -> None:
    api = served
    status, good = await api.post(BLOBS, blob("good", {"v": 1}))
    assert status == 201, good
    rv = good["metadata"]["resourceVersion"]
    events: list[dict[str, Any]] = []

    async def watch() -> None:
        async with api.session.get(f"{api.base}{BLOBS}?watch=1&resourceVersion={rv}") as resp:
            assert resp.status == 200
            async for line in resp.content:
                if line.strip():
                    events.append(orjson.loads(line))
                    if events[-1]["object"]["metadata"]["name"] == "last":
                        return

    watcher = asyncio.get_running_loop().create_task(watch())
    await asyncio.sleep(0.1)
    head = b'{"apiVersion":"example.dev/v1","kind":"Blob","metadata":{"name":"%s"},"spec":{"x":'
    must_refuse = [
        # nesting beyond what the encoder writes back inside a list
        ("POST", BLOBS, head % b"deep" + deep_json(300) + b"}}", "application/json"),
        ("POST", BLOBS, head % b"deep2" + deep_json(MAX_STORED_DEPTH) + b"}}", "application/json"),
        # a merge patch adding 300 levels to a stored object
        (
            "PATCH",
            f"{BLOBS}/good",
            b'{"spec":{"x":' + deep_json(300) + b"}}",
            "application/merge-patch+json",
        ),
    ]
    for method, path, raw, ctype in must_refuse:
        status, body = await api.request(method, path, raw=raw, content_type=ctype)
        assert 400 <= status < 600, (method, path, status, body)
    # an integer beyond uint64 from YAML: refused, or stored as something readable
    status, body = await api.request(
        "POST",
        BLOBS,
        raw=b"apiVersion: example.dev/v1\nkind: Blob\nmetadata: {name: big}\n"
        b"spec: {count: 123456789012345678901234567890}\n",
        content_type="application/yaml",
    )
    names = ["big", "good"] if status == 201 else ["good"]
    status, listed = await api.get(BLOBS)
    assert status == 200, listed
    assert [o["metadata"]["name"] for o in listed["items"]] == names
    status, cluster = await api.get("/apis/example.dev/v1/blobs")
    assert status == 200 and len(cluster["items"]) == len(names)
    status, got = await api.get(f"{BLOBS}/good")
    assert status == 200 and got == good
    for name in ("deep", "deep2"):
        assert (await api.get(f"{BLOBS}/{name}"))[0] == 404
    status, last = await api.post(BLOBS, blob("last"))
    assert status == 201, last
    await asyncio.wait_for(watcher, 5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", n) for n in [*names[:-1], "last"]
    ]
    with contextlib.suppress(asyncio.CancelledError):
        watcher.cancel()
