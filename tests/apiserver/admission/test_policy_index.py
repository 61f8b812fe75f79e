"""The chain's policy index reads each binding once per write of it: a changed binding
(its selector, its actions) counts from the next request on."""

from __future__ import annotations

from typing import Any

import orjson

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call

AR = "/apis/admissionregistration.k8s.io/v1"
CM = "/api/v1/namespaces/default/configmaps"
POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "no-bad"},
    "spec": {
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["configmaps"],
                }
            ]
        },
        "validations": [{"expression": "!has(object.data) || !('bad' in object.data)"}],
    },
}


def _binding(labels: dict[str, str], actions: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "no-bad-binding"},
        "spec": {
            "policyName": "no-bad",
            "validationActions": actions,
            "matchResources": {"objectSelector": {"matchLabels": labels}},
        },
    }


async def _send(app: ApiServer, method: str, path: str, body: Any) -> tuple[int, Any, list[str]]:
    status, headers, payload = await asgi_call(
        app, method, path, headers={"content-type": "application/json"}, body=orjson.dumps(body)
    )
    warnings = [v for k, v in headers if k == "warning"]
    return status, orjson.loads(payload), warnings


def _cm(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"bad": "x"},
    }


async def test_changed_binding_counts_on_the_next_request() -> None:
    app = ApiServer(open_store("memory"))
    assert (await _send(app, "POST", f"{AR}/validatingadmissionpolicies", POLICY))[0] == 201
    status, _, _ = await _send(
        app, "POST", f"{AR}/validatingadmissionpolicybindings", _binding({"t": "a"}, ["Deny"])
    )
    assert status == 201
    assert (await _send(app, "POST", CM, _cm("a1", {"t": "a"})))[0] == 422
    assert (await _send(app, "POST", CM, _cm("b1", {"t": "b"})))[0] == 201

    # the same binding (same uid) now selects t=b and only warns
    path = f"{AR}/validatingadmissionpolicybindings/no-bad-binding"
    status, stored, _ = await _send(app, "GET", path, None)
    assert status == 200
    stored["spec"] = _binding({"t": "b"}, ["Warn"])["spec"]
    assert (await _send(app, "PUT", path, stored))[0] == 200
    assert (await _send(app, "POST", CM, _cm("a2", {"t": "a"})))[0] == 201
    status, _, warnings = await _send(app, "POST", CM, _cm("b2", {"t": "b"}))
    assert status == 201
    assert (
        len(warnings) == 1
        and "Validation failed for ValidatingAdmissionPolicy 'no-bad'" in (warnings[0])
    )
