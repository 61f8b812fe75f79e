"""The webhook client keeps connections alive per endpoint and trust, reads responses by
their framing (Content-Length or chunked, never by waiting for a close), survives a
server that closed an idle connection, and remembers the TLS context per caBundle."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubewerk.apiserver.admission_chain import httpclient
from kubewerk.webhook.certs import CertificateSet, make_certificates, write_certificates

OK = b'{"ok":true}'


@pytest.fixture(scope="module")
def certs() -> CertificateSet:
    return make_certificates("hooks", "default", days=2, extra_names=["127.0.0.1"])


@dataclass
class RawServer:
    """A TLS server speaking just enough HTTP/1.1: ``answer(n)`` gives the bytes sent
    for the n-th request overall (None: close the connection without answering)."""

    answer: Callable[[int], bytes | None]
    port: int = 0
    connections: int = 0
    requests: int = 0
    server: asyncio.Server | None = field(default=None, repr=False)
    writers: list[asyncio.StreamWriter] = field(default_factory=list, repr=False)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                self.requests += 1
                out = self.answer(self.requests)
                if out is None:
                    break
                writer.write(out)
                await writer.drain()
                if b"Connection: close" in out:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def fixed(body: bytes = OK, extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n"
        + extra
        + b"\r\n"
        + body
    )


def chunked(body: bytes = OK) -> bytes:
    half = len(body) // 2
    parts = [body[:half], body[half:]]
    out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    for part in parts:
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return out + b"0\r\n\r\n"


@pytest.fixture
async def serve(
    certs: CertificateSet, tmp_path: Path
) -> AsyncIterator[Callable[[Callable[[int], bytes | None]], asyncio.Future[RawServer]]]:
    files = write_certificates(certs, tmp_path / "certs")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(files["cert"]), str(files["key"]))
    started: list[RawServer] = []

    async def start(answer: Callable[[int], bytes | None]) -> RawServer:
        raw = RawServer(answer)
        raw.server = await asyncio.start_server(raw.handle, "127.0.0.1", 0, ssl=ctx)
        raw.port = raw.server.sockets[0].getsockname()[1]
        started.append(raw)
        return raw

    yield start  # type: ignore[misc]
    for raw in started:
        assert raw.server is not None
        raw.server.close()


async def call(
    pool: httpclient.ConnectionPool, raw: RawServer, certs: CertificateSet, timeout: float = 5
) -> httpclient.HttpResponse:
    ctx = httpclient.client_context(certs.ca_cert)
    url = f"https://127.0.0.1:{raw.port}/validate"
    return await pool.post(
        url,
        "127.0.0.1",
        raw.port,
        "/validate",
        b"{}",
        server_name="127.0.0.1",
        context=ctx,
        timeout=timeout,
    )


async def test_connection_reused_for_sequential_calls(serve, certs) -> None:  # type: ignore[no-untyped-def]
    raw = await serve(lambda n: fixed() if n % 2 else chunked())
    pool = httpclient.ConnectionPool()
    try:
        for _ in range(6):
            answer = await call(pool, raw, certs)
            assert (answer.status, answer.body) == (200, OK)
        assert raw.connections == 1 and raw.requests == 6
        assert pool.connections_made == 1 and pool.idle_count() == 1
    finally:
        pool.close()


async def test_concurrent_calls_open_connections_and_keep_them_bounded(serve, certs) -> None:  # type: ignore[no-untyped-def]
    raw = await serve(lambda n: fixed())
    pool = httpclient.ConnectionPool(max_idle_per_endpoint=3)
    try:
        answers = await asyncio.gather(*(call(pool, raw, certs) for _ in range(8)))
        assert all(a.body == OK for a in answers)
        assert pool.idle_count() == 3
        made = pool.connections_made
        await asyncio.gather(*(call(pool, raw, certs) for _ in range(3)))
        assert pool.connections_made == made  # the three idle ones carried them
    finally:
        pool.close()
    assert pool.idle_count() == 0


async def test_connection_close_answer_is_not_reused(serve, certs) -> None:  # type: ignore[no-untyped-def]
    raw = await serve(lambda n: fixed(extra=b"Connection: close\r\n"))
    pool = httpclient.ConnectionPool()
    for _ in range(3):
        assert (await call(pool, raw, certs)).body == OK
    assert raw.connections == 3 and pool.idle_count() == 0


async def test_server_closing_idle_connection_is_retried_on_a_new_one(serve, certs) -> None:  # type: ignore[no-untyped-def]
    # the second request meets a connection the server drops without answering, as a
    # server whose keep-alive timeout fires just as the request is sent
    raw = await serve(lambda n: None if n == 2 else fixed())
    pool = httpclient.ConnectionPool()
    try:
        assert (await call(pool, raw, certs)).body == OK
        assert (await call(pool, raw, certs)).body == OK
        assert raw.connections == 2 and raw.requests == 3
    finally:
        pool.close()


async def test_fresh_connection_closed_without_answer_is_eof(serve, certs) -> None:  # type: ignore[no-untyped-def]
    raw = await serve(lambda n: None)
    pool = httpclient.ConnectionPool()
    with pytest.raises(httpclient.CallError) as err:
        await call(pool, raw, certs)
    assert str(err.value) == f'Post "https://127.0.0.1:{raw.port}/validate": EOF'
    assert raw.requests == 1  # not sent again: the server may have acted on it


async def test_server_closed_idle_connection_is_not_reused(serve, certs) -> None:  # type: ignore[no-untyped-def]
    raw = await serve(lambda n: fixed())
    pool = httpclient.ConnectionPool()
    try:
        await call(pool, raw, certs)
        for writer in raw.writers:  # the server's keep-alive timeout fires
            writer.close()
        await asyncio.sleep(0.1)
        assert (await call(pool, raw, certs)).body == OK
        assert raw.requests == 2 and pool.connections_made == 2
    finally:
        pool.close()


async def test_other_ca_bundle_is_another_endpoint(serve, certs) -> None:  # type: ignore[no-untyped-def]
    raw = await serve(lambda n: fixed())
    other = make_certificates("other", "default", days=2, extra_names=["127.0.0.1"])
    pool = httpclient.ConnectionPool()
    try:
        await call(pool, raw, certs)
        with pytest.raises(httpclient.CallError) as err:
            await call(pool, raw, other)  # the idle connection trusted the old CA
        assert "x509: certificate signed by unknown authority" in str(err.value)
    finally:
        pool.close()


def test_context_remembered_per_ca_bundle(certs: CertificateSet) -> None:
    first = httpclient.client_context(certs.ca_cert)
    assert httpclient.client_context(bytes(certs.ca_cert)) is first
    other = make_certificates("other", "default", days=2)
    assert httpclient.client_context(other.ca_cert) is not first


async def test_response_over_the_limit(serve, certs, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(httpclient, "MAX_RESPONSE_BYTES", 4)
    raw = await serve(lambda n: fixed())
    pool = httpclient.ConnectionPool()
    with pytest.raises(httpclient.CallError, match="larger than the limit of 4 bytes"):
        await call(pool, raw, certs)
    assert pool.idle_count() == 0
