"""The name checks of a write, in kube-apiserver's order and words.

PUT (k8s.io/apiserver pkg/endpoints/handlers/update.go, rest.go ``checkName``,
namer.go): the body decodes (kind, apiVersion), its namespace meets the request's
(``EnsureObjectNamespaceMatchesRequestNamespace``), then its name meets the URL's, all
before storage is read: an empty or missing name is 400 ``the name of the object (N
based on URL) was undeterminable: name must be provided``, another name 400 ``the name
of the object (X) does not match the name on the URL (N)``. Storage comes next
(pkg/registry/generic/registry/store.go ``Update``): an object that does not exist is
404 before a custom resource's missing resourceVersion is 422, and that 422 names the
resource, not the kind (``things.ex.test "x" is invalid``).

Server-side apply that creates, and PUT with a resourceVersion of an object that does
not exist: kube's create-on-update path ignores the configuration's resourceVersion
(the etcd3 store's ``GuaranteedUpdate`` clears it before writing, ``updateState`` →
``PrepareObjectForStorage``), so the apply creates (201); a PUT of a kind that does not
allow create-on-update is 404, whatever resourceVersion it names."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call, configmap_name_policy, json_call, open_crd

CM = "/api/v1/namespaces/default/configmaps"
TH = "/apis/ex.test/v1/namespaces/default/things"
APPLY = "application/apply-patch+yaml"
VAP = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDING = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


class Server:
    """One in-process server with the ``things.ex.test`` CRD; ``admission``: a policy on
    ConfigMaps makes their writes take the admission chain."""

    def __init__(self, admission: bool) -> None:
        self.loop = asyncio.new_event_loop()
        self.app = ApiServer(open_store("memory"))
        status, out = self.run(
            json_call(
                self.app,
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                open_crd("ex.test", "things", "Thing"),
            )
        )
        assert status == 201, out
        if admission:
            policy, binding = configmap_name_policy("names", "forbidden", "Fail")
            for path, obj in ((VAP, policy), (BINDING, binding)):
                status, out = self.run(json_call(self.app, "POST", path, obj))
                assert status == 201, out
        for _ in range(200):
            if self.run(asgi_call(self.app, "GET", TH))[0] == 200:
                break
            self.run(asyncio.sleep(0.01))

    def run(self, call: Any) -> Any:
        return self.loop.run_until_complete(call)

    def send(
        self,
        method: str,
        path: str,
        body: Any,
        content_type: str = "application/json",
        query: str = "",
    ) -> tuple[int, Any]:
        status, _, payload = self.run(
            asgi_call(
                self.app,
                method,
                path,
                query,
                {"content-type": content_type},
                b"" if body is None else orjson.dumps(body),
            )
        )
        return status, orjson.loads(payload)

    def close(self) -> None:
        self.run(self.app.stop())
        self.loop.close()


@pytest.fixture(scope="module", params=[False, True], ids=["rest", "admission-chain"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    made = Server(request.param)
    try:
        yield made
    finally:
        made.close()


def cm(name: str | None, **meta: Any) -> dict[str, Any]:
    metadata = {**({} if name is None else {"name": name}), **meta}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}


def thing(name: str | None, **meta: Any) -> dict[str, Any]:
    metadata = {**({} if name is None else {"name": name}), **meta}
    return {"apiVersion": "ex.test/v1", "kind": "Thing", "metadata": metadata, "spec": {"a": 1}}


def bad_request(message: str) -> tuple[int, dict[str, Any]]:
    return 400, {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


UNDETERMINABLE = (
    "the name of the object ({} based on URL) was undeterminable: name must be provided"
)
MISMATCH = "the name of the object ({}) does not match the name on the URL ({})"
NAMESPACE = "the namespace of the provided object does not match the namespace sent on the request"


def _created(server: Server, path: str, body: dict[str, Any]) -> dict[str, Any]:
    name = body["metadata"]["name"]
    server.send("DELETE", f"{path}/{name}", None)
    status, out = server.send("POST", path, body)
    assert status == 201, out
    return out


# (URL name, body) for a PUT to an existing ConfigMap "e1"; what kube answers
PUT_CASES: dict[str, tuple[dict[str, Any], tuple[int, Any]]] = {
    "name-mismatch": (cm("other"), bad_request(MISMATCH.format("other", "e1"))),
    "name-empty": (cm(""), bad_request(UNDETERMINABLE.format("e1"))),
    "name-missing": (cm(None), bad_request(UNDETERMINABLE.format("e1"))),
    "metadata-missing": (
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}},
        bad_request(UNDETERMINABLE.format("e1")),
    ),
    "metadata-null": (
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": None},
        bad_request(UNDETERMINABLE.format("e1")),
    ),
    # the namespace is checked before the name
    "namespace-and-name-mismatch": (cm("other", namespace="elsewhere"), bad_request(NAMESPACE)),
    "empty-name-namespace-mismatch": (cm("", namespace="elsewhere"), bad_request(NAMESPACE)),
}


@pytest.mark.parametrize("case", sorted(PUT_CASES))
def test_put_name_checks(server: Server, case: str) -> None:
    _created(server, CM, cm("e1"))
    body, expected = PUT_CASES[case]
    assert server.send("PUT", f"{CM}/e1", body) == expected
    status, out = server.send("GET", f"{CM}/e1", None)
    assert (status, out["data"]) == (200, {"k": "v"})  # nothing written


@pytest.mark.parametrize("kind", ["configmap", "custom-resource"])
def test_put_name_checks_come_before_storage(server: Server, kind: str) -> None:
    """The URL names an object that does not exist: the body's name is still checked
    first (400, not 404)."""
    path, make = (CM, cm) if kind == "configmap" else (TH, thing)
    assert server.send("PUT", f"{path}/absent", make("other")) == bad_request(
        MISMATCH.format("other", "absent")
    )
    assert server.send("PUT", f"{path}/absent", make(None)) == bad_request(
        UNDETERMINABLE.format("absent")
    )


def test_put_of_a_custom_resource_that_does_not_exist_is_not_found_first(
    server: Server,
) -> None:
    """Without a resourceVersion: 404 (storage finds nothing before it asks for one)."""
    status, out = server.send("PUT", f"{TH}/absent", thing("absent"))
    assert (status, out["reason"], out["message"]) == (
        404,
        "NotFound",
        'things.ex.test "absent" not found',
    )


def test_put_of_a_custom_resource_without_resource_version(server: Server) -> None:
    """store.go's Invalid error qualifies the resource, not the kind."""
    created = _created(server, TH, thing("norv"))
    body = thing("norv", uid=created["metadata"]["uid"])
    status, out = server.send("PUT", f"{TH}/norv", body)
    assert status == 422, out
    assert out["message"] == (
        'things.ex.test "norv" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
        "must be specified for an update"
    )
    assert out["details"] == {
        "name": "norv",
        "group": "ex.test",
        "kind": "things",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 0x0: must be specified for an update",
                "field": "metadata.resourceVersion",
            }
        ],
    }


@pytest.mark.parametrize("kind", ["configmap", "custom-resource"])
def test_put_with_resource_version_of_an_object_that_does_not_exist(
    server: Server, kind: str
) -> None:
    """Neither kind allows create-on-update: 404, whatever the resourceVersion."""
    path, make, qualified = (
        (CM, cm, "configmaps") if kind == "configmap" else (TH, thing, "things.ex.test")
    )
    status, out = server.send("PUT", f"{path}/gone", make("gone", resourceVersion="5"))
    assert (status, out["reason"], out["message"]) == (
        404,
        "NotFound",
        f'{qualified} "gone" not found',
    )


@pytest.mark.parametrize("kind", ["configmap", "custom-resource"])
def test_apply_that_creates_ignores_the_resource_version(server: Server, kind: str) -> None:
    path, make = (CM, cm) if kind == "configmap" else (TH, thing)
    name = f"applied-{kind}"
    server.send("DELETE", f"{path}/{name}", None)
    status, out = server.send(
        "PATCH", f"{path}/{name}", make(name, resourceVersion="5"), APPLY, "fieldManager=me"
    )
    assert status == 201, out
    stored = out["metadata"]["resourceVersion"]
    assert stored != "5"
    status, again = server.send("GET", f"{path}/{name}", None)
    assert (status, again["metadata"]["resourceVersion"]) == (200, stored)
    # once it exists, the configuration's resourceVersion is a precondition again
    status, out = server.send(
        "PATCH", f"{path}/{name}", make(name, resourceVersion="5"), APPLY, "fieldManager=me"
    )
    assert (status, out["reason"]) == (409, "Conflict"), out


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


@pytest.mark.parametrize(
    "case", ["name-missing", "name-empty", "name-mismatch", "namespace-mismatch"]
)
def test_put_of_a_scale_checks_its_name(server: Server, case: str) -> None:
    """The Scale a PUT sends meets the URL as any body does (the same update handler)."""
    _created(server, DEPLOYMENTS, _deployment("web"))
    status, scale = server.send("GET", f"{DEPLOYMENTS}/web/scale", None)
    assert status == 200, scale
    scale["spec"]["replicas"] = 3
    meta = scale["metadata"]
    if case == "name-missing":
        del meta["name"]
    elif case == "name-empty":
        meta["name"] = ""
    elif case == "name-mismatch":
        meta["name"] = "other"
    else:
        meta["namespace"] = "elsewhere"
    expected = {
        "name-missing": UNDETERMINABLE.format("web"),
        "name-empty": UNDETERMINABLE.format("web"),
        "name-mismatch": MISMATCH.format("other", "web"),
        "namespace-mismatch": NAMESPACE,
    }[case]
    assert server.send("PUT", f"{DEPLOYMENTS}/web/scale", scale) == bad_request(expected)
    status, out = server.send("GET", f"{DEPLOYMENTS}/web/scale", None)
    assert (status, out["spec"]["replicas"]) == (200, 1)
