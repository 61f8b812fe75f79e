"""HTTP pieces shared by the router and the watch stream: ASGI callables, response headers,
content negotiation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

AsgiScope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_TABLE_MARK = "as=table"


def warning_header(text: str) -> bytes:
    """A ``Warning`` header value as kube-apiserver writes it (code 299, agent ``-``)."""
    return ('299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"').encode(
        "utf-8", "replace"
    )


def json_headers(
    payload: bytes, warnings: list[str] | None = None, content_type: bytes = b"application/json"
) -> list[tuple[bytes, bytes]]:
    """Content type, length and one ``Warning`` header per warning for a complete body."""
    headers = [(b"content-type", content_type), (b"content-length", str(len(payload)).encode())]
    headers.extend((b"warning", warning_header(w)) for w in warnings or [])
    return headers


def wants_table(accept: str) -> bool:
    """Whether the first media type of ``Accept`` asks for a ``meta.k8s.io`` Table."""
    first = accept.split(",")[0].replace(" ", "").lower()
    return _TABLE_MARK in first and "g=meta.k8s.io" in first
