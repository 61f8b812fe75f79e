"""The Redis Streams bus against a real redis-server (started by the fixture): consumer
groups, acknowledgement, retries and dead letters, reclaiming a killed consumer's entries,
keep-alive of slow handlers, resuming from the group's position, bounded reads."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

pytest.importorskip("redis", reason="the 'redis' extra is not installed (pip install -e '.[dev]')")

import redis.asyncio as aioredis

from kubewerk.lifecycle.bus import LifecycleEvent, RetryPolicy
from kubewerk.lifecycle.redis_bus import RedisStreamsBus
from tests.lifecycle.redis_fixture import redis_server, redis_url  # noqa: F401

STREAM = "kubewerk:lifecycle"
DB = "Database.example.com"
FAST_RETRY = RetryPolicy(attempts=2, initial=0.01)


def event(key: str = "ns/a", seq: int = 0, **kw: Any) -> LifecycleEvent:
    fields: dict[str, Any] = {
        "event_type": "PhaseChanged",
        "kind": DB,
        "key": key,
        "from_phase": "Pending",
        "to_phase": "Active",
        "message": str(seq),
    }
    fields.update(kw)
    return LifecycleEvent(**fields)


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


def sample(bus: RedisStreamsBus, status: str, event_type: str = "PhaseChanged") -> float:
    value = bus.metrics.registry.get_sample_value(
        "kubewerk_bus_events_total", {"type": event_type, "status": status}
    )
    return value or 0.0


@pytest.fixture
async def r(redis_url: str) -> AsyncIterator[aioredis.Redis]:  # noqa: F811
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
async def buses(redis_url: str) -> AsyncIterator[Callable[..., RedisStreamsBus]]:  # noqa: F811
    """Makes buses on the test server (short reads, fast retries); stops them after."""
    made: list[RedisStreamsBus] = []

    def make(**kw: Any) -> RedisStreamsBus:
        kw.setdefault("block", 0.2)
        kw.setdefault("retry", FAST_RETRY)
        kw.setdefault("registry", CollectorRegistry())
        bus = RedisStreamsBus(redis_url, **kw)
        made.append(bus)
        return bus

    yield make
    for bus in made:
        if not bus._closed:
            await bus.stop(timeout=1.0)


async def pending_count(r: aioredis.Redis, group: str) -> int:
    summary = await r.xpending(STREAM, group)
    return int(summary["pending"])


# -- one group, one consumer -------------------------------------------------------------


async def test_events_are_delivered_and_acknowledged(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    bus = buses()
    got: list[LifecycleEvent] = []

    async def handler(e: LifecycleEvent) -> None:
        got.append(e)

    bus.subscribe(handler, name="audit")
    await bus.start()
    sent = [event(f"ns/{i % 3}", i) for i in range(10)]
    for e in sent:
        await bus.publish(e)
    await until(lambda: len(got) == 10)
    assert got == sent  # one consumer: one key's events in order, and here all of them
    await until(lambda: sample(bus, "delivered") == 10)
    await bus.stop()
    assert await pending_count(r, "audit") == 0
    [info] = await r.xinfo_groups(STREAM)
    last_id = (await r.xrevrange(STREAM, count=1))[0][0]
    assert info["name"] == b"audit" and info["last-delivered-id"] == last_id
    assert sample(bus, "published") == 10
    assert await r.xlen(STREAM) == 10


async def test_entries_outside_the_filters_are_acknowledged_unhandled(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    bus = buses()
    got: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        got.append(e.kind)

    bus.subscribe(handler, kind=DB, to_phase="Active", name="db-active")
    await bus.start()
    for i in range(4):
        await bus.publish(event(f"ns/{i}", kind="Cache.example.com"))
        await bus.publish(event(f"ns/{i}", to_phase="Failed"))
        await bus.publish(event(f"ns/{i}"))
    await until(lambda: len(got) == 4)
    await asyncio.sleep(0.1)
    assert got == [DB] * 4
    assert await pending_count(r, "db-active") == 0


async def test_a_retried_event_is_acknowledged_once_it_succeeds(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    bus = buses(retry=RetryPolicy(attempts=3, initial=0.01))
    calls = 0

    async def handler(e: LifecycleEvent) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("flaky")

    bus.subscribe(handler, name="flaky")
    await bus.start()
    await bus.publish(event())
    await until(lambda: sample(bus, "delivered") == 1)
    await bus.stop()
    assert calls == 2 and sample(bus, "retried") == 1
    assert await pending_count(r, "flaky") == 0
    assert await r.xlen(f"{STREAM}:dead") == 0


async def test_a_final_failure_is_dead_lettered_counted_and_acknowledged(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    bus = buses(consumer="worker-1")

    async def handler(e: LifecycleEvent) -> None:
        raise RuntimeError("broken handler")

    bus.subscribe(handler, name="broken")
    await bus.start()
    doomed = event()
    await bus.publish(doomed)
    await until(lambda: sample(bus, "failed") == 1)
    await bus.stop()
    assert sample(bus, "retried") == 1  # FAST_RETRY: two attempts
    assert await pending_count(r, "broken") == 0
    [(_, fields)] = await r.xrange(f"{STREAM}:dead")
    [(entry_id, _)] = await r.xrange(STREAM)
    assert fields[b"group"] == b"broken" and fields[b"consumer"] == b"worker-1"
    assert fields[b"id"] == entry_id
    assert LifecycleEvent.from_json(fields[b"event"]) == doomed
    assert b"broken handler" in fields[b"error"]


async def test_an_undecodable_entry_is_dead_lettered(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    bus = buses()
    got: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        got.append(e.message)

    bus.subscribe(handler, name="strict")
    await bus.start()
    await r.xadd(STREAM, {"event": b"not json"})
    await bus.publish(event(seq=1))
    await until(lambda: got == ["1"])
    await until(lambda: sample(bus, "failed", "unknown") == 1)
    await bus.stop()
    assert await pending_count(r, "strict") == 0
    [(_, fields)] = await r.xrange(f"{STREAM}:dead")
    assert b"undecodable" in fields[b"error"]


# -- groups and consumers ----------------------------------------------------------------


async def test_each_event_reaches_exactly_one_consumer_of_a_group(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    handled: dict[str, list[str]] = {"a": [], "b": []}

    def handler_for(consumer: str) -> Callable[[LifecycleEvent], Any]:
        async def handler(e: LifecycleEvent) -> None:
            await asyncio.sleep(0.002)
            handled[consumer].append(e.trace_id)

        return handler

    for consumer in ("a", "b"):
        bus = buses(consumer=consumer, capacity=4, concurrency=2)
        bus.subscribe(handler_for(consumer), name="workers")
        await bus.start()
    publisher = buses()
    sent = [event(f"ns/{i % 10}", i) for i in range(200)]
    for e in sent:
        await publisher.publish(e)
    await until(lambda: len(handled["a"]) + len(handled["b"]) == 200)
    await asyncio.sleep(0.3)  # nothing arrives twice later either
    counts = Counter(handled["a"] + handled["b"])
    assert counts == Counter(e.trace_id for e in sent)
    assert set(counts.values()) == {1}
    assert handled["a"] and handled["b"]  # each holds at most 4: both had to work
    assert await pending_count(r, "workers") == 0


async def test_every_group_gets_every_event(buses: Callable[..., RedisStreamsBus]) -> None:
    got: dict[str, list[str]] = {"audit": [], "notify": []}
    for group in got:
        bus = buses()

        async def handler(e: LifecycleEvent, group: str = group) -> None:
            got[group].append(e.message)

        bus.subscribe(handler, name=group)
        await bus.start()
    publisher = buses()
    for i in range(50):
        await publisher.publish(event(f"ns/{i % 5}", i))
    await until(lambda: len(got["audit"]) == 50 and len(got["notify"]) == 50)
    assert sorted(got["audit"], key=int) == sorted(got["notify"], key=int)
    assert sorted(got["audit"], key=int) == [str(i) for i in range(50)]


CHILD = """
import asyncio, sys
from kubewerk.lifecycle.redis_bus import RedisStreamsBus

async def main():
    bus = RedisStreamsBus(sys.argv[1], consumer="doomed", min_idle=0.5, block=0.2)

    async def handler(event):
        print("GOT", event.message, flush=True)
        await asyncio.sleep(3600)

    bus.subscribe(handler, name="workers", concurrency=2, capacity=2)
    await bus.start()
    print("READY", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_entries_of_a_killed_consumer_are_reclaimed(
    r: aioredis.Redis,
    redis_url: str,  # noqa: F811
    buses: Callable[..., RedisStreamsBus],
) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, redis_url, stdout=asyncio.subprocess.PIPE
    )
    assert child.stdout is not None
    try:
        assert await asyncio.wait_for(child.stdout.readline(), 20) == b"READY\n"
        publisher = buses()
        for i in range(2):
            await publisher.publish(event(f"ns/{i}", i))
        lines = {await asyncio.wait_for(child.stdout.readline(), 10) for _ in range(2)}
        assert lines == {b"GOT 0\n", b"GOT 1\n"}  # both held, mid-handler
        await asyncio.sleep(0.8)  # alive and past min_idle: its keep-alive holds them
        assert (await r.xpending(STREAM, "workers"))["consumers"] == [
            {"name": b"doomed", "pending": 2}
        ]
    finally:
        child.kill()
        await child.wait()
    for i in range(2, 4):  # published after the death: read by the survivor
        await publisher.publish(event(f"ns/{i}", i))
    got: list[str] = []
    started = time.monotonic()

    async def handler(e: LifecycleEvent) -> None:
        got.append(e.message)

    survivor = buses(consumer="survivor", min_idle=0.5)
    survivor.subscribe(handler, name="workers")
    await survivor.start()
    await until(lambda: sorted(got) == ["0", "1", "2", "3"])
    assert time.monotonic() - started < 5
    await until(lambda: sample(survivor, "delivered") == 4)
    await asyncio.sleep(0.1)
    assert await pending_count(r, "workers") == 0


async def test_a_slow_handler_is_not_mistaken_for_a_dead_one(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    handled: list[str] = []

    def handler_for(consumer: str) -> Callable[[LifecycleEvent], Any]:
        async def handler(e: LifecycleEvent) -> None:
            handled.append(consumer)
            if consumer == "slow":
                await asyncio.sleep(1.2)  # four times min_idle

        return handler

    # capacity 1: while it handles the event, "slow" claims nothing, not even its own
    slow = buses(consumer="slow", min_idle=0.3, capacity=1)
    slow.subscribe(handler_for("slow"), name="workers")
    await slow.start()
    await slow.publish(event())
    await until(lambda: handled == ["slow"])
    other = buses(consumer="other", min_idle=0.3)
    other.subscribe(handler_for("other"), name="workers")
    await other.start()
    await until(lambda: sample(slow, "delivered") == 1)
    await asyncio.sleep(0.2)
    assert handled == ["slow"]
    assert await pending_count(r, "workers") == 0


async def test_an_entry_delivered_too_often_is_dead_lettered(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    await r.xgroup_create(STREAM, "workers", id="$", mkstream=True)
    poison = event()
    entry_id = await r.xadd(STREAM, {"event": poison.to_json()})
    await r.xreadgroup("workers", "crashed", {STREAM: ">"})
    # As if it had crashed ten processes: the delivery count says so.
    await r.xclaim(STREAM, "workers", "crashed", 0, [entry_id], retrycount=10)
    await asyncio.sleep(0.15)
    calls = 0

    async def handler(e: LifecycleEvent) -> None:
        nonlocal calls
        calls += 1

    bus = buses(consumer="next", min_idle=0.1, max_deliveries=10)
    bus.subscribe(handler, name="workers")
    await bus.start()
    await until(lambda: sample(bus, "failed") == 1)
    await asyncio.sleep(0.1)
    assert calls == 0
    [(_, fields)] = await r.xrange(f"{STREAM}:dead")
    assert fields[b"id"] == entry_id and b"delivered 11 times" in fields[b"error"]
    assert await pending_count(r, "workers") == 0


async def test_a_pending_entry_trimmed_away_is_counted_as_failed(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    await r.xgroup_create(STREAM, "workers", id="$", mkstream=True)
    await r.xadd(STREAM, {"event": event().to_json()})
    await r.xreadgroup("workers", "crashed", {STREAM: ">"})
    await r.xtrim(STREAM, maxlen=0, approximate=False)
    await asyncio.sleep(0.15)

    async def handler(e: LifecycleEvent) -> None:
        raise AssertionError("nothing to handle")

    bus = buses(consumer="next", min_idle=0.1)
    bus.subscribe(handler, name="workers")
    await bus.start()
    await until(lambda: sample(bus, "failed", "unknown") == 1)
    await until_async(lambda: pending_count(r, "workers"), 0)


async def until_async(read: Callable[[], Any], want: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while (value := await read()) != want:
        if time.monotonic() > deadline:
            raise AssertionError(f"{value!r} != {want!r}")
        await asyncio.sleep(0.01)


# -- restarts ----------------------------------------------------------------------------


async def test_a_restarted_bus_resumes_from_the_group_position(
    buses: Callable[..., RedisStreamsBus],
) -> None:
    got: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        got.append(e.message)

    first = buses(consumer="one")
    first.subscribe(handler, name="workers")
    await first.start()
    for i in range(3):
        await first.publish(event(seq=i))
    await until(lambda: got == ["0", "1", "2"])
    await first.stop()
    publisher = buses()
    for i in range(3, 5):  # while nobody consumes
        await publisher.publish(event(seq=i))
    second = buses(consumer="two")
    second.subscribe(handler, name="workers")
    await second.start()
    await until(lambda: len(got) == 5)
    await asyncio.sleep(0.2)
    assert got == ["0", "1", "2", "3", "4"]


async def test_a_consumer_started_again_under_its_name_takes_back_its_entries(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    gate = asyncio.Event()
    got: list[str] = []

    async def stuck(e: LifecycleEvent) -> None:
        got.append("stuck")
        await gate.wait()

    first = buses(consumer="pod-0")
    first.subscribe(stuck, name="workers")
    await first.start()
    await first.publish(event(seq=0))
    await until(lambda: got == ["stuck"])
    await first.stop(timeout=0.1)  # gives up: the entry stays pending under pod-0
    assert await pending_count(r, "workers") == 1

    async def handler(e: LifecycleEvent) -> None:
        got.append(e.message)

    second = buses(consumer="pod-0", min_idle=60.0)  # no reclaim: its own history
    second.subscribe(handler, name="workers")
    await second.start()
    await until(lambda: got == ["stuck", "0"], timeout=3.0)
    await until_async(lambda: pending_count(r, "workers"), 0)


# -- bounds and metrics ------------------------------------------------------------------


async def test_a_consumer_reads_no_more_than_its_capacity(
    r: aioredis.Redis, buses: Callable[..., RedisStreamsBus]
) -> None:
    gate = asyncio.Event()
    done = 0

    async def handler(e: LifecycleEvent) -> None:
        nonlocal done
        await gate.wait()
        done += 1

    bus = buses(capacity=4, concurrency=2, min_idle=0.15)
    subscription = bus.subscribe(handler, name="bounded")
    await bus.start()
    for i in range(20):
        await bus.publish(event(f"ns/{i}", i))
    await until(lambda: bus.lane(subscription).size == 4)
    await asyncio.sleep(0.3)  # several reads and reclaim rounds later
    assert bus.lane(subscription).size == 4
    assert await pending_count(r, "bounded") == 4
    registry = bus.metrics.registry
    await until(
        lambda: registry.get_sample_value("kubewerk_bus_queue_length", {"topic": "bounded"}) == 20
    )  # the group's backlog: 4 pending + 16 not read yet
    gate.set()
    await until(lambda: done == 20)
    await until(
        lambda: registry.get_sample_value("kubewerk_bus_queue_length", {"topic": "bounded"}) == 0
    )
