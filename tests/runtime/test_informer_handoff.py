"""Handlers may keep and edit what they are given without touching the store."""

from __future__ import annotations

from typing import Any

from kubewerk.client import CONFIGMAP, Client
from kubewerk.runtime import Cache


class Vandal:
    """Keeps every object it is handed and then wrecks it."""

    def __init__(self) -> None:
        self.kept: list[dict[str, Any]] = []
        self.olds: list[dict[str, Any]] = []

    def _wreck(self, obj: dict[str, Any]) -> None:
        self.kept.append(obj)
        obj["data"] = {"k": "wrecked"}
        obj["metadata"].pop("resourceVersion", None)

    def on_add(self, obj: dict[str, Any]) -> None:
        self._wreck(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        assert old["data"] == {"k": "1"}, "another handler wrecked the old object"
        self.olds.append(old)
        self._wreck(old)
        self._wreck(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._wreck(obj)


async def test_handlers_cannot_corrupt_the_store(kube_client: Client, wait_for) -> None:  # type: ignore[no-untyped-def]
    await kube_client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "1"}}
    )
    cache = Cache(kube_client, namespaces=["default"])
    inf = cache.informer(CONFIGMAP)
    first, second = Vandal(), Vandal()
    inf.add_handler(first)
    inf.add_handler(second)
    cache.start()
    try:
        assert await cache.wait_synced(10)
        written = await kube_client.patch(CONFIGMAP, "x", {"data": {"k": "2"}}, "default")
        await wait_for(lambda: len(second.kept) == 3 and len(first.kept) == 3, 5)
        stored = inf.get("x", "default")
        assert stored is not None and stored["data"] == {"k": "2"}
        assert stored["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
        assert inf.resource_version == written["metadata"]["resourceVersion"]
        assert first.kept[-1] is not second.kept[-1]  # each handler has its own copy
        assert first.olds[0] is not second.olds[0]  # of the old object too
    finally:
        await cache.stop()
