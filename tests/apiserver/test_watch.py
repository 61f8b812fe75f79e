"""Watch semantics: resourceVersion meanings, bookmarks, initial events, 410, selectors."""

from __future__ import annotations

import asyncio

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import DB_PATH, Api, database


async def test_watch_without_resource_version_starts_with_current_state(api: Api) -> None:
    await api.post(DB_PATH, database("a"))
    await api.post(DB_PATH, database("b"))
    events = await api.watch(DB_PATH + "?watch=true", stop_after=2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]


async def test_watch_from_resource_version_replays_then_streams(api: Api) -> None:
    _, a = await api.post(DB_PATH, database("a"))
    rv = a["metadata"]["resourceVersion"]
    await api.patch(f"{DB_PATH}/a", {"spec": {"replicas": 2}})
    await api.post(DB_PATH, database("b"))
    await api.delete(f"{DB_PATH}/a")

    async def later() -> None:
        await asyncio.sleep(0.1)
        await api.post(DB_PATH, database("c"))

    task = asyncio.create_task(later())
    events = await api.watch(DB_PATH + f"?watch=1&resourceVersion={rv}", stop_after=4)
    await task
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
        ("ADDED", "c"),
    ]
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert revisions == sorted(revisions) and len(set(revisions)) == 4
    # the DELETED object carries the deletion's revision
    assert revisions[2] > revisions[1]


async def test_send_initial_events_ends_with_annotated_bookmark(api: Api) -> None:
    await api.post(DB_PATH, database("a"))
    path = DB_PATH + (
        "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    )
    events = await api.watch(path, stop_after=2)
    assert events[0]["type"] == "ADDED"
    bookmark = events[1]
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert bookmark["object"]["kind"] == "Database"
    assert bookmark["object"]["apiVersion"] == "demo.kubewerk.dev/v1"
    # sendInitialEvents without NotOlderThan is invalid
    status, err = await api.get(
        DB_PATH + "?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
    )
    assert status == 422
    assert err["reason"] == "Invalid"


async def test_periodic_bookmarks(api: Api) -> None:
    _, a = await api.post(DB_PATH, database("a"))
    rv = a["metadata"]["resourceVersion"]
    events = await api.watch(
        DB_PATH + f"?watch=1&resourceVersion={rv}&allowWatchBookmarks=true", stop_after=1, timeout=3
    )
    assert events and events[0]["type"] == "BOOKMARK"
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(rv)


async def test_compacted_revision_gives_410_as_error_event(
    api: Api, aserver: EmbeddedServer
) -> None:
    _, a = await api.post(DB_PATH, database("a"))
    rv = a["metadata"]["resourceVersion"]
    await api.patch(f"{DB_PATH}/a", {"spec": {"replicas": 3}})
    await api.patch(f"{DB_PATH}/a", {"spec": {"replicas": 4}})
    aserver.store.compact(aserver.store.revision)
    events = await api.watch(DB_PATH + f"?watch=1&resourceVersion={rv}", stop_after=1)
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {rv} (")


async def test_timeout_seconds_ends_the_stream(api: Api) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    events = await api.watch(DB_PATH + "?watch=1&timeoutSeconds=1", stop_after=10, timeout=5)
    assert events == []
    assert 0.9 <= loop.time() - start < 3


async def test_label_selector_transitions(api: Api) -> None:
    _, a = await api.post(DB_PATH, database("a", labels={"env": "dev"}))
    rv = a["metadata"]["resourceVersion"]

    async def changes() -> None:
        await asyncio.sleep(0.1)
        await api.patch(f"{DB_PATH}/a", {"metadata": {"labels": {"env": "prod"}}})
        await api.patch(f"{DB_PATH}/a", {"spec": {"replicas": 2}})
        await api.patch(f"{DB_PATH}/a", {"metadata": {"labels": {"env": "dev"}}})

    task = asyncio.create_task(changes())
    events = await api.watch(
        DB_PATH + f"?watch=1&resourceVersion={rv}&labelSelector=env%3Dprod", stop_after=3
    )
    await task
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]


async def test_watch_single_object_by_name(api: Api) -> None:
    await api.post(DB_PATH, database("a"))
    await api.post(DB_PATH, database("b"))
    events = await api.watch(DB_PATH + "?watch=1&fieldSelector=metadata.name%3Db", stop_after=1)
    assert [e["object"]["metadata"]["name"] for e in events] == ["b"]


async def test_watch_table_events(api: Api) -> None:
    await api.post(DB_PATH, database("a"))
    await api.post(DB_PATH, database("b"))
    events: list[dict[str, object]] = []
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    async with api.session.get(
        api.base + DB_PATH + "?watch=1&timeoutSeconds=1", headers=headers
    ) as resp:
        import orjson

        async for line in resp.content:
            if line.strip():
                events.append(orjson.loads(line))
    assert len(events) == 2
    first, second = (e["object"] for e in events)
    assert isinstance(first, dict) and isinstance(second, dict)
    assert first["kind"] == "Table" and first["columnDefinitions"]
    assert second["columnDefinitions"] == []
    assert second["rows"][0]["cells"][0] == "b"
