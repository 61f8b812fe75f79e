"""Many kinds at once (issue 17): every watch gets a connection of its own, outside the
client's connection limit, so a Manager watching more kinds than the limit receives
events for all of them and its requests are not starved by long-lived watches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import Client, ResourceType
from kubewerk.client.errors import ConfigError
from kubewerk.runtime import Manager

JSON = dict[str, Any]
CONFIGMAP = ResourceType("", "v1", "ConfigMap", "configmaps")
KINDS = 120
"""More kinds than the client's default connection limit (100)."""


def crd(i: int) -> JSON:
    group = f"g{i // 20}.many.test"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"kind{i}s.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": f"kind{i}s", "singular": f"kind{i}", "kind": f"Kind{i}"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def kind(i: int) -> ResourceType:
    return ResourceType(f"g{i // 20}.many.test", "v1", f"Kind{i}", f"kind{i}s")


async def test_watches_beyond_the_connection_limit_all_stream(
    kube_server: EmbeddedServer,
) -> None:
    """Ten watches through a client limited to three connections: each one streams its
    events at once, and requests still go through the three connections."""
    async with Client.from_url(kube_server.url, connection_limit=3) as client:
        names = [f"ns{i}" for i in range(10)]
        for ns in names:
            await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        seen: dict[str, str] = {}

        async def watch(ns: str) -> None:
            async for ev in client.watch(CONFIGMAP, ns):
                if ev.type == "ADDED":
                    seen[ns] = ev.object["metadata"]["name"]
                    return

        tasks = [asyncio.create_task(watch(ns)) for ns in names]
        try:
            await asyncio.sleep(0.3)  # every watch open before anything is written
            pool = client._pool
            assert pool is not None
            assert pool.stream_count == 10 and pool.open_count <= 3
            for ns in names:
                await asyncio.wait_for(
                    client.create(
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"in-{ns}"}},
                        ns,
                    ),
                    5,
                )
            await asyncio.wait_for(asyncio.gather(*tasks), 10)
        finally:
            for task in tasks:
                task.cancel()
        assert seen == {ns: f"in-{ns}" for ns in names}
        # the streams' connections, ended cleanly or not, never count against the limit
        assert pool.open_count <= 3


async def test_a_manager_over_more_kinds_than_the_limit_reconciles_every_kind(
    kube_client: Client,
    run_manager: Callable[..., Awaitable[Manager]],
    wait_for: Callable[..., Awaitable[Any]],
) -> None:
    for i in range(KINDS):
        await kube_client.create(crd(i))
    crds = ResourceType(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        namespaced=False,
    )

    async def all_established() -> bool:
        items = (await kube_client.list(crds)).items
        return (
            sum(
                1
                for c in items
                if any(
                    cond.get("type") == "Established" and cond.get("status") == "True"
                    for cond in c.get("status", {}).get("conditions", [])
                )
            )
            >= KINDS
        )

    await wait_for(all_established, timeout=60)
    reconciled: set[str] = set()
    mgr = Manager()
    for i in range(KINDS):

        async def reconcile(obj: JSON, ctx: Any) -> None:
            reconciled.add(obj["kind"])

        mgr.controller(kind(i)).named(f"kind{i}").complete(reconcile)
    await run_manager(mgr)
    for i in range(KINDS):
        await asyncio.wait_for(
            kube_client.create(
                {
                    "apiVersion": kind(i).api_version,
                    "kind": f"Kind{i}",
                    "metadata": {"name": "one"},
                },
                "default",
            ),
            5,
        )
    await wait_for(lambda: len(reconciled) == KINDS, timeout=30)


async def test_the_manager_lifts_the_soft_descriptor_limit(tmp_path: Path) -> None:
    """A watch per kind needs a descriptor per kind: the manager lifts the soft limit to
    the hard one first thing at start, as Go programs do (before it even reads its
    kubeconfig, so a missing one still shows the lift)."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = max(512, soft // 2)
    if hard == resource.RLIM_INFINITY or hard <= lowered:
        pytest.skip("the hard descriptor limit leaves nothing to lift")
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        manager = Manager(kubeconfig=str(tmp_path / "missing-kubeconfig"))
        with pytest.raises(ConfigError):
            await manager.start()
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
