"""Admission for ``/scale`` writes as kube-apiserver runs it: webhooks and policies whose
rules name ``deployments/scale`` (in the resource's own group) get an UPDATE of kind
``autoscaling/v1`` Scale, resource ``apps/v1`` ``deployments``, subResource ``scale``;
mutating webhooks may change the requested Scale; validation sees the resulting one."""

from __future__ import annotations

from typing import Any

from kubewerk.webhook import WebhookServer
from kubewerk.webhook.certs import CertificateSet
from tests.apiserver.admission import test_webhooks as hooks
from tests.apiserver.admission.test_webhooks import Recorder, register
from tests.apiserver.helpers import Api

certs = hooks.certs  # the webhook server's fixtures
hook_server = hooks.hook_server

AR = "/apis/admissionregistration.k8s.io/v1"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str) -> dict[str, Any]:
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


def scale_rule() -> dict[str, Any]:
    return {
        "operations": ["UPDATE"],
        "apiGroups": ["apps"],
        "apiVersions": ["v1"],
        "resources": ["deployments/scale"],
    }


async def test_validating_webhook_sees_the_scale(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    status, body = await api.post(DEPLOY, deployment("web"))
    assert status == 201, body
    await register(
        api,
        "ValidatingWebhookConfiguration",
        "scale",
        {
            "name": "scale.hooks.test",
            "clientConfig": {
                "url": f"https://127.0.0.1:{server.port}/validate",
                "caBundle": certs.ca_bundle,
            },
            "rules": [scale_rule()],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        },
    )
    # kubectl scale: a merge patch of the Scale
    status, body = await api.patch(f"{DEPLOY}/web/scale", {"spec": {"replicas": 3}})
    assert status == 200, body
    assert body["kind"] == "Scale" and body["spec"] == {"replicas": 3}
    [review] = recorder.reviews
    req = review["request"]
    assert req["operation"] == "UPDATE"
    assert req["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert req["requestKind"] == req["kind"]
    assert req["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert req["subResource"] == "scale" and req["requestSubResource"] == "scale"
    assert req["name"] == "web" and req["namespace"] == "default"
    assert req["object"]["kind"] == "Scale" and req["object"]["spec"] == {"replicas": 3}
    assert req["oldObject"]["kind"] == "Scale" and req["oldObject"]["spec"] == {"replicas": 1}
    # PUT of the Scale goes the same way; writes to the Deployment itself do not match
    status, scale = await api.get(f"{DEPLOY}/web/scale")
    scale["spec"]["replicas"] = 4
    status, body = await api.put(f"{DEPLOY}/web/scale", scale)
    assert status == 200, body
    assert len(recorder.reviews) == 2
    assert recorder.reviews[-1]["request"]["object"]["spec"] == {"replicas": 4}
    status, body = await api.patch(f"{DEPLOY}/web", {"metadata": {"labels": {"x": "y"}}})
    assert status == 200, body
    assert len(recorder.reviews) == 2
    status, body = await api.get(f"{DEPLOY}/web")
    assert body["spec"]["replicas"] == 4


async def test_policy_denies_and_invalid_replicas_are_refused_first(api: Api) -> None:
    status, body = await api.post(DEPLOY, deployment("db"))
    assert status == 201, body
    status, body = await api.post(
        f"{AR}/validatingadmissionpolicies",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "max-scale"},
            "spec": {
                "matchConstraints": {"resourceRules": [scale_rule()]},
                "validations": [
                    {
                        "expression": "object.spec.replicas <= 5",
                        "messageExpression": "'at most 5 replicas, not ' + "
                        "string(object.spec.replicas) + ' (was ' + "
                        "string(oldObject.spec.replicas) + ')'",
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
            "metadata": {"name": "max-scale"},
            "spec": {"policyName": "max-scale", "validationActions": ["Deny"]},
        },
    )
    assert status == 201, body
    status, body = await api.patch(f"{DEPLOY}/db/scale", {"spec": {"replicas": 9}})
    assert status == 422, body
    assert body["message"] == (
        "deployments.apps \"db\" is forbidden: ValidatingAdmissionPolicy 'max-scale' with "
        "binding 'max-scale' denied request: at most 5 replicas, not 9 (was 1)"
    )
    status, body = await api.patch(
        f"{DEPLOY}/db/scale", [{"op": "replace", "path": "/spec/replicas", "value": 5}], "json"
    )
    assert status == 200, body
    status, body = await api.patch(f"{DEPLOY}/db/scale", {"spec": {"replicas": -1}})
    assert status == 422, body
    assert "must be greater than or equal to 0" in body["message"]
    status, body = await api.get(f"{DEPLOY}/db")
    assert body["spec"]["replicas"] == 5
