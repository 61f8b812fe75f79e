"""The verbs of every built-in kind match kube-apiserver's: discovery lists what kube's REST
storage implements, and a method the storage lacks is 405 MethodNotAllowed.

kube's namespace storage (pkg/registry/core/namespace/storage) wraps genericregistry.Store
without its DeleteCollection, so discovery lists no ``deletecollection`` for namespaces and
DELETE /api/v1/namespaces meets no route (go-restful's 405, which kube's
serviceErrorHandler turns into a Status); the authentication and authorization reviews are
create only. Every other built-in kind here embeds the whole store (kube's
api/discovery/*.json list all eight verbs for them).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import asgi_call, json_call

FULL = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
KUBE_VERBS: dict[tuple[str, str], list[str]] = {
    ("", "namespaces"): ["create", "delete", "get", "list", "patch", "update", "watch"],
    ("authentication.k8s.io", "selfsubjectreviews"): ["create"],
    ("authentication.k8s.io", "tokenreviews"): ["create"],
    ("authorization.k8s.io", "localsubjectaccessreviews"): ["create"],
    ("authorization.k8s.io", "selfsubjectaccessreviews"): ["create"],
    ("authorization.k8s.io", "selfsubjectrulesreviews"): ["create"],
    ("authorization.k8s.io", "subjectaccessreviews"): ["create"],
}
"""kube-apiserver's verbs where they are not all eight (api/discovery/*.json)."""


@pytest.fixture
def app() -> ApiServer:
    """The ApiServer of an unstarted EmbeddedServer: every built-in kind (RBAC and the
    reviews included), no socket."""
    return EmbeddedServer("memory").app


async def _discovered(app: ApiServer) -> dict[tuple[str, str], list[str]]:
    """Verbs per (group, resource) of every top-level resource legacy discovery lists."""
    found: dict[tuple[str, str], list[str]] = {}
    status, groups = await json_call(app, "GET", "/apis")
    assert status == 200, groups
    versions = [("", "/api/v1")] + [
        (g["name"], f"/apis/{v['groupVersion']}") for g in groups["groups"] for v in g["versions"]
    ]
    for group, path in versions:
        status, listing = await json_call(app, "GET", path)
        assert status == 200, listing
        for res in listing["resources"]:
            if "/" not in res["name"]:
                found[(group, res["name"])] = res["verbs"]
    return found


async def test_discovery_lists_kube_apiservers_verbs_for_every_builtin_kind(
    app: ApiServer,
) -> None:
    found = await _discovered(app)
    assert len(found) > 40  # every built-in kind was seen
    wrong = {key: verbs for key, verbs in found.items() if verbs != KUBE_VERBS.get(key, FULL)}
    assert wrong == {}


async def test_aggregated_discovery_lists_no_deletecollection_for_namespaces(
    app: ApiServer,
) -> None:
    status, _, payload = await asgi_call(
        app,
        "GET",
        "/api",
        headers={"accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
    )
    assert status == 200, payload
    doc: Any = orjson.loads(payload)
    resources = {
        r["resource"]: r["verbs"]
        for g in doc["items"]
        for v in g["versions"]
        for r in v["resources"]
    }
    assert resources["namespaces"] == KUBE_VERBS[("", "namespaces")]
    assert resources["configmaps"] == FULL


async def test_delete_on_the_namespace_collection_is_405_and_deletes_nothing(
    app: ApiServer,
) -> None:
    status, body = await json_call(app, "DELETE", "/api/v1/namespaces")
    assert status == 405, body
    assert body["kind"] == "Status" and body["reason"] == "MethodNotAllowed"
    assert body["message"] == "the server does not allow this method on the requested resource"
    status, listing = await json_call(app, "GET", "/api/v1/namespaces")
    assert status == 200
    assert {"default", "kube-system"} <= {n["metadata"]["name"] for n in listing["items"]}


async def test_delete_on_a_namespaced_collection_is_still_served(app: ApiServer) -> None:
    status, body = await json_call(app, "DELETE", "/api/v1/namespaces/default/configmaps")
    assert status == 200, body
    assert body["kind"] == "ConfigMapList"


async def test_openapi_has_no_deletecollection_operation_for_namespaces(app: ApiServer) -> None:
    status, doc = await json_call(app, "GET", "/openapi/v3/api/v1")
    assert status == 200
    assert "delete" not in doc["paths"]["/api/v1/namespaces"]
    assert "delete" in doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"]
    status, v2 = await json_call(app, "GET", "/openapi/v2")
    assert status == 200
    assert "delete" not in v2["paths"]["/api/v1/namespaces"]
