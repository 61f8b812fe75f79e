"""The dependency engine over caches it is fed by hand: a change of a referenced object
requeues exactly the objects that reference it (and only when its readiness changed),
edits move the edges, the readiness gate names what it waits for, and the teardown gate
applies each deletion policy."""

from __future__ import annotations

from typing import Any

import orjson

from kubewerk.client.resources import ResourceType, resource_type_of
from kubewerk.core.gvk import object_key
from kubewerk.lifecycle import Blocked, Platform
from kubewerk.lifecycle.dependencies import DEPENDENCIES_READY, Dependencies
from kubewerk.lifecycle.depgraph import NodeId
from kubewerk.runtime.queue import WorkQueue

from .helpers import manifest
from .test_deps_models import (
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

GROUP = "deps.kubewerk.dev"


class FakeInformer:
    """An informer whose events the test makes."""

    def __init__(self) -> None:
        self.store: dict[str, bytes] = {}
        self.handlers: list[Any] = []
        self.has_synced = True

    def add_handler(self, handler: Any) -> None:
        self.handlers.append(handler)
        for raw in self.store.values():
            handler.on_add(orjson.loads(raw))

    def get_raw(self, key: str) -> bytes | None:
        return self.store.get(key)

    async def wait_synced(self, timeout: float | None = None) -> bool:
        return True

    def put(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        old = self.store.get(key)
        self.store[key] = orjson.dumps(obj)
        for handler in self.handlers:
            if old is None:
                handler.on_add(orjson.loads(self.store[key]))
            else:
                handler.on_update(orjson.loads(old), orjson.loads(self.store[key]))

    def drop(self, obj: dict[str, Any]) -> None:
        raw = self.store.pop(object_key(obj))
        for handler in self.handlers:
            handler.on_delete(orjson.loads(raw))


class FakeCache:
    def __init__(self) -> None:
        self.informers: dict[ResourceType, FakeInformer] = {}

    def informer(self, kind: Any) -> FakeInformer:
        return self.informers.setdefault(resource_type_of(kind), FakeInformer())


class FakeClient:
    def __init__(self) -> None:
        self.deleted: list[tuple[str, str, str | None, Any]] = []

    async def delete(self, rt: ResourceType, name: str, namespace: str | None, **kw: Any) -> None:
        self.deleted.append((rt.kind, name, namespace, kw.get("preconditions")))


class FakeContext:
    """What the gates read of a reconcile's context."""

    def __init__(self, kind: Any, stored: dict[str, Any]) -> None:
        rt = resource_type_of(kind)
        self.kind_label = f"{rt.kind}.{rt.group}"
        self.namespace = stored["metadata"].get("namespace")
        self.name = stored["metadata"]["name"]
        self.stored = stored
        self.client = FakeClient()
        self.events: list[tuple[str, str, str]] = []

    def event(self, type_: str, reason: str, note: str = "", **kw: Any) -> None:
        self.events.append((type_, reason, note))


def obj(kind: Any, name: str, phase: str | None = None, **spec: Any) -> dict[str, Any]:
    out = manifest(kind, name, **spec)
    out["metadata"]["uid"] = f"uid-{name}"
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


def ref(name: str) -> dict[str, str]:
    return {"name": name}


def attached(platform: Platform) -> tuple[Dependencies, FakeCache]:
    cache = FakeCache()
    platform.dependencies._attach(cache)  # type: ignore[arg-type]
    return platform.dependencies, cache


def drain(queue: WorkQueue[str]) -> set[str]:
    """The keys waiting in a queue (taken out)."""
    keys = set(queue._queue)
    queue._queue.clear()
    queue._dirty.clear()
    return keys


def queued(platform: Platform, *kinds: Any) -> dict[str, set[str]]:
    return {k.__name__: drain(platform.registration(k).controller.queue) for k in kinds}


def node(kind: Any, name: str) -> NodeId:
    return NodeId(GROUP, kind.__name__, "default", name)


async def test_a_readiness_change_requeues_exactly_the_dependents() -> None:
    platform = new_platform()
    register(platform, Tenant, Environment, Database, Application, Report)
    deps, cache = attached(platform)
    dbs, apps, reports = (
        cache.informer(Database),
        cache.informer(Application),
        cache.informer(Report),
    )
    dbs.put(obj(Database, "db1", "Pending", environmentRef=ref("prod")))
    dbs.put(obj(Database, "db2", "Pending", environmentRef=ref("prod")))
    apps.put(obj(Application, "app1", databaseRef=ref("db1")))
    apps.put(obj(Application, "app2", databaseRef=ref("db2")))
    reports.put(obj(Report, "r1", databaseRef=ref("db1")))
    assert deps.graph.dependents(node(Database, "db1")) == {
        node(Application, "app1"),
        node(Report, "r1"),
    }
    queued(platform, Application, Report, Database)

    dbs.put(obj(Database, "db1", "Active", environmentRef=ref("prod")))
    assert queued(platform, Application, Report, Database) == {
        "Application": {"default/app1"},
        "Report": {"default/r1"},
        "Database": set(),
    }

    # a change that leaves its readiness as it was requeues nobody
    relabelled = obj(Database, "db1", "Active", environmentRef=ref("prod"))
    relabelled["metadata"]["labels"] = {"team": "a"}
    dbs.put(relabelled)
    assert queued(platform, Application, Report) == {"Application": set(), "Report": set()}

    # Pending → Failed changes why it is not ready (the message): requeued
    dbs.put(obj(Database, "db2", "Failed", environmentRef=ref("prod")))
    assert queued(platform, Application, Report) == {
        "Application": {"default/app2"},
        "Report": set(),
    }

    # an edit moves app2 onto db1: db1's dependents follow
    apps.put(obj(Application, "app2", databaseRef=ref("db1")))
    assert deps.graph.dependents(node(Database, "db2")) == frozenset()
    queued(platform, Application, Report)
    dbs.drop(relabelled)
    assert queued(platform, Application, Report) == {
        "Application": {"default/app1", "default/app2"},
        "Report": {"default/r1"},
    }


async def test_the_readiness_gate_names_what_it_waits_for_and_why() -> None:
    platform = new_platform()
    register(platform, Tenant, Environment, Database, Cache, Application)
    deps, cache = attached(platform)
    envs, dbs, caches = cache.informer(Environment), cache.informer(Database), cache.informer(Cache)
    envs.put(obj(Environment, "prod", "Active", tenantRef=ref("acme")))
    dbs.put(obj(Database, "orders", "Reconciling", environmentRef=ref("prod")))
    deleting = obj(Cache, "hot", "Active", environmentRef=ref("prod"))
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    caches.put(deleting)
    caches.put(obj(Cache, "warm", None, environmentRef=ref("prod")))
    blocked_cache = obj(Cache, "cold", "Active", environmentRef=ref("prod"))
    blocked_cache["status"]["conditions"] = [
        {"type": DEPENDENCIES_READY, "status": "False", "reason": "x", "message": ""}
    ]
    caches.put(blocked_cache)
    app = obj(
        Application,
        "web",
        databaseRef=ref("orders"),
        cacheRefs=[ref("hot"), ref("warm"), ref("cold"), ref("gone"), ref("hot")],
    )
    answer = await deps._check_ready(None, FakeContext(Application, app))  # type: ignore[arg-type]
    assert answer == Blocked(
        "DependenciesNotReady",
        "waiting for Database/default/orders (in phase Reconciling), "
        "Cache/default/hot (being deleted), Cache/default/warm (has no phase yet), "
        "Cache/default/cold (waiting for its own dependencies), Cache/default/gone (missing)",
    )
    ready = obj(Database, "orders", environmentRef=ref("prod"))
    assert await deps._check_ready(None, FakeContext(Database, ready)) is None  # type: ignore[arg-type]


async def test_the_teardown_gate_applies_each_deletion_policy() -> None:
    platform = new_platform()
    register(platform, Tenant, Environment, Database, Cache, Application, Report, Dashboard)
    deps, cache = attached(platform)
    envs, dbs, caches = cache.informer(Environment), cache.informer(Database), cache.informer(Cache)
    apps, reports = cache.informer(Application), cache.informer(Report)
    dashboards = cache.informer(Dashboard)
    envs.put(obj(Environment, "prod", "Active", tenantRef=ref("acme")))
    caches.put(obj(Cache, "hot", "Active", environmentRef=ref("prod")))
    dbs.put(obj(Database, "orders", "Active", environmentRef=ref("prod")))
    dashboards.put(obj(Dashboard, "ops", "Active", cacheRef=ref("hot")))

    # orphan only: the cache may go
    ctx = FakeContext(Cache, obj(Cache, "hot", "Deleting", environmentRef=ref("prod")))
    assert await deps._check_teardown(None, ctx) is None  # type: ignore[arg-type]

    # cascade: the app (orphan-free: cascade wins over its other refs) is deleted first
    apps.put(obj(Application, "web", "Active", databaseRef=ref("orders"), cacheRefs=[ref("hot")]))
    ctx = FakeContext(Cache, obj(Cache, "hot", "Deleting", environmentRef=ref("prod")))
    answer = await deps._check_teardown(None, ctx)  # type: ignore[arg-type]
    assert answer == Blocked(
        "DependentsExist",
        "still referenced by Application/default/web (spec.cacheRefs[*], onDelete cascade)",
    )
    assert ctx.client.deleted == [("Application", "web", "default", {"uid": "uid-web"})]
    assert ctx.events == [
        (
            "Normal",
            "CascadeDelete",
            "deleting dependents first: Application/default/web (spec.cacheRefs[*])",
        )
    ]
    # already being deleted: not deleted again, still waited for
    web = obj(Application, "web", "Deleting", databaseRef=ref("orders"), cacheRefs=[ref("hot")])
    web["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    apps.put(web)
    ctx = FakeContext(Cache, obj(Cache, "hot", "Deleting", environmentRef=ref("prod")))
    assert isinstance(await deps._check_teardown(None, ctx), Blocked)  # type: ignore[arg-type]
    assert ctx.client.deleted == [] and ctx.events == []
    apps.drop(web)

    # block: the report holds the database until it is gone
    reports.put(obj(Report, "monthly", "Active", databaseRef=ref("orders")))
    ctx = FakeContext(Database, obj(Database, "orders", "Deleting", environmentRef=ref("prod")))
    answer = await deps._check_teardown(None, ctx)  # type: ignore[arg-type]
    assert answer == Blocked(
        "DependentsExist",
        "still referenced by Report/default/monthly (spec.databaseRef, onDelete block)",
    )
    assert ctx.client.deleted == []
    reports.drop(obj(Report, "monthly", databaseRef=ref("orders")))
    assert await deps._check_teardown(None, ctx) is None  # type: ignore[arg-type]


async def test_a_cycle_being_deleted_goes_together() -> None:
    platform = new_platform()
    register(platform, Tenant, Environment, Database)
    deps, cache = attached(platform)
    dbs = cache.informer(Database)
    a = obj(Database, "a", "Deleting", environmentRef=ref("prod"), replicaOf=ref("b"))
    b = obj(Database, "b", "Deleting", environmentRef=ref("prod"), replicaOf=ref("a"))
    for each in (a, b):
        each["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        dbs.put(each)
    assert deps.graph.cycle(node(Database, "a")) == (node(Database, "a"), node(Database, "b"))
    for each in (a, b):
        ctx = FakeContext(Database, each)
        assert await deps._check_teardown(None, ctx) is None  # type: ignore[arg-type]
    # outside a deletion the cycle is what the readiness gate reports
    ctx = FakeContext(Database, a)
    answer = await deps._check_ready(None, ctx)  # type: ignore[arg-type]
    assert answer is not None and answer.reason == "DependencyCycle"
    assert ctx.events == [
        (
            "Warning",
            "DependencyCycle",
            "dependency cycle: Database/default/a -> Database/default/b -> Database/default/a",
        )
    ]
