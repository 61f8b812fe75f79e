"""On-demand workers: a controller holds worker tasks only while it has work, never
more than max_concurrent_reconciles, one per key; delayed adds wake it; stop drains."""

from __future__ import annotations

import asyncio
from typing import Any

from kubewerk.client import Client, ResourceType
from kubewerk.lifecycle.workers import OnDemandController
from kubewerk.runtime.events import EventRecorder
from kubewerk.runtime.informer import Cache
from kubewerk.runtime.metrics import Metrics

WIDGET = ResourceType("example.dev", "v1", "Widget", "widgets")


class Recorded(OnDemandController):
    """Processes keys by sleeping, recording concurrency (no API server needed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.done: list[str] = []
        self.running_now: set[str] = set()
        self.most = 0

    async def _process(self, key: str) -> None:
        assert key not in self.running_now  # never two workers on one key
        self.running_now.add(key)
        self.most = max(self.most, len(self.running_now))
        await asyncio.sleep(0.02)
        self.running_now.discard(key)
        self.done.append(key)


async def _nothing(obj: Any, ctx: Any) -> None:
    return None


def bound(max_concurrent: int) -> tuple[Recorded, Metrics]:
    client = Client.from_url("http://127.0.0.1:1")
    ctrl = Recorded("widget", WIDGET, _nothing, max_concurrent_reconciles=max_concurrent)
    metrics = Metrics(process=False)
    ctrl.bind(client, Cache(client), metrics, EventRecorder(client, "widget"))
    return ctrl, metrics


async def test_workers_start_with_work_and_end_without_it() -> None:
    ctrl, metrics = bound(3)
    ctrl.queue.add("ns/early")  # queued before start: handled once started
    assert ctrl.live_workers == 0 and not ctrl.running
    ctrl.start()
    assert ctrl.running and ctrl.live_workers == 1
    for i in range(6):
        ctrl.queue.add(f"ns/w{i}")
    assert ctrl.live_workers == 3  # capped at max_concurrent_reconciles
    for _ in range(200):
        await asyncio.sleep(0.01)
        if len(ctrl.done) == 7 and ctrl.live_workers == 0:
            break
    assert sorted(ctrl.done) == sorted(["ns/early", *(f"ns/w{i}" for i in range(6))])
    assert ctrl.most == 3 and ctrl.live_workers == 0
    started = ctrl.workers_started
    assert started == 3
    # a delayed add (a requeue) wakes a worker when it fires
    ctrl.queue.add_after("ns/later", 0.05)
    await asyncio.sleep(0.01)
    assert ctrl.live_workers == 0
    for _ in range(100):
        await asyncio.sleep(0.01)
        if "ns/later" in ctrl.done:
            break
    assert "ns/later" in ctrl.done and ctrl.workers_started == started + 1
    # the queue metrics watch the queue that is used
    assert b'workqueue_adds_total{controller="widget",name="widget"} 8.0' in metrics.exposition()
    await ctrl.stop(grace=1)
    assert not ctrl.running
    ctrl.queue.add("ns/after-stop")
    await asyncio.sleep(0.05)
    assert "ns/after-stop" not in ctrl.done and ctrl.live_workers == 0


async def test_a_key_added_while_processing_runs_again_after() -> None:
    ctrl, _ = bound(2)
    ctrl.start()
    ctrl.queue.add("ns/a")
    await asyncio.sleep(0.005)  # the worker has it
    ctrl.queue.add("ns/a")  # dirty: again once done, by the same worker
    assert ctrl.live_workers == 1
    for _ in range(100):
        await asyncio.sleep(0.01)
        if len(ctrl.done) == 2 and ctrl.live_workers == 0:
            break
    assert ctrl.done == ["ns/a", "ns/a"] and ctrl.most == 1
    await ctrl.stop(grace=1)


async def test_stop_waits_for_the_reconcile_in_flight() -> None:
    ctrl, _ = bound(1)
    ctrl.start()
    ctrl.queue.add("ns/slow")
    await asyncio.sleep(0.005)
    await ctrl.stop(grace=1)
    assert ctrl.done == ["ns/slow"] and ctrl.live_workers == 0
