"""Helpers for the lifecycle tests that run a platform against the embedded server."""

from __future__ import annotations

from typing import Any

from kubewerk.client import Client
from kubewerk.client.resources import EVENT


class RecordingClient(Client):
    """A client that records every PATCH it sends (name, body, subresource)."""

    patches: list[tuple[str, Any, str | None]]

    async def patch(  # type: ignore[override]
        self, kind: Any, name: str, body: Any, namespace: str | None = None, **kwargs: Any
    ) -> Any:
        if not hasattr(self, "patches"):
            self.patches = []
        self.patches.append((name, body, kwargs.get("subresource")))
        return await super().patch(kind, name, body, namespace, **kwargs)

    def status_writes(self, name: str) -> list[Any]:
        """The bodies of the status patches sent for ``name``."""
        return [b for n, b, sub in getattr(self, "patches", []) if n == name and sub == "status"]


def manifest(kind: type[Any], name: str, **spec: Any) -> dict[str, Any]:
    """A new object of ``kind`` in namespace default."""
    info = kind.kind_info()
    return {
        "apiVersion": info.api_version,
        "kind": info.kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def events_about(client: Client, name: str) -> list[dict[str, Any]]:
    """The events.k8s.io Events regarding the object ``name`` in namespace default."""
    listed = await client.list(EVENT, "default")
    return [e for e in listed.items if (e.get("regarding") or {}).get("name") == name]


def samples(exposition: bytes, family: str) -> dict[str, float]:
    """``{labels: value}`` of one metric family's samples in a text exposition."""
    out: dict[str, float] = {}
    for line in exposition.decode().splitlines():
        if line.startswith(family + "{"):
            labels, _, value = line[len(family) :].rpartition(" ")
            out[labels] = float(value)
    return out
