"""Per-watcher backlog bounded in bytes: a watcher that does not keep up is closed alone.

Over real HTTP: one client opens a watch and stops reading; 1 MiB objects are written.
Its queue never holds more than the bound, it is closed (its stream ends cleanly, so the
client re-watches), while another watcher receives every event and LISTs stay fast.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.storage import Event
from kubewerk.apiserver.storage.memory import MemoryStore
from kubewerk.apiserver.watch import (
    CHUNK_BYTES,
    DEFAULT_MAX_BACKLOG_BYTES,
    EncodedCache,
    WatchEvent,
    WatchHub,
    _chunks,
    group_resource,
)
from tests.apiserver.helpers import Api, configmap

MiB = 1024 * 1024
CMS = "/api/v1/namespaces/default/configmaps"
BOUND = 2 * MiB


@pytest.fixture
async def small_bound() -> AsyncIterator[EmbeddedServer]:
    async with EmbeddedServer("memory", bookmark_interval=60.0) as srv:
        srv.app.hub.max_backlog_bytes = BOUND
        yield srv


async def watch_lines(
    api: Api, path: str, until: Any, timeout: float = 20.0
) -> list[dict[str, Any]]:
    """Events of a watch read as they come (lines of any length) until ``until(events)``."""
    events: list[dict[str, Any]] = []

    async def read() -> None:
        async with api.session.get(f"{api.base}{path}") as resp:
            assert resp.status == 200
            pending = b""
            async for data in resp.content.iter_any():
                *lines, pending = (pending + data).split(b"\n")
                events.extend(orjson.loads(line) for line in lines if line.strip())
                if until(events):
                    return

    await asyncio.wait_for(read(), timeout)
    return events


class StalledWatch:
    """A watch over a raw socket with a tiny receive buffer that reads only when told."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, host: str, port: int, path: str) -> StalledWatch:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((host, port))
        sock.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=sock, limit=16 * 1024)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert head.startswith(b"HTTP/1.1 200"), head
        assert b"transfer-encoding: chunked" in head.lower(), head
        return cls(reader, writer)

    async def read_to_end(self, timeout: float = 10.0) -> tuple[list[dict[str, Any]], bool]:
        """Every event until the chunked body ends; and whether it ended (vs. timed out)."""
        body = bytearray()

        async def chunks() -> None:
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                data = await self.reader.readexactly(size + 2)
                if size == 0:
                    return
                body.extend(data[:-2])

        try:
            await asyncio.wait_for(chunks(), timeout)
            ended = True
        except TimeoutError:
            ended = False
        return [orjson.loads(line) for line in bytes(body).splitlines() if line.strip()], ended

    def close(self) -> None:
        self.writer.close()


async def test_an_unread_watch_is_closed_at_its_byte_bound_alone(
    small_bound: EmbeddedServer,
) -> None:
    srv = small_bound
    hub = srv.app.hub
    api = Api(srv.url)
    try:
        status, first = await api.post(CMS, configmap("first"))
        assert status == 201, first
        rv = first["metadata"]["resourceVersion"]
        await api.post("/api/v1/namespaces/kube-system/configmaps", configmap("small"))
        stalled = await StalledWatch.open(srv.host, srv.port, f"{CMS}?watch=1&resourceVersion={rv}")
        n = 40
        fast = asyncio.get_running_loop().create_task(
            watch_lines(api, f"{CMS}?watch=1&resourceVersion={rv}", lambda evs: len(evs) == n)
        )
        await asyncio.sleep(0.2)
        assert len(hub.watchers) == 2
        list_times: list[float] = []
        for i in range(n):
            status, body = await api.post(CMS, configmap(f"cm{i}", {"k": str(i % 10) * MiB}))
            assert status == 201, body
            # no watcher ever holds more than the bound
            assert all(w.queued_bytes <= BOUND for w in hub.watchers), [
                w.queued_bytes for w in hub.watchers
            ]
            t = time.perf_counter()
            status, small = await api.get("/api/v1/namespaces/kube-system/configmaps")
            list_times.append(time.perf_counter() - t)
            assert status == 200 and len(small["items"]) >= 1
        seen = [e["object"]["metadata"]["name"] for e in await asyncio.wait_for(fast, 20)]
        assert seen == [f"cm{i}" for i in range(n)]
        assert hub.terminated == {("", "configmaps"): 1}
        assert len(hub.watchers) == 0
        assert hub.stats().queued_bytes == 0
        assert max(list_times) < 0.5, list_times
        # the stalled client, reading at last, gets what was written to it, then the end
        events, ended = await stalled.read_to_end()
        stalled.close()
        assert ended
        names = [e["object"]["metadata"]["name"] for e in events]
        assert names == [f"cm{i}" for i in range(len(names))] and len(names) < n
        # re-watching from the last resourceVersion it saw gives the rest
        last_rv = events[-1]["object"]["metadata"]["resourceVersion"] if events else rv
        rest = await watch_lines(
            api, f"{CMS}?watch=1&resourceVersion={last_rv}", lambda evs: len(evs) == n - len(names)
        )
        assert [e["object"]["metadata"]["name"] for e in rest] == [
            f"cm{i}" for i in range(len(names), n)
        ]
    finally:
        await api.close()


async def test_an_unread_watch_of_the_initial_state_is_closed_too(
    small_bound: EmbeddedServer,
) -> None:
    """Stalled while its initial events are written: closed when changes pile up behind them."""
    srv = small_bound
    hub = srv.app.hub
    api = Api(srv.url)
    try:
        for i in range(12):
            status, _ = await api.post(CMS, configmap(f"old{i:02}", {"k": "o" * MiB}))
            assert status == 201
        stalled = await StalledWatch.open(srv.host, srv.port, f"{CMS}?watch=1")
        await asyncio.sleep(0.2)
        for i in range(8):
            await api.post(CMS, configmap(f"new{i}", {"k": "n" * (512 * 1024)}))
        assert hub.terminated == {("", "configmaps"): 1}
        events, ended = await stalled.read_to_end()
        stalled.close()
        assert ended
        names = [e["object"]["metadata"]["name"] for e in events]
        # a prefix of the initial state, nothing after it
        assert names == [f"old{i:02}" for i in range(len(names))] and len(names) < 12
    finally:
        await api.close()


async def test_a_slow_reader_that_keeps_up_is_not_closed(small_bound: EmbeddedServer) -> None:
    """Events bigger in total than the bound, read as they come: nothing is closed."""
    srv = small_bound
    api = Api(srv.url)
    try:
        _, first = await api.post(CMS, configmap("first"))
        rv = first["metadata"]["resourceVersion"]
        task = asyncio.get_running_loop().create_task(
            watch_lines(api, f"{CMS}?watch=1&resourceVersion={rv}", lambda evs: len(evs) == 12)
        )
        await asyncio.sleep(0.1)
        for i in range(12):
            await api.post(CMS, configmap(f"cm{i}", {"k": "x" * (512 * 1024)}))
            await asyncio.sleep(0.02)
        got = await task
        assert len(got) == 12
        assert srv.app.hub.terminated == {}
    finally:
        await api.close()


# -- the pieces ----------------------------------------------------------------------


def event(key: str, size: int, rev: int = 1) -> Event:
    return Event("ADDED", key, rev, {"metadata": {"name": key.rsplit("/", 1)[-1]}}, None, size)


def test_a_watcher_lagging_while_sending_overflows_and_leaves_the_hub() -> None:
    store = MemoryStore()
    hub = WatchHub(store, max_backlog_bytes=1000)
    slow = hub.new_watcher("/core/configmaps/", None)
    hub.register(slow)
    busy = hub.new_watcher("/core/configmaps/", None)
    hub.register(busy)
    other = hub.new_watcher("/apps/deployments/", None)
    hub.register(other)
    slow.sending = True  # its stream waits for the client
    for i in range(3):
        hub.dispatch(event(f"/core/configmaps/default/c{i}", 400, i + 1))
    assert slow.overflowed and slow.closed and not slow.queue and slow.queued_bytes == 0
    assert slow not in hub.watchers and busy in hub.watchers and other in hub.watchers
    # not sending: a burst may go over the bound without closing the watcher
    assert not busy.closed and busy.queued_bytes == 1200
    assert hub.terminated == {("", "configmaps"): 1}
    assert hub.stats().watchers == {("", "configmaps"): 1, ("apps", "deployments"): 1}
    assert busy.pop().size == 400 and busy.queued_bytes == 800
    busy.sending = True
    hub.dispatch(event("/core/configmaps/default/c9", 300, 9))
    assert busy.closed and hub.terminated == {("", "configmaps"): 2}


def test_default_bound() -> None:
    assert 16 * MiB == DEFAULT_MAX_BACKLOG_BYTES
    hub = WatchHub(MemoryStore())
    assert hub.new_watcher("/core/pods/", None).max_backlog_bytes == DEFAULT_MAX_BACKLOG_BYTES


def test_group_resource_of_prefixes() -> None:
    assert group_resource("/core/configmaps/") == ("", "configmaps")
    assert group_resource("/core/configmaps/default/") == ("", "configmaps")
    assert group_resource("/demo.kubewerk.dev/databases/ns/") == ("demo.kubewerk.dev", "databases")


def test_encoded_cache_drops_old_encodings_from_their_events() -> None:
    cache = EncodedCache(max_bytes=250)
    events = [WatchEvent("ADDED", {}, 100, shared=True) for _ in range(4)]
    for i, ev in enumerate(events):
        ev.encoded_key, ev.encoded = "v1", bytes([i]) * 100
        cache.add(ev, ev.encoded)
    assert [ev.encoded is not None for ev in events] == [False, False, True, True]
    assert cache.bytes == 200
    # an event gone (no longer referenced) does not keep its encoding in the cache beyond its turn
    del events[2:]
    late = WatchEvent("ADDED", {}, 100, shared=True)
    late.encoded_key, late.encoded = "v1", b"z" * 100
    cache.add(late, late.encoded)
    assert cache.bytes <= 250 and late.encoded is not None


def test_chunks_join_small_lines_and_pass_large_ones_through() -> None:
    big = b"B" * (CHUNK_BYTES + 10)
    small = [b"a" * 1000] * 70
    out = list(_chunks([*small, big, b"c\n"]))
    assert out[-2] is big and out[-1] == b"c\n"
    assert all(len(c) <= CHUNK_BYTES for c in out[:-2])
    assert b"".join(out) == b"".join([*small, big, b"c\n"])
