"""Embedded API servers ("clusters"), the test CRDs (multi-version Widget, cluster-scoped
Gadget) and manifests as a user writes them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import Client
from kubewerk.sync.drift import DriftController
from kubewerk.sync.keys import ObjectKey
from kubewerk.sync.sources import ClusterSource, Source
from kubewerk.testing import install_crds, wait_for


def widget_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "string", "default": "small"},
                    "replicas": {"type": "integer", "default": 1},
                    "memory": {
                        "x-kubernetes-int-or-string": True,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                    },
                    "port": {
                        "x-kubernetes-int-or-string": True,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                    },
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-list-type": "set",
                    },
                    "order": {"type": "array", "items": {"type": "string"}},
                    "endpoints": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "url": {"type": "string"},
                                "weight": {"type": "integer", "default": 10},
                            },
                        },
                    },
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }


def widget_crd() -> dict[str, Any]:
    version = {
        "served": True,
        "storage": False,
        "schema": {"openAPIV3Schema": widget_schema()},
        "subresources": {"status": {}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.sync.test"},
        "spec": {
            "group": "sync.test",
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
            },
            "versions": [
                {"name": "v1alpha1", **version},
                {"name": "v1", **version, "storage": True},
            ],
        },
    }


def widget(name: str, ns: str = "default", version: str = "v1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"sync.test/{version}",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def widget_like_crd(group: str, kind: str, scope: str = "Namespaced") -> dict[str, Any]:
    """The Widget CRD's versions and schema under another group and kind (plural: the
    kind in lower case with an ``s``)."""
    crd = widget_crd()
    plural = kind.lower() + "s"
    crd["metadata"]["name"] = f"{plural}.{group}"
    crd["spec"]["group"] = group
    crd["spec"]["scope"] = scope
    crd["spec"]["names"] = {
        "plural": plural,
        "singular": kind.lower(),
        "kind": kind,
        "listKind": f"{kind}List",
    }
    return crd


def gadget_crd() -> dict[str, Any]:
    """A cluster-scoped kind (the Widget CRD's schema, scope Cluster)."""
    return widget_like_crd("sync.test", "Gadget", "Cluster")


def bare(kind: str, name: str, namespace: Any = None, **spec: Any) -> dict[str, Any]:
    """A manifest as a user writes it: no namespace unless given (any value, even null)."""
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "sync.test/v1", "kind": kind, "metadata": meta, "spec": spec}


def configmap(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "b"}}


def target(client: Client, name: str = "t") -> ClusterSource:
    return ClusterSource(name, client, owns_client=False)


async def make_namespace(client: Client, name: str) -> None:
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def write_manifests(path: Path, *objects: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objects))
    return path


@contextlib.contextmanager
def served(
    prepare: Callable[[EmbeddedServer], Awaitable[None]] | None = None, **options: Any
) -> Iterator[EmbeddedServer]:
    """An in-memory API server on its own thread (``options`` go to
    :class:`EmbeddedServer`), set up by ``prepare`` on a loop of its own: for a module
    fixture whose tests share one server."""
    server = EmbeddedServer("memory", **options).start_in_thread()
    try:
        if prepare is not None:
            asyncio.run(prepare(server))
        yield server
    finally:
        server.stop_thread()


async def drifted_after_edit(
    source: Source, targets: list[ClusterSource], namespace: str, name: str, spec: Any
) -> dict[ObjectKey, str]:
    """The first target's drifted set once a drift watch of ``targets`` reported the
    edit of Widget ``namespace/name``'s spec (merged with ``spec``) on that target."""
    client = targets[0].client
    ctl = DriftController(source, targets, registry=CollectorRegistry())
    await ctl.start()
    try:
        rt = await client.resolve("sync.test/v1", "Widget")
        await client.patch(rt, name, {"spec": spec}, namespace, field_manager="edit")
        key = ObjectKey("sync.test", "Widget", namespace, name)
        await wait_for(lambda: key in ctl.drifted(0), 5, 0.01)
        return ctl.drifted(0)
    finally:
        await ctl.stop()


@pytest.fixture
def two() -> Iterator[list[EmbeddedServer]]:
    """Two fresh in-memory API servers, each on its own thread (for tests that run the
    command line, which starts its own event loop)."""
    servers = [EmbeddedServer("memory").start_in_thread() for _ in range(2)]
    try:
        yield servers
    finally:
        for s in servers:
            s.stop_thread()


@pytest.fixture
async def clusters() -> AsyncIterator[list[EmbeddedServer]]:
    """Three fresh in-memory API servers on the test's loop."""
    async with contextlib.AsyncExitStack() as stack:
        servers = [
            await stack.enter_async_context(EmbeddedServer("memory", bookmark_interval=0.5))
            for _ in range(3)
        ]
        yield servers


@pytest.fixture
async def clients(clusters: list[EmbeddedServer]) -> AsyncIterator[list[Client]]:
    """A client per cluster, each with the Widget CRD installed."""
    made = [Client.from_url(s.url) for s in clusters]
    try:
        for c in made:
            await install_crds(c, widget_crd())
        yield made
    finally:
        for c in made:
            await c.close()
