"""Numbers in custom resources are stored and answered as kube-apiserver answers them.

kube-apiserver decodes a custom resource with ``sigs.k8s.io/json`` (an integer literal
within int64 is an int64, any other number a float64), stores it with Go's encoding/json
(``floatEncoder``: shortest digits, fixed notation for 1e-6 <= |x| < 1e21, else exponent
notation with ``e-07`` cleaned to ``e-7``) and answers with that text decoded again:
``{"replicas": 1.0}`` comes back as ``1`` (a Go client's int32 field decodes it). Every
test compares the raw bytes of the answers (create, update, patch, GET, LIST, WATCH,
after a restart from SQLite) with the text Go writes; on the code before this change
they read ``1.0``, ``100.0``, ``1.2345678901234567e+19``, ``-0.0``.

Validation still sees what kube's validation sees (the request's float64): ``1.0`` in a
``type: string`` field is a ``"number"``, ``1.0`` in a ``type: integer`` field is
accepted (kube-openapi's IsFloat64AJSONInteger).
"""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import CRD_PATH

GROUP = "numbers.kubewerk.dev"
READINGS = f"/apis/{GROUP}/v1/namespaces/default/readings"

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"readings.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "readings", "singular": "reading", "kind": "Reading"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "selectableFields": [{"jsonPath": ".spec.replicas"}],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                                "properties": {
                                    "replicas": {"type": "integer"},
                                    "ratio": {
                                        "type": "number",
                                        # a double in CEL, whether stored as 1 or 1.0
                                        "x-kubernetes-validations": [
                                            {"rule": "self / 2.0 >= 0.0"},
                                            {"rule": "self >= oldSelf"},
                                        ],
                                    },
                                    "label": {"type": "string"},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}

# field → (JSON literal sent, the text kube-apiserver answers)
NUMBERS = {
    "one": (b"1.0", b"1"),
    "hundred": (b"1e2", b"100"),
    "tiny": (b"1e-7", b"1e-7"),
    "huge": (b"1e21", b"1e+21"),
    "big": (b"12345678901234567890", b"12345678901234567000"),
    "negzero": (b"-0.0", b"0"),
    "tenth": (b"0.1", b"0.1"),
    "twoto60": (b"1152921504606846976.0", b"1152921504606847000"),
    "half": (b"2.5", b"2.5"),
}


def _request(
    url: str,
    method: str,
    path: str,
    body: bytes | None = None,
    content_type: str = "application/json",
) -> tuple[int, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        headers = {"Content-Type": content_type} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _first_watch_line(url: str, path: str) -> bytes:
    """The first event line of a watch (the connection is closed after it)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        assert resp.status == 200
        return resp.readline().rstrip(b"\n")
    finally:
        conn.close()


def _start(store: str) -> EmbeddedServer:
    srv = EmbeddedServer(store).start_in_thread()
    status, answer = _request(srv.url, "POST", CRD_PATH, orjson.dumps(CRD))
    assert status in (201, 409), answer
    deadline = time.monotonic() + 10
    while _request(srv.url, "GET", READINGS)[0] != 200:
        assert time.monotonic() < deadline, "the CRD never served"
        time.sleep(0.02)
    return srv


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("numbers") / "db.sqlite"


@pytest.fixture(scope="module")
def server(store_path: Path) -> Iterator[EmbeddedServer]:
    srv = _start(f"sqlite:{store_path}")
    try:
        yield srv
    finally:
        srv.stop_thread()


def _body(name: str, spec: bytes) -> bytes:
    return (
        b'{"apiVersion":"' + GROUP.encode() + b'/v1","kind":"Reading",'
        b'"metadata":{"name":"' + name.encode() + b'"},"spec":' + spec + b"}"
    )


def _spec_of(numbers: dict[str, tuple[bytes, bytes]]) -> bytes:
    return b"{" + b",".join(b'"%s":%s' % (k.encode(), v[0]) for k, v in numbers.items()) + b"}"


def _number_text(payload: bytes, field: str) -> bytes:
    """The raw text of the number at ``"field":`` in an answer (the fields are unique)."""
    found = re.findall(rb'"' + field.encode() + rb'":(-?[0-9][0-9.eE+-]*)', payload)
    assert len(found) == 1, (field, payload)
    return bytes(found[0])


def _assert_go_text(payload: bytes, numbers: dict[str, tuple[bytes, bytes]]) -> None:
    got = {field: _number_text(payload, field) for field in numbers}
    assert got == {field: text for field, (_, text) in numbers.items()}


def test_create_get_list_watch_answer_go_number_text(server: EmbeddedServer) -> None:
    status, listed = _request(server.url, "GET", READINGS)
    assert status == 200
    since = orjson.loads(listed)["metadata"]["resourceVersion"]
    status, created = _request(server.url, "POST", READINGS, _body("json", _spec_of(NUMBERS)))
    assert status == 201, created
    _assert_go_text(created, NUMBERS)
    status, got = _request(server.url, "GET", f"{READINGS}/json")
    assert status == 200
    _assert_go_text(got, NUMBERS)
    status, listed = _request(server.url, "GET", f"{READINGS}?fieldSelector=metadata.name=json")
    assert status == 200
    _assert_go_text(listed, NUMBERS)
    first = _first_watch_line(
        server.url, f"{READINGS}?watch=1&resourceVersion={since}&fieldSelector=metadata.name=json"
    )
    assert first.startswith(b'{"type":"ADDED"')
    _assert_go_text(first, NUMBERS)


def test_yaml_body_numbers_as_kube_reads_yaml(server: EmbeddedServer) -> None:
    # sigs.k8s.io/yaml writes go-yaml's numbers as Go's JSON and decodes that
    doc = (
        f"apiVersion: {GROUP}/v1\nkind: Reading\nmetadata:\n  name: yaml\nspec:\n".encode()
        + b"".join(b"  %s: %s\n" % (k.encode(), v[0]) for k, v in NUMBERS.items())
    )
    status, created = _request(server.url, "POST", READINGS, doc, "application/yaml")
    assert status == 201, created
    _assert_go_text(created, NUMBERS)
    _assert_go_text(_request(server.url, "GET", f"{READINGS}/yaml")[1], NUMBERS)


def test_put_and_patches_store_go_numbers(server: EmbeddedServer) -> None:
    status, created = _request(server.url, "POST", READINGS, _body("upd", b'{"ratio":1.5}'))
    assert status == 201, created
    rv = orjson.loads(created)["metadata"]["resourceVersion"]
    put = _body("upd", b'{"ratio":2.0,"replicas":3.0}').replace(
        b'"name":"upd"', b'"name":"upd","resourceVersion":"' + rv.encode() + b'"'
    )
    status, updated = _request(server.url, "PUT", f"{READINGS}/upd", put)
    assert status == 200, updated
    assert _number_text(updated, "ratio") == b"2"
    assert _number_text(updated, "replicas") == b"3"
    status, merged = _request(
        server.url,
        "PATCH",
        f"{READINGS}/upd",
        b'{"spec":{"merged":4.0,"ratio":5e0}}',
        "application/merge-patch+json",
    )
    assert status == 200, merged
    assert _number_text(merged, "merged") == b"4"
    assert _number_text(merged, "ratio") == b"5"
    status, patched = _request(
        server.url,
        "PATCH",
        f"{READINGS}/upd",
        b'[{"op":"add","path":"/spec/added","value":6.0}]',
        "application/json-patch+json",
    )
    assert status == 200, patched
    assert _number_text(patched, "added") == b"6"
    status, applied = _request(
        server.url,
        "PATCH",
        f"{READINGS}/upd?fieldManager=numbers",
        f'{{"apiVersion":"{GROUP}/v1","kind":"Reading","metadata":{{"name":"upd"}},'
        '"spec":{"applied":7.0}}'.encode(),
        "application/apply-patch+yaml",
    )
    assert status == 200, applied
    assert _number_text(applied, "applied") == b"7"
    got = _request(server.url, "GET", f"{READINGS}/upd")[1]
    assert [_number_text(got, f) for f in ("ratio", "replicas", "merged", "added")] == [
        b"5",
        b"3",
        b"4",
        b"6",
    ]


def test_json_patch_test_compares_the_stored_text(server: EmbeddedServer) -> None:
    status, created = _request(server.url, "POST", READINGS, _body("tested", b'{"ratio":1.0}'))
    assert status == 201, created

    def test_op(value: bytes) -> int:
        ops = b'[{"op":"test","path":"/spec/ratio","value":' + value + b"},"
        ops += b'{"op":"add","path":"/spec/seen","value":true}]'
        path = f"{READINGS}/tested"
        return _request(server.url, "PATCH", path, ops, "application/json-patch+json")[0]

    # evanphx json-patch compares scalars by their JSON text; the stored text is 1
    assert test_op(b"1") == 200
    assert test_op(b"1.0") == 422


def test_validation_sees_the_request_float(server: EmbeddedServer) -> None:
    # kube-openapi: a float64 1.0 is a "number"; an integer field accepts it
    status, answer = _request(server.url, "POST", READINGS, _body("typed", b'{"label":1.0}'))
    assert status == 422, answer
    message = orjson.loads(answer)["message"]
    assert 'spec.label in body must be of type string: "number"' in message
    status, answer = _request(server.url, "POST", READINGS, _body("typed", b'{"replicas":2.0}'))
    assert status == 201, answer
    assert _number_text(answer, "replicas") == b"2"


def test_number_field_is_a_cel_double_after_storage(server: EmbeddedServer) -> None:
    # stored as 1 (an int64 once stored); the transition rule reads it as a double
    status, created = _request(server.url, "POST", READINGS, _body("cel", b'{"ratio":1.0}'))
    assert status == 201, created
    assert _number_text(created, "ratio") == b"1"
    status, patched = _request(
        server.url,
        "PATCH",
        f"{READINGS}/cel",
        b'{"spec":{"ratio":1.5}}',
        "application/merge-patch+json",
    )
    assert status == 200, patched
    status, refused = _request(
        server.url,
        "PATCH",
        f"{READINGS}/cel",
        b'{"spec":{"ratio":0.5}}',
        "application/merge-patch+json",
    )
    assert status == 422, refused
    assert "failed rule: self >= oldSelf" in orjson.loads(refused)["message"]


def test_field_selector_matches_the_stored_integer(server: EmbeddedServer) -> None:
    status, created = _request(server.url, "POST", READINGS, _body("sel", b'{"replicas":9.0}'))
    assert status == 201, created
    status, listed = _request(server.url, "GET", f"{READINGS}?fieldSelector=spec.replicas=9")
    assert status == 200
    names = [item["metadata"]["name"] for item in orjson.loads(listed)["items"]]
    assert names == ["sel"]


def test_restart_from_sqlite_answers_the_same_text(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'db.sqlite'}"
    first = _start(store)
    try:
        status, created = _request(first.url, "POST", READINGS, _body("kept", _spec_of(NUMBERS)))
        assert status == 201, created
    finally:
        first.stop_thread()
    second = _start(store)
    try:
        status, got = _request(second.url, "GET", f"{READINGS}/kept")
        assert status == 200, got
        _assert_go_text(got, NUMBERS)
    finally:
        second.stop_thread()


def test_answer_decodes_into_integer_fields(server: EmbeddedServer) -> None:
    """What a Go client with an int32 field needs: the integral number is an integer."""
    status, created = _request(server.url, "POST", READINGS, _body("go", b'{"replicas":1.0}'))
    assert status == 201, created
    spec: dict[str, Any] = orjson.loads(_request(server.url, "GET", f"{READINGS}/go")[1])["spec"]
    assert type(spec["replicas"]) is int and spec["replicas"] == 1


def test_crd_schema_numbers_are_kept_as_kube_writes_them(server: EmbeddedServer) -> None:
    """``maximum`` is a Go float64, ``default``/``enum``/``example`` go through
    ``interface{}``: 1e20 was refused with 400 (an int of its digits does not fit 64
    bits); 12345678901234567890 is Go's 12345678901234567000, and so is the default an
    instance gets."""
    group = "limits.numbers.kubewerk.dev"
    crd: dict[str, Any] = orjson.loads(orjson.dumps(CRD))
    crd["metadata"]["name"] = f"gauges.{group}"
    crd["spec"]["group"] = group
    crd["spec"]["names"] = {"plural": "gauges", "singular": "gauge", "kind": "Gauge"}
    version = crd["spec"]["versions"][0]
    del version["selectableFields"]
    version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] = {"a": {}}
    crd_body = orjson.dumps(crd).replace(
        b'"a":{}',
        b'"a":{"type":"number","maximum":1e20,"default":12345678901234567890,'
        b'"example":1.0,"enum":[1.0,2.5,12345678901234567890]}',
    )
    status, created = _request(server.url, "POST", CRD_PATH, crd_body)
    assert status == 201, created
    assert _number_text(created, "default") == b"12345678901234567000"
    assert _number_text(created, "example") == b"1"
    assert re.search(rb'"enum":\[1,2\.5,12345678901234567000\]', created), created
    assert (
        orjson.loads(created)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
            "spec"
        ]["properties"]["a"]["maximum"]
        == 1e20
    )
    path = f"/apis/{group}/v1/namespaces/default/gauges"
    deadline = time.monotonic() + 10
    while _request(server.url, "GET", path)[0] != 200:
        assert time.monotonic() < deadline, "the CRD never served"
        time.sleep(0.02)
    body = (
        _body("g", b"{}").replace(b'"Reading"', b'"Gauge"').replace(GROUP.encode(), group.encode())
    )
    status, instance = _request(server.url, "POST", path, body)
    assert status == 201, instance
    assert _number_text(instance, "a") == b"12345678901234567000"


def test_generation_follows_kube_deep_equal(server: EmbeddedServer) -> None:
    """customResourceStrategy.PrepareForUpdate bumps the generation when the request's
    unstructured spec is not Semantic.DeepEqual to the stored one: float64 1 (sent as
    ``1.0``) differs from the stored int64 1; ``1`` does not."""
    status, created = _request(server.url, "POST", READINGS, _body("gen", b'{"replicas":1.0}'))
    assert status == 201, created
    assert orjson.loads(created)["metadata"]["generation"] == 1

    def merge(spec: bytes) -> int:
        path = f"{READINGS}/gen"
        patch = b'{"spec":' + spec + b"}"
        status, answer = _request(server.url, "PATCH", path, patch, "application/merge-patch+json")
        assert status == 200, answer
        assert _number_text(answer, "replicas") == b"1"
        generation: int = orjson.loads(answer)["metadata"]["generation"]
        return generation

    assert merge(b'{"replicas":1}') == 1
    assert merge(b'{"replicas":1.0}') == 2
    assert merge(b'{"replicas":1,"label":"x"}') == 3


@pytest.mark.parametrize("as_yaml", [False, True])
def test_big_body_decoded_in_a_worker_thread(server: EmbeddedServer, as_yaml: bool) -> None:
    """A body over 64 KiB is decoded (and a custom resource admitted) off the event loop:
    its numbers are stored the same way."""
    pad = b"x" * (70 * 1024)
    name = "bigyaml" if as_yaml else "bigjson"
    spec = b'{"pad":"' + pad + b'","one":1.0,"big":12345678901234567890}'
    body = _body(name, spec)
    status, created = _request(
        server.url,
        "POST",
        READINGS,
        body,
        "application/yaml" if as_yaml else "application/json",
    )
    assert status == 201, created[:300]
    for answer in (created, _request(server.url, "GET", f"{READINGS}/{name}")[1]):
        assert _number_text(answer, "one") == b"1"
        assert _number_text(answer, "big") == b"12345678901234567000"


DEPLOYMENT_YAML = b"""apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: %s
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
"""


def test_built_in_kind_yaml_float_is_an_integer_json_float_is_refused(
    server: EmbeddedServer,
) -> None:
    """kube-apiserver converts a YAML body to JSON first (sigs.k8s.io/yaml: go-yaml's
    float64 2 is written ``2``), so ``replicas: 2.0`` in YAML is the int32 2; the same
    number in a JSON body does not decode into the int32 field."""
    path = "/apis/apps/v1/namespaces/default/deployments"
    status, created = _request(
        server.url, "POST", path, DEPLOYMENT_YAML % (b"from-yaml", b"2.0"), "application/yaml"
    )
    assert status == 201, created
    assert _number_text(created, "replicas") == b"2"
    json_body = orjson.dumps(yaml.safe_load(DEPLOYMENT_YAML % (b"from-json", b"2")))
    status, refused = _request(
        server.url, "POST", path, json_body.replace(b'"replicas":2', b'"replicas":2.0')
    )
    assert status == 400, refused
    assert orjson.loads(refused)["message"].endswith(
        "json: cannot unmarshal number 2.0 into Go struct field "
        "DeploymentSpec.spec.replicas of type int32"
    )
