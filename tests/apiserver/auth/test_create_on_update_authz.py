"""A PUT that creates its object (kinds whose strategy allows create on update) is
authorized twice, as kube's update handler does it (k8s.io/apiserver
pkg/endpoints/handlers/update.go, ``withAuthorization``): ``update`` for the request,
then ``create`` for the object it would make, answered 403 ``NewForbidden`` when refused
and storing nothing; on the plain write path and through the admission chain."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.apiserver.helpers import asgi_call

from kubewerk.apiserver.server import EmbeddedServer

RBAC = "/apis/rbac.authorization.k8s.io/v1"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
VAP = "/apis/admissionregistration.k8s.io/v1"


async def call(srv: EmbeddedServer, token: str, method: str, path: str, body: Any) -> Any:
    status, _, raw = await asgi_call(
        srv.app,
        method,
        path,
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
        body=orjson.dumps(body),
    )
    return status, orjson.loads(raw) if raw else None


def lease(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"holderIdentity": "bob"},
    }


async def grant(srv: EmbeddedServer, verbs: list[str]) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "leases", "namespace": "default"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": verbs}],
    }
    status, got = await call(srv, "adm", "GET", f"{RBAC}/namespaces/default/roles/leases", None)
    if status == 200:
        role["metadata"]["resourceVersion"] = got["metadata"]["resourceVersion"]
    status, got = await call(srv, "adm", "PUT", f"{RBAC}/namespaces/default/roles/leases", role)
    assert status in (200, 201), got
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "leases", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "leases"},
        "subjects": [{"kind": "User", "name": "bob"}],
    }
    status, got = await call(srv, "adm", "POST", f"{RBAC}/namespaces/default/rolebindings", binding)
    assert status in (201, 409), got


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[EmbeddedServer]:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('adm,admin,1,"system:masters"\nbob,bob,2\n')
    async with EmbeddedServer("memory", token_auth_file=tokens, authorizer="RBAC") as server:
        yield server


async def put_creates(srv: EmbeddedServer) -> None:
    """update alone: the PUT of a missing Lease is refused, nothing stored; an existing
    one is updated; with create too, the PUT creates."""
    await grant(srv, ["get", "update"])
    status, got = await call(srv, "bob", "PUT", f"{LEASES}/l1", lease("l1"))
    assert status == 403, got
    assert got["reason"] == "Forbidden"
    assert got["message"] == 'leases.coordination.k8s.io "l1" is forbidden: '
    assert got["details"] == {"name": "l1", "group": "coordination.k8s.io", "kind": "leases"}
    status, got = await call(srv, "adm", "GET", f"{LEASES}/l1", None)
    assert status == 404, got

    status, got = await call(srv, "adm", "POST", LEASES, lease("l2"))
    assert status == 201, got
    update = lease("l2")
    update["metadata"]["resourceVersion"] = got["metadata"]["resourceVersion"]
    status, got = await call(srv, "bob", "PUT", f"{LEASES}/l2", update)
    assert status == 200, got  # an update needs no create

    await grant(srv, ["get", "update", "create"])
    status, got = await call(srv, "bob", "PUT", f"{LEASES}/l1", lease("l1"))
    assert status == 201, got
    assert got["spec"]["holderIdentity"] == "bob"


async def test_put_that_creates_needs_create(srv: EmbeddedServer) -> None:
    await put_creates(srv)


async def test_put_that_creates_needs_create_through_the_admission_chain(
    srv: EmbeddedServer,
) -> None:
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "leases"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["coordination.k8s.io"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["leases"],
                    }
                ]
            },
            "validations": [{"expression": "object.spec.holderIdentity != 'mallory'"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "leases"},
        "spec": {"policyName": "leases", "validationActions": ["Deny"]},
    }
    for path, body in (
        (f"{VAP}/validatingadmissionpolicies", policy),
        (f"{VAP}/validatingadmissionpolicybindings", binding),
    ):
        status, got = await call(srv, "adm", "POST", path, body)
        assert status == 201, got
    await put_creates(srv)
    # the policy runs on the created object as a CREATE, after the create check
    denied = lease("l3")
    denied["spec"]["holderIdentity"] = "mallory"
    status, got = await call(srv, "bob", "PUT", f"{LEASES}/l3", denied)
    assert status == 422 and "ValidatingAdmissionPolicy 'leases'" in got["message"], got
