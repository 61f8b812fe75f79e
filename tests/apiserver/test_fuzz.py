"""Hypothesis-driven fuzzing of the API server's REST surface, in process over ASGI.

Requests are built from random methods, paths assembled from valid and invalid
segments (real groups, versions, resources, namespaces, names, subresources, junk and
percent-encoded text), random query parameters, bodies that are valid objects, random
JSON, YAML or garbage, and random content types and Accept headers. The ASGI app is
called directly (no socket), so a few hundred requests run in seconds.

Invariants, for every request:

- never a 5xx;
- exactly one ``http.response.start``, and a body whose length matches
  ``content-length`` when one is given;
- an error (4xx) is a well-formed ``Status``: kind Status, apiVersion v1, status
  Failure, ``code`` equal to the HTTP status, a non-empty ``reason`` and a ``message``;
- a success is a JSON object (or, for a watch, newline-delimited JSON events of a
  known type, each carrying an object; for health checks, ``ok``);

and afterwards the server still answers health checks, lists and a create.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call

JSON = dict[str, Any]
DEMO_CRD = (
    Path(__file__).resolve().parents[2] / "src" / "kubewerk" / "cli" / "demo_data" / "crd.yaml"
)

PREFIXES = [
    "/api/v1",
    "/apis/demo.kubewerk.dev/v1",
    "/apis/demo.kubewerk.dev/v2",
    "/apis/apiextensions.k8s.io/v1",
    "/apis/coordination.k8s.io/v1",
    "/apis/events.k8s.io/v1",
    "/apis/nope.example.com/v1",
    "/apis",
    "/api",
    "/openapi/v3",
    "/openapi/v3/apis/demo.kubewerk.dev/v1",
    "",
    "/version",
    "/healthz",
    "/readyz",
]
SEGMENTS = [
    "namespaces",
    "default",
    "kube-system",
    "nope",
    "configmaps",
    "databases",
    "secrets",
    "events",
    "leases",
    "serviceaccounts",
    "customresourcedefinitions",
    "databases.demo.kubewerk.dev",
    "status",
    "scale",
    "finalize",
    "db1",
    "cm1",
    "fuzz",
    "..",
    ".",
    "",
    "%2F",
    "%00",
    "A_B",
    "x" * 300,
]
QUERY_KEYS = [
    "watch",
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "dryRun",
    "fieldValidation",
    "propagationPolicy",
    "gracePeriodSeconds",
    "orphanDependents",
    "sendInitialEvents",
    "allowWatchBookmarks",
    "includeObject",
    "pretty",
    "force",
    "fieldManager",
]
QUERY_VALUES = [
    "true",
    "false",
    "1",
    "0",
    "-1",
    "10",
    "All",
    "Strict",
    "Warn",
    "Ignore",
    "Orphan",
    "Foreground",
    "Background",
    "NotOlderThan",
    "Exact",
    "a=b",
    "a in (b,c)",
    "!a",
    "metadata.name=db1",
    "metadata.namespace!=default",
    "spec.engine=postgres",
    "a b",
    "=",
    ",",
    "9999999999",
    "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhXHUwMDAwIn0",
    "Object",
    "None",
    "Metadata",
]
CONTENT_TYPES = [
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
    "",
    "application/json; charset=utf-8",
    "multipart/form-data",
    "*/*",
]
ACCEPTS = [
    "",
    "application/json",
    "*/*",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    "application/vnd.kubernetes.protobuf",
    "application/yaml",
    "text/html",
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
names = st.sampled_from(["db1", "cm1", "fuzz", "fuzz-2", "Bad_Name", "", "a" * 260]) | st.text(
    max_size=12
)
api_versions = st.sampled_from(
    [
        "v1",
        "demo.kubewerk.dev/v1",
        "demo.kubewerk.dev/v2",
        "apiextensions.k8s.io/v1",
        "coordination.k8s.io/v1",
        "",
        "nope/v1",
    ]
)
kinds = st.sampled_from(
    [
        "ConfigMap",
        "Database",
        "Secret",
        "Lease",
        "Namespace",
        "Event",
        "CustomResourceDefinition",
        "",
        "Nope",
    ]
)
objects = st.fixed_dictionaries(
    {
        "apiVersion": api_versions,
        "kind": kinds,
        "metadata": st.fixed_dictionaries(
            {"name": names},
            optional={
                "labels": st.dictionaries(
                    st.sampled_from(["a", "app", "b/c", "bad key"]),
                    st.sampled_from(["x", "", "y z"]),
                    max_size=2,
                ),
                "resourceVersion": st.sampled_from(["1", "5", "abc", ""]),
                "finalizers": st.lists(
                    st.sampled_from(["example.com/f", "bad finalizer"]), max_size=2
                ),
                "namespace": st.sampled_from(["default", "kube-system", "nope"]),
                "generateName": st.sampled_from(["gen-", "Bad_"]),
                "ownerReferences": st.just(
                    [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm1", "uid": "u"}]
                ),
            },
        ),
    },
    optional={
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "engine": st.sampled_from(["postgres", "mysql", 3]),
                "replicas": st.integers(-2, 10),
            },
        ),
        "data": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
        "status": json_values,
    },
)
json_patches = st.lists(
    st.fixed_dictionaries(
        {
            "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bogus"]),
            "path": st.sampled_from(
                [
                    "/metadata/labels/a",
                    "/spec/engine",
                    "/spec",
                    "/metadata",
                    "",
                    "/",
                    "/x/y/z",
                    "/metadata/finalizers/-",
                    "/spec/replicas",
                ]
            ),
        },
        optional={
            "value": json_values,
            "from": st.sampled_from(["/spec", "/metadata/name", "/nope"]),
        },
    ),
    max_size=3,
)


RESOURCES = {
    "/api/v1": ["configmaps", "secrets", "events", "serviceaccounts", "namespaces", "pods"],
    "/apis/demo.kubewerk.dev/v1": ["databases", "widgets"],
    "/apis/coordination.k8s.io/v1": ["leases"],
    "/apis/events.k8s.io/v1": ["events"],
    "/apis/apiextensions.k8s.io/v1": ["customresourcedefinitions"],
}


@st.composite
def resource_paths(draw: st.DrawFn) -> str:
    """Well-shaped resource URLs: mostly real resources, objects and subresources."""
    prefix = draw(st.sampled_from(sorted(RESOURCES)))
    resource = draw(st.sampled_from(RESOURCES[prefix]))
    path = prefix
    if draw(st.booleans()):
        path += "/namespaces/" + draw(
            st.sampled_from(["default", "default", "kube-system", "nope", "after-fuzz"])
        )
    path += "/" + resource
    if draw(st.integers(0, 3)):
        path += "/" + draw(
            st.sampled_from(
                [
                    "db1",
                    "cm1",
                    "fuzz",
                    "fuzz-2",
                    "default",
                    "kube-public",
                    "databases.demo.kubewerk.dev",
                    "Bad_Name",
                    "nope",
                ]
            )
        )
        if draw(st.integers(0, 2)) == 0:
            path += "/" + draw(st.sampled_from(["status", "scale", "finalize", "nope"]))
    return path


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, str, dict[str, str], bytes]:
    method = draw(
        st.sampled_from(["GET", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "FOO"])
    )
    if draw(st.integers(0, 2)):
        path = draw(resource_paths())
    else:
        prefix = draw(st.sampled_from(PREFIXES))
        segs = draw(
            st.lists(
                st.sampled_from(SEGMENTS) | st.text(max_size=8).map(lambda t: quote(t, safe="")),
                max_size=6,
            )
        )
        path = prefix + "".join("/" + s for s in segs) + draw(st.sampled_from(["", "", "/"]))
    params = draw(
        st.dictionaries(
            st.sampled_from(QUERY_KEYS),
            st.sampled_from(QUERY_VALUES) | st.text(max_size=10),
            max_size=4,
        )
    )
    if params.get("watch") in ("true", "1"):
        params.setdefault("timeoutSeconds", "1")
    query = urlencode(params)
    kind = draw(st.sampled_from(["none", "object", "object", "json", "patch", "yaml", "garbage"]))
    if draw(st.integers(0, 2)):  # mostly the content type that fits the body and the verb
        fitting = {"patch": "application/json-patch+json", "yaml": "application/yaml"}.get(
            kind, "application/json"
        )
        if method == "PATCH" and kind in ("object", "json"):
            fitting = draw(
                st.sampled_from(
                    ["application/merge-patch+json", "application/strategic-merge-patch+json"]
                )
            )
        ctype = fitting
    else:
        ctype = draw(st.sampled_from(CONTENT_TYPES) | st.text(max_size=15))
    body: bytes
    if kind == "none":
        body = b""
    elif kind == "object":
        body = orjson.dumps(draw(objects))
    elif kind == "json":
        body = orjson.dumps(draw(json_values))
    elif kind == "patch":
        body = orjson.dumps(draw(json_patches))
    elif kind == "yaml":
        body = yaml.safe_dump(draw(objects)).encode()
    elif kind == "garbage":
        body = draw(
            st.binary(max_size=64)
            | st.sampled_from(
                [
                    b'{"apiVersion": "v1", "kind": "ConfigMap", '
                    b'"metadata": {"name": "big"}, "data": {"a": 1e999}}',
                    b'{"apiVersion": "v1", "kind": "ConfigMap", '
                    b'"metadata": {"name": 123456789012345678901234567890}}',
                    b'{"a": ' * 200 + b"1" + b"}" * 200,
                    b"[" * 5000,
                    rb'{"metadata": {"name": "\ud800"}}',
                ]
            )
        )
    else:
        raise AssertionError(kind)
    headers = {"content-type": ctype, "accept": draw(st.sampled_from(ACCEPTS))}
    return method, path, query, headers, body


class Client:
    """Calls the ASGI app directly and records what it sent."""

    def __init__(self, app: ApiServer, loop: asyncio.AbstractEventLoop) -> None:
        self.app = app
        self.loop = loop

    def call(
        self,
        method: str,
        path: str,
        query: str = "",
        headers: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> tuple[int, dict[str, str], bytes]:
        return self.loop.run_until_complete(
            asyncio.wait_for(self._call(method, path, query, headers or {}, body), 20)
        )

    async def _call(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        status, resp_headers, payload = await asgi_call(
            self.app, method, path, query, headers, body
        )
        return status, dict(resp_headers), payload


def _too_large_resource_version(status: int, payload: bytes) -> bool:
    """kube's 504 for a read at a revision not reached yet (the cacher's answer): a 5xx
    that is the specified answer, not a failure."""
    if status != 504:
        return False
    body = orjson.loads(payload)
    causes = body.get("details", {}).get("causes", [])
    return body.get("reason") == "Timeout" and [c.get("reason") for c in causes] == [
        "ResourceVersionTooLarge"
    ]


def check_response(status: int, headers: dict[str, str], payload: bytes) -> None:
    assert status < 500 or _too_large_resource_version(status, payload), payload[:500]
    ctype = headers.get("content-type", "")
    if status >= 400:
        assert ctype.startswith("application/json"), (status, ctype)
        body = orjson.loads(payload)
        assert body["kind"] == "Status" and body["apiVersion"] == "v1", body
        assert body["status"] == "Failure" and body["code"] == status, body
        assert isinstance(body["reason"], str) and body["reason"], body
        assert isinstance(body["message"], str), body
        assert isinstance(body.get("details", {}), dict), body
        return
    assert status in (200, 201, 202), status
    if ctype.startswith("text/plain"):
        assert payload == b"ok"
        return
    assert ctype.startswith("application/json"), ctype
    if "content-length" not in headers:  # a watch stream
        for line in payload.splitlines():
            event = orjson.loads(line)
            assert event["type"] in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"), event
            assert isinstance(event["object"], dict), event
        return
    body = orjson.loads(payload)
    assert isinstance(body, dict), body
    if "items" in body:
        assert isinstance(body["items"], list) and isinstance(body.get("metadata"), dict)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    loop = asyncio.new_event_loop()
    app = ApiServer(open_store("memory"), bookmark_interval=0.2)
    c = Client(app, loop)
    crd = yaml.safe_load(DEMO_CRD.read_text())
    status, _, body = c.call(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "",
        {"content-type": "application/json"},
        orjson.dumps(crd),
    )
    assert status == 201, body
    for _ in range(200):
        if c.call("GET", "/apis/demo.kubewerk.dev/v1")[0] == 200:
            break
        loop.run_until_complete(asyncio.sleep(0.01))
    seeds = [
        (
            "/apis/demo.kubewerk.dev/v1/namespaces/default/databases",
            {
                "apiVersion": "demo.kubewerk.dev/v1",
                "kind": "Database",
                "metadata": {"name": "db1", "labels": {"a": "x"}},
                "spec": {"engine": "postgres"},
            },
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm1"},
                "data": {"k": "v"},
            },
        ),
    ]
    for path, obj in seeds:
        status, _, body = c.call(
            "POST", path, "", {"content-type": "application/json"}, orjson.dumps(obj)
        )
        assert status == 201, body
    try:
        yield c
    finally:
        loop.run_until_complete(app.stop())
        app.store.close()
        loop.close()


# KUBEWERK_FUZZ_EXAMPLES=20000 for a deeper run by hand; the default keeps the suite fast
@settings(
    max_examples=int(os.environ.get("KUBEWERK_FUZZ_EXAMPLES", "400")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(req=requests())
def test_rest_surface_never_fails_badly(
    client: Client, req: tuple[str, str, str, dict[str, str], bytes]
) -> None:
    method, path, query, headers, body = req
    status, resp_headers, payload = client.call(method, path, query, headers, body)
    event(
        f"{method if method in ('GET', 'POST', 'PUT', 'PATCH', 'DELETE') else 'other'} -> {status}"
    )
    check_response(status, resp_headers, payload)


def test_server_healthy_after_fuzzing(client: Client) -> None:
    # runs after the fuzz test in file order: the same server still does its job
    assert client.call("GET", "/healthz")[0] == 200
    status, _, payload = client.call("GET", "/api/v1/namespaces")
    assert status == 200 and orjson.loads(payload)["kind"] == "NamespaceList"
    status, _, payload = client.call(
        "POST",
        "/api/v1/namespaces",
        "",
        {"content-type": "application/json"},
        orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "after-fuzz"}}),
    )
    assert status == 201, payload
    status, _, payload = client.call(
        "POST",
        "/api/v1/namespaces/after-fuzz/configmaps",
        "",
        {"content-type": "application/json"},
        orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok"}}),
    )
    assert status == 201, payload
    status, _, payload = client.call("GET", "/api/v1/namespaces/after-fuzz/configmaps/ok")
    assert status == 200 and orjson.loads(payload)["metadata"]["name"] == "ok"
