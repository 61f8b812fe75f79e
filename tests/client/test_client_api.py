"""The client against the embedded API server over HTTP."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import (
    CONFIGMAP,
    SECRET,
    AlreadyExists,
    ApiError,
    Client,
    Conflict,
    Gone,
    Listed,
    NotFound,
    ResourceType,
    RetryPolicy,
    ServerUnreachable,
    TooManyRequests,
    list_watch,
    resource_type_of,
)
from tests.client.models import Widget, WidgetSpec, WidgetStatus

WIDGETS = ResourceType("test.kubewerk.dev", "v1", "Widget", "widgets")


def widget(name: str, size: int = 1) -> Widget:
    return Widget.model_validate(
        {"metadata": {"name": name, "namespace": "default"}, "spec": {"size": size}}
    )


def test_resource_type_of_model() -> None:
    assert resource_type_of(Widget) == WIDGETS
    assert (
        WIDGETS.path("ns", "a", "status")
        == "/apis/test.kubewerk.dev/v1/namespaces/ns/widgets/a/status"
    )
    assert SECRET.path(None) == "/api/v1/secrets"


async def test_typed_and_dynamic_crud(client: Client) -> None:
    created = await client.create(widget("a", 3))
    assert isinstance(created, Widget) and created.spec.size == 3 and created.metadata.uid
    got = await client.get(Widget, "a", "default")
    assert got.metadata.resource_version == created.metadata.resource_version
    raw = await client.get(WIDGETS, "a", "default")
    assert raw["spec"]["size"] == 3
    got.spec = WidgetSpec(size=4)
    replaced = await client.replace(got)
    assert replaced.spec.size == 4 and replaced.metadata.generation == 2
    with pytest.raises(Conflict) as info:
        await client.replace(got)  # stale resourceVersion
    assert "the object has been modified" in info.value.message
    with pytest.raises(AlreadyExists):
        await client.create(widget("a"))
    replaced.status = WidgetStatus(phase="Ready")
    st = await client.replace_status(replaced)
    assert st.status is not None and st.status.phase == "Ready"
    assert st.metadata.generation == 2  # status writes never bump generation
    d = await client.create(
        {
            "apiVersion": "test.kubewerk.dev/v1",
            "kind": "Widget",
            "metadata": {"name": "b"},
            "spec": {"size": 1},
        }
    )
    assert d["metadata"]["namespace"] == "default"  # the config's namespace
    await client.delete(Widget, "b", "default")
    with pytest.raises(NotFound) as nf:
        await client.get(Widget, "b", "default")
    assert nf.value.code == 404 and nf.value.name == "b"


async def test_patches_merge_json_and_guarded_status(client: Client) -> None:
    w = await client.create(widget("p"))
    rv = w.metadata.resource_version
    merged = await client.patch(Widget, "p", {"spec": {"color": "red"}}, "default")
    assert merged.spec.color == "red"
    jp = await client.patch(
        Widget, "p", [{"op": "replace", "path": "/spec/size", "value": 9}], "default", type="json"
    )
    assert jp.spec.size == 9
    ok = await client.patch_status(
        Widget,
        "p",
        {"metadata": {"resourceVersion": jp.metadata.resource_version}, "status": {"phase": "A"}},
        "default",
    )
    assert ok.status.phase == "A"
    with pytest.raises(Conflict):
        await client.patch_status(
            Widget, "p", {"metadata": {"resourceVersion": rv}, "status": {"phase": "B"}}, "default"
        )
    assert (await client.get(Widget, "p", "default")).status.phase == "A"


async def test_pagination_and_iter(client: Client) -> None:
    for i in range(23):
        await client.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i:02d}", "labels": {"even": str(i % 2 == 0).lower()}},
            }
        )
    page = await client.list(CONFIGMAP, "default", limit=10)
    assert len(page.items) == 10 and page.continue_token
    everything = await client.list_all(CONFIGMAP, "default", page_size=7)
    names = [o["metadata"]["name"] for o in everything.items]
    assert names == sorted(names) and len([n for n in names if n.startswith("cm-")]) == 23
    assert all(o["kind"] == "ConfigMap" for o in everything.items)
    evens = [
        o async for o in client.iter(CONFIGMAP, "default", label_selector="even=true", page_size=4)
    ]
    assert len(evens) == 12


async def test_watch_stream_and_bookmarks(client: Client) -> None:
    start = await client.list(Widget, "default")
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async for ev in client.watch(
            Widget, "default", resource_version=start.resource_version, timeout_seconds=5
        ):
            seen.append((ev.type, ev.raw.get("metadata", {}).get("name", "")))
            if ev.type == "DELETED":
                return

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.1)
    await client.create(widget("w"))
    await client.patch(Widget, "w", {"spec": {"size": 2}}, "default")
    await asyncio.sleep(0.7)  # the fixture server sends bookmarks every 0.5 s
    await client.delete(Widget, "w", "default")
    await asyncio.wait_for(task, 5)
    kinds = [t for t, _ in seen]
    assert kinds[:2] == ["ADDED", "MODIFIED"] and kinds[-1] == "DELETED"
    assert "BOOKMARK" in kinds


async def test_watch_from_compacted_revision_raises_gone(
    aserver: EmbeddedServer, client: Client
) -> None:
    await client.create(widget("g1"))
    old = (await client.list(Widget, "default")).resource_version
    for i in range(3):
        await client.patch(Widget, "g1", {"spec": {"size": i + 2}}, "default")
    aserver.store.compact(int((await client.list(Widget)).resource_version))
    with pytest.raises(Gone):
        async for _ in client.watch(Widget, "default", resource_version=old, timeout_seconds=2):
            pass


async def test_list_watch_relists_after_410_and_resumes_otherwise(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_watch = client.watch
    calls: list[str | None] = []

    def flaky_watch(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        calls.append(kwargs.get("resource_version"))  # type: ignore[arg-type]
        if len(calls) == 1:
            raise Gone(410, "Expired", "too old resource version")
        if len(calls) == 2:
            raise ServerUnreachable(client.server, "connection reset")
        return real_watch(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(client, "watch", flaky_watch)
    await client.create(widget("r1"))
    seen: list[object] = []

    async def run() -> None:
        async for item in list_watch(client, WIDGETS, "default", watch_timeout=2):
            seen.append(item)
            if getattr(item, "type", "") == "ADDED":
                return

    task = asyncio.create_task(run())
    while len([i for i in seen if isinstance(i, Listed)]) < 2:
        await asyncio.sleep(0.02)
    await client.create(widget("r2"))
    await asyncio.wait_for(task, 10)
    listed = [i for i in seen if isinstance(i, Listed)]
    assert len(listed) == 2  # 410 -> relist; connection loss -> resume, no relist
    assert [o["metadata"]["name"] for o in listed[1].items] == ["r1"]
    assert calls[1] == calls[2] == listed[1].resource_version  # resumed from the same revision
    assert seen[-1].raw["metadata"]["name"] == "r2"  # type: ignore[attr-defined]


async def test_unreachable_server_is_one_clear_error() -> None:
    async with Client.from_url(
        "http://127.0.0.1:9", retry=RetryPolicy(max_retries=2, base=0.01)
    ) as c:
        started = time.monotonic()
        with pytest.raises(ServerUnreachable) as info:
            await c.get(SECRET, "x", "default")
        assert time.monotonic() - started < 5
        assert str(info.value).startswith("cannot reach the API server at http://127.0.0.1:9: ")
        assert "connect" in str(info.value).lower() or "refused" in str(info.value).lower()


async def _fake_server(handler: web.Handler) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def test_retries_429_and_5xx_honouring_retry_after() -> None:
    calls: list[float] = []

    async def handler(request: web.Request) -> web.Response:
        calls.append(time.monotonic())
        if len(calls) == 1:
            return web.json_response(
                {
                    "kind": "Status",
                    "status": "Failure",
                    "reason": "TooManyRequests",
                    "code": 429,
                    "message": "slow down",
                },
                status=429,
                headers={"Retry-After": "1"},
            )
        if len(calls) == 2:
            return web.json_response(
                {"kind": "Status", "reason": "ServiceUnavailable", "code": 503, "message": "busy"},
                status=503,
            )
        return web.json_response({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})

    runner, url = await _fake_server(handler)
    try:
        async with Client.from_url(url, retry=RetryPolicy(max_retries=3, base=0.05)) as c:
            got = await c.get(SECRET, "s", "default")
            assert got["metadata"]["name"] == "s"
            assert len(calls) == 3
            assert calls[1] - calls[0] >= 0.95  # Retry-After honoured
        calls.clear()
        calls.extend([0.0])  # next answer is the 503
        async with Client.from_url(url, retry=RetryPolicy(max_retries=0)) as c:
            with pytest.raises(ApiError) as info:
                await c.get(SECRET, "s", "default")
            assert info.value.code == 503 and info.value.reason == "ServiceUnavailable"
    finally:
        await runner.cleanup()


async def test_write_not_retried_on_500_without_retry_after() -> None:
    calls = 0

    async def handler(request: web.Request) -> web.Response:
        nonlocal calls
        calls += 1
        return web.json_response(
            {
                "kind": "Status",
                "reason": "InternalError",
                "code": 500,
                "message": "Internal error occurred: boom",
            },
            status=500,
        )

    runner, url = await _fake_server(handler)
    try:
        async with Client.from_url(url, retry=RetryPolicy(max_retries=3, base=0.01)) as c:
            with pytest.raises(ApiError, match="boom"):
                await c.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
            assert calls == 1
            with pytest.raises(ApiError):
                await c.get(SECRET, "s", "default")
            assert calls == 5  # reads are retried
    finally:
        await runner.cleanup()


async def test_429_error_is_typed_with_retry_after() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "kind": "Status",
                "reason": "TooManyRequests",
                "code": 429,
                "message": "no",
                "details": {"retryAfterSeconds": 7},
            },
            status=429,
        )

    runner, url = await _fake_server(handler)
    try:
        async with Client.from_url(url, retry=RetryPolicy(max_retries=0)) as c:
            with pytest.raises(TooManyRequests) as info:
                await c.get(SECRET, "s", "default")
            assert info.value.retry_after == 7
    finally:
        await runner.cleanup()


async def test_non_status_error_body() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=502, text="Bad gateway from proxy")

    runner, url = await _fake_server(handler)
    try:
        async with Client.from_url(url, retry=RetryPolicy(max_retries=0)) as c:
            with pytest.raises(ApiError) as info:
                await c.get(SECRET, "s", "default")
            assert info.value.code == 502 and "Bad gateway" in info.value.message
    finally:
        await runner.cleanup()
