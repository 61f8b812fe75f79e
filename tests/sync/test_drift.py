"""Drift: an edit in one cluster is detected within 2 s and, with self-heal, reverted."""

from __future__ import annotations

import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from kubewerk.client import Client
from kubewerk.client.resources import ResourceType
from kubewerk.sync import load
from kubewerk.sync.drift import SYNC_TARGET, DriftController
from kubewerk.sync.engine import sync
from kubewerk.sync.keys import ObjectKey
from kubewerk.sync.sources import ClusterSource
from kubewerk.testing import wait_for

from .conftest import widget, write_manifests

EVENTS = ResourceType("events.k8s.io", "v1", "Event", "events", True)
W = ObjectKey("sync.test", "Widget", "default", "w")


def drifted_condition(st: dict) -> dict | None:
    for c in (st.get("status") or {}).get("conditions") or []:
        if c["type"] == "Drifted":
            return c
    return None


async def test_edit_detected_within_two_seconds(clients: list[Client], tmp_path: Path) -> None:
    a, b = clients[0], clients[1]
    write_manifests(tmp_path / "repo" / "w.yaml", widget("w", size="m"), widget("v", size="m"))
    source = load(str(tmp_path / "repo"))
    targets = [ClusterSource("a", a, owns_client=False), ClusterSource("b", b, owns_client=False)]
    assert (await sync(source, targets, "git-wins")).ok
    registry = CollectorRegistry()
    ctl = DriftController(source, targets, registry=registry)
    await ctl.start()
    try:
        st = await wait_for(lambda: _condition(a, "False"), 5)
        assert "every object matches" in st["message"]
        rt = await a.resolve("sync.test/v1", "Widget")
        t0 = time.monotonic()
        await a.patch(
            rt, "w", {"spec": {"size": "edited"}}, "default", field_manager="kubectl-edit"
        )
        await wait_for(lambda: W in ctl.drifted(0), 2, 0.01)
        cond = await wait_for(lambda: _condition(a, "True"), 2, 0.01)
        assert time.monotonic() - t0 < 2
        assert (
            cond["reason"] == "ObjectsDrifted" and "Widget.sync.test default/w" in cond["message"]
        )
        assert ctl.drifted(1) == {}  # the other cluster is untouched
        assert (
            registry.get_sample_value(
                "kubewerk_drift_objects", {"cluster": "a", "kind": "Widget.sync.test"}
            )
            == 1
        )
        events = await wait_for(lambda: _events(a, "Drifted"), 3)
        assert events[0]["regarding"]["name"] == "w" and events[0]["type"] == "Warning"
        # deleting a synced object is drift too; restoring the source's state ends it
        await a.delete(rt, "v", "default")
        await wait_for(lambda: len(ctl.drifted(0)) == 2, 2, 0.01)
        await a.patch(rt, "w", {"spec": {"size": "m"}}, "default")
        await wait_for(lambda: W not in ctl.drifted(0), 2, 0.01)
        st_b = await b.get(SYNC_TARGET, "kubewerk-sync")
        assert drifted_condition(st_b)["status"] == "False"
    finally:
        await ctl.stop()


async def test_self_heal_reverts(clients: list[Client], tmp_path: Path) -> None:
    a = clients[0]
    write_manifests(tmp_path / "repo" / "w.yaml", widget("w", size="m"))
    source = load(str(tmp_path / "repo"))
    targets = [ClusterSource("a", a, owns_client=False)]
    assert (await sync(source, targets, "git-wins")).ok
    ctl = DriftController(source, targets, self_heal=True, registry=CollectorRegistry())
    await ctl.start()
    try:
        await wait_for(lambda: _condition(a, "False"), 5)
        rt = await a.resolve("sync.test/v1", "Widget")
        await a.patch(
            rt,
            "w",
            {"spec": {"size": "edited"}, "metadata": {"labels": {"x": "1"}}},
            "default",
            field_manager="kubectl-edit",
        )

        async def reverted() -> bool:
            w = await a.get(rt, "w", "default")
            return w["spec"]["size"] == "m" and "labels" not in w["metadata"]

        await wait_for(reverted, 2, 0.01)
        assert ctl.healed >= 1
        await wait_for(lambda: _events(a, "Healed"), 3)
        await wait_for(lambda: W not in ctl.drifted(0), 2)
    finally:
        await ctl.stop()


async def _condition(client: Client, status: str) -> dict | None:
    st = await client.get(SYNC_TARGET, "kubewerk-sync")
    cond = drifted_condition(st)
    return cond if cond is not None and cond["status"] == status else None


async def _events(client: Client, reason: str) -> list[dict]:
    items = (await client.list(EVENTS, "default")).items
    return [e for e in items if e.get("reason") == reason]
