# ruff: noqa: F811  (pytest fixtures imported from test_webhooks are parameters here)
"""Mutating webhooks on DELETE, and the admission metrics kube-apiserver exposes.

kube-apiserver calls mutating webhooks for a DELETE too (``object`` null, ``oldObject``
the stored object); one that answers with a patch fails the request with
``Internal error occurred: admission webhook "NAME" attempted to modify the object,
which is not supported for this operation`` (mutating dispatcher). Webhook calls and
policy decisions are counted on ``/metrics`` under kube-apiserver's names and labels.
"""

from __future__ import annotations

import re
from typing import Any

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.webhook import WebhookServer
from kubewerk.webhook.certs import CertificateSet
from tests.apiserver.admission.test_webhooks import (  # noqa: F401  (fixtures)
    AR,
    CM,
    Recorder,
    api,
    certs,
    configmap,
    hook,
    hook_server,
    register,
)
from tests.apiserver.helpers import Api


async def test_mutating_webhooks_are_called_on_delete(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    base = f"https://127.0.0.1:{server.port}"
    status, body = await api.post(CM, configmap("keep", a="1"))
    assert status == 201, body
    # a webhook that answers without a patch: called with oldObject only, delete proceeds
    await register(
        api,
        "MutatingWebhookConfiguration",
        "quiet",
        hook("quiet.hooks.test", certs, url=base + "/validate"),
    )
    status, body = await api.delete(f"{CM}/keep")
    assert status == 200, body
    request = recorder.reviews[-1]["request"]
    assert request["operation"] == "DELETE"
    assert request["object"] is None and request["oldObject"]["metadata"]["name"] == "keep"
    assert request["options"]["kind"] == "DeleteOptions"
    # one that patches: kube's 500, the object stays
    status, body = await api.post(CM, configmap("stays", a="1"))
    assert status == 201, body
    await register(
        api,
        "MutatingWebhookConfiguration",
        "patcher",
        hook("tag.hooks.test", certs, url=base + "/tag"),
    )
    status, body = await api.delete(f"{CM}/stays")
    assert status == 500, body
    assert body["message"] == (
        'Internal error occurred: admission webhook "tag.hooks.test" attempted to modify the '
        "object, which is not supported for this operation"
    )
    status, _ = await api.get(f"{CM}/stays")
    assert status == 200


def _samples(text: str, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of ``name``: their label sets → value."""
    out: dict[frozenset[tuple[str, str]], float] = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name) + 1 :].rsplit("} ", 1)
            out[frozenset(re.findall(r'(\w+)="([^"]*)"', labels))] = float(value)
    return out


def _labels(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


async def test_admission_metrics(
    aserver: EmbeddedServer,
    api: Api,
    hook_server: tuple[WebhookServer, Recorder],
    certs: CertificateSet,
) -> None:
    # the app exposes ApiMetrics.admission; the chain records into it
    aserver.app.chain.metrics = aserver.app.metrics.admission
    server, _ = hook_server
    base = f"https://127.0.0.1:{server.port}"
    await register(
        api,
        "ValidatingWebhookConfiguration",
        "check",
        hook("check.hooks.test", certs, url=base + "/validate"),
        hook("down.hooks.test", certs, url="https://127.0.0.1:1/x", failurePolicy="Ignore"),
    )
    status, _ = await api.post(CM, configmap("ok", a="1"))
    assert status == 201
    status, _ = await api.post(CM, configmap("no", deny="not this one"))
    assert status == 400
    policy: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "small"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["configmaps"],
                    }
                ]
            },
            "validations": [{"expression": "size(object.data) < 2"}],
        },
    }
    assert (await api.post(f"{AR}/validatingadmissionpolicies", policy))[0] == 201
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "small-binding"},
        "spec": {"policyName": "small", "validationActions": ["Warn", "Audit"]},
    }
    assert (await api.post(f"{AR}/validatingadmissionpolicybindings", binding))[0] == 201
    status, _ = await api.post(CM, configmap("big", a="1", b="2"))
    assert status == 201
    status, text = await api.get("/metrics")
    assert status == 200

    ok = {"name": "check.hooks.test", "type": "validating", "operation": "CREATE"}
    down = {"name": "down.hooks.test", "type": "validating", "operation": "CREATE"}
    assert _samples(text, "apiserver_admission_webhook_request_total") == {
        _labels(**ok, code="200", rejected="false"): 2,
        _labels(**ok, code="400", rejected="true"): 1,
        # a call that fails is 503 ("error calling webhook"), not rejected under Ignore
        _labels(**down, code="503", rejected="false"): 3,
    }
    assert _samples(text, "apiserver_admission_webhook_rejection_count_total") == {
        _labels(**ok, error_type="no_error", rejection_code="400"): 1
    }
    assert _samples(text, "apiserver_admission_webhook_fail_open_count_total") == {
        _labels(name="down.hooks.test", type="validating"): 3
    }
    counts = _samples(text, "apiserver_admission_webhook_admission_duration_seconds_count")
    assert counts[_labels(**ok, rejected="false")] == 2
    assert counts[_labels(**ok, rejected="true")] == 1
    policy = {"policy": "small", "policy_binding": "small-binding", "error_type": "invalid_error"}
    assert _samples(text, "apiserver_validating_admission_policy_check_total") == {
        _labels(**policy, enforcement_action="warn"): 1,
        _labels(**policy, enforcement_action="audit"): 1,
    }
    assert "apiserver_validating_admission_policy_check_duration_seconds_bucket{" in text
