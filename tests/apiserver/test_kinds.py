"""Kinds and their strategies: the documented way to add a built-in kind works as the
docs say, and what differs between kinds comes from their strategies."""

from __future__ import annotations

import asyncio
import re
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.builtins import BUILTIN_KINDS, builtin_types
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call

DOC = Path(__file__).resolve().parents[2] / "docs" / "apiserver.md"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
PC_PATH = "/apis/scheduling.k8s.io/v1/priorityclasses"


def documented_kind() -> types.ModuleType:
    """The module that docs/apiserver.md's "Adding a built-in kind" shows."""
    text = DOC.read_text()
    section = text.split("## Adding a built-in kind", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    module = types.ModuleType("priorityclasses")
    exec(compile(code, "docs/apiserver.md", "exec"), module.__dict__)
    return module


async def call(
    app: ApiServer, method: str, path: str, body: Any = None, query: str = "", accept: str = ""
) -> tuple[int, list[tuple[str, str]], Any]:
    raw = orjson.dumps(body) if body is not None else b""
    headers = {"content-type": "application/json", "accept": accept}
    status, resp_headers, payload = await asgi_call(app, method, path, query, headers, raw)
    return status, resp_headers, orjson.loads(payload)


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    app = ApiServer(open_store("memory"))
    app.registry.add(documented_kind().resource_type())
    try:
        yield app
    finally:
        await app.stop()


def test_every_builtin_kind_has_its_own_strategy_instance() -> None:
    first, second = builtin_types(), builtin_types()
    assert len(first) == len(BUILTIN_KINDS)
    assert len({(t.group, t.resource) for t in first}) == len(first)
    for a, b in zip(first, second, strict=True):
        assert isinstance(a, ServedResource) and a.strategy is not b.strategy


async def test_the_documented_kind_is_served(server: ApiServer) -> None:
    status, _, body = await call(server, "GET", "/apis/scheduling.k8s.io/v1")
    assert status == 200
    assert [(r["name"], r.get("shortNames")) for r in body["resources"]] == [
        ("priorityclasses", ["pc"])
    ]

    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
        "colour": "red",
    }
    status, headers, body = await call(server, "POST", PC_PATH, pc)
    assert status == 201, body
    assert body["preemptionPolicy"] == "PreemptLowerPriority" and "colour" not in body
    assert ("warning", '299 - "unknown field \\"colour\\""') in headers

    body["value"] = 2000
    status, _, out = await call(server, "PUT", f"{PC_PATH}/high", body)
    assert status == 422
    assert out["message"] == (
        'PriorityClass.scheduling.k8s.io "high" is invalid: '
        "value: Forbidden: may not be changed in an update."
    )
    body["value"] = 1000
    body["description"] = "important"
    status, _, out = await call(server, "PUT", f"{PC_PATH}/high", body)
    assert status == 200 and out["description"] == "important", out

    status, _, table = await call(server, "GET", PC_PATH, accept=TABLE)
    assert status == 200
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Value",
        "Global-Default",
        "Age",
    ]
    assert table["rows"][0]["cells"][:3] == ["high", 1000, False]

    status, _, listed = await call(
        server, "GET", PC_PATH, query="fieldSelector=metadata.name%3Dhigh"
    )
    assert status == 200 and [o["metadata"]["name"] for o in listed["items"]] == ["high"]
    status, _, _ = await call(server, "GET", PC_PATH, query="fieldSelector=value%3D1000")
    assert status == 400

    status, _, doc = await call(server, "GET", "/openapi/v3/apis/scheduling.k8s.io/v1")
    assert status == 200
    schema = doc["components"]["schemas"]["io.k8s.api.scheduling.v1.PriorityClass"]
    assert schema["required"] == ["value"]

    status, _, gone = await call(server, "DELETE", f"{PC_PATH}/high")
    assert (
        status == 200 and gone["kind"] == "Status" and gone["details"]["kind"] == "priorityclasses"
    )


async def test_a_custom_resource_named_events_has_a_name_column(server: ApiServer) -> None:
    """Only the Event kinds' strategies leave out the Name column, not every plural "events"."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "events.audit.kubewerk.dev"},
        "spec": {
            "group": "audit.kubewerk.dev",
            "scope": "Namespaced",
            "names": {"plural": "events", "singular": "event", "kind": "AuditEvent"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    status, _, body = await call(
        server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
    )
    assert status == 201, body
    await server.start()
    path = "/apis/audit.kubewerk.dev/v1/namespaces/default/events"
    for _ in range(500):
        status, _, table = await call(server, "GET", path, accept=TABLE)
        if status == 200:
            break
        await asyncio.sleep(0.01)
    assert status == 200, table
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    status, _, events = await call(server, "GET", "/api/v1/namespaces/default/events", accept=TABLE)
    assert status == 200 and events["columnDefinitions"][0]["name"] == "Last Seen"


async def test_a_crd_takes_a_strategic_merge_patch() -> None:
    """kube-apiserver serves CRDs as a typed kind, so it takes strategic merge patches:
    ObjectMeta's tags apply (finalizers merge), every other list is replaced."""
    import yaml

    from tests.apiserver.helpers import DEMO_CRD

    app = ApiServer(open_store("memory"))
    crd = yaml.safe_load(DEMO_CRD.read_text())
    crd["metadata"]["finalizers"] = ["example.com/keep"]
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    status, _, payload = await asgi_call(
        app, "POST", path, headers={"content-type": "application/json"}, body=orjson.dumps(crd)
    )
    assert status == 201, payload
    name = crd["metadata"]["name"]
    patch = {
        "metadata": {"labels": {"team": "a"}, "finalizers": ["example.com/other"]},
        "spec": {"names": {"shortNames": ["d"]}},
    }
    status, _, payload = await asgi_call(
        app,
        "PATCH",
        f"{path}/{name}",
        headers={"content-type": "application/strategic-merge-patch+json"},
        body=orjson.dumps(patch),
    )
    assert status == 200, payload
    patched = orjson.loads(payload)
    assert patched["metadata"]["labels"] == {"team": "a"}
    assert sorted(patched["metadata"]["finalizers"]) == ["example.com/keep", "example.com/other"]
    assert patched["spec"]["names"]["shortNames"] == ["d"]
    await app.stop()
