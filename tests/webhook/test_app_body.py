"""How the app reads a request body: in one message or in pieces, the size bound with or
without a Content-Length, and a client that goes away before its body arrives."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubewerk.webhook import AdmissionRequest, Allowed, WebhookApp

from .conftest import database, kube_review
from .models import Database


def _app() -> WebhookApp:
    app = WebhookApp()

    @app.validating(Database, "/small", max_body_bytes=2048)
    async def small(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed:
        return Allowed()

    return app


async def _call(app: WebhookApp, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Call without a Content-Length header: only the bytes received count."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/small",
        "headers": [(b"content-type", b"application/json")],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def _pieces(data: bytes, count: int) -> list[dict[str, Any]]:
    size = -(-len(data) // count)
    parts = [data[i : i + size] for i in range(0, len(data), size)]
    return [
        {"type": "http.request", "body": p, "more_body": i < len(parts) - 1}
        for i, p in enumerate(parts)
    ]


@pytest.mark.parametrize("count", [1, 3])
async def test_too_large_without_content_length(count: int) -> None:
    data = orjson.dumps(kube_review("CREATE", database(options={"k": "x" * 4096})))
    sent = await _call(_app(), _pieces(data, count))
    assert sent[0]["status"] == 413
    assert orjson.loads(sent[1]["body"])["message"] == (
        "the request body is larger than this webhook's limit of 2048 bytes"
    )


@pytest.mark.parametrize("count", [1, 3])
async def test_within_the_bound_without_content_length(count: int) -> None:
    data = orjson.dumps(kube_review("CREATE", database()))
    assert len(data) <= 2048
    sent = await _call(_app(), _pieces(data, count))
    assert sent[0]["status"] == 200
    assert orjson.loads(sent[1]["body"])["response"]["allowed"] is True


async def test_exactly_the_bound_is_read() -> None:
    data = orjson.dumps(kube_review("CREATE", database()))
    app = _app()
    route = app._routes["/small"]
    route.max_body = len(data)
    assert (await _call(app, _pieces(data, 1)))[0]["status"] == 200
    route.max_body = len(data) - 1
    assert (await _call(app, _pieces(data, 1)))[0]["status"] == 413


@pytest.mark.parametrize("first", [[], [{"type": "http.request", "body": b"{", "more_body": True}]])
async def test_a_client_gone_before_its_body_gets_no_answer(first: list[dict[str, Any]]) -> None:
    app = _app()
    assert await _call(app, list(first)) == []
    assert app.metrics.path("/small").codes.get(499) == 1.0
