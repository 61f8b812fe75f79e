"""``/openapi/v2``: the Swagger 2.0 document as JSON and as gnostic protobuf (what
client-go's ``OpenAPISchema`` reads), its ETag, and what the real kubectl does with it —
``explain --output=plaintext-openapiv2``, a CRD and one of its objects applied from one
file (refused the first time as a cluster refuses it, "ensure CRDs are installed first"),
and strategic-merge patches and repeated client-side applies of a Deployment."""

from __future__ import annotations

import re
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from kubewerk.apiserver import openapi, openapi_v2
from kubewerk.apiserver.builtins import builtin_types
from kubewerk.apiserver.registry import Registry
from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

PB = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    await client.install_demo_crd()
    try:
        yield client
    finally:
        await client.close()


# -- a minimal protobuf reader, independent of the encoder -------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data: bytes) -> list[tuple[int, Any]]:
    """(field number, value) pairs: varints as int, length-delimited as bytes."""
    out: list[tuple[int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value = struct.unpack("<d", data[pos : pos + 8])[0]
            pos += 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value = data[pos : pos + size]
            pos += size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.append((number, value))
    assert pos == len(data)
    return out


def first(data: bytes, number: int) -> Any:
    return next(v for n, v in fields(data) if n == number)


def named(data: bytes, number: int) -> dict[str, bytes]:
    """A repeated Named* field as {name: value bytes}."""
    out = {}
    for n, v in fields(data):
        if n == number:
            pair = dict(fields(v))
            out[pair[1].decode()] = pair.get(2, b"")
    return out


def resolved(doc: dict[str, Any], params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An operation's parameters with ``#/parameters/`` references looked up, as kubectl
    looks them up in the document's top-level ``parameters``."""
    out = []
    for param in params:
        ref = param.get("$ref")
        out.append(doc["parameters"][ref.removeprefix("#/parameters/")] if ref else param)
    return out


# -- the document ---------------------------------------------------------------------


async def test_json_document_has_builtins_and_custom_resources(api: Api) -> None:
    status, doc = await api.get("/openapi/v2")
    assert status == 200
    assert doc["swagger"] == "2.0"
    defs = doc["definitions"]
    pod = defs["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["properties"]["spec"]["$ref"] == "#/definitions/io.k8s.api.core.v1.PodSpec"
    assert "io.k8s.api.core.v1.Container" in defs
    db = defs["dev.kubewerk.demo.v1.Database"]
    assert db["x-kubernetes-group-version-kind"] == [
        {"group": "demo.kubewerk.dev", "kind": "Database", "version": "v1"}
    ]
    assert db["properties"]["metadata"]["$ref"].endswith("meta.v1.ObjectMeta")

    def no_v3_only(value: Any) -> None:
        if isinstance(value, dict):
            assert not {"nullable", "oneOf", "anyOf", "not"} & value.keys()
            for v in value.values():
                no_v3_only(v)
        elif isinstance(value, list):
            for v in value:
                no_v3_only(v)

    no_v3_only(db)
    replicas = db["properties"]["spec"]["properties"]["replicas"]
    assert replicas["type"] == "integer" and "default" not in replicas  # pruned, as kube does
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "kind": "Deployment",
        "version": "v1",
    }
    assert "fieldValidation" in [p["name"] for p in resolved(doc, patch["parameters"])]
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale" in doc["paths"]


async def test_protobuf_form_and_etag(aserver: EmbeddedServer) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(aserver.url + "/openapi/v2", headers={"Accept": PB}) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"] == openapi_v2.PROTOBUF_CONTENT_TYPE
            etag = resp.headers["ETag"]
            data = await resp.read()
        async with session.get(
            aserver.url + "/openapi/v2", headers={"Accept": PB, "If-None-Match": etag}
        ) as resp:
            assert resp.status == 304
        async with session.get(aserver.url + "/openapi/v2") as resp:
            assert resp.headers["Content-Type"] == "application/json"
            assert resp.headers["ETag"] == etag
    assert first(data, 1) == b"2.0"
    definitions = named(first(data, 9), 1)
    pod = definitions["io.k8s.api.core.v1.Pod"]
    props = named(first(pod, 25), 1)
    assert first(props["spec"], 1) == b"#/definitions/io.k8s.api.core.v1.PodSpec"
    extensions = named(pod, 31)
    gvk = first(extensions["x-kubernetes-group-version-kind"], 2)
    assert b'"kind":"Pod"' in gvk
    container = definitions["io.k8s.api.core.v1.Container"]
    assert first(first(container, 22), 1) == b"object"
    assert b"name" in [v for n, v in fields(container) if n == 19]
    paths = named(first(data, 8), 2)
    item = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    patch = first(item, 8)
    shared = named(first(data, 10), 1)  # Document.parameters: NamedParameter
    query_names = []
    for param in [v for n, v in fields(patch) if n == 8]:  # ParametersItem
        item_fields = dict(fields(param))
        if 2 in item_fields:  # a JsonReference, resolved as kubectl resolves it
            ref = first(item_fields[2], 1).decode()
            assert ref.startswith("#/parameters/")
            parameter = shared[ref.removeprefix("#/parameters/")]
        else:
            parameter = item_fields[1]
        for n, v in fields(parameter):
            if n == 2:  # non-body
                query = first(v, 3)
                query_names.append(first(query, 4).decode())
    assert "fieldValidation" in query_names


async def test_query_parameters_shared_as_kube_openapi_shares_them(api: Api) -> None:
    """Every query parameter (and ``namespace``) is published once at the top level
    (``<name>-<8 characters of a content hash>``) and named by reference, from operations
    and from paths (the parameters all a path's operations share); the protobuf form
    carries the same parameters and references as the JSON form."""
    _, doc = await api.get("/openapi/v2")
    shared = doc["parameters"]
    assert {p["name"] for p in shared.values()} == {*openapi.QUERY_PARAMETERS, "namespace"}
    for name, param in shared.items():
        assert re.fullmatch(re.escape(param["name"]) + r"-[A-Za-z0-9_-]{8}", name)
        assert param["in"] == ("path" if param["name"] == "namespace" else "query")
    refs = set()
    for item in doc["paths"].values():
        for param in item.get("parameters", []):
            if "$ref" in param:
                refs.add(param["$ref"])
            else:  # only the name, whose description names the kind, is inline
                assert (param["in"], param["name"]) == ("path", "name"), param
        for method, op in item.items():
            if method == "parameters":
                continue
            for param in op["parameters"]:
                if "$ref" in param:
                    refs.add(param["$ref"])
                else:
                    assert param["in"] == "body", param  # only a body parameter is inline
    assert refs == {"#/parameters/" + name for name in shared}

    async with (
        aiohttp.ClientSession() as session,
        session.get(api.base + "/openapi/v2", headers={"Accept": PB}) as resp,
    ):
        data = await resp.read()
    pb_shared = named(first(data, 10), 1)
    assert pb_shared.keys() == shared.keys()
    for name, param in shared.items():
        # NonBodyParameter.query_parameter_sub_schema (3), path_parameter_sub_schema (4)
        query = first(first(pb_shared[name], 2), 4 if param["in"] == "path" else 3)
        assert first(query, 4).decode() == param["name"]
        assert first(query, 3).decode() == param["description"]
    item = named(first(data, 8), 2)["/apis/demo.kubewerk.dev/v1/namespaces/{namespace}/databases"]
    post = first(item, 4)
    pb_params = [dict(fields(v)) for n, v in fields(post) if n == 8]
    json_params = doc["paths"]["/apis/demo.kubewerk.dev/v1/namespaces/{namespace}/databases"][
        "post"
    ]["parameters"]
    assert len(pb_params) == len(json_params)
    for pb, js in zip(pb_params, json_params, strict=True):
        if "$ref" in js:
            assert first(pb[2], 1).decode() == js["$ref"]
        else:
            assert first(first(pb[1], 1), 2) == b"body"  # Parameter.body_parameter.name


def test_v2_schema_prunes_keywords_not_properties() -> None:
    """``default``, ``nullable`` and the junctors go as schema keywords, at any depth;
    properties with those names stay, with their own schemas converted."""
    schema = {
        "type": "object",
        "default": {},
        "properties": {
            "default": {"type": "string", "default": "x"},
            "not": {"type": "integer", "oneOf": [{"minimum": 1}], "allOf": [{"maximum": 9}]},
            "list": {"type": "array", "items": {"type": "object", "default": {"a": 1}}},
            "map": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        },
    }
    assert openapi_v2._v2_schema(schema) == {
        "type": "object",
        "properties": {
            "default": {"type": "string"},
            "not": {"type": "integer"},
            "list": {"type": "array", "items": {"type": "object"}},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }


def test_v2_schema_converts_as_kube_to_structural_openapi_v2() -> None:
    """kube-apiserver's ``ToStructuralOpenAPIV2``, rule by rule: a nullable node loses its
    type, properties and items; a node keeping unknown fields loses its properties and
    items, and its type when an object; an array left without items loses its type;
    nullable properties leave ``required`` (all of it for a nullable
    ``additionalProperties``), an emptied list goes."""
    schema = {
        "type": "object",
        "required": ["a", "b", "c"],
        "properties": {
            "a": {"type": "object", "nullable": True, "properties": {"x": {"type": "string"}}},
            "b": {"type": "string"},
            "c": {
                "type": "array",
                "nullable": True,
                "description": "kept",
                "items": {"type": "string"},
            },
            "free": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"y": {"type": "string"}},
            },
            "anything": {
                "type": "array",
                "x-kubernetes-preserve-unknown-fields": True,
                "items": {"type": "string"},
            },
            "only": {
                "type": "object",
                "required": ["n"],
                "properties": {"n": {"type": "integer", "nullable": True}},
            },
            "amap": {
                "type": "object",
                "required": ["k"],
                "additionalProperties": {"type": "string", "nullable": True},
            },
        },
    }
    assert openapi_v2._v2_schema(schema) == {
        "type": "object",
        "required": ["b"],
        "properties": {
            "a": {},
            "b": {"type": "string"},
            "c": {"description": "kept"},
            "free": {"x-kubernetes-preserve-unknown-fields": True},  # object: type goes too
            "anything": {"x-kubernetes-preserve-unknown-fields": True},
            "only": {"type": "object", "properties": {"n": {}}},
            "amap": {"type": "object", "additionalProperties": {}},
        },
    }
    assert schema["properties"]["a"]["nullable"] is True  # the input is left alone


async def test_crd_keeping_unknown_fields_is_a_bare_object(api: Api) -> None:
    """A CRD whose root keeps unknown fields is published as kube-apiserver publishes it
    in v2: an object with its group-version-kind and nothing else."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "blobs", "singular": "blob", "kind": "Blob"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                            "properties": {"spec": {"type": "object"}},
                        }
                    },
                }
            ],
        },
    }
    status, body = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 201, body
    await api.wait_established("blobs.example.com")
    _, doc = await api.get("/openapi/v2")
    assert doc["definitions"]["com.example.v1.Blob"] == {
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": "example.com", "kind": "Blob", "version": "v1"}
        ],
    }


def _decoded_operation(data: bytes) -> dict[str, Any]:
    """An encoded ``Operation`` read back into the JSON shape it was encoded from (the
    fields ``_operation`` sets), with the test's own reader."""
    out: dict[str, Any] = {"parameters": [], "responses": {}}
    for number, value in fields(data):
        if number == 3:
            out["description"] = value.decode()
        elif number == 5:
            out["operationId"] = value.decode()
        elif number in (6, 7, 10):
            name = {6: "produces", 7: "consumes", 10: "schemes"}[number]
            out.setdefault(name, []).append(value.decode())
        elif number == 8:
            item = dict(fields(value))
            if 2 in item:
                out["parameters"].append({"$ref": first(item[2], 1).decode()})
            else:
                body = first(item[1], 1)
                schema = first(body, 5)
                out["parameters"].append(
                    {
                        "name": first(body, 2).decode(),
                        "in": first(body, 3).decode(),
                        "required": first(body, 4) == 1,
                        "schema": {"$ref": first(schema, 1).decode()},
                    }
                )
        elif number == 9:
            for code, response in named(value, 1).items():
                resp = first(response, 1)
                entry: dict[str, Any] = {"description": first(resp, 1).decode()}
                if any(n == 2 for n, _ in fields(resp)):
                    entry["schema"] = {"$ref": first(first(first(resp, 2), 1), 1).decode()}
                out["responses"][code] = entry
        elif number == 13:
            pair = dict(fields(value))
            out[pair[1].decode()] = orjson.loads(first(pair[2], 2))
    return out


def test_operation_encoding_with_repeated_values_is_exact() -> None:
    """Encoded operation fields are reused by their values' JSON text: a value met before
    gives the bytes a fresh encoding gives, and values that differ only in type (true, 1,
    1.0), key order or a character never share an encoding. Read back, each operation is
    the dict it was encoded from; the memo stays bounded."""
    long = "k" + "\u00e9" * 200  # lengths past one varint byte, non-ASCII
    ref = "#/definitions/" + long

    def op(
        action: str, ext: Any, responses: dict[str, Any], kind: str = "Widget"
    ) -> dict[str, Any]:
        return {
            "description": f"{action} {kind}",
            "consumes": ["*/*"] if action != "patch" else ["application/merge-patch+json"],
            "produces": ["application/json", "application/yaml"],
            "schemes": ["https"],
            "operationId": f"{action}{kind}",
            "parameters": [
                {"name": "body", "in": "body", "required": True, "schema": {"$ref": ref}},
                *(openapi_v2._PARAM_REFS[n] for n in ("dryRun", "fieldManager", "fieldValidation")),
            ],
            "responses": responses,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": ext,
        }

    ok = {"200": {"description": "OK", "schema": {"$ref": ref}}}
    swapped = {"200": {"schema": {"$ref": ref}, "description": "OK"}}
    cases = [
        op("post", {"group": "g", "kind": long, "version": "v1"}, ok, kind=long),
        op("patch", {"kind": long, "group": "g", "version": "v1"}, swapped, kind=long),
        op("put", {"x": True}, ok),
        op("put", {"x": 1}, ok),
        op("put", {"x": 1.0}, ok),
        op("put", {"x": "1"}, ok),
        op("get", {"group": "g\u0131", "kind": "W", "version": "v1"}, {"201": ok["200"]}),
    ]
    openapi_v2._FIELD_MEMO.clear()
    fresh = []
    for case in cases:
        openapi_v2._FIELD_MEMO.clear()
        fresh.append(openapi_v2._operation_pb(case))
    openapi_v2._FIELD_MEMO.clear()
    for _ in range(2):  # the second round is served from the memo
        assert [openapi_v2._operation_pb(case) for case in cases] == fresh
    assert len(set(fresh)) == len(fresh)
    for case, data in zip(cases, fresh, strict=True):
        decoded = _decoded_operation(data)
        assert decoded == case
        ext = decoded["x-kubernetes-group-version-kind"]
        assert [type(v) for v in ext.values()] == [
            type(v) for v in case["x-kubernetes-group-version-kind"].values()
        ]
    for i in range(openapi_v2._FIELD_MEMO_SIZE + 10):
        openapi_v2._operation_pb(op("get", {"i": i}, ok))
    assert len(openapi_v2._FIELD_MEMO) <= openapi_v2._FIELD_MEMO_SIZE


def test_accept_negotiation() -> None:
    assert openapi_v2.wants_protobuf(PB)
    assert openapi_v2.wants_protobuf(f"{PB}, application/json")
    assert not openapi_v2.wants_protobuf(f"application/json, {PB}")
    assert not openapi_v2.wants_protobuf(f"{PB};q=0.5, application/json")
    assert not openapi_v2.wants_protobuf("")
    assert not openapi_v2.wants_protobuf("*/*")


# -- with the real kubectl ------------------------------------------------------------------

CRD_AND_OBJECT = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3}
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default}
spec:
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
      - {name: a, image: "nginx:1.27", ports: [{containerPort: 80}]}
      - {name: b, image: "busybox:1.36"}
"""


def test_kubectl_with_openapi_v2(kubectl: Any, tmp_path: Path) -> None:
    v2 = kubectl("explain", "pods.spec.containers", "--output=plaintext-openapiv2").stdout
    assert v2.splitlines()[:2] == ["KIND:     Pod", "VERSION:  v1"], v2
    assert "RESOURCE: containers <[]Object>" in v2
    assert re.search(r"\bimage\s+<string>", v2)

    manifest = tmp_path / "widgets.yaml"
    manifest.write_text(CRD_AND_OBJECT)
    once = kubectl("apply", "-f", str(manifest), check=False)
    assert once.returncode != 0
    assert "could not find the requested resource" not in once.stderr, once.stderr
    assert "ensure CRDs are installed first" in once.stderr, once.stderr
    assert (
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created" in once.stdout
    )
    twice = kubectl("apply", "-f", str(manifest))
    assert "widget.example.com/w1 created" in twice.stdout
    explained = kubectl("explain", "widgets.spec", "--output=plaintext-openapiv2").stdout
    assert "KIND:     Widget" in explained and re.search(r"\bsize\s+<integer>", explained)


def test_kubectl_patch_and_apply_a_deployment(kubectl: Any, tmp_path: Path) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.27")
    kubectl(
        "patch",
        "deployment",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":'
        '[{"name":"nginx","image":"nginx:1.28"},{"name":"side","image":"busybox"}]}}}}',
    )
    path = "{range .spec.template.spec.containers[*]}{.name}={.image} {end}{.metadata.generation}"
    out = kubectl("get", "deployment", "web", "-o", f"jsonpath={path}").stdout
    assert out == "nginx=nginx:1.28 side=busybox 2"

    first_file = tmp_path / "d1.yaml"
    first_file.write_text(DEPLOYMENT)
    kubectl("apply", "-f", str(first_file))
    second = tmp_path / "d2.yaml"
    second.write_text(
        DEPLOYMENT.replace("nginx:1.27", "nginx:1.28").replace(
            '{name: b, image: "busybox:1.36"}', '{name: c, image: "redis:7"}'
        )
    )
    kubectl("apply", "-f", str(second))
    kubectl("apply", "-f", str(second))  # unchanged: no new generation
    path = "{range .spec.template.spec.containers[*]}{.name}={.image}:{.ports} {end}"
    out = kubectl("get", "deployment", "app", "-o", f"jsonpath={path}{{.metadata.generation}}")
    assert out.stdout == 'a=nginx:1.28:[{"containerPort":80,"protocol":"TCP"}] c=redis:7: 2'


async def test_one_kubernetes_version_everywhere(api: Api) -> None:
    """``/version``, and both OpenAPI documents, report one Kubernetes release (1.33: see
    ``discovery.KUBE_MINOR`` for why not the vendored definitions' 1.36)."""
    status, version = await api.get("/version")
    assert status == 200
    assert (version["major"], version["minor"]) == ("1", "33")
    assert (version["emulationMajor"], version["emulationMinor"]) == ("1", "33")
    assert (version["minCompatibilityMajor"], version["minCompatibilityMinor"]) == ("1", "32")
    assert version["gitVersion"].startswith("v1.33.0+kubewerk-")
    _, v2 = await api.get("/openapi/v2")
    _, v3 = await api.get("/openapi/v3/apis/apps/v1")
    assert v2["info"]["version"] == v3["info"]["version"] == "v1.33.0"


def test_v2_operations_are_the_v3_ones_with_path_parameters_in_protobuf() -> None:
    """Both documents publish the same operations (kube's operationIds, actions, kinds
    and parameters: /scale as autoscaling/v1 Scale), v2 naming shared parameters by
    reference; a path's own parameters (name, namespace, pretty) are in the protobuf
    form's PathItem.parameters (field 9) as in the JSON form."""
    registry = Registry()
    for rtype in builtin_types():
        registry.add(rtype)
    v2 = openapi_v2.document(registry)
    v3 = orjson.loads(openapi.encoded_document(registry, "apis/apps/v1") or b"")
    path = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"
    for method, op in v3["paths"][path].items():
        if method == "parameters":
            continue
        mine = v2["paths"][path][method]
        for key in ("operationId", "x-kubernetes-action", "x-kubernetes-group-version-kind"):
            assert mine[key] == op[key]
        assert mine["x-kubernetes-group-version-kind"]["kind"] == "Scale"
        names = [p["name"] for p in resolved(v2, mine["parameters"]) if p["in"] != "body"]
        assert names == [p["name"] for p in op.get("parameters", [])]
    item = v2["paths"][path]
    assert [p["name"] for p in resolved(v2, item["parameters"])] == ["name", "namespace", "pretty"]
    encoded = openapi_v2._path_entry(path, item)
    path_item = first(first(encoded, 2), 2)  # NamedPathItem.value
    items = [dict(fields(v)) for n, v in fields(path_item) if n == 9]
    assert len(items) == 3
    assert first(first(items[0][1], 2), 4)  # name: an inline path parameter
    assert [first(i[2], 1).decode() for i in items[1:]] == [
        p["$ref"] for p in item["parameters"][1:]
    ]
