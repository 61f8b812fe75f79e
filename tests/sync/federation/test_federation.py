"""Federation against a host and three member servers: placement by region=eu with
overrides, relabelling moves the copy, a stopped member makes the object Degraded while
the others stay propagated, deletion removes every copy."""

from __future__ import annotations

import asyncio
from typing import Any

from kubewerk.sync.federation import (
    CLUSTER_SET,
    FEDERATED_OBJECT,
    FINALIZER,
    OWNER_ANNOTATION,
    PLACEMENT,
)

from .conftest import Fleet, federated, placement

EU = {"eu-1": {"region": "eu"}, "eu-2": {"region": "eu"}, "us-1": {"region": "us"}}
OVERRIDE = [
    {"clusterName": "eu-2", "patch": [{"op": "replace", "path": "/data/size", "value": "large"}]},
    {
        "clusterSelector": {"matchLabels": {"region": "eu"}},
        "patch": [{"op": "add", "path": "/data/zone", "value": "europe"}],
    },
]


async def start(fleet: Fleet, **placement_spec: Any) -> None:
    await fleet.create_cluster_set(EU)
    spec = placement_spec or {"clusterSelector": {"matchLabels": {"region": "eu"}}}
    await fleet.host.create(placement("eu", **spec))
    await fleet.host.create(federated("cfg", "eu", {"size": "small"}, overrides=OVERRIDE))


async def propagated(fleet: Fleet) -> dict[str, Any] | None:
    fo = await fleet.get(FEDERATED_OBJECT, "cfg")
    cond = fleet.condition(fo, "Propagated")
    return fo if cond is not None and cond["status"] == "True" else None


async def test_placed_onto_eu_with_overrides(fleet: Fleet) -> None:
    await start(fleet)
    fo = await fleet.until(lambda: propagated(fleet), what="Propagated")
    assert await fleet.holders("cfg") == {"eu-1", "eu-2"}
    eu1 = await fleet.member_object("eu-1", "cfg")
    eu2 = await fleet.member_object("eu-2", "cfg")
    assert eu1 is not None and eu2 is not None
    assert eu1["data"] == {"size": "small", "zone": "europe"}
    assert eu2["data"] == {"size": "large", "zone": "europe"}
    assert eu1["metadata"]["annotations"][OWNER_ANNOTATION] == "default/cfg"
    assert eu1["metadata"]["labels"]["app"] == "demo"
    assert [(c["name"], c["state"]) for c in fo["status"]["clusters"]] == [
        ("eu-1", "Propagated"),
        ("eu-2", "Propagated"),
    ]
    assert fleet.condition(fo, "Degraded")["status"] == "False"  # type: ignore[index]
    assert FINALIZER in fo["metadata"]["finalizers"]
    pl = await fleet.get(PLACEMENT, "eu")
    assert [d["clusterName"] for d in pl["status"]["decisions"]] == ["eu-1", "eu-2"]
    # a template change reaches every copy
    await fleet.host.patch(
        FEDERATED_OBJECT, "cfg", {"spec": {"template": {"data": {"size": "xl"}}}}, "default"
    )

    async def updated() -> bool:
        a = await fleet.member_object("eu-1", "cfg")
        b = await fleet.member_object("eu-2", "cfg")
        return bool(a and b and a["data"]["size"] == "xl" and b["data"]["size"] == "large")

    await fleet.until(updated, what="template change propagated")


async def test_relabelling_a_cluster_moves_the_object(fleet: Fleet) -> None:
    await start(fleet)
    await fleet.until(lambda: propagated(fleet), what="Propagated")
    cs = await fleet.get(CLUSTER_SET, "fleet")
    clusters = cs["spec"]["clusters"]
    for c in clusters:
        if c["name"] == "eu-1":
            c["labels"] = {"region": "us"}
        if c["name"] == "us-1":
            c["labels"] = {"region": "eu"}

    await fleet.host.patch(CLUSTER_SET, "fleet", {"spec": {"clusters": clusters}}, "default")

    async def moved() -> bool:
        return await fleet.holders("cfg") == {"eu-2", "us-1"}

    await fleet.until(moved, what="copy moved from eu-1 to us-1")
    us1 = await fleet.member_object("us-1", "cfg")
    assert us1 is not None and us1["data"] == {"size": "small", "zone": "europe"}
    fo = await fleet.until(lambda: propagated(fleet), what="Propagated again")
    assert {c["name"] for c in fo["status"]["clusters"]} == {"eu-2", "us-1"}


async def test_a_stopped_member_degrades_without_blocking_the_others(fleet: Fleet) -> None:
    await start(fleet)
    await fleet.until(lambda: propagated(fleet), what="Propagated")
    await fleet.members["eu-2"].stop()
    # a change made while eu-2 is down still reaches eu-1 at once
    await fleet.host.patch(
        FEDERATED_OBJECT, "cfg", {"spec": {"template": {"data": {"size": "m"}}}}, "default"
    )

    async def degraded() -> dict[str, Any] | None:
        fo = await fleet.get(FEDERATED_OBJECT, "cfg")
        cond = fleet.condition(fo, "Degraded")
        return fo if cond and cond["status"] == "True" else None

    fo = await fleet.until(degraded, what="Degraded")
    cond = fleet.condition(fo, "Degraded")
    assert cond is not None and cond["message"].startswith("eu-2: Unreachable")
    states = {c["name"]: c["state"] for c in fo["status"]["clusters"]}
    assert states == {"eu-1": "Propagated", "eu-2": "Unreachable"}
    assert fleet.condition(fo, "Propagated")["status"] == "False"  # type: ignore[index]

    async def eu1_updated() -> bool:
        obj = await fleet.member_object("eu-1", "cfg")
        return bool(obj and obj["data"]["size"] == "m")

    await fleet.until(eu1_updated, timeout=3, what="eu-1 updated while eu-2 is down")
    # the ClusterSet reports the member and the placement still tolerates it (300 s default)

    async def tainted() -> dict[str, Any] | None:
        cs = await fleet.get(CLUSTER_SET, "fleet")
        entry = {c["name"]: c for c in cs["status"]["clusters"]}["eu-2"]
        return entry if not entry["reachable"] else None

    entry = await fleet.until(tainted, what="eu-2 unreachable in the ClusterSet")
    assert entry["taints"][0]["key"] == "federation.kubewerk.dev/unreachable"
    pl = await fleet.get(PLACEMENT, "eu")
    assert [d["clusterName"] for d in pl["status"]["decisions"]] == ["eu-1", "eu-2"]
    assert "nextReviewTime" in pl["status"]


async def test_an_untolerated_unreachable_member_is_deselected(fleet: Fleet) -> None:
    await start(
        fleet,
        clusterSelector={"matchLabels": {"region": "eu"}},
        tolerations=[
            {
                "key": "federation.kubewerk.dev/unreachable",
                "operator": "Exists",
                "tolerationSeconds": 0,
            }
        ],
    )
    await fleet.until(lambda: propagated(fleet), what="Propagated")
    await fleet.members["eu-1"].stop()

    async def deselected() -> bool:
        pl = await fleet.get(PLACEMENT, "eu")
        return [d["clusterName"] for d in pl["status"]["decisions"]] == ["eu-2"]

    await fleet.until(deselected, what="eu-1 deselected")
    fo = await fleet.get(FEDERATED_OBJECT, "cfg")
    # the copy in eu-1 cannot be removed while it is down: reported, not forgotten
    await asyncio.sleep(0.3)
    fo = await fleet.get(FEDERATED_OBJECT, "cfg")
    states = {c["name"]: c["state"] for c in fo["status"]["clusters"]}
    assert states == {"eu-1": "Removing", "eu-2": "Propagated"}


async def test_deleting_removes_every_copy(fleet: Fleet) -> None:
    await start(fleet)
    await fleet.until(lambda: propagated(fleet), what="Propagated")
    # a foreign object of the same name in us-1 is never touched
    await fleet.clients["us-1"].create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "default"},
        }
    )
    await fleet.host.delete(FEDERATED_OBJECT, "cfg", "default")

    async def gone() -> bool:
        try:
            await fleet.get(FEDERATED_OBJECT, "cfg")
        except Exception:
            return await fleet.holders("cfg") == {"us-1"}
        return False

    await fleet.until(gone, what="every copy removed and the object gone")
