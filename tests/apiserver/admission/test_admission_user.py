"""Policies see the authenticated user as ``request.userInfo`` (and ``system:unsecured``
in ``system:masters`` when authentication is off)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

GROUP = "/apis/admissionregistration.k8s.io/v1"
CMS = "/api/v1/namespaces/default/configmaps"

POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "who.test"},
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
        "validations": [
            {
                "expression": "request.userInfo.username != 'mallory'",
                "messageExpression": "'not you, ' + request.userInfo.username + ' of ' + "
                "request.userInfo.groups.join(',')",
            }
        ],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "who.test"},
    "spec": {"policyName": "who.test", "validationActions": ["Deny"]},
}


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_a_policy_sees_the_authenticated_user(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('t-admin,admin,1,"system:masters"\nt-mallory,mallory,2,"system:masters"\n')
    async with EmbeddedServer(token_auth_file=tokens) as server:
        admin = Api(server.url)
        admin.session.headers["Authorization"] = "Bearer t-admin"
        mallory = Api(server.url)
        mallory.session.headers["Authorization"] = "Bearer t-mallory"
        try:
            for path, body in (
                (f"{GROUP}/validatingadmissionpolicies", POLICY),
                (f"{GROUP}/validatingadmissionpolicybindings", BINDING),
            ):
                status, out = await admin.post(path, body)
                assert status == 201, out
            for _ in range(100):  # the policy is compiled on the next request
                status, out = await mallory.post(CMS, cm("probe"))
                if status != 201:
                    break
                await admin.delete(f"{CMS}/probe")
                await asyncio.sleep(0.02)
            assert status == 422, out
            assert out["message"].endswith(
                "denied request: not you, mallory of system:masters,system:authenticated"
            )
            status, out = await admin.post(CMS, cm("fine"))
            assert status == 201, out
        finally:
            await admin.close()
            await mallory.close()
