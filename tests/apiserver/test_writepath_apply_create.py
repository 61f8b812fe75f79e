"""A server-side apply that creates, and writes whose ``metadata`` is JSON null.

kube's patcher (k8s.io/apiserver pkg/endpoints/handlers/patch.go ``applyPatch``) checks
the object an apply makes of nothing, before storage: a configuration naming a uid is
409 ``uid mismatch: the provided object specified uid U, and no existing object was
found``; then the namespace; then ``checkName``: a configuration without a name makes an
object without one, 400 ``the name of the object (N based on URL) was undeterminable:
name must be provided``. ``"metadata": null`` decodes as an empty ObjectMeta (a create
without a name is then 422, as any), never a server error."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call, configmap_name_policy, json_call

CM = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"
VAP = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDING = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


class Server:
    """An in-process server; ``admission``: ConfigMap writes take the admission chain."""

    def __init__(self, admission: bool) -> None:
        self.loop = asyncio.new_event_loop()
        self.app = ApiServer(open_store("memory"))
        if admission:
            policy, binding = configmap_name_policy("names", "forbidden", "Fail")
            for path, obj in ((VAP, policy), (BINDING, binding)):
                status, out = self.loop.run_until_complete(json_call(self.app, "POST", path, obj))
                assert status == 201, out

    def send(
        self, method: str, path: str, body: Any, content_type: str, query: str = ""
    ) -> tuple[int, Any]:
        status, _, payload = self.loop.run_until_complete(
            asgi_call(
                self.app, method, path, query, {"content-type": content_type}, orjson.dumps(body)
            )
        )
        return status, orjson.loads(payload)

    def close(self) -> None:
        self.loop.run_until_complete(self.app.stop())
        self.loop.close()


@pytest.fixture(scope="module", params=[False, True], ids=["rest", "admission-chain"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    made = Server(request.param)
    try:
        yield made
    finally:
        made.close()


def _status(code: int, reason: str, message: str, details: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        out["details"] = details
    out["code"] = code
    return out


def _apply(server: Server, name: str, meta: Any) -> tuple[int, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}
    if meta is not ...:
        body["metadata"] = meta
    return server.send("PATCH", f"{CM}/{name}", body, APPLY, "fieldManager=me")


UNDETERMINABLE = (
    "the name of the object ({} based on URL) was undeterminable: name must be provided"
)

APPLY_CASES: dict[str, tuple[Any, tuple[int, Any]]] = {
    "uid": (
        {"name": "{name}", "uid": "abc"},
        (
            409,
            _status(
                409,
                "Conflict",
                'Operation cannot be fulfilled on configmaps "{name}": uid mismatch: the '
                "provided object specified uid abc, and no existing object was found",
                {"name": "{name}", "kind": "configmaps"},
            ),
        ),
    ),
    "no-name": ({"labels": {"a": "b"}}, (400, _status(400, "BadRequest", UNDETERMINABLE))),
    "no-metadata": (..., (400, _status(400, "BadRequest", UNDETERMINABLE))),
    "null-metadata": (None, (400, _status(400, "BadRequest", UNDETERMINABLE))),
    "empty-name": ({"name": ""}, (400, _status(400, "BadRequest", UNDETERMINABLE))),
    "namespace-before-name": (
        {"namespace": "elsewhere"},
        (
            400,
            _status(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on "
                "the request",
            ),
        ),
    ),
}


def _filled(value: Any, name: str) -> Any:
    if isinstance(value, str):
        return value.replace("{name}", name).replace("({} based", f"({name} based")
    if isinstance(value, dict):
        return {k: _filled(v, name) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_filled(v, name) for v in value)
    return value


@pytest.mark.parametrize("case", sorted(APPLY_CASES))
def test_an_apply_that_would_create(server: Server, case: str) -> None:
    meta, expected = APPLY_CASES[case]
    name = f"apply-{case}"
    assert _apply(server, name, _filled(meta, name)) == _filled(expected, name)
    status, _ = server.send("GET", f"{CM}/{name}", None, "application/json")
    assert status == 404  # nothing created


@pytest.mark.parametrize(
    "meta", [..., None, {"labels": {"x": "y"}}], ids=["absent", "null", "no-name"]
)
def test_an_apply_without_a_name_to_an_object_that_exists(server: Server, meta: Any) -> None:
    """The live object keeps its name: the apply goes through."""
    name = f"exists-{'absent' if meta is ... else 'null' if meta is None else 'no-name'}"
    status, out = _apply(server, name, {"name": name})
    assert status == 201, out
    status, out = _apply(server, name, meta)
    assert (status, out["metadata"]["name"]) == (200, name), out


def test_a_create_with_null_metadata(server: Server) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": None, "data": {"k": "v"}}
    status, out = server.send("POST", CM, body, "application/json")
    assert (status, out["reason"], out["message"]) == (
        422,
        "Invalid",
        'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
    )
