"""A custom resource reaches mutating webhooks pruned and defaulted, as kube-apiserver's
decoder leaves it (apiextensions-apiserver ``schemaCoercingDecoder`` and
``unstructuredDefaulter`` in the request codec); unknown fields are the decoder's
warnings or Strict's 400, before anything reads storage; a webhook's patch is defaulted
in the webhook's version (the mutating dispatcher's ``GetObjectDefaulter().Default``);
and what a webhook adds that the schema does not know is dropped without a word (kube's
storage drops it)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.webhook import WebhookServer
from kubewerk.webhook.certs import CertificateSet, make_certificates
from tests.apiserver.helpers import CRD_PATH, Api, tls_webhook_server

AR = "/apis/admissionregistration.k8s.io/v1"
WIDGETS = "/apis/order.test/{v}/namespaces/default/widgets"

PATCHES: dict[str, list[dict[str, Any]]] = {
    "/record": [],
    "/add-unknown": [{"op": "add", "path": "/spec/extra", "value": "x"}],
    "/remove-size": [{"op": "remove", "path": "/spec/size"}],
    "/label": [{"op": "add", "path": "/metadata/labels", "value": {"hooked": "yes"}}],
    "/warn": [],
}


@dataclass
class Recorder:
    """A raw ASGI webhook: records each review and answers with the JSON Patch of its
    path (``PATCHES``; none for ``/record``)."""

    reviews: list[dict[str, Any]] = field(default_factory=list)
    paths: tuple[str, ...] = tuple(PATCHES)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        review = orjson.loads(body)
        self.reviews.append(review)
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
        patch = PATCHES[scope["path"]]
        if scope["path"] == "/warn":
            response["warnings"] = ["from the hook"]
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(orjson.dumps(patch)).decode()
        answer = orjson.dumps(
            {"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response}
        )
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": answer})

    def objects(self) -> list[dict[str, Any]]:
        return [r["request"]["object"] for r in self.reviews]


def _schema(mode_default: str | None) -> dict[str, Any]:
    mode: dict[str, Any] = {"type": "string"}
    if mode_default is not None:
        mode["default"] = mode_default
    return {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"size": {"type": "integer", "default": 3}, "mode": mode},
                },
                "status": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "phase": {"type": "string", "default": "Pending"},
                        "count": {"type": "integer"},
                    },
                },
            },
        }
    }


WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.order.test"},
    "spec": {
        "group": "order.test",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            # v1 has no default for spec.mode, v2 defaults it: a webhook's version shows
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": _schema(None),
                "subresources": {"status": {}},
            },
            {
                "name": "v2",
                "served": True,
                "storage": False,
                "schema": _schema("fast"),
                "subresources": {"status": {}},
            },
        ],
    },
}


@pytest.fixture(scope="module")
def certs() -> CertificateSet:
    return make_certificates("hooks", "default", days=2, extra_names=["127.0.0.1"])


@pytest.fixture
async def hook_server(
    certs: CertificateSet, tmp_path: Path
) -> AsyncIterator[tuple[WebhookServer, Recorder]]:
    recorder = Recorder()
    async with tls_webhook_server(recorder, certs, tmp_path / "certs") as server:
        yield server, recorder


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        status, body = await client.post(CRD_PATH, WIDGET_CRD)
        assert status == 201, body
        await client.wait_established("widgets.order.test")
        yield client
    finally:
        await client.close()


async def call(
    api: Api,
    method: str,
    path: str,
    body: Any,
    content_type: str = "application/json",
) -> tuple[int, Any, list[str]]:
    """``(status, body, warnings)``: the warning texts of the answer's Warning headers."""
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    async with api.session.request(
        method, api.base + path, data=data, headers={"Content-Type": content_type}
    ) as resp:
        answer = orjson.loads(await resp.read())
        warnings = [orjson.loads(h.split(" - ", 1)[1]) for h in resp.headers.getall("Warning", [])]
        return resp.status, answer, warnings


async def mutating(
    api: Api,
    server: WebhookServer,
    certs: CertificateSet,
    path: str,
    *,
    version: str = "v1",
    resource: str = "widgets",
    match_policy: str = "Equivalent",
) -> None:
    status, body = await api.post(
        f"{AR}/mutatingwebhookconfigurations",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "order"},
            "webhooks": [
                {
                    "name": "order.hooks.test",
                    "clientConfig": {
                        "caBundle": certs.ca_bundle,
                        "url": f"https://127.0.0.1:{server.port}{path}",
                    },
                    "rules": [
                        {
                            "operations": ["CREATE", "UPDATE"],
                            "apiGroups": ["order.test"],
                            "apiVersions": [version],
                            "resources": [resource],
                        }
                    ],
                    "matchPolicy": match_policy,
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        },
    )
    assert status == 201, body


def widget(name: str, spec: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    return {
        "apiVersion": f"order.test/{version}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


async def test_create_reaches_the_webhook_pruned_and_defaulted(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    await mutating(api, server, certs, "/record")
    status, body, warnings = await call(
        api, "POST", WIDGETS.format(v="v1"), widget("a", {"mode": "m", "bogus": 1})
    )
    assert status == 201, body
    # kube's decoder pruned spec.bogus (a warning under Warn) and applied spec.size's
    # default before mutating admission
    assert warnings == ['unknown field "spec.bogus"']
    (seen,) = recorder.objects()
    assert seen["spec"] == {"mode": "m", "size": 3}
    assert body["spec"] == {"mode": "m", "size": 3}


async def test_webhook_added_unknown_field_is_dropped_silently(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    await mutating(api, server, certs, "/add-unknown")
    path = WIDGETS.format(v="v1") + "?fieldValidation=Strict"
    status, body, warnings = await call(api, "POST", path, widget("a", {}))
    # Strict refuses unknown fields of the request body, at decoding; the webhook's
    # spec.extra is no request field: kube's storage drops it, no error, no warning
    assert status == 201, body
    assert warnings == []
    assert body["spec"] == {"size": 3}
    assert recorder.objects()[0]["spec"] == {"size": 3}
    status, body = await api.get(WIDGETS.format(v="v1") + "/a")
    assert status == 200 and body["spec"] == {"size": 3}
    # a body's own unknown field under Strict is still the decoder's 400, before any webhook
    status, body, _ = await call(api, "POST", path, widget("b", {"bogus": 1}))
    assert status == 400, body
    assert body["message"] == 'strict decoding error: unknown field "spec.bogus"'
    assert len(recorder.reviews) == 1


async def test_patch_is_defaulted_in_the_webhooks_version(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    # the webhook asks for v2 only; a v1 request reaches it converted (Equivalent), and
    # its patch is defaulted with v2's schema, which defaults spec.mode
    await mutating(api, server, certs, "/label", version="v2")
    status, body, _ = await call(api, "POST", WIDGETS.format(v="v1"), widget("a", {}))
    assert status == 201, body
    assert recorder.objects()[0]["apiVersion"] == "order.test/v2"
    # converted for the webhook, not defaulted there: v1's defaults only
    assert recorder.objects()[0]["spec"] == {"size": 3}
    assert body["metadata"]["labels"] == {"hooked": "yes"}
    assert body["spec"] == {"size": 3, "mode": "fast"}


async def test_no_patch_no_second_defaulting(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    # a webhook that patches nothing: nothing is defaulted in its version
    await mutating(api, server, certs, "/record", version="v2")
    status, body, _ = await call(api, "POST", WIDGETS.format(v="v1"), widget("a", {}))
    assert status == 201, body
    assert len(recorder.reviews) == 1
    assert body["spec"] == {"size": 3}


async def test_webhook_removing_a_default_gets_it_again(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    await mutating(api, server, certs, "/remove-size")
    status, body, _ = await call(api, "POST", WIDGETS.format(v="v1"), widget("a", {"size": 7}))
    assert status == 201, body
    assert recorder.objects()[0]["spec"] == {"size": 7}
    # the patch removed spec.size; the dispatcher's defaulting puts the default back
    assert body["spec"] == {"size": 3}


async def test_update_and_patch_reach_the_webhook_defaulted(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    status, created, _ = await call(api, "POST", WIDGETS.format(v="v1"), widget("a", {"size": 5}))
    assert status == 201, created
    await mutating(api, server, certs, "/record")
    item = WIDGETS.format(v="v1") + "/a"
    # a merge patch deleting spec.size: the patched object is decoded, so defaulted
    status, body, warnings = await call(
        api,
        "PATCH",
        item,
        {"spec": {"size": None, "bogus": True}},
        "application/merge-patch+json",
    )
    assert status == 200, body
    assert warnings == ['unknown field "spec.bogus"']
    review = recorder.reviews[-1]["request"]
    assert review["operation"] == "UPDATE"
    assert review["object"]["spec"] == {"size": 3}
    assert review["oldObject"]["spec"] == {"size": 5}
    # a PUT without spec.size, with an unknown field
    put = {**body, "spec": {"mode": "m", "bogus": 1}}
    status, body, warnings = await call(api, "PUT", item, put)
    assert status == 200, body
    assert warnings == ['unknown field "spec.bogus"']
    review = recorder.reviews[-1]["request"]
    assert review["object"]["spec"] == {"mode": "m", "size": 3}
    assert body["spec"] == {"mode": "m", "size": 3}


async def test_status_write_reaches_the_webhook_defaulted(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    status, created, _ = await call(api, "POST", WIDGETS.format(v="v1"), widget("a", {}))
    assert status == 201, created
    await mutating(api, server, certs, "/record", resource="widgets/status")
    item = WIDGETS.format(v="v1") + "/a/status"
    status, body, warnings = await call(
        api, "PUT", item, {**created, "status": {"count": 2, "bogus": "x"}}
    )
    assert status == 200, body
    assert warnings == ['unknown field "status.bogus"']
    review = recorder.reviews[-1]["request"]
    assert review["subResource"] == "status"
    assert review["object"]["status"] == {"count": 2, "phase": "Pending"}
    assert body["status"] == {"count": 2, "phase": "Pending"}


async def test_apply_reaches_the_webhook_defaulted(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    await mutating(api, server, certs, "/record")
    item = WIDGETS.format(v="v1") + "/a?fieldManager=me"
    status, body, _ = await call(
        api, "PATCH", item, widget("a", {"mode": "m"}), "application/apply-patch+yaml"
    )
    assert status == 201, body
    review = recorder.reviews[-1]["request"]
    assert review["operation"] == "CREATE"
    assert review["object"]["spec"] == {"mode": "m", "size": 3}
    status, body, _ = await call(
        api, "PATCH", item, widget("a", {"mode": "n"}), "application/apply-patch+yaml"
    )
    assert status == 200, body
    review = recorder.reviews[-1]["request"]
    assert review["operation"] == "UPDATE"
    assert review["object"]["spec"] == {"mode": "n", "size": 3}


async def test_strict_unknown_field_is_refused_before_storage_is_read(api: Api) -> None:
    # no webhook: the decoder's 400 comes before the namespace's 404 and the update's 409
    missing = "/apis/order.test/v1/namespaces/nowhere/widgets?fieldValidation=Strict"
    status, body, _ = await call(api, "POST", missing, widget("a", {"bogus": 1}))
    assert status == 400, body
    assert body["message"] == 'strict decoding error: unknown field "spec.bogus"'
    status, created, _ = await call(api, "POST", WIDGETS.format(v="v1"), widget("a", {}))
    assert status == 201, created
    stale = {**created, "spec": {"bogus": 1}}
    stale["metadata"] = {**created["metadata"], "resourceVersion": "1"}
    item = WIDGETS.format(v="v1") + "/a?fieldValidation=Strict"
    status, body, _ = await call(api, "PUT", item, stale)
    assert status == 400, body
    assert body["message"] == 'strict decoding error: unknown field "spec.bogus"'


async def test_warnings_come_in_kubes_order(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, _ = hook_server
    await mutating(api, server, certs, "/warn")
    body = widget("a", {"bogus": 1})
    body["metadata"]["finalizers"] = ["plain"]
    status, created, warnings = await call(api, "POST", WIDGETS.format(v="v1"), body)
    assert status == 201, created
    # the decoder's, the mutating webhook's, then the kind's (WarningsOnCreate)
    assert warnings[:2] == ['unknown field "spec.bogus"', "from the hook"]
    assert len(warnings) == 3 and "plain" in warnings[2]
    status, patched, warnings = await call(
        api,
        "PATCH",
        WIDGETS.format(v="v1") + "/a",
        {"spec": {"bogus": 2}},
        "application/merge-patch+json",
    )
    assert status == 200, patched
    assert warnings == ['unknown field "spec.bogus"', "from the hook"]


async def test_status_the_create_drops_is_defaulted_back(api: Api) -> None:
    # PrepareForCreate drops the status (the version has the status subresource); kube
    # stores the object without it and its read from storage defaults it back
    body = widget("a", {})
    body["status"] = {"count": 5}
    status, created, _ = await call(api, "POST", WIDGETS.format(v="v1"), body)
    assert status == 201, created
    assert created["status"] == {"phase": "Pending"}
    status, got = await api.get(WIDGETS.format(v="v1") + "/a")
    assert status == 200 and got["status"] == {"phase": "Pending"}


async def test_a_webhook_reads_go_numbers(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    # kube writes the review with Go's encoding/json: the request's float64 2.0 arrives
    # as 2, which a Go webhook's int32 field decodes
    server, recorder = hook_server
    await mutating(api, server, certs, "/record")
    status, body, _ = await call(
        api, "POST", WIDGETS.format(v="v1"), widget("a", {"size": 2.0, "mode": "m"})
    )
    assert status == 201, body
    (seen,) = recorder.objects()
    size: Any = seen["spec"]["size"]
    assert type(size) is int and size == 2
    assert type(body["spec"]["size"]) is int


async def test_an_integer_body_reaches_the_webhook_as_it_came(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    await mutating(api, server, certs, "/record")
    status, body, _ = await call(api, "POST", WIDGETS.format(v="v1"), widget("b", {"size": 5}))
    assert status == 201, body
    (seen,) = recorder.objects()
    assert seen["spec"] == {"size": 5}
