"""A host "cluster" and three members (embedded servers), the federation CRDs on the
host, kubeconfig Secrets for the members and a running Federation."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer, kubeconfig_text
from kubewerk.client import Client
from kubewerk.runtime import Manager
from kubewerk.sync.federation import CLUSTER_SET, FEDERATED_OBJECT, PLACEMENT, Federation, crds
from kubewerk.testing import install_crds, wait_for

NS = "default"
CONFIGMAP_API = ("v1", "ConfigMap")


@dataclass
class Fleet:
    host: Client
    host_server: EmbeddedServer
    members: dict[str, EmbeddedServer]
    clients: dict[str, Client]
    federation: Federation
    manager: Manager
    extra: list[Client] = field(default_factory=list)

    async def create_cluster_set(
        self, labels: Mapping[str, Mapping[str, str]], *, name: str = "fleet"
    ) -> None:
        for member, server in self.members.items():
            text = kubeconfig_text(server.url, context=member)
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"{member}-kubeconfig", "namespace": NS},
                "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
            }
            await self.host.create(secret)
        await self.host.create(
            {
                "apiVersion": CLUSTER_SET.api_version,
                "kind": "ClusterSet",
                "metadata": {"name": name, "namespace": NS},
                "spec": {
                    "probeIntervalSeconds": 0.3,
                    "clusters": [
                        {
                            "name": member,
                            "kubeconfigSecretRef": {"name": f"{member}-kubeconfig"},
                            "labels": dict(labels.get(member, {})),
                        }
                        for member in self.members
                    ],
                },
            }
        )

    async def get(self, rt: Any, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = await self.host.get(rt, name, NS)
        return obj

    async def member_object(self, member: str, name: str) -> dict[str, Any] | None:
        rt = await self.clients[member].resolve(*CONFIGMAP_API)
        with contextlib.suppress(Exception):
            found: dict[str, Any] = await self.clients[member].get(rt, name, NS)
            return found
        return None

    async def holders(self, name: str) -> set[str]:
        return {m for m in self.members if await self.member_object(m, name) is not None}

    async def until(self, check: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
        return await wait_for(check, timeout=timeout, interval=0.05, message=what)

    def condition(self, obj: Mapping[str, Any], type: str) -> dict[str, Any] | None:
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c.get("type") == type:
                return dict(c)
        return None


def placement(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": PLACEMENT.api_version,
        "kind": "Placement",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterSet": "fleet", **spec},
    }


def federated(name: str, placement: str, data: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": FEDERATED_OBJECT.api_version,
        "kind": "FederatedObject",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "placement": placement,
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"app": "demo"}},
                "data": data,
            },
            **spec,
        },
    }


@pytest.fixture
async def fleet() -> AsyncIterator[Fleet]:
    """Host + members eu-1, eu-2, us-1 with the federation running on the host."""
    async with contextlib.AsyncExitStack() as stack:
        host_server = await stack.enter_async_context(
            EmbeddedServer("memory", bookmark_interval=0.5)
        )
        members: dict[str, EmbeddedServer] = {}
        for name in ("eu-1", "eu-2", "us-1"):
            members[name] = await stack.enter_async_context(EmbeddedServer("memory"))
        host = Client.from_url(host_server.url)
        stack.push_async_callback(host.close)
        await install_crds(host, *crds())
        clients = {n: Client.from_url(s.url) for n, s in members.items()}
        for c in clients.values():
            stack.push_async_callback(c.close)
        mgr = Manager(host, probe_port=None, graceful_shutdown_timeout=5)
        fed = Federation(mgr, resync_seconds=0.5, backoff_base=0.1, backoff_cap=1.0)
        await mgr.start()
        stack.push_async_callback(mgr.stop)
        yield Fleet(host, host_server, members, clients, fed, mgr)
