"""Direct writes: an idle watch stream's events are written by the hub's flush, not the stream.

The bytes must be exactly those uvicorn's ``send`` writes (chunk framing); the flush writes
only when ``send`` would not wait (client connected, response open, transport not paused),
each watcher's whole queue in one write; a queue the flush cannot write wakes the stream,
which writes it and every later event in order. Streams whose ``send`` is wrapped (the
audit log) and Table streams keep the ASGI path.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from typing import Any

import orjson
import pytest
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from kubewerk.apiserver.httpproto import DirectBody, chunk_frame, direct_body
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.storage.base import Event
from kubewerk.apiserver.storage.memory import MemoryStore
from kubewerk.apiserver.watch import FLUSH_SLICE, Watcher, WatchEvent, WatchHub
from tests.apiserver.helpers import DB_PATH, Api, database
from tests.apiserver.test_watch_backlog import StalledWatch


class FakeTransport:
    """Records writes; closing and write buffer as a test sets them."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def cycle(method: str = "GET") -> tuple[RequestResponseCycle, FakeTransport]:
    transport = FakeTransport()
    scope: Any = {"type": "http", "method": method, "http_version": "1.1", "path": "/"}
    c = RequestResponseCycle(
        scope=scope,
        transport=transport,  # type: ignore[arg-type]
        flow=FlowControl(transport),  # type: ignore[arg-type]
        logger=logging.getLogger("test"),
        access_logger=logging.getLogger("test.access"),
        access_log=False,
        default_headers=[],
        message_event=asyncio.Event(),
        expect_100_continue=False,
        keep_alive=True,
        on_response=lambda: None,
    )
    return c, transport


START = {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"x")]}


@pytest.mark.parametrize(
    "size", [1, 9, 10, 15, 16, 17, 255, 256, 4095, 4096, 65535, 65536, 65537, 1 << 20]
)
async def test_chunk_frame_is_what_uvicorns_send_writes(size: int) -> None:
    c, transport = cycle()
    await c.send(START)  # type: ignore[arg-type]
    # hostile content: CRLFs, a fake last chunk, hex digits and NUL bytes inside the body
    body = (b"0\r\n\r\nA\r\n\x00ff" * (size // 10 + 1))[:size]
    transport.writes.clear()
    await c.send({"type": "http.response.body", "body": body, "more_body": True})
    assert transport.writes == [chunk_frame(body)]


async def test_direct_body_only_for_uvicorns_own_send_of_a_started_chunked_response() -> None:
    c, _ = cycle()
    assert direct_body(c.send) is None  # nothing sent yet: framing unknown
    await c.send(START)  # type: ignore[arg-type]
    assert isinstance(direct_body(c.send), DirectBody)

    async def wrapped(message: Any) -> None:  # a middleware, the audit log
        await c.send(message)

    assert direct_body(wrapped) is None
    sized, _ = cycle()
    await sized.send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]}
    )
    assert direct_body(sized.send) is None
    head, _ = cycle("HEAD")
    await head.send(START)  # type: ignore[arg-type]
    assert direct_body(head.send) is None
    assert direct_body(print) is None


@pytest.mark.parametrize("state", ["paused", "disconnected", "closing", "complete"])
async def test_direct_body_writes_only_when_send_would_not_wait(state: str) -> None:
    c, transport = cycle()
    await c.send(START)  # type: ignore[arg-type]
    body = direct_body(c.send)
    assert body is not None and body.writable()
    assert body.write(chunk_frame(b"a\n"))
    assert transport.writes[-1] == chunk_frame(b"a\n")
    if state == "paused":
        c.flow.pause_writing()
    elif state == "disconnected":
        c.disconnected = True
    elif state == "closing":
        transport.closing = True
    else:
        await c.send({"type": "http.response.body", "body": b"", "more_body": False})
    written = len(transport.writes)
    assert not body.writable()
    assert not body.write(chunk_frame(b"b\n"))
    assert len(transport.writes) == written
    if state == "paused":
        c.flow.resume_writing()
        assert body.write(chunk_frame(b"b\n"))


class Flusher:
    """A stand-in for the stream's flush: writes (records) the whole queue, or refuses."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self.written: list[WatchEvent] = []
        self.refuse = False

    def __call__(self) -> bool:
        if self.refuse:
            return False
        while self.watcher.queue:
            self.written.append(self.watcher.pop())
        return True


def waiting_watcher(hub: WatchHub) -> tuple[Watcher, Flusher, asyncio.Future[None]]:
    """A registered watcher whose stream waits in this thread's running loop with the
    flush allowed to write (what ``WatchStream._send_events`` sets up)."""
    loop = asyncio.get_running_loop()
    hub.attach(loop)
    w = hub.new_watcher("/p/", None)
    hub.register(w)
    flusher = Flusher(w)
    w.thread = threading.get_ident()
    waiter = w.waiter = loop.create_future()
    w.direct = flusher
    return w, flusher, waiter


def events(n: int) -> list[WatchEvent]:
    return [WatchEvent("ADDED", {"n": i}, 10, shared=True) for i in range(n)]


async def test_a_waiting_stream_is_flushed_by_the_hub_not_woken() -> None:
    hub = WatchHub(MemoryStore())
    w, flusher, waiter = waiting_watcher(hub)
    evs = events(3)
    w.push(evs[0])
    w.push(evs[1])
    # queued for the flush: nothing written yet, the stream is not woken
    assert list(w.queue) == evs[:2] and w.flush_pending and not flusher.written
    assert list(hub._flush_list) == [w]  # listed once for both events
    await asyncio.sleep(0)  # the loop runs the flush
    assert flusher.written == evs[:2] and not w.queue and w.queued_bytes == 0
    assert not waiter.done() and w.direct is flusher and not w.flush_pending
    w.push(evs[2])
    await asyncio.sleep(0)
    assert flusher.written == evs and not waiter.done()
    hub.close()


async def test_a_refused_flush_wakes_the_stream_with_the_queue_in_order() -> None:
    hub = WatchHub(MemoryStore())
    w, flusher, waiter = waiting_watcher(hub)
    evs = events(4)
    flusher.refuse = True
    w.push(evs[0])
    w.push(evs[1])
    await asyncio.sleep(0)
    # nothing written, the stream woken to write the queue itself, no more flushing
    assert waiter.done() and w.direct is None and list(w.queue) == evs[:2]
    w.push(evs[2])  # behind the others, for the stream
    assert list(w.queue) == evs[:3] and w.queued_bytes == 30 and not flusher.written
    assert not w.flush_pending and not hub._flush_list
    hub.close()


async def test_a_push_from_another_thread_wakes_the_stream() -> None:
    hub = WatchHub(MemoryStore())
    w, flusher, waiter = waiting_watcher(hub)
    (ev,) = events(1)
    await asyncio.to_thread(w.push, ev)
    assert w.direct is None and list(w.queue) == [ev] and not w.flush_pending
    assert not hub._flush_list
    await asyncio.sleep(0)
    assert waiter.done() and not flusher.written
    hub.close()


async def test_a_stream_woken_before_its_flush_writes_the_queue_itself() -> None:
    hub = WatchHub(MemoryStore())
    w, flusher, waiter = waiting_watcher(hub)
    evs = events(2)
    w.push(evs[0])
    w.wake()  # a timer (bookmark, deadline) before the flush ran
    w.push(evs[1])
    await asyncio.sleep(0)
    assert not flusher.written and list(w.queue) == evs and waiter.done()
    hub.close()


async def test_the_flush_writes_a_slice_of_watchers_per_turn_of_the_loop() -> None:
    hub = WatchHub(MemoryStore())
    flushers = [waiting_watcher(hub)[1] for _ in range(FLUSH_SLICE + 5)]
    hub.dispatch(Event("ADDED", "/p/x", 1, {"n": 0}, None, 10))
    assert not any(f.written for f in flushers)
    await asyncio.sleep(0)
    assert sum(1 for f in flushers if f.written) == FLUSH_SLICE
    await asyncio.sleep(0)
    assert all(len(f.written) == 1 for f in flushers)
    assert hub._last_framed == b"" and not hub._flush_armed
    hub.close()


async def test_wake_and_close_end_direct_writes() -> None:
    loop = asyncio.get_running_loop()
    w = Watcher("/p/", None)
    w.waiter = loop.create_future()
    w.direct = lambda ev: True
    w.wake()  # a timer (deadline, bookmark): the stream runs, writes through send
    assert w.direct is None
    w.direct = lambda ev: True
    w.close()
    assert w.direct is None
    w.direct = lambda ev: True
    w.finish()
    assert w.direct is None


def read_chunked(sock: socket.socket, events: int, timeout: float = 5.0) -> list[dict[str, Any]]:
    """Read a chunked watch response from a blocking socket until ``events`` events have
    come, checking every chunk's framing (size line, exact length, CRLF after it)."""
    sock.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    head, buf = buf.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in head.lower()
    body = b""
    while body.count(b"\n") < events:
        while b"\r\n" not in buf:
            buf += sock.recv(65536)
        size_line, rest = buf.split(b"\r\n", 1)
        size = int(size_line, 16)
        assert size > 0 and size_line == b"%x" % size
        while len(rest) < size + 2:
            rest += sock.recv(65536)
        assert rest[size : size + 2] == b"\r\n"
        body += rest[:size]
        buf = rest[size + 2 :]
    return [orjson.loads(line) for line in body.splitlines()]


async def test_idle_streams_get_events_from_the_hubs_flush_without_waking(
    api: Api, aserver: EmbeddedServer
) -> None:
    """Over HTTP: plain watches (one with a label selector whose transitions are events
    made for it alone) receive correctly framed events in order, written directly (their
    stream's wait is never woken); a Table watch takes the ASGI path."""
    server = aserver
    hub = server.app.hub
    await api.post(DB_PATH, database("a"))
    host, port = server.host, server.port
    paths = [
        DB_PATH + "?watch=1&resourceVersion=0",
        DB_PATH + "?watch=1&resourceVersion=0",
        DB_PATH + "?watch=1&resourceVersion=0&labelSelector=tier%3Dgold",
    ]
    socks = []
    for path in paths:
        sock = socket.create_connection((host, port))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        socks.append(sock)
    table = socket.create_connection((host, port))
    table.sendall(
        f"GET {paths[0]} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Accept: application/json;as=Table;v=v1;g=meta.k8s.io\r\n\r\n".encode()
    )
    for _ in range(200):
        if len(hub.watchers) == 4 and all(w.waiter is not None for w in hub.watchers):
            break
        await asyncio.sleep(0.01)
    plain = [w for w in hub.watchers if w.direct is not None]
    assert len(plain) == 3  # the Table stream waits without direct writes
    waiters = {id(w): w.waiter for w in plain}
    await api.post(DB_PATH, database("b", labels={"tier": "gold"}))
    await api.patch(f"{DB_PATH}/b", {"metadata": {"labels": {"tier": "silver"}}})
    await api.delete(f"{DB_PATH}/a")
    loop = asyncio.get_running_loop()
    got = [
        await loop.run_in_executor(None, read_chunked, sock, n)
        for sock, n in zip(socks, (4, 4, 2), strict=True)
    ]
    tabled = await loop.run_in_executor(None, read_chunked, table, 4)
    for sock in (*socks, table):
        sock.close()
    for events in got[:2]:
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "a"),
            ("ADDED", "b"),
            ("MODIFIED", "b"),
            ("DELETED", "a"),
        ]
    assert got[0] == got[1]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got[2]] == [
        ("ADDED", "b"),
        ("DELETED", "b"),  # left the selector: DELETED with the new object, as kube sends
    ]
    assert got[2][1]["object"]["metadata"]["labels"] == {"tier": "silver"}
    assert [e["object"]["kind"] for e in tabled] == ["Table"] * 4
    # the three plain streams were never woken for the three commits
    assert {id(w): w.waiter for w in plain} == waiters
    # the flush keeps no framed bytes once it is done: the shared cache holds the lines
    assert hub._last_framed == b"" and hub._last_events == () and not hub._flush_armed
    ring = [encoded for _, encoded in hub.encoded._ring]
    assert len(ring) == 3 and all(line.endswith(b"}\n") for line in ring)
    assert hub.encoded.bytes == sum(map(len, ring))


async def test_an_unread_stream_never_has_more_than_the_high_water_mark_and_one_event_buffered(
    api: Api, aserver: EmbeddedServer
) -> None:
    """A client that stops reading: direct writes stop once the transport pauses, the
    stream takes over (waiting on its client), and the server's write buffer for it stays
    within the high-water mark plus one event."""
    server = aserver
    hub = server.app.hub
    hub.max_stall = 60.0
    _, first = await api.post(DB_PATH, database("first"))
    rv = first["metadata"]["resourceVersion"]
    stalled = await StalledWatch.open(
        server.host, server.port, f"{DB_PATH}?watch=1&resourceVersion={rv}"
    )
    try:
        for _ in range(200):
            if hub.watchers and all(w.direct is not None for w in hub.watchers):
                break
            await asyncio.sleep(0.01)
        assert server._server is not None
        connections = server._server.server_state.connections
        (watching,) = [c for c in connections if c._responding()]
        # a small kernel send buffer on the server side: the transport's own buffer fills soon
        watching.transport.get_extra_info("socket").setsockopt(
            socket.SOL_SOCKET, socket.SO_SNDBUF, 4096
        )
        note = "x" * 20_000
        for i in range(60):
            status, body = await api.post(
                DB_PATH, database(f"big-{i:03d}", annotations={"note": note})
            )
            assert status == 201, body
        (watcher,) = hub.watchers
        assert watcher.queue  # the stream waits on its client with events queued
        assert watcher.direct is None
        transport = watching.transport
        high = transport.get_write_buffer_limits()[1]
        assert 0 < transport.get_write_buffer_size() <= high + 30_000
        events, _ = await stalled.read_to_end(timeout=0.3)
        names = [e["object"]["metadata"]["name"] for e in events]
        assert names == [f"big-{i:03d}" for i in range(len(names))] and names
    finally:
        stalled.close()


async def test_audited_server_keeps_the_asgi_path(tmp_path: Any) -> None:
    """With the audit log the application's ``send`` is wrapped: no direct writes, and
    the watch works as before."""
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    async with EmbeddedServer(
        "memory", audit_policy_file=policy, audit_log_path=tmp_path / "audit.log"
    ) as srv:
        client = Api(srv.url)
        try:
            await client.install_demo_crd()
            task = asyncio.create_task(
                client.watch(DB_PATH + "?watch=1&resourceVersion=0", stop_after=1)
            )
            for _ in range(200):
                if srv.app.hub.watchers:
                    break
                await asyncio.sleep(0.01)
            assert all(w.direct is None for w in srv.app.hub.watchers)
            await client.post(DB_PATH, database("a"))
            (event,) = await asyncio.wait_for(task, 5)
            assert event["object"]["metadata"]["name"] == "a"
        finally:
            await client.close()


def read_chunks(sock: socket.socket, count: int, timeout: float = 5.0) -> list[bytes]:
    """The first ``count`` chunks of a chunked watch response, each as its payload."""
    sock.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    buf = buf.split(b"\r\n\r\n", 1)[1]
    chunks: list[bytes] = []
    while len(chunks) < count:
        while b"\r\n" not in buf:
            buf += sock.recv(65536)
        size_line, rest = buf.split(b"\r\n", 1)
        size = int(size_line, 16)
        while len(rest) < size + 2:
            rest += sock.recv(65536)
        chunks.append(rest[:size])
        buf = rest[size + 2 :]
    return chunks


async def test_events_waiting_for_the_flush_go_out_in_one_write_framed_once(
    api: Api, aserver: EmbeddedServer
) -> None:
    """Two commits before the flush runs: every plain stream gets both events in one
    chunk, in order, and the streams serving the same version write the same bytes."""
    server = aserver
    hub = server.app.hub
    status, first = await api.post(DB_PATH, database("a"))
    assert status == 201, first
    host, port = server.host, server.port
    socks = []
    for _ in range(3):
        sock = socket.create_connection((host, port))
        path = DB_PATH + "?watch=1&resourceVersion=" + first["metadata"]["resourceVersion"]
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        socks.append(sock)
    for _ in range(200):
        if len(hub.watchers) == 3 and all(w.direct is not None for w in hub.watchers):
            break
        await asyncio.sleep(0.01)
    writes: list[bytes] = []

    class Spy:
        def __init__(self, body: DirectBody) -> None:
            self.body = body

        def writable(self) -> bool:
            return self.body.writable()

        def write(self, framed: bytes) -> bool:
            writes.append(framed)
            return self.body.write(framed)

    for w in hub.watchers:
        stream = w.direct.__self__  # type: ignore[union-attr]
        stream._body = Spy(stream._body)
    store = server.app.store
    (key, obj), *_ = store.list("/demo.kubewerk.dev/databases/default/")[0]
    # two commits with no turn of the loop in between (what a busy server sees)
    for n in ("1", "2"):
        changed = {**obj, "metadata": {**obj["metadata"], "labels": {"n": n}}}
        store.update(key, changed, int(obj["metadata"]["resourceVersion"]))
        obj = store.get(key)
    loop = asyncio.get_running_loop()
    got = [await loop.run_in_executor(None, read_chunks, sock, 1) for sock in socks]
    for sock in socks:
        sock.close()
    for (chunk,) in got:
        lines = [orjson.loads(line) for line in chunk.splitlines()]
        assert [(e["type"], e["object"]["metadata"]["labels"]) for e in lines] == [
            ("MODIFIED", {"n": "1"}),
            ("MODIFIED", {"n": "2"}),
        ]
    assert len(writes) == 3 and writes[0] is writes[1] is writes[2]


async def test_a_write_that_raises_wakes_its_stream_and_the_flush_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub = WatchHub(MemoryStore())
    bad, _, bad_waiter = waiting_watcher(hub)
    _, good_flush, good_waiter = waiting_watcher(hub)

    def boom() -> bool:
        raise RuntimeError("transport gone")

    bad.direct = boom
    hub.dispatch(Event("ADDED", "/p/x", 1, {"n": 0}, None, 10))
    with caplog.at_level(logging.ERROR, "kubewerk.apiserver.watch"):
        await asyncio.sleep(0)
    assert bad_waiter.done() and bad.direct is None and len(bad.queue) == 1
    assert len(good_flush.written) == 1 and not good_waiter.done()
    assert not hub._flush_armed and "transport gone" in caplog.text
    # the next commit is flushed as usual
    hub.dispatch(Event("ADDED", "/p/y", 2, {"n": 1}, None, 10))
    await asyncio.sleep(0)
    assert len(good_flush.written) == 2
    hub.close()


async def test_a_new_loop_forgets_the_old_flush_and_lists_watchers_again() -> None:
    hub = WatchHub(MemoryStore())
    w, flusher, _ = waiting_watcher(hub)
    (ev, later) = events(2)
    w.push(ev)  # listed, the flush armed in this loop
    other = asyncio.new_event_loop()
    hub.attach(other)  # the server started again in another loop
    other.close()
    assert not w.flush_pending and not hub._flush_list
    hub.attach(asyncio.get_running_loop())
    w.push(later)  # listed again, not left waiting for a flush that will never run
    await asyncio.sleep(0)
    assert flusher.written == [ev, later]
    hub.close()
