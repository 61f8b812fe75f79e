"""A CRD's subresources are per version, as apiextensions-apiserver serves them
(``customresource_handler.go``: one strategy, status endpoint and scale specification per
version; ``GetSubresourcesForVersion``): a version without the status subresource has no
``/status`` (kube's NotFound of the resource), its main endpoint writes ``status`` and
counts it in the generation, discovery (legacy and aggregated) and OpenAPI list
``/status`` and ``/scale`` only for the versions that declare them, and each version's
Scale reads its own replica paths."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import CRD_PATH, asgi_call, json_call

GROUP = "ver.test.io"
BASE = f"/apis/{GROUP}"

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}
                ],
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
            },
            {"name": "v2", "served": True, "storage": False},
            {
                "name": "v3",
                "served": True,
                "storage": False,
                "subresources": {
                    "scale": {
                        "specReplicasPath": ".spec.size",
                        "statusReplicasPath": ".status.size",
                    }
                },
            },
        ],
    },
}
for _version in CRD["spec"]["versions"]:
    _version["schema"] = {
        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    }

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


@pytest.fixture
async def app() -> ApiServer:
    """An in-process server with the Gadget CRD served in v1, v2 and v3."""
    server = ApiServer(open_store("memory"))
    status, body = await json_call(server, "POST", CRD_PATH, CRD)
    assert status == 201, body
    for _ in range(500):
        if server.registry.get(GROUP, "gadgets") is not None:
            return server
        await asyncio.sleep(0.005)
    raise AssertionError("the Gadget CRD was not served")


def gadget(version: str, name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default"},
        **fields,
    }


def path(version: str, name: str = "", sub: str = "") -> str:
    out = f"{BASE}/{version}/namespaces/default/gadgets"
    if name:
        out += f"/{name}"
    if sub:
        out += f"/{sub}"
    return out


async def get(app: ApiServer, url: str, accept: str = "application/json") -> tuple[int, Any]:
    status, _, payload = await asgi_call(app, "GET", url, headers={"accept": accept})
    return status, orjson.loads(payload)


async def test_discovery_lists_each_versions_own_subresources(app: ApiServer) -> None:
    names = {}
    for version in ("v1", "v2", "v3"):
        status, body = await get(app, f"{BASE}/{version}")
        assert status == 200, body
        names[version] = [r["name"] for r in body["resources"]]
    assert names == {
        "v1": ["gadgets", "gadgets/status", "gadgets/scale"],
        "v2": ["gadgets"],
        "v3": ["gadgets", "gadgets/scale"],
    }
    status, body = await get(app, "/apis", AGGREGATED)
    assert status == 200
    group = next(g for g in body["items"] if g["metadata"]["name"] == GROUP)
    subs = {
        v["version"]: [s["subresource"] for s in v["resources"][0].get("subresources", [])]
        for v in group["versions"]
    }
    assert subs == {"v3": ["scale"], "v2": [], "v1": ["status", "scale"]}


async def test_status_endpoint_is_served_only_where_declared(app: ApiServer) -> None:
    status, body = await json_call(app, "POST", path("v1"), gadget("v1", "a"))
    assert status == 201, body
    status, body = await get(app, path("v1", "a", "status"))
    assert status == 200, body
    for version in ("v2", "v3"):
        status, body = await get(app, path(version, "a", "status"))
        assert (status, body["reason"], body["message"], body["details"]) == (
            404,
            "NotFound",
            f'gadgets.{GROUP} "a" not found',
            {"name": "a", "group": GROUP, "kind": "gadgets"},
        ), version
    status, body = await get(app, path("v2", "a", "scale"))
    assert status == 404, body
    # a subresource no version declares is the same NotFound
    status, body = await get(app, path("v1", "a", "bogus"))
    assert (status, body["message"]) == (404, f'gadgets.{GROUP} "a" not found')


async def test_main_endpoint_resets_status_only_in_versions_with_the_subresource(
    app: ApiServer,
) -> None:
    # v1 (status subresource): a create drops status, an update keeps the stored one
    status, made = await json_call(
        app, "POST", path("v1"), gadget("v1", "a", spec={"replicas": 1}, status={"replicas": 9})
    )
    assert (status, "status" in made) == (201, False)
    made["status"] = {"replicas": 9}
    status, updated = await json_call(app, "PUT", path("v1", "a"), made)
    assert (status, "status" in updated, updated["metadata"]["generation"]) == (200, False, 1)
    # v2 (none): the create writes status, an update of status alone bumps the generation
    status, made = await json_call(
        app, "POST", path("v2"), gadget("v2", "b", spec={"replicas": 1}, status={"replicas": 2})
    )
    assert (status, made.get("status")) == (201, {"replicas": 2})
    made["status"] = {"replicas": 3}
    status, updated = await json_call(app, "PUT", path("v2", "b"), made)
    assert status == 200, updated
    assert (updated["status"], updated["metadata"]["generation"]) == ({"replicas": 3}, 2)
    # the same object through v1: status is not the main endpoint's to change
    status, seen = await get(app, path("v1", "b"))
    seen["status"] = {"replicas": 7}
    seen["metadata"].pop("managedFields", None)
    status, updated = await json_call(app, "PUT", path("v1", "b"), seen)
    assert status == 200, updated
    assert (updated["status"], updated["metadata"]["generation"]) == ({"replicas": 3}, 2)
    # managedFields: v1's entry never owns status, v2's does
    owned = {
        e["apiVersion"]: orjson.dumps(e["fieldsV1"]).decode()
        for e in updated["metadata"]["managedFields"]
    }
    assert '"f:status"' in owned[f"{GROUP}/v2"]
    assert '"f:status"' not in owned.get(f"{GROUP}/v1", "")


async def test_each_version_scales_through_its_own_paths(app: ApiServer) -> None:
    body = gadget("v1", "a", spec={"replicas": 2, "size": 5})
    body["status"] = {"replicas": 1, "size": 4, "selector": "app=a"}
    status, made = await json_call(app, "POST", path("v2"), {**body, "apiVersion": f"{GROUP}/v2"})
    assert status == 201, made
    status, v1_scale = await get(app, path("v1", "a", "scale"))
    status3, v3_scale = await get(app, path("v3", "a", "scale"))
    assert (status, status3) == (200, 200)
    assert (v1_scale["spec"], v1_scale["status"]) == (
        {"replicas": 2},
        {"replicas": 1, "selector": "app=a"},
    )
    assert (v3_scale["spec"], v3_scale["status"]) == ({"replicas": 5}, {"replicas": 4})
    v3_scale["spec"]["replicas"] = 8
    status, written = await json_call(app, "PUT", path("v3", "a", "scale"), v3_scale)
    assert (status, written["spec"]) == (200, {"replicas": 8}), written
    status, obj = await get(app, path("v2", "a"))
    assert obj["spec"] == {"replicas": 2, "size": 8}


async def test_scale_apply_maps_ownership_through_the_versions_path(app: ApiServer) -> None:
    status, made = await json_call(
        app, "POST", path("v3") + "?fieldManager=creator", gadget("v3", "a", spec={"size": 1})
    )
    assert status == 201, made
    config = {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 3}}
    status, _, payload = await asgi_call(
        app,
        "PATCH",
        path("v3", "a", "scale"),
        "fieldManager=scaler&force=true",
        headers={"content-type": "application/apply-patch+yaml"},
        body=orjson.dumps(config),
    )
    assert status == 200, payload
    status, obj = await get(app, path("v3", "a"))
    assert obj["spec"] == {"size": 3}
    entries = {e["manager"]: e for e in obj["metadata"]["managedFields"]}
    assert entries["scaler"]["apiVersion"] == f"{GROUP}/v3"
    assert entries["scaler"]["fieldsV1"] == {"f:spec": {"f:size": {}}}
    assert entries["creator"]["fieldsV1"] == {"f:spec": {}}  # its size taken by the apply


async def test_openapi_publishes_each_versions_own_subresource_paths(app: ApiServer) -> None:
    found = {}
    for version in ("v1", "v2", "v3"):
        status, doc = await get(app, f"/openapi/v3/apis/{GROUP}/{version}")
        assert status == 200, doc
        found[version] = sorted(
            p.rsplit("/", 1)[-1] for p in doc["paths"] if p.endswith(("/status", "/scale"))
        )
    assert found == {"v1": ["scale", "status"], "v2": [], "v3": ["scale"]}
    status, doc = await get(app, "/openapi/v2")
    assert status == 200
    v2_paths = [p for p in doc["paths"] if p.startswith(f"/apis/{GROUP}/")]
    subs = sorted(p.split("/")[3] + p[p.rfind("/") :] for p in v2_paths if "{name}/" in p)
    assert subs == ["v1/scale", "v1/status", "v3/scale"]


async def test_printer_columns_are_each_versions_own(app: ApiServer) -> None:
    status, body = await json_call(app, "POST", path("v1"), gadget("v1", "a", spec={"replicas": 2}))
    assert status == 201, body
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    columns = {}
    for version in ("v1", "v2"):
        status, body = await get(app, path(version), table)
        assert status == 200, body
        columns[version] = [
            (c["name"], r)
            for c, r in zip(body["columnDefinitions"], body["rows"][0]["cells"], strict=True)
        ]
    assert columns["v1"][:2] == [("Name", "a"), ("Replicas", 2)]
    assert [name for name, _ in columns["v2"]] == ["Name", "Age"]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        pytest.param(
            lambda s: s["versions"][2]["subresources"]["scale"].update(specReplicasPath=".size"),
            "spec.versions[2].subresources.scale.specReplicasPath",
            id="bad-spec-path-in-one-version",
        ),
        pytest.param(
            lambda s: s["versions"][0]["subresources"]["scale"].pop("statusReplicasPath"),
            "spec.versions[0].subresources.scale.statusReplicasPath",
            id="missing-status-path-in-one-version",
        ),
    ],
)
async def test_per_version_subresources_are_validated_at_their_version(
    mutate: Any, field: str
) -> None:
    server = ApiServer(open_store("memory"))
    crd = copy.deepcopy(CRD)
    mutate(crd["spec"])
    status, body = await json_call(server, "POST", CRD_PATH, crd)
    assert status == 422, body
    assert [c["field"] for c in body["details"]["causes"]] == [field]


class RenamingConverter:
    """A conversion webhook's stand-in: v1's ``spec.replicas`` is v2's ``spec.count``."""

    async def one(self, obj: dict[str, Any], api_version: str) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        spec = out.setdefault("spec", {})
        if api_version.endswith("/v2") and "replicas" in spec:
            spec["count"] = spec.pop("replicas")
        if api_version.endswith("/v1") and "count" in spec:
            spec["replicas"] = spec.pop("count")
        out["apiVersion"] = api_version
        return out

    async def convert(
        self, objects: list[dict[str, Any]], api_version: str, as_list: bool = False
    ) -> list[dict[str, Any]]:
        return [await self.one(o, api_version) for o in objects]


async def test_a_webhook_converted_version_scales_through_its_own_paths() -> None:
    server = ApiServer(open_store("memory"))
    crd = copy.deepcopy(CRD)
    crd["metadata"]["name"] = f"gizmos.{GROUP}"
    crd["spec"]["names"] = {"plural": "gizmos", "kind": "Gizmo"}
    crd["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1:9/convert"},
        },
    }
    v1, v2, _ = crd["spec"]["versions"]
    v2["subresources"] = {
        "scale": {"specReplicasPath": ".spec.count", "statusReplicasPath": ".status.ready"}
    }
    crd["spec"]["versions"] = [v1, v2]
    status, body = await json_call(server, "POST", CRD_PATH, crd)
    assert status == 201, body
    for _ in range(500):
        if server.registry.get(GROUP, "gizmos") is not None:
            break
        await asyncio.sleep(0.005)
    fake = RenamingConverter()
    server.conversion.converter = (  # type: ignore[method-assign]
        lambda target: None if target.version == "v1" else fake
    )
    gizmos = f"{BASE}/v1/namespaces/default/gizmos"
    obj = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gizmo",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"replicas": 2},
    }
    status, made = await json_call(server, "POST", gizmos, obj)
    assert status == 201, made
    made["status"] = {"replicas": 1, "ready": 3}
    status, made = await json_call(server, "PUT", f"{gizmos}/g/status", made)
    assert status == 200, made
    v2_scale = f"{BASE}/v2/namespaces/default/gizmos/g/scale"
    status, scale = await get(server, v2_scale)
    assert (status, scale["spec"], scale["status"]) == (200, {"replicas": 2}, {"replicas": 3})
    scale["spec"]["replicas"] = 7
    status, written = await json_call(server, "PUT", v2_scale, scale)
    assert (status, written["spec"], written["status"]) == (200, {"replicas": 7}, {"replicas": 3})
    status, stored = await get(server, f"{gizmos}/g")
    assert stored["spec"] == {"replicas": 7}
    status, _, payload = await asgi_call(
        server,
        "PATCH",
        v2_scale,
        headers={"content-type": "application/merge-patch+json"},
        body=b'{"spec":{"replicas":4}}',
    )
    assert (status, orjson.loads(payload)["spec"]) == (200, {"replicas": 4})
    status, stored = await get(server, f"{gizmos}/g")
    assert stored["spec"] == {"replicas": 4}
