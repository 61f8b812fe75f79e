"""The Platform against the embedded API server: two kinds with their lifecycles,
handlers returning phases, one guarded status write per transition, Events, metrics and
bus events; illegal transitions (undeclared or refused by a guard) raise and write
nothing; terminal errors move to Failed; gates keep objects Pending; teardown; on-demand
workers; strategies switched by configuration."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.lifecycle import (
    FINALIZER,
    STRATEGY_ENV,
    Blocked,
    LifecycleContext,
    LifecycleEvent,
    Phase,
    Platform,
)
from kubewerk.runtime import Manager, TerminalError, get_condition
from kubewerk.runtime.queue import ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter

from .helpers import RecordingClient, events_about, manifest, samples
from .models import Cache, CachePhase, Database, DatabaseStatus

DB = "Database.lifecycle.kubewerk.dev"
CACHE = "Cache.lifecycle.kubewerk.dev"


@pytest.fixture
async def client(kube_server: EmbeddedServer) -> AsyncIterator[RecordingClient]:
    c = RecordingClient.from_url(kube_server.url)
    c.patches = []
    yield c  # type: ignore[misc]
    await c.close()


async def start(platform: Platform, client: RecordingClient, run_manager: Any) -> None:
    platform.manager.use_client(client)
    await run_manager(platform.manager)


def new_platform(**kwargs: Any) -> Platform:
    return Platform(Manager(probe_port=None), **kwargs)


async def get(client: RecordingClient, kind: Any, name: str) -> Any:
    return await client.get(kind, name, "default")


async def phase_is(client: RecordingClient, kind: Any, name: str, phase: str) -> bool:
    obj = await get(client, kind, name)
    return obj.status is not None and obj.status.phase == phase


async def test_two_kinds_reach_their_phases_with_one_status_write_per_transition(
    client: RecordingClient, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Database, Cache)
    platform = new_platform()
    calls: list[str] = []
    seen_active: list[LifecycleEvent] = []
    seen_cache: list[LifecycleEvent] = []

    @platform.kind(Database)
    async def provision(db: Database, ctx: LifecycleContext) -> Phase | None:
        calls.append(db.name or "")
        if ctx.phase is Phase.ACTIVE:
            return Phase.ACTIVE  # staying: no transition
        db.status = db.status or DatabaseStatus()
        db.status.endpoint = f"{db.name}.default.svc:5432"
        return Phase.ACTIVE

    @platform.kind(Cache)
    async def fill(cache: Cache, ctx: LifecycleContext) -> CachePhase | None:
        return CachePhase.WARM if cache.spec.size else None

    @platform.on(Database, Phase.ACTIVE)
    async def on_active(event: LifecycleEvent) -> None:
        seen_active.append(event)

    @platform.on(Cache)
    async def on_cache(event: LifecycleEvent) -> None:
        seen_cache.append(event)

    await start(platform, client, run_manager)
    await client.create(manifest(Database, "orders"))
    await client.create(manifest(Cache, "hot", size=5))
    await client.create(manifest(Cache, "empty"))
    await wait_for(lambda: phase_is(client, Database, "orders", "Active"))
    await wait_for(lambda: phase_is(client, Cache, "hot", "Warm"))
    await wait_for(lambda: phase_is(client, Cache, "empty", "Waiting"))

    db = await get(client, Database, "orders")
    assert db.status.endpoint == "orders.default.svc:5432"
    assert db.status.observed_generation == 1 and db.status.last_transition_time is not None
    ready = get_condition(db, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["observedGeneration"]) == ("True", "Active", 1)
    # the phase, the endpoint the handler set, Ready and observedGeneration: one write
    writes = client.status_writes("orders")
    assert len(writes) == 1
    assert writes[0]["status"]["phase"] == "Active"
    assert writes[0]["status"]["endpoint"] == "orders.default.svc:5432"
    assert writes[0]["metadata"]["resourceVersion"]  # guarded
    cache = await get(client, Cache, "hot")
    assert get_condition(cache, "Ready")["reason"] == "Filled"  # type: ignore[index]
    empty = await get(client, Cache, "empty")
    assert get_condition(empty, "Ready")["status"] == "False"  # type: ignore[index]
    assert len(client.status_writes("empty")) == 1  # its initial phase, recorded once

    # the echo of the kernel's own write does not call the handler again
    await asyncio.sleep(0.3)
    assert calls == ["orders"]

    # a spec change: the handler stays Active; observedGeneration follows in one write
    await client.patch(Database, "orders", {"spec": {"engine": "mysql"}}, "default")

    async def observed_2() -> bool:
        return bool((await get(client, Database, "orders")).status.observed_generation == 2)

    await wait_for(observed_2)
    assert len(client.status_writes("orders")) == 2
    assert get_condition(await get(client, Database, "orders"), "Ready")["observedGeneration"] == 2  # type: ignore[index]

    async def events_written() -> list[dict[str, Any]]:
        return [e for e in await events_about(client, "orders") if e["reason"] == "PhaseChanged"]

    events = await wait_for(events_written)
    assert [(e["type"], e["note"], e["action"]) for e in events] == [
        ("Normal", "Pending → Active: Active", "PendingToActive")
    ]

    metrics = platform.manager.metrics.exposition()
    transitions = samples(metrics, "kubewerk_phase_transitions_total")
    assert transitions == {
        f'{{from="Pending",kind="{DB}",to="Active"}}': 1.0,
        f'{{from="Waiting",kind="{CACHE}",to="Warm"}}': 1.0,
    }
    assert samples(metrics, "kubewerk_objects") == {
        f'{{kind="{CACHE}",phase="Waiting"}}': 1.0,
        f'{{kind="{CACHE}",phase="Warm"}}': 1.0,
        f'{{kind="{DB}",phase="Active"}}': 1.0,
    }
    durations = samples(metrics, "kubewerk_phase_duration_seconds_count")
    assert durations == {
        f'{{kind="{CACHE}",phase="Waiting"}}': 1.0,
        f'{{kind="{DB}",phase="Pending"}}': 1.0,
    }

    await wait_for(lambda: seen_active and seen_cache)
    (event,) = seen_active
    assert (event.event_type, event.kind, event.key) == ("PhaseChanged", DB, "default/orders")
    assert (event.from_phase, event.to_phase, event.reason) == ("Pending", "Active", "Active")
    assert len(event.trace_id) == 32
    assert [(e.key, e.to_phase) for e in seen_cache] == [("default/hot", "Warm")]


async def test_illegal_transitions_raise_write_nothing_and_wait_for_a_change(
    client: RecordingClient, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Database, Cache)
    platform = new_platform()
    attempts: list[str] = []
    refused: list[LifecycleEvent] = []

    @platform.kind(Database)
    async def provision(db: Database, ctx: LifecycleContext) -> Phase | None:
        attempts.append(str(ctx.phase))
        if ctx.phase is Phase.FAILED:
            await ctx.transition(db, Phase.ACTIVE, reason="Retried")  # Failed → Active: illegal
        if db.spec.fail:
            raise TerminalError("the backend refused the engine")
        return Phase.ACTIVE

    @platform.kind(Cache)
    async def fill(cache: Cache, ctx: LifecycleContext) -> CachePhase:
        return CachePhase.WARM  # the guard has_size refuses an empty cache

    @platform.on(event_type="IllegalTransition")
    async def on_refused(event: LifecycleEvent) -> None:
        refused.append(event)

    await start(platform, client, run_manager)
    await client.create(manifest(Database, "broken", fail=True))
    await wait_for(lambda: phase_is(client, Database, "broken", "Failed"))
    failed = await get(client, Database, "broken")
    ready = get_condition(failed, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "ReconcileFailed",
        "the backend refused the engine",
    )
    writes_before = len(client.status_writes("broken"))
    assert writes_before == 1

    # a spec change: the handler tries Failed → Active, which the lifecycle refuses
    await client.patch(Database, "broken", {"spec": {"engine": "mysql"}}, "default")

    async def warned() -> list[dict[str, Any]]:
        return [
            e for e in await events_about(client, "broken") if e["reason"] == "IllegalTransition"
        ]

    (warning,) = await wait_for(warned)
    assert warning["type"] == "Warning"
    assert warning["note"] == (
        "illegal phase transition Failed → Active (allowed from Failed: Reconciling, Deleting)"
    )
    await asyncio.sleep(0.3)
    assert attempts == ["Pending", "Failed"]  # terminal: not retried
    assert len(client.status_writes("broken")) == writes_before  # nothing written
    assert (await get(client, Database, "broken")).status.phase == "Failed"
    terminal = samples(
        platform.manager.metrics.exposition(), "controller_runtime_terminal_reconcile_errors_total"
    )
    # the handler's TerminalError became the move to Failed; the refusal is terminal
    assert terminal['{controller="database"}'] == 1.0

    # the guard: an empty cache may not become Warm; nothing is written at all
    await client.create(manifest(Cache, "empty"))

    async def guard_warned() -> list[dict[str, Any]]:
        return [
            e for e in await events_about(client, "empty") if e["reason"] == "IllegalTransition"
        ]

    (guarded,) = await wait_for(guard_warned)
    assert guarded["note"] == "phase transition Waiting → Warm refused by its guard has_size"
    assert client.status_writes("empty") == []
    assert (await get(client, Cache, "empty")).status is None
    # the object changes: the guard passes
    await client.patch(Cache, "empty", {"spec": {"size": 3}}, "default")
    await wait_for(lambda: phase_is(client, Cache, "empty", "Warm"))

    await wait_for(lambda: len(refused) == 2)
    assert [(e.kind, e.key, e.from_phase, e.to_phase) for e in refused] == [
        (DB, "default/broken", "Failed", "Active"),
        (CACHE, "default/empty", "Waiting", "Warm"),
    ]
    transitions = samples(platform.manager.metrics.exposition(), "kubewerk_phase_transitions_total")
    assert f'{{from="Failed",kind="{DB}",to="Active"}}' not in transitions


async def test_a_gate_keeps_an_object_pending_and_teardown_runs_on_deletion(
    client: RecordingClient, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Database)
    platform = new_platform()
    handled: list[str] = []
    torn_down: list[str] = []

    @platform.kind(Database)
    async def provision(db: Database, ctx: LifecycleContext) -> Phase:
        handled.append(db.name or "")
        return Phase.ACTIVE

    @platform.teardown(Database)
    async def drop(db: Database, ctx: LifecycleContext) -> None:
        assert ctx.phase is Phase.DELETING
        torn_down.append(db.name or "")

    @platform.gate("Approved", kinds=[Database])
    def approved(db: Database, ctx: LifecycleContext) -> Blocked | None:
        if (db.metadata.labels or {}).get("approved") == "yes":
            return None
        return Blocked("NotApproved", "waiting for the label approved=yes")

    await start(platform, client, run_manager)
    await client.create(manifest(Database, "orders"))
    await wait_for(lambda: phase_is(client, Database, "orders", "Pending"))
    db = await get(client, Database, "orders")
    gate = get_condition(db, "Approved")
    assert gate is not None
    assert (gate["status"], gate["reason"], gate["message"]) == (
        "False",
        "NotApproved",
        "waiting for the label approved=yes",
    )
    assert get_condition(db, "Ready")["status"] == "False"  # type: ignore[index]
    assert db.metadata.finalizers == [FINALIZER]
    assert handled == []

    await client.patch(Database, "orders", {"metadata": {"labels": {"approved": "yes"}}}, "default")
    await wait_for(lambda: phase_is(client, Database, "orders", "Active"))
    db = await get(client, Database, "orders")
    assert get_condition(db, "Approved")["status"] == "True"  # type: ignore[index]
    assert get_condition(db, "Approved")["reason"] == "Satisfied"  # type: ignore[index]
    assert handled == ["orders"]

    await client.delete(Database, "orders", "default")

    async def gone() -> bool:
        from kubewerk.client import NotFound

        try:
            await get(client, Database, "orders")
        except NotFound:
            return True
        return False

    await wait_for(gone)
    assert torn_down == ["orders"]
    transitions = samples(platform.manager.metrics.exposition(), "kubewerk_phase_transitions_total")
    assert transitions[f'{{from="Active",kind="{DB}",to="Deleting"}}'] == 1.0


async def test_strategies_are_switched_by_configuration(
    client: RecordingClient, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Database, Cache)
    # the code says rate_limited for both; the environment overrides it per kind
    environ = {STRATEGY_ENV: "Database=immediate(attempts=1000); Cache=backoff(base=30)"}
    platform = new_platform(environ=environ)
    calls = {"db": 0, "cache": 0}

    @platform.kind(Database, strategy="rate_limited")
    async def flaky_db(db: Database, ctx: LifecycleContext) -> None:
        calls["db"] += 1
        raise RuntimeError("backend down")

    @platform.kind(Cache, strategy="rate_limited")
    async def flaky_cache(cache: Cache, ctx: LifecycleContext) -> None:
        calls["cache"] += 1
        raise RuntimeError("backend down")

    db_reg, cache_reg = platform.registration(Database), platform.registration(Cache)
    assert (str(db_reg.strategy), str(cache_reg.strategy)) == (
        "immediate(attempts=1000)",
        "backoff(base=30)",
    )
    await start(platform, client, run_manager)
    assert isinstance(db_reg.controller.queue.rate_limiter, ItemFastSlowRateLimiter)
    assert isinstance(cache_reg.controller.queue.rate_limiter, ItemExponentialFailureRateLimiter)
    await client.create(manifest(Database, "flaky"))
    await client.create(manifest(Cache, "flaky"))
    await wait_for(lambda: calls["cache"] == 1 and calls["db"] >= 20, timeout=5)
    await asyncio.sleep(0.2)
    assert calls["cache"] == 1  # backing off for 30 s


async def test_kinds_without_work_hold_no_worker(
    client: RecordingClient, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Database, Cache)
    platform = new_platform()

    @platform.kind(Database, max_concurrent_reconciles=4)
    async def provision(db: Database, ctx: LifecycleContext) -> Phase:
        return Phase.ACTIVE

    @platform.kind(Cache)
    async def fill(cache: Cache, ctx: LifecycleContext) -> None:
        return None

    await start(platform, client, run_manager)
    db_ctrl = platform.registration(Database).controller
    cache_ctrl = platform.registration(Cache).controller
    assert db_ctrl.running and cache_ctrl.running
    for i in range(10):
        await client.create(manifest(Database, f"db-{i}"))

    async def all_active() -> bool:
        objs = await client.list(Database, "default")
        return (
            all(o.status and o.status.phase == "Active" for o in objs.items)
            and len(objs.items) == 10
        )

    await wait_for(all_active)
    await wait_for(lambda: db_ctrl.live_workers == 0)
    assert db_ctrl.workers_started >= 1
    assert cache_ctrl.workers_started == 0 and cache_ctrl.live_workers == 0
    assert len(platform.registration(Cache).own_writes) == 0
    await platform.manager.stop()
    assert not db_ctrl.running


async def test_a_key_enqueued_by_other_means_is_reconciled_in_full(
    client: RecordingClient, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    """The dependency engine's seam: a gate waits on something outside the object; when
    it changes, enqueueing the key re-asks the gate (the object itself did not change:
    its cached version is still the kernel's own last write)."""
    await install_crds(Database)
    platform = new_platform()
    approved: set[str] = set()
    asked: list[str] = []

    @platform.kind(Database)
    async def provision(db: Database, ctx: LifecycleContext) -> Phase:
        return Phase.ACTIVE

    @platform.gate("Approved")
    def approval(db: Database, ctx: LifecycleContext) -> Blocked | None:
        asked.append(db.name or "")
        return None if db.name in approved else Blocked("NotApproved", "not yet")

    await start(platform, client, run_manager)
    await client.create(manifest(Database, "orders"))
    await wait_for(lambda: phase_is(client, Database, "orders", "Pending"))
    await asyncio.sleep(0.2)
    assert asked == ["orders"]  # its own write's echo asked nothing
    approved.add("orders")
    platform.registration(Database).controller.queue.add("default/orders")
    await wait_for(lambda: phase_is(client, Database, "orders", "Active"))
    assert asked == ["orders", "orders"]


async def test_a_change_made_while_reconciling_is_reconciled_again(
    client: RecordingClient, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Database)
    platform = new_platform()
    inside = asyncio.Event()
    proceed = asyncio.Event()
    seen: list[str | None] = []

    @platform.kind(Database)
    async def provision(db: Database, ctx: LifecycleContext) -> Phase | None:
        seen.append((db.metadata.labels or {}).get("tier"))
        if len(seen) == 1:
            await ctx.transition(db, Phase.ACTIVE)  # written before the change below
            inside.set()
            await proceed.wait()
            return None
        return Phase.ACTIVE

    await start(platform, client, run_manager)
    await client.create(manifest(Database, "orders"))
    await asyncio.wait_for(inside.wait(), 5)
    await client.patch(Database, "orders", {"metadata": {"labels": {"tier": "gold"}}}, "default")
    await asyncio.sleep(0.2)  # the label's event arrives while the reconcile runs
    proceed.set()
    await wait_for(lambda: seen == [None, "gold"])
    await wait_for(lambda: phase_is(client, Database, "orders", "Active"))
    await asyncio.sleep(0.2)
    assert seen == [None, "gold"]  # and nothing more for the kernel's own writes
