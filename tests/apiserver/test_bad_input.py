"""Bad input to the embedded API server: always the right 4xx with a ``Status`` body.

Each case names the status code and reason kube-apiserver answers with; where the
message is fixed text in the Kubernetes source (not a Go parser's wording), it is
checked exactly:

- 413 ``Request entity too large: limit is 3145728`` (handlers/rest.go limitedReadBody);
- 409 Conflict / AlreadyExists and 404 NotFound (apimachinery api/errors);
- 400 ``the API version in the data (...) does not match the expected API version (...)``
  (handlers/create.go);
- 422 ``kind: Invalid value: "...": must be Database`` for a custom resource
  (apiextensions customResourceValidator.ValidateTypeMeta);
- 422 for names that are not RFC 1123 subdomains (custom resources use
  NameIsDNSSubdomain, as ConfigMaps do);
- 400 ``field label not supported: X`` for custom resources and kinds with their own
  field label conversion (Secret, Event, Namespace) and ``"X" is not a known field
  selector: only "metadata.name", "metadata.namespace"`` for the other built-in kinds
  (runtime.DefaultMetaV1FieldSelectorConversion);
- label selector syntax errors as labels.Parse words them (no extra prefix);
- JSON patch ``test`` failures: 422 ``the server rejected our request due to an error in
  our request`` is what a failed test op gives on kube-apiserver.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer

JSON = dict[str, Any]
GV = "demo.kubewerk.dev/v1"
DBS = f"/apis/{GV}/namespaces/default/databases"
CMS = "/api/v1/namespaces/default/configmaps"
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


class Api:
    """An aiohttp session on a server with the Database CRD, ``db1`` and ``cm1``."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        data: bytes | None = None,
        ctype: str = "application/json",
        params: dict[str, str] | None = None,
    ) -> tuple[int, JSON]:
        if body is not None:
            data = orjson.dumps(body)
        headers = {"content-type": ctype} if data is not None else {}
        async with self.session.request(
            method, path, data=data, headers=headers, params=params
        ) as resp:
            raw = await resp.read()
            assert resp.content_type == "application/json", (resp.status, raw[:200])
            return resp.status, orjson.loads(raw)

    async def fails(
        self,
        method: str,
        path: str,
        code: int,
        reason: str,
        message: str | None = None,
        *,
        contains: str | None = None,
        **kw: Any,
    ) -> JSON:
        status, body = await self.call(method, path, **kw)
        assert status == code, (status, body)
        assert body["kind"] == "Status" and body["apiVersion"] == "v1", body
        assert body["status"] == "Failure" and body["code"] == code and body["reason"] == reason, (
            body
        )
        assert isinstance(body["message"], str) and body["message"], body
        if message is not None:
            assert body["message"] == message
        if contains is not None:
            assert contains in body["message"], body["message"]
        return body


def database(name: str = "db2", **spec: Any) -> JSON:
    return {
        "apiVersion": GV,
        "kind": "Database",
        "metadata": {"name": name},
        "spec": {"engine": "postgres", **spec},
    }


@pytest.fixture
async def api(aserver: EmbeddedServer, demo_dir: Path) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession(aserver.url) as session:
        client = Api(session)
        crd = yaml.safe_load((demo_dir / "crd.yaml").read_text())
        status, body = await client.call(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd
        )
        assert status == 201, body
        for _ in range(300):
            async with session.get(f"/apis/{GV}") as resp:
                if resp.status == 200:
                    break
            await asyncio.sleep(0.01)
        status, body = await client.call("POST", DBS, body=database("db1"))
        assert status == 201, body
        status, body = await client.call(
            "POST",
            CMS,
            body={
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm1"},
                "data": {"a": "1"},
            },
        )
        assert status == 201, body
        yield client


# -- bodies ------------------------------------------------------------------------------


async def test_malformed_json(api: Api) -> None:
    for raw in [b"{bad", b'{"apiVersion": ', b"not json at all", b"\xff\xfe\x00"]:
        await api.fails("POST", DBS, 400, "BadRequest", data=raw)
        await api.fails("PUT", f"{DBS}/db1", 400, "BadRequest", data=raw)
        await api.fails("POST", CMS, 400, "BadRequest", data=raw)


async def test_json_that_is_not_an_object(api: Api) -> None:
    for raw in (b"[1, 2]", b'"a string"', b"42", b"null", b"true"):
        await api.fails("POST", DBS, 400, "BadRequest", data=raw)
        await api.fails("PUT", f"{DBS}/db1", 400, "BadRequest", data=raw)


async def test_malformed_yaml(api: Api) -> None:
    for raw in (b"a: [b", b"key: value: other", b"- just\n- a list\n", b"\t tab: indent"):
        await api.fails("POST", DBS, 400, "BadRequest", data=raw, ctype="application/yaml")


async def test_yaml_body_is_accepted(api: Api) -> None:
    text = yaml.safe_dump(database("from-yaml")).encode()
    status, body = await api.call("POST", DBS, data=text, ctype="application/yaml")
    assert status == 201, body


async def test_empty_body(api: Api) -> None:
    await api.fails("POST", DBS, 400, "BadRequest", data=b"")
    await api.fails("PUT", f"{DBS}/db1", 400, "BadRequest", data=b"  ")


async def test_oversized_body(api: Api) -> None:
    big = database("big")
    big["metadata"]["annotations"] = {"x": "y" * (3 * 1024 * 1024)}
    for method, path in (("POST", DBS), ("PUT", f"{DBS}/db1"), ("POST", CMS)):
        await api.fails(
            method,
            path,
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
            body=big,
        )
    # a JSON patch of the same size, and one sent without a content-length (chunked)
    await api.fails(
        "PATCH",
        f"{DBS}/db1",
        413,
        "RequestEntityTooLarge",
        body=[{"op": "add", "path": "/x", "value": "y" * (4 << 20)}],
        ctype="application/json-patch+json",
    )

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b" " * (1 << 20)

    async with api.session.post(
        DBS, data=chunks(), headers={"content-type": "application/json"}
    ) as resp:
        assert resp.status == 413
        assert (await resp.json())["reason"] == "RequestEntityTooLarge"


async def test_protobuf_body(api: Api) -> None:
    # built-in kinds decode (tests/apiserver/test_protobuf.py): an envelope with no object
    # is a ConfigMap without a name; a truncated one is a 400 worded as kube-apiserver's
    proto = "application/vnd.kubernetes.protobuf"
    await api.fails(
        "POST",
        CMS,
        422,
        "Invalid",
        data=b"k8s\x00\n\x0f\n\x02v1\x12\tConfigMap",
        ctype=proto,
        contains="metadata.name: Required value",
    )
    await api.fails(
        "POST",
        CMS,
        400,
        "BadRequest",
        data=b"k8s\x00\n\x0f\n\x02v1",
        ctype=proto,
        message="the object provided is unrecognized (must be of type ConfigMap): unexpected EOF "
        "(6b3873000a0f0a027631)",
    )
    # custom resources accept JSON and YAML only
    body = await api.fails(
        "POST",
        DBS,
        415,
        "UnsupportedMediaType",
        ctype=proto,
        data=b"k8s\x00\n\x1b\n\x14demo.kubewerk.dev/v1\x12\x08Database",
    )
    assert body["message"].startswith(
        "the body of the request was in an unknown format - accepted media types "
        "include: application/json, application/yaml"
    )


async def test_unsupported_content_type(api: Api) -> None:
    for ctype in ("text/html", "application/xml", "application/cbor", "image/png"):
        await api.fails(
            "POST", DBS, 415, "UnsupportedMediaType", data=orjson.dumps(database()), ctype=ctype
        )


# -- identity: apiVersion, kind, names --------------------------------------------------


async def test_wrong_api_version(api: Api) -> None:
    body = database()
    body["apiVersion"] = "demo.kubewerk.dev/v9"
    await api.fails(
        "POST",
        DBS,
        400,
        "BadRequest",
        "the API version in the data (demo.kubewerk.dev/v9) does not match the expected "
        "API version (demo.kubewerk.dev/v1)",
        body=body,
    )
    body["apiVersion"] = "v1"
    await api.fails(
        "POST",
        DBS,
        400,
        "BadRequest",
        "the API version in the data (v1) does not match the expected API version "
        "(demo.kubewerk.dev/v1)",
        body=body,
    )


async def test_wrong_kind_for_custom_resource(api: Api) -> None:
    body = database("db3")
    body["kind"] = "Table"
    err = await api.fails(
        "POST",
        DBS,
        422,
        "Invalid",
        'Database.demo.kubewerk.dev "db3" is invalid: '
        'kind: Invalid value: "Table": must be Database',
        body=body,
    )
    assert err["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "Table": must be Database',
            "field": "kind",
        }
    ]


async def test_missing_kind_for_custom_resource(api: Api) -> None:
    body = database("db3")
    del body["kind"]
    await api.fails("POST", DBS, 400, "BadRequest", contains="Object 'Kind' is missing", body=body)


async def test_invalid_custom_resource_names(api: Api) -> None:
    for name in ("Bad_Name", "UPPER", "-lead", "trail-", "a" * 254, "dots..dots", "sp ace"):
        err = await api.fails("POST", DBS, 422, "Invalid", body=database(name))
        causes = err["details"]["causes"]
        assert causes and all(c["field"] == "metadata.name" for c in causes), causes
        if len(name) < 254:
            assert err["message"] == (
                f'Database.demo.kubewerk.dev "{name}" is invalid: '
                f'metadata.name: Invalid value: "{name}": {SUBDOMAIN_MSG}'
            )
        else:
            assert "must be no more than 253 " in err["message"]


async def test_invalid_configmap_name_of_300_chars(api: Api) -> None:
    name = "a" * 300
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    err = await api.fails("POST", CMS, 422, "Invalid", body=cm)
    assert err["message"].startswith(
        f'ConfigMap "{name}" is invalid: metadata.name: Invalid value: "{name}": '
    )
    assert "must be no more than 253 " in err["message"]


async def test_name_mismatch_and_missing_name(api: Api) -> None:
    await api.fails(
        "PUT",
        f"{DBS}/db1",
        400,
        "BadRequest",
        "the name of the object (other) does not match the name on the URL (db1)",
        body=database("other"),
    )
    body = database()
    del body["metadata"]["name"]
    err = await api.fails("POST", DBS, 422, "Invalid", body=body)
    assert err["details"]["causes"][0]["field"] == "metadata.name"


async def test_namespace_mismatch(api: Api) -> None:
    body = database("db4")
    body["metadata"]["namespace"] = "kube-system"
    await api.fails(
        "POST",
        DBS,
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
        body=body,
    )


async def test_metadata_of_the_wrong_type(api: Api) -> None:
    for meta in ("a string", [1, 2], 42):
        body = database()
        body["metadata"] = meta
        status, out = await api.call("POST", DBS, body=body)
        assert status in (400, 422), (meta, status, out)
        assert out["kind"] == "Status"


async def test_labels_of_the_wrong_type(api: Api) -> None:
    for labels in ("x", [1], {"a": 1}, {"bad key!": "v"}, {"k": "bad value!"}):
        body = database("db5")
        body["metadata"]["labels"] = labels
        status, out = await api.call("POST", DBS, body=body)
        assert status in (400, 422), (labels, status, out)
        assert out["kind"] == "Status"


# -- unknown resources -----------------------------------------------------------------


UNKNOWN_PATHS = (
    "/apis/nope.example.com",
    "/apis/demo.kubewerk.dev/v9",
    "/api/v2/pods",
    "/api/v1/namespaces/default/configmaps/cm1/nosuchsub",
    "/apis/demo.kubewerk.dev/v1/namespaces/default/databases/db1/status/extra/segments",
    "/nothing/here",
    "/openapi/v3/apis/nope.example.com/v1",
)
"""Paths that name no resource: the Go mux's bare 404."""

UNSERVED_RESOURCES = (
    ("/apis/demo.kubewerk.dev/v1/namespaces/default/widgets", "widgets.demo.kubewerk.dev/v1"),
    ("/apis/demo.kubewerk.dev/v2/namespaces/default/databases", "databases.demo.kubewerk.dev/v2"),
    ("/apis/nope.example.com/v1/things", "things.nope.example.com/v1"),
    ("/apis/apps/v2/namespaces/default/deployments", "deployments.apps/v2"),
    ("/api/v1/widgets", "widgets/v1"),
)
"""Resources the server does not serve: the mux's text, then what is not served."""


async def test_unknown_paths(api: Api) -> None:
    for path in UNKNOWN_PATHS:
        await api.fails(
            "GET", path, 404, "NotFound", "the server could not find the requested resource"
        )
    for path, what in UNSERVED_RESOURCES:
        await api.fails(
            "GET",
            path,
            404,
            "NotFound",
            f"the server could not find the requested resource: {what} is not served by kubewerk",
        )


async def test_missing_objects(api: Api) -> None:
    await api.fails(
        "GET", f"{DBS}/nope", 404, "NotFound", 'databases.demo.kubewerk.dev "nope" not found'
    )
    await api.fails("GET", f"{CMS}/nope", 404, "NotFound", 'configmaps "nope" not found')
    await api.fails("DELETE", f"{CMS}/nope", 404, "NotFound", 'configmaps "nope" not found')
    await api.fails(
        "PATCH",
        f"{DBS}/nope",
        404,
        "NotFound",
        'databases.demo.kubewerk.dev "nope" not found',
        body={"spec": {}},
        ctype="application/merge-patch+json",
    )
    await api.fails(
        "GET",
        "/api/v1/namespaces/nope/configmaps/cm1",
        404,
        "NotFound",
        'configmaps "cm1" not found',
    )
    await api.fails(
        "POST",
        "/api/v1/namespaces/nope/configmaps",
        404,
        "NotFound",
        'namespaces "nope" not found',
        body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
    )


async def test_already_exists_and_stale(api: Api) -> None:
    await api.fails(
        "POST",
        DBS,
        409,
        "AlreadyExists",
        'databases.demo.kubewerk.dev "db1" already exists',
        body=database("db1"),
    )
    _, current = await api.call("GET", f"{DBS}/db1")
    stale = dict(current, metadata={**current["metadata"], "resourceVersion": "1"})
    await api.fails(
        "PUT",
        f"{DBS}/db1",
        409,
        "Conflict",
        'Operation cannot be fulfilled on databases.demo.kubewerk.dev "db1": the object has been '
        "modified; please apply your changes to the latest version and try again",
        body=stale,
    )


async def test_method_not_allowed(api: Api) -> None:
    await api.fails("POST", f"{DBS}/db1", 405, "MethodNotAllowed", body=database("db1"))
    await api.fails("PUT", DBS, 405, "MethodNotAllowed", body=database("db1"))
    await api.fails(
        "PATCH", DBS, 405, "MethodNotAllowed", body={}, ctype="application/merge-patch+json"
    )


# -- selectors and query parameters ----------------------------------------------------


BAD_LABEL_SELECTORS = (
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a,", "found '', expected: identifier after ','"),
    ("=x", "found '=', expected: !, identifier, or 'end of string'"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),  # sic: no comma in Go
)


async def test_bad_label_selectors(api: Api) -> None:
    for selector, message in BAD_LABEL_SELECTORS:
        await api.fails("GET", DBS, 400, "BadRequest", message, params={"labelSelector": selector})
        await api.fails("GET", CMS, 400, "BadRequest", message, params={"labelSelector": selector})


async def test_bad_field_selectors(api: Api) -> None:
    for selector in ("a=b=c", "=x", "a", "a!b", "metadata.name==a==b"):
        await api.fails("GET", DBS, 400, "BadRequest", params={"fieldSelector": selector})
        await api.fails(
            "GET", DBS, 400, "BadRequest", params={"fieldSelector": selector, "watch": "true"}
        )


async def test_unsupported_field_selector_fields(api: Api) -> None:
    await api.fails(
        "GET",
        DBS,
        400,
        "BadRequest",
        "field label not supported: spec.engine",
        params={"fieldSelector": "spec.engine=postgres"},
    )
    await api.fails(
        "GET",
        CMS,
        400,
        "BadRequest",
        '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"',
        params={"fieldSelector": "data.a=1"},
    )
    await api.fails(
        "GET",
        "/api/v1/namespaces/default/secrets",
        400,
        "BadRequest",
        "field label not supported: data.a",
        params={"fieldSelector": "data.a=1"},
    )
    await api.fails(
        "GET",
        "/api/v1/namespaces/default/events",
        400,
        "BadRequest",
        "field label not supported: spec.x",
        params={"fieldSelector": "spec.x=1"},
    )
    # watches reject them the same way
    await api.fails(
        "GET",
        DBS,
        400,
        "BadRequest",
        "field label not supported: spec.engine",
        params={"fieldSelector": "spec.engine=postgres", "watch": "true"},
    )


async def test_bad_continue_tokens(api: Api) -> None:
    # garbage, not base64 JSON, rv -1, {}, null
    for token in ("!!!", "abc", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTF9", "e30", "bnVsbA"):
        err = await api.fails(
            "GET", DBS, 400, "BadRequest", params={"limit": "1", "continue": token}
        )
        assert "continue" in err["message"]


async def test_continue_with_resource_version(api: Api) -> None:
    status, page = await api.call("GET", "/api/v1/namespaces", params={"limit": "1"})
    assert status == 200 and page["metadata"].get("continue"), page
    await api.fails(
        "GET",
        "/api/v1/namespaces",
        400,
        "BadRequest",
        "specifying resource version is not allowed when using continue",
        params={"limit": "1", "continue": page["metadata"]["continue"], "resourceVersion": "5"},
    )


async def test_bad_resource_version_params(api: Api) -> None:
    for rv in ("abc", "-", "1.5", "0x10", " "):
        await api.fails("GET", DBS, 400, "BadRequest", params={"resourceVersion": rv})
        await api.fails("GET", f"{DBS}/db1", 400, "BadRequest", params={"resourceVersion": rv})
        await api.fails(
            "GET",
            DBS,
            400,
            "BadRequest",
            params={"resourceVersion": rv, "watch": "true", "timeoutSeconds": "1"},
        )


async def test_bad_resource_version_match(api: Api) -> None:
    err = await api.fails("GET", DBS, 422, "Invalid", params={"resourceVersionMatch": "Exact"})
    assert err["details"]["causes"][0]["field"] == "resourceVersionMatch"
    err = await api.fails(
        "GET",
        DBS,
        422,
        "Invalid",
        params={"resourceVersion": "1", "resourceVersionMatch": "Sometimes"},
    )
    assert err["details"]["causes"][0]["field"] == "resourceVersionMatch"


async def test_bad_limit_and_timeout(api: Api) -> None:
    await api.fails("GET", DBS, 400, "BadRequest", params={"limit": "ten"})
    await api.fails(
        "GET", DBS, 400, "BadRequest", params={"watch": "true", "timeoutSeconds": "soon"}
    )


async def test_bad_dry_run_and_field_validation(api: Api) -> None:
    await api.fails("POST", DBS, 400, "BadRequest", body=database(), params={"dryRun": "Some"})
    await api.fails(
        "POST", DBS, 400, "BadRequest", body=database(), params={"fieldValidation": "Loose"}
    )


async def test_resource_version_too_large(api: Api) -> None:
    err = await api.fails("GET", DBS, 504, "Timeout", params={"resourceVersion": "999999999"})
    assert err["message"].startswith("Too large resource version: 999999999, current: ")


# -- patches ---------------------------------------------------------------------------


BAD_JSON_PATCHES = (
    [{"op": "frobnicate", "path": "/spec/engine", "value": "mysql"}],
    [{"op": "replace", "path": "/spec/nope/deeper", "value": 1}],
    [{"op": "remove", "path": "/spec/missing"}],
    [{"op": "add", "value": 1}],
    [{"path": "/spec/engine", "value": 1}],
    [{"op": "move", "from": "/spec/missing", "path": "/spec/x"}],
    ["not an op"],
    {"op": "replace"},
)


async def test_bad_json_patches(api: Api) -> None:
    for patch in BAD_JSON_PATCHES:
        status, body = await api.call(
            "PATCH", f"{DBS}/db1", body=patch, ctype="application/json-patch+json"
        )
        assert status in (400, 422), (patch, status, body)
        assert (
            body["kind"] == "Status"
            and body["code"] == status
            and body["reason"] in ("BadRequest", "Invalid")
        ), body


async def test_failed_test_op(api: Api) -> None:
    patch = [
        {"op": "test", "path": "/spec/engine", "value": "mysql"},
        {"op": "replace", "path": "/spec/engine", "value": "mysql"},
    ]
    status, body = await api.call(
        "PATCH", f"{DBS}/db1", body=patch, ctype="application/json-patch+json"
    )
    assert status == 422, body
    assert body["kind"] == "Status" and body["reason"] == "Invalid", body
    # NewGenericServerResponse(422, ...): the generic message, the library error is only logged
    assert body["message"] == "the server rejected our request due to an error in our request"
    _, current = await api.call("GET", f"{DBS}/db1")
    assert current["spec"]["engine"] == "postgres"


async def test_patches_to_the_wrong_type(api: Api) -> None:
    # merge patch whose body is not an object; patch that changes the kind; patch that
    # turns metadata into a string
    await api.fails(
        "PATCH", f"{DBS}/db1", 400, "BadRequest", body=[1, 2], ctype="application/merge-patch+json"
    )
    status, body = await api.call(
        "PATCH", f"{DBS}/db1", body={"kind": "Other"}, ctype="application/merge-patch+json"
    )
    assert status in (400, 422) and body["kind"] == "Status", body
    status, body = await api.call(
        "PATCH", f"{DBS}/db1", body={"metadata": "nope"}, ctype="application/merge-patch+json"
    )
    assert status in (400, 422) and body["kind"] == "Status", body
    status, body = await api.call(
        "PATCH",
        f"{DBS}/db1",
        body=[{"op": "replace", "path": "/metadata", "value": 7}],
        ctype="application/json-patch+json",
    )
    assert status in (400, 422) and body["kind"] == "Status", body
    status, body = await api.call(
        "PATCH",
        f"{DBS}/db1",
        body={"spec": {"replicas": "three"}},
        ctype="application/merge-patch+json",
    )
    assert status == 422 and body["reason"] == "Invalid", body


async def test_patch_media_types(api: Api) -> None:
    err = await api.fails(
        "PATCH",
        f"{DBS}/db1",
        415,
        "UnsupportedMediaType",
        body={"spec": {}},
        ctype="application/strategic-merge-patch+json",
    )
    assert "application/merge-patch+json" in err["message"]
    await api.fails(
        "PATCH",
        f"{DBS}/db1",
        415,
        "UnsupportedMediaType",
        body={"spec": {}},
        ctype="application/json",
    )
    await api.fails(
        "PATCH",
        f"{DBS}/db1",
        400,
        "BadRequest",
        data=b"{nope",
        ctype="application/merge-patch+json",
    )
    await api.fails(
        "PATCH", f"{DBS}/db1", 400, "BadRequest", data=b"", ctype="application/merge-patch+json"
    )


async def test_server_stays_healthy(api: Api) -> None:
    async with api.session.get("/healthz") as resp:
        assert resp.status == 200
    status, body = await api.call("GET", f"{DBS}/db1")
    assert status == 200 and body["metadata"]["name"] == "db1"


async def test_generate_name_collision_is_retried(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # RetryGenerateName (default on since Kubernetes 1.31): a taken generated name is
    # generated again instead of failing the create with 409 AlreadyExists
    from kubewerk.core import meta as metautil

    names = iter(["gen-aaaaa", "gen-aaaaa", "gen-bbbbb"])
    monkeypatch.setattr(metautil, "generate_name", lambda prefix: next(names))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}
    got = []
    for _ in range(2):
        status, body = await api.call("POST", CMS, body=cm)
        assert status == 201, body
        got.append(body["metadata"]["name"])
    assert got == ["gen-aaaaa", "gen-bbbbb"]
