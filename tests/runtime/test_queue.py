"""Work queue and rate limiters: controller-runtime/client-go semantics."""

from __future__ import annotations

import asyncio

import pytest

from kubewerk.runtime import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    Metrics,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)


def test_exponential_backoff_doubles_from_5ms_to_1000s() -> None:
    rl = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [rl.when("a") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000.0 and max(delays) == 1000.0
    assert rl.num_requeues("a") == 20 and rl.when("b") == 0.005
    rl.forget("a")
    assert rl.num_requeues("a") == 0 and rl.when("a") == 0.005
    for _ in range(100):
        rl.when("c")
    assert rl.when("c") == 1000.0  # no overflow


def test_token_bucket_burst_then_rate() -> None:
    now = [0.0]
    rl = BucketRateLimiter(qps=10, burst=100, clock=lambda: now[0])
    assert all(rl.when(i) == 0 for i in range(100))
    assert rl.when("x") == pytest.approx(0.1)
    assert rl.when("y") == pytest.approx(0.2)
    now[0] += 1.0  # 10 tokens back, 2 were owed
    assert rl.when("z") == 0.0


def test_max_of_and_default_controller_limiter() -> None:
    now = [0.0]
    rl = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000),
        BucketRateLimiter(10, 1, clock=lambda: now[0]),
    )
    assert rl.when("a") == 0.005
    assert rl.when("b") == pytest.approx(0.1)  # bucket dominates
    assert rl.num_requeues("a") == 1
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    d = default_controller_rate_limiter()
    assert d.when("k") == 0.005 and d.when("k") == 0.01
    fs = ItemFastSlowRateLimiter(0.1, 5, 2)
    assert [fs.when("i") for _ in range(3)] == [0.1, 0.1, 5]


async def test_dedup_and_fifo() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    for k in ["a", "b", "a", "c", "b"]:
        q.add(k)
    assert len(q) == 3
    assert [await q.get(), await q.get(), await q.get()] == ["a", "b", "c"]


async def test_item_never_processed_twice_concurrently_and_dirty_requeue() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("a")
    item = await q.get()
    q.add("a")  # while processing: marked dirty, not queued
    assert len(q) == 0
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    assert not getter.done()  # a second worker does not get "a"
    q.done(item)
    assert await asyncio.wait_for(getter, 1) == "a"  # re-queued once done


async def test_concurrent_workers_never_overlap_on_a_key() -> None:
    q: WorkQueue[int] = WorkQueue("t")
    active: set[int] = set()
    overlaps = 0
    processed = 0

    async def worker() -> None:
        nonlocal overlaps, processed
        while True:
            try:
                k = await q.get()
            except ShutDown:
                return
            if k in active:
                overlaps += 1
            active.add(k)
            await asyncio.sleep(0.001)
            active.discard(k)
            processed += 1
            q.done(k)

    workers = [asyncio.create_task(worker()) for _ in range(8)]
    for round_ in range(30):
        for k in range(5):
            q.add(k)
        await asyncio.sleep(0.0005 * (round_ % 3))
    await asyncio.sleep(0.1)
    await q.shutdown_with_drain(1)
    await asyncio.gather(*workers)
    assert overlaps == 0 and processed >= 5


async def test_add_after_keeps_earliest_and_rate_limited() -> None:
    q: WorkQueue[str] = WorkQueue("t", ItemExponentialFailureRateLimiter(0.05, 1))
    q.add_after("a", 0.5)
    q.add_after("a", 0.05)  # earlier wins
    q.add_after("a", 0.3)  # later is ignored
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await asyncio.wait_for(q.get(), 1) == "a"
    assert 0.04 <= loop.time() - t0 < 0.25
    q.done("a")
    q.add_rate_limited("b")
    q.add_rate_limited("b")  # second failure: 0.1 s, but the 0.05 s add fires first
    assert q.num_requeues("b") == 2
    assert await asyncio.wait_for(q.get(), 1) == "b"
    q.forget("b")
    assert q.num_requeues("b") == 0
    q.add_after("c", 0)
    assert len(q) == 1


async def test_shutdown_rejects_adds_and_drains_in_flight() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("a")
    q.add("b")
    item = await q.get()
    waiter = asyncio.create_task(q.shutdown_with_drain(2))
    await asyncio.sleep(0.02)
    assert not waiter.done()  # "a" is still being processed
    q.add("c")
    with pytest.raises(ShutDown):
        await q.get()
    q.done(item)
    assert await waiter is True
    assert q.shutting_down
    blocked = WorkQueue[str]("u")
    getter = asyncio.create_task(blocked.get())
    await asyncio.sleep(0.01)
    blocked.shutdown()
    with pytest.raises(ShutDown):
        await getter


async def test_drain_timeout_reports_false() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("a")
    await q.get()
    assert await q.shutdown_with_drain(0.05) is False


async def test_queue_metrics_use_controller_runtime_names() -> None:
    m = Metrics(process=False)
    q: WorkQueue[str] = WorkQueue(
        "widgets", ItemExponentialFailureRateLimiter(0.001, 1), m.queue_metrics("widgets")
    )
    m.watch_queue(q)  # type: ignore[arg-type]
    q.add("a")
    q.add("b")
    q.add("a")
    item = await q.get()
    await asyncio.sleep(0.01)
    text = m.exposition().decode()
    assert 'workqueue_depth{controller="widgets",name="widgets",priority=""} 1.0' in text
    assert 'workqueue_adds_total{controller="widgets",name="widgets"} 2.0' in text
    assert 'workqueue_unfinished_work_seconds{controller="widgets",name="widgets"}' in text
    line = next(
        x for x in text.splitlines() if x.startswith("workqueue_longest_running_processor_seconds{")
    )
    assert float(line.split()[-1]) >= 0.009
    q.done(item)
    q.add_rate_limited("c")
    text = m.exposition().decode()
    assert 'workqueue_retries_total{controller="widgets",name="widgets"} 1.0' in text
    assert 'workqueue_queue_duration_seconds_count{controller="widgets",name="widgets"} 1.0' in text
    assert 'workqueue_work_duration_seconds_count{controller="widgets",name="widgets"} 1.0' in text
