"""The embedded server as the client of a hostile admission webhook.

Whoever may create a Mutating/ValidatingWebhookConfiguration chooses what the server's
webhook client reads. A raw asyncio TLS server on loopback (one per module, in a thread
of its own) answers each case's path with what an attacker could send: answers that
never end, huge or deeply nested bodies, broken HTTP framing, resets, redirects to
another host, the wrong certificate, AdmissionReviews that lie (another uid or
apiVersion, odd types), patches that are huge, deep or aim at the object's identity,
warnings and audit annotations nobody should pass on. Each case checks kube-apiserver's
behaviour: failurePolicy applied with its message, nothing stored half-done, no call
longer than ``timeoutSeconds``, memory bounded by the response limit, not by what the
webhook announces."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import ssl
import struct
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from kubewerk.apiserver.admission_chain import httpclient
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.webhook.certs import CertificateSet, make_certificates, write_certificates

Review = dict[str, Any]
Stream = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
Action = bytes | Stream
"""What a path answers: bytes written as they are (the connection stays open for the
next request), or a coroutine that takes over the connection and closes it after."""


STREAM_CAP = 64 * 1024 * 1024
"""Bytes a streaming answer writes at most (the client is expected to stop far earlier)."""


def http(body: bytes, status: int = 200, headers: bytes = b"") -> bytes:
    """An HTTP/1.1 response with ``Content-Length``."""
    return (
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n".encode()
        + headers
        + b"\r\n"
        + body
    )


def review_answer(review: Review, top: Any = None, **response: Any) -> bytes:
    """The AdmissionReview answer for ``review`` (``allowed: true``, uid echoed) with
    ``response``'s fields set (``...=DROP`` removes one) and ``top`` replacing the
    top-level fields when given."""
    base: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
    for key, value in response.items():
        if value is DROP:
            base.pop(key, None)
        else:
            base[key] = value
    out: dict[str, Any] = {
        "apiVersion": review.get("apiVersion"),
        "kind": "AdmissionReview",
        "response": base,
    }
    if top is not None:
        out = top
    raws: list[bytes] = []
    text = orjson.dumps(out, default=lambda raw: _placeholder(raw, raws))
    for n, raw in enumerate(raws):
        text = text.replace(f'"@@raw{n}@@"'.encode(), raw)
    return text


class Raw:
    """JSON text put into an answer as it is (deeper than orjson writes)."""

    def __init__(self, text: bytes) -> None:
        self.text = text


def _placeholder(raw: Any, raws: list[bytes]) -> str:
    if not isinstance(raw, Raw):
        raise TypeError(type(raw).__name__)
    raws.append(raw.text)
    return f"@@raw{len(raws) - 1}@@"


DROP: Any = object()


def b64(patch: Any) -> str:
    """``patch`` as the base64 of its JSON (how ``response.patch`` carries it)."""
    return base64.b64encode(patch if isinstance(patch, bytes) else orjson.dumps(patch)).decode()


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class HostileServer:
    """Serves ``handlers[path]`` (path without the leading ``/`` and the query) on TLS
    port :attr:`port`; :attr:`plain_port` is a plain TCP listener whose behaviour is
    :attr:`plain` (default: answer a plain HTTP redirect target and count the hit)."""

    def __init__(self, certs: CertificateSet, directory: Path) -> None:
        files = write_certificates(certs, directory)
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(str(files["cert"]), str(files["key"]))
        self.handlers: dict[str, Callable[[Review], Action]] = {}
        self.hits: Counter[str] = Counter()
        self.sent: Counter[str] = Counter()
        """Bytes the streaming handlers managed to write, per path."""
        self.plain_hits = 0
        self.plain: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]] = (
            self.plain_default
        )
        self.port = 0
        self.plain_port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.Server] = []

    def start(self) -> HostileServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    def stop(self) -> None:
        async def close() -> None:
            for server in self._servers:
                server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _listen(self) -> None:
        tls = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ctx)
        plain = await asyncio.start_server(self._serve_plain, "127.0.0.1", 0)
        self._servers = [tls, plain]
        self.port = tls.sockets[0].getsockname()[1]
        self.plain_port = plain.sockets[0].getsockname()[1]

    async def _serve_plain(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.plain_hits += 1
        try:
            await self.plain(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            writer.close()

    async def plain_default(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(http(b'{"kind":"AdmissionReview"}'))
        await writer.drain()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode()
                path = target.split("?", 1)[0].lstrip("/")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                review = orjson.loads(await reader.readexactly(length))
                self.hits[path] += 1
                action = self.handlers[path](review)
                if isinstance(action, bytes):
                    writer.write(action)
                    await writer.drain()
                    continue
                await action(reader, writer)
                return
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            if not writer.is_closing():
                writer.close()

    def streamer(self, path: str, head: bytes, chunk: bytes, pause: float = 0.0) -> Stream:
        """Write ``head``, then ``chunk`` again and again (``pause`` seconds apart) until
        the client goes away (``{n}`` in ``chunk`` becomes a different number each
        time); counts what was written in :attr:`sent`."""

        async def stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(head)
            self.sent[path] += len(head)
            while self.sent[path] < STREAM_CAP:
                if writer.is_closing() or writer.transport.is_closing() or reader.at_eof():
                    return
                piece = chunk.replace(b"{n}", str(self.sent[path]).encode())
                writer.write(piece)
                await writer.drain()
                self.sent[path] += len(piece)
                await asyncio.sleep(pause)

        return stream


# -- fixtures and helpers ------------------------------------------------------------------

HOOKS = "/apis/admissionregistration.k8s.io/v1"
CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def certs() -> CertificateSet:
    return make_certificates("hostile", "default", days=2, extra_names=["127.0.0.1"])


@pytest.fixture(scope="module")
def hostile(
    certs: CertificateSet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostileServer]:
    server = HostileServer(certs, tmp_path_factory.mktemp("hostile")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def kube() -> Iterator[EmbeddedServer]:
    """One embedded server for the module (in a thread), shared by every case."""
    srv = EmbeddedServer("memory").start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


class Outcome:
    """What the client saw: status, decoded body, ``Warning`` headers, seconds taken."""

    def __init__(self, status: int, body: Any, warnings: list[str], seconds: float) -> None:
        self.status = status
        self.body = body
        self.warnings = warnings
        self.seconds = seconds

    @property
    def message(self) -> str:
        return str(self.body.get("message", "")) if isinstance(self.body, dict) else ""

    def __repr__(self) -> str:
        return f"Outcome({self.status}, {self.body!r:.600}, {len(self.warnings)} warnings)"


class Client:
    def __init__(self, base: str) -> None:
        self.base = base
        self.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=20),
        )

    async def call(self, method: str, path: str, body: Any = None) -> Outcome:
        start = time.perf_counter()
        async with self.session.request(
            method,
            self.base + path,
            data=orjson.dumps(body) if body is not None else None,
            headers={"Content-Type": "application/json"},
        ) as resp:
            raw = await resp.read()
            return Outcome(
                resp.status,
                orjson.loads(raw) if raw else None,
                resp.headers.getall("Warning", []),
                time.perf_counter() - start,
            )


@pytest.fixture
async def client(kube: EmbeddedServer) -> AsyncIterator[Client]:
    c = Client(kube.url)
    try:
        yield c
    finally:
        await c.session.close()


def configmap(case: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": case, "labels": {"hostile": case}},
        "data": data or {"k": "v"},
    }


def webhook_name(case: str) -> str:
    return f"{case}.hostile.test"


def calling(case: str, reason: str) -> str:
    """kube's message for a webhook call that failed under ``failurePolicy: Fail``."""
    return f'Internal error occurred: failed calling webhook "{webhook_name(case)}": {reason}'


def failed(hostile: HostileServer, case: str, reason: str, url_part: bool = True) -> str:
    """kube's message for a failed call under ``failurePolicy: Fail``."""
    url = f'Post "https://127.0.0.1:{hostile.port}/{case}?timeout=1s": ' if url_part else ""
    return (
        f'Internal error occurred: failed calling webhook "{webhook_name(case)}": '
        f"failed to call webhook: {url}{reason}"
    )


async def admit(
    client: Client,
    hostile: HostileServer,
    certs: CertificateSet,
    case: str,
    handler: Callable[[Review], Action] | None,
    *,
    mutating: bool = False,
    policy: str = "Fail",
    version: str = "v1",
    url: str | None = None,
    ca_bundle: str | None = None,
    operation: str = "CREATE",
    keep: bool = False,
) -> Outcome:
    """Register one webhook for ConfigMaps labelled ``hostile: CASE`` answering with
    ``handler``, make the request (create, or update/delete of an object made before the
    webhook existed), remove the webhook and the object (unless ``keep``)."""
    if handler is not None:
        hostile.handlers[case] = handler
    kind = "MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration"
    resource = kind.lower() + "s"
    if operation != "CREATE":
        made = await client.call("POST", CM, configmap(case))
        assert made.status == 201, made
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": case},
        "webhooks": [
            {
                "name": webhook_name(case),
                "clientConfig": {
                    "url": url or f"https://127.0.0.1:{hostile.port}/{case}",
                    "caBundle": ca_bundle or certs.ca_bundle,
                },
                "rules": [
                    {
                        "operations": ["CREATE", "UPDATE", "DELETE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["configmaps"],
                    }
                ],
                "objectSelector": {"matchLabels": {"hostile": case}},
                "failurePolicy": policy,
                "sideEffects": "None",
                "timeoutSeconds": 1,
                "admissionReviewVersions": [version],
            }
        ],
    }
    made = await client.call("POST", f"{HOOKS}/{resource}", config)
    assert made.status == 201, made
    try:
        if operation == "CREATE":
            return await client.call("POST", CM, configmap(case, k="v"))
        if operation == "UPDATE":
            return await client.call("PUT", f"{CM}/{case}", configmap(case, k="changed"))
        return await client.call("DELETE", f"{CM}/{case}")
    finally:
        await client.call("DELETE", f"{HOOKS}/{resource}/{case}")
        if not keep:
            await client.call("DELETE", f"{CM}/{case}")


async def stored(client: Client, case: str) -> Any:
    got = await client.call("GET", f"{CM}/{case}")
    return got.body if got.status == 200 else None


# -- the transport ---------------------------------------------------------------------------


async def test_answers_that_never_end_are_cut_at_timeout_seconds(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    # each read is quick, the answer never completes: a byte of a chunked body every
    # 50 ms, or a header line every 50 ms (both cases at once: one second in all)
    body = hostile.streamer(
        "drip-body",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"1\r\n \r\n",
        pause=0.05,
    )
    headers = hostile.streamer("drip-headers", b"HTTP/1.1 200 OK\r\n", b"X-Drip: 1\r\n", pause=0.05)
    in_body, in_headers = await asyncio.gather(
        admit(client, hostile, certs, "drip-body", lambda r: body),
        admit(client, hostile, certs, "drip-headers", lambda r: headers),
    )
    assert in_body.status == 500, in_body
    assert in_body.message == failed(
        hostile,
        "drip-body",
        "unexpected error when reading response body. Please retry. "
        "Original error: context deadline exceeded",
        url_part=False,
    )
    assert in_headers.status == 500, in_headers
    assert in_headers.message == failed(hostile, "drip-headers", "context deadline exceeded")
    # cut at the 1 s deadline; a loaded machine adds its own delay, an uncut one never ends
    assert in_body.seconds < 5 and in_headers.seconds < 5
    assert await stored(client, "drip-body") is None


async def test_endless_headers_are_bounded(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "huge-headers"
    stream = hostile.streamer(case, b"HTTP/1.1 200 OK\r\n", b"X-Big: " + b"h" * 8000 + b"\r\n")
    got = await admit(client, hostile, certs, case, lambda r: stream)
    assert got.status == 500, got
    limit = httpclient.MAX_RESPONSE_HEADER_BYTES
    assert got.message == failed(
        hostile, case, f"net/http: server response headers exceeded {limit} bytes; aborted"
    )


async def test_huge_announced_body_is_refused_before_it_is_read(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "huge-announced"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 524288000\r\n\r\n"
    stream = hostile.streamer(case, head, b"x" * 65536)
    got = await admit(client, hostile, certs, case, lambda r: stream)
    assert got.status == 500, got
    limit = httpclient.MAX_RESPONSE_BYTES
    assert got.message == failed(
        hostile,
        case,
        "unexpected error when reading response body. Please retry. Original error: "
        f"response body larger than the limit of {limit} bytes",
        url_part=False,
    )
    # and under Ignore the request goes on without it
    got = await admit(client, hostile, certs, case, None, policy="Ignore")
    assert got.status == 201, got


async def test_endless_chunked_body_is_cut_at_the_limit(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "huge-chunked"
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"100000\r\n" + b"[" * 0x100000 + b"\r\n"
    stream = hostile.streamer(case, head, chunk)
    got = await admit(client, hostile, certs, case, lambda r: stream)
    assert got.status == 500, got
    assert "response body larger than the limit of 3145728 bytes" in got.message, got


@pytest.mark.parametrize(
    ("head", "chunk"),
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"100000\r\n" + b"x" * 0x100000 + b"\r\n",
            id="body",
        ),
        pytest.param(b"HTTP/1.1 200 OK\r\n", b"X-Big-{n}: " + b"h" * 65536 + b"\r\n", id="headers"),
    ],
)
async def test_memory_read_is_bounded_by_the_limits(hostile, certs, head, chunk) -> None:  # type: ignore[no-untyped-def]
    # what the client holds never depends on how much the webhook sends
    case = "memory"
    stream = hostile.streamer(case, head, chunk)
    hostile.handlers[case] = lambda r: stream
    pool = httpclient.ConnectionPool()
    tracemalloc.start()
    try:
        with pytest.raises(httpclient.CallError):
            await pool.post(
                f"https://127.0.0.1:{hostile.port}/{case}",
                "127.0.0.1",
                hostile.port,
                f"/{case}",
                b'{"request":{"uid":"u"}}',
                server_name="127.0.0.1",
                context=httpclient.client_context(certs.ca_cert),
                timeout=5,
            )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        pool.close()
    limit = httpclient.MAX_RESPONSE_BYTES if b"chunked" in head else 0
    limit = limit or httpclient.MAX_RESPONSE_HEADER_BYTES
    assert peak < 2 * limit + 4 * 1024 * 1024, peak


async def test_http10_answer_ended_by_close_is_read(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    # no Content-Length, no chunking: the body ends when the server closes (RFC 9112 6.3)
    case = "http10"

    def handler(review: Review) -> Action:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
            await writer.drain()
            writer.write(review_answer(review, warnings=["from an HTTP/1.0 server"]))
            await writer.drain()
            writer.close()

        return answer

    got = await admit(client, hostile, certs, case, handler)
    assert got.status == 201, got
    assert got.warnings == ['299 - "from an HTTP/1.0 server"']


@pytest.mark.parametrize(
    ("framing", "reason"),
    [
        pytest.param(b"zz\r\n{}\r\n0\r\n\r\n", "invalid byte in chunk length", id="bad-size"),
        pytest.param(b"2\r\n{}XX0\r\n\r\n", "malformed chunked encoding", id="no-crlf"),
    ],
)
async def test_chunked_answer_with_bad_framing(client, hostile, certs, framing, reason) -> None:  # type: ignore[no-untyped-def]
    case = "bad-chunks"
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    got = await admit(client, hostile, certs, case, lambda r: head + framing)
    assert got.status == 500, got
    assert got.message == failed(
        hostile,
        case,
        "unexpected error when reading response body. Please retry. Original error: " + reason,
        url_part=False,
    ), got
    assert await stored(client, case) is None


async def test_server_that_accepts_and_resets(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "reset"

    def handler(review: Review) -> Action:
        async def rst(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            reset(writer)

        return rst

    got = await admit(client, hostile, certs, case, handler)
    assert got.status == 500, got
    prefix = failed(hostile, case, "")
    assert got.message.startswith(prefix), got
    reason = got.message[len(prefix) :]
    assert reason == "EOF" or (
        reason.startswith("read tcp 127.0.0.1:")
        and reason.endswith(f"->127.0.0.1:{hostile.port}: read: connection reset by peer")
    ), reason


async def test_plain_http_server_behind_an_https_url(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "plain"
    url = f"https://127.0.0.1:{hostile.plain_port}/{case}"

    async def http_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)  # the TLS ClientHello arrives: answer it in plain HTTP
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    hostile.plain = http_answer
    try:
        got = await admit(client, hostile, certs, case, None, url=url)
    finally:
        hostile.plain = hostile.plain_default
    assert got.status == 500, got
    assert got.message == (
        f'Internal error occurred: failed calling webhook "{webhook_name(case)}": failed to '
        f'call webhook: Post "{url}?timeout=1s": '
        "tls: first record does not look like a TLS handshake"
    )


async def test_redirect_to_another_host_is_not_followed(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "redirect"
    elsewhere = f"http://127.0.0.1:{hostile.plain_port}/steal"
    before = hostile.plain_hits
    got = await admit(
        client,
        hostile,
        certs,
        case,
        lambda r: http(b"", 307, f"Location: {elsewhere}\r\n".encode()),
    )
    assert got.status == 500, got
    assert got.message == failed(
        hostile,
        case,
        f'redirect to "{elsewhere}" not followed: '
        "the embedded server calls a webhook only at its configured address",
    )
    await asyncio.sleep(0.05)
    assert hostile.plain_hits == before  # nothing went to the other host


async def test_certificate_from_another_ca(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "wrong-ca"
    other = make_certificates("other", "default", days=2, extra_names=["127.0.0.1"])
    got = await admit(
        client, hostile, certs, case, lambda r: http(review_answer(r)), ca_bundle=other.ca_bundle
    )
    assert got.status == 500, got
    assert got.message == failed(
        hostile,
        case,
        "tls: failed to verify certificate: x509: certificate signed by unknown authority",
    )
    assert hostile.hits[case] == 0


async def test_certificate_for_another_name(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    # a service reference is checked against NAME.NAMESPACE.svc, which the certificate
    # does not name (a selector-less Service whose Endpoints name the hostile port)
    case = "wrong-name"
    for path, body in (
        (
            "/api/v1/namespaces/default/services",
            {"metadata": {"name": "elsewhere"}, "spec": {"ports": [{"port": 443}]}},
        ),
        (
            "/api/v1/namespaces/default/endpoints",
            {
                "metadata": {"name": "elsewhere"},
                "subsets": [
                    {"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": hostile.port}]}
                ],
            },
        ),
    ):
        kind = "Service" if "services" in path else "Endpoints"
        made = await client.call("POST", path, {"apiVersion": "v1", "kind": kind, **body})
        assert made.status in (201, 409), made
    hostile.handlers[case] = lambda r: http(review_answer(r))
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": case},
        "webhooks": [
            {
                "name": webhook_name(case),
                "clientConfig": {
                    "service": {"name": "elsewhere", "namespace": "default", "path": f"/{case}"},
                    "caBundle": certs.ca_bundle,
                },
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["configmaps"],
                    }
                ],
                "objectSelector": {"matchLabels": {"hostile": case}},
                "sideEffects": "None",
                "timeoutSeconds": 1,
                "admissionReviewVersions": ["v1"],
            }
        ],
    }
    made = await client.call("POST", f"{HOOKS}/validatingwebhookconfigurations", config)
    assert made.status == 201, made
    try:
        got = await client.call("POST", CM, configmap(case))
    finally:
        await client.call("DELETE", f"{HOOKS}/validatingwebhookconfigurations/{case}")
    assert got.status == 500, got
    names = ", ".join(certs.dns_names)
    assert got.message == (
        f'Internal error occurred: failed calling webhook "{webhook_name(case)}": failed to '
        f'call webhook: Post "https://elsewhere.default.svc:443/{case}?timeout=1s": '
        "tls: failed to verify certificate: "
        f"x509: certificate is valid for {names}, not elsewhere.default.svc"
    )
    assert hostile.hits[case] == 0


# -- what the answer says ----------------------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    ("case", "body", "reason"),
    [
        pytest.param(
            "not-json",
            b"<html>hello</html>",
            "couldn't get version/kind; json parse error: ",
            id="not-json",
        ),
        pytest.param(
            "nested",
            b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":'
            + _nested(10_000)
            + b"}",
            "couldn't get version/kind; json parse error: ",
            id="nesting-10000",
        ),
        pytest.param(
            "array",
            b"[]",
            "couldn't get version/kind; json parse error: json: cannot unmarshal array",
            id="array",
        ),
    ],
)
async def test_answer_that_is_not_an_admission_review(
    client, hostile, certs, case: str, body: bytes, reason: str
) -> None:  # type: ignore[no-untyped-def]
    got = await admit(client, hostile, certs, case, lambda r: http(body))
    assert got.status == 500, got
    assert got.message.startswith(failed(hostile, case, reason, url_part=False)), got
    assert await stored(client, case) is None


async def test_answer_of_another_kind_version_or_uid(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    def other_kind(r: Review) -> Action:
        return http(review_answer(r, top={**orjson.loads(review_answer(r)), "kind": "Pod"}))

    got = await admit(client, hostile, certs, "other-kind", other_kind)
    assert got.message == calling(
        "other-kind",
        "received invalid webhook response: expected webhook response of "
        "admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1, Kind=Pod",
    ), got

    def other_version(r: Review) -> Action:
        answer = orjson.loads(review_answer(r))
        return http(orjson.dumps({**answer, "apiVersion": "admission.k8s.io/v1beta1"}))

    got = await admit(client, hostile, certs, "other-version", other_version)
    assert got.status == 500, got
    assert "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview" in got.message

    uids: list[str] = []

    def other_uid(r: Review) -> Action:
        uids.append(r["request"]["uid"])
        return http(review_answer(r, uid="not-it"))

    got = await admit(client, hostile, certs, "other-uid", other_uid)
    assert got.message == calling(
        "other-uid",
        f'received invalid webhook response: expected response.uid="{uids[0]}", got "not-it"',
    ), got
    assert await stored(client, "other-uid") is None


async def test_allowed_missing_is_a_denial(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    got = await admit(
        client, hostile, certs, "no-allowed", lambda r: http(review_answer(r, allowed=DROP))
    )
    # ToStatusErr: no message, no reason; a code under 400 becomes 400
    assert got.status == 400, got
    assert got.body["message"] == (
        'admission webhook "no-allowed.hostile.test" denied the request without explanation'
    )
    assert got.body["status"] == "Failure"


@pytest.mark.parametrize(
    ("status", "code"),
    [
        pytest.param({"code": 200, "status": "Success", "message": "m"}, 400, id="code-200"),
        pytest.param({"code": 302, "message": "m"}, 400, id="code-302"),
        pytest.param({"code": 409, "reason": "Conflict", "message": "m"}, 409, id="code-409"),
        pytest.param({"code": 599, "message": "m"}, 599, id="code-599"),
    ],
)
async def test_denial_codes_are_errors(client, hostile, certs, status, code) -> None:  # type: ignore[no-untyped-def]
    case = "deny-code"
    got = await admit(
        client,
        hostile,
        certs,
        case,
        lambda r: http(review_answer(r, allowed=False, status=status)),
    )
    assert got.status == code, got
    assert got.body["status"] == "Failure" and got.body["code"] == code
    assert got.body["message"] == f'admission webhook "{webhook_name(case)}" denied the request: m'


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        pytest.param(
            {"allowed": "yes"},
            "json: cannot unmarshal string into Go struct field "
            "AdmissionResponse.response.allowed of type bool",
            id="allowed-string",
        ),
        pytest.param(
            {"allowed": 1},
            "json: cannot unmarshal number into Go struct field "
            "AdmissionResponse.response.allowed of type bool",
            id="allowed-number",
        ),
        pytest.param(
            {"uid": 7},
            "json: cannot unmarshal number into Go struct field "
            "AdmissionResponse.response.uid of type types.UID",
            id="uid-number",
        ),
        pytest.param(
            {"allowed": False, "status": {"code": "403"}},
            "json: cannot unmarshal string into Go struct field Status.response.status.code "
            "of type int32",
            id="code-string",
        ),
        pytest.param(
            {"allowed": False, "status": {"code": 3_000_000_000}},
            "json: cannot unmarshal number 3000000000 into Go struct field "
            "Status.response.status.code of type int32",
            id="code-overflow",
        ),
        pytest.param(
            {"allowed": False, "status": {"message": ["a"]}},
            "json: cannot unmarshal array into Go struct field Status.response.status.message "
            "of type string",
            id="message-array",
        ),
        pytest.param(
            {"allowed": False, "status": {"details": {"causes": "x"}}},
            "json: cannot unmarshal string into Go struct field "
            "StatusDetails.response.status.details.causes of type []v1.StatusCause",
            id="causes-string",
        ),
        pytest.param(
            {"allowed": False, "status": {"details": {"name": _nested(300).decode()}}},
            None,
            id="details-deep-string",
        ),
        pytest.param(
            {"allowed": False, "status": {"details": {"name": Raw(_nested(300))}}},
            "json: cannot unmarshal array into Go struct field "
            "StatusDetails.response.status.details.name of type string",
            id="details-deep",
        ),
        pytest.param(
            {"warnings": "careful"},
            "json: cannot unmarshal string into Go struct field "
            "AdmissionResponse.response.warnings of type []string",
            id="warnings-string",
        ),
        pytest.param(
            {"warnings": [1]},
            "json: cannot unmarshal number into Go struct field "
            "AdmissionResponse.response.warnings of type string",
            id="warning-number",
        ),
        pytest.param(
            {"auditAnnotations": {"a": 1}},
            "json: cannot unmarshal number into Go struct field "
            "AdmissionResponse.response.auditAnnotations of type string",
            id="annotation-number",
        ),
    ],
)
async def test_answer_fields_of_the_wrong_type(client, hostile, certs, response, reason) -> None:  # type: ignore[no-untyped-def]
    case = "odd-types"
    got = await admit(client, hostile, certs, case, lambda r: http(review_answer(r, **response)))
    if reason is None:  # well typed: a plain denial
        assert got.status == 400, got
        return
    assert got.status == 500, got
    assert got.message == failed(hostile, case, reason, url_part=False), got
    # failurePolicy Ignore: the webhook's answer counts for nothing, the request goes on
    got = await admit(client, hostile, certs, case, None, policy="Ignore")
    assert got.status == 201, got


# -- patches -----------------------------------------------------------------------------------


def patching(patch: Any, patch_type: Any = "JSONPatch") -> Callable[[Review], Action]:
    """A mutating webhook answering with ``patch`` (JSON bytes or a value; a str is sent
    as the ``patch`` field's text)."""

    def handler(review: Review) -> Action:
        fields: dict[str, Any] = {"patch": patch if isinstance(patch, str) else b64(patch)}
        if patch_type is not None:
            fields["patchType"] = patch_type
        return http(review_answer(review, **fields))

    return handler


async def test_patch_from_a_validating_webhook(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "validating-patch"
    patch = [{"op": "add", "path": "/data/x", "value": "y"}]
    got = await admit(client, hostile, certs, case, patching(patch))
    assert got.message == calling(
        case, "received invalid webhook response: validating webhook may not return response.patch"
    ), got
    got = await admit(
        client, hostile, certs, case, lambda r: http(review_answer(r, patchType="JSONPatch"))
    )
    assert got.message == calling(
        case,
        "received invalid webhook response: validating webhook may not return response.patchType",
    ), got


@pytest.mark.parametrize(
    ("patch", "patch_type", "reason"),
    [
        pytest.param(
            [{"op": "add", "path": "/data/x", "value": "y"}],
            None,
            "received invalid webhook response: "
            "webhook returned response.patch but not response.patchType",
            id="no-type",
        ),
        pytest.param(
            [{"op": "add", "path": "/data/x", "value": "y"}],
            "",
            'received invalid webhook response: webhook returned invalid response.patchType of ""',
            id="empty-type",
        ),
        pytest.param(
            [{"op": "add", "path": "/data/x", "value": "y"}],
            "JSONMergePatch",
            'unsupported patch type "JSONMergePatch"',
            id="merge-type",
        ),
        pytest.param(
            "not base64!",
            "JSONPatch",
            "failed to call webhook: illegal base64 data at input byte 3",
            id="not-base64",
        ),
        pytest.param(
            base64.b64encode(b"nope").decode(),
            "JSONPatch",
            "received undecodable patch in webhook response: ",
            id="not-json",
        ),
        pytest.param(
            {"op": "add", "path": "/data/x", "value": "y"},
            "JSONPatch",
            "received undecodable patch in webhook response: json: cannot unmarshal object into "
            "Go value of type jsonpatch.Patch",
            id="object",
        ),
    ],
)
async def test_malformed_patches(client, hostile, certs, patch, patch_type, reason) -> None:  # type: ignore[no-untyped-def]
    case = "bad-patch"
    got = await admit(client, hostile, certs, case, patching(patch, patch_type), mutating=True)
    assert got.status == 500, got
    assert got.message.startswith(calling(case, reason)), got
    assert await stored(client, case) is None
    got = await admit(client, hostile, certs, case, None, mutating=True, policy="Ignore")
    assert got.status == 201, got  # failurePolicy applies: skipped
    assert (await stored(client, case)) is None  # admit removed it again


@pytest.mark.parametrize(
    ("ops", "detail"),
    [
        pytest.param(
            [{"op": "test", "path": "/data/k", "value": "other"}],
            "testing value /data/k failed: test failed",
            id="test-fails",
        ),
        pytest.param(
            [{"op": "move", "from": "/data/missing", "path": "/data/x"}],
            "",
            id="move-missing",
        ),
        pytest.param(
            [{"op": "copy", "from": "/spec/x", "path": "/data/x"}],
            "copy operation does not apply: doc is missing from path: /spec/x",
            id="copy-missing",
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/labels/01"}, {"op": "add", "path": "/-"}],
            "",
            id="odd-paths",
        ),
        pytest.param(
            [{"op": "frobnicate", "path": "/data"}], "Unexpected kind: frobnicate", id="bad-op"
        ),
    ],
)
async def test_patch_that_does_not_apply_is_an_internal_error(
    client, hostile, certs, ops, detail
) -> None:  # type: ignore[no-untyped-def]
    # kube: NewInternalError(err) whatever failurePolicy says
    case = "patch-fails"
    for policy in ("Fail", "Ignore"):
        got = await admit(client, hostile, certs, case, patching(ops), mutating=True, policy=policy)
        assert got.status == 500, got
        assert got.message.startswith("Internal error occurred: "), got
        assert "failed calling webhook" not in got.message
        assert detail in got.message
        assert await stored(client, case) is None


async def test_patch_with_every_op_and_odd_pointers(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "every-op"
    ops = [
        {"op": "add", "path": "/metadata/labels/~0tilde~1slash", "value": "a"},
        {"op": "add", "path": "/metadata/finalizers", "value": ["x.io/a"]},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "x.io/b"},
        {"op": "add", "path": "/metadata/finalizers/01", "value": "x.io/c"},  # Atoi("01") = 1
        {"op": "copy", "from": "/data/k", "path": "/data/copied"},
        {"op": "move", "from": "/data/copied", "path": "/data/moved"},
        {"op": "test", "path": "/data/moved", "value": "v"},
        {"op": "replace", "path": "/data/k", "value": "w"},
        {"op": "remove", "path": "/metadata/finalizers"},
    ]
    got = await admit(client, hostile, certs, case, patching(ops), mutating=True)
    # "~tilde/slash" is no valid label key: validation (after mutation) refuses it
    assert got.status == 422, got
    assert 'metadata.labels: Invalid value: "~tilde/slash"' in got.message, got
    got = await admit(client, hostile, certs, case, patching(ops[1:]), mutating=True, keep=True)
    assert got.status == 201, got
    assert got.body["data"] == {"k": "w", "moved": "v"}
    await client.call("DELETE", f"{CM}/{case}")


async def test_patch_on_delete_is_an_internal_error(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "patch-delete"
    ops = [{"op": "add", "path": "/data/x", "value": "y"}]
    got = await admit(
        client, hostile, certs, case, patching(ops), mutating=True, operation="DELETE", keep=True
    )
    assert got.status == 500, got
    assert got.message == (
        f'Internal error occurred: admission webhook "{webhook_name(case)}" attempted to '
        "modify the object, which is not supported for this operation"
    )
    assert (await stored(client, case)) is not None  # not deleted
    await client.call("DELETE", f"{CM}/{case}")


async def test_patch_nesting_deeper_than_the_server_stores(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    # deeper than the server's limit (100), than orjson writes (254), than it reads (1024)
    case = "deep-patch"
    for depth in (150, 300, 2000):
        deep = b'{"a":' * depth + b'"x"' + b"}" * depth
        ops = b'[{"op":"add","path":"/metadata/managedFields","value":[' + deep + b"]}]"
        got = await admit(client, hostile, certs, case, patching(ops), mutating=True)
        assert got.status == 500, (depth, got)
        if depth < 1000:
            assert got.message == (
                "Internal error occurred: the object patched by the admission webhook nests "
                "deeper than 100 levels of objects and arrays (the embedded server's limit; "
                "Kubernetes allows 10000)"
            ), got
        else:  # the patch itself does not decode here (kube's decoder allows 10,000)
            assert got.message == calling(
                case, "received undecodable patch in webhook response: exceeded max depth"
            ), got
        assert await stored(client, case) is None


async def test_huge_patch_is_applied_without_stalling_the_server(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    # 18,000 operations (over the 10,000 a client's PATCH may hold: that limit is the
    # patch handler's, not the webhook dispatcher's), each inserting at the front of a
    # list: quadratic work the server does off its event loop, which keeps answering
    case = "huge-patch"
    ops = [{"op": "add", "path": "/metadata/finalizers", "value": []}]
    ops += [
        {"op": "add", "path": "/metadata/finalizers/0", "value": f"x.io/f{i}"}
        for i in range(18_000)
    ]
    ops.append({"op": "remove", "path": "/metadata/finalizers"})
    ops.append({"op": "add", "path": "/data/count", "value": str(len(ops) + 1)})
    lags: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            start = time.perf_counter()
            got = await client.call("GET", "/version")
            assert got.status == 200
            lags.append(time.perf_counter() - start)
            await asyncio.sleep(0.01)

    prober = asyncio.create_task(probe())
    try:
        got = await admit(client, hostile, certs, case, patching(ops), mutating=True, keep=True)
    finally:
        done.set()
        await prober
    assert got.status == 201, got
    assert got.body["data"]["count"] == "18003"
    assert "finalizers" not in got.body["metadata"]
    # blocked, the loop misses its turns for as long as the patch takes: one probe waits
    # ~80% of the request and only ~3 are answered in all; in a worker thread the loop
    # loses a few milliseconds at a time. On a loaded machine one probe can still wait
    # for the CPU a good part of the request (0.66 s of 1.03 s in one full-suite run),
    # but then the many others answered around it show the loop kept its turns
    assert len(lags) >= 3, (got.seconds, lags)
    assert max(lags) < got.seconds / 2 or len(lags) >= 10, (got.seconds, lags)
    await client.call("DELETE", f"{CM}/{case}")


async def test_identity_changes_by_a_mutating_webhook(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    case = "identity"
    ns = [{"op": "replace", "path": "/metadata/namespace", "value": "kube-system"}]
    got = await admit(client, hostile, certs, case, patching(ns), mutating=True)
    assert got.status == 400, got
    assert got.message == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )
    uid = [{"op": "add", "path": "/metadata/uid", "value": "attacker-chosen"}]
    got = await admit(client, hostile, certs, case, patching(uid), mutating=True)
    assert got.status == 201, got
    assert got.body["metadata"]["uid"] != "attacker-chosen"


# -- warnings and audit annotations ------------------------------------------------


@pytest.mark.parametrize(
    "warnings",
    [
        pytest.param(["a\r\nSet-Cookie: stolen=1", "nul\x00byte", "bell\x07"], id="control"),
        pytest.param(["w" * 2_000_000], id="huge"),
        pytest.param([f"warning {i} " + "x" * 90 for i in range(20_000)], id="many"),
    ],
)
async def test_hostile_warnings_reach_the_client_sanitised(
    client, hostile, certs, warnings
) -> None:  # type: ignore[no-untyped-def]
    case = "warnings"
    got = await admit(
        client, hostile, certs, case, lambda r: http(review_answer(r, warnings=warnings))
    )
    assert got.status == 201, got
    assert 0 < len(got.warnings) <= len(warnings)
    assert sum(len(w) for w in got.warnings) <= 4096 + 64 * len(got.warnings)
    for header in got.warnings:
        assert header.startswith('299 - "') and header.endswith('"')
        assert all(0x20 <= ord(c) != 0x7F for c in header), header
    if len(warnings) == 3:
        assert got.warnings == [
            '299 - "a\\r\\nSet-Cookie: stolen=1"',
            '299 - "nul\\x00byte"',
            '299 - "bell\\a"',
        ]


async def test_audit_annotations_with_bad_keys_are_dropped(client, hostile, certs, caplog) -> None:  # type: ignore[no-untyped-def]
    # kube: AddAnnotation refuses a key that is not a qualified name once prefixed with
    # "<webhook name>/": it logs and drops it, the request goes on
    case = "annotations"
    annotations = {
        "fine": "kept",
        "two/slashes": "dropped",
        "bad key": "dropped",
        "-leading": "dropped",
        "x" * 64: "dropped",
    }
    with caplog.at_level("INFO", logger="kubewerk.apiserver.audit"):
        got = await admit(
            client,
            hostile,
            certs,
            case,
            lambda r: http(review_answer(r, auditAnnotations=annotations)),
        )
    assert got.status == 201, got
    logged = [r.getMessage() for r in caplog.records if r.name == "kubewerk.apiserver.audit"]
    assert len(logged) == 1, logged
    assert f'"{webhook_name(case)}/fine":"kept"' in logged[0]
    assert "dropped" not in logged[0]


async def test_informational_answers_are_skipped_but_bounded(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    # Go's transport skips 1xx answers before the real one, at most five of them
    case = "informational"
    cont = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
    got = await admit(client, hostile, certs, case, lambda r: cont + http(review_answer(r)))
    assert got.status == 201, got
    got = await admit(client, hostile, certs, case, lambda r: cont * 3 + http(review_answer(r)))
    assert got.status == 500, got
    assert got.message == failed(hostile, case, "net/http: too many 1xx informational responses")


async def test_v1beta1_answers_are_checked_as_kube_checks_them(client, hostile, certs) -> None:  # type: ignore[no-untyped-def]
    # v1beta1: neither uid nor kind is checked, a patch is a JSON Patch whatever patchType
    # says, and a validating webhook's patch is ignored
    case = "beta"
    ops = b64([{"op": "add", "path": "/data/beta", "value": "yes"}])

    def handler(review: Review) -> Action:
        assert review["apiVersion"] == "admission.k8s.io/v1beta1"
        return http(
            review_answer(
                review,
                top={"response": {"uid": "whatever", "allowed": True, "patch": ops}},
            )
        )

    got = await admit(client, hostile, certs, case, handler, mutating=True, version="v1beta1")
    assert got.status == 201, got
    assert got.body["data"]["beta"] == "yes"
    got = await admit(client, hostile, certs, case, handler, version="v1beta1")
    assert got.status == 201, got
    assert "beta" not in got.body["data"]
