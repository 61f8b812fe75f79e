"""A cluster-scoped object's ``metadata.namespace`` is cleared on every write, as
kube-apiserver's BeforeCreate and BeforeUpdate clear it (no error, nothing stored)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call, json_call, open_crd

CRD = open_crd("example.com", "gizmos", "Gizmo", scope="Cluster")
GIZMOS = "/apis/example.com/v1/gizmos"


@pytest.fixture
async def app() -> ApiServer:
    app = ApiServer(open_store("memory"))
    status, body = await json_call(
        app, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD
    )
    assert status == 201, body
    for _ in range(500):
        if app.registry.get("example.com", "gizmos") is not None:
            break
        await asyncio.sleep(0.005)
    gizmo = {
        "apiVersion": "example.com/v1",
        "kind": "Gizmo",
        "metadata": {"name": "g", "namespace": "x"},
    }
    status, body = await json_call(app, "POST", GIZMOS, gizmo)
    assert status == 201 and "namespace" not in body["metadata"], body
    return app


async def patch(app: ApiServer, media: str, body: Any, query: str = "") -> tuple[int, Any]:
    status, _, payload = await asgi_call(
        app, "PATCH", f"{GIZMOS}/g", query, headers={"content-type": media}, body=orjson.dumps(body)
    )
    return status, orjson.loads(payload)


async def test_an_update_naming_a_namespace_is_stored_without_it(app: ApiServer) -> None:
    status, got = await json_call(app, "GET", f"{GIZMOS}/g")
    got["metadata"]["namespace"] = "foo"
    got["spec"] = {"size": 1}
    status, body = await json_call(app, "PUT", f"{GIZMOS}/g", got)
    assert status == 200, body
    assert "namespace" not in body["metadata"] and body["spec"] == {"size": 1}


async def test_a_patch_or_an_apply_naming_a_namespace_is_stored_without_it(app: ApiServer) -> None:
    status, body = await patch(
        app,
        "application/merge-patch+json",
        {"metadata": {"namespace": "foo", "labels": {"a": "b"}}},
    )
    assert status == 200, body
    assert "namespace" not in body["metadata"] and body["metadata"]["labels"] == {"a": "b"}
    applied = {
        "apiVersion": "example.com/v1",
        "kind": "Gizmo",
        "metadata": {"name": "g", "namespace": "foo"},
        "spec": {"size": 2},
    }
    status, body = await patch(app, "application/apply-patch+yaml", applied, "fieldManager=me")
    assert status == 200, body
    assert "namespace" not in body["metadata"] and body["spec"] == {"size": 2}
    mine = [e for e in body["metadata"]["managedFields"] if e.get("manager") == "me"]
    assert mine and "f:namespace" not in orjson.dumps(mine).decode()
    status, stored = await json_call(app, "GET", f"{GIZMOS}/g")
    assert "namespace" not in stored["metadata"]
