"""Per-watcher backlog bounded in bytes and in time: a watcher that does not keep up is
closed alone.

Over real HTTP: one client opens a watch and stops reading; 1 MiB objects are written.
Its queue never holds more than the bound, it is closed (its stream ends cleanly, so the
client re-watches), while another watcher receives every event and LISTs stay fast. A
client that stops reading with fewer bytes waiting is closed after the stall bound, and
its connection is closed when it still takes nothing after a second one.
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
    DEFAULT_MAX_STALL,
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
        srv.app.hub.max_stall = 60.0  # these tests are about the byte bound
        yield srv


STALL = 0.4


@pytest.fixture
async def short_stall() -> AsyncIterator[EmbeddedServer]:
    async with EmbeddedServer("memory", bookmark_interval=60.0) as srv:
        srv.app.hub.max_stall = STALL  # the byte bound stays the default 16 MiB
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

    async def read_all(self, timeout: float = 10.0) -> tuple[list[dict[str, Any]], str]:
        """Every event, and how the response ended: ``"end"`` (its last chunk),
        ``"closed"`` (the server closed the connection first) or ``"timeout"``."""
        body = bytearray()

        async def chunks() -> str:
            while True:
                try:
                    size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                    data = await self.reader.readexactly(size + 2)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return "closed"
                if size == 0:
                    return "end"
                body.extend(data[:-2])

        try:
            how = await asyncio.wait_for(chunks(), timeout)
        except TimeoutError:
            how = "timeout"
        return [orjson.loads(line) for line in bytes(body).splitlines() if line.strip()], how

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
        # the stalled watcher is gone; the fast one goes once the server sees its client leave
        for _ in range(500):
            if not hub.watchers:
                break
            await asyncio.sleep(0.01)
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


async def stall_a_watch(srv: EmbeddedServer, n: int) -> tuple[StalledWatch, float]:
    """A watch that never reads while ``n`` ConfigMaps of 512 KiB are written (more than
    the connection's buffers take, far less than the byte bound); when the last was written."""
    api = Api(srv.url)
    try:
        _, first = await api.post(CMS, configmap("first"))
        rv = first["metadata"]["resourceVersion"]
        stalled = await StalledWatch.open(srv.host, srv.port, f"{CMS}?watch=1&resourceVersion={rv}")
        await asyncio.sleep(0.1)
        for i in range(n):
            status, body = await api.post(CMS, configmap(f"cm{i}", {"k": "s" * (512 * 1024)}))
            assert status == 201, body
        return stalled, time.monotonic()
    finally:
        await api.close()


async def test_a_watch_whose_client_takes_nothing_is_closed_after_the_stall_bound(
    short_stall: EmbeddedServer,
) -> None:
    """Under the byte bound, a client that takes nothing is closed once events have waited
    the stall bound; still taking nothing, its connection is closed after a second one."""
    srv = short_stall
    hub = srv.app.hub
    stalled, written = await stall_a_watch(srv, 24)  # 12 MiB: over the socket buffers
    assert hub.stats().queued_bytes < DEFAULT_MAX_BACKLOG_BYTES
    deadline = written + 10
    while not hub.terminated and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert hub.terminated == {("", "configmaps"): 1}
    assert not hub.watchers and hub.stats().queued_bytes == 0
    # the server gives up on the rest of the response after another STALL
    await asyncio.sleep(3 * STALL)
    events, how = await stalled.read_all()
    stalled.close()
    assert how == "closed"
    names = [e["object"]["metadata"]["name"] for e in events]
    assert names == [f"cm{i}" for i in range(len(names))] and len(names) < 24
    assert srv.app.hub.watchers == set()


async def test_a_stalled_client_that_reads_in_time_sees_the_normal_end(
    short_stall: EmbeddedServer,
) -> None:
    srv = short_stall
    hub = srv.app.hub
    stalled, written = await stall_a_watch(srv, 24)
    deadline = written + 10
    while not hub.terminated and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert hub.terminated == {("", "configmaps"): 1}
    events, how = await stalled.read_all()  # within STALL of the closing
    stalled.close()
    assert how == "end"
    names = [e["object"]["metadata"]["name"] for e in events]
    assert names == [f"cm{i}" for i in range(len(names))] and len(names) < 24


async def test_a_reading_watch_under_the_stall_bound_is_not_closed(
    short_stall: EmbeddedServer,
) -> None:
    """Stalled for less than the bound, then reading: every event, nothing closed."""
    srv = short_stall
    # the bound counts from the first event queued behind the unread write, which comes
    # while the twelve writes are still being made: a bound the test's own writes cannot
    # use up on a loaded machine
    srv.app.hub.max_stall = 3.0
    stalled, _ = await stall_a_watch(srv, 12)
    await asyncio.sleep(STALL / 4)
    api = Api(srv.url)
    try:
        await api.post(CMS, configmap("last"))
    finally:
        await api.close()
    events, how = await stalled.read_all(timeout=1.5)
    stalled.close()
    assert how == "timeout"  # still open: the watch goes on
    assert [e["object"]["metadata"]["name"] for e in events] == [
        *(f"cm{i}" for i in range(12)),
        "last",
    ]
    assert srv.app.hub.terminated == {}


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
    assert DEFAULT_MAX_STALL == 5.0
    hub = WatchHub(MemoryStore())
    watcher = hub.new_watcher("/core/pods/", None)
    assert watcher.max_backlog_bytes == DEFAULT_MAX_BACKLOG_BYTES
    assert watcher.max_stall == DEFAULT_MAX_STALL
    with pytest.raises(ValueError, match="max_stall"):
        WatchHub(MemoryStore(), max_stall=0)


async def test_a_stalled_writer_is_closed_then_its_write_cancelled() -> None:
    """The timers alone: events waiting behind a write close the watcher after
    ``max_stall``; the write still waiting ``max_stall`` later is cancelled."""
    hub = WatchHub(MemoryStore(), max_stall=0.05)
    watcher = hub.new_watcher("/core/configmaps/", None)
    hub.register(watcher)
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    writer = asyncio.get_running_loop().create_task(asyncio.wait_for(never, 5))
    watcher.sending, watcher.writer = True, writer
    hub.dispatch(event("/core/configmaps/default/c0", 10, 1))
    assert watcher.stall_timer is not None and not watcher.closed
    await asyncio.sleep(0.08)
    assert watcher.overflowed and watcher not in hub.watchers and not watcher.queue
    assert hub.terminated == {("", "configmaps"): 1} and not writer.done()
    await asyncio.sleep(0.08)
    assert watcher.abandoned and writer.cancelled()


async def test_a_write_taken_in_time_disarms_the_stall_timer() -> None:
    hub = WatchHub(MemoryStore(), max_stall=0.05)
    watcher = hub.new_watcher("/core/configmaps/", None)
    hub.register(watcher)
    watcher.sending, watcher.writer = True, asyncio.current_task()
    hub.dispatch(event("/core/configmaps/default/c0", 10, 1))
    watcher.write_done()
    assert watcher.stall_timer is None
    await asyncio.sleep(0.08)
    assert not watcher.closed and hub.terminated == {} and len(watcher.queue) == 1


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
