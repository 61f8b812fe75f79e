"""Three embedded API servers ("clusters") and a multi-version test CRD."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import Client
from kubewerk.testing import install_crds


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


def write_manifests(path: Path, *objects: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objects))
    return path


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
