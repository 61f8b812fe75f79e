"""kubewerk.observe.tracing: a span per reconcile with its client requests as children,
traceparent on the wire and in the embedded server's audit log, a no-op without the
OpenTelemetry packages."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import client as client_module
from kubewerk.client.client import Client
from kubewerk.observe import tracing
from kubewerk.runtime import Context, Manager, Result
from kubewerk.runtime import controller as controller_module
from kubewerk.testing import install_crds, wait_for
from tests.client.models import Widget
from tests.runtime.widget_operator import build

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    assert tracing.instrument(provider)
    try:
        yield spans
    finally:
        tracing.uninstrument()
        provider.shutdown()


def widget(name: str, size: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "test.kubewerk.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    }


def reconciles(spans: InMemorySpanExporter, key: str) -> list[ReadableSpan]:
    return [
        s
        for s in spans.get_finished_spans()
        if s.name.startswith("reconcile ") and (s.attributes or {}).get("kubewerk.key") == key
    ]


def children(spans: InMemorySpanExporter, parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [
        s
        for s in spans.get_finished_spans()
        if s.parent is not None and s.parent.span_id == parent.context.span_id
    ]


async def test_a_reconcile_span_parents_its_client_requests(
    exporter: InMemorySpanExporter, kube_client: Client, run_manager: Any
) -> None:
    await install_crds(kube_client, Widget)
    await run_manager(build())
    await kube_client.create(widget("w1"))

    async def ready() -> bool:
        w = await kube_client.get(Widget, "w1", "default")
        return bool(w.status and w.status.phase == "Ready")

    await wait_for(ready, timeout=15)
    await wait_for(lambda: len(reconciles(exporter, "default/w1")) >= 2, timeout=5)
    spans = reconciles(exporter, "default/w1")
    writer = next(
        s for s in spans if any(c.name.endswith("/status") for c in children(exporter, s))
    )
    attrs = dict(writer.attributes or {})
    assert writer.name == "reconcile widget" and writer.kind is SpanKind.INTERNAL
    assert attrs["kubewerk.controller"] == "widget"
    assert attrs["kubewerk.kind"] == "Widget.test.kubewerk.dev"
    assert attrs["k8s.namespace.name"] == "default"
    assert attrs["kubewerk.generation"] == 1
    assert attrs["kubewerk.result"] == "success"
    kids = sorted(children(exporter, writer), key=lambda k: k.start_time or 0)
    assert attrs["kubewerk.requests"] == len(kids)
    assert writer.context is not None
    for kid in kids:
        assert kid.kind is SpanKind.CLIENT
        assert kid.context is not None and kid.context.trace_id == writer.context.trace_id
    # the finalizer, then create_or_update reads the ConfigMap (404: an error span) and
    # creates it, then the status write
    assert [(k.name, (k.attributes or {})["http.response.status_code"]) for k in kids] == [
        ("PATCH /apis/test.kubewerk.dev/v1/namespaces/{namespace}/widgets/{name}", 200),
        ("GET /api/v1/namespaces/{namespace}/configmaps/{name}", 404),
        ("POST /api/v1/namespaces/{namespace}/configmaps", 201),
        ("PATCH /apis/test.kubewerk.dev/v1/namespaces/{namespace}/widgets/{name}/status", 200),
    ]
    assert kids[1].status.status_code is StatusCode.ERROR
    # every reconcile is a trace of its own
    assert len({s.context.trace_id for s in spans if s.context is not None}) == len(spans)
    # informers' lists and watches ran outside any span: no root client spans
    assert all(
        s.parent is not None for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT
    )


async def test_a_failing_reconcile_is_an_error_span(
    exporter: InMemorySpanExporter, kube_client: Client, run_manager: Any
) -> None:
    await install_crds(kube_client, Widget)
    mgr = Manager(probe_port=None)

    @mgr.reconciler(Widget)
    async def reconcile(w: Widget, ctx: Context) -> Result:
        await ctx.client.get(Widget, "missing", "default")  # 404: an error child span
        return Result()

    await run_manager(mgr)
    await kube_client.create(widget("bad"))
    await wait_for(lambda: bool(reconciles(exporter, "default/bad")), timeout=10)
    span = reconciles(exporter, "default/bad")[0]
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["kubewerk.result"] == "error"
    assert [e.name for e in span.events] == ["exception"]
    (child,) = children(exporter, span)
    assert child.status.status_code is StatusCode.ERROR
    assert (child.attributes or {})["http.response.status_code"] == 404
    assert (child.attributes or {})["error.type"] == "404"


async def test_traceparent_reaches_the_servers_audit_log(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    log = tmp_path / "audit.log"
    async with (
        EmbeddedServer("memory", audit_policy_file=policy, audit_log_path=log) as server,
        Client.from_url(server.url) as admin,
    ):
        await install_crds(admin, Widget)
        mgr = build()
        mgr.use_client(Client.from_url(server.url))
        await mgr.start()
        try:
            await admin.create(widget("w2"))

            async def ready() -> bool:
                w = await admin.get(Widget, "w2", "default")
                return bool(w.status and w.status.phase == "Ready")

            await wait_for(ready, timeout=15)
        finally:
            await mgr.stop()
            await mgr.client.close()
    # the committed status writes (a write that lost a race with 409 commits nothing)
    status_writes = [
        e
        for e in map(orjson.loads, log.read_bytes().splitlines())
        if e.get("objectRef", {}).get("subresource") == "status"
        and "kubewerk.dev/storage-event" in e.get("annotations", {})
    ]
    assert status_writes
    traced = {
        f"{s.context.trace_id:032x}"
        for s in reconciles(exporter, "default/w2")
        if s.context is not None
    }
    for event in status_writes:
        assert event["annotations"]["kubewerk.dev/trace-id"] in traced


async def test_requests_outside_a_span(kube_client: Client) -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    assert tracing.instrument(provider)
    try:
        await kube_client.request("GET", "/version")
        assert spans.get_finished_spans() == ()  # no parent: no span
        with provider.get_tracer("test").start_as_current_span("user work") as parent:
            await kube_client.request("GET", "/api/v1/namespaces/default")
        (child, _user) = spans.get_finished_spans()
        assert (
            child.parent is not None and child.parent.span_id == parent.get_span_context().span_id
        )
        assert child.name == "GET /api/v1/namespaces/{name}"
        tracing.instrument(provider, all_requests=True)
        spans.clear()
        await kube_client.request("GET", "/version")
        (root,) = spans.get_finished_spans()
        assert root.parent is None and root.name == "GET /version"
    finally:
        tracing.uninstrument()
    assert controller_module._reconcile_hook is None and client_module._request_hook is None
    assert not tracing.instrumented()


async def test_traceparent_is_sent_on_the_wire() -> None:
    """The header the server receives names the client span as parent."""
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        seen.append(headers.get(b"traceparent", b"").decode())
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": b"{}"})

    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off")
    server = uvicorn.Server(config)
    import asyncio

    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracing.instrument(provider)
    try:
        async with Client.from_url(f"http://127.0.0.1:{port}") as client:
            with provider.get_tracer("test").start_as_current_span("outer"):
                await client.request("GET", "/api/v1/namespaces/default/configmaps/x")
            await client.request("GET", "/version")
    finally:
        tracing.uninstrument()
        server.should_exit = True
        await task
    child = next(s for s in spans.get_finished_spans() if s.kind is SpanKind.CLIENT)
    assert child.context is not None
    assert seen[0].startswith(f"00-{child.context.trace_id:032x}-{child.context.span_id:016x}-")
    assert seen[1] == ""  # outside any span, nothing is propagated


@pytest.mark.parametrize(
    ("path", "template"),
    [
        ("/api/v1/namespaces/ns/pods/p", "/api/v1/namespaces/{namespace}/pods/{name}"),
        ("/api/v1/namespaces/ns", "/api/v1/namespaces/{name}"),
        ("/api/v1/namespaces", "/api/v1/namespaces"),
        ("/apis/g.io/v1/widgets?limit=5", "/apis/g.io/v1/widgets"),
        (
            "/apis/g.io/v1/namespaces/a/widgets/w/status",
            "/apis/g.io/v1/namespaces/{namespace}/widgets/{name}/status",
        ),
        ("/apis/g.io/v1/namespaces/a/widgets", "/apis/g.io/v1/namespaces/{namespace}/widgets"),
        ("/version", "/version"),
    ],
)  # fmt: skip
def test_path_template(path: str, template: str) -> None:
    assert tracing.path_template(path) == template


def test_without_opentelemetry_nothing_is_imported_or_installed() -> None:
    """Importing the module loads no OpenTelemetry package; without the packages,
    instrument() is a no-op that says so once and installs no hook."""
    script = textwrap.dedent(
        """
        import sys
        import kubewerk.observe.tracing as tracing
        import kubewerk.runtime.manager
        assert not any(m.startswith("opentelemetry") for m in sys.modules), "imported"
        for name in ("opentelemetry", "opentelemetry.trace", "opentelemetry.sdk"):
            sys.modules[name] = None  # as if the extra were not installed
        assert tracing.available() is False
        assert tracing.instrument() is False
        assert tracing.instrument() is False
        from kubewerk.client import client
        from kubewerk.runtime import controller
        assert client._request_hook is None and controller._reconcile_hook is None
        assert not tracing.instrumented()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("tracing is off: OpenTelemetry is not installed") == 1
