"""A no-op ASGI application: the baseline for the API server benchmark.

It does the least an HTTP API can: reads the whole request body, then answers 200 with
a small fixed JSON document (a ``Status`` of 68 bytes), sending the start and the body
as two ASGI messages exactly as the API server does. Served by the same uvicorn +
httptools + uvloop stack, its request rate is what the HTTP layer alone costs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

_BODY = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}'
_HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(_BODY)).encode())]


async def app(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    """Read the request, answer a fixed JSON body."""
    if scope["type"] != "http":
        return
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": _BODY})
