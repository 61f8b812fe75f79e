"""Dependencies through the embedded API server with a Platform: a stack applied in any
order converges with no object Active before what it depends on (from the transition
Events' timestamps); objects wait naming what they wait for; a cycle made by an edit is
reported on each member and clears when an edit breaks it; deleting the root tears the
stack down leaves first and leaves nothing; block and orphan refs."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from kubewerk.client import Client, NotFound
from kubewerk.client.resources import EVENT, SECRET
from kubewerk.lifecycle import LifecycleEvent, Platform
from kubewerk.lifecycle.dependencies import (
    DEPENDENCIES_READY,
    DEPENDENCY_CYCLE,
    DEPENDENCY_CYCLE_CLEARED,
    DEPENDENTS_REMOVED,
)
from kubewerk.runtime import get_condition

from .helpers import events_about, manifest
from .test_deps_models import (
    STACK,
    Application,
    Cache,
    Dashboard,
    Database,
    Environment,
    Report,
    Tenant,
    new_platform,
    register,
)


def ref(name: str) -> dict[str, str]:
    return {"name": name}


def secret(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"},
        "stringData": {"password": "s3cret"},
    }


def stack() -> list[dict[str, Any]]:
    """A tenant's stack: tenant acme, environment prod, database orders (with a Secret),
    caches hot and cold, application web on all of them."""
    return [
        manifest(Tenant, "acme", displayName="ACME"),
        manifest(Environment, "prod", tenantRef=ref("acme")),
        secret("orders-credentials"),
        manifest(
            Database,
            "orders",
            environmentRef=ref("prod"),
            credentialsRef=ref("orders-credentials"),
        ),
        manifest(Cache, "hot", environmentRef=ref("prod")),
        manifest(Cache, "cold", environmentRef=ref("prod")),
        manifest(
            Application, "web", databaseRef=ref("orders"), cacheRefs=[ref("hot"), ref("cold")]
        ),
    ]


EDGES = [
    ("Environment/prod", "Tenant/acme"),
    ("Database/orders", "Environment/prod"),
    ("Cache/hot", "Environment/prod"),
    ("Cache/cold", "Environment/prod"),
    ("Application/web", "Database/orders"),
    ("Application/web", "Cache/hot"),
    ("Application/web", "Cache/cold"),
]
"""Every dependent → dependency pair of the stack (the Secret aside: it has no phase)."""


async def phase(client: Client, kind: Any, name: str) -> str | None:
    try:
        obj = await client.get(kind, name, "default")
    except NotFound:
        return None
    return obj.status.phase if obj.status else None


async def condition(client: Client, kind: Any, name: str, type_: str) -> dict[str, Any] | None:
    return get_condition(await client.get(kind, name, "default"), type_)


async def gone(client: Client, kind: Any, name: str) -> bool:
    try:
        await client.get(kind, name, "default")
    except NotFound:
        return True
    return False


async def start(platform: Platform, run_manager: Any) -> None:
    await run_manager(platform.manager)


async def activated_at(client: Client) -> dict[str, datetime]:
    """When each object's Pending → Active PhaseChanged Event was recorded."""
    listed = await client.list(EVENT, "default")
    out: dict[str, datetime] = {}
    for event in listed.items:
        if event.get("reason") == "PhaseChanged" and event["note"].startswith("Pending → Active"):
            regarding = event["regarding"]
            stamp = datetime.fromisoformat(event["eventTime"].replace("Z", "+00:00"))
            out[f"{regarding['kind']}/{regarding['name']}"] = stamp
    return out


async def test_a_stack_applied_in_any_order_converges_in_dependency_order(
    kube_client: Client, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(*STACK)
    platform = new_platform()
    register(platform, *STACK)
    changed: list[LifecycleEvent] = []

    @platform.on(event_type="DependenciesChanged")
    async def on_changed(event: LifecycleEvent) -> None:
        changed.append(event)

    await start(platform, run_manager)
    objects = stack()
    random.Random(20261201).shuffle(objects)
    for obj in objects:
        await kube_client.create(obj)

    async def all_active() -> bool:
        for obj in objects:
            if obj["kind"] != "Secret":
                kind = next(k for k in STACK if k.__name__ == obj["kind"])
                if await phase(kube_client, kind, obj["metadata"]["name"]) != "Active":
                    return False
        return True

    await wait_for(all_active, timeout=30)
    times = await wait_for(lambda: _all_events(kube_client), timeout=10)
    for dependent, dependency in EDGES:
        assert times[dependent] > times[dependency], (dependent, dependency)
    ready = await condition(kube_client, Application, "web", DEPENDENCIES_READY)
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("True", "AllReady")
    assert await condition(kube_client, Tenant, "acme", DEPENDENCIES_READY) is None  # no refs

    # the graph holds the stack; every handler ran once (gates do not call it)
    graph = platform.dependencies.graph
    assert len(graph) == 5  # everything with refs: environment, database, 2 caches, app
    web = next(n for n in graph.referrers() if n.name == "web")
    assert sorted(str(t) for t in graph.targets(web)) == [
        "Cache/default/cold",
        "Cache/default/hot",
        "Database/default/orders",
    ]
    await wait_for(lambda: len({e.key for e in changed}) == 5)
    web_changes = [e for e in changed if e.key == "default/web"]
    assert web_changes[0].message == (
        "depends on Cache/default/cold, Cache/default/hot, Database/default/orders"
    )
    reconciles = sum(platform.registration(k).controller.reconciles for k in STACK)
    assert reconciles <= 3 * 6 + 3  # on average at most about 3 per object


async def _all_events(client: Client) -> dict[str, datetime] | None:
    times = await activated_at(client)
    return times if len(times) == 6 else None


async def test_an_object_waits_naming_what_it_waits_for_and_goes_when_it_is_there(
    kube_client: Client, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(*STACK)
    platform = new_platform()
    register(platform, *STACK)
    await start(platform, run_manager)
    await kube_client.create(
        manifest(Application, "web", databaseRef=ref("orders"), cacheRefs=[ref("hot")])
    )

    async def waiting(message: str) -> bool:
        cond = await condition(kube_client, Application, "web", DEPENDENCIES_READY)
        return cond is not None and cond["message"] == message

    await wait_for(
        lambda: waiting(
            "waiting for Database/default/orders (missing), Cache/default/hot (missing)"
        )
    )
    cond = await condition(kube_client, Application, "web", DEPENDENCIES_READY)
    assert cond is not None and (cond["status"], cond["reason"]) == (
        "False",
        "DependenciesNotReady",
    )
    assert await phase(kube_client, Application, "web") == "Pending"

    # the database arrives but its environment does not: it is Pending, and so waits web
    await kube_client.create(
        manifest(Database, "orders", environmentRef=ref("prod"), credentialsRef=ref("creds"))
    )
    await kube_client.create(manifest(Cache, "hot", environmentRef=ref("prod")))
    await wait_for(
        lambda: waiting(
            "waiting for Database/default/orders (in phase Pending), "
            "Cache/default/hot (in phase Pending)"
        )
    )
    db_cond = await condition(kube_client, Database, "orders", DEPENDENCIES_READY)
    assert db_cond is not None
    assert db_cond["message"] == (
        "waiting for Environment/default/prod (missing), Secret/default/creds (missing)"
    )

    await kube_client.create(manifest(Tenant, "acme"))
    await kube_client.create(manifest(Environment, "prod", tenantRef=ref("acme")))
    await wait_for(lambda: _phase_is(kube_client, Cache, "hot", "Active"))
    await wait_for(lambda: waiting("waiting for Database/default/orders (in phase Pending)"))
    await kube_client.create(secret("creds"))  # a Secret is ready once it exists
    await wait_for(lambda: _phase_is(kube_client, Application, "web", "Active"))


async def _phase_is(client: Client, kind: Any, name: str, want: str) -> bool:
    return await phase(client, kind, name) == want


async def test_a_cycle_made_by_an_edit_is_reported_on_each_member_and_clears(
    kube_client: Client, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Tenant, Environment, Database)
    platform = new_platform()
    register(platform, Tenant, Environment, Database)
    bus: list[LifecycleEvent] = []

    @platform.on(event_type=DEPENDENCY_CYCLE)
    async def on_cycle(event: LifecycleEvent) -> None:
        bus.append(event)

    @platform.on(event_type=DEPENDENCY_CYCLE_CLEARED)
    async def on_cleared(event: LifecycleEvent) -> None:
        bus.append(event)

    await start(platform, run_manager)
    await kube_client.create(manifest(Tenant, "acme"))
    await kube_client.create(manifest(Environment, "prod", tenantRef=ref("acme")))
    await kube_client.create(manifest(Database, "a", environmentRef=ref("prod")))
    await kube_client.create(
        manifest(Database, "b", environmentRef=ref("prod"), replicaOf=ref("a"))
    )
    await wait_for(lambda: _phase_is(kube_client, Database, "b", "Active"))

    await kube_client.patch(Database, "a", {"spec": {"replicaOf": ref("b")}}, "default")
    cycle_a = "dependency cycle: Database/default/a -> Database/default/b -> Database/default/a"
    cycle_b = "dependency cycle: Database/default/b -> Database/default/a -> Database/default/b"

    async def reported(name: str, message: str) -> bool:
        cond = await condition(kube_client, Database, name, DEPENDENCIES_READY)
        return cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
            "False",
            DEPENDENCY_CYCLE,
            message,
        )

    await wait_for(lambda: reported("a", cycle_a))
    await wait_for(lambda: reported("b", cycle_b))
    for name, message in (("a", cycle_a), ("b", cycle_b)):

        async def warned(name: str = name, message: str = message) -> bool:
            events = await events_about(kube_client, name)
            return any(
                (e["type"], e["reason"], e["note"]) == ("Warning", DEPENDENCY_CYCLE, message)
                for e in events
            )

        await wait_for(warned)
    await wait_for(lambda: len(bus) == 2)
    assert sorted((e.event_type, e.key, e.message) for e in bus) == [
        (DEPENDENCY_CYCLE, "default/a", cycle_a),
        (DEPENDENCY_CYCLE, "default/b", cycle_b),
    ]

    await kube_client.patch(Database, "a", {"spec": {"replicaOf": None}}, "default")

    async def cleared(name: str) -> bool:
        cond = await condition(kube_client, Database, name, DEPENDENCIES_READY)
        return cond is not None and (cond["status"], cond["reason"]) == ("True", "AllReady")

    await wait_for(lambda: cleared("a"))
    await wait_for(lambda: cleared("b"))
    await wait_for(lambda: len(bus) == 4)
    assert sorted((e.event_type, e.key) for e in bus[2:]) == [
        (DEPENDENCY_CYCLE_CLEARED, "default/a"),
        (DEPENDENCY_CYCLE_CLEARED, "default/b"),
    ]
    resolved = [
        e for e in await events_about(kube_client, "b") if e["reason"] == "DependencyCycleResolved"
    ]
    assert resolved and resolved[0]["type"] == "Normal"
    assert platform.dependencies.graph.cycles() == []


async def test_deleting_the_root_tears_the_stack_down_leaves_first_and_leaves_nothing(
    kube_client: Client, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(*STACK)
    platform = new_platform()
    torn_down = register(platform, *STACK)
    await start(platform, run_manager)
    for obj in stack():
        await kube_client.create(obj)
    await wait_for(lambda: _phase_is(kube_client, Application, "web", "Active"), timeout=30)

    await kube_client.delete(Tenant, "acme", "default")

    async def nothing_left() -> bool:
        for kind in STACK:
            if (await kube_client.list(kind, "default")).items:
                return False
        return True

    await wait_for(nothing_left, timeout=30)
    order = {name: i for i, name in enumerate(torn_down)}
    assert len(order) == 6
    for dependent, dependency in EDGES:
        assert order[dependent] < order[dependency], torn_down
    assert len(platform.dependencies.graph) == 0
    # the Secret is nobody's to delete
    assert (await kube_client.get(SECRET, "orders-credentials", "default"))["metadata"]
    cascade = [e for e in await events_about(kube_client, "acme") if e["reason"] == "CascadeDelete"]
    assert cascade and cascade[0]["note"] == (
        "deleting dependents first: Environment/default/prod (spec.tenantRef)"
    )


async def test_a_block_ref_holds_the_deletion_until_the_dependent_is_gone(
    kube_client: Client, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Tenant, Environment, Database, Report)
    platform = new_platform()
    register(platform, Tenant, Environment, Database, Report)
    await start(platform, run_manager)
    await kube_client.create(manifest(Tenant, "acme"))
    await kube_client.create(manifest(Environment, "prod", tenantRef=ref("acme")))
    await kube_client.create(manifest(Database, "orders", environmentRef=ref("prod")))
    await kube_client.create(manifest(Report, "monthly", databaseRef=ref("orders")))
    await wait_for(lambda: _phase_is(kube_client, Report, "monthly", "Active"))

    await kube_client.delete(Database, "orders", "default")

    async def held() -> bool:
        cond = await condition(kube_client, Database, "orders", DEPENDENTS_REMOVED)
        return cond is not None and cond["status"] == "False"

    await wait_for(held)
    cond = await condition(kube_client, Database, "orders", DEPENDENTS_REMOVED)
    assert cond is not None
    assert (cond["reason"], cond["message"]) == (
        "DependentsExist",
        "still referenced by Report/default/monthly (spec.databaseRef, onDelete block)",
    )
    assert await phase(kube_client, Database, "orders") == "Deleting"

    async def report_waits() -> bool:
        cond = await condition(kube_client, Report, "monthly", DEPENDENCIES_READY)
        return cond is not None and cond["message"] == (
            "waiting for Database/default/orders (being deleted)"
        )

    await wait_for(report_waits)
    assert not await gone(kube_client, Database, "orders")

    await kube_client.delete(Report, "monthly", "default")
    await wait_for(lambda: gone(kube_client, Database, "orders"))


async def test_an_orphan_ref_lets_the_target_go_and_the_dependent_waits_for_it(
    kube_client: Client, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Tenant, Environment, Cache, Dashboard)
    platform = new_platform()
    register(platform, Tenant, Environment, Cache, Dashboard)
    await start(platform, run_manager)
    await kube_client.create(manifest(Tenant, "acme"))
    await kube_client.create(manifest(Environment, "prod", tenantRef=ref("acme")))
    await kube_client.create(manifest(Cache, "hot", environmentRef=ref("prod")))
    await kube_client.create(manifest(Dashboard, "ops", cacheRef=ref("hot")))
    await wait_for(lambda: _phase_is(kube_client, Dashboard, "ops", "Active"))

    await kube_client.delete(Cache, "hot", "default")
    await wait_for(lambda: gone(kube_client, Cache, "hot"))

    async def waits_for_missing() -> bool:
        cond = await condition(kube_client, Dashboard, "ops", DEPENDENCIES_READY)
        return cond is not None and (cond["status"], cond["message"]) == (
            "False",
            "waiting for Cache/default/hot (missing)",
        )

    await wait_for(waits_for_missing)
    assert await phase(kube_client, Dashboard, "ops") == "Active"  # it keeps its phase
