"""The write path in kube-apiserver's order: a request body is decoded into its kind's
type (conversion, ``SetDefaults_*``) before mutating admission, so a webhook sees the
decoded object (k8s.io/apiserver pkg/endpoints/handlers/{create,update,patch}.go: the
body is decoded, and a patched object decoded and defaulted, before ``admit``; a
webhook's own patch is decoded and defaulted again, pkg/admission/plugin/webhook/
mutating/dispatcher.go). A Secret's ``stringData`` is merged into ``data`` by the
conversion to the internal type, an RBAC binding's empty ``apiGroup``s are defaulted
(pkg/apis/rbac/v1/defaults.go). A body that does not decode is refused (400) before any
webhook is called.

One recording webhook (a stdlib HTTPS server in a thread) and one in-process server
serve the module; the webhook changes nothing and keeps what it was sent."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubewerk.apiserver import decode
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.kinds.rbac import install_rbac
from kubewerk.apiserver.rest import ResourceApi
from kubewerk.apiserver.storage import open_store
from kubewerk.webhook.certs import CertificateSet, make_certificates
from tests.apiserver.helpers import asgi_call, json_call, tls_http_server

NS = "/api/v1/namespaces/default"
SECRETS = f"{NS}/secrets"
CMS = f"{NS}/configmaps"
BINDINGS = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
HOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
RBAC_GROUP = "rbac.authorization.k8s.io"

_seen: list[dict[str, Any]] = []
_lock = threading.Lock()


class _Recorder(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        with _lock:
            _seen.append(request)
        body = orjson.dumps(
            {
                "apiVersion": review["apiVersion"],
                "kind": "AdmissionReview",
                "response": {"uid": request["uid"], "allowed": True},
            }
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def seen(name: str) -> list[dict[str, Any]]:
    """The admission requests the webhook got for objects named ``name``, in order."""
    with _lock:
        return [r for r in _seen if r.get("name") == name]


@pytest.fixture(scope="module")
def certs() -> CertificateSet:
    return make_certificates("hooks", "default", days=2, extra_names=["127.0.0.1"])


@pytest.fixture(scope="module")
def hook_url(certs: CertificateSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with tls_http_server(_Recorder, certs, Path(tmp_path_factory.mktemp("certs"))) as base:
        yield f"{base}/mutate"


@pytest.fixture(scope="module")
def app() -> ApiServer:
    server = ApiServer(open_store("memory"))
    install_rbac(server)
    return server


@pytest.fixture
async def hooked(app: ApiServer, hook_url: str, certs: CertificateSet) -> ApiServer:
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "recorder"},
        "webhooks": [
            {
                "name": "record.example.com",
                "clientConfig": {"url": hook_url, "caBundle": certs.ca_bundle},
                "rules": [
                    {
                        "operations": ["CREATE", "UPDATE"],
                        "apiGroups": ["", RBAC_GROUP, "coordination.k8s.io"],
                        "apiVersions": ["v1"],
                        "resources": ["secrets", "configmaps", "rolebindings", "leases"],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
            }
        ],
    }
    status, body = await json_call(app, "GET", f"{HOOKS}/recorder")
    if status == 404:
        status, body = await json_call(app, "POST", HOOKS, config)
        assert status == 201, body
    return app


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


async def call(app: ApiServer, method: str, path: str, body: Any, ctype: str) -> tuple[int, Any]:
    path, _, query = path.partition("?")
    status, _, payload = await asgi_call(
        app, method, path, query, headers={"content-type": ctype}, body=body
    )
    return status, orjson.loads(payload)


async def test_a_created_secret_reaches_webhooks_with_string_data_merged(
    hooked: ApiServer,
) -> None:
    body = secret("s-create", stringData={"a": "x"}, data={"b": b64("y")})
    status, got = await json_call(hooked, "POST", SECRETS, body)
    assert status == 201, got
    [request] = seen("s-create")
    obj = request["object"]
    assert "stringData" not in obj
    assert obj["data"] == {"a": b64("x"), "b": b64("y")}
    assert obj["type"] == "Opaque"  # SetDefaults_Secret


async def test_an_updated_and_a_patched_secret_too(hooked: ApiServer) -> None:
    status, got = await json_call(hooked, "POST", SECRETS, secret("s-upd"))
    assert status == 201, got
    got["stringData"] = {"k": "v"}
    status, got = await json_call(hooked, "PUT", f"{SECRETS}/s-upd", got)
    assert status == 200, got
    update = seen("s-upd")[-1]
    assert update["operation"] == "UPDATE"
    assert "stringData" not in update["object"]
    assert update["object"]["data"] == {"k": b64("v")}
    patch = orjson.dumps({"stringData": {"p": "q"}})
    status, got = await call(
        hooked, "PATCH", f"{SECRETS}/s-upd", patch, "application/merge-patch+json"
    )
    assert status == 200, got
    patched = seen("s-upd")[-1]["object"]
    assert "stringData" not in patched
    assert patched["data"] == {"k": b64("v"), "p": b64("q")}


async def test_an_applied_secret_too(hooked: ApiServer) -> None:
    config = b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s-apply\nstringData:\n  a: x\n"
    status, got = await call(
        hooked,
        "PATCH",
        f"{SECRETS}/s-apply?fieldManager=me",
        config,
        "application/apply-patch+yaml",
    )
    assert status == 201, got
    [request] = seen("s-apply")
    assert request["operation"] == "CREATE"
    assert "stringData" not in request["object"]
    assert request["object"]["data"] == {"a": b64("x")}


async def test_a_binding_reaches_webhooks_with_its_api_groups_defaulted(
    hooked: ApiServer,
) -> None:
    body = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "rb-defaults"},
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": "sa", "namespace": "default"},
        ],
    }
    status, got = await json_call(hooked, "POST", BINDINGS, body)
    assert status == 201, got
    [request] = seen("rb-defaults")
    obj = request["object"]
    assert obj["roleRef"]["apiGroup"] == RBAC_GROUP
    assert obj["subjects"][0]["apiGroup"] == RBAC_GROUP
    assert obj["subjects"][1].get("apiGroup", "") == ""


async def test_a_body_that_does_not_decode_meets_no_webhook(hooked: ApiServer) -> None:
    wrong = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-wrong"}}
    status, got = await json_call(hooked, "POST", CMS, {**wrong, "data": {"k": 1}})
    assert status == 400, got
    assert "cannot unmarshal number into Go struct field ConfigMap.data" in got["message"]
    status, got = await json_call(
        hooked, "POST", f"{CMS}?fieldValidation=Strict", {**wrong, "bogus": 1}
    )
    assert status == 400, got
    assert got["message"] == 'strict decoding error: unknown field "bogus"'
    assert seen("cm-wrong") == []
    # Warn: decoded (the unknown field dropped) before the webhook sees it
    status, got = await json_call(
        hooked, "POST", f"{CMS}?fieldValidation=Warn", {**wrong, "bogus": 1}
    )
    assert status == 201, got
    [request] = seen("cm-wrong")
    assert "bogus" not in request["object"]


async def test_a_put_that_creates_is_admitted_as_a_create(hooked: ApiServer) -> None:
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "lease-put"},
        "spec": {"holderIdentity": "a"},
    }
    status, got = await json_call(hooked, "PUT", f"{LEASES}/lease-put", body)
    assert status == 201, got
    [request] = seen("lease-put")
    assert request["operation"] == "CREATE"
    assert request.get("oldObject") is None
    assert request["options"]["kind"] == "CreateOptions"
    status, got = await json_call(hooked, "PUT", f"{LEASES}/lease-put", got)
    assert status == 200, got
    assert seen("lease-put")[-1]["operation"] == "UPDATE"


# -- big bodies: the per-body work of a create in a worker thread ---------------------


@pytest.fixture(scope="module")
def plain() -> ApiServer:
    """A server without webhooks: creates take ``ResourceApi.create_async``."""
    return ApiServer(open_store("memory"))


BIG = "x" * (decode.OFFLOAD_BYTES + 1024)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        pytest.param(SECRETS, secret("big-secret", stringData={"k": BIG}), id="secret"),
        pytest.param(
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {"name": "big-revision"},
                "data": {"blob": BIG},
                "revision": 1,
            },
            id="typed-kind",
        ),
    ],
)
async def test_a_big_create_is_admitted_off_the_loop(
    plain: ApiServer, path: str, body: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    admit = ResourceApi._create_admit

    def recorded(self: ResourceApi, draft: Any) -> None:
        threads.append(threading.current_thread().name)
        admit(self, draft)

    monkeypatch.setattr(ResourceApi, "_create_admit", recorded)
    status, got = await json_call(plain, "POST", path, body)
    assert status == 201, got
    assert threads and threads[-1] != threading.main_thread().name
    if got["kind"] == "Secret":
        assert got["data"] == {"k": b64(BIG)} and "stringData" not in got
        assert got["type"] == "Opaque"
    else:
        assert got["data"] == {"blob": BIG}


async def test_a_big_create_through_the_webhooks_is_admitted_off_the_loop(
    hooked: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    decode_create = ResourceApi.decode_create
    admit = ResourceApi._create_admit

    def decoded(self: ResourceApi, *args: Any) -> list[str]:
        threads.append(threading.current_thread().name)
        return decode_create(self, *args)

    def admitted(self: ResourceApi, draft: Any) -> None:
        threads.append(threading.current_thread().name)
        admit(self, draft)

    monkeypatch.setattr(ResourceApi, "decode_create", decoded)
    monkeypatch.setattr(ResourceApi, "_create_admit", admitted)
    body = secret("big-hooked", stringData={"k": BIG})
    status, got = await json_call(hooked, "POST", SECRETS, body)
    assert status == 201, got
    assert len(threads) == 2 and threading.main_thread().name not in threads
    [request] = seen("big-hooked")
    assert request["object"]["data"] == {"k": b64(BIG)}
    assert "stringData" not in request["object"]
