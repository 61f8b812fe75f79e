"""End to end: a real operator against the embedded API server over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from kubewerk.client import CONFIGMAP, EVENT, Client, NotFound
from kubewerk.runtime import Manager, get_condition
from tests.client.models import Widget
from tests.runtime.widget_operator import FINALIZER, Knobs, build


def widget(name: str, size: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "test.kubewerk.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    }


async def converged(client: Client, name: str, size: int) -> bool:
    w = await client.get(Widget, name, "default")
    if w.status is None or w.status.observed_size != size:
        return False
    cond = get_condition(w, "Ready")
    cm = await client.get(CONFIGMAP, f"{name}-config", "default")
    return bool(
        cond
        and cond["observedGeneration"] == w.metadata.generation
        and cm["data"]["size"] == str(size)
    )


async def test_converges_updates_and_reports(
    kube_client: Client, install_crds, run_manager, wait_for
) -> None:  # type: ignore[no-untyped-def]
    await install_crds(Widget)
    for i in range(20):
        await kube_client.create(widget(f"w{i}", i % 3 + 1))
    mgr: Manager = await run_manager(build(probe_port=0))
    await wait_for(lambda: all_converged(kube_client, {f"w{i}": i % 3 + 1 for i in range(20)}), 20)
    # owner references, finalizer, events
    cm = await kube_client.get(CONFIGMAP, "w0-config", "default")
    ref = cm["metadata"]["ownerReferences"][0]
    assert (
        ref["kind"] == "Widget" and ref["controller"] is True and ref["blockOwnerDeletion"] is True
    )
    w0 = await kube_client.get(Widget, "w0", "default")
    assert w0.metadata.finalizers == [FINALIZER]
    # updates flow through
    await kube_client.patch(Widget, "w0", {"spec": {"size": 9}}, "default")
    await wait_for(lambda: converged(kube_client, "w0", 9), 10)
    # a child edited behind the operator's back is put back (Owns)
    await kube_client.patch(CONFIGMAP, "w1-config", {"data": {"size": "tampered"}}, "default")
    await wait_for(lambda: converged(kube_client, "w1", 2), 10)
    events = await wait_for(lambda: events_for(kube_client, "w0"), 10)
    assert {
        "reason": "Reconciled",
        "reportingController": "widget",
        "type": "Normal",
    }.items() <= events[0].items()
    # probes and metrics over HTTP
    assert mgr.probe_address is not None
    base = f"http://127.0.0.1:{mgr.probe_address[1]}"
    async with aiohttp.ClientSession() as http:
        for path in ("/healthz", "/readyz"):
            async with http.get(base + path) as resp:
                assert resp.status == 200
        async with http.get(base + "/metrics") as resp:
            text = await resp.text()
    assert 'controller_runtime_reconcile_total{controller="widget",result="success"}' in text
    assert 'controller_runtime_max_concurrent_reconciles{controller="widget"} 4.0' in text
    assert "controller_runtime_reconcile_time_seconds_bucket" in text
    assert 'workqueue_adds_total{controller="widget",name="widget"}' in text
    assert "process_resident_memory_bytes" in text


async def all_converged(client: Client, sizes: dict[str, int]) -> bool:
    for name, size in sizes.items():
        if not await converged(client, name, size):
            return False
    return True


async def events_for(client: Client, name: str) -> list[dict[str, Any]]:
    items = (await client.list(EVENT, "default")).items
    return [
        {k: e.get(k) for k in ("reason", "reportingController", "type", "series")}
        for e in items
        if e["regarding"]["name"] == name
    ]


async def test_deletion_with_finalizer_and_garbage_collection(
    kube_client: Client, install_crds, run_manager, wait_for
) -> None:  # type: ignore[no-untyped-def]
    await install_crds(Widget)
    knobs = Knobs()
    knobs.fail_cleanup.add("stuck")
    await run_manager(build(knobs))
    await kube_client.create(widget("gone", 2))
    await kube_client.create(widget("stuck", 1))
    await wait_for(lambda: converged(kube_client, "gone", 2), 10)
    await wait_for(lambda: converged(kube_client, "stuck", 1), 10)

    await kube_client.delete(Widget, "gone", "default")
    await wait_for(lambda: absent(kube_client, Widget, "gone"), 10)
    assert knobs.cleanups == ["gone"]
    await wait_for(lambda: absent(kube_client, CONFIGMAP, "gone-config"), 10)  # ownerReference GC

    # a failing cleanup is reported as an Event and a condition, and the object stays
    await kube_client.delete(Widget, "stuck", "default")

    async def reported() -> bool:
        w = await kube_client.get(Widget, "stuck", "default")
        cond = get_condition(w, "Ready")
        events = await events_for(kube_client, "stuck")
        return bool(
            cond
            and cond["reason"] == "CleanupFailed"
            and any(e["reason"] == "CleanupFailed" and e["type"] == "Warning" for e in events)
        )

    await wait_for(reported, 10)
    w = await kube_client.get(Widget, "stuck", "default")
    assert w.metadata.deletion_timestamp is not None and w.metadata.finalizers == [FINALIZER]
    assert "backend refused" in (get_condition(w, "Ready") or {}).get("message", "")
    knobs.fail_cleanup.clear()  # the backend recovers: the retry with backoff finishes the deletion
    await wait_for(lambda: absent(kube_client, Widget, "stuck"), 15)


async def absent(client: Client, kind: Any, name: str) -> bool:
    try:
        await client.get(kind, name, "default")
    except NotFound:
        return True
    return False


async def test_concurrent_writers_cause_409s_but_no_lost_status(
    kube_client: Client, install_crds, run_manager, wait_for
) -> None:  # type: ignore[no-untyped-def]
    await install_crds(Widget)
    knobs = Knobs()
    knobs.delay = 0.02  # widen the window between reading and writing status
    mgr: Manager = await run_manager(build(knobs))
    await kube_client.create(widget("hot", 1))
    await wait_for(lambda: converged(kube_client, "hot", 1), 10)

    async def writer(offset: int) -> None:
        for i in range(15):
            await kube_client.patch(Widget, "hot", {"spec": {"size": 10 + offset + i}}, "default")
            await asyncio.sleep(0.005)

    await asyncio.gather(writer(0), writer(100))
    final = (await kube_client.get(Widget, "hot", "default")).spec.size
    await wait_for(lambda: converged(kube_client, "hot", final), 15)
    text = mgr.metrics.exposition().decode()
    requeues = next(
        float(x.split()[-1])
        for x in text.splitlines()
        if x.startswith('controller_runtime_reconcile_total{controller="widget",result="requeue"}')
    )
    assert requeues >= 1  # 409s happened and were retried, not counted as errors, never lost


async def test_server_restart_under_the_operator(tmp_path, wait_for, caplog) -> None:  # type: ignore[no-untyped-def]
    import logging

    caplog.set_level(logging.INFO, logger="kubewerk.client.watch")
    from kubewerk.apiserver.server import EmbeddedServer
    from kubewerk.testing import install_crds

    db = f"sqlite:{tmp_path / 'store.db'}"
    srv = EmbeddedServer(db, bookmark_interval=0.5)
    await srv.start()
    port = srv.port
    async with Client.from_url(srv.url) as client:
        await install_crds(client, Widget)
        await client.create(widget("before", 1))
        mgr = build()
        mgr.use_client(Client.from_url(srv.url))
        await mgr.start()
        try:
            await wait_for(lambda: converged(client, "before", 1), 10)
            await srv.stop()
            await asyncio.sleep(0.5)  # the operator sees the connection drop
            # while the operator cannot reach it, the store changes and its history is
            # compacted (through a server on another port), so the informer's revision
            # cannot be resumed when the server is back on its port: it must relist
            side = EmbeddedServer(db, bookmark_interval=0.5)
            await side.start()
            async with Client.from_url(side.url) as other:
                await other.create(widget("after", 2))
                await other.patch(Widget, "before", {"spec": {"size": 5}}, "default")
            side.store.compact(side.store.revision)
            await side.stop()
            srv = EmbeddedServer(db, port=port, bookmark_interval=0.5)
            await srv.start()
            await wait_for(lambda: converged(client, "after", 2), 15)
            await wait_for(lambda: converged(client, "before", 5), 15)
            await client.delete(Widget, "after", "default")
            await wait_for(lambda: absent(client, Widget, "after"), 15)
            messages = [r.getMessage() for r in caplog.records if r.name == "kubewerk.client.watch"]
            assert any("interrupted" in m for m in messages)  # the watches saw the restart
            assert any("relisting" in m for m in messages), messages  # and the compacted revision
        finally:
            await mgr.stop()
            await mgr.client.close()
            await srv.stop()


async def test_leader_election_one_active_and_failover(
    kube_client: Client, install_crds, run_manager, wait_for
) -> None:  # type: ignore[no-untyped-def]
    await install_crds(Widget)
    opts = {
        "leader_election": True,
        "leader_election_id": "widget-op",
        "lease_duration": 2.0,
        "renew_deadline": 1.5,
        "retry_period": 0.25,
    }
    a_knobs, b_knobs = Knobs(), Knobs()
    a: Manager = await run_manager(build(a_knobs, identity="a", **opts))
    b: Manager = await run_manager(build(b_knobs, identity="b", **opts))
    await wait_for(lambda: a.is_leader or b.is_leader, 10)
    await asyncio.sleep(0.6)
    assert a.is_leader != b.is_leader  # exactly one active
    leader, standby = (a, b) if a.is_leader else (b, a)
    leader_knobs, standby_knobs = (a_knobs, b_knobs) if leader is a else (b_knobs, a_knobs)
    await kube_client.create(widget("le", 1))
    await wait_for(lambda: converged(kube_client, "le", 1), 10)
    assert leader_knobs.reconciled and not standby_knobs.reconciled
    lease = await kube_client.get(
        __import__("kubewerk.client", fromlist=["LEASE"]).LEASE, "widget-op", "default"
    )
    assert lease["spec"]["holderIdentity"] == leader.identity
    assert (
        'leader_election_master_status{name="widget-op"} 1.0'
        in leader.metrics.exposition().decode()
    )

    # crash the leader (no release): the standby takes over within the lease duration
    assert leader.elector is not None
    leader.elector.release_on_cancel = False
    loop = asyncio.get_running_loop()
    crashed_at = loop.time()
    await leader.stop()
    await wait_for(lambda: standby.is_leader, 10, 0.02)
    took = loop.time() - crashed_at
    assert took <= 2.0 + 0.25 * 1.2 + 0.5, took
    await kube_client.patch(Widget, "le", {"spec": {"size": 3}}, "default")
    await wait_for(lambda: converged(kube_client, "le", 3), 10)
    assert "le" in standby_knobs.reconciled


async def test_graceful_stop_releases_the_lease(
    kube_client: Client, install_crds, run_manager, wait_for
) -> None:  # type: ignore[no-untyped-def]
    await install_crds(Widget)
    opts = {
        "leader_election": True,
        "leader_election_id": "rel",
        "lease_duration": 15.0,
        "renew_deadline": 10.0,
        "retry_period": 0.25,
    }
    a: Manager = await run_manager(build(identity="a", **opts))
    await wait_for(lambda: a.is_leader, 10)
    b: Manager = await run_manager(build(identity="b", **opts))
    await asyncio.sleep(0.3)
    assert not b.is_leader
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await a.stop()
    await wait_for(lambda: b.is_leader, 5, 0.02)
    assert loop.time() - t0 < 3.0  # far less than the 15 s lease: it was released


@pytest.mark.parametrize("typed", [True, False])
async def test_reconcile_exception_never_kills_the_worker(
    kube_client: Client, install_crds, run_manager, wait_for, typed: bool
) -> None:  # type: ignore[no-untyped-def]
    from kubewerk.client import ResourceType
    from kubewerk.runtime import Result, TerminalError

    await install_crds(Widget)
    mgr = Manager(probe_port=None)
    attempts: dict[str, int] = {}
    kind: Any = Widget if typed else ResourceType("test.kubewerk.dev", "v1", "Widget", "widgets")

    @mgr.reconciler(kind)
    async def reconcile(obj: Any, ctx: Any) -> Result:
        name = ctx.name
        attempts[name] = attempts.get(name, 0) + 1
        if name == "boom" and attempts[name] < 3:
            raise RuntimeError("transient")
        if name == "terminal":
            raise TerminalError("never going to work")
        if name == "slow":
            await asyncio.sleep(10)
        return Result()

    mgr.controllers[0].reconcile_timeout = 0.2
    await run_manager(mgr)
    for name in ("boom", "terminal", "ok", "slow"):
        await kube_client.create(widget(name))
    await wait_for(lambda: attempts.get("boom") == 3 and attempts.get("ok") == 1, 10)
    await wait_for(lambda: attempts.get("slow", 0) >= 2, 10)  # timed out, retried with backoff
    await asyncio.sleep(0.2)
    assert attempts["terminal"] == 1  # not retried
    text = mgr.metrics.exposition().decode()
    assert 'controller_runtime_terminal_reconcile_errors_total{controller="widget"} 1.0' in text
    errors = next(
        float(x.split()[-1])
        for x in text.splitlines()
        if x.startswith('controller_runtime_reconcile_errors_total{controller="widget"}')
    )
    assert errors >= 4
