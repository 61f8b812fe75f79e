"""Fixtures for the simulated cluster: an embedded server with ``simulate=`` on the test's
event loop, and helpers that wait for conditions on stored objects.

The workload kinds are served by the server itself; where one is not (yet) served, a
schemaless stand-in with a status subresource is registered so the simulation can be
tested alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubewerk.apiserver.registry import ScaleSpec, ServedResource
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.simulate import SimulationConfig

JSON = dict[str, Any]

_KINDS = (
    ("", "pods", "Pod", True, None),
    ("", "nodes", "Node", False, None),
    ("", "services", "Service", True, None),
    ("", "endpoints", "Endpoints", True, None),
    ("", "persistentvolumeclaims", "PersistentVolumeClaim", True, None),
    ("", "persistentvolumes", "PersistentVolume", False, None),
    ("apps", "deployments", "Deployment", True, "scale"),
    ("apps", "replicasets", "ReplicaSet", True, "scale"),
    ("apps", "statefulsets", "StatefulSet", True, "scale"),
    ("apps", "daemonsets", "DaemonSet", True, None),
    ("apps", "controllerrevisions", "ControllerRevision", True, None),
    ("batch", "jobs", "Job", True, None),
    ("batch", "cronjobs", "CronJob", True, None),
    ("discovery.k8s.io", "endpointslices", "EndpointSlice", True, None),
    ("storage.k8s.io", "storageclasses", "StorageClass", False, None),
)
_NO_STATUS = {"endpoints", "controllerrevisions", "endpointslices", "storageclasses"}


def add_missing_kinds(server: EmbeddedServer) -> None:
    registry = server.app.registry
    for group, resource, kind, namespaced, scale in _KINDS:
        if registry.get(group, resource) is not None:
            continue
        version = "v1"
        registry.add(
            ServedResource(
                group=group,
                resource=resource,
                kind=kind,
                list_kind=f"{kind}List",
                singular=kind.lower(),
                namespaced=namespaced,
                versions=[version],
                storage_version=version,
                status_subresource=resource not in _NO_STATUS,
                scale=ScaleSpec(".spec.replicas", ".status.replicas", ".status.selector")
                if scale
                else None,
            )
        )


def fast_config(**options: Any) -> SimulationConfig:
    """Delays of a few hundredths of a second."""
    defaults: JSON = {
        "start_seconds": 0.02,
        "run_seconds": 0.05,
        "terminate_seconds": 0.01,
        "backoff_seconds": 0.02,
        "max_backoff_seconds": 0.08,
        "node_monitor_grace_seconds": 0.05,
        "eviction_seconds": 0.05,
    }
    defaults.update(options)
    nodes = defaults.pop("nodes", 3)
    return SimulationConfig.with_nodes(nodes, **defaults)


@pytest.fixture
def sim_config() -> SimulationConfig:
    return fast_config()


@pytest.fixture
async def sim_server(sim_config: SimulationConfig) -> AsyncIterator[EmbeddedServer]:
    server = EmbeddedServer(simulate=sim_config)
    add_missing_kinds(server)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def wait_for(check: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = check()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def stored(server: EmbeddedServer, prefix: str) -> list[JSON]:
    items, _, _ = server.store.list(prefix)
    return [obj for _, obj in items]


def condition(obj: JSON | None, ctype: str) -> JSON | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None
