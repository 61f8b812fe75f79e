"""The API client's HTTP/1.1 transport: a keep-alive connection pool on asyncio and httptools.

One :class:`ConnectionPool` talks to one API server (``http`` or ``https``). It sends
requests the caller has already serialised (request line, headers, body) and parses the
answers with httptools (llhttp, the parser uvicorn uses). It is deliberately small: the
Kubernetes API needs one origin, JSON bodies and chunked watch streams, nothing else.

Guarantees:

- At most ``limit`` connections serve requests at once (0 or less: no limit); a request
  that finds none free waits in line (first come, first served) for one to be released.
  A stream (:meth:`ConnectionPool.stream`, a watch) never waits for one and never holds
  one: it gets a connection of its own outside the limit (an idle one, whose place under
  the limit is given up at once, or a new one), as each watch of client-go over HTTP/1.1
  holds its own connection. So any number of long-lived watches neither queue behind
  each other nor starve requests. A stream's connection that ends cleanly joins the
  idle ones when there is room under the limit, and is closed otherwise.
- Idle connections are reused last-in first-out. A connection is never reused after the
  server closed it (EOF or transport closing seen), asked to close it
  (``Connection: close``, HTTP/1.0 without keep-alive), sent an EOF-delimited body or
  anything unparseable, after a request that was cancelled or timed out, or after it
  sat idle longer than ``idle_timeout``.
- A request that fails on a *reused* connection before a single response byte arrived is
  sent once more on a fresh connection when that cannot do harm: for every method when
  nothing was written; for safe methods (GET, HEAD) always; for other requests the
  caller says are idempotent (sending them twice has the effect of sending them once:
  PUT and DELETE, RFC 9110 9.2.2, and the client adds merge, strategic-merge and apply
  patches) when the server closed the connection within ``CLOSED_IDLE_WINDOW`` of the
  write (it closed the idle connection as the request went out). Any other written
  request (a POST, a JSON patch) is never sent again, as Go's net/http never resends a
  non-idempotent one: a server that processed it and then lost the connection would
  run it twice (a second object from one ``generateName`` create).
- Failures raise :class:`TransportError` subclasses with a short lower-case reason
  (``why``): :class:`ConnectError` when no connection could be opened (nothing was sent,
  any method may be retried), :class:`ServerDisconnected` when the connection was lost,
  :class:`MalformedResponse` when the answer is not valid HTTP/1.1 (or uses a
  ``Content-Encoding`` other than gzip/deflate). Time limits raise :class:`TimeoutError`.
- Response bodies arrive whole (:meth:`ConnectionPool.request`) or as a stream
  (:meth:`ConnectionPool.stream`) whose reader applies backpressure: reading from the
  socket pauses while more than ``HIGH_WATER`` bytes wait unread. A stream that is
  closed before its body was fully read closes its connection; it is never pooled.
- A pool may go through an HTTP proxy (``proxy``, an ``http`` or ``https`` proxy URL,
  chosen once per pool by :func:`kubewerk.client.proxy.select_proxy`). An ``https``
  server is reached through a tunnel: ``CONNECT host:port`` (with ``Proxy-Authorization``
  when the proxy URL names a user), any 2xx answer, then TLS to the server over it; an
  ``http`` server gets each request in absolute form (``GET http://host:port/path``) with
  ``Proxy-Authorization``, on keep-alive connections to the proxy. Either way a
  connection through the proxy is pooled, resent, streamed and timed exactly as a direct
  one; opening it (proxy connect, CONNECT, TLS) counts against ``connect_timeout``.
  Without a proxy nothing of this runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import zlib
from collections import deque
from collections.abc import Iterator
from typing import cast

import httptools

from kubewerk.client.proxy import ProxyURL

__all__ = [
    "CLOSED_IDLE_WINDOW",
    "HIGH_WATER",
    "ConnectError",
    "ConnectionPool",
    "Headers",
    "MalformedResponse",
    "Response",
    "ServerDisconnected",
    "StreamingResponse",
    "TransportError",
]

log = logging.getLogger("kubewerk.client.transport")

HIGH_WATER = 1 << 20
"""A stream pauses reading from the socket while more than this many bytes wait unread,
and resumes as soon as the consumer has taken them."""
MAX_HEADER_BYTES = 1 << 20
"""Response headers larger than this (names and values together) are rejected."""
CLOSED_IDLE_WINDOW = 0.1
"""Seconds after the write within which a reused connection's close, before any response
byte, is taken as the server having closed it while idle (every method is then resent)."""

_DECODABLE = frozenset({b"gzip", b"x-gzip", b"deflate"})


class TransportError(Exception):
    """The request got no (usable) HTTP answer; ``why`` says why in a few lower-case words."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class ConnectError(TransportError):
    """No connection could be opened (refused, DNS, TLS handshake, connect timeout,
    a proxy that refused the tunnel). Nothing was sent to the server, so retrying is safe
    for every method; ``retry`` is False when retrying cannot help (a proxy that answered
    CONNECT with a 4xx, 407 Proxy Authentication Required say)."""

    def __init__(self, why: str, *, retry: bool = True) -> None:
        super().__init__(why)
        self.retry = retry


class ServerDisconnected(TransportError):
    """The connection was lost before the answer was complete.

    ``before_response``: no byte of the answer had arrived; ``elapsed``: seconds between
    writing the request and noticing the loss; ``written``: False when the loss was seen
    before anything was written (the request never left)."""

    def __init__(
        self, why: str, *, before_response: bool, elapsed: float, written: bool = True
    ) -> None:
        super().__init__(why)
        self.before_response = before_response
        self.elapsed = elapsed
        self.written = written


class MalformedResponse(TransportError):
    """The server's answer is not valid HTTP/1.1 (or not decodable); its connection is dropped."""


class Headers:
    """Response headers in arrival order, looked up case-insensitively. Kept as the raw
    bytes the parser gave and decoded (latin-1) only when asked for."""

    __slots__ = ("_raw",)

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._raw = raw

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of ``name`` (any case), else ``default``."""
        key = name.lower().encode("latin-1")
        for k, v in self._raw:
            if k.lower() == key:
                return v.decode("latin-1")
        return default

    def get_all(self, name: str) -> list[str]:
        """Every value of ``name`` (any case), in arrival order (repeated ``Warning``
        headers, say)."""
        key = name.lower().encode("latin-1")
        return [v.decode("latin-1") for k, v in self._raw if k.lower() == key]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[tuple[str, str]]:
        """(lower-case name, value) pairs."""
        return iter([(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in self._raw])

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"Headers({list(self)!r})"


class Response:
    """A complete answer: status code, headers and the (decoded) body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: Headers, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


def _tls_reason(exc: ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate verification failed ({exc})"
    return f"TLS handshake failed ({exc})"


def _os_reason(exc: OSError) -> str:
    """A refused connect reads "connection refused" (as errno words it), not asyncio's
    "Connect call failed (...)"; a timeout without errno reads "timed out"."""
    if isinstance(exc, ssl.SSLError):
        return _tls_reason(exc)
    if exc.errno is not None and exc.errno > 0:
        return os.strerror(exc.errno).lower()
    if exc.strerror:  # socket.gaierror: negative EAI_* codes
        return exc.strerror.lower()
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection; one request at a time. Parser callbacks never raise
    (httptools would turn that into a parser error); failures are recorded in ``error``
    and every waiter is only ever woken with ``None``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.lost: asyncio.Future[None] = loop.create_future()
        self.broken = False  # never reuse: closed, EOF, Connection: close, protocol error
        self.idle_since = 0.0
        self.slotted = True  # counts against the pool's limit (False: a stream's own)
        self._busy = False
        self._head = False
        self._stream = False
        self.status = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._header_bytes = 0
        self.headers_done = False
        self._informational = False
        self.complete = False
        self._delimited = True
        self._decoder: zlib._Decompress | None = None
        self._body: list[bytes] = []
        self._buffered = 0
        self._paused = False
        self._got_data = False
        self._sent_at = 0.0
        self.error: TransportError | None = None
        self._waiter: asyncio.Future[None] | None = None

    # -- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport but implement it
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if not self._busy:
            # bytes nobody asked for (or after a complete answer): the stream is out of step
            self._drop()
            return
        self._got_data = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(MalformedResponse("malformed HTTP response (unexpected protocol switch)"))
        except httptools.HttpParserError as exc:
            self._fail(MalformedResponse(f"malformed HTTP response ({exc})"))

    def eof_received(self) -> bool | None:
        self.broken = True
        return None  # let the transport close itself; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.broken = True
        if not self.lost.done():
            self.lost.set_result(None)
        if not self._busy or self.complete:
            return
        if exc is None and self.headers_done and not self._delimited and self.error is None:
            self._finish()  # a body that ends with the connection (no length, not chunked)
            return
        if isinstance(exc, ssl.SSLError):
            why = _tls_reason(exc) if not self._got_data else f"TLS error ({exc})"
        else:
            why = "the server closed the connection"
        self._fail(
            ServerDisconnected(
                why, before_response=not self._got_data, elapsed=self._loop.time() - self._sent_at
            )
        )

    # -- httptools callbacks ---------------------------------------------------------------

    def on_message_begin(self) -> None:
        if not self._busy or self.complete:
            self._drop()  # a second answer to one request
            return
        self._headers = []
        self._header_bytes = 0
        self._informational = False

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._busy:
            return
        self._header_bytes += len(name) + len(value)
        if self._header_bytes > MAX_HEADER_BYTES:
            self._fail(
                MalformedResponse(
                    f"malformed HTTP response (headers larger than {MAX_HEADER_BYTES} bytes)"
                )
            )
            return
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        if not self._busy or self.error is not None:
            return
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            self._informational = True  # 100 Continue, 103 Early Hints: the answer follows
            return
        self.status = status
        self.headers_done = True
        delimited = status in (204, 304) or self._head
        for name, value in self._headers:
            key = name.lower()
            if key == b"content-length" or key == b"transfer-encoding":
                delimited = True
            elif key == b"content-encoding":
                coding = value.strip().lower()
                if coding in _DECODABLE:
                    self._decoder = zlib.decompressobj(wbits=47)  # gzip or zlib header, detected
                elif coding and coding != b"identity":
                    self._fail(
                        MalformedResponse(
                            "the server answered with Content-Encoding "
                            f"{value.strip().decode('latin-1')!r}, which kubewerk "
                            "does not decode (it sends no Accept-Encoding)"
                        )
                    )
                    return
        self._delimited = delimited
        if not delimited:
            self.broken = True
        if self._head:
            # the parser cannot be told that a HEAD answer has no body: finish here and
            # never reuse the connection
            self.broken = True
            self._finish()
        elif self._stream:
            self._wake()

    def on_body(self, body: bytes) -> None:
        if not self._busy or self.error is not None or self.complete:
            return
        if self._decoder is not None:
            try:
                body = self._decoder.decompress(body)
            except zlib.error as exc:
                self._fail(
                    MalformedResponse(f"malformed HTTP response (bad compressed body: {exc})")
                )
                return
            if not body:
                return
        self._body.append(body)
        if self._stream:
            self._buffered += len(body)
            if self._buffered > HIGH_WATER and not self._paused and self._transport is not None:
                self._paused = True
                self._transport.pause_reading()
            self._wake()

    def on_message_complete(self) -> None:
        if not self._busy or self.error is not None or self.complete:
            return
        if self._informational:
            self._informational = False
            return
        if not self._parser.should_keep_alive():
            self.broken = True
        if self._decoder is not None:
            try:
                rest = self._decoder.flush()
            except zlib.error as exc:
                self._fail(
                    MalformedResponse(f"malformed HTTP response (bad compressed body: {exc})")
                )
                return
            if rest:
                self._body.append(rest)
                self._buffered += len(rest)
        self._finish()

    # -- exchange --------------------------------------------------------------------------

    def usable(self, now: float, idle_timeout: float) -> bool:
        """Whether this idle connection may carry another request."""
        t = self._transport
        return (
            not self.broken
            and t is not None
            and not t.is_closing()
            and now - self.idle_since < idle_timeout
        )

    def send(self, data: bytes, *, head: bool, stream: bool) -> asyncio.Future[None]:
        """Write one request. The returned future resolves (always with None) when the
        whole answer is in (``stream=False``) or its headers are (``stream=True``), or on
        failure (then ``error`` is set)."""
        transport = self._transport
        if transport is None or transport.is_closing() or self.broken:
            raise ServerDisconnected(
                "the server closed the connection",
                before_response=True,
                elapsed=0.0,
                written=False,
            )
        self._busy = True
        self._head = head
        self._stream = stream
        self.status = 0
        self._headers = []
        self.headers_done = False
        self.complete = False
        self._delimited = True
        self._decoder = None
        self._body = []
        self._buffered = 0
        self._got_data = False
        self.error = None
        waiter = self._waiter = self._loop.create_future()
        self._sent_at = self._loop.time()
        transport.write(data)
        return waiter

    def response(self) -> Response:
        """The finished answer (after a ``stream=False`` send resolved without error)."""
        body = self._body
        data = body[0] if len(body) == 1 else b"".join(body)
        return Response(self.status, Headers(self._headers), data)

    def response_headers(self) -> Headers:
        """The answer's headers (after a ``stream=True`` send resolved without error)."""
        return Headers(self._headers)

    def take_body(self) -> bytes:
        """The body bytes received and not yet taken (b'' when none); resumes reading
        once the backlog is small again."""
        body = self._body
        if not body:
            return b""
        data = body[0] if len(body) == 1 else b"".join(body)
        self._body = []
        self._buffered = 0
        if self._paused and self._transport is not None:
            self._paused = False
            if not self._transport.is_closing():
                self._transport.resume_reading()
        return data

    def body_waiter(self) -> asyncio.Future[None]:
        """A future woken (with None) when more body arrives, the body ends, or the
        connection fails."""
        waiter = self._waiter = self._loop.create_future()
        return waiter

    def done(self) -> None:
        """The caller is finished with this exchange (the connection may be reused if sound)."""
        self._busy = False
        self.idle_since = self._loop.time()

    def close(self) -> None:
        """Close (no further reuse). The transport is aborted: pending writes are dropped;
        a request still waiting on it fails with :class:`ServerDisconnected`."""
        self.broken = True
        if self._transport is not None:
            self._transport.abort()

    def close_gracefully(self) -> None:
        """Close after flushing writes (TLS: send close_notify)."""
        self.broken = True
        if self._transport is not None:
            self._transport.close()

    def _finish(self) -> None:
        self.complete = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _fail(self, error: TransportError) -> None:
        if self.error is None:
            self.error = error
        self.broken = True
        if self._transport is not None:
            self._transport.abort()
        self._wake()

    def _drop(self) -> None:
        self.broken = True
        if self._transport is not None:
            self._transport.abort()


MAX_CONNECT_HEAD = 64 << 10
"""A proxy's answer to CONNECT (status line and headers) larger than this is rejected."""


class _TunnelSetup(asyncio.Protocol):
    """The connection to a proxy while it is asked for a tunnel: sends ``CONNECT`` and
    collects the answer's head (up to the blank line). Its future resolves with the head
    bytes, or fails with :class:`ConnectError` when the proxy closes first or sends too
    much; reading pauses once the head is in (the TLS handshake takes over)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, proxy: str) -> None:
        self._proxy = proxy
        self._buffer = bytearray()
        self.head: asyncio.Future[bytes] = loop.create_future()
        self.extra = False  # bytes arrived after the head (a server that spoke first)
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.head.done():
            self.extra = True
            return
        self._buffer += data
        end = self._buffer.find(b"\r\n\r\n")
        if end >= 0:
            self.extra = len(self._buffer) > end + 4
            self.head.set_result(bytes(self._buffer[:end]))
            if self._transport is not None:
                self._transport.pause_reading()
        elif len(self._buffer) > MAX_CONNECT_HEAD:
            self.head.set_exception(
                ConnectError(
                    f"proxy {self._proxy} answered CONNECT with "
                    f"headers larger than {MAX_CONNECT_HEAD} bytes"
                )
            )

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.head.done():
            why = (
                "closed the connection"
                if exc is None
                else _os_reason(exc)
                if isinstance(exc, OSError)
                else str(exc)
            )
            self.head.set_exception(
                ConnectError(f"proxy {self._proxy} {why} before answering CONNECT")
            )


def _connect_status(head: bytes, proxy: str) -> tuple[int, str]:
    """Status code and ``code reason`` text of a proxy's answer to CONNECT."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    version, _, rest = line.partition(" ")
    code, _, _reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise ConnectError(
            f"proxy {proxy} answered CONNECT with something that is not HTTP/1.x ({line[:60]!r})"
        )
    return int(code), rest.strip()


class StreamingResponse:
    """An answer whose body is read as it arrives (a watch). Always :meth:`close` it
    (or use ``async with``): the connection is pooled again only when the body was
    read to its end; otherwise it is closed."""

    def __init__(self, pool: ConnectionPool, conn: _Connection, deadline: float | None) -> None:
        self._pool = pool
        self._conn = conn
        self._deadline = deadline
        self._released = False
        self.status = conn.status
        self.headers = conn.response_headers()

    async def __aenter__(self) -> StreamingResponse:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    async def read_chunk(self) -> bytes:
        """The body bytes that arrived since the last call, waiting for some; b'' once the
        body has ended. Raises :class:`TransportError` when the connection fails and
        :class:`TimeoutError` at the deadline."""
        conn = self._conn
        while True:
            data = conn.take_body()
            if data:
                return data
            if conn.error is not None:
                raise conn.error
            if conn.complete or self._released:
                return b""
            waiter = conn.body_waiter()
            if self._deadline is None:
                await waiter
            else:
                async with asyncio.timeout_at(self._deadline):
                    await waiter

    async def read(self) -> bytes:
        """The rest of the body."""
        parts: list[bytes] = []
        while chunk := await self.read_chunk():
            parts.append(chunk)
        return b"".join(parts)

    def close(self) -> None:
        """Release the connection: back to the pool when the body ended cleanly, else closed."""
        if self._released:
            return
        self._released = True
        conn = self._conn
        if conn.complete and conn.error is None:
            self._pool._release(conn)
        else:
            conn.close()
            self._pool._free_slot(conn)


class ConnectionPool:
    """Keep-alive HTTP/1.1 connections to one server (see the module docstring).

    ``host``/``port`` are the server; ``ssl_context`` turns on TLS, with
    ``server_hostname`` as the name sent in SNI and checked against the certificate
    (default: ``host``). ``connect_timeout`` bounds waiting for a free connection plus
    opening one (TCP and TLS handshake; through a proxy also the proxy's TLS and CONNECT).

    ``proxy``: go through this HTTP proxy (see the module docstring); an ``https`` proxy
    is verified with ``proxy_ssl_context`` (default: the system trust store) against its
    host name. ``authority`` is the server as the Host header names it (default
    ``host:port``), used for the absolute-form request target through a proxy.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        limit: int = 100,
        connect_timeout: float | None = 30.0,
        idle_timeout: float = 90.0,
        proxy: ProxyURL | None = None,
        proxy_ssl_context: ssl.SSLContext | None = None,
        authority: str | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        self.limit = limit
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.proxy = proxy
        # decided once here: what a proxied connection sends first, how requests are rewritten
        self._proxy_ssl: ssl.SSLContext | None = None
        self._connect_head: bytes | None = None  # CONNECT request (https server through a proxy)
        self._forward: tuple[bytes, bytes] | None = None  # (b"http://authority", auth header line)
        self._timeout_why = "timed out"
        if proxy is not None:
            self._timeout_why = f"timed out (through proxy {proxy.display})"
            if proxy.scheme == "https":
                self._proxy_ssl = proxy_ssl_context or ssl.create_default_context()
            auth = proxy.authorization
            auth_line = f"Proxy-Authorization: {auth}\r\n" if auth else ""
            if ssl_context is not None:
                target = _host_port(host, port)
                self._connect_head = (
                    f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{auth_line}\r\n".encode(
                        "latin-1"
                    )
                )
            else:
                origin = authority or _host_port(host, port)
                self._forward = (f"http://{origin}".encode("latin-1"), auth_line.encode("latin-1"))
        self._idle: list[_Connection] = []
        self._waiters: deque[asyncio.Future[_Connection | None]] = deque()
        self._conns: set[_Connection] = set()  # every open connection, idle or busy
        self._open = 0  # slots taken: open connections plus connects under way (not streams)
        self.closed = False

    # -- public ------------------------------------------------------------------------------

    async def request(
        self,
        data: bytes,
        *,
        safe: bool,
        idempotent: bool = False,
        head: bool = False,
        timeout: float | None = None,
    ) -> Response:
        """Send ``data`` (a serialised request) and return the complete answer.

        ``safe``: the method is safe (GET, HEAD); ``idempotent``: sending it twice has
        the effect of sending it once (PUT, DELETE; safe methods are idempotent too):
        they decide whether it may be resent (module docstring). ``timeout`` bounds the
        whole exchange (waiting for a connection included)."""
        if self._forward is not None:
            data = self._absolute_form(data)
        async with asyncio.timeout(timeout):
            conn = self._take_idle()
            if conn is not None:
                reused = True
            else:
                conn, reused = await self._acquire(self.connect_timeout)
            try:
                try:
                    await conn.send(data, head=head, stream=False)
                    if conn.error is not None:
                        raise conn.error
                except ServerDisconnected as exc:
                    conn.close()
                    self._conns.discard(conn)
                    if not (reused and self._resend(exc, safe, idempotent)):
                        raise
                    log.debug(
                        "reused connection closed before the answer (%s); resending once", exc.why
                    )
                    conn = await self._connect_in_slot(self.connect_timeout)
                    await self._exchange(conn, data, head=head, stream=False)
            except BaseException:
                conn.close()
                self._free_slot(conn)
                raise
            response = conn.response()
            self._release(conn)
            return response

    async def stream(
        self, data: bytes, *, connect_timeout: float | None, deadline: float | None
    ) -> StreamingResponse:
        """Send ``data`` (a safe request) and return once the answer's headers are in;
        the body is read from the returned :class:`StreamingResponse`, which must be
        closed. ``deadline`` (loop time) bounds the headers and every body read."""
        if self._forward is not None:
            data = self._absolute_form(data)
        async with asyncio.timeout_at(deadline):
            conn = self._take_idle()
            reused = conn is not None
            if conn is not None:
                conn.slotted = False
                self._free_slot(None)  # its place under the limit: to a waiter, or free
            else:
                conn = await self._connect_stream(connect_timeout)
            try:
                try:
                    await self._exchange(conn, data, head=False, stream=True)
                except ServerDisconnected as exc:
                    conn.close()
                    self._conns.discard(conn)
                    if not (reused and self._resend(exc, True, True)):
                        raise
                    conn = await self._connect_stream(connect_timeout)
                    await self._exchange(conn, data, head=False, stream=True)
            except BaseException:
                conn.close()
                self._free_slot(conn)
                raise
        return StreamingResponse(self, conn, deadline)

    async def close(self, *, abort_active: bool = True, grace: float = 1.0) -> None:
        """Close the idle connections (and, with ``abort_active``, those in use: their
        requests fail with :class:`ServerDisconnected`). Connections still in use
        otherwise are closed when released. Waits up to ``grace`` seconds for the
        transports to finish closing (TLS close_notify), then aborts them."""
        self.closed = True
        idle, self._idle = self._idle, []
        closing = []
        for conn in idle:
            conn.close_gracefully()
            self._free_slot(conn)
            closing.append(conn)
        if abort_active:
            for conn in list(self._conns):
                conn.close()
                closing.append(conn)
        pending = [c.lost for c in closing if not c.lost.done()]
        if pending:
            await asyncio.wait(pending, timeout=grace)
            for conn in closing:
                if not conn.lost.done():
                    conn.close()

    @property
    def idle_count(self) -> int:
        """Idle connections kept for reuse."""
        return len(self._idle)

    @property
    def open_count(self) -> int:
        """Connections under the limit, open or being opened (idle and busy); streams'
        own connections are not among them (see ``stream_count``)."""
        return self._open

    @property
    def stream_count(self) -> int:
        """Open connections of streams (outside the limit)."""
        return sum(1 for conn in self._conns if not conn.slotted)

    # -- internals --------------------------------------------------------------------------

    @staticmethod
    def _resend(exc: ServerDisconnected, safe: bool, idempotent: bool) -> bool:
        if not exc.before_response:
            return False
        if safe or not exc.written:
            return True
        return idempotent and exc.elapsed <= CLOSED_IDLE_WINDOW

    async def _exchange(self, conn: _Connection, data: bytes, *, head: bool, stream: bool) -> None:
        await conn.send(data, head=head, stream=stream)
        if conn.error is not None:
            raise conn.error

    def _take_idle(self) -> _Connection | None:
        """The most recently released sound idle connection (unsound ones are closed on the way)."""
        idle = self._idle
        if not idle:
            return None
        now = asyncio.get_running_loop().time()
        while idle:
            conn = idle.pop()
            if conn.usable(now, self.idle_timeout):
                return conn
            conn.close_gracefully()
            self._free_slot(conn)
        return None

    async def _acquire(self, connect_timeout: float | None) -> tuple[_Connection, bool]:
        """An idle connection or one handed over by a finishing request (reused=True),
        else a new one (reused=False). On failure the slot is given back before raising."""
        conn = self._take_idle()
        if conn is not None:
            return conn, True
        try:
            async with asyncio.timeout(connect_timeout):
                if self.limit > 0 and self._open >= self.limit:
                    got = await self._wait_turn()
                    if got is not None:
                        if got.usable(asyncio.get_running_loop().time(), self.idle_timeout):
                            return got, True
                        got.close_gracefully()
                        self._conns.discard(got)  # its slot is ours now
                else:
                    self._open += 1
                try:
                    conn = await self._connect()
                except BaseException:
                    self._free_slot(None)
                    raise
        except TimeoutError:
            raise ConnectError(self._timeout_why) from None
        return conn, False

    async def _wait_turn(self) -> _Connection | None:
        """Wait until a busy connection is handed over (returned) or a slot freed (None)."""
        fut: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            return await fut
        except BaseException:
            if fut.done() and not fut.cancelled():
                got = fut.result()  # handed over as we were cancelled: pass it on
                if got is None:
                    self._free_slot(None)
                else:
                    self._release(got)
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(fut)
            raise

    async def _connect_in_slot(self, connect_timeout: float | None) -> _Connection:
        """A fresh connection in a slot the caller already holds."""
        try:
            async with asyncio.timeout(connect_timeout):
                return await self._connect()
        except TimeoutError:
            raise ConnectError(self._timeout_why) from None

    async def _connect_stream(self, connect_timeout: float | None) -> _Connection:
        """A fresh connection of a stream's own, outside the limit."""
        conn = await self._connect_in_slot(connect_timeout)
        conn.slotted = False
        return conn

    def _absolute_form(self, data: bytes) -> bytes:
        """``data`` with an origin-form target (``/path``) made absolute and the
        ``Proxy-Authorization`` line added (an http server through a proxy)."""
        assert self._forward is not None
        origin, auth_line = self._forward
        space = data.find(b" ")
        eol = data.find(b"\r\n", space)
        if space < 0 or eol < 0 or data[space + 1 : space + 2] != b"/":
            return data  # not an origin-form request line: sent as it is
        eol += 2
        return b"".join((data[: space + 1], origin, data[space + 1 : eol], auth_line, data[eol:]))

    async def _connect(self) -> _Connection:
        if self.proxy is not None:
            return await self._connect_through_proxy(self.proxy)
        loop = asyncio.get_running_loop()
        ctx = self.ssl_context
        try:
            if ctx is None:
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop), self.host, self.port
                )
            else:
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop),
                    self.host,
                    self.port,
                    ssl=ctx,
                    server_hostname=self.server_hostname or self.host,
                )
        except ssl.SSLError as exc:
            raise ConnectError(_tls_reason(exc)) from None
        except OSError as exc:
            raise ConnectError(_os_reason(exc)) from None
        self._conns.add(conn)
        return conn

    async def _connect_through_proxy(self, proxy: ProxyURL) -> _Connection:
        """A connection to the proxy (http server: requests are forwarded) or a tunnel
        through it with TLS to the server on top (https server)."""
        loop = asyncio.get_running_loop()
        proxy_ssl = self._proxy_ssl
        tls_name = proxy.host if proxy_ssl is not None else None
        connect_head = self._connect_head
        try:
            if connect_head is None:
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop),
                    proxy.host,
                    proxy.port,
                    ssl=proxy_ssl,
                    server_hostname=tls_name,
                )
                self._conns.add(conn)
                return conn
            raw, setup = await loop.create_connection(
                lambda: _TunnelSetup(loop, proxy.display),
                proxy.host,
                proxy.port,
                ssl=proxy_ssl,
                server_hostname=tls_name,
            )
        except ssl.SSLError as exc:
            raise ConnectError(f"proxy {proxy.display}: {_tls_reason(exc)}") from None
        except OSError as exc:
            raise ConnectError(
                f"cannot connect to proxy {proxy.display}: {_os_reason(exc)}"
            ) from None
        transport = raw
        try:
            transport.write(connect_head)
            head = await setup.head
            code, status = _connect_status(head, proxy.display)
            if not 200 <= code < 300:
                target = _host_port(self.host, self.port)
                raise ConnectError(
                    f"proxy {proxy.display} refused CONNECT {target}: {status}", retry=code >= 500
                )
            if setup.extra:
                raise ConnectError(
                    f"proxy {proxy.display} sent bytes after "
                    "its CONNECT answer before the TLS handshake"
                )
            conn = _Connection(loop)
            assert self.ssl_context is not None
            tls = await loop.start_tls(
                transport, conn, self.ssl_context, server_hostname=self.server_hostname or self.host
            )
        except ssl.SSLError as exc:
            transport.abort()
            raise ConnectError(_tls_reason(exc)) from None
        except OSError as exc:
            transport.abort()
            raise ConnectError(
                f"tunnel through proxy {proxy.display} failed: {_os_reason(exc)}"
            ) from None
        except BaseException:
            transport.abort()
            raise
        if tls is None:  # the transport closed during the handshake
            raise ConnectError(
                f"tunnel through proxy {proxy.display} closed during the TLS handshake"
            )
        conn.connection_made(tls)
        self._conns.add(conn)
        return conn

    def _release(self, conn: _Connection) -> None:
        """Give a connection whose exchange finished back: to the first waiter, to the
        idle list, or closed when it cannot be reused."""
        conn.done()
        if self.closed or not conn.usable(conn.idle_since, self.idle_timeout):
            conn.close_gracefully()
            self._free_slot(conn)
            return
        if not conn.slotted:  # a stream's: kept only where there is room under the limit
            if self.limit > 0 and self._open >= self.limit:
                conn.close_gracefully()
                self._conns.discard(conn)
                return
            conn.slotted = True
            self._open += 1
        waiters = self._waiters
        while waiters:
            fut = waiters.popleft()
            if not fut.done():
                fut.set_result(conn)
                return
        self._idle.append(conn)

    def _free_slot(self, conn: _Connection | None) -> None:
        """A slot is no longer used by ``conn`` (closed): hand it to the first waiter,
        else free it."""
        if conn is not None:
            self._conns.discard(conn)
            if not conn.slotted:  # a stream's own: it held no slot
                return
        waiters = self._waiters
        while waiters:
            fut = waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self._open -= 1
