"""``/openapi/v3`` against kube-apiserver's: a built-in group-version's paths diffed with a
piece of kube's published document (tests/data/kube_openapi), a custom resource's
document against what kube's CRD OpenAPI builder makes of the same CRD, and the index,
hashes, ETags, 304s, redirects and content negotiation of kube-openapi's handler."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver import openapi, openapi_crd
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.builtins import builtin_types
from kubewerk.apiserver.kinds.custom import crd_to_type
from kubewerk.apiserver.registry import Registry
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call

KUBE_PIECE = (
    Path(__file__).resolve().parents[1] / "data" / "kube_openapi" / "apps_v1_deployments_v3.yaml"
)
KUBE_PATHS: dict[str, Any] = yaml.safe_load(KUBE_PIECE.read_text())
REF = "#/components/schemas/"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com", "uid": "u-1", "generation": 1},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                    },
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "example": {"replicas": 1},
                                "properties": {
                                    "replicas": {"type": "integer", "default": 1},
                                    "port": {"x-kubernetes-int-or-string": True},
                                    "note": {"type": "string", "nullable": True},
                                    "template": {
                                        "type": "object",
                                        "x-kubernetes-embedded-resource": True,
                                        "x-kubernetes-preserve-unknown-fields": True,
                                        "required": ["spec"],
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"replicas": {"type": "integer"}},
                            },
                        },
                    }
                },
            }
        ],
    },
    "status": {"acceptedNames": {"plural": "widgets", "kind": "Widget"}},
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    """The built-in kinds and the Widget CRD, served (no HTTP, no storage)."""
    reg = Registry()
    for rtype in builtin_types():
        reg.add(rtype)
    widget = crd_to_type(WIDGET_CRD)
    assert widget is not None
    reg.add(widget)
    return reg


def _doc(registry: Registry, gv: str) -> Any:
    encoded = openapi.encoded_document(registry, gv)
    assert encoded is not None, gv
    return orjson.loads(encoded)


def _param_shape(param: dict[str, Any]) -> dict[str, Any]:
    """A parameter without its description (kubewerk's are its own, shorter)."""
    return {k: v for k, v in param.items() if k != "description"}


def _same_content(ours: dict[str, Any], kube: dict[str, Any], where: str) -> None:
    """Our media types are kube's that kubewerk answers (never one kube lacks), each with
    kube's schema."""
    assert ours, f"{where}: no content"
    assert set(ours) <= set(kube), f"{where}: {sorted(set(ours) - set(kube))}"
    for media, value in ours.items():
        assert value == kube[media], f"{where} {media}"


def _compare_operation(ours: dict[str, Any], kube: dict[str, Any], where: str) -> None:
    for key in (
        "description",
        "operationId",
        "tags",
        "x-kubernetes-action",
        "x-kubernetes-group-version-kind",
    ):
        assert ours.get(key) == kube.get(key), f"{where}: {key}"
    assert [_param_shape(p) for p in ours.get("parameters", [])] == [
        _param_shape(p) for p in kube.get("parameters", [])
    ], f"{where}: parameters"
    assert ("requestBody" in ours) == ("requestBody" in kube), f"{where}: requestBody"
    if "requestBody" in kube:
        body, kube_body = ours["requestBody"], kube["requestBody"]
        assert body.get("required") == kube_body.get("required"), f"{where}: body required"
        _same_content(body["content"], kube_body["content"], f"{where} body")
    assert list(ours["responses"]) == list(kube["responses"]), f"{where}: response codes"
    for code, response in kube["responses"].items():
        mine = ours["responses"][code]
        assert mine["description"] == response["description"], f"{where} {code}"
        if "content" in response:
            _same_content(mine.get("content", {}), response["content"], f"{where} {code}")
        else:
            assert "content" not in mine, f"{where} {code}"


@pytest.mark.parametrize("path", sorted(KUBE_PATHS))
def test_builtin_paths_match_kube_apiserver(registry: Registry, path: str) -> None:
    doc = _doc(registry, "apis/apps/v1")
    ours = doc["paths"][path]
    kube = KUBE_PATHS[path]
    assert [_param_shape(p) for p in ours["parameters"]] == [
        _param_shape(p) for p in kube["parameters"]
    ]
    for method, operation in kube.items():
        if method != "parameters":
            _compare_operation(ours[method], operation, f"{method} {path}")
    if path.endswith("{name}") or path.endswith("/status"):
        assert set(ours) == set(kube)


def test_operation_ids_are_unique_in_every_document(registry: Registry) -> None:
    """OpenAPI requires it; code generators name methods by it (before: getDeployment for
    the object, its status and its scale alike)."""
    for gv in openapi.index(registry)["paths"]:
        ids = [
            op["operationId"]
            for item in _doc(registry, gv)["paths"].values()
            for method, op in item.items()
            if method != "parameters"
        ]
        assert len(ids) == len(set(ids)), gv


def test_every_path_template_declares_its_parameters(registry: Registry) -> None:
    for gv in ("api/v1", "apis/apps/v1", "apis/example.com/v1"):
        for path, item in _doc(registry, gv)["paths"].items():
            declared = {p["name"] for p in item.get("parameters", []) if p["in"] == "path"}
            assert declared == {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}


# -- a custom resource: kube's CRD builder's paths and schema -----------------------------

_LIST = [
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
]
_WRITE = ["dryRun", "fieldManager", "fieldValidation"]
_DELETE = [
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
]
_WIDGET = ("example.com", "Widget", "v1")
_SCALE = ("autoscaling", "Scale", "v1")
_BASE = "/apis/example.com/v1/namespaces/{namespace}/widgets"

# path -> (path-level parameters, {method: (operationId, action, query, codes, gvk)}), as
# BuildOpenAPIV3 builds them (routes, AddObjectParams of the options types, common
# parameters lifted onto the path, 401 from CommonResponses)
CRD_EXPECTED: dict[str, tuple[list[str], dict[str, tuple[str, str, list[str], list[str], Any]]]] = {
    "/apis/example.com/v1/widgets": (
        sorted([*_LIST, "pretty"]),
        {
            "get": (
                "listExampleComV1WidgetForAllNamespaces",
                "list",
                [],
                ["200", "401"],
                _WIDGET,
            )
        },
    ),
    _BASE: (
        ["namespace", "pretty"],
        {
            "get": ("listExampleComV1NamespacedWidget", "list", _LIST, ["200", "401"], _WIDGET),
            "post": (
                "createExampleComV1NamespacedWidget",
                "post",
                _WRITE,
                ["200", "201", "202", "401"],
                _WIDGET,
            ),
            "delete": (
                "deleteExampleComV1CollectionNamespacedWidget",
                "deletecollection",
                _LIST,
                ["200", "401"],
                _WIDGET,
            ),
        },
    ),
    _BASE + "/{name}": (
        ["name", "namespace", "pretty"],
        {
            "get": (
                "readExampleComV1NamespacedWidget",
                "get",
                ["resourceVersion"],
                ["200", "401"],
                _WIDGET,
            ),
            "put": (
                "replaceExampleComV1NamespacedWidget",
                "put",
                _WRITE,
                ["200", "201", "401"],
                _WIDGET,
            ),
            "delete": (
                "deleteExampleComV1NamespacedWidget",
                "delete",
                _DELETE,
                ["200", "202", "401"],
                _WIDGET,
            ),
            "patch": (
                "patchExampleComV1NamespacedWidget",
                "patch",
                [*_WRITE, "force"],
                ["200", "201", "401"],
                _WIDGET,
            ),
        },
    ),
    **{
        f"{_BASE}/{{name}}/{sub}": (
            ["name", "namespace", "pretty"],
            {
                "get": (
                    f"readExampleComV1NamespacedWidget{sub.title()}",
                    "get",
                    ["resourceVersion"],
                    ["200", "401"],
                    gvk,
                ),
                "put": (
                    f"replaceExampleComV1NamespacedWidget{sub.title()}",
                    "put",
                    _WRITE,
                    ["200", "201", "401"],
                    gvk,
                ),
                "patch": (
                    f"patchExampleComV1NamespacedWidget{sub.title()}",
                    "patch",
                    [*_WRITE, "force"],
                    ["200", "201", "401"],
                    gvk,
                ),
            },
        )
        for sub, gvk in (("status", _WIDGET), ("scale", _SCALE))
    },
}


def test_custom_resource_paths_are_kube_crd_builders(registry: Registry) -> None:
    doc = _doc(registry, "apis/example.com/v1")
    assert doc["info"] == {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
    assert set(doc["paths"]) == set(CRD_EXPECTED)
    for path, (common, operations) in CRD_EXPECTED.items():
        item = doc["paths"][path]
        assert [p["name"] for p in item["parameters"]] == common, path
        assert set(item) - {"parameters"} == set(operations), path
        for method, (op_id, action, query, codes, gvk) in operations.items():
            op = item[method]
            group, kind, version = gvk
            assert op["operationId"] == op_id
            assert op["tags"] == ["exampleCom_v1"]
            assert op["x-kubernetes-action"] == action
            assert op["x-kubernetes-group-version-kind"] == {
                "group": group,
                "kind": kind,
                "version": version,
            }
            assert [p["name"] for p in op.get("parameters", [])] == query, op_id
            assert list(op["responses"]) == codes, op_id
    patch = doc["paths"][_BASE + "/{name}"]["patch"]["requestBody"]["content"]
    # no strategic merge for a custom resource
    assert sorted(patch) == [
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ]
    listed = doc["paths"][_BASE]["get"]["responses"]["200"]["content"]["application/json"]
    assert listed["schema"] == {"$ref": REF + "com.example.v1.WidgetList"}


def test_custom_resource_schema_is_kube_crd_builders(registry: Registry) -> None:
    schemas = _doc(registry, "apis/example.com/v1")["components"]["schemas"]
    widget = schemas["com.example.v1.Widget"]
    # a $ref beside a description goes into allOf, as kube-openapi's v3 builder writes it
    assert widget["properties"]["metadata"]["allOf"] == [{"$ref": REF + OBJECT_META}]
    assert widget["properties"]["apiVersion"]["type"] == "string"
    spec = widget["properties"]["spec"]
    assert "example" not in spec  # not part of the structural schema
    props = spec["properties"]
    assert props["replicas"]["default"] == 1
    assert props["note"] == {"type": "string", "nullable": True}  # v3 keeps nullable
    assert props["port"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    template = props["template"]
    assert set(template["properties"]) == {"apiVersion", "kind", "metadata"}
    assert template["required"] == ["spec", "kind", "apiVersion"]
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "Widget", "version": "v1"}
    ]
    listed = schemas["com.example.v1.WidgetList"]
    assert listed["required"] == ["items"]
    assert listed["properties"]["items"]["items"] == {"$ref": REF + "com.example.v1.Widget"}
    assert listed["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "WidgetList", "version": "v1"}
    ]
    # the shared definitions are kube's own, with their x-kubernetes-* extensions
    meta = schemas[OBJECT_META]["properties"]
    assert meta["ownerReferences"]["x-kubernetes-list-map-keys"] == ["uid"]
    assert meta["managedFields"]["items"]["$ref"] == (
        REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry"
    )
    refs: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str):
                refs.add(ref.removeprefix(REF))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(_doc(registry, "apis/example.com/v1"))
    assert refs <= set(schemas)
    assert "io.k8s.api.autoscaling.v1.Scale" in refs


# -- the index and kube-openapi's handler ------------------------------------------------


@pytest.fixture
async def app() -> AsyncIterator[ApiServer]:
    server = ApiServer(open_store("memory"))
    widget = crd_to_type(WIDGET_CRD)
    assert widget is not None
    server.registry.add(widget)
    try:
        yield server
    finally:
        await server.stop()


async def _get(app: ApiServer, url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    path, _, query = url.partition("?")
    status, resp_headers, body = await asgi_call(app, "GET", path, query, headers)
    return status, dict(resp_headers), body


async def test_index_lists_what_kube_lists_and_each_url_answers(app: ApiServer) -> None:
    status, headers, body = await _get(app, "/openapi/v3")
    assert status == 200 and headers["content-type"] == "application/json"
    paths = orjson.loads(body)["paths"]
    assert {"api", "api/v1", "apis", "version", "apis/apps", "apis/apps/v1"} <= set(paths)
    assert "apis/example.com/v1" in paths
    # kube serves a CRD group's discovery outside OpenAPI, and kubewerk serves no logs or
    # service-account issuer discovery
    assert "apis/example.com" not in paths
    assert not {"logs", "openid/v1/jwks", ".well-known/openid-configuration"} & set(paths)
    for name, entry in paths.items():
        url = entry["serverRelativeURL"]
        assert url.startswith(f"/openapi/v3/{name}?hash=")
        digest = url.rsplit("=", 1)[1]
        assert len(digest) == 128 and digest == digest.upper()
        status, headers, doc = await _get(app, url)
        assert status == 200, name
        assert hashlib.sha512(doc).hexdigest().upper() == digest, name
        assert headers["etag"] == f'"{digest}"'
        assert headers["cache-control"] == "public, immutable"
        assert headers["vary"] == "Accept"
        # every path a document names with a GET is served
        for path, item in orjson.loads(doc)["paths"].items():
            if "{" not in path and "get" in item:
                status, _, _ = await _get(app, path.rstrip("/") or "/")
                assert status == 200, path


async def test_conditional_get_stale_hash_and_content_types(app: ApiServer) -> None:
    _, _, body = await _get(app, "/openapi/v3")
    url = orjson.loads(body)["paths"]["apis/apps/v1"]["serverRelativeURL"]
    path, _, _ = url.partition("?")
    status, headers, body = await _get(app, path)
    etag = headers["etag"]
    assert status == 200 and "cache-control" not in headers
    for tag in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        status, headers, body = await _get(app, path, **{"if-none-match": tag})
        assert (status, body, headers["etag"]) == (304, b"", etag), tag
        assert "content-type" not in headers
    status, _, _ = await _get(app, path, **{"if-none-match": '"other"'})
    assert status == 200
    status, headers, _ = await _get(app, path + "?hash=ABC")
    assert status == 301 and headers["location"] == url
    status, headers, _ = await _get(app, path, accept="application/json")
    assert status == 200 and headers["content-type"] == "application/json"
    status, _, _ = await _get(app, path, accept="text/html")
    assert status == 406
    # the index: its own ETag and 304
    _, headers, _ = await _get(app, "/openapi/v3")
    status, _, body = await _get(app, "/openapi/v3", **{"if-none-match": headers["etag"]})
    assert (status, body) == (304, b"")


def test_int_or_string_unfolds_as_kube_structural_unfold() -> None:
    """An int-or-string node spelling the pattern already is left alone; one with an
    ``anyOf`` of its own gets the pattern in front of its ``allOf``; one without any gets
    it as ``anyOf`` (kube's ``Structural.Unfold``, as its CRD builder tests show)."""
    pattern = [{"type": "integer"}, {"type": "string"}]
    cases = [
        ({"anyOf": pattern}, {"anyOf": pattern}),
        ({"allOf": [{"anyOf": pattern}, {"minimum": 1}]}, None),
        ({"anyOf": [{"minimum": 42}]}, {"anyOf": [{"minimum": 42}], "allOf": [{"anyOf": pattern}]}),
        (
            {"anyOf": [{"minimum": 42}], "allOf": [{"minimum": 42}]},
            {"anyOf": [{"minimum": 42}], "allOf": [{"anyOf": pattern}, {"minimum": 42}]},
        ),
        ({}, {"anyOf": pattern}),
    ]
    for given, expected in cases:
        node = {"x-kubernetes-int-or-string": True, **given}
        out = openapi_crd.structural(node)
        assert out == {"x-kubernetes-int-or-string": True, **(expected or given)}
