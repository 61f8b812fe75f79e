"""Which writes take the admission chain's asynchronous path: only those some stored
webhook or bound policy can select (by group, resource and subresource); the others keep
the synchronous path. The decision follows configuration changes, and param kinds
served after a policy was loaded are found."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.apiserver.admission_chain.chain import could_match
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

AR = "/apis/admissionregistration.k8s.io/v1"
SECRETS = "/api/v1/namespaces/default/secrets"
CMS = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(
    ("rules", "target", "expected"),
    [
        ([{"apiGroups": [""], "resources": ["configmaps"]}], ("", "configmaps", ""), True),
        ([{"apiGroups": [""], "resources": ["configmaps"]}], ("", "secrets", ""), False),
        ([{"apiGroups": [""], "resources": ["configmaps"]}], ("", "configmaps", "status"), False),
        ([{"apiGroups": ["apps"], "resources": ["configmaps"]}], ("", "configmaps", ""), False),
        ([{"apiGroups": ["*"], "resources": ["*"]}], ("apps", "deployments", ""), True),
        ([{"apiGroups": ["*"], "resources": ["*"]}], ("apps", "deployments", "status"), False),
        ([{"apiGroups": ["*"], "resources": ["*/*"]}], ("apps", "deployments", "status"), True),
        ([{"apiGroups": ["apps"], "resources": ["*/status"]}], ("apps", "deployments", ""), False),
        (
            [{"apiGroups": ["apps"], "resources": ["deployments/*"]}],
            ("apps", "deployments", ""),
            True,  # "x/*" covers the resource itself too, as kube's rule matcher
        ),
        ([{"apiGroups": [""], "resources": ["pods/status"]}], ("", "pods", "status"), True),
        ([], ("", "pods", ""), False),
        (None, ("", "pods", ""), True),
    ],
)
def test_could_match(rules: Any, target: tuple[str, str, str], expected: bool) -> None:
    assert could_match(rules, *target) is expected


def _target(server: EmbeddedServer, group: str, resource: str, sub: str | None = None) -> Target:
    rtype = server.app.registry.get(group, resource)
    assert rtype is not None
    return Target(rtype, rtype.versions[0], "default", "x" if sub else None, sub)


def policy(name: str, resources: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": resources,
                    }
                ]
            },
            "validations": [{"expression": "false", "message": f"{name} says no"}],
            **spec,
        },
    }


def binding(name: str, policy_name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy_name, "validationActions": ["Deny"], **spec},
    }


def secret(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}}


async def test_unselected_writes_keep_the_synchronous_path(
    aserver: EmbeddedServer, api: Api
) -> None:
    chain = aserver.app.chain
    calls: list[str] = []
    original = chain.create

    async def counting(target: Target, body: Any, query: Any, *rest: Any) -> Any:
        calls.append(target.rtype.resource)
        return await original(target, body, query, *rest)

    chain.create = counting  # type: ignore[method-assign]
    status, body = await api.post(f"{AR}/validatingadmissionpolicies", policy("cm", ["configmaps"]))
    assert status == 201, body
    # a binding naming a policy that does not exist selects nothing
    status, body = await api.post(
        f"{AR}/validatingadmissionpolicybindings", binding("ghost", "no-such-policy")
    )
    assert status == 201, body
    assert not chain.active(_target(aserver, "", "configmaps"))
    status, body = await api.post(f"{AR}/validatingadmissionpolicybindings", binding("cm", "cm"))
    assert status == 201, body
    assert chain.active(_target(aserver, "", "configmaps"))
    assert not chain.active(_target(aserver, "", "secrets"))
    assert not chain.active(_target(aserver, "", "configmaps", "status"))
    status, body = await api.post(SECRETS, secret("fast"))
    assert status == 201, body
    status, body = await api.post(
        CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    )
    assert status == 422 and "cm says no" in body["message"], body
    assert calls == ["configmaps"]
    # the policy now covers Secrets too: the next Secret write is admitted by it
    status, body = await api.patch(
        f"{AR}/validatingadmissionpolicies/cm",
        {
            "spec": {
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "operations": ["CREATE"],
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["configmaps", "secrets"],
                        }
                    ]
                }
            }
        },
    )
    assert status == 200, body
    status, body = await api.post(SECRETS, secret("slow"))
    assert status == 422 and "cm says no" in body["message"], body
    assert calls == ["configmaps", "secrets"]


async def test_webhook_rules_select_by_resource(aserver: EmbeddedServer, api: Api) -> None:
    chain = aserver.app.chain
    status, body = await api.post(
        f"{AR}/validatingwebhookconfigurations",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "status-only"},
            "webhooks": [
                {
                    "name": "status.hooks.test",
                    "clientConfig": {"url": "https://127.0.0.1:1/status"},
                    "rules": [
                        {
                            "operations": ["UPDATE"],
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "resources": ["deployments/status"],
                        }
                    ],
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        },
    )
    assert status == 201, body
    assert chain.active(_target(aserver, "apps", "deployments", "status"))
    assert not chain.active(_target(aserver, "apps", "deployments"))
    assert not chain.active(_target(aserver, "", "configmaps"))
    status, body = await api.delete(f"{AR}/validatingwebhookconfigurations/status-only")
    assert status == 200, body
    assert not chain.active(_target(aserver, "apps", "deployments", "status"))


async def test_param_kind_served_after_the_policy_was_loaded(api: Api) -> None:
    # the param kind's CRD does not exist yet when the policy first runs
    status, body = await api.post(
        f"{AR}/validatingadmissionpolicies",
        policy(
            "limited",
            ["secrets"],
            paramKind={"apiVersion": "demo.kubewerk.dev/v1", "kind": "Limit"},
            validations=[
                {
                    "expression": "!has(object.data) || size(object.data) <= params.spec.max",
                    "messageExpression": "'at most ' + string(params.spec.max) + ' keys'",
                }
            ],
        ),
    )
    assert status == 201, body
    status, body = await api.post(
        f"{AR}/validatingadmissionpolicybindings",
        binding(
            "limited",
            "limited",
            paramRef={"name": "two", "parameterNotFoundAction": "Deny"},
        ),
    )
    assert status == 201, body
    status, body = await api.post(SECRETS, secret("early"))
    assert status != 201, body  # no param: denied by parameterNotFoundAction
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "limits.demo.kubewerk.dev"},
        "spec": {
            "group": "demo.kubewerk.dev",
            "names": {"plural": "limits", "singular": "limit", "kind": "Limit"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"max": {"type": "integer"}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    status, body = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 201, body
    await api.wait_established("limits.demo.kubewerk.dev")
    status, body = await api.post(
        "/apis/demo.kubewerk.dev/v1/namespaces/default/limits",
        {
            "apiVersion": "demo.kubewerk.dev/v1",
            "kind": "Limit",
            "metadata": {"name": "two"},
            "spec": {"max": 1},
        },
    )
    assert status == 201, body
    too_many = {**secret("late"), "data": {"a": "YQ==", "b": "Yg=="}}
    status, body = await api.post(SECRETS, too_many)
    assert status == 422, body
    assert body["message"].endswith("denied request: at most 1 keys")
    status, body = await api.post(SECRETS, {**secret("late"), "data": {"a": "YQ=="}})
    assert status == 201, body
