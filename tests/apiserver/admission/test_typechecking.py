"""The embedded server writes a ValidatingAdmissionPolicy's ``status.typeChecking`` and
``status.observedGeneration`` as kube's validatingadmissionpolicy-status-controller:
warnings for fields the matched kinds' schemas (CRD openAPIV3Schema, a built-in kind's
OpenAPI definition, the paramKind's) do not declare, once per generation."""

from __future__ import annotations

import asyncio
from typing import Any

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

AR = "/apis/admissionregistration.k8s.io/v1"
VAP = f"{AR}/validatingadmissionpolicies"


def policy(name: str, rules: list[dict[str, Any]], *exprs: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {"resourceRules": rules},
            "validations": [{"expression": e} for e in exprs],
            **spec,
        },
    }


def rule(group: str, version: str, resource: str) -> dict[str, Any]:
    return {
        "operations": ["CREATE"],
        "apiGroups": [group],
        "apiVersions": [version],
        "resources": [resource],
    }


async def checked(api: Api, name: str, generation: int) -> dict[str, Any]:
    for _ in range(100):
        status, body = await api.get(f"{VAP}/{name}")
        assert status == 200, body
        if (body.get("status") or {}).get("observedGeneration") == generation:
            return body  # type: ignore[no-any-return]
        await asyncio.sleep(0.02)
    raise AssertionError(f"status of {name} not written for generation {generation}: {body}")


async def test_warnings_for_builtin_and_custom_kinds(api: Api) -> None:
    status, body = await api.post(
        VAP,
        policy(
            "typos",
            [rule("apps", "v1", "deployments"), rule("demo.kubewerk.dev", "v1", "databases")],
            "object.spec.replicas <= 3",
            "object.spec.template.spec.containerz.size() > 0",
            "object.metadata.name.startsWith('a')",
        ),
    )
    assert status == 201, body
    body = await checked(api, "typos", 1)
    warnings = body["status"]["typeChecking"]["expressionWarnings"]
    assert [w["fieldRef"] for w in warnings] == ["spec.validations[1].expression"]
    text = warnings[0]["warning"]
    assert text.startswith(
        "apps/v1, Kind=Deployment: ERROR: <input>:1:26: undefined field 'containerz'"
    )
    # the Database's spec has no template: the other kind's warning follows
    assert (
        "demo.kubewerk.dev/v1, Kind=Database: ERROR: <input>:1:12: undefined field 'template'"
        in text
    )
    managers = {m["manager"]: m for m in body["metadata"]["managedFields"]}
    entry = managers["validatingadmissionpolicy-status-controller"]
    assert entry["operation"] == "Apply" and entry["subresource"] == "status"


async def test_clean_policy_and_new_generation(aserver: EmbeddedServer, api: Api) -> None:
    status, body = await api.post(
        VAP,
        policy(
            "limits",
            [rule("", "v1", "configmaps")],
            "size(object.data) <= int(params.data.max)",
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        ),
    )
    assert status == 201, body
    body = await checked(api, "limits", 1)
    assert body["status"]["typeChecking"] == {}
    # a status write does not bump the generation nor trigger another check
    written = body["metadata"]["resourceVersion"]
    await asyncio.sleep(0.1)
    status, again = await api.get(f"{VAP}/limits")
    assert again["metadata"]["resourceVersion"] == written
    # a spec change: checked again, the params' schema too
    status, body = await api.patch(
        f"{VAP}/limits",
        {"spec": {"validations": [{"expression": "size(object.data) <= int(params.datum.max)"}]}},
    )
    assert status == 200, body
    assert body["metadata"]["generation"] == 2
    body = await checked(api, "limits", 2)
    [warning] = body["status"]["typeChecking"]["expressionWarnings"]
    assert warning["fieldRef"] == "spec.validations[0].expression"
    assert warning["warning"].startswith(
        "/v1, Kind=ConfigMap: ERROR: <input>:1:32: undefined field 'datum'"
    )


async def test_wildcard_rules_are_not_checked(api: Api) -> None:
    status, body = await api.post(
        VAP,
        policy(
            "wide",
            [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}],
            "object.nothing.here",
        ),
    )
    assert status == 201, body
    body = await checked(api, "wide", 1)
    assert body["status"]["typeChecking"] == {}
