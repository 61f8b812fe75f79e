"""kube-apiserver as the caller: reviews built as it builds them, sent over HTTPS to the
service name with the caBundle, answers checked as it checks them (VerifyAdmissionResponse
in k8s.io/apiserver's webhook request package; getConvertedObjectsFromResponse,
validateConvertedObject and restoreObjectMeta in apiextensions-apiserver's converter)."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import orjson

from kubewerk.core.patch import json_patch
from kubewerk.webhook import CertificateSet, WebhookServer

from .conftest import client_context, database, http_post, kube_review
from .models import GROUP, make_app

HOST = "db-webhook.ops.svc"


def verify_admission_response(
    request: dict[str, Any], answer: dict[str, Any], mutating: bool
) -> dict[str, Any]:
    """The checks kube-apiserver applies to a v1 webhook answer; raises AssertionError."""
    assert (
        answer.get("apiVersion") == request["apiVersion"]
        and answer.get("kind") == "AdmissionReview"
    ), "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview"
    response = answer.get("response")
    assert response is not None, "webhook response was absent"
    assert response.get("uid") == request["request"]["uid"], "expected response.uid"
    patch = response.get("patch")
    if patch:
        assert mutating, "validating webhooks may not return patches"
        assert response.get("patchType") == "JSONPatch", (
            "webhook returned response.patch but not response.patchType"
        )
    if not response.get("allowed"):
        status = response.get("status") or {}
        assert isinstance(status.get("message"), str)
        assert status.get("code", 403) >= 400
    return dict(response)


def kube_denial_message(name: str, response: dict[str, Any]) -> str:
    """What kubectl prints for a denial (webhookerrors.ToStatusErr)."""
    message = response["status"].get("message", "")
    if not message:
        return f'admission webhook "{name}" denied the request without explanation'
    return f'admission webhook "{name}" denied the request: {message}'


async def test_kube_style_admission_over_https(
    cert_set: CertificateSet, cert_dir: dict[str, Path]
) -> None:
    server = WebhookServer(
        make_app(), host="127.0.0.1", port=0, cert_file=cert_dir["cert"], key_file=cert_dir["key"]
    )
    # the caBundle as a webhook configuration carries it
    ca_pem = base64.b64decode(cert_set.ca_bundle)
    ctx = client_context(ca_pem)
    async with server:
        obj = database("orders", storageGi=5)
        req = kube_review("CREATE", obj)
        mutate = await http_post(
            server.port,
            "/mutate-webhook-test-kubewerk-dev-v1-database",
            req,
            ssl_context=ctx,
            server_hostname=HOST,
        )
        response = verify_admission_response(req, mutate.json(), mutating=True)
        patched = json_patch(obj, orjson.loads(base64.b64decode(response["patch"])))
        assert patched["spec"]["replicas"] == 1

        # the patched object goes on to the validating webhook, as the chain runs
        req = kube_review("CREATE", patched)
        check = await http_post(
            server.port,
            "/validate-webhook-test-kubewerk-dev-v1-database",
            req,
            ssl_context=ctx,
            server_hostname=HOST,
        )
        response = verify_admission_response(req, check.json(), mutating=False)
        assert response["allowed"] is True and response["warnings"] == ["no backup configured"]

        bad = database("orders", engine="oracle")
        req = kube_review("CREATE", bad)
        check = await http_post(
            server.port,
            "/validate-webhook-test-kubewerk-dev-v1-database",
            req,
            ssl_context=ctx,
            server_hostname=HOST,
        )
        response = verify_admission_response(req, check.json(), mutating=False)
        assert kube_denial_message("databases.webhook.test", response) == (
            'admission webhook "databases.webhook.test" denied the request: '
            "engine 'oracle' is not supported"
        )


async def test_kube_style_conversion_over_https(
    cert_set: CertificateSet, cert_dir: dict[str, Path]
) -> None:
    server = WebhookServer(
        make_app(), host="127.0.0.1", port=0, cert_file=cert_dir["cert"], key_file=cert_dir["key"]
    )
    ctx = client_context(cert_set.ca_cert)
    stored = [database(f"db{i}", storageGi=i + 1, replicas=2) for i in range(3)]
    for obj in stored:
        obj["metadata"]["resourceVersion"] = "7"
        obj["metadata"]["labels"] = {"tier": "gold"}
    converted: list[dict[str, Any]] = []
    async with server:
        for desired in (f"{GROUP}/v1alpha1", f"{GROUP}/v1"):
            objects = converted or stored
            uid = str(uuid.uuid4())
            req = {
                "kind": "ConversionReview",
                "apiVersion": "apiextensions.k8s.io/v1",
                "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
            }
            answer = (
                await http_post(server.port, "/convert", req, ssl_context=ctx, server_hostname=HOST)
            ).json()
            assert (
                answer["apiVersion"] == "apiextensions.k8s.io/v1"
                and answer["kind"] == "ConversionReview"
            )
            response = answer["response"]
            assert response["uid"] == uid
            assert response["result"]["status"] == "Success"
            converted = response["convertedObjects"]
            assert len(converted) == len(objects)
            for original, out in zip(objects, converted, strict=True):
                assert out["apiVersion"] == desired and out["kind"] == original["kind"]
                for key in ("name", "namespace", "uid"):
                    assert out["metadata"].get(key) == original["metadata"].get(key)
                # restoreObjectMeta: the original's metadata with the answer's labels/annotations
                restored = dict(original["metadata"])
                for key in ("labels", "annotations"):
                    if out["metadata"].get(key):
                        restored[key] = out["metadata"][key]
                    else:
                        restored.pop(key, None)
                assert out["metadata"] == restored
    assert converted == stored  # v1 -> v1alpha1 -> v1 is lossless
