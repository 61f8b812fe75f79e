"""The built-in garbage collector: ownerReferences with Background, Foreground, Orphan."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.apiserver.helpers import DB_PATH, Api, configmap, database

CM_PATH = "/api/v1/namespaces/default/configmaps"


def owned_by(owner: dict[str, Any], block: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


async def test_background_deletes_dependents(api: Api) -> None:
    _, owner = await api.post(DB_PATH, database("owner"))
    await api.post(CM_PATH, configmap("child", ownerReferences=[owned_by(owner)]))
    status, _ = await api.delete(f"{DB_PATH}/owner")
    assert status == 200
    await api.wait_gone(f"{CM_PATH}/child")


async def test_dependent_with_a_live_second_owner_survives(api: Api) -> None:
    _, one = await api.post(DB_PATH, database("one"))
    _, two = await api.post(DB_PATH, database("two"))
    refs = [owned_by(one), {**owned_by(two), "controller": False}]
    await api.post(CM_PATH, configmap("shared", ownerReferences=refs))
    await api.delete(f"{DB_PATH}/one")
    for _ in range(200):
        _, cm = await api.get(f"{CM_PATH}/shared")
        if len(cm["metadata"]["ownerReferences"]) == 1:
            break
        await asyncio.sleep(0.01)
    assert [r["name"] for r in cm["metadata"]["ownerReferences"]] == ["two"]


async def test_orphan_keeps_dependents_and_strips_references(api: Api) -> None:
    _, owner = await api.post(DB_PATH, database("owner"))
    await api.post(CM_PATH, configmap("child", ownerReferences=[owned_by(owner)]))
    status, body = await api.delete(f"{DB_PATH}/owner", {"propagationPolicy": "Orphan"})
    assert status == 200
    assert "orphan" in body["metadata"]["finalizers"]
    await api.wait_gone(f"{DB_PATH}/owner")
    status, cm = await api.get(f"{CM_PATH}/child")
    assert status == 200
    assert "ownerReferences" not in cm["metadata"]


async def test_foreground_waits_for_blocking_dependents(api: Api) -> None:
    _, owner = await api.post(DB_PATH, database("owner"))
    child = configmap("child", ownerReferences=[owned_by(owner, block=True)])
    child["metadata"]["finalizers"] = ["test/hold"]
    await api.post(CM_PATH, child)
    status, body = await api.delete(f"{DB_PATH}/owner?propagationPolicy=Foreground")
    assert status == 200  # 202 only for the legacy orphanDependents=false
    assert "foregroundDeletion" in body["metadata"]["finalizers"]
    # the child is being deleted but its finalizer holds it, and so the owner
    for _ in range(100):
        _, cm = await api.get(f"{CM_PATH}/child")
        if cm["metadata"].get("deletionTimestamp"):
            break
        await asyncio.sleep(0.01)
    assert cm["metadata"].get("deletionTimestamp")
    await asyncio.sleep(0.1)
    status, still = await api.get(f"{DB_PATH}/owner")
    assert status == 200 and still["metadata"]["deletionTimestamp"]
    await api.patch(f"{CM_PATH}/child", {"metadata": {"finalizers": None}})
    await api.wait_gone(f"{CM_PATH}/child")
    await api.wait_gone(f"{DB_PATH}/owner")


async def test_dangling_owner_reference_is_collected(api: Api) -> None:
    ghost = {
        "apiVersion": "demo.kubewerk.dev/v1",
        "kind": "Database",
        "name": "ghost",
        "uid": "00000000-0000-0000-0000-000000000000",
    }
    status, _ = await api.post(CM_PATH, configmap("orphaned", ownerReferences=[ghost]))
    assert status == 201
    await api.wait_gone(f"{CM_PATH}/orphaned")
