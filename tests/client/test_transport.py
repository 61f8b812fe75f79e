"""The client's HTTP/1.1 transport against the embedded API server and against small
asyncio servers that misbehave on purpose (closed keep-alives, Connection: close, odd
chunk splits, garbage, stalls, TLS with a throwaway CA, client certificates)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import itertools
import os
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import uvloop

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import (
    CONFIGMAP,
    SECRET,
    Client,
    ClientConfig,
    ConfigError,
    RetryPolicy,
    ServerUnreachable,
)
from kubewerk.client.config import Authenticator, Credentials
from kubewerk.client.transport import HIGH_WATER, ConnectError, ConnectionPool
from tests.client.pki import issue, server_context

NO_RETRY = RetryPolicy(max_retries=0)
SECRET_PATH = "/api/v1/namespaces/default/secrets/s"

# -- a raw test server ------------------------------------------------------------------

Request = tuple[str, dict[str, str], bytes]  # request line, lower-cased headers, body
Handler = Callable[["Conn"], Awaitable[None]]


class Conn:
    """One accepted connection of :class:`RawServer`, with request reading helpers."""

    def __init__(
        self,
        server: RawServer,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        number: int,
    ) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.number = number

    async def read_request(self) -> Request | None:
        """The next request, or None when the client closed the connection."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        self.server.requests.append((self.number, lines[0]))
        return lines[0], headers, body

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()


class RawServer:
    """An asyncio TCP (or TLS) server on 127.0.0.1 calling ``handler`` per connection;
    counts connections, concurrent connections and requests."""

    def __init__(self, handler: Handler, ssl_context: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.ssl_context = ssl_context
        self.connections = 0
        self.active = 0
        self.max_active = 0
        self.closed_by_client = 0
        self.requests: list[tuple[int, str]] = []
        self.peer_names: list[str] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        cert = writer.get_extra_info("peercert")
        if cert:
            self.peer_names.append(dict(x[0] for x in cert["subject"])["commonName"])
        try:
            await self.handler(Conn(self, reader, writer, self.connections))
            if reader.at_eof():
                self.closed_by_client += 1
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            self.active -= 1
            writer.close()


def answer(
    body: Any = None,
    *,
    status: str = "200 OK",
    headers: tuple[str, ...] = (),
    raw: bytes | None = None,
) -> bytes:
    """A Content-Length response carrying ``body`` as JSON (or ``raw`` bytes)."""
    data = (
        raw
        if raw is not None
        else orjson.dumps(
            body if body is not None else {"kind": "Secret", "metadata": {"name": "s"}}
        )
    )
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    head += "".join(f"{h}\r\n" for h in headers)
    return head.encode() + b"\r\n" + data


async def keep_answering(conn: Conn) -> None:
    """A well-behaved keep-alive handler."""
    while await conn.read_request() is not None:
        await conn.send(answer())


# -- against the embedded API server ---------------------------------------------------


async def test_keep_alive_reuses_one_connection_and_lifo(aserver: EmbeddedServer) -> None:
    async with Client.from_url(aserver.url) as c:
        for i in range(20):
            await c.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"cm{i}"},
                    "data": {"i": str(i)},
                }
            )
        pool = c._pool
        assert pool is not None and pool.open_count == 1 and pool.idle_count == 1
        got = await asyncio.gather(*(c.get(CONFIGMAP, f"cm{i}", "default") for i in range(20)))
        assert [g["data"]["i"] for g in got] == [str(i) for i in range(20)]
        assert pool.open_count == pool.idle_count and 1 <= pool.open_count <= 20
        first = pool._idle[-1]
        await c.get(CONFIGMAP, "cm0", "default")
        assert pool._idle[-1] is first  # the most recently released connection serves next
    assert pool.open_count == 0 and pool.idle_count == 0


async def test_pool_limit_two_against_the_embedded_server(aserver: EmbeddedServer) -> None:
    async with Client.from_url(aserver.url, connection_limit=2) as c:
        await asyncio.gather(
            *(
                c.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"p{i}"}})
                for i in range(30)
            )
        )
        assert c._pool is not None and c._pool.open_count == 2
        assert len((await c.list(CONFIGMAP, "default")).items) >= 30


async def test_closed_client_reopens_and_close_closes_pooled_connections() -> None:
    async with RawServer(keep_answering) as srv:
        c = Client.from_url(srv.url(), retry=NO_RETRY)
        await c.get(SECRET, "s", "default")
        await c.close()
        await asyncio.sleep(0.05)
        assert srv.active == 0 and srv.closed_by_client == 1  # the pooled connection was closed
        assert (await c.get(SECRET, "s", "default"))["metadata"][
            "name"
        ] == "s"  # as before: reopens
        await c.close()


# -- keep-alive trouble ---------------------------------------------------------------


async def scenario_server_closes_after_every_answer() -> None:
    async def once(conn: Conn) -> None:  # keep-alive advertised, then closed anyway
        if await conn.read_request() is not None:
            await conn.send(answer())

    async with RawServer(once) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        for i in range(30):
            if i % 2:
                await c.get(SECRET, "s", "default")
            else:
                await c.patch(SECRET, "s", {"data": {}}, "default")
        assert srv.connections == 30 and len(srv.requests) == 30


async def test_server_closing_after_every_answer_never_fails_a_request() -> None:
    await scenario_server_closes_after_every_answer()


async def test_idle_close_race_resends_once_even_a_patch() -> None:
    # the server answers the first request, then closes the connection as the second
    # one arrives (what a server closing an idle keep-alive connection looks like)
    async def answer_once_then_close(conn: Conn) -> None:
        await conn.read_request()
        await conn.send(answer())
        await conn.read_request()

    async with (
        RawServer(answer_once_then_close) as srv,
        Client.from_url(srv.url(), retry=NO_RETRY) as c,
    ):
        await c.get(SECRET, "s", "default")
        got = await c.patch(SECRET, "s", {"data": {}}, "default")
        assert got["metadata"]["name"] == "s"
        assert [line.split()[0] for _, line in srv.requests] == ["GET", "PATCH", "PATCH"]
        assert [n for n, _ in srv.requests] == [1, 1, 2]  # resent once, on a fresh connection


async def test_late_close_before_answer_resends_reads_only() -> None:
    async def answer_once_then_close_late(conn: Conn) -> None:
        await conn.read_request()
        await conn.send(answer())
        if await conn.read_request() is not None:
            await asyncio.sleep(0.3)  # longer than the idle-close window: maybe processed

    async with (
        RawServer(answer_once_then_close_late) as srv,
        Client.from_url(srv.url(), retry=NO_RETRY) as c,
    ):
        await c.get(SECRET, "s", "default")
        with pytest.raises(ServerUnreachable) as info:
            await c.patch(SECRET, "s", {"data": {}}, "default")
        assert info.value.why == "the server closed the connection"
        assert [line.split()[0] for _, line in srv.requests] == ["GET", "PATCH"]  # not sent twice
        await c.get(SECRET, "s", "default")  # connection 2 answers once...
        srv.requests.clear()
        # ... and then dies late: a read is resent once, on a fresh connection
        await c.get(SECRET, "s", "default")
        assert [n for n, _ in srv.requests] == [2, 3]


async def test_connection_close_answer_is_honoured() -> None:
    async def close_header(conn: Conn) -> None:
        while await conn.read_request() is not None:  # says close, but leaves the socket open
            await conn.send(answer(headers=("Connection: close",)))

    async with RawServer(close_header) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        for _ in range(3):
            await c.get(SECRET, "s", "default")
        assert srv.connections == 3 and [n for n, _ in srv.requests] == [1, 2, 3]
        assert c._pool is not None and c._pool.idle_count == 0 and c._pool.open_count == 0


async def test_http10_body_until_eof() -> None:
    async def http10(conn: Conn) -> None:
        await conn.read_request()
        await conn.send(
            b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
            b'{"kind": "Secret", "metadata": {"name": "eof"}}'
        )

    async with RawServer(http10) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        assert (await c.get(SECRET, "s", "default"))["metadata"]["name"] == "eof"
        assert (await c.get(SECRET, "s", "default"))["metadata"]["name"] == "eof"
        assert srv.connections == 2


async def test_informational_answer_before_the_real_one() -> None:
    async def early_hints(conn: Conn) -> None:
        while await conn.read_request() is not None:
            await conn.send(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + answer())

    async with RawServer(early_hints) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        for _ in range(2):
            assert (await c.get(SECRET, "s", "default"))["metadata"]["name"] == "s"
        assert srv.connections == 1


# -- bodies ---------------------------------------------------------------------------


def chunked(data: bytes, sizes: list[int]) -> bytes:
    out, i, k = b"", 0, 0
    while i < len(data):
        piece = data[i : i + sizes[k % len(sizes)]]
        out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        i += len(piece)
        k += 1
    return out + b"0\r\n\r\n"


async def test_chunked_bodies_in_odd_splits() -> None:
    body = orjson.dumps(
        {
            "kind": "Secret",
            "metadata": {"name": "chunky"},
            "data": {f"k{i}": "x" * i for i in range(60)},
        }
    )

    async def dribble(conn: Conn) -> None:
        while await conn.read_request() is not None:
            wire = (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                b"Content-Type: application/json\r\n\r\n"
            )
            wire += chunked(body, [1, 7, 300, 2, 4096])
            # written in pieces that cut through the status line, chunk sizes and CRLFs
            cuts = [0, 5, 9, 40, 83, 84, 85, 86, 90, 200, 201, 700, 1500, len(wire)]
            for a, b in itertools.pairwise(cuts):
                await conn.send(wire[a:b])
                await asyncio.sleep(0.001)

    async with RawServer(dribble) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        for _ in range(3):
            got = await c.get(SECRET, "s", "default")
            assert got["metadata"]["name"] == "chunky" and got["data"]["k59"] == "x" * 59
        assert srv.connections == 1  # the chunked body ended cleanly: reused


async def test_gzip_body_is_decoded_other_encodings_refused() -> None:
    doc = {"kind": "Secret", "metadata": {"name": "zipped"}}

    async def zipped(conn: Conn) -> None:
        while (req := await conn.read_request()) is not None:
            assert "accept-encoding" not in req[1]  # we never ask for compression
            if req[0].startswith("GET /api/v1/namespaces/default/secrets/br"):
                await conn.send(
                    answer(raw=b"\x0b\x02\x80{}\x03", headers=("Content-Encoding: br",))
                )
            else:
                await conn.send(
                    answer(
                        raw=gzip.compress(orjson.dumps(doc)), headers=("Content-Encoding: gzip",)
                    )
                )

    async with RawServer(zipped) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        assert await c.get(SECRET, "s", "default") == doc
        with pytest.raises(ServerUnreachable) as info:
            await c.get(SECRET, "br", "default")
        assert info.value.why == (
            "the server answered with Content-Encoding 'br', which "
            "kubewerk does not decode (it sends no Accept-Encoding)"
        )


async def test_malformed_answer_is_a_clear_error_and_the_connection_dropped() -> None:
    async def garbage(conn: Conn) -> None:
        while await conn.read_request() is not None:
            await conn.send(b"HTTP/1.1 abc OK\r\n\r\n")

    async with (
        RawServer(garbage) as srv,
        Client.from_url(srv.url(), retry=RetryPolicy(max_retries=2, base=0.01)) as c,
    ):
        with pytest.raises(ServerUnreachable) as info:
            await c.get(SECRET, "s", "default")
        assert info.value.why.startswith("malformed HTTP response (")
        assert (
            len(srv.requests) == 3 and srv.connections == 3
        )  # reads retried, each on a new connection
        with pytest.raises(ServerUnreachable):
            await c.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
        assert len(srv.requests) == 4  # writes are not
        assert c._pool is not None and c._pool.open_count == 0


async def test_answer_without_request_and_trailing_garbage_drop_the_connection() -> None:
    async def extra(conn: Conn) -> None:
        while await conn.read_request() is not None:
            await conn.send(answer() + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    async with RawServer(extra) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        for _ in range(3):
            await c.get(SECRET, "s", "default")
        assert (
            srv.connections == 3
        )  # a connection that sent two answers to one request is not reused


# -- failures to connect, time limits -----------------------------------------------


async def test_refused_and_stalled() -> None:
    async with Client.from_url("http://127.0.0.1:9", retry=NO_RETRY) as c:
        with pytest.raises(ServerUnreachable) as info:
            await c.get(SECRET, "s", "default")
        assert (
            str(info.value)
            == "cannot reach the API server at http://127.0.0.1:9: connection refused"
        )

    async def stall(conn: Conn) -> None:
        await conn.read_request()
        await asyncio.sleep(5)

    async with (
        RawServer(stall) as srv,
        Client.from_url(srv.url(), retry=NO_RETRY, timeout=0.3) as c,
    ):
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(ServerUnreachable) as info:
            await c.get(SECRET, "s", "default")
        assert info.value.why == "timed out" and loop.time() - started < 2
        assert c._pool is not None and c._pool.open_count == 0  # the stalled connection was dropped


async def test_connect_timeout_is_bounded() -> None:
    # a listener whose accept queue is full: the kernel drops further SYNs, connects hang
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    for _ in range(4):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(listener.getsockname())
        fillers.append(s)
    try:
        pool = ConnectionPool("127.0.0.1", listener.getsockname()[1], connect_timeout=0.2)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(ConnectError) as info:
            await pool.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", safe=True, timeout=5)
        assert info.value.why == "timed out" and loop.time() - started < 2
        assert pool.open_count == 0
    finally:
        for s in fillers:
            s.close()
        listener.close()


async def test_pool_limit_two_with_many_concurrent_requests() -> None:
    async def slow(conn: Conn) -> None:
        while await conn.read_request() is not None:
            await asyncio.sleep(0.01)
            await conn.send(answer())

    async with (
        RawServer(slow) as srv,
        Client.from_url(srv.url(), retry=NO_RETRY, connection_limit=2) as c,
    ):
        results = await asyncio.gather(*(c.get(SECRET, "s", "default") for _ in range(40)))
        assert len(results) == 40 and srv.max_active == 2 and srv.connections == 2
        # cancelled waiters give their turn on
        tasks = [asyncio.create_task(c.get(SECRET, "s", "default")) for _ in range(10)]
        await asyncio.sleep(0.015)
        for t in tasks[2:6]:
            t.cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert sum(isinstance(d, dict) for d in done) == 6
        assert c._pool is not None and c._pool.open_count == 2 and not c._pool._waiters


# -- watch streams ------------------------------------------------------------------------


def event(name: str, rv: int) -> bytes:
    return (
        orjson.dumps(
            {
                "type": "ADDED",
                "object": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name, "resourceVersion": str(rv)},
                },
            }
        )
        + b"\n"
    )


async def endless_watch(conn: Conn) -> None:
    while (req := await conn.read_request()) is not None:
        if "watch=1" not in req[0]:
            await conn.send(answer())
            continue
        await conn.send(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        i = 0
        while True:  # never ends; events split across chunks
            await conn.send(chunked(event(f"cm{i}", i), [5, 11, 1000])[:-5])
            i += 1
            await asyncio.sleep(0.005)


async def scenario_watch_abandoned_midway() -> None:
    async with RawServer(endless_watch) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        # closed explicitly (aclosing): the connection goes at once
        async with contextlib.aclosing(c.watch(CONFIGMAP, "default", timeout_seconds=30)) as stream:
            seen = []
            async for ev in stream:
                seen.append(ev.raw["metadata"]["name"])
                if len(seen) == 3:
                    break
        assert seen == ["cm0", "cm1", "cm2"]
        assert c._pool is not None and c._pool.open_count == 0 and c._pool.idle_count == 0
        # left behind with a plain break: closed when the generator is finalised (next loop turn)
        async for _ in c.watch(CONFIGMAP, "default", timeout_seconds=30):
            break
        for _ in range(100):
            if c._pool.open_count == 0:
                break
            await asyncio.sleep(0.01)
        assert c._pool.open_count == 0 and c._pool.idle_count == 0
        await c.get(SECRET, "s", "default")
        assert srv.connections == 3  # neither half-read watch connection was reused
        for _ in range(100):
            if srv.active == 1:
                break
            await asyncio.sleep(0.01)
        assert srv.active == 1  # and both were closed


async def test_watch_abandoned_midway_closes_its_connection() -> None:
    await scenario_watch_abandoned_midway()


async def test_watch_that_ends_cleanly_returns_its_connection() -> None:
    async def short(conn: Conn) -> None:
        while (req := await conn.read_request()) is not None:
            if "watch=1" in req[0]:
                await conn.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                await conn.send(chunked(event("a", 1) + event("b", 2), [3, 50]))
            else:
                await conn.send(answer())

    async with RawServer(short) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        names = [ev.raw["metadata"]["name"] async for ev in c.watch(CONFIGMAP, "default")]
        assert names == ["a", "b"]
        await c.get(SECRET, "s", "default")
        assert srv.connections == 1


async def test_watch_stream_backpressure() -> None:
    line = event("x" * 1000, 1)
    total = 8 * HIGH_WATER

    async def firehose(conn: Conn) -> None:
        await conn.read_request()
        await conn.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        sent = 0
        while sent < total:
            block = line * 64
            await conn.send(f"{len(block):x}\r\n".encode() + block + b"\r\n")
            sent += len(block)
        await conn.send(b"0\r\n\r\n")

    async with RawServer(firehose) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        count = 0
        biggest = 0
        async for _ in c.watch(CONFIGMAP, "default", timeout_seconds=30):
            count += 1
            if count % 500 == 0:
                await asyncio.sleep(0.02)  # a slow consumer: the socket is not drained meanwhile
                conn = next(iter(c._pool._conns))  # type: ignore[union-attr]
                biggest = max(biggest, conn._buffered)
        block = len(line) * 64
        assert count == -(-total // block) * 64  # every event, none lost to pausing
        assert biggest <= HIGH_WATER + (1 << 18)  # paused at the high-water mark (plus one read)
        assert srv.connections == 1


async def test_stream_reads_stop_at_the_deadline() -> None:
    async def headers_then_nothing(conn: Conn) -> None:
        await conn.read_request()
        await conn.send(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + chunked(event("a", 1), [100])[:-5]
        )
        await asyncio.sleep(5)

    async with RawServer(headers_then_nothing) as srv:
        pool = ConnectionPool("127.0.0.1", srv.port)
        loop = asyncio.get_running_loop()
        started = loop.time()
        resp = await pool.stream(
            b"GET /w HTTP/1.1\r\nHost: x\r\n\r\n", connect_timeout=1, deadline=started + 0.3
        )
        assert resp.status == 200 and resp.headers.get("transfer-ENCODING") == "chunked"
        assert await resp.read_chunk() == event("a", 1)
        with pytest.raises(TimeoutError):
            await resp.read_chunk()
        assert 0.25 < loop.time() - started < 2
        resp.close()
        assert pool.open_count == 0
        await pool.close()


# -- TLS ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A throwaway CA; a server certificate for DNS:kube.test only; two client certificates."""
    return issue(
        tmp_path_factory.mktemp("tls"),
        "kubewerk-test-ca",
        {"server": "DNS:kube.test", "alice": None, "bob": None},
    )


def server_tls(pki: dict[str, Path], *, require_client_cert: bool = False) -> ssl.SSLContext:
    ctx = server_context(pki, "server")
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(pki["ca.crt"])
    return ctx


async def scenario_tls(pki: dict[str, Path]) -> None:
    async with RawServer(keep_answering, server_tls(pki)) as srv:
        ca = pki["ca.crt"].read_bytes()
        # tls_server_name: SNI and the verified name (the certificate names kube.test only)
        cfg = ClientConfig(server=srv.url("https"), ca_pem=ca, tls_server_name="kube.test")
        async with Client(cfg, retry=NO_RETRY) as c:
            for _ in range(3):
                assert (await c.get(SECRET, "s", "default"))["metadata"]["name"] == "s"
        assert srv.connections == 1
        async with Client(ClientConfig(server=srv.url("https"), ca_pem=ca), retry=NO_RETRY) as c:
            with pytest.raises(ServerUnreachable) as info:
                await c.get(SECRET, "s", "default")
            assert info.value.why.startswith("TLS certificate verification failed (")
            assert "127.0.0.1" in info.value.why  # the name that did not match
        async with Client(
            ClientConfig(server=srv.url("https")), retry=NO_RETRY
        ) as c:  # system CAs only
            with pytest.raises(ServerUnreachable) as info:
                await c.get(SECRET, "s", "default")
            assert (
                info.value.why.startswith("TLS certificate verification failed (")
                and "certificate" in info.value.why
            )
        async with Client(
            ClientConfig(server=srv.url("https"), insecure=True), retry=NO_RETRY
        ) as c:
            assert (await c.get(SECRET, "s", "default"))["metadata"]["name"] == "s"


async def test_tls_with_a_private_ca_and_tls_server_name(pki: dict[str, Path]) -> None:
    await scenario_tls(pki)


async def test_tls_to_a_plain_http_port(pki: dict[str, Path]) -> None:
    async def plain_http(conn: Conn) -> None:  # answers the ClientHello as a bad request
        await conn.send(
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )

    async with RawServer(plain_http) as srv:
        cfg = ClientConfig(
            server=srv.url("https"), ca_pem=pki["ca.crt"].read_bytes(), tls_server_name="kube.test"
        )
        async with Client(cfg, retry=NO_RETRY, timeout=5) as c:
            with pytest.raises(ServerUnreachable) as info:
                await c.get(SECRET, "s", "default")
            assert (
                info.value.why.startswith("TLS handshake failed (")
                and "wrong version number" in info.value.why
            )


class ThreadedTLSServer:
    """A blocking-socket TLS server in a thread (OpenSSL sends its alerts before the
    socket closes, as a Go API server does; asyncio's server drops them). Keep-alive
    HTTP/1.1, one JSON answer per request; records each connection's client CN."""

    def __init__(self, ctx: ssl.SSLContext) -> None:
        self.ctx = ctx
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.peer_names: list[str] = []
        self.failed_handshakes = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> ThreadedTLSServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()

    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        tls = self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        try:
            tls.do_handshake()
        except (ssl.SSLError, OSError):
            # the alert is out; read what the client sent after its Finished (its request)
            # before closing, or the kernel answers unread data with a reset that can
            # overtake the alert
            self.failed_handshakes += 1
            raw = socket.socket(fileno=os.dup(tls.fileno()))
            tls.close()
            raw.settimeout(2)
            with contextlib.suppress(OSError):
                while raw.recv(65536):
                    pass
            raw.close()
            return
        cert = tls.getpeercert()
        self.peer_names.append(dict(x[0] for x in cert["subject"])["commonName"] if cert else "")
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = tls.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                while len(buf) < length:
                    buf += tls.recv(65536)
                buf = buf[length:]
                tls.sendall(answer())
        except (ssl.SSLError, OSError):
            return
        finally:
            tls.close()


class RotatingCert(Authenticator):
    """Credentials whose client certificate changes when told (as an exec plugin's would)."""

    def __init__(self, pki: dict[str, Path]) -> None:
        super().__init__()
        self.pki = pki
        self.who = "alice"

    async def credentials(self) -> Credentials:
        return Credentials(
            client_cert_pem=self.pki[f"{self.who}.crt"].read_bytes(),
            client_key_pem=self.pki[f"{self.who}.key"].read_bytes(),
        )


async def test_client_certificates_required_and_rotated(
    pki: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = pki["ca.crt"].read_bytes()
    pools: list[ConnectionPool] = []

    class CountedPool(ConnectionPool):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            pools.append(self)

    with ThreadedTLSServer(server_tls(pki, require_client_cert=True)) as srv:
        async with Client(
            ClientConfig(server=srv.url(), ca_pem=ca, tls_server_name="kube.test"), retry=NO_RETRY
        ) as c:
            with pytest.raises(ServerUnreachable) as info:
                await c.get(SECRET, "s", "default")
            assert (
                info.value.why.startswith("TLS handshake failed (")
                and "certificate required" in info.value.why
            )
        static = ClientConfig(
            server=srv.url(),
            ca_pem=ca,
            tls_server_name="kube.test",
            client_cert_pem=pki["alice.crt"].read_bytes(),
            client_key_pem=pki["alice.key"].read_bytes(),
        )
        async with Client(static, retry=NO_RETRY) as c:
            await c.get(SECRET, "s", "default")
            await c.get(SECRET, "s", "default")
        assert srv.peer_names == ["alice"]
        auth = RotatingCert(pki)
        cfg = ClientConfig(server=srv.url(), ca_pem=ca, tls_server_name="kube.test", auth=auth)
        monkeypatch.setattr("kubewerk.client.client.ConnectionPool", CountedPool)
        async with Client(cfg, retry=NO_RETRY) as c:
            await c.get(SECRET, "s", "default")
            await c.get(SECRET, "s", "default")
            first = c._pool
            auth.who = "bob"  # the plugin rotated its certificate: the pool is dropped
            await asyncio.gather(*(c.get(SECRET, "s", "default") for _ in range(4)))
            assert c._pool is not first and first is not None and first.open_count == 0
            assert c._pool is not None and c._pool.open_count == c._pool.idle_count >= 1
            assert len(pools) == 2  # concurrent requests that saw the rotation share one new pool
        assert srv.peer_names[:2] == ["alice", "alice"] and set(srv.peer_names[2:]) == {"bob"}


# -- the same scenarios on uvloop (kubewerk run's loop) ------------------------------------


def test_scenarios_on_uvloop(pki: dict[str, Path]) -> None:
    def run() -> None:
        uvloop.run(scenario_server_closes_after_every_answer())
        uvloop.run(scenario_watch_abandoned_midway())
        uvloop.run(scenario_tls(pki))

    # its own thread: pytest-asyncio may hold a loop in this one
    errors: list[BaseException] = []
    t = threading.Thread(target=lambda: _capture(run, errors))
    t.start()
    t.join(60)
    if errors:
        raise errors[0]


def _capture(fn: Callable[[], None], errors: list[BaseException]) -> None:
    try:
        fn()
    except BaseException as exc:
        errors.append(exc)


def test_request_targets() -> None:
    from kubewerk.client.client import _Origin

    o = _Origin.parse("https://k.example:6443/prefix/")
    assert (o.host, o.port, o.authority, o.base_path) == (
        "k.example",
        6443,
        "k.example:6443",
        "/prefix",
    )
    assert Client._target(
        o,
        "/api/v1/namespaces/a/configmaps/system:x",
        {"fieldManager": "kw", "labelSelector": "a in (b, c)"},
    ) == (
        "/prefix/api/v1/namespaces/a/configmaps/system:x?fieldManager=kw&labelSelector=a%20in%20%28b%2C%20c%29"
    )
    assert (
        Client._target(o, "/api/v1/namespaces/a/configmaps/50%", None)
        == "/prefix/api/v1/namespaces/a/configmaps/50%25"
    )
    assert Client._target(o, "/version?x=1%2F", {"y": "2"}) == "/prefix/version?x=1%2F&y=2"
    v6 = _Origin.parse("http://[::1]:8080")
    assert (v6.host, v6.port, v6.authority, v6.base_path) == ("::1", 8080, "[::1]:8080", "")
    assert _Origin.parse("https://k.example").port == 443
    for bad in ("ftp://k.example", "k.example:6443", "https://k.example:port"):
        with pytest.raises(ConfigError, match="API server URL"):
            _Origin.parse(bad)


async def test_head_answer_has_no_body_and_repeated_headers() -> None:
    async def head(conn: Conn) -> None:
        while await conn.read_request() is not None:
            await conn.send(
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n"
                b'Warning: 299 - "one"\r\nwarning: 299 - "two"\r\n\r\n'
            )

    async with RawServer(head) as srv:
        pool = ConnectionPool("127.0.0.1", srv.port)
        for _ in range(2):
            resp = await pool.request(
                b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", safe=True, head=True, timeout=5
            )
            assert resp.status == 200 and resp.body == b""
            assert (
                resp.headers.get_all("WARNING") == ['299 - "one"', '299 - "two"']
                and "content-length" in resp.headers
            )
        assert srv.connections == 2  # the parser cannot skip a HEAD body: never reused
        await pool.close()


async def test_gzip_watch_stream() -> None:
    async def zipped_watch(conn: Conn) -> None:
        await conn.read_request()
        data = gzip.compress(event("a", 1) + event("b", 2))
        await conn.send(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
            + chunked(data, [7, 13])
        )

    async with RawServer(zipped_watch) as srv, Client.from_url(srv.url(), retry=NO_RETRY) as c:
        assert [ev.raw["metadata"]["name"] async for ev in c.watch(CONFIGMAP, "default")] == [
            "a",
            "b",
        ]
