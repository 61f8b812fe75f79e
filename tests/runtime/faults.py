"""A fault-injecting TCP proxy for tests: it sits between a client and an API server.

:class:`FaultProxy` listens on loopback and forwards every connection to the upstream
server. It reads the client's HTTP/1.1 requests (head plus ``Content-Length`` body, as
kubewerk's client and client-go send them) one at a time, so it can answer chosen ones
itself; everything the server sends back is copied byte for byte. What it can do to the
traffic, each switchable at any time:

- ``answer(Fault(...))``: answer matching requests itself with a ``Status`` error (429
  with ``Retry-After``, 500, 503, 504, ...) instead of forwarding them, ``times`` times;
  or (``cut=True``) forward them and reset the connection as the answer starts;
- ``mode = "refuse"``: accept new connections and reset them at once (the server is down);
- ``mode = "blackhole"``: accept new connections and never answer (nothing is forwarded);
- ``stall()`` / ``resume()``: stop forwarding in both directions on every connection,
  open or new, without closing anything (a partition); ``stall(new=False)`` stalls only
  the connections open now (a half-open TCP path: new connections work); bytes held
  meanwhile flow again on :meth:`resume`, as TCP retransmits after a partition heals;
- ``reset_all()``: reset (RST) every open connection;
- ``delay``: seconds to wait before forwarding each chunk from the server.

``requests`` records every request seen (method, target, and the status the proxy
answered itself, or None when it was forwarded).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from dataclasses import dataclass, field
from typing import Literal

import orjson

Mode = Literal["forward", "refuse", "blackhole"]

_REASONS = {
    410: ("Gone", "Expired"),
    429: ("Too Many Requests", "TooManyRequests"),
    500: ("Internal Server Error", "InternalError"),
    502: ("Bad Gateway", ""),
    503: ("Service Unavailable", "ServiceUnavailable"),
    504: ("Gateway Timeout", "Timeout"),
}


@dataclass
class Fault:
    """Answer requests whose method is ``method`` (any when None) and whose target
    contains ``path`` (and ``query`` when given) with ``status``, ``times`` times (None:
    until removed). ``retry_after`` is sent as the ``Retry-After`` header when set."""

    status: int
    method: str | None = None
    path: str = ""
    query: str = ""
    retry_after: str | None = None
    times: int | None = 1
    hits: int = 0
    cut: bool = False
    """Instead of answering: forward the request, and reset the client's connection as
    soon as the server's answer starts (the server processed it; the client never
    learns)."""

    def matches(self, method: str, target: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method is not None and method != self.method:
            return False
        path, _, query = target.partition("?")
        return self.path in path and self.query in query

    def response(self) -> bytes:
        text, reason = _REASONS.get(self.status, ("Error", ""))
        body = orjson.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"injected {self.status}",
                "reason": reason,
                "code": self.status,
            }
        )
        head = [
            f"HTTP/1.1 {self.status} {text}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
        ]
        if self.retry_after is not None:
            head.append(f"Retry-After: {self.retry_after}")
        return ("\r\n".join(head) + "\r\n\r\n").encode() + body


@dataclass
class Seen:
    """One request the proxy read: what, and how it was answered."""

    method: str
    target: str
    injected: int | None


@dataclass(eq=False)
class _Pair:
    client: asyncio.StreamWriter
    flowing: asyncio.Event
    upstream: asyncio.StreamWriter | None = None
    cut: bool = False  # reset the client when the answer to the forwarded request starts
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST (SO_LINGER 0), not FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class FaultProxy:
    """See the module docstring. ``async with FaultProxy(host, port) as proxy:``."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.mode: Mode = "forward"
        self.delay = 0.0
        self.faults: list[Fault] = []
        self.requests: list[Seen] = []
        self._stalled = False  # new connections start stalled
        self._pairs: set[_Pair] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` of the proxy."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self.reset_all()
        handlers = list(self._handlers)
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def __aenter__(self) -> FaultProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- controls ---------------------------------------------------------------------------

    def answer(self, fault: Fault) -> Fault:
        """Add a fault rule (checked in order, before forwarding); returns it."""
        self.faults.append(fault)
        return fault

    def stall(self, *, new: bool = True) -> None:
        """Stop forwarding on every open connection, keeping them open; with ``new``
        also on connections opened from now on."""
        self._stalled = new
        for pair in self._pairs:
            pair.flowing.clear()

    def resume(self) -> None:
        """Forward again on every connection (held bytes first)."""
        self._stalled = False
        for pair in self._pairs:
            pair.flowing.set()

    def reset_all(self) -> None:
        """RST every open connection (both sides)."""
        for pair in list(self._pairs):
            self._close_pair(pair, rst=True)

    def heal(self) -> None:
        """Back to plain forwarding: no faults, no stall, no delay, new connections served."""
        self.faults.clear()
        self.mode = "forward"
        self.delay = 0.0
        self.resume()

    def open_connections(self) -> int:
        """Client connections currently open through the proxy."""
        return len(self._pairs)

    def seen(self, method: str | None = None, path: str = "") -> list[Seen]:
        """Requests recorded so far, filtered by method and a path fragment."""
        return [
            s
            for s in self.requests
            if (method is None or s.method == method) and path in s.target.partition("?")[0]
        ]

    # -- plumbing ---------------------------------------------------------------------------

    def _close_pair(self, pair: _Pair, *, rst: bool) -> None:
        self._pairs.discard(pair)
        for writer in (pair.client, pair.upstream):
            if writer is None:
                continue
            if rst:
                _reset(writer)
            else:
                writer.close()
        for task in pair.tasks:
            if task is not asyncio.current_task():
                task.cancel()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            pass  # stop() ends every connection's handler; nothing is left to do
        finally:
            self._handlers.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "refuse":
            _reset(writer)
            return
        pair = _Pair(writer, asyncio.Event())
        if not self._stalled:
            pair.flowing.set()
        self._pairs.add(pair)
        if self.mode == "blackhole":
            # read and drop whatever comes, never answer, until the client gives up
            with contextlib.suppress(Exception):
                while await reader.read(65536):
                    pass
            self._close_pair(pair, rst=False)
            return
        try:
            await self._requests(reader, pair)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            self._close_pair(pair, rst=False)

    async def _requests(self, reader: asyncio.StreamReader, pair: _Pair) -> None:
        """Read requests one by one; answer or forward each."""
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b""
            method, target = head.split(b" ", 2)[:2]
            m, t = method.decode(), target.decode()
            await pair.flowing.wait()
            fault = next((f for f in self.faults if f.matches(m, t)), None)
            if fault is not None and fault.cut:
                fault.hits += 1
                pair.cut = True
            elif fault is not None:
                fault.hits += 1
                self.requests.append(Seen(m, t, fault.status))
                pair.client.write(fault.response())
                await pair.client.drain()
                continue
            self.requests.append(Seen(m, t, 0 if pair.cut else None))
            if pair.upstream is None:
                up_reader, up_writer = await asyncio.open_connection(*self.upstream)
                pair.upstream = up_writer
                pair.tasks.append(asyncio.create_task(self._copy_back(up_reader, pair)))
            pair.upstream.write(head + body)
            await pair.upstream.drain()

    async def _copy_back(self, reader: asyncio.StreamReader, pair: _Pair) -> None:
        """Server to client, byte for byte (held while stalled, delayed when asked)."""
        try:
            while data := await reader.read(65536):
                if self.delay:
                    await asyncio.sleep(self.delay)
                await pair.flowing.wait()
                if pair.cut:
                    self._close_pair(pair, rst=True)
                    return
                pair.client.write(data)
                await pair.client.drain()
        except (ConnectionError, OSError):
            pass
        # the server closed its side: close the client's (the connection is over)
        self._close_pair(pair, rst=False)
