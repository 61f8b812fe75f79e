"""A small async HTTPS POST client for calling webhooks (asyncio streams + httptools).

:class:`ConnectionPool` keeps HTTP/1.1 keep-alive connections per endpoint — the
address, the TLS server name and the trust (the ``SSLContext`` made from the
caBundle) — so a webhook costs one TLS handshake per connection rather than one per
call, as kube-apiserver's Go transport reuses its connections. A changed caBundle or
endpoint is a different key, so it takes effect on the next call; idle connections
are bounded per endpoint (:data:`MAX_IDLE_PER_ENDPOINT`) and closed after
:data:`IDLE_TIMEOUT` seconds (Go's ``IdleConnTimeout``) or when the server closes them.
A response is read by its ``Content-Length``, its chunked framing, or (no length, no
chunking: HTTP/1.0 style) up to the server's close; sockets are set ``TCP_NODELAY``.
:func:`client_context` remembers the contexts it made per caBundle: loading a trust
store costs ~20 ms of CPU, which had been paid on every call.

The webhook is someone else's code, and everything it sends is hostile input:

- the whole exchange (connect, TLS, request, every byte of the answer) ends at one
  deadline, however slowly the answer drips in;
- the headers are bounded (:data:`MAX_RESPONSE_HEADER_BYTES`, Go's transport default)
  and so is the body (:data:`MAX_RESPONSE_BYTES`), counted as it arrives: a body that
  announces more is refused before any of it is read, one that streams more is cut at
  the limit, so memory never depends on what the webhook claims;
- informational (1xx) answers are skipped, at most :data:`MAX_INFORMATIONAL` of them;
- redirects are not followed (kube's Go client follows up to ten, to any host; a
  webhook is called only at the address its configuration names, so a redirect is a
  failed call).

Failures raise :class:`CallError` with Go's ``net/http`` and client-go wording (``Post
"https://…": dial tcp 127.0.0.1:1: connect: connection refused``, ``… context deadline
exceeded``, ``unexpected error when reading response body. Please retry. Original
error: …`` once the headers were read), which is what kube-apiserver puts in its
messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import ssl
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final

import httptools
from cryptography import x509

from kubewerk.core.gofmt import go_quote

MAX_RESPONSE_BYTES: Final = 3 * 1024 * 1024
"""Bytes of a webhook's response body read at most (kube-apiserver's limit on a request
body; its REST client reads a webhook's answer without one)."""
MAX_RESPONSE_HEADER_BYTES: Final = 10 << 20
"""Bytes of a response's status line and headers read at most (Go's transport default)."""
MAX_INFORMATIONAL: Final = 5
"""1xx answers skipped before the real one at most (Go's transport limit)."""
_READ: Final = 65536
_BODY_ERROR: Final = "unexpected error when reading response body. Please retry. Original error: "
MAX_IDLE_PER_ENDPOINT: Final = 32
"""Idle keep-alive connections kept per endpoint; more are closed when released."""
IDLE_TIMEOUT: Final = 90.0
"""Seconds an idle connection is kept (Go's default ``IdleConnTimeout``)."""
_CONTEXTS_KEPT: Final = 64


class CallError(Exception):
    """The call did not produce a response; ``str()`` is Go's ``url.Error`` text, or
    client-go's text for a body that failed once the headers were read (``in_body``)."""

    def __init__(self, text: str, *, in_body: bool = False) -> None:
        super().__init__(text)
        self.in_body = in_body


@dataclass
class HttpResponse:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class _Collector:
    """httptools callbacks: the headers and a bounded body of one response. Informational
    (1xx) answers before it are counted and forgotten; anything after it (a second
    response sent unasked) is ignored and marks the connection unfit for reuse."""

    def __init__(self) -> None:
        self.parser: httptools.HttpResponseParser | None = None
        self.body = bytearray()
        self.started = False
        self.headers_done = False
        self.done = False
        self.too_large = False
        self.extra = False
        self.informational = 0
        self.status = 0
        self.headers: dict[str, str] = {}

    def on_message_begin(self) -> None:
        if self.done:
            self.extra = True
        self.started = True

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.done:
            self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        if self.done:
            return
        self.headers_done = True
        length = self.headers.get("content-length", "").strip()
        if length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
            self.too_large = True  # announced: refused before a byte of it is read

    def on_body(self, chunk: bytes) -> None:
        if self.done:
            return
        if self.too_large or len(self.body) + len(chunk) > MAX_RESPONSE_BYTES:
            self.too_large = True
            return
        self.body += chunk

    def on_message_complete(self) -> None:
        if self.done:
            return
        status = self.parser.get_status_code() if self.parser is not None else 0
        if 100 <= status < 200 and status != 101:
            # an informational answer: the real one follows (Go's transport skips them)
            self.informational += 1
            self.headers = {}
            self.body = bytearray()
            self.headers_done = False
            return
        self.status = status
        self.done = True

    def ends_at_close(self, status: int) -> bool:
        """Whether the body is delimited by the server closing the connection (RFC 9112
        6.3: no Content-Length and no chunked Transfer-Encoding, a status with a body)."""
        if status < 200 or status in (204, 304):
            return False
        return (
            "content-length" not in self.headers
            and "chunked" not in self.headers.get("transfer-encoding", "").lower()
        )


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
    __slots__ = ("idle_since", "local", "reader", "remote", "uses", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0
        self.uses = 0
        self.local = _address(writer.get_extra_info("sockname"))
        self.remote = _address(writer.get_extra_info("peername"))
        """The addresses as Go's errors name them (``127.0.0.1:34567``)."""

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

        ``url`` is the URL as the error messages name it. Returns the final answer
        within ``timeout`` seconds, its body at most :data:`MAX_RESPONSE_BYTES`; raises
        :class:`CallError` otherwise (a redirect included: it is not followed)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        prefix = f'Post "{url}": '
        key: _Key = (host, port, server_name, context)
        conn = self._take(key, loop.time())
        if conn is not None:
            try:
                response = await self._exchange(
                    key, conn, path, body, server_name, port, prefix, deadline, reused=True
                )
                return _not_redirected(response, prefix)
            except _Stale:
                pass  # the server closed it while idle: the request never reached it
        conn = await self._connect(host, port, server_name, context, prefix, deadline)
        try:
            response = await self._exchange(
                key, conn, path, body, server_name, port, prefix, deadline, reused=False
            )
        except _Stale:  # pragma: no cover - only raised for reused connections
            raise CallError(prefix + "EOF") from None
        return _not_redirected(response, prefix)

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
            reason = _tls_reason(exc)
            if reason is None:
                reason = await _hostname_error(host, port, server_name, deadline)
            raise CallError(prefix + "tls: failed to verify certificate: " + reason) from None
        except ssl.SSLError as exc:
            raise CallError(prefix + _tls_error(exc)) from None
        except (ConnectionResetError, asyncio.IncompleteReadError):
            # closed or reset in the middle of the handshake
            raise CallError(prefix + "EOF") from None
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
        parser = httptools.HttpResponseParser(collector)
        collector.parser = parser
        head_bytes = 0

        def fail(reason: str) -> CallError:
            if collector.headers_done:
                return CallError(_BODY_ERROR + reason, in_body=True)
            return CallError(prefix + reason)

        try:
            head = (
                f"POST {path} HTTP/1.1\r\nHost: {server_name}:{port}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, */*\r\n"
                "User-Agent: kube-apiserver-admission\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode("latin-1")
            conn.writer.write(head + body)
            conn.uses += 1
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    raise fail("context deadline exceeded")
                try:
                    chunk = await asyncio.wait_for(conn.reader.read(_READ), left)
                except TimeoutError:
                    raise fail("context deadline exceeded") from None
                if not chunk:
                    if reused and not collector.started:
                        raise _Stale
                    status = parser.get_status_code() if collector.headers_done else 0
                    if collector.headers_done and collector.ends_at_close(status):
                        collector.status = status
                        break  # the close ends the body: the answer is complete
                    raise fail("unexpected EOF" if collector.headers_done else "EOF")
                if not collector.headers_done:
                    head_bytes += len(chunk)
                try:
                    parser.feed_data(chunk)
                except httptools.HttpParserUpgrade:
                    raise fail("malformed HTTP response: unexpected protocol upgrade") from None
                except httptools.HttpParserError as exc:
                    raise fail(_parse_error(exc, collector.headers_done)) from None
                if not collector.headers_done and head_bytes > MAX_RESPONSE_HEADER_BYTES:
                    raise fail(
                        "net/http: server response headers exceeded "
                        f"{MAX_RESPONSE_HEADER_BYTES} bytes; aborted"
                    )
                if collector.too_large:
                    raise fail(f"response body larger than the limit of {MAX_RESPONSE_BYTES} bytes")
                if collector.informational > MAX_INFORMATIONAL:
                    raise CallError(prefix + "net/http: too many 1xx informational responses")
                if collector.done:
                    # llhttp's should_keep_alive() is already reset once the message completes
                    keep = (
                        parser.get_http_version() == "1.1"
                        and "close" not in collector.headers.get("connection", "").lower()
                        and not collector.extra
                    )
                    break
            broken = False
            return HttpResponse(collector.status, bytes(collector.body), collector.headers)
        except (ConnectionResetError, BrokenPipeError) as exc:
            if reused and not collector.started:
                raise _Stale from None
            raise fail(_read_error(conn, exc)) from None
        except OSError as exc:
            raise fail(_read_error(conn, exc)) from None
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


def _not_redirected(response: HttpResponse, prefix: str) -> HttpResponse:
    """``response``, unless it is a redirect Go's client would follow (a 301, 302, 303,
    307 or 308 with a ``Location``): the embedded server does not follow it."""
    location = response.headers.get("location")
    if response.status in (301, 302, 303, 307, 308) and location is not None:
        raise CallError(
            prefix + f"redirect to {go_quote(location)} not followed: "
            "the embedded server calls a webhook only at its configured address"
        )
    return response


def _parse_error(exc: httptools.HttpParserError, in_body: bool) -> str:
    """Go's words for a response its transport cannot parse."""
    text = str(exc)
    if in_body:
        if "chunk" in text.lower():
            return (
                "invalid byte in chunk length"
                if "size" in text.lower()
                else ("malformed chunked encoding")
            )
        return f"malformed HTTP response body: {text}"
    return f"malformed HTTP response: {text}"


def _read_error(conn: _Connection, exc: OSError) -> str:
    """Go's ``read tcp LOCAL->REMOTE: read: <errno text>`` for a connection that failed
    while its answer was read."""
    return f"read tcp {conn.local}->{conn.remote}: read: {_errno_text(exc)}"


def _address(addr: object) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        host, port = str(addr[0]), addr[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return "?"


def _errno_text(exc: OSError) -> str:
    """The errno's text as Go's ``syscall.Errno`` prints it (lower case)."""
    text = exc.strerror or str(exc)
    return text[:1].lower() + text[1:]


def _dial_error(host: str, port: int, exc: OSError) -> str:
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(exc, ConnectionRefusedError):
        return f"dial tcp {target}: connect: connection refused"
    return f"dial tcp {target}: {_errno_text(exc)}"


def _tls_error(exc: ssl.SSLError) -> str:
    """Go's words for a handshake that failed other than on the certificate."""
    if isinstance(exc, ssl.SSLEOFError | ssl.SSLZeroReturnError):
        return "EOF"
    if exc.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "UNKNOWN_PROTOCOL"):
        return "tls: first record does not look like a TLS handshake"
    reason = str(exc.reason or exc).lower().replace("_", " ")
    if reason.startswith(("sslv3 alert ", "tlsv1 alert ")):
        reason = reason.split(" alert ", 1)[1]
    return f"remote error: tls: {reason}"


def _tls_reason(exc: ssl.SSLCertVerificationError) -> str | None:
    """Go's ``x509`` text for a certificate that failed verification; None for a name
    mismatch, whose text needs the certificate's names (:func:`_hostname_error`)."""
    message = str(exc.verify_message or exc)
    if "Hostname mismatch" in message or "IP address mismatch" in message:
        return None
    if (
        "unable to get local issuer" in message
        or "self-signed" in message
        or ("self signed" in message)
    ):
        return "x509: certificate signed by unknown authority"
    if "certificate has expired" in message:
        return "x509: certificate has expired or is not yet valid"
    return f"x509: {message}"


async def _hostname_error(host: str, port: int, server_name: str, deadline: float) -> str:
    """Go's ``x509.HostnameError`` text: the names the certificate is valid for (its
    IP SANs when an IP address was asked for), read from a second handshake that only
    fetches the certificate; the generic text when that fails."""
    generic = f"x509: certificate is not valid for {server_name}"
    left = deadline - asyncio.get_running_loop().time()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        if left <= 0:
            return generic
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=ctx, server_hostname=server_name), left
        )
    except (OSError, TimeoutError):
        return generic
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    finally:
        writer.transport.abort()
    if not der:
        return generic
    try:
        cert = x509.load_der_x509_certificate(der)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return f"x509: certificate is not valid for any names, but wanted to match {server_name}"
    try:
        ipaddress.ip_address(server_name)
        asked_ip = True
    except ValueError:
        asked_ip = False
    if asked_ip:
        ips = [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
        if not ips:
            return (
                f"x509: cannot validate certificate for {server_name} "
                "because it doesn't contain any IP SANs"
            )
        valid = ", ".join(ips)
    else:
        valid = ", ".join(sans.get_values_for_type(x509.DNSName))
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {server_name}"
    return f"x509: certificate is valid for {valid}, not {server_name}"
