"""The dashboard over real HTTP against the embedded API server: the JSON views of a
platform scene, live updates through server-sent events, headers, host check,
read-only, escaping (data only ever leaves as JSON)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import Client
from kubewerk.observe.server import DashboardServer

from .scenario import DATABASE, HOSTILE, build_scene, set_status


async def http(
    url: str, path: str, method: str = "GET", host: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request on a fresh connection (the raw bytes, no client library)."""
    hostport = url.split("//", 1)[1].rstrip("/")
    h, _, p = hostport.rpartition(":")
    reader, writer = await asyncio.open_connection(h, int(p))
    request = f"{method} {path} HTTP/1.1\r\nHost: {host or hostport}\r\nConnection: close\r\n"
    writer.write(request.encode() + b"\r\n")
    await writer.drain()
    raw = await reader.read()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, body


@pytest.fixture
async def scene(
    aserver: EmbeddedServer,
) -> AsyncIterator[tuple[Client, dict[str, Any], DashboardServer]]:
    async with Client.from_url(aserver.url) as client:
        objects = await build_scene(client)
        dash = DashboardServer(client, name="test")
        await dash.start()
        try:
            yield client, objects, dash
        finally:
            await dash.stop()


async def get_json(dash: DashboardServer, path: str) -> Any:
    status, headers, body = await http(dash.url, path)
    assert status == 200, body
    assert headers["content-type"] == "application/json"
    return orjson.loads(body)


async def test_summary_puts_stuck_objects_first_with_reasons_and_events(scene: Any) -> None:
    _client, _objects, dash = scene
    doc = await get_json(dash, "/api/summary")
    assert doc["cluster"] == "test"
    assert doc["stuckTotal"] == 2
    first, second = doc["stuck"]
    # Failed outranks waiting for dependencies
    assert (first["kind"], first["name"], first["phase"]) == ("Environment", "prod", "Failed")
    assert first["reasons"][0] == {
        "code": "Failed",
        "reason": "ProvisioningFailed",
        "message": HOSTILE,
    }
    assert first["events"][0]["message"] == "the provider said no"
    assert second["name"] == "orders"
    assert second["reasons"][0]["reason"] == "DependenciesNotReady"
    kinds = {k["label"]: k for k in doc["kinds"]}
    assert len(kinds) == 17
    assert doc["kinds"][0]["stuck"] == 1  # kinds with stuck objects first
    assert kinds["Tenant.platform.kubewerk.dev"]["ready"]["True"] == 1
    assert kinds["Environment.platform.kubewerk.dev"]["phases"] == {"Failed": 1}
    assert kinds["Project.platform.kubewerk.dev"]["phases"] == {"(none)": 1}


async def test_object_view_has_dependencies_dependents_history(scene: Any) -> None:
    _client, _objects, dash = scene
    env = await get_json(dash, "/api/object?id=Environment.platform.kubewerk.dev/acme/prod")
    assert env["phase"] == "Failed"
    assert [d["name"] for d in env["dependencies"]] == ["acme"]
    assert env["dependencies"][0]["path"] == "spec.tenantRef"
    assert [d["name"] for d in env["dependents"]] == ["orders"]
    db = await get_json(dash, "/api/object?id=Database.platform.kubewerk.dev/acme/orders")
    deps = {d["name"]: d for d in db["dependencies"]}
    assert deps["shop"]["present"] is False  # the Quota is not there
    assert deps["shop-credentials"]["kind"] == "CredentialBinding"
    assert db["phaseHistory"][0]["message"] == "(none) → Pending: Created"
    tenant = await get_json(dash, "/api/object?id=Tenant.platform.kubewerk.dev//acme")
    assert {d["name"] for d in tenant["dependents"]} == {"prod", "shop"}
    assert tenant["object"]["spec"]["displayName"] == HOSTILE
    status, _h, _b = await http(dash.url, "/api/object?id=nonsense")
    assert status == 400


async def test_graph_of_tenant_and_cycle(scene: Any) -> None:
    client, _objects, dash = scene
    graph = await get_json(dash, "/api/graph?root=Tenant.platform.kubewerk.dev//acme")
    names = {n["name"] for n in graph["nodes"]}
    assert {"acme", "prod", "shop", "orders"} <= names
    x = {n["name"]: n["x"] for n in graph["nodes"]}
    assert x["acme"] < x["prod"] < x["orders"]  # a node right of what it depends on
    assert graph["cycles"] == []
    # a cycle: the database becomes a replica of itself
    db = await client.get(DATABASE, "orders", "acme")
    db["spec"]["replicaOf"] = {"name": "orders"}
    await client.replace(db)
    for _ in range(100):
        graph = await get_json(dash, "/api/graph?namespace=acme")
        if graph["cycles"]:
            break
        await asyncio.sleep(0.05)
    assert graph["cycles"] == [["Database.platform.kubewerk.dev/acme/orders"]]
    assert [e["onCycle"] for e in graph["edges"] if e["from"] == e["to"]] == [True]


async def test_stream_announces_a_change_quickly(scene: Any) -> None:
    client, objects, dash = scene
    hostport = dash.url.split("//", 1)[1].rstrip("/")
    h, _, p = hostport.rpartition(":")
    reader, writer = await asyncio.open_connection(h, int(p))
    writer.write(f"GET /api/stream HTTP/1.1\r\nHost: {hostport}\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    assert b"text/event-stream" in head
    first = await asyncio.wait_for(reader.readuntil(b"\n\n"), 5)
    assert b"event: change" in first
    started = time.monotonic()
    await set_status(client, objects["env"], {"phase": "Reconciling", "observedGeneration": 1})
    while True:
        chunk = await asyncio.wait_for(reader.readuntil(b"\n\n"), 5)
        if b"event: change" in chunk:
            break
    elapsed = time.monotonic() - started
    writer.close()
    assert elapsed < 2.0
    doc = await get_json(dash, "/api/summary")
    assert doc["stuckTotal"] == 1  # the environment is no longer Failed


async def test_headers_read_only_and_host_check(scene: Any) -> None:
    _client, _objects, dash = scene
    status, headers, body = await http(dash.url, "/")
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert b'<script src="static/dashboard.js"' in body and b"<script>" not in body
    status, headers, _ = await http(dash.url, "/static/dashboard.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, headers, _ = await http(dash.url, "/api/summary", method)
        assert status == 405 and headers["allow"] == "GET, HEAD"
    status, _, _ = await http(dash.url, "/api/summary", host="evil.example.com")
    assert status == 421
    status, _, _ = await http(dash.url, "/static/../health.py")
    assert status == 404


async def test_non_loopback_bind_is_refused_without_opt_in(aserver: EmbeddedServer) -> None:
    async with Client.from_url(aserver.url) as client:
        with pytest.raises(ValueError, match="not a loopback address"):
            DashboardServer(client, host="0.0.0.0")
