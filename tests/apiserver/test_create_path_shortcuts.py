"""The shortcuts of the create path answer as the long ways did: a body read in one ASGI
message or in several (limits and a client that leaves included), a create's answer cut
out of the storage boundary's encoding (the same bytes as encoding the object), storage
events delivered in order after a delivery a ``BaseException`` ended, and a watch hub
with no watchers skipping its work."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver import app as app_module
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from kubewerk.apiserver.storage._common import Fanout
from kubewerk.apiserver.storage.base import Event
from kubewerk.apiserver.storage.boundary import stored_encoding
from kubewerk.apiserver.storage.memory import MemoryStore

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def app() -> AsyncIterator[ApiServer]:
    server = ApiServer(open_store("memory"))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def call(
    app: ApiServer, method: str, path: str, messages: list[dict[str, Any]], length: int | None
) -> tuple[int | None, bytes]:
    """``messages`` as the request's ASGI body messages (then a disconnect); the status
    (None when nothing was answered) and the body."""
    headers = [(b"content-type", b"application/json")]
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": headers,
    }
    pending = list(messages)

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    status: int | None = None
    parts: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            parts.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(parts)


def _cm(name: str) -> bytes:
    return orjson.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}}
    )


def _chunks(body: bytes, n: int) -> list[dict[str, Any]]:
    step = max(1, len(body) // n)
    pieces = [body[i : i + step] for i in range(0, len(body), step)]
    return [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
        for i, p in enumerate(pieces)
    ]


async def test_one_message_and_several_give_the_same_create(app: ApiServer) -> None:
    one = _cm("one")
    status, answer = await call(
        app, "POST", CONFIGMAPS, [{"type": "http.request", "body": one}], len(one)
    )
    assert status == 201
    several = _cm("several")
    status2, answer2 = await call(app, "POST", CONFIGMAPS, _chunks(several, 4), len(several))
    assert status2 == 201
    first, second = orjson.loads(answer), orjson.loads(answer2)
    assert first["data"] == second["data"] == {"a": "b"}
    # a body that is not bytes (a bytearray) is read as its bytes
    third = _cm("third")
    status3, _ = await call(
        app, "POST", CONFIGMAPS, [{"type": "http.request", "body": bytearray(third)}], None
    )
    assert status3 == 201


async def test_body_limits_and_a_client_that_leaves(
    app: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "MAX_BODY", 100)
    big = b" " * 50 + _cm("big")
    assert len(big) > 100
    too_large = "Request entity too large: limit is 100"
    for messages, length in (
        ([{"type": "http.request", "body": big}], None),  # one message, no length
        (_chunks(big, 3), None),  # several
        ([{"type": "http.request", "body": b"{}"}], 101),  # the declared length alone
    ):
        status, answer = await call(app, "POST", CONFIGMAPS, messages, length)
        assert (status, orjson.loads(answer)["message"]) == (413, too_large)
    # the client leaves before its body is complete: nothing is stored, nobody answered
    status, answer = await call(app, "POST", CONFIGMAPS, _chunks(_cm("gone"), 3)[:2], None)
    assert (status, answer) == (None, b"")
    status, answer = await call(app, "POST", CONFIGMAPS, [{"type": "http.disconnect"}], None)
    assert (status, answer) == (None, b"")
    assert app.store.get("/core/configmaps/default/gone") is None


async def test_a_create_answer_is_the_stored_object_encoded(app: ApiServer) -> None:
    body = _cm("enc")
    status, answer = await call(
        app, "POST", CONFIGMAPS, [{"type": "http.request", "body": body}], len(body)
    )
    assert status == 201
    stored = app.store.get("/core/configmaps/default/enc")
    assert stored is not None
    assert answer == orjson.dumps(stored)
    status, got = await call(
        app, "GET", CONFIGMAPS + "/enc", [{"type": "http.request", "body": b""}], None
    )
    assert (status, got) == (200, answer)


def test_stored_encoding_is_for_the_last_committed_object_only() -> None:
    store = MemoryStore()
    first = store.create("/core/configmaps/default/a", {"metadata": {"name": "a"}, "n": 1.0})
    assert stored_encoding(first) == orjson.dumps(first)
    assert stored_encoding(dict(first)) is None  # an equal object is not that object
    second = store.create("/core/configmaps/default/b", {"metadata": {"name": "b"}})
    assert stored_encoding(first) is None
    assert stored_encoding(second) == orjson.dumps(second)


def test_events_left_by_an_interrupted_delivery_go_first() -> None:
    fanout = Fanout()
    store = MemoryStore()
    seen: list[int] = []

    def first(ev: Event) -> None:
        if ev.revision == 1:
            fanout.publish(Event("ADDED", "k2", 2, {}, None))  # queued behind this one
            raise KeyboardInterrupt

    fanout.subscribe(first, store._lock)
    fanout.subscribe(lambda ev: seen.append(ev.revision), store._lock)
    with pytest.raises(KeyboardInterrupt):
        fanout.publish(Event("ADDED", "k1", 1, {}, None))
    fanout.publish(Event("ADDED", "k3", 3, {}, None))
    assert seen == [2, 3]


async def test_a_watch_opened_after_unwatched_creates_sees_the_next_one(app: ApiServer) -> None:
    for i in range(3):
        body = _cm(f"w{i}")
        status, _ = await call(
            app, "POST", CONFIGMAPS, [{"type": "http.request", "body": body}], len(body)
        )
        assert status == 201
    assert not app.hub.watchers
    watcher = app.hub.new_watcher("/core/configmaps/", None)
    app.hub.watchers.add(watcher)
    try:
        app.store.create("/core/configmaps/default/w3", {"metadata": {"name": "w3"}})
        assert [ev.obj["metadata"]["name"] for ev in watcher.queue] == ["w3"]
    finally:
        app.hub.watchers.discard(watcher)
