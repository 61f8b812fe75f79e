"""A small async HTTPS POST client for calling webhooks (asyncio streams + httptools).

:class:`ConnectionPool` keeps HTTP/1.1 keep-alive connections per endpoint — the
address, the TLS server name and the trust (the ``SSLContext`` made from the
caBundle) — so a webhook costs one TLS handshake per connection rather than one per
call, as kube-apiserver's Go transport reuses its connections. A changed caBundle or
endpoint is a different key, so it takes effect on the next call; idle connections
are bounded per endpoint (:data:`MAX_IDLE_PER_ENDPOINT`) and closed after
:data:`IDLE_TIMEOUT` seconds (Go's ``IdleConnTimeout``) or when the server closes them.
A response is read by its ``Content-Length`` or chunked framing (never by waiting for
the server to close), and sockets are set ``TCP_NODELAY``. :func:`client_context`
remembers the contexts it made per caBundle: loading a trust store costs ~20 ms of
CPU, which had been paid on every call.

The response body is bounded (:data:`MAX_RESPONSE_BYTES`, as kube-apiserver bounds a
webhook's answer), the whole exchange by a deadline. Failures raise
:class:`CallError` with Go's ``net/http`` wording (``Post "https://…": dial tcp
127.0.0.1:1: connect: connection refused``, ``… context deadline exceeded``), which
is what kube-apiserver puts in its messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final

import httptools

MAX_RESPONSE_BYTES: Final = 3 * 1024 * 1024
"""Bytes of a webhook's response body read at most (kube's limit for webhook answers)."""
MAX_IDLE_PER_ENDPOINT: Final = 32
"""Idle keep-alive connections kept per endpoint; more are closed when released."""
IDLE_TIMEOUT: Final = 90.0
"""Seconds an idle connection is kept (Go's default ``IdleConnTimeout``)."""
_CONTEXTS_KEPT: Final = 64


class CallError(Exception):
    """The call did not produce a response; ``str()`` is Go's ``url.Error`` text."""


@dataclass
class HttpResponse:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class _Collector:
    def __init__(self) -> None:
        self.body = bytearray()
        self.started = False
        self.done = False
        self.too_large = False
        self.headers: dict[str, str] = {}

    def on_message_begin(self) -> None:
        self.started = True

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, chunk: bytes) -> None:
        if len(self.body) + len(chunk) > MAX_RESPONSE_BYTES:
            self.too_large = True
            return
        self.body += chunk

    def on_message_complete(self) -> None:
        self.done = True


_contexts: OrderedDict[bytes | None, ssl.SSLContext] = OrderedDict()


def client_context(ca_pem: bytes | None) -> ssl.SSLContext:
    """TLS client context trusting ``ca_pem`` (the caBundle), else the system roots.

    The same bytes give the same context object (the last :data:`_CONTEXTS_KEPT`
    caBundles are remembered); callers must not change the context they get.
    Raises ``ssl.SSLError``/``ValueError`` for a caBundle that holds no certificate."""
    hit = _contexts.get(ca_pem)
    if hit is not None:
        _contexts.move_to_end(ca_pem)
        return hit
    if ca_pem:
        ctx = ssl.create_default_context(cadata=ca_pem.decode("ascii", "replace"))
    else:
        ctx = ssl.create_default_context()
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _contexts[ca_pem] = ctx
    while len(_contexts) > _CONTEXTS_KEPT:
        _contexts.popitem(last=False)
    return ctx


_Key = tuple[str, int, str, ssl.SSLContext]


class _Connection:
    __slots__ = ("idle_since", "reader", "uses", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0
        self.uses = 0

    def usable(self, now: float) -> bool:
        """Whether an idle connection can carry another request: open, not closed by
        the server (which leaves EOF in the reader), and not idle too long."""
        return (
            not self.writer.is_closing()
            and not self.reader.at_eof()
            and now - self.idle_since < IDLE_TIMEOUT
        )

    def close(self, broken: bool = False) -> None:
        """Close without waiting: a TLS close_notify when healthy, a reset if ``broken``."""
        if broken:
            self.writer.transport.abort()
        else:
            self.writer.close()


class ConnectionPool:
    """Keep-alive HTTPS connections per (host, port, TLS server name, trust).

    Guarantees: a connection carries one request at a time; it goes back to the pool
    only after a complete response that allows keep-alive (HTTP/1.1 without
    ``Connection: close``); at most :data:`MAX_IDLE_PER_ENDPOINT` idle connections are
    kept per endpoint; :meth:`close` closes every idle one. A request that meets a
    reused connection the server had already closed (EOF or reset before any byte of
    a response) is sent once more on a new connection — the server cannot have read
    it (kube's webhooks must be idempotent in any case)."""

    def __init__(self, max_idle_per_endpoint: int = MAX_IDLE_PER_ENDPOINT) -> None:
        self.max_idle = max_idle_per_endpoint
        self._idle: dict[_Key, list[_Connection]] = {}
        self.connections_made = 0
        """Connections opened so far (for tests and benchmarks)."""

    def idle_count(self) -> int:
        return sum(len(v) for v in self._idle.values())

    def close(self) -> None:
        """Close every idle connection (in-flight ones close when their call ends)."""
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

    def _take(self, key: _Key, now: float) -> _Connection | None:
        conns = self._idle.get(key)
        while conns:
            conn = conns.pop()
            if conn.usable(now):
                return conn
            conn.close()
        return None

    def _release(self, key: _Key, conn: _Connection, now: float) -> None:
        conns = self._idle.setdefault(key, [])
        if len(conns) >= self.max_idle:
            # make room from the ones that went stale meanwhile, else close this one
            stale = [c for c in conns if not c.usable(now)]
            for c in stale:
                c.close()
            conns[:] = [c for c in conns if c not in stale]
            if len(conns) >= self.max_idle:
                conn.close()
                if not conns:
                    del self._idle[key]
                return
        conn.idle_since = now
        conns.append(conn)

    async def post(
        self,
        url: str,
        host: str,
        port: int,
        path: str,
        body: bytes,
        *,
        server_name: str,
        context: ssl.SSLContext,
        timeout: float,
    ) -> HttpResponse:
        """POST ``body`` (JSON) to ``host:port`` over TLS checked against ``server_name``.

        ``url`` is the URL as the error messages name it. Raises :class:`CallError`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        prefix = f'Post "{url}": '
        key: _Key = (host, port, server_name, context)
        conn = self._take(key, loop.time())
        if conn is not None:
            try:
                return await self._exchange(
                    key, conn, path, body, server_name, port, prefix, deadline, reused=True
                )
            except _Stale:
                pass  # the server closed it while idle: the request never reached it
        conn = await self._connect(host, port, server_name, context, prefix, deadline)
        try:
            return await self._exchange(
                key, conn, path, body, server_name, port, prefix, deadline, reused=False
            )
        except _Stale:  # pragma: no cover - only raised for reused connections
            raise CallError(prefix + "EOF") from None

    async def _connect(
        self,
        host: str,
        port: int,
        server_name: str,
        context: ssl.SSLContext,
        prefix: str,
        deadline: float,
    ) -> _Connection:
        left = deadline - asyncio.get_running_loop().time()
        try:
            if left <= 0:
                raise TimeoutError
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    host, port, ssl=context, server_hostname=server_name, limit=2**16
                ),
                left,
            )
        except TimeoutError:
            raise CallError(prefix + "context deadline exceeded") from None
        except ssl.SSLCertVerificationError as exc:
            raise CallError(
                prefix + "tls: failed to verify certificate: " + _tls_reason(exc)
            ) from None
        except ssl.SSLError as exc:
            raise CallError(prefix + f"remote error: tls: {exc.reason or exc}") from None
        except OSError as exc:
            raise CallError(prefix + _dial_error(host, port, exc)) from None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connections_made += 1
        return _Connection(reader, writer)

    async def _exchange(
        self,
        key: _Key,
        conn: _Connection,
        path: str,
        body: bytes,
        server_name: str,
        port: int,
        prefix: str,
        deadline: float,
        *,
        reused: bool,
    ) -> HttpResponse:
        loop = asyncio.get_running_loop()
        keep = False
        broken = True
        collector = _Collector()
        try:
            head = (
                f"POST {path} HTTP/1.1\r\nHost: {server_name}:{port}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, */*\r\n"
                "User-Agent: kube-apiserver-admission\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode("latin-1")
            conn.writer.write(head + body)
            conn.uses += 1
            parser = httptools.HttpResponseParser(collector)
            while not collector.done:
                left = deadline - loop.time()
                if left <= 0:
                    raise CallError(prefix + "context deadline exceeded")
                try:
                    chunk = await asyncio.wait_for(conn.reader.read(65536), left)
                except TimeoutError:
                    raise CallError(prefix + "context deadline exceeded") from None
                if not chunk:
                    if reused and not collector.started:
                        raise _Stale
                    raise CallError(prefix + "EOF")
                try:
                    parser.feed_data(chunk)
                except httptools.HttpParserError as exc:
                    raise CallError(prefix + f"malformed HTTP response: {exc}") from None
                if collector.too_large:
                    raise CallError(
                        prefix
                        + f"response body larger than the limit of {MAX_RESPONSE_BYTES} bytes"
                    )
            # llhttp's should_keep_alive() is already reset once the message completes
            keep = parser.get_http_version() == "1.1" and "close" not in (
                collector.headers.get("connection", "").lower()
            )
            broken = False
            return HttpResponse(parser.get_status_code(), bytes(collector.body), collector.headers)
        except (ConnectionResetError, BrokenPipeError) as exc:
            if reused and not collector.started:
                raise _Stale from None
            raise CallError(prefix + str(exc)) from None
        except OSError as exc:
            raise CallError(prefix + str(exc)) from None
        finally:
            if keep:
                self._release(key, conn, loop.time())
            else:
                conn.close(broken)


class _Stale(Exception):
    """A reused connection turned out closed before any response byte."""


async def post(
    url: str,
    host: str,
    port: int,
    path: str,
    body: bytes,
    *,
    server_name: str,
    context: ssl.SSLContext,
    timeout: float,
) -> HttpResponse:
    """One POST on a connection of its own, closed afterwards (for callers without a
    :class:`ConnectionPool`); same contract as :meth:`ConnectionPool.post`."""
    pool = ConnectionPool(max_idle_per_endpoint=0)
    return await pool.post(
        url, host, port, path, body, server_name=server_name, context=context, timeout=timeout
    )


def _dial_error(host: str, port: int, exc: OSError) -> str:
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(exc, ConnectionRefusedError):
        return f"dial tcp {target}: connect: connection refused"
    return f"dial tcp {target}: {exc.strerror or exc}"


def _tls_reason(exc: ssl.SSLCertVerificationError) -> str:
    message = str(exc.verify_message or exc)
    if "unable to get local issuer" in message or "self-signed" in message:
        return "x509: certificate signed by unknown authority"
    if "Hostname mismatch" in message or "IP address mismatch" in message:
        return f"x509: certificate is not valid for the requested name ({message})"
    return f"x509: {message}"
