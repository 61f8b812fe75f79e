"""A small platform scene for the dashboard tests: the platform example's CRDs, a tenant
with an environment, a project and a database, one object Failed with a hostile
message, one waiting for its dependencies, one healthy, and Events about them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubewerk.client import CRD, Client, ResourceType
from kubewerk.testing import wait_for
from kubewerk.testing.helpers import crd_established

CRDS = Path(__file__).resolve().parents[2] / "examples" / "platform_demo" / "crds"
GROUP = "platform.kubewerk.dev"
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'


def rt(kind: str, plural: str, namespaced: bool = True) -> ResourceType:
    return ResourceType(GROUP, "v1", kind, plural, namespaced)


TENANT = rt("Tenant", "tenants", namespaced=False)
ENVIRONMENT = rt("Environment", "environments")
PROJECT = rt("Project", "projects")
DATABASE = rt("Database", "databases")


async def install_platform_crds(client: Client) -> None:
    """Create the 17 CRDs and wait until each is Established."""
    names = []
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        await client.create(crd)
        names.append(crd["metadata"]["name"])

    async def established() -> bool:
        listed = await client.list(CRD)
        ok = {c["metadata"]["name"] for c in listed.items if crd_established(c)}
        return all(n in ok for n in names)

    await wait_for(established, timeout=20)


def condition(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }


async def set_status(client: Client, obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    obj = {**obj, "status": status}
    result: dict[str, Any] = await client.replace_status(obj)
    return result


async def event(
    client: Client, about: dict[str, Any], reason: str, message: str, type_: str = "Normal"
) -> None:
    meta = about["metadata"]
    ns = meta.get("namespace") or "default"
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": "dash-", "namespace": ns},
            "involvedObject": {
                "apiVersion": about["apiVersion"],
                "kind": about["kind"],
                "name": meta["name"],
                "namespace": meta.get("namespace"),
                "uid": meta["uid"],
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": "test"},
            "firstTimestamp": "2025-01-01T00:00:00Z",
            "lastTimestamp": "2025-01-01T00:00:01Z",
            "count": 1,
        }
    )


async def build_scene(client: Client) -> dict[str, dict[str, Any]]:
    """The scene (see the module doc); returns the objects by short name."""
    await install_platform_crds(client)
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "acme"}})
    tenant = await client.create(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Tenant",
            "metadata": {"name": "acme", "annotations": {"note": HOSTILE}},
            "spec": {"displayName": HOSTILE, "tier": "enterprise"},
        }
    )
    tenant = await set_status(
        client,
        tenant,
        {
            "phase": "Active",
            "observedGeneration": 1,
            "conditions": [condition("Ready", "True", "Active")],
        },
    )
    env = await client.create(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Environment",
            "metadata": {"name": "prod", "namespace": "acme"},
            "spec": {"tenantRef": {"name": "acme"}, "stage": "prod"},
        }
    )
    env = await set_status(
        client,
        env,
        {
            "phase": "Failed",
            "observedGeneration": 1,
            "conditions": [condition("Ready", "False", "ProvisioningFailed", HOSTILE)],
        },
    )
    project = await client.create(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Project",
            "metadata": {"name": "shop", "namespace": "acme"},
            "spec": {"tenantRef": {"name": "acme"}, "owner": "shop@acme.example.com"},
        }
    )
    db = await client.create(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Database",
            "metadata": {"name": "orders", "namespace": "acme"},
            "spec": {
                "environmentRef": {"name": "prod"},
                "quotaRef": {"name": "shop"},
                "credentialsRef": {"name": "shop-credentials"},
                "storageGB": 20,
            },
        }
    )
    db = await set_status(
        client,
        db,
        {
            "phase": "Pending",
            "observedGeneration": 1,
            "conditions": [
                condition("Ready", "False", "Pending"),
                condition(
                    "DependenciesReady",
                    "False",
                    "DependenciesNotReady",
                    "waiting for Environment prod (Failed), Quota shop (missing)",
                ),
            ],
        },
    )
    await event(client, env, "ProvisioningFailed", "the provider said no", "Warning")
    await event(client, db, "PhaseChanged", "(none) → Pending: Created")
    return {"tenant": tenant, "env": env, "project": project, "db": db}


__all__ = [
    "DATABASE",
    "ENVIRONMENT",
    "HOSTILE",
    "PROJECT",
    "TENANT",
    "build_scene",
    "set_status",
]
