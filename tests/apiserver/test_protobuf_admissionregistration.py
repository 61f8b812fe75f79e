"""Protobuf bodies of the admissionregistration.k8s.io/v1 kinds (ValidatingWebhookConfiguration,
MutatingWebhookConfiguration, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding):
what a client-go typed client (a controller-runtime operator registering its webhooks or
policies) sends. Bodies are built with the tiny encoder of ``test_protobuf`` (field numbers
from ``generated.proto``); the expected objects are written from the Go struct tags
(``sideEffects`` and ``admissionReviewVersions`` have no ``omitempty``, the embedded
``Rule`` is written in place, ``url`` comes before ``service``). Over HTTP the decoded
configurations are stored and take effect.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from kubewerk.apiserver import protobuf as pb
from tests.apiserver.helpers import Api
from tests.apiserver.test_protobuf import PROTO, envelope, ld, meta, vi

API = "admissionregistration.k8s.io/v1"
BASE = f"/apis/{API}"


def _same(got: Any, want: Any) -> bool:
    """Equal, with every object's keys in the same order (as Go writes them)."""
    return orjson.dumps(got) == orjson.dumps(want)


def _rule(resource: str) -> bytes:
    """RuleWithOperations: operations (1), the embedded Rule (2): apiGroups (1),
    apiVersions (2), resources (3), scope (4)."""
    rule = ld(1, "") + ld(2, "v1") + ld(3, resource) + ld(4, "Namespaced")
    return ld(1, "CREATE") + ld(2, rule)


def _webhook(name: str, failure: str) -> bytes:
    service = ld(1, "default") + ld(2, "hook") + ld(3, "/validate") + vi(4, 443)
    client = ld(1, service) + ld(2, b"CA")
    return (
        ld(1, name)
        + ld(2, client)
        + ld(3, _rule("configmaps"))
        + ld(4, failure)
        + ld(6, "None")
        + ld(8, "v1")
    )


WEBHOOK_JSON: dict[str, Any] = {
    "name": "check.example.com",
    "clientConfig": {
        "service": {"namespace": "default", "name": "hook", "path": "/validate", "port": 443},
        "caBundle": base64.b64encode(b"CA").decode(),
    },
    "rules": [
        {
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["configmaps"],
            "scope": "Namespaced",
        }
    ],
    "failurePolicy": "Ignore",
    "sideEffects": "None",
    "admissionReviewVersions": ["v1"],
}


def _policy() -> bytes:
    # NamedRuleWithOperations: resourceNames (1), the embedded RuleWithOperations (2)
    named = ld(2, ld(1, "CREATE") + ld(2, ld(1, "") + ld(2, "v1") + ld(3, "configmaps")))
    spec = (
        ld(2, ld(3, named))
        + ld(3, ld(1, "object.metadata.name.startsWith('ok')") + ld(2, "names start with ok"))
        + ld(4, "Fail")
    )
    return envelope(API, "ValidatingAdmissionPolicy", meta("ok-names") + ld(2, spec))


POLICY_JSON: dict[str, Any] = {
    "kind": "ValidatingAdmissionPolicy",
    "apiVersion": API,
    "metadata": {"name": "ok-names"},
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
        "validations": [
            {
                "expression": "object.metadata.name.startsWith('ok')",
                "message": "names start with ok",
            }
        ],
        "failurePolicy": "Fail",
    },
    "status": {},
}


def _binding() -> bytes:
    spec = ld(1, "ok-names") + ld(4, "Deny")
    return envelope(API, "ValidatingAdmissionPolicyBinding", meta("ok-names") + ld(2, spec))


BINDING_JSON: dict[str, Any] = {
    "kind": "ValidatingAdmissionPolicyBinding",
    "apiVersion": API,
    "metadata": {"name": "ok-names"},
    "spec": {"policyName": "ok-names", "validationActions": ["Deny"]},
}


def test_the_admissionregistration_kinds_are_decoded() -> None:
    for kind in (
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ):
        assert (API, kind) in pb.KINDS
        obj = pb.decode_object(pb.MAGIC + ld(2, meta("x")), API, kind)
        assert obj["kind"] == kind and obj["metadata"] == {"name": "x"}


def test_a_webhook_configuration_as_go_writes_it() -> None:
    body = envelope(
        API,
        "ValidatingWebhookConfiguration",
        meta("hooks") + ld(2, _webhook("check.example.com", "Ignore")),
    )
    got = pb.decode_object(body, API, "ValidatingWebhookConfiguration")
    want = {
        "kind": "ValidatingWebhookConfiguration",
        "apiVersion": API,
        "metadata": {"name": "hooks"},
        "webhooks": [WEBHOOK_JSON],
    }
    assert got == want and _same(got, want)
    # a bare webhook: the fields without omitempty are null or zero, the pointers absent
    bare = pb.decode_message("k8s.io.api.admissionregistration.v1.ValidatingWebhook", b"")
    assert bare == {
        "name": "",
        "clientConfig": {},
        "sideEffects": None,
        "admissionReviewVersions": None,
    }
    # the url of a client config comes first, as in the Go struct
    config = pb.decode_message(
        "k8s.io.api.admissionregistration.v1.WebhookClientConfig",
        ld(2, b"CA") + ld(3, "https://hook.example.com"),
    )
    assert list(config) == ["url", "caBundle"]


def test_a_policy_and_its_binding_as_go_writes_them() -> None:
    got = pb.decode_object(_policy(), API, "ValidatingAdmissionPolicy")
    assert got == POLICY_JSON and _same(got, POLICY_JSON)
    got = pb.decode_object(_binding(), API, "ValidatingAdmissionPolicyBinding")
    assert got == BINDING_JSON and _same(got, BINDING_JSON)


async def test_webhook_configurations_are_created_over_http(api: Api) -> None:
    for kind, plural in (
        ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"),
        ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
    ):
        body = envelope(API, kind, meta("hooks") + ld(2, _webhook("check.example.com", "Ignore")))
        status, created = await api.request(
            "POST", f"{BASE}/{plural}", raw=body, content_type=PROTO
        )
        assert status == 201, orjson.dumps(created)
        hook = created["webhooks"][0]
        for key, value in WEBHOOK_JSON.items():
            assert hook[key] == value, (kind, key)
        # kube's defaults come on top
        assert hook["matchPolicy"] == "Equivalent" and hook["timeoutSeconds"] == 10


async def test_a_policy_sent_as_protobuf_takes_effect(api: Api) -> None:
    status, created = await api.request(
        "POST", f"{BASE}/validatingadmissionpolicies", raw=_policy(), content_type=PROTO
    )
    assert status == 201, orjson.dumps(created)
    assert created["spec"]["validations"] == [
        {"expression": "object.metadata.name.startsWith('ok')", "message": "names start with ok"}
    ]
    status, created = await api.request(
        "POST", f"{BASE}/validatingadmissionpolicybindings", raw=_binding(), content_type=PROTO
    )
    assert status == 201, orjson.dumps(created)
    assert created["spec"] == BINDING_JSON["spec"]
    cms = "/api/v1/namespaces/default/configmaps"
    status, denied = await api.post(cms, {"metadata": {"name": "bad"}})
    assert status == 422, denied
    assert "names start with ok" in denied["message"]
    status, _ = await api.post(cms, {"metadata": {"name": "ok-one"}})
    assert status == 201
