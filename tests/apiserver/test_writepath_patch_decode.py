"""A PATCH that takes the admission chain decodes its body once, however many times the
chain applies it (kube-apiserver reads the patch bytes once per request and keeps them
in its patcher, k8s.io/apiserver pkg/endpoints/handlers/patch.go), and answers as
before: the patch body's own strict errors first, then the patched object's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver import decode
from kubewerk.apiserver.admission_chain.chain import AdmissionChain
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call, configmap, configmap_name_policy, json_call

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
VAP = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDING = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


def warnings_of(headers: list[tuple[str, str]]) -> list[str]:
    """The texts of the ``Warning: 299 - "text"`` headers, in order."""
    texts = []
    for name, value in headers:
        if name == "warning":
            assert value.startswith('299 - "') and value.endswith('"'), value
            texts.append(value[7:-1].replace('\\"', '"').replace("\\\\", "\\"))
    return texts


class Server:
    """One in-process server whose ConfigMap writes take the admission chain."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.app = ApiServer(open_store("memory"))
        policy, binding = configmap_name_policy("names", "forbidden", "Fail")
        for path, obj in ((VAP, policy), (BINDING, binding)):
            status, out = self.run(json_call(self.app, "POST", path, obj))
            assert status == 201, out

    def run(self, call: Any) -> Any:
        return self.loop.run_until_complete(call)

    def send(
        self, method: str, path: str, body: bytes, content_type: str, query: str = ""
    ) -> tuple[int, Any, list[str]]:
        status, headers, payload = self.run(
            asgi_call(self.app, method, path, query, {"content-type": content_type}, body)
        )
        return status, orjson.loads(payload), warnings_of(headers)

    def close(self) -> None:
        self.run(self.app.stop())
        self.loop.close()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    made = Server()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bytes]]:
    """What ``decode`` does to request bodies: ``("value", body)`` for each time the
    server asks for a JSON body's value (``json_value``: a fresh one each time, parsed or
    copied from a worker thread's), ``("parse", body)`` for each parse of it (on the loop
    or in a worker thread), in any order."""
    seen: list[tuple[str, bytes]] = []
    value_of, parse = decode.json_value, decode._json_decode

    def counted_value(body: bytes, what: str = "the object") -> Any:
        seen.append(("value", body))
        return value_of(body, what)

    def counted_parse(body: bytes, what: str) -> Any:
        seen.append(("parse", body))
        return parse(body, what)

    monkeypatch.setattr(decode, "json_value", counted_value)
    monkeypatch.setattr(decode, "_json_decode", counted_parse)
    return seen


MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

CASES = {
    "merge-duplicate": (MERGE, b'{"data": {"k": "1", "k": "2"}}', ""),
    "merge-duplicate-strict": (MERGE, b'{"data": {"k": "1", "k": "2"}}', "fieldValidation=Strict"),
    "merge-ignore": (MERGE, b'{"data": {"k": "1", "k": "2"}}', "fieldValidation=Ignore"),
    "json-patch-unknown-op-field": (
        JSON_PATCH,
        b'[{"op": "add", "path": "/data/k", "value": "3", "extra": 1}]',
        "",
    ),
    "merge-big": (
        MERGE,
        orjson.dumps(
            {"data": {f"k{i}": "v" * 30 for i in range(2500)}}, option=orjson.OPT_INDENT_2
        ),
        "",
    ),
}

EXPECTED = {
    "merge-duplicate": (200, ['duplicate field "data.k"']),
    "merge-duplicate-strict": (400, []),
    "merge-ignore": (200, []),
    "json-patch-unknown-op-field": (200, ['json patch unknown field "[0].extra"']),
    "merge-big": (200, []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_patch_through_admission_decodes_its_body_once(
    server: Server, decodes: list[tuple[str, bytes]], case: str
) -> None:
    content_type, body, query = CASES[case]
    status, out, _ = server.send(
        "POST", CONFIGMAPS, orjson.dumps(configmap(case, {"a": "b"})), "application/json"
    )
    assert status == 201, out
    assert server.app.chain.active(_target(server))
    decodes.clear()
    status, out, warnings = server.send("PATCH", f"{CONFIGMAPS}/{case}", body, content_type, query)
    assert (status, warnings) == EXPECTED[case], out
    if status == 400:
        assert out["message"] == 'strict decoding error: duplicate field "data.k"'
    assert sorted(decodes) == [("parse", body), ("value", body)]


def test_a_retried_patch_is_not_decoded_again(
    server: Server, decodes: list[tuple[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent write makes the chain apply the patch again: to the body it read."""
    status, out, _ = server.send(
        "POST", CONFIGMAPS, orjson.dumps(configmap("retried", {"a": "b"})), "application/json"
    )
    assert status == 201, out
    moved = AdmissionChain._moved
    answers = iter([True, False])

    def once_moved(chain: AdmissionChain, key: str, current: Any) -> bool:
        return next(answers, False) or moved(chain, key, current)

    monkeypatch.setattr(AdmissionChain, "_moved", once_moved)
    decodes.clear()
    body = b'{"data": {"k": "1", "k": "2"}}'
    status, out, warnings = server.send("PATCH", f"{CONFIGMAPS}/retried", body, MERGE)
    assert (status, warnings, out["data"]) == (
        200,
        ['duplicate field "data.k"'],
        {"a": "b", "k": "2"},
    )
    assert next(answers, None) is None  # the chain did go round twice
    assert sorted(decodes) == [("parse", body), ("value", body)]


def _target(server: Server) -> Any:
    from kubewerk.apiserver.request import Target

    rtype = server.app.registry.get("", "configmaps")
    assert rtype is not None
    return Target(rtype, "v1", "default", None)
