"""The dashboard as a raw ASGI application (served by uvicorn like kubewerk's other
servers, or mounted under a prefix in another ASGI app).

Routes, below ``prefix`` (``""`` or e.g. ``/dashboard``):

- ``/`` the page (``/dashboard`` redirects to ``/dashboard/`` so relative URLs hold),
  ``/static/dashboard.js`` and ``/static/dashboard.css`` — files shipped in the package,
  no build step, no third-party origin;
- ``/api/summary``, ``/api/object?id=Kind.group/namespace/name``,
  ``/api/graph?namespace=NS`` or ``?root=ID``, ``/api/metrics`` — JSON from
  :mod:`kubewerk.observe.views` and :mod:`kubewerk.observe.metrics`;
- ``/api/stream`` — server-sent events: a ``change`` event carrying the state's new
  version as soon as the watched state changes (at most one per ``coalesce`` seconds),
  a comment line every 15 s to keep proxies from closing the stream.

Guarantees: read-only (only GET and HEAD are answered, 405 otherwise); every response
carries a Content-Security-Policy that allows scripts, styles and connections from the
page's own origin only (no inline script, no ``eval``), ``X-Content-Type-Options:
nosniff``, ``Referrer-Policy: no-referrer`` and ``X-Frame-Options: DENY``; data is sent
as JSON only (the page inserts it as text, never as markup). With ``allowed_hosts``
set (the default: loopback names), a request whose ``Host`` is another name is refused
with 421, so a web page elsewhere cannot reach the dashboard through DNS rebinding.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from importlib import resources
from typing import Any, Final
from urllib.parse import parse_qs

import orjson

from kubewerk.lifecycle.depgraph import NodeId
from kubewerk.observe.metrics import MetricsSampler
from kubewerk.observe.state import ClusterState
from kubewerk.observe.views import graph_view, object_view, summary

__all__ = ["LOOPBACK_HOSTS", "DashboardApp", "parse_id"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})

CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_SAFE_HEADERS: Final = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_STATIC: Final = {
    "index.html": b"text/html; charset=utf-8",
    "dashboard.js": b"text/javascript; charset=utf-8",
    "dashboard.css": b"text/css; charset=utf-8",
}


def _asset(name: str) -> bytes:
    return resources.files("kubewerk.observe").joinpath("static", name).read_bytes()


def parse_id(text: str) -> NodeId | None:
    """``Kind.group/namespace/name`` (namespace empty when cluster-scoped) as a node;
    None when it is not of that shape."""
    parts = text.split("/")
    if len(parts) != 3 or not parts[0] or not parts[2]:
        return None
    kind, _, group = parts[0].partition(".")
    return NodeId(group, kind, parts[1] or None, parts[2])


def _host_name(value: str) -> str:
    """The host of a Host header, without port or IPv6 brackets, lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


class DashboardApp:
    """The dashboard over ``state`` (kept current by someone else, e.g. a
    :class:`~kubewerk.observe.watcher.ClusterWatcher`); see the module doc.

    ``allowed_hosts`` None answers any Host (for a dashboard behind a Service, mounted
    in a Manager); ``coalesce`` is the shortest gap between two ``change`` events.
    """

    def __init__(
        self,
        state: ClusterState,
        *,
        metrics: MetricsSampler | None = None,
        prefix: str = "",
        allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS,
        coalesce: float = 0.1,
        keepalive: float = 15.0,
    ) -> None:
        if prefix and (not prefix.startswith("/") or prefix.endswith("/")):
            raise ValueError(f"prefix {prefix!r} must start with / and not end with one")
        self.state = state
        self.metrics = metrics
        self.prefix = prefix
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.coalesce = coalesce
        self.keepalive = keepalive
        self._assets = {name: _asset(name) for name in _STATIC}
        self._closing = asyncio.Event()

    def close(self) -> None:
        """End every open event stream (before the server stops: streams never end on
        their own, and a graceful shutdown waits for them)."""
        self._closing.set()

    def handles(self, path: str) -> bool:
        """Whether ``path`` is at or below this app's prefix."""
        return not self.prefix or path == self.prefix or path.startswith(self.prefix + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        if self.allowed_hosts is not None:
            host = ""
            for name, value in scope.get("headers") or []:
                if name == b"host":
                    host = value.decode("latin-1")
            if _host_name(host) not in self.allowed_hosts:
                await self._send(send, 421, b"text/plain; charset=utf-8", b"unknown host\n")
                return
        method = scope.get("method", "GET")
        if method not in ("GET", "HEAD"):
            await self._send(
                send, 405, b"text/plain; charset=utf-8", b"read-only\n", [(b"allow", b"GET, HEAD")]
            )
            return
        path: str = scope.get("path", "/")
        if not self.handles(path):
            await self._send(send, 404, b"text/plain; charset=utf-8", b"not found\n")
            return
        rel = path[len(self.prefix) :]
        if rel == "" and self.prefix:
            await self._send(
                send,
                308,
                b"text/plain; charset=utf-8",
                b"",
                [(b"location", f"{self.prefix}/".encode())],
            )
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        head = method == "HEAD"
        if rel == "/":
            await self._send(
                send, 200, _STATIC["index.html"], self._assets["index.html"], head=head
            )
        elif rel.startswith("/static/") and rel[8:] in _STATIC and rel[8:] != "index.html":
            name = rel[8:]
            await self._send(send, 200, _STATIC[name], self._assets[name], head=head)
        elif rel == "/api/summary":
            await self._json(send, summary(self.state), head=head)
        elif rel == "/api/object":
            node = parse_id(query.get("id", [""])[0])
            if node is None:
                await self._json(send, {"error": "id must be Kind.group/namespace/name"}, 400)
                return
            await self._json(send, object_view(self.state, node), head=head)
        elif rel == "/api/graph":
            root_text = query.get("root", [""])[0]
            root = parse_id(root_text) if root_text else None
            if root_text and root is None:
                await self._json(send, {"error": "root must be Kind.group/namespace/name"}, 400)
                return
            namespace = query.get("namespace", [""])[0] or None
            await self._json(
                send, graph_view(self.state, namespace=namespace, root=root), head=head
            )
        elif rel == "/api/metrics":
            doc = (
                self.metrics.to_json()
                if self.metrics is not None
                else {"error": None, "controllers": {}, "sources": 0}
            )
            await self._json(send, doc, head=head)
        elif rel == "/api/stream" and not head:
            await self._stream(receive, send)
        else:
            await self._send(send, 404, b"text/plain; charset=utf-8", b"not found\n")

    async def _send(
        self,
        send: Send,
        status: int,
        content_type: bytes,
        body: bytes,
        extra: list[tuple[bytes, bytes]] | None = None,
        *,
        head: bool = False,
    ) -> None:
        headers = [
            (b"content-type", content_type),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            *_SAFE_HEADERS,
            *(extra or []),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else body})

    async def _json(self, send: Send, doc: Any, status: int = 200, *, head: bool = False) -> None:
        await self._send(send, status, b"application/json", orjson.dumps(doc), head=head)

    async def _stream(self, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-store"),
                    (b"x-accel-buffering", b"no"),
                    *_SAFE_HEADERS,
                ],
            }
        )
        gone = asyncio.Event()

        async def watch_disconnect() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    return

        watcher = asyncio.create_task(watch_disconnect())
        seen = self.state.version
        try:
            await send({"type": "http.response.body", "body": _sse(seen), "more_body": True})
            while not gone.is_set():
                waiting = asyncio.create_task(self.state.wait_change(seen, self.keepalive))
                stopped = asyncio.create_task(gone.wait())
                closing = asyncio.create_task(self._closing.wait())
                done, _ = await asyncio.wait(
                    {waiting, stopped, closing}, return_when=asyncio.FIRST_COMPLETED
                )
                for task in (waiting, stopped, closing):
                    if task not in done:
                        task.cancel()
                if gone.is_set() or self._closing.is_set():
                    break
                version = self.state.version
                if version == seen:
                    body = b": keepalive\n\n"
                else:
                    seen = version
                    body = _sse(version)
                await send({"type": "http.response.body", "body": body, "more_body": True})
                if body != b": keepalive\n\n":
                    await asyncio.sleep(self.coalesce)
        except OSError:
            pass
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def _sse(version: int) -> bytes:
    return b"event: change\ndata: " + orjson.dumps({"version": version}) + b"\n\n"
