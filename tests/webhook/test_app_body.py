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


@pytest.mark.parametrize("length", [0, 7, 99, 100, 1317, 70000])
def test_answer_headers_name_the_length(length: int) -> None:
    from kubewerk.webhook import app as app_module

    first = app_module._answer_headers(length)
    assert list(first) == [
        (b"content-type", b"application/json"),
        (b"content-length", str(length).encode()),
    ]
    assert app_module._answer_headers(length) == first


def test_answer_headers_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubewerk.webhook import app as app_module

    monkeypatch.setattr(app_module, "_ANSWER_HEADERS", {})
    monkeypatch.setattr(app_module, "_ANSWER_HEADERS_KEPT", 3)
    for length in range(10):
        assert dict(app_module._answer_headers(length))[b"content-length"] == b"%d" % length
    assert sorted(app_module._ANSWER_HEADERS) == [0, 1, 2]


async def test_answers_of_different_lengths_carry_their_own_length() -> None:
    app = _app()
    for uid in ("u", "a-much-longer-uid-" * 3, "u"):
        review = kube_review(obj=database())
        review["request"]["uid"] = uid
        sent = await _call(app, [{"type": "http.request", "body": orjson.dumps(review)}])
        start, body = sent[0], sent[1]["body"]
        assert start["status"] == 200
        assert dict(start["headers"])[b"content-length"] == str(len(body)).encode()
        assert orjson.loads(body)["response"]["uid"] == uid


def test_metrics_record_counts_the_code_and_buckets_the_latency() -> None:
    from kubewerk.webhook.metrics import LATENCY_BUCKETS, PathMetrics

    m = PathMetrics("/p")
    for code, seconds in [(200, 0.0), (200, 2e-4), (404, 0.3), (500, 50.0), (200, 1e-9)]:
        m.record(code, seconds)
    assert m.codes == {200: 3.0, 404: 1.0, 500: 1.0}
    assert m.latency_sum == 0.0 + 2e-4 + 0.3 + 50.0 + 1e-9
    expected = [0.0] * (len(LATENCY_BUCKETS) + 1)
    expected[0] = 2.0  # 0 and 1 ns: le 10 ns
    expected[5] = 1.0  # 200 us: le 1 ms
    expected[8] = 1.0  # 300 ms: le 1 s
    expected[10] = 1.0  # 50 s: le 100 s
    assert m.buckets == expected
