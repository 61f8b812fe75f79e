"""A write the admission chain reviews (and a dry run's answer) is served without reading
defaults into it again: the object was admitted a moment before in the request's version
and schema, so the reading defaults would add nothing. These tests hold that claim — the
answer is already what ``on_read`` makes of it, and what a later GET serves."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import json_call as _send

AR = "/apis/admissionregistration.k8s.io/v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _version(name: str, storage: bool, tier: str) -> dict[str, Any]:
    spec = {
        "type": "object",
        "properties": {
            "size": {"type": "integer", "default": 3},
            "tier": {"type": "string", "default": tier},
            "extra": {
                "type": "object",
                "default": {},
                "properties": {"zone": {"type": "string", "default": "z1"}},
            },
        },
    }
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
    }


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [_version("v1", True, "silver"), _version("v1beta1", False, "gold")],
    },
}

POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "sized"},
    "spec": {
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["example.com"],
                    "apiVersions": ["*"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["gadgets"],
                }
            ]
        },
        "validations": [{"expression": "object.spec.size >= 1"}],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "sized"},
    "spec": {"policyName": "sized", "validationActions": ["Deny"]},
}


async def _server(with_policy: bool) -> ApiServer:
    app = ApiServer(open_store("memory"))
    assert (await _send(app, "POST", CRDS, CRD))[0] == 201
    for _ in range(500):
        if app.registry.get("example.com", "gadgets") is not None:
            break
        await asyncio.sleep(0.005)
    if with_policy:
        assert (await _send(app, "POST", f"{AR}/validatingadmissionpolicies", POLICY))[0] == 201
        binding = f"{AR}/validatingadmissionpolicybindings"
        assert (await _send(app, "POST", binding, BINDING))[0] == 201
    return app


def _on_read(app: ApiServer, version: str, obj: Any) -> Any:
    rtype = app.registry.get("example.com", "gadgets")
    assert rtype is not None
    return app.admission.on_read(rtype, version, copy.deepcopy(obj))


@pytest.mark.parametrize("with_policy", [True, False], ids=["chain", "plain"])
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "write"])
@pytest.mark.parametrize("version", ["v1", "v1beta1"])
async def test_an_admitted_answer_is_already_defaulted(
    with_policy: bool, dry_run: bool, version: str
) -> None:
    app = await _server(with_policy)
    base = f"/apis/example.com/{version}/namespaces/default/gadgets"
    query = "?dryRun=All" if dry_run else ""
    body = {"apiVersion": f"example.com/{version}", "kind": "Gadget", "metadata": {"name": "g"}}
    status, created = await _send(app, "POST", base + query, {**body, "spec": {}})
    assert status == 201, created
    tier = "silver" if version == "v1" else "gold"
    assert created["spec"] == {"size": 3, "tier": tier, "extra": {"zone": "z1"}}
    assert _on_read(app, version, created) == created
    if dry_run:
        return
    assert (await _send(app, "GET", f"{base}/g"))[1] == created

    # an update that drops the defaulted fields gets them again, in the request's version
    update = {**body, "metadata": created["metadata"], "spec": {"extra": {}}}
    status, updated = await _send(app, "PUT", f"{base}/g", update)
    assert status == 200, updated
    assert updated["spec"] == {"size": 3, "tier": tier, "extra": {"zone": "z1"}}
    assert _on_read(app, version, updated) == updated
    assert (await _send(app, "GET", f"{base}/g"))[1] == updated
