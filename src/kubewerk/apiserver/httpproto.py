"""HTTP/1.1 connection limits for the embedded API server, as Go's ``net/http`` applies them
to kube-apiserver.

uvicorn's httptools protocol buffers a request line and headers of any size and keeps a
connection open forever until it has sent a first request. ``LimitedHttpToolsProtocol``
is that protocol with the bounds kube-apiserver's Go server has:

- **header size** (``MaxHeaderBytes``, kube-apiserver: 1 MiB): the request line and
  headers may take ``max_header_bytes`` plus the 4096 bytes Go allows for its read
  buffer; one byte more and the answer is Go's ``431 Request Header Fields Too Large``
  (plain text, ``Connection: close``) and the connection closes. The parser is fed at
  most up to the limit, so a connection never buffers much more than it;
- **header-read timeout** (``ReadHeaderTimeout``, kube-apiserver: 32 s): from the moment
  a connection opens, or the first byte of a following request arrives, the headers must
  be complete within ``read_header_timeout`` seconds, otherwise the connection closes
  without an answer, as Go's does (slowloris; connections that never send anything);
- **idle timeout** (``IdleTimeout``, kube-apiserver: 90 s): a keep-alive connection with
  no request in progress closes after ``idle_timeout`` seconds;
- **request-body timeout**: a body announced by the headers must arrive within
  ``request_body_timeout`` seconds (kube-apiserver's 60 s ``--request-timeout`` covers
  it there); otherwise the answer is kube's ``504 Timeout`` Status and the connection
  closes;
- **pipelining depth**: a client may send requests without waiting for answers; Go's
  server reads the next one only once the previous is answered, while httptools parses
  every request of a received chunk at once, and uvicorn keeps each parsed request
  (scope, cycle) until its turn: 4 MB of pipelined ``GET /healthz`` cost about 25 MB per
  connection. Input in which several heads end is fed to the parser in slices of at most
  ``FEED_SLICE`` bytes, and once ``PIPELINE_DEPTH`` parsed requests wait, the rest is held
  unparsed, with reading paused, until answers make room: a connection holds at most
  that many waiting requests plus one slice's worth, and one read of raw bytes;
- **connection cap** (no Go counterpart; it keeps descriptors for the server's own files
  and for accepting): a connection over ``max_connections`` is answered ``503`` and
  closed at once.

None of these ever cuts a response in progress: a watch streams for as long as it
likes, and the idle timer only starts when a response is complete.

**Requests Go reads differently.** A head is checked as Go's server checks it, and a
request that cannot be read gets Go's plain-text answer instead of uvicorn's
(``httpgo``: two ``Host`` lines, a missing or malformed ``Host``, a version other than
1.x, a ``Transfer-Encoding`` other than one ``chunked``, an unknown ``Expect``, a bad
``%`` escape in the path; ``OPTIONS *``; bytes of 0x80 and up in the target; ``100
Continue`` only for an HTTP/1.1 body; HTTP/1.0 keep-alive). The common head (one ``Host``
already seen valid, no ``Expect`` or ``Transfer-Encoding``, HTTP/1.1) pays a few
comparisons: ``on_header`` notes the rest, and the version is read from the scope uvicorn
fills rather than from the parser (about a microsecond each time).

**Long request targets.** httptools' URL parser keeps 16-bit offsets, so a target over
64 KiB is Go's plain-text ``400 Bad Request`` where Go reads any target within
``MaxHeaderBytes``. That is kept on purpose: selectors are compiled so that matching
costs per object what the object's labels cost (``core.selector_match``), but parsing
still grows with the text (a 60 KB label selector over 1,000 objects takes ~40 ms of the
event loop; a 1 MB one would take ~0.5-1 s).

Over TLS, each request's ASGI scope carries ``scope["extensions"]["tls"]`` with
kubewerk's own keys (not the ASGI TLS extension's): ``client_cert_der``, the DER of the
client certificate the handshake verified (or None), ``version`` (``"TLSv1.3"``) and
``cipher``; read once per connection.

**One write per response.** uvicorn writes a response's status line and headers as soon
as the application sends ``http.response.start``, and its body in a second write: two
system calls, and on loopback two wake-ups of the client, per response. Each request's
``RequestResponseCycle`` here writes through its own ``CoalescingWriter``, which holds the
cycle's first write (the head) until the next one (the body), so that both go out in one;
what is held goes out at the end of the event loop's current turn at the latest, so a
streaming response (a watch) sends its headers as promptly as before. Measured on the
create benchmark, the two writes took ~15% of the server's CPU: the client sleeps between
responses, and each write paid for waking it.

``direct_body(send)`` gives a streaming response (a watch) a ``DirectBody``: a way to
write body chunks straight to the connection's transport, the same bytes uvicorn's
``send`` writes, without a coroutine and an ASGI message per chunk. It exists only when
``send`` is uvicorn's own (httptools) ``send`` of a chunked response already started, so
a wrapper around ``send`` (the audit log, a middleware) always sees every byte.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from asyncio.events import TimerHandle
from dataclasses import dataclass
from typing import Any, ClassVar

import httptools
import orjson
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from kubewerk.apiserver import httpgo
from kubewerk.core.errors import ApiError

DEFAULT_MAX_HEADER_BYTES = 1 << 20  # Go's http.DefaultMaxHeaderBytes; kube-apiserver sets the same
HEADER_SLOP = 4096  # Go reads headers through a limit of MaxHeaderBytes + 4096 ("bufio slop")
PIPELINE_DEPTH = 16  # parsed requests waiting behind the one being answered, before input is held
FEED_SLICE = 4096  # input is fed to the parser at most this much at a time once it is longer
DEFAULT_READ_HEADER_TIMEOUT = 32.0  # kube-apiserver's ReadHeaderTimeout
DEFAULT_IDLE_TIMEOUT = 90.0  # kube-apiserver's IdleTimeout
DEFAULT_REQUEST_BODY_TIMEOUT = 60.0  # kube-apiserver's default --request-timeout
# after an error answer, keep reading (and dropping) the client's bytes this long before
# closing, so the close does not become a reset that destroys the answer (Go: rstAvoidanceDelay)
CLOSE_LINGER = 0.5
# at shutdown, an idle TLS connection's close_notify gets this long to leave before the
# connection is dropped (the peer's answer is not awaited)
_TLS_CLOSE_GRACE = 0.05

_HEADERS_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n"
    b"\r\n"
    b"431 Request Header Fields Too Large"
)
_TOO_MANY_CONNECTIONS_TEXT = b"too many open connections"
_TOO_MANY_CONNECTIONS = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: " + str(len(_TOO_MANY_CONNECTIONS_TEXT)).encode() + b"\r\n"
    b"Connection: close\r\n"
    b"\r\n" + _TOO_MANY_CONNECTIONS_TEXT
)
_TIMEOUT_STATUS = orjson.dumps(
    ApiError.timeout("Timeout: request did not complete within the allotted timeout").to_status()
)
_BODY_TIMED_OUT = (
    b"HTTP/1.1 504 Gateway Timeout\r\n"
    b"Content-Type: application/json\r\n"
    b"Content-Length: " + str(len(_TIMEOUT_STATUS)).encode() + b"\r\n"
    b"Connection: close\r\n"
    b"\r\n" + _TIMEOUT_STATUS
)


def _positive_seconds(name: str, value: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class HttpLimits:
    """The per-connection bounds ``LimitedHttpToolsProtocol`` enforces (see the module doc).

    Construction validates every value: sizes and counts are positive integers, timeouts
    positive finite seconds; ``max_connections=None`` means no cap.
    """

    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    read_header_timeout: float = DEFAULT_READ_HEADER_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    request_body_timeout: float = DEFAULT_REQUEST_BODY_TIMEOUT
    max_connections: int | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_header_bytes, bool)
            or not isinstance(self.max_header_bytes, int)
            or self.max_header_bytes <= 0
        ):
            raise ValueError(
                "max_header_bytes must be a positive number "
                f"of bytes, not {self.max_header_bytes!r}"
            )
        for name in ("read_header_timeout", "idle_timeout", "request_body_timeout"):
            object.__setattr__(self, name, _positive_seconds(name, getattr(self, name)))
        cap = self.max_connections
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0):
            raise ValueError(
                f"max_connections must be a positive number of connections, not {cap!r}"
            )

    @property
    def max_head_bytes(self) -> int:
        """The most bytes a request line and its headers may take (Go's limit with its slop)."""
        return self.max_header_bytes + HEADER_SLOP


COALESCE_MAX = 64 * 1024
"""Bodies up to this many bytes go out joined to their head; a larger one is written
after it (joining would copy the body once more)."""


class CoalescingWriter:
    """The transport one request's cycle writes through (see the module doc).

    ``write`` holds the first bytes written through it (a response's head) and sends them
    in front of the next write; a call scheduled with ``loop.call_soon`` sends them if no
    second write comes in the same turn. Later writes go straight to the transport.
    ``close`` sends what is held first, so an answer is never lost to a close. Every other
    attribute is the transport's own.
    """

    __slots__ = ("_held", "_hold", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._hold = True  # the first write is held

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if len(data) > COALESCE_MAX:
                # a large body: two writes cost nothing beside it, a joined copy would
                self._transport.write(held)
                self._transport.write(data)
            else:
                self._transport.write(held + bytes(data))
        elif self._hold and not self._transport.is_closing():
            self._hold = False
            self._held = bytes(data)
            self._loop.call_soon(self.flush)
        else:
            self._hold = False
            self._transport.write(data)

    def flush(self) -> None:
        """Send what is held now (nothing when nothing is)."""
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held)

    def release(self) -> asyncio.Transport:
        """Send what is held and hand over the transport itself: what is written to it
        from now on follows what went through this writer."""
        self.flush()
        return self._transport

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of ``limits`` (see the module doc).

    Use ``protocol_class(limits)`` to get a subclass bound to one server's limits; this
    base class carries the defaults.
    """

    limits: ClassVar[HttpLimits] = HttpLimits()

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        limits = self.limits
        self.timeout_keep_alive = limits.idle_timeout  # type: ignore[assignment]  # uvicorn types it int
        self._head_limit = limits.max_head_bytes
        self._head_bytes = 0  # bytes of the current request line and headers seen so far
        self._heads_done = 0  # number of requests whose headers were complete
        self._in_body = False  # headers complete, body not yet
        self._head_timer: TimerHandle | None = None
        self._body_timer: TimerHandle | None = None
        self._closing = False  # answered with an error: input is dropped until the close
        # input not parsed yet, from _held_at on: PIPELINE_DEPTH requests were waiting
        self._held = b""
        self._held_at = 0
        self._extensions: dict[str, Any] | None = None  # the TLS extension, on TLS connections
        # what the current head's headers said that Go's rules look at (see on_header)
        self._host: bytes | None = None
        self._odd = False  # a second Host, an Expect or a Transfer-Encoding was seen
        self._hosts_repeated = False
        self._expect: bytes | None = None
        self._transfer_encodings: list[bytes] = []
        self._deferred_answer: bytes | None = None  # for a refused pipelined request
        # the parser reads any HTTP version, so that the Go answer (505) comes from here
        self.parser.set_dangerous_leniencies(lenient_version=True)

    # -- connection --------------------------------------------------------------------

    def connection_made(  # type: ignore[override]
        self, transport: asyncio.Transport
    ) -> None:
        cap = self.limits.max_connections
        if cap is not None and len(self.connections) >= cap:
            # refuse before the connection is counted or parsed: the descriptor goes back at once
            self.transport = transport
            self._closing = True
            transport.write(_TOO_MANY_CONNECTIONS)
            transport.close()
            return
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            cipher = ssl_object.cipher()
            self._extensions = {
                "tls": {
                    "client_cert_der": ssl_object.getpeercert(binary_form=True),
                    "version": ssl_object.version(),
                    "cipher": cipher[0] if cipher else None,
                }
            }
        self._head_timer = self.loop.call_later(
            self.limits.read_header_timeout, self._head_timed_out
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """Begin the server's graceful shutdown on this connection (uvicorn's): a request
        in progress is answered and the connection then closed; an idle one is closed now.

        An idle TLS connection is sent its close_notify and dropped a moment later
        without waiting for the peer's answer (Go's ``http.Server.Shutdown`` does the
        same): a client whose pool does not read an idle connection never answers, and
        the stop would otherwise wait out the whole graceful-shutdown timeout."""
        super().shutdown()
        transport = self.transport
        if self._extensions is not None and transport.is_closing():
            self.loop.call_later(_TLS_CLOSE_GRACE, transport.abort)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        if self._held:
            # still waiting for room in the pipeline (bytes read before the pause took
            # effect): keep them in order, read no more
            self._held = self._held[self._held_at :] + data
            self._held_at = 0
            self.flow.pause_reading()
            return
        self._feed_bounded(data, 0)

    def on_response_complete(self) -> None:
        if self._deferred_answer is not None and not self.pipeline:
            # the last response before a refused pipelined request is complete
            self._answer_and_close(self._deferred_answer)
            return
        try:
            super().on_response_complete()  # resumes reading, starts a pipelined request
        except _Refused as refused:  # that request's HTTP version is not served
            self._answer_and_close(refused.answer)
            return
        held = self._held
        if not held or self.transport.is_closing():
            return
        if len(self.pipeline) < PIPELINE_DEPTH:
            # room again: parse what was held, before anything read later (this runs
            # synchronously, so no data_received can come in between)
            at = self._held_at
            self._held, self._held_at = b"", 0
            self._feed_bounded(held, at)
        else:
            self.flow.pause_reading()  # still full: read nothing more yet

    def _feed_bounded(self, data: bytes, pos: int) -> None:
        """Feed ``data`` from ``pos`` on to the parser, a slice at a time when it is long,
        holding the rest (and pausing reads) once ``PIPELINE_DEPTH`` parsed requests wait."""
        size = len(data)
        if len(self.pipeline) < PIPELINE_DEPTH and (
            size - pos <= FEED_SLICE or data.count(b"\r\n\r\n", pos) <= 1
        ):
            # at most one head ends in it (a long head, a body): whole, as it came
            self._feed(data[pos:] if pos else data)
            return
        while pos < size:
            if self._closing or self.parser is None or self.transport.is_closing():
                return
            if len(self.pipeline) >= PIPELINE_DEPTH:
                self._held = data
                self._held_at = pos
                self.flow.pause_reading()
                return
            self._feed(data[pos : pos + FEED_SLICE])
            pos += FEED_SLICE

    def _feed(self, data: bytes) -> None:
        """The header-limit bookkeeping around uvicorn's ``data_received`` (see the
        module doc)."""
        if self._closing:
            return
        size = len(data)
        limit = self._head_limit
        if self._in_body or self._head_bytes + size < limit:
            # the usual case: the whole chunk cannot take the head over the limit
            counted = not self._in_body
            heads = self._heads_done
            if counted and not self._head_bytes and not data.isascii():
                # a head starts here: bytes of 0x80 and up in its target are read as Go reads them
                data = httpgo.escape_request_target(data)
                size = len(data)
            self._parse(data)
            if counted and heads == self._heads_done:
                self._head_bytes += size
        else:
            # feed the parser no further than the limit, so an oversized head is never buffered
            pos = 0
            while pos < size:
                room = limit - self._head_bytes
                if not self._in_body and room <= 0:
                    self._refuse_head()
                    return
                end = size if self._in_body else min(size, pos + room)
                counted = not self._in_body
                heads = self._heads_done
                self._parse(data[pos:end] if pos or end < size else data)
                if self._closing or self.parser is None or self.transport.is_closing():
                    return
                if counted and heads == self._heads_done:
                    # the headers did not end in this piece (bytes of a following request
                    # after a body that ended here go uncounted: at most one piece)
                    self._head_bytes += end - pos
                    if self._head_bytes >= limit:
                        self._refuse_head()
                        return
                pos = end
        if self._closing or self.parser is None or self.transport.is_closing():
            return
        # part of a head arrived (a following request's first bytes behind a body that ended in
        # the same chunk go uncounted; the idle timer bounds that connection instead)
        if self._head_bytes and self._head_timer is None and not self._responding():
            self._head_timer = self.loop.call_later(
                self.limits.read_header_timeout, self._head_timed_out
            )
        if self._in_body and self._body_timer is None:
            self._body_timer = self.loop.call_later(
                self.limits.request_body_timeout, self._body_timed_out
            )

    def _parse(self, data: bytes) -> None:
        """uvicorn's ``data_received`` step (feed the parser), with Go's answers to a
        request that cannot be read (``httpgo``) instead of uvicorn's 400 text."""
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():  # pragma: no cover - the server upgrades nothing
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError as exc:
            self._refuse_request(exc)

    def _refuse_request(self, exc: httptools.HttpParserError) -> None:
        refused = exc.__context__
        if isinstance(refused, _Refused):
            answer = refused.answer
        elif "Transfer-Encoding" in str(exc) and self._refuses_transfer_encoding(str(exc)):
            answer = httpgo.UNSUPPORTED_TRANSFER_ENCODING
        else:
            answer = httpgo.BAD_REQUEST
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            if not self._in_body:
                # a request pipelined behind one still being answered: the answer follows
                # that response (and any queued before it), as Go's does; nothing more is read
                self._closing = True
                self._deferred_answer = answer
                return
            if cycle.response_started:
                # the body broke off after the answer began: no room for another
                self._closing = True
                self.transport.close()
                return
            # the application waits for a body that cannot be read: it sees a disconnect
            cycle.disconnected = True
            cycle.message_event.set()
        self._answer_and_close(answer)

    def _refuses_transfer_encoding(self, message: str) -> bool:
        """Whether llhttp's complaint about ``Transfer-Encoding`` is one Go answers 501
        (a coding other than one ``chunked``) rather than 400 (``chunked`` beside a
        ``Content-Length``, refused here on purpose: see docs/apiserver.md)."""
        if message in _LLHTTP_UNSUPPORTED_TE:
            return True
        seen = self._transfer_encodings
        return bool(seen) and not httpgo.transfer_encoding_supported(seen)

    # -- parser callbacks ----------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        """uvicorn's ``on_header``, noting what ``on_headers_complete`` checks as Go does:
        the first ``Host`` (anything but one ``Host`` already seen valid, an ``Expect`` or
        a ``Transfer-Encoding`` sends the head down the slow path)."""
        name = name.lower()
        if name == b"host":
            if self._host is None:
                self._host = value
                if _VALID_HOSTS.get(value) is not True:
                    self._odd = True  # not seen yet (or malformed): checked then
            else:
                self._odd = self._hosts_repeated = True
        elif name == b"expect":
            self._odd = True
            if self._expect is None:
                self._expect = value
        elif name == b"transfer-encoding":
            self._odd = True
            self._transfer_encodings.append(value)
        self.headers.append((name, value))

    def _check_head(self, host: bytes | None) -> tuple[bytes | None, bool]:
        """Go's checks of a head that is not the plain case (see ``httpgo``): the answer
        that refuses it, or None; and whether to answer ``100 Continue`` when the body is
        read. Resets what ``on_header`` noted."""
        expect, encodings, repeated = self._expect, self._transfer_encodings, self._hosts_repeated
        self._odd = self._hosts_repeated = False
        self._expect = None
        if encodings:
            self._transfer_encodings = []
        if repeated:
            return httpgo.BAD_REQUEST, False  # request.go: "too many Host headers"
        version = self.parser.get_http_version()
        legacy = version == "1.0"
        if encodings and not legacy and not httpgo.transfer_encoding_supported(encodings):
            return httpgo.UNSUPPORTED_TRANSFER_ENCODING, False
        refusal = httpgo.version_refusal(version)
        if refusal is not None:
            return refusal, False
        if host is None:
            if not legacy and self.parser.get_method() != b"CONNECT":
                return httpgo.MISSING_HOST, False
        elif not httpgo.valid_host(host):
            return httpgo.MALFORMED_HOST, False
        if expect:
            if not httpgo.has_token(expect, b"100-continue"):
                return httpgo.expectation_failed(version), False
            return None, not legacy and self._announces_body()
        return None, False

    def _announces_body(self) -> bool:
        """Whether the head announces a body: chunked, or a Content-Length other than 0
        (Go sends ``100 Continue`` only then)."""
        for name, value in self.headers:
            if name == b"transfer-encoding" or (
                name == b"content-length" and value.strip(b" \t").lstrip(b"0")
            ):
                return True
        return False

    def on_headers_complete(self) -> None:
        url = self.url
        if 0x25 in url and httpgo.bad_path_escape(url):  # 0x25 is "%" (a byte: cheap test)
            raise _Refused(httpgo.BAD_REQUEST)  # url.ParseRequestURI: invalid URL escape
        host = self._host
        self._host = None
        if self._odd or host is None:
            refusal, self.expect_100_continue = self._check_head(host)
            if refusal is not None:
                raise _Refused(refusal)  # feed_data stops; _parse answers it
        # (the version of the plain case is checked in _start_asgi_task, once uvicorn has
        # read it into the scope)
        self._in_body = True
        self._heads_done += 1
        self._head_bytes = 0
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        if self._extensions is not None:
            self.scope["extensions"] = self._extensions
        previous = self.cycle
        if url == b"*" and self.parser.get_method() == b"OPTIONS":
            # Go's server answers "OPTIONS *" itself; the handler never sees it
            app = self.app
            self.app = _options_star
            try:
                super().on_headers_complete()
            finally:
                self.app = app
        else:
            super().on_headers_complete()
        cycle = self.cycle
        if cycle is not previous and cycle is not None:
            # the cycle's task has not run yet: its first write (the head) will be held
            cycle.transport = CoalescingWriter(self.transport, self.loop)  # type: ignore[assignment]
            version = cycle.scope["http_version"]
            if version != "1.1":
                self._other_version(cycle, version)

    def _other_version(self, cycle: RequestResponseCycle, version: str) -> None:
        """An HTTP/1.0 request that asked for keep-alive keeps the connection (uvicorn
        closes every HTTP/1.0 connection; Go keeps one that asked to)."""
        if version == "1.0" and self.parser.should_keep_alive():
            cycle.keep_alive = True
            cycle.send = _Http10KeepAlive(cycle)  # type: ignore[method-assign]

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        """uvicorn 0.54's ``_start_asgi_task`` (pyproject.toml pins 0.54; written out so
        that the plain request pays no second call), for a request whose HTTP version Go
        serves (1.x, read from the scope uvicorn filled: reading it from the parser costs
        about a microsecond). Any other raises ``_Refused`` before the application runs:
        ``_parse`` or ``on_response_complete`` (a pipelined request) answers it."""
        version = cycle.scope["http_version"]
        if version != "1.1" and version != "1.0":
            refusal = httpgo.version_refusal(version)
            if refusal is not None:
                raise _Refused(refusal)
        if self.config.reset_contextvars:
            task = self.loop.create_task(cycle.run_asgi(app), context=contextvars.Context())
        else:
            task = self.loop.create_task(cycle.run_asgi(app))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def on_message_complete(self) -> None:
        self._in_body = False
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        super().on_message_complete()

    def _unsupported_upgrade_warning(self) -> None:
        """Nothing to log: the server upgrades no connection on purpose (``ws="none"``), an
        upgrade request is answered as plain HTTP (uvicorn would warn of a missing
        WebSocket library on each)."""

    # -- limits --------------------------------------------------------------------------

    def _responding(self) -> bool:
        """Whether a response is being produced on this connection (a watch, say)."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._responding() or self._closing:
            return  # never cut a response; the idle timer takes over once it is complete
        self.transport.close()

    def _body_timed_out(self) -> None:
        self._body_timer = None
        if not self._in_body or self._closing:
            return
        cycle = self.cycle
        if cycle is None or cycle.response_started:
            self.transport.close()
            return
        # the application waits for the rest of the body: it now sees a disconnect, and
        # anything it still sends is dropped
        cycle.disconnected = True
        cycle.message_event.set()
        self._answer_and_close(_BODY_TIMED_OUT)

    def _refuse_head(self) -> None:
        if self._responding():
            # a pipelined request behind a response still in progress: no room for an answer
            self.transport.close()
            return
        self._answer_and_close(_HEADERS_TOO_LARGE)

    def _answer_and_close(self, answer: bytes) -> None:
        """Write ``answer``, end the write side, drop further input, close shortly after."""
        self._closing = True
        self._cancel_timers()
        self._unset_keepalive_if_required()
        transport = self.transport
        transport.write(answer)
        if self.flow is not None:
            self.flow.resume_reading()  # keep draining what the client still sends
        if transport.can_write_eof():
            transport.write_eof()
            self.loop.call_later(CLOSE_LINGER, transport.close)
        else:
            transport.close()

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None


class _Http10KeepAlive:
    """The ``send`` of an HTTP/1.0 request that asked for ``Connection: keep-alive``, as
    Go answers it: a response that states its length keeps the connection and says
    ``Connection: keep-alive``; one that does not (a stream) closes it after the body."""

    __slots__ = ("_cycle",)

    def __init__(self, cycle: RequestResponseCycle) -> None:
        self._cycle = cycle

    async def __call__(self, message: Any) -> None:
        cycle = self._cycle
        if message["type"] == "http.response.start" and not cycle.response_started:
            headers = list(message.get("headers", ()))
            names = {bytes(name).lower() for name, _ in headers}
            status = message["status"]
            if (
                b"content-length" in names
                or cycle.scope["method"] == "HEAD"
                or status in (204, 304)
            ):
                if b"connection" not in names:
                    headers.append((b"connection", b"keep-alive"))
                    message = {**message, "headers": headers}
            else:
                cycle.keep_alive = False
        await RequestResponseCycle.send(cycle, message)


class _Refused(Exception):
    """Raised by ``on_headers_complete`` to stop the parser: the head is answered with
    ``answer`` and the connection closed."""

    def __init__(self, answer: bytes) -> None:
        super().__init__("request refused")
        self.answer = answer


_VALID_HOSTS = httpgo.VALID_HOSTS  # Host values seen valid (bounded; see httpgo.valid_host)
# llhttp's words for a request whose Transfer-Encoding is not chunked, or two of them
_LLHTTP_UNSUPPORTED_TE = frozenset(
    ("Request has invalid `Transfer-Encoding`", "Invalid `Transfer-Encoding` header value")
)


async def _options_star(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    """Go's ``globalOptionsHandler``: ``OPTIONS *`` is 200 with an empty body."""
    await send(
        {"type": "http.response.start", "status": 200, "headers": httpgo.OPTIONS_STAR_HEADERS}
    )
    await send({"type": "http.response.body", "body": b""})


def protocol_class(limits: HttpLimits) -> type[LimitedHttpToolsProtocol]:
    """A ``LimitedHttpToolsProtocol`` subclass bound to ``limits``, for
    ``uvicorn.Config(http=...)``."""

    class BoundHttpToolsProtocol(LimitedHttpToolsProtocol):
        pass

    BoundHttpToolsProtocol.limits = limits
    return BoundHttpToolsProtocol


def chunk_frame(body: bytes) -> bytes:
    """``body`` framed as one HTTP/1.1 chunk, byte for byte as uvicorn's ``send`` frames a
    non-empty ``http.response.body`` with ``more_body`` (size in lower-case hex, CRLFs)."""
    return b"%x\r\n%b\r\n" % (len(body), body)


class DirectBody:
    """Writes framed chunks of one started, chunked response straight to its transport.

    ``write(framed)`` writes and answers True exactly when uvicorn's ``send`` of the same
    chunk would write at once, without waiting: the client is connected, the response is
    not complete, and the transport is not paused for writing (its buffer is under the
    high-water mark). Otherwise it writes nothing and answers False, and the caller sends
    through ``send`` (which waits for the client, or drops the chunk of a disconnected
    one) as before. ``framed`` must be ``chunk_frame`` of a non-empty body.
    """

    __slots__ = ("_cycle", "_flow", "_transport")

    def __init__(self, cycle: RequestResponseCycle) -> None:
        self._cycle = cycle
        self._flow = cycle.flow
        transport: Any = cycle.transport
        if isinstance(transport, CoalescingWriter):
            # the head goes out now; the chunks go straight to the connection after it
            transport = transport.release()
        self._transport = transport

    def writable(self) -> bool:
        """Whether ``write`` would write now (see the class doc)."""
        cycle = self._cycle
        return not (
            cycle.disconnected
            or cycle.response_complete
            or self._flow.write_paused
            or self._transport.is_closing()
        )

    def write(self, framed: bytes) -> bool:
        """Write ``framed`` now if ``writable()``; whether it was written."""
        cycle = self._cycle
        if (
            cycle.disconnected
            or cycle.response_complete
            or self._flow.write_paused
            or self._transport.is_closing()
        ):
            return False
        self._transport.write(framed)
        return True


def direct_body(send: Any) -> DirectBody | None:
    """A ``DirectBody`` for the response ``send`` belongs to, or None.

    Not None only when ``send`` is the ``send`` uvicorn's httptools protocol gave the
    application itself (not a wrapper), for a response whose status and headers went out
    with chunked framing (not a ``HEAD``). Call it after sending ``http.response.start``.
    """
    if getattr(send, "__func__", None) is not RequestResponseCycle.send:
        return None
    cycle = send.__self__
    if not isinstance(cycle, RequestResponseCycle):
        return None
    if (
        not cycle.response_started
        or cycle.chunked_encoding is not True
        or cycle.scope["method"] == "HEAD"
    ):
        return None
    return DirectBody(cycle)
