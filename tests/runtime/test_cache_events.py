"""Informer scoping, indexes and resync; the event recorder against the server."""

from __future__ import annotations

import asyncio
from typing import Any

from kubewerk.client import CONFIGMAP, EVENT, Client
from kubewerk.runtime import Cache, EventRecorder, Scope


def cm(name: str, ns: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
        "data": {"k": name},
    }


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        self.events.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(("update", new["metadata"]["name"]))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", obj["metadata"]["name"]))


async def test_cache_scopes_indexes_and_resync(kube_client: Client, wait_for) -> None:  # type: ignore[no-untyped-def]
    for ns in ("a", "b", "c"):
        await kube_client.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        await kube_client.create(cm(f"{ns}-1", ns, {"app": "x"}))
        await kube_client.create(cm(f"{ns}-2", ns, {"app": "y"}))
    cache = Cache(
        kube_client,
        namespaces=["a", "b"],
        by_kind={CONFIGMAP: Scope(label_selector="app=x")},
        resync_period=0.3,
    )
    inf = cache.informer(CONFIGMAP)
    inf.add_indexer("data", lambda o: [o.get("data", {}).get("k", "")])
    seen = Recorder()
    inf.add_handler(seen)
    cache.start()
    try:
        assert await cache.wait_synced(10)
        assert sorted(inf.keys()) == ["a/a-1", "b/b-1"]  # namespaces and labels scoped
        assert [o["metadata"]["name"] for o in await cache.list(CONFIGMAP, "a")] == ["a-1"]
        assert (await cache.get(CONFIGMAP, "b-1", "b"))["data"] == {"k": "b-1"}
        assert cache.keys_by_index(CONFIGMAP, "data", "a-1") == ["a/a-1"]
        copy = await cache.get(CONFIGMAP, "a-1", "a")
        copy["data"]["k"] = "mutated"  # readers get copies: the cache is untouched
        assert (await cache.get(CONFIGMAP, "a-1", "a"))["data"]["k"] == "a-1"
        await kube_client.patch(CONFIGMAP, "a-1", {"data": {"k": "new"}}, "a")
        await kube_client.create(cm("c-3", "c", {"app": "x"}))  # out of scope
        await kube_client.delete(CONFIGMAP, "b-1", "b")
        await wait_for(lambda: ("delete", "b-1") in seen.events, 5)
        assert cache.keys_by_index(CONFIGMAP, "data", "new") == ["a/a-1"]
        assert cache.keys_by_index(CONFIGMAP, "data", "a-1") == []
        assert "c/c-3" not in inf
        before = len(seen.events)
        await asyncio.sleep(0.7)
        assert [e for e in seen.events[before:] if e == ("update", "a-1")]  # resync re-announces
    finally:
        await cache.stop()


async def test_event_recorder_series_on_the_server(kube_client: Client, wait_for) -> None:  # type: ignore[no-untyped-def]
    target = await kube_client.create(cm("subject", "default"))
    rec = EventRecorder(kube_client, "tester", "tester-1")
    rec.start()
    try:
        for _ in range(4):
            rec.event(target, "Warning", "Flapping", "it flaps")
        rec.event(target, "Normal", "Calm", "fine")

        async def written() -> list[dict[str, Any]]:
            items = (await kube_client.list(EVENT, "default")).items
            return items if len(items) == 2 and any(e.get("series") for e in items) else []

        events = await wait_for(written, 5)
        flapping = next(e for e in events if e["reason"] == "Flapping")
        assert flapping["series"]["count"] == 2  # the second occurrence starts the series
        assert (
            flapping["regarding"]["name"] == "subject"
            and flapping["reportingController"] == "tester"
        )
        assert flapping["reportingInstance"] == "tester-1" and flapping["action"] == "Reconcile"
        await rec.flush()  # later counts are written on flush / refresh / finish
        got = await kube_client.get(EVENT, flapping["metadata"]["name"], "default")
        assert got["series"]["count"] == 4
    finally:
        await rec.stop()
