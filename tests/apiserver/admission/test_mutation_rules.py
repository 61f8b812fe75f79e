"""What kube-apiserver does with an object a mutating webhook changed, checked against
its source:

* a rename on UPDATE passes the handler's URL check (``checkName`` runs on the request
  body, before admission) and meets ``ValidateObjectMetaUpdate`` in ``BeforeUpdate``:
  422 ``metadata.name: Invalid value: ...: field is immutable``
  (k8s.io/apiserver pkg/endpoints/handlers/update.go, pkg/registry/rest/update.go);
* a resourceVersion set on CREATE reaches storage, whose ``Create`` refuses it with a
  plain error: 500, no reason, ``resourceVersion should not be set on objects to be
  created`` (pkg/storage/etcd3/store.go); a dry run never gets there (DryRunnableStorage);
* a patched object that no longer decodes into its type is a 500 InternalError with the
  decoder's message (pkg/admission/plugin/webhook/mutating/dispatcher.go).

One webhook (a stdlib HTTPS server in a thread) serves the module; it acts on the
object's name prefix."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from kubewerk.webhook.certs import CertificateSet, make_certificates
from tests.apiserver.helpers import json_call, tls_http_server

CM = "/api/v1/namespaces/default/configmaps"
HOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def _patch_for(request: dict[str, Any]) -> list[dict[str, Any]]:
    obj = request.get("object") or {}
    name = (obj.get("metadata") or {}).get("name") or ""
    operation = request.get("operation")
    if name.startswith("rename-") and operation == "UPDATE":
        return [{"op": "replace", "path": "/metadata/name", "value": "renamed"}]
    if name.startswith("rv-") and operation == "CREATE":
        return [{"op": "add", "path": "/metadata/resourceVersion", "value": "12345"}]
    if name.startswith("badrv-") and operation == "CREATE":
        return [{"op": "add", "path": "/metadata/resourceVersion", "value": "-1"}]
    if name.startswith("bad-"):
        return [{"op": "add", "path": "/data", "value": {"k": {"x": 1}}}]
    if name.startswith("extra-"):
        return [{"op": "add", "path": "/spec", "value": {"x": 1}}]
    return []


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        patch = _patch_for(request)
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(orjson.dumps(patch)).decode()
        body = orjson.dumps(
            {"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response}
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def certs() -> CertificateSet:
    return make_certificates("hooks", "default", days=2, extra_names=["127.0.0.1"])


@pytest.fixture(scope="module")
def hook_url(certs: CertificateSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with tls_http_server(_Hook, certs, Path(tmp_path_factory.mktemp("certs"))) as base:
        yield f"{base}/mutate"


@pytest.fixture(scope="module")
def app() -> ApiServer:
    return ApiServer(open_store("memory"))


@pytest.fixture
async def hooked(app: ApiServer, hook_url: str, certs: CertificateSet) -> ApiServer:
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mutations"},
        "webhooks": [
            {
                "name": "mutate.example.com",
                "clientConfig": {"url": hook_url, "caBundle": certs.ca_bundle},
                "rules": [
                    {
                        "operations": ["CREATE", "UPDATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["configmaps"],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
            }
        ],
    }
    status, body = await json_call(app, "GET", f"{HOOKS}/mutations")
    if status == 404:
        status, body = await json_call(app, "POST", HOOKS, config)
        assert status == 201, body
    return app


def configmap(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


async def test_a_rename_on_update_is_an_immutable_field(hooked: ApiServer) -> None:
    status, body = await json_call(hooked, "POST", CM, configmap("rename-me"))
    assert status == 201, body
    body["data"] = {"a": "b"}
    status, got = await json_call(hooked, "PUT", f"{CM}/rename-me", body)
    assert status == 422, got
    assert got["reason"] == "Invalid"
    assert got["message"] == (
        'ConfigMap "renamed" is invalid: metadata.name: Invalid value: "renamed": '
        "field is immutable"
    )
    assert got["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "renamed": field is immutable',
            "field": "metadata.name",
        }
    ]
    # a merge patch: the same, where the rename was dropped silently
    status, got = await json_call(hooked, "GET", f"{CM}/rename-me")
    status, got = await json_call_patch(hooked, f"{CM}/rename-me", {"data": {"c": "d"}})
    assert status == 422, got
    assert got["details"]["causes"][0]["field"] == "metadata.name"
    # the request body's own name is still checked against the URL first
    body["metadata"]["name"] = "other"
    status, got = await json_call(hooked, "PUT", f"{CM}/rename-me", body)
    assert status == 400, got
    assert got["message"] == (
        "the name of the object (other) does not match the name on the URL (rename-me)"
    )


async def json_call_patch(app: ApiServer, path: str, patch: Any) -> tuple[int, Any]:
    from tests.apiserver.helpers import asgi_call

    status, _, payload = await asgi_call(
        app,
        "PATCH",
        path,
        headers={"content-type": "application/merge-patch+json"},
        body=orjson.dumps(patch),
    )
    return status, orjson.loads(payload)


async def test_a_resource_version_set_on_create_is_refused_by_storage(hooked: ApiServer) -> None:
    status, got = await json_call(hooked, "POST", CM, configmap("rv-set"))
    assert status == 500, got
    assert "reason" not in got
    assert got["message"] == "resourceVersion should not be set on objects to be created"
    status, got = await json_call(hooked, "GET", f"{CM}/rv-set")
    assert status == 404, got
    # a dry run never reaches storage's check
    status, got = await json_call(hooked, "POST", f"{CM}?dryRun=All", configmap("rv-dry"))
    assert status == 201, got
    # a resourceVersion that is no number is not one (ObjectResourceVersion fails)
    status, got = await json_call(hooked, "POST", CM, configmap("badrv-x"))
    assert status == 201, got


async def test_a_request_body_with_a_resource_version_is_refused_too(app: ApiServer) -> None:
    cm = configmap("plain-rv")
    cm["metadata"]["resourceVersion"] = "7"
    status, got = await json_call(app, "POST", CM, cm)
    assert status == 500, got
    assert got["message"] == "resourceVersion should not be set on objects to be created"
    cm["metadata"]["resourceVersion"] = "0"
    status, got = await json_call(app, "POST", CM, cm)
    assert status == 201, got
    assert got["metadata"]["resourceVersion"] != "0"


async def test_a_patched_object_that_no_longer_decodes_is_an_internal_error(
    hooked: ApiServer,
) -> None:
    status, got = await json_call(hooked, "POST", CM, configmap("bad-type"))
    assert status == 500, got
    assert got["reason"] == "InternalError"
    assert got["message"] == (
        "Internal error occurred: json: cannot unmarshal object into Go struct field "
        "ConfigMap.data of type string"
    )
    status, got = await json_call(hooked, "GET", f"{CM}/bad-type")
    assert status == 404, got


async def test_a_field_a_webhook_adds_that_the_type_lacks_is_dropped(hooked: ApiServer) -> None:
    status, got = await json_call(
        hooked, "POST", f"{CM}?fieldValidation=Strict", configmap("extra-field")
    )
    assert status == 201, got
    assert "spec" not in got
