"""Duplicate fields in request bodies follow ``fieldValidation`` as kube-apiserver's
strict decoder reports them (sigs.k8s.io/json; the bodies and expected texts follow
kubernetes' test/integration/apiserver/field_validation_test.go): Strict → 400 ``strict
decoding error`` listing duplicates and unknown fields in kube's order, Warn (the
default) → a ``Warning`` each and the last value kept, Ignore → the last value kept.

The cheap detection in ``decode.json_duplicates`` is checked against a full key-by-key
parse on hostile bodies."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver import decode
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import CRD_PATH, DEMO_CRD, asgi_call, configmap_name_policy, json_call

APPLY = "application/apply-patch+yaml"

# kube's invalidBodyJSON (field_validation_test.go), name filled in
DEPLOYMENT_BODY = b"""{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "dupename",
    "name": "web",
    "labels": {"app": "nginx"},
    "unknownMeta": "metaVal"
  },
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {
        "containers": [{
          "name": "nginx",
          "image": "nginx:latest",
          "unknownNested": "val1",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}"""

DEPLOYMENT_ERRORS = [
    'duplicate field "metadata.name"',
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    # a field both unknown and repeated is only unknown for a typed kind
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
]

# kube's crdInvalidBody, on the demo Database
DATABASE_BODY = b"""{
  "apiVersion": "demo.kubewerk.dev/v1",
  "kind": "Database",
  "metadata": {"name": "dupename", "name": "db", "unknownMeta": "metaVal"},
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "engine": "mysql",
    "engine": "postgres",
    "replicas": 1,
    "replicas": 2
  }
}"""

DATABASE_ERRORS = [
    # a custom resource: every duplicate (the body decodes into a map), then the
    # fields its schema prunes
    'duplicate field "metadata.name"',
    'duplicate field "spec.unknownDupe"',
    'duplicate field "spec.engine"',
    'duplicate field "spec.replicas"',
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
]


class Server:
    """One in-process server (the demo Database CRD served) on its own event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.app = ApiServer(open_store("memory"))
        crd = yaml.safe_load(DEMO_CRD.read_text())
        status, body = self.loop.run_until_complete(json_call(self.app, "POST", CRD_PATH, crd))
        assert status == 201, body
        for _ in range(500):
            if self.app.registry.get("demo.kubewerk.dev", "databases") is not None:
                break
            self.loop.run_until_complete(asyncio.sleep(0.005))
        else:
            raise AssertionError("the demo CRD was not served")
        self.namespaces = 0

    def namespace(self) -> str:
        self.namespaces += 1
        name = f"dup{self.namespaces}"
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        status, out = self.loop.run_until_complete(
            json_call(self.app, "POST", "/api/v1/namespaces", body)
        )
        assert status == 201, out
        return name

    def send(
        self,
        method: str,
        path: str,
        body: bytes,
        validation: str | None,
        content_type: str = "application/json",
        extra: str = "",
    ) -> tuple[int, Any, list[str]]:
        """Status, decoded answer and warning texts of one request (``extra``: more query)."""
        query = "" if validation is None else f"fieldValidation={validation}"
        if content_type == APPLY:
            query = "fieldManager=me" + (f"&{query}" if query else "")
        query += extra
        status, headers, payload = self.loop.run_until_complete(
            asgi_call(
                self.app, method, path, query, headers={"content-type": content_type}, body=body
            )
        )
        return status, orjson.loads(payload), warnings_of(headers)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = Server()
    try:
        yield srv
    finally:
        srv.loop.close()


@dataclass
class Paths:
    """The collections of a test's own namespace."""

    deployments: str
    configmaps: str
    databases: str


@pytest.fixture
def ns(server: Server) -> Paths:
    name = server.namespace()
    return Paths(
        f"/apis/apps/v1/namespaces/{name}/deployments",
        f"/api/v1/namespaces/{name}/configmaps",
        f"/apis/demo.kubewerk.dev/v1/namespaces/{name}/databases",
    )


def warnings_of(headers: list[tuple[str, str]]) -> list[str]:
    """The texts of the ``Warning: 299 - "text"`` headers, in order."""
    texts = []
    for name, value in headers:
        if name == "warning":
            assert value.startswith('299 - "') and value.endswith('"'), value
            texts.append(value[7:-1].replace('\\"', '"').replace("\\\\", "\\"))
    return texts


def strict_error(errors: list[str]) -> str:
    return "strict decoding error: " + ", ".join(errors)


@pytest.mark.parametrize("validation", ["Strict", "Warn", None, "Ignore"])
def test_create_and_update_of_a_built_in(server: Server, ns: Paths, validation: str | None) -> None:
    status, out, warnings = server.send("POST", ns.deployments, DEPLOYMENT_BODY, validation)
    if validation == "Strict":
        assert (status, out["message"], warnings) == (400, strict_error(DEPLOYMENT_ERRORS), [])
        return
    assert status == 201, out
    assert warnings == ([] if validation == "Ignore" else DEPLOYMENT_ERRORS)
    # the last value of each repeated field is kept
    assert out["metadata"]["name"] == "web"
    assert out["spec"]["paused"] is False
    assert out["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Never"
    # an update with the same body answers the same
    put = DEPLOYMENT_BODY.replace(b'"name": "web",', b'"name": "web", "resourceVersion": "%s",')
    put = put.replace(b"%s", out["metadata"]["resourceVersion"].encode())
    status, out, warnings = server.send("PUT", f"{ns.deployments}/web", put, validation)
    assert status == 200, out
    assert warnings == ([] if validation == "Ignore" else DEPLOYMENT_ERRORS)


def test_strict_update_of_a_built_in(
    server: Server,
    ns: Paths,
) -> None:
    clean = orjson.loads(DEPLOYMENT_BODY)
    status, out, _ = server.send("POST", ns.deployments, orjson.dumps(clean), "Ignore")
    assert status == 201, out
    status, out, warnings = server.send("PUT", f"{ns.deployments}/web", DEPLOYMENT_BODY, "Strict")
    assert (status, out["message"], warnings) == (400, strict_error(DEPLOYMENT_ERRORS), [])


@pytest.mark.parametrize("validation", ["Strict", "Warn", None, "Ignore"])
def test_create_and_update_of_a_custom_resource(
    server: Server, ns: Paths, validation: str | None
) -> None:
    status, out, warnings = server.send("POST", ns.databases, DATABASE_BODY, validation)
    if validation == "Strict":
        assert (status, out["message"], warnings) == (400, strict_error(DATABASE_ERRORS), [])
        return
    assert status == 201, out
    assert warnings == ([] if validation == "Ignore" else DATABASE_ERRORS)
    assert (out["metadata"]["name"], out["spec"]["engine"], out["spec"]["replicas"]) == (
        "db",
        "postgres",
        2,
    )
    rv = out["metadata"]["resourceVersion"].encode()
    put = DATABASE_BODY.replace(b'"db",', b'"db", "resourceVersion": "' + rv + b'",')
    status, out, warnings = server.send("PUT", f"{ns.databases}/db", put, validation)
    assert status == 200, out
    assert warnings == ([] if validation == "Ignore" else DATABASE_ERRORS)


def test_duplicates_alone_and_inside_lists_and_maps(
    server: Server,
    ns: Paths,
) -> None:
    body = (
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", '
        b'"labels": {"a": "1", "a": "2"}}, "data": {"k": "v", "k": "w"}}'
    )
    errors = ['duplicate field "metadata.labels.a"', 'duplicate field "data.k"']
    status, out, _ = server.send("POST", ns.configmaps, body, "Strict")
    assert (status, out["message"]) == (400, strict_error(errors))
    status, out, warnings = server.send("POST", ns.configmaps, body, None)
    assert (status, warnings, out["data"], out["metadata"]["labels"]) == (
        201,
        errors,
        {"k": "w"},
        {"a": "2"},
    )


MERGE_PATCH = b"""{
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "template": {"spec": {"containers": [{
      "name": "nginx", "image": "nginx:latest", "unknownNested": "val1",
      "imagePullPolicy": "Always", "imagePullPolicy": "Never"
    }]}},
    "aaa": 1
  }
}"""

JSON_PATCH = b"""[
  {"op": "add", "path": "/spec/unknown1", "value": "val1", "foo": "bar"},
  {"op": "add", "path": "/spec/unknown2", "path": "/spec/unknown3", "value": "val1"},
  {"op": "add", "path": "/spec/template/metadata/annotations",
   "value": {"x": "1", "x": "2"}, "foo": {"y": 1, "y": 2}},
  {"op": "add", "path": "/spec/aaa", "value": 1}
]"""


MERGE_ERRORS = [
    'duplicate field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    # the patched object's, decoded from a key-sorted text: in key order
    'unknown field "spec.aaa"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
]


@pytest.mark.parametrize(
    ("media", "patch", "errors"),
    [
        ("application/merge-patch+json", MERGE_PATCH, MERGE_ERRORS),
        ("application/strategic-merge-patch+json", MERGE_PATCH, MERGE_ERRORS),
        (
            "application/json-patch+json",
            JSON_PATCH,
            [
                'json patch unknown field "[0].foo"',
                'json patch duplicate field "[1].path"',
                'json patch duplicate field "[2].value.x"',
                'json patch unknown field "[2].foo"',
                'unknown field "spec.aaa"',
                'unknown field "spec.unknown1"',
                'unknown field "spec.unknown3"',
            ],
        ),
    ],
    ids=["merge", "strategic", "json"],
)
@pytest.mark.parametrize("validation", ["Strict", "Warn", "Ignore"])
def test_patch_bodies_of_a_built_in(
    server: Server, ns: Paths, media: str, patch: bytes, errors: list[str], validation: str
) -> None:
    clean = orjson.loads(DEPLOYMENT_BODY)
    status, out, _ = server.send("POST", ns.deployments, orjson.dumps(clean), "Ignore")
    assert status == 201, out
    status, out, warnings = server.send("PATCH", f"{ns.deployments}/web", patch, validation, media)
    if validation == "Strict":
        assert (status, out["message"], warnings) == (400, strict_error(errors), [])
        return
    assert (status, warnings) == (200, [] if validation == "Ignore" else errors), out


def test_patch_body_duplicates_of_a_custom_resource(
    server: Server,
    ns: Paths,
) -> None:
    status, out, _ = server.send("POST", ns.databases, DATABASE_BODY, "Ignore")
    assert status == 201, out
    patch = b'{"spec": {"replicas": 3, "replicas": 4, "bogus": 1}}'
    errors = ['duplicate field "spec.replicas"', 'unknown field "spec.bogus"']
    status, out, warnings = server.send(
        "PATCH", f"{ns.databases}/db", patch, "Strict", "application/merge-patch+json"
    )
    assert (status, out["message"]) == (400, strict_error(errors))
    status, out, warnings = server.send(
        "PATCH", f"{ns.databases}/db", patch, None, "application/merge-patch+json"
    )
    assert (status, warnings, out["spec"]["replicas"]) == (200, errors, 4)


# -- the cheap detection is exact ------------------------------------------------------


def _reference(body: bytes) -> bool:
    """Whether any object of ``body`` repeats a key (Python's parser, pair by pair)."""
    repeated = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        keys = [k for k, _ in items]
        repeated = repeated or len(keys) != len(set(keys))
        return dict(items)

    json.loads(body, object_pairs_hook=pairs)
    return repeated


HOSTILE = [
    b'{"ab": 1, "a\\u0062": 2}',  # an escaped key equal to a plain one
    b'{"a:": 1, "a\\u003a": 2}',  # an escaped colon
    b'{"a\\u003a": 1}',  # an escaped colon, no repeat
    # escaped colons that make up for the ':' a repeat drops: only a parse tells
    b'{"a\\u003a": 1, "a\\u003a": 2}',
    b'{"k": "\\u003a", "b": 1, "b": 2}',
    b'{"a": "\\u003a\\u003A"}',  # escaped colons in a value
    b'{"a": "x:y", "b": "\\"a\\": 1, \\"a\\": 2"}',  # keys inside a string value
    b'{"a" : 1 , "b"\n:\n2}',  # spaces around colons
    b'{"a": {"b": 1}, "a": {"b": 1}}',  # the same object twice
    b'{"a": {"b": {"c": 1, "c": 1}}}',  # deep
    b'{"a": [{"b": 1}, {"b": 2, "b": 3}]}',  # inside a list
    b'[{"a": 1}, {"a": 1}]',  # equal objects in a list: no repeat
    b'{"a": 1, "b": {"a": 1}}',  # the same key in different objects: no repeat
    b'{"\\u00e9": 1, "\xc3\xa9": 2}',  # escaped and raw non-ASCII
    b'{"\\ud83d\\ude00": 1, "\xf0\x9f\x98\x80": 2}',  # a surrogate pair and raw UTF-8
    b'{"a": "x:", "a": "y"}',  # the repeat drops a value with a colon
    b'{"a:b": "c:d"}',  # colons in keys and values, no repeat
    b'{"": 1, "": 2}',
    b"{}",
    b"[]",
    b'"a:b"',
]


@pytest.mark.parametrize("body", HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_detection_on_hostile_bodies(body: bytes) -> None:
    value = decode.json_value(body)
    assert bool(decode.json_duplicates(body, value)) == _reference(body)


def test_detection_deep_and_big() -> None:
    deep = b'{"a":' * 99 + b'{"k": 1, "k": 2}' + b"}" * 99
    found = decode.json_duplicates(deep, decode.json_value(deep))
    assert found.messages() == ['duplicate field "' + "a." * 99 + 'k"']
    items = [{"name": f"n{i}", "value": f"v:{i}"} for i in range(5000)]
    big = orjson.dumps({"items": items})
    assert not decode.json_duplicates(big, decode.json_value(big))
    last = big[:-3] + b', "name": "x"}]}'
    found = decode.json_duplicates(last, decode.json_value(last))
    assert found.messages() == ['duplicate field "items[4999].name"']


def test_a_patch_bodys_repeats_are_found_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """json_duplicates of a value json_value decoded takes the repeats it found: the key
    by key walk (the slow parse) runs once per body, not once per caller."""
    walks: list[bytes] = []
    find = decode._find_duplicates

    def counted(body: bytes) -> decode.Duplicates:
        walks.append(body)
        return find(body)

    monkeypatch.setattr(decode, "_find_duplicates", counted)
    body = b'{"spec": {"replicas": 1, "replicas": 2}}'
    value = decode.json_value(body)
    found = decode.json_duplicates(body, value)
    assert found.messages() == ['duplicate field "spec.replicas"'] and walks == [body]
    assert decode.json_patch_errors(b'[{"op": "add", "op": "add"}]', [{"op": "add"}]) == [
        'json patch duplicate field "[0].op"'
    ]


def test_detection_matches_the_reference_on_random_bodies() -> None:
    rng = random.Random(25)
    keys = ["a", "b", "a\\u0062", "ab", "c:", "c\\u003a", ":", "\\u00e9", "é"]
    strings = ["x", "a:b", '\\"a\\": 1', ":", "\\u003a", ""]

    def value(depth: int) -> str:
        roll = rng.random()
        if depth > 4 or roll < 0.3:
            return '"' + rng.choice(strings) + '"' if rng.random() < 0.7 else str(rng.randint(0, 9))
        if roll < 0.5:
            return "[" + ", ".join(value(depth + 1) for _ in range(rng.randint(0, 3))) + "]"
        members = [
            '"' + rng.choice(keys) + '": ' + value(depth + 1) for _ in range(rng.randint(0, 4))
        ]
        return "{" + ", ".join(members) + "}"

    checked = 0
    for _ in range(1000):
        body = ("{" + '"root": ' + value(0) + "}").encode()
        parsed = decode.json_value(body)
        assert bool(decode.json_duplicates(body, parsed)) == _reference(body), body
        checked += 1
    assert checked == 1000


# -- YAML bodies: go-yaml's strict decoder words the repeats ------------------------------

# kube's invalidBodyYAML
DEPLOYMENT_YAML = b"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: dupename
  name: web
  unknownMeta: metaVal
  labels:
    app: nginx
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never"""

YAML_LINES = [
    'line 5: key "name" already set in map',
    'line 12: key "unknownDupe" already set in map',
    'line 14: key "paused" already set in map',
    'line 28: key "imagePullPolicy" already set in map',
]
# the YAML is converted to JSON with sorted keys before a typed decode: key order
YAML_UNKNOWN = [
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
]


@pytest.mark.parametrize("validation", ["Strict", "Warn", None, "Ignore"])
def test_yaml_create_and_update_of_a_built_in(
    server: Server, ns: Paths, validation: str | None
) -> None:
    status, out, warnings = server.send(
        "POST", ns.deployments, DEPLOYMENT_YAML, validation, "application/yaml"
    )
    if validation == "Strict":
        error = "yaml: unmarshal errors:\n  " + "\n  ".join(YAML_LINES)
        assert (status, out["message"], warnings) == (
            400,
            strict_error([error, *YAML_UNKNOWN]),
            [],
        )
        return
    assert status == 201, out
    assert warnings == ([] if validation == "Ignore" else YAML_LINES + YAML_UNKNOWN)
    assert (out["metadata"]["name"], out["spec"]["paused"]) == ("web", False)


def test_yaml_create_of_a_custom_resource(
    server: Server,
    ns: Paths,
) -> None:
    body = (
        b"apiVersion: demo.kubewerk.dev/v1\nkind: Database\nmetadata:\n  name: dupename\n"
        b"  name: db\n  unknownMeta: metaVal\nspec:\n  zeta: 1\n  engine: mysql\n"
        b"  engine: postgres\n  replicas: 1\n  replicas: 2\n  alpha: 1\n"
    )
    lines = [
        'line 5: key "name" already set in map',
        'line 10: key "engine" already set in map',
        'line 12: key "replicas" already set in map',
    ]
    unknown = [
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.alpha"',
        'unknown field "spec.zeta"',
    ]
    status, out, _ = server.send("POST", ns.databases, body, "Strict", "application/yaml")
    error = "yaml: unmarshal errors:\n  " + "\n  ".join(lines)
    assert (status, out["message"]) == (400, strict_error([error, *unknown]))
    status, out, warnings = server.send("POST", ns.databases, body, None, "application/yaml")
    assert (status, warnings) == (201, lines + unknown), out
    assert (out["spec"]["engine"], out["spec"]["replicas"]) == ("postgres", 2)


# kube's applyInvalidBody (JSON, read as YAML), with spaces for its tabs
APPLY_DEPLOYMENT = b"""{
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "labels": {"app": "nginx"}
    },
    "spec": {
        "paused": false,
        "paused": true,
        "selector": {
            "matchLabels": {
                "app": "nginx"
            }
        },
        "template": {
            "metadata": {
                "labels": {
                    "app": "nginx"
                }
            },
            "spec": {
                "containers": [{
                    "name":  "nginx",
                    "image": "nginx:latest",
                    "imagePullPolicy": "Never",
                    "imagePullPolicy": "Always"
                }]
            }
        }
    }
}"""

APPLY_LINES = [
    'line 10: key "paused" already set in map',
    'line 27: key "imagePullPolicy" already set in map',
]


@pytest.mark.parametrize("validation", ["Strict", "Warn", None, "Ignore"])
@pytest.mark.parametrize("existing", [False, True], ids=["create", "update"])
def test_apply_of_a_built_in(
    server: Server, ns: Paths, validation: str | None, existing: bool
) -> None:
    path = f"{ns.deployments}/web"
    if existing:
        clean = orjson.dumps(yaml.safe_load(APPLY_DEPLOYMENT))
        status, out, _ = server.send("PATCH", path, clean, None, APPLY)
        assert status == 201, out
    status, out, warnings = server.send("PATCH", path, APPLY_DEPLOYMENT, validation, APPLY)
    if validation == "Strict":
        assert (status, warnings) == (400, []), out
        assert out["message"] == (
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:"
            '\n  line 10: key "paused" already set in map'
            '\n  line 27: key "imagePullPolicy" already set in map'
        )
        return
    assert status == (200 if existing else 201), out
    assert warnings == ([] if validation == "Ignore" else APPLY_LINES)
    container = out["spec"]["template"]["spec"]["containers"][0]
    assert (out["spec"]["paused"], container["imagePullPolicy"]) == (True, "Always")


def test_apply_of_a_custom_resource(
    server: Server,
    ns: Paths,
) -> None:
    body = (
        b'{"apiVersion": "demo.kubewerk.dev/v1", "kind": "Database",\n'
        b' "metadata": {"name": "db"},\n'
        b' "spec": {"engine": "mysql",\n  "engine": "postgres", "replicas": 1}}'
    )
    line = 'line 4: key "engine" already set in map'
    status, out, _ = server.send("PATCH", f"{ns.databases}/db", body, "Strict", APPLY)
    assert (status, out["message"]) == (
        400,
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  "
        + line,
    )
    status, out, warnings = server.send("PATCH", f"{ns.databases}/db", body, "Warn", APPLY)
    assert (status, warnings, out["spec"]["engine"]) == (201, [line], "postgres"), out


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        # Go values: 1 and "1" differ, 1 and 0x1 do not, y is true
        (b"1: a\n'1': b\n0x1: c\ny: d\ntrue: e\n", ["line 3: key 1", "line 5: key true"]),
        # an error inside a repeated key's value comes first
        (b"a:\n  b: 1\nc: 2\na:\n  d: 1\n  d: 2\n", ['line 6: key "d"', 'line 5: key "a"']),
        # a merge sets keys: before it and after it, a repeat is reported
        (
            b"base: &b\n  x: 1\n  z: 2\nm:\n  x: 0\n  <<: *b\n  z: 3\n",
            ['line 2: key "x"', 'line 7: key "z"'],
        ),
        # an alias is decoded again at each use
        (b"a: &a {k: 1, k: 2}\nb: *a\n", ['line 1: key "k"', 'line 1: key "k"']),
        (b"a: 1\nb: {a: 1}\nc: [{a: 1}, {a: 1}]\n", []),
    ],
    ids=["go-values", "nested-first", "merge", "alias", "none"],
)
def test_yaml_duplicate_lines(text: bytes, lines: list[str]) -> None:
    value = decode.yaml_value(text)
    found = decode.body_duplicates(value)
    assert found is not None
    assert found.yaml_lines == [line + " already set in map" for line in lines]


@pytest.mark.parametrize("validation", ["Strict", "Warn", "Ignore"])
def test_apply_to_scale(server: Server, ns: Paths, validation: str) -> None:
    clean = orjson.dumps(yaml.safe_load(APPLY_DEPLOYMENT))
    status, out, _ = server.send("PATCH", f"{ns.deployments}/web", clean, None, APPLY)
    assert status == 201, out
    body = (
        b'{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"},\n'
        b' "spec": {"replicas": 2,\n  "replicas": 3}}'
    )
    line = 'line 3: key "replicas" already set in map'
    # force: the replicas belong to the main resource's manager
    status, out, warnings = server.send(
        "PATCH", f"{ns.deployments}/web/scale", body, validation, APPLY, "&force=true"
    )
    if validation == "Strict":
        assert (status, out["message"]) == (
            400,
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:"
            "\n  " + line,
        )
        return
    assert (status, warnings) == (200, [] if validation == "Ignore" else [line]), out
    assert out["spec"]["replicas"] == 3


# -- with admission policies: the chain's path ---------------------------------------------

POLICY_PATH = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDING_PATH = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


def test_through_admission_policies() -> None:
    """With a policy in force, writes take the admission chain, which copies the body
    before admission: the repeats are still reported (update, patch, apply)."""
    server = Server()
    try:
        policy, binding = configmap_name_policy("names.test", "denied")
        for path, body in ((POLICY_PATH, policy), (BINDING_PATH, binding)):
            status, out, _ = server.send("POST", path, orjson.dumps(body), None)
            assert status == 201, out
        cms = "/api/v1/namespaces/default/configmaps"
        denied = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "denied"}}'
        for _ in range(200):  # the policy is in force from some next request on
            status, out, _ = server.send("POST", cms, denied, None)
            if status == 422:
                break
            server.send("DELETE", f"{cms}/denied", b"", None)
            server.loop.run_until_complete(asyncio.sleep(0.01))
        assert status == 422, out
        body = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, '
        status, out, warnings = server.send(
            "POST", cms, body + b'"data": {"k": "1", "k": "2"}}', None
        )
        assert (status, warnings) == (201, ['duplicate field "data.k"']), out
        put = body + b'"data": {"k": "3", "k": "4"}}'
        status, out, warnings = server.send("PUT", f"{cms}/cm", put, None)
        assert (status, warnings, out["data"]) == (200, ['duplicate field "data.k"'], {"k": "4"})
        status, out, _ = server.send("PUT", f"{cms}/cm", put, "Strict")
        assert (status, out["message"]) == (
            400,
            'strict decoding error: duplicate field "data.k"',
        )
        patch = b'{"data": {"k": "5", "k": "6"}}'
        status, out, warnings = server.send(
            "PATCH", f"{cms}/cm", patch, None, "application/merge-patch+json"
        )
        assert (status, warnings, out["data"]) == (200, ['duplicate field "data.k"'], {"k": "6"})
        apply = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ap"},\n' + (
            b' "data": {"k": "1",\n  "k": "2"}}'
        )
        line = 'line 3: key "k" already set in map'
        status, out, warnings = server.send("PATCH", f"{cms}/ap", apply, None, APPLY)
        assert (status, warnings, out["data"]) == (201, [line], {"k": "2"}), out
        status, out, warnings = server.send("PATCH", f"{cms}/ap", apply, None, APPLY)
        assert (status, warnings) == (200, [line]), out
    finally:
        server.loop.close()
