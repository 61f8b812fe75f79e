"""The embedded server calls admission webhooks over HTTPS with the caBundle, as
kube-apiserver does: denials, warnings and mutations with kube's messages, failurePolicy
with the webhook down or too slow, dry run, selectors, matchConditions, reinvocation,
service references resolved through Endpoints, and ValidatingAdmissionPolicies with
ConfigMap params read on each request."""

from __future__ import annotations

import asyncio
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
from tests.apiserver.helpers import Api, tls_webhook_server

AR = "/apis/admissionregistration.k8s.io/v1"
CM = "/api/v1/namespaces/default/configmaps"


@dataclass
class Recorder:
    """A raw ASGI webhook: answers from ``data`` of the object it is sent."""

    reviews: list[dict[str, Any]] = field(default_factory=list)
    paths: tuple[str, ...] = ("/validate", "/mutate", "/tag", "/slow", "/bad-uid")

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
        request = review["request"]
        obj = request.get("object") or request.get("oldObject") or {}
        data = obj.get("data") or {}
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        path = scope["path"]
        if path == "/slow":
            await asyncio.sleep(2.5)
        if path == "/validate":
            if "deny" in data:
                response = {
                    "uid": request["uid"],
                    "allowed": False,
                    "status": {"message": data["deny"]},
                }
            if "warn" in data:
                response["warnings"] = [data["warn"]]
        if path == "/bad-uid":
            response["uid"] = "not-it"
        if path == "/mutate":
            labels = (obj.get("metadata") or {}).get("labels") or {}
            count = str(int(labels.get("mutated", "0")) + 1)
            op = "replace" if "labels" in obj.get("metadata", {}) else "add"
            patch = (
                [{"op": op, "path": "/metadata/labels/mutated", "value": count}]
                if op == "replace"
                else [{"op": "add", "path": "/metadata/labels", "value": {"mutated": count}}]
            )
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(orjson.dumps(patch)).decode()
        if path == "/tag":
            patch = [{"op": "add", "path": "/data/tagged", "value": "yes"}]
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
        yield client
    finally:
        await client.close()


def hook(
    name: str,
    certs: CertificateSet,
    *,
    url: str | None = None,
    service_path: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    client: dict[str, Any] = {"caBundle": certs.ca_bundle}
    if url is not None:
        client["url"] = url
    else:
        client["service"] = {"name": "hooks", "namespace": "default", "path": service_path}
    return {
        "name": name,
        "clientConfig": client,
        "rules": [
            {
                "operations": ["CREATE", "UPDATE", "DELETE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }


async def register(api: Api, kind: str, name: str, *hooks: dict[str, Any]) -> None:
    resource = kind.lower() + "s"
    status, body = await api.post(
        f"{AR}/{resource}",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name},
            "webhooks": list(hooks),
        },
    )
    assert status == 201, body


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_validating_webhook_via_service_endpoints(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    # the documented mapping: a selector-less Service whose Endpoints name the local port
    status, body = await api.post(
        "/api/v1/namespaces/default/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "hooks"},
            "spec": {"ports": [{"port": 443, "targetPort": server.port}]},
        },
    )
    assert status == 201, body
    status, body = await api.post(
        "/api/v1/namespaces/default/endpoints",
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "hooks"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": server.port}]}],
        },
    )
    assert status == 201, body
    await register(
        api,
        "ValidatingWebhookConfiguration",
        "check",
        hook("check.hooks.test", certs, service_path="/validate"),
    )
    status, body = await api.post(CM, configmap("bad", deny="no thanks"))
    assert status == 400, body
    assert body["message"] == ('admission webhook "check.hooks.test" denied the request: no thanks')
    assert api.session is not None
    async with api.session.post(
        api.base + CM,
        data=orjson.dumps(configmap("fine", warn="careful")),
        headers={"Content-Type": "application/json"},
    ) as resp:
        assert resp.status == 201
        assert resp.headers.getall("Warning") == ['299 - "careful"']
    review = recorder.reviews[-1]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    req = review["request"]
    assert req["operation"] == "CREATE" and req["namespace"] == "default"
    assert req["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert req["object"]["metadata"]["uid"]  # validating webhooks see the admitted object
    # UPDATE and DELETE go through validating webhooks too (DELETE with oldObject)
    status, body = await api.put(f"{CM}/fine", {**configmap("fine", deny="changed my mind")})
    assert status == 400 and "changed my mind" in body["message"]
    status, body = await api.delete(f"{CM}/fine")
    assert status == 200, body
    assert recorder.reviews[-1]["request"]["operation"] == "DELETE"
    assert recorder.reviews[-1]["request"]["object"] is None
    assert recorder.reviews[-1]["request"]["oldObject"]["metadata"]["name"] == "fine"


async def test_mutating_webhook_patch_and_reinvocation(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, _ = hook_server
    base = f"https://127.0.0.1:{server.port}"
    await register(
        api,
        "MutatingWebhookConfiguration",
        "mutate",
        hook("label.hooks.test", certs, url=base + "/mutate", reinvocationPolicy="IfNeeded"),
        hook("tag.hooks.test", certs, url=base + "/tag"),
    )
    status, body = await api.post(CM, configmap("m", a="1"))
    assert status == 201, body
    # the first webhook ran again after the second changed the object
    assert body["metadata"]["labels"] == {"mutated": "2"}
    assert body["data"] == {"a": "1", "tagged": "yes"}
    status, body = await api.get(f"{CM}/m")
    assert body["data"]["tagged"] == "yes"
    # a patch goes through the mutating webhooks too
    status, body = await api.patch(f"{CM}/m", {"data": {"b": "2"}})
    assert status == 200, body
    # the tag webhook changed nothing this time: no reinvocation
    assert body["metadata"]["labels"] == {"mutated": "3"}


async def test_failure_policy_webhook_down_and_too_slow(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, _ = hook_server
    down = "https://127.0.0.1:1/validate"
    await register(
        api, "ValidatingWebhookConfiguration", "down", hook("down.hooks.test", certs, url=down)
    )
    status, body = await api.post(CM, configmap("x"))
    assert status == 500, body
    assert body["reason"] == "InternalError"
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "down.hooks.test": failed to call '
        'webhook: Post "https://127.0.0.1:1/validate?timeout=10s": dial tcp 127.0.0.1:1: '
        "connect: connection refused"
    )
    status, _ = await api.delete(f"{AR}/validatingwebhookconfigurations/down")
    assert status == 200
    slow = f"https://127.0.0.1:{server.port}/slow"
    await register(
        api,
        "ValidatingWebhookConfiguration",
        "slow",
        hook("slow.hooks.test", certs, url=slow, timeoutSeconds=1),
        hook("ignored.hooks.test", certs, url=down, failurePolicy="Ignore"),
    )
    status, body = await api.post(CM, configmap("y"))
    assert status == 500, body
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "slow.hooks.test": failed to call '
        f'webhook: Post "{slow}?timeout=1s": context deadline exceeded'
    )
    status, body = await api.patch(
        f"{AR}/validatingwebhookconfigurations/slow",
        [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}],
        kind="json",
    )
    assert status == 200, body
    status, body = await api.post(CM, configmap("y"))
    assert status == 201, body


async def test_bad_answer_and_untrusted_certificate(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, _ = hook_server
    base = f"https://127.0.0.1:{server.port}"
    await register(
        api,
        "ValidatingWebhookConfiguration",
        "uid",
        hook("uid.hooks.test", certs, url=base + "/bad-uid"),
    )
    status, body = await api.post(CM, configmap("x"))
    assert status == 500
    assert body["message"].startswith(
        'Internal error occurred: failed calling webhook "uid.hooks.test": received invalid '
        'webhook response: expected response.uid="'
    )
    assert body["message"].endswith('got "not-it"')
    await api.delete(f"{AR}/validatingwebhookconfigurations/uid")
    other = make_certificates("other", "default", days=2)
    await register(
        api,
        "ValidatingWebhookConfiguration",
        "ca",
        hook("ca.hooks.test", other, url=base + "/validate"),
    )
    status, body = await api.post(CM, configmap("x"))
    assert status == 500
    assert "x509: certificate signed by unknown authority" in body["message"]


async def test_selectors_match_conditions_and_dry_run(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    base = f"https://127.0.0.1:{server.port}"
    await register(
        api,
        "ValidatingWebhookConfiguration",
        "picky",
        hook(
            "picky.hooks.test",
            certs,
            url=base + "/validate",
            objectSelector={"matchLabels": {"checked": "yes"}},
            namespaceSelector={
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["default"]}
                ]
            },
            matchConditions=[
                {
                    "name": "not-skipped",
                    "expression": "!has(object.data) || !('skip' in object.data)",
                }
            ],
        ),
    )
    status, _ = await api.post(CM, configmap("unlabelled", deny="x"))
    assert status == 201  # objectSelector: not called
    labelled = configmap("labelled", deny="labelled")
    labelled["metadata"]["labels"] = {"checked": "yes"}
    status, body = await api.post(CM, labelled)
    assert status == 400 and body["message"].endswith(": labelled")
    labelled["data"]["skip"] = "1"
    status, _ = await api.post(CM, labelled)
    assert status == 201  # matchConditions excluded it
    calls = len(recorder.reviews)
    labelled = configmap("dry", warn="w")
    labelled["metadata"]["labels"] = {"checked": "yes"}
    status, body = await api.post(CM + "?dryRun=All", labelled)
    assert status == 201, body
    assert recorder.reviews[-1]["request"]["dryRun"] is True and len(recorder.reviews) == calls + 1
    status, _ = await api.get(f"{CM}/dry")
    assert status == 404


async def test_policy_with_configmap_params(api: Api) -> None:
    status, body = await api.post(
        CM,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "limits"},
            "data": {"maxKeys": "1"},
        },
    )
    assert status == 201, body
    status, body = await api.post(
        f"{AR}/validatingadmissionpolicies",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "max-keys"},
            "spec": {
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "operations": ["CREATE", "UPDATE"],
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["secrets"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": "size(object.data) <= int(params.data.maxKeys)",
                        "messageExpression": "'at most ' + params.data.maxKeys + ' keys'",
                    }
                ],
            },
        },
    )
    assert status == 201, body
    status, body = await api.post(
        f"{AR}/validatingadmissionpolicybindings",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "max-keys-binding"},
            "spec": {
                "policyName": "max-keys",
                "paramRef": {"name": "limits", "namespace": "default"},
                "validationActions": ["Deny"],
            },
        },
    )
    assert status == 201, body
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "two"},
        "data": {"a": "YQ==", "b": "Yg=="},
    }
    status, body = await api.post("/api/v1/namespaces/default/secrets", secret)
    assert status == 422, body
    assert body["message"] == (
        "secrets \"two\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding "
        "'max-keys-binding' denied request: at most 1 keys"
    )
    # the ConfigMap changes: the next request sees it
    status, body = await api.patch(f"{CM}/limits", {"data": {"maxKeys": "2"}})
    assert status == 200, body
    status, body = await api.post("/api/v1/namespaces/default/secrets", secret)
    assert status == 201, body
    # Warn instead of Deny: a Warning header, the write goes through
    status, body = await api.patch(
        f"{AR}/validatingadmissionpolicybindings/max-keys-binding",
        {"spec": {"validationActions": ["Warn", "Audit"]}},
    )
    assert status == 200, body
    assert api.session is not None
    secret["metadata"]["name"] = "three"
    secret["data"]["c"] = "Yw=="
    async with api.session.post(
        api.base + "/api/v1/namespaces/default/secrets",
        data=orjson.dumps(secret),
        headers={"Content-Type": "application/json"},
    ) as resp:
        assert resp.status == 201
        assert resp.headers.getall("Warning") == [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'max-keys' with binding "
            "'max-keys-binding': at most 2 keys\""
        ]


async def test_webhook_connections_are_reused_and_follow_ca_bundle(
    aserver: EmbeddedServer,
    api: Api,
    hook_server: tuple[WebhookServer, Recorder],
    certs: CertificateSet,
) -> None:
    server, recorder = hook_server
    url = f"https://127.0.0.1:{server.port}/validate"
    await register(
        api, "ValidatingWebhookConfiguration", "keep", hook("keep.hooks.test", certs, url=url)
    )
    pool = aserver.app.chain.pool
    for i in range(5):
        status, body = await api.post(CM, configmap(f"seq-{i}"))
        assert status == 201, body
    assert len(recorder.reviews) == 5
    assert pool.connections_made == 1  # one TLS handshake for five calls
    # a caBundle the server's certificate does not chain to: the kept connection, made
    # under the old trust, must not carry the call
    other = make_certificates("other", "default", days=2)
    status, body = await api.put(
        f"{AR}/validatingwebhookconfigurations/keep",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "keep"},
            "webhooks": [hook("keep.hooks.test", other, url=url)],
        },
    )
    assert status == 200, body
    status, body = await api.post(CM, configmap("after"))
    assert status == 500
    assert "x509: certificate signed by unknown authority" in body["message"]
    assert len(recorder.reviews) == 5
