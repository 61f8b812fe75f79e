"""The in-process lifecycle bus: events on the wire, order per key, concurrency across
keys, retries and final failures, backpressure, filters, stop."""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kubewerk.lifecycle.bus import (
    BusClosed,
    EventDecodeError,
    Handler,
    InProcessBus,
    LifecycleEvent,
    RetryPolicy,
    Subscription,
)
from kubewerk.runtime import TerminalError

DB = "Database.example.com"
FAST_RETRY = RetryPolicy(attempts=3, initial=0.01, factor=2.0, max_delay=0.05)


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


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.001)


def sample(registry: CollectorRegistry, status: str, event_type: str = "PhaseChanged") -> float:
    value = registry.get_sample_value(
        "kubewerk_bus_events_total", {"type": event_type, "status": status}
    )
    return value or 0.0


# -- the event ---------------------------------------------------------------------------


def test_event_json_round_trip() -> None:
    original = event(reason="Provisioned", message="db is up", from_phase=None)
    wire = original.to_json()
    assert orjson.loads(wire) == {
        "type": "PhaseChanged",
        "kind": DB,
        "key": "ns/a",
        "from": None,
        "to": "Active",
        "reason": "Provisioned",
        "message": "db is up",
        "traceId": original.trace_id,
        "time": original.time,
    }
    assert LifecycleEvent.from_json(wire) == original
    assert LifecycleEvent.from_json(wire.decode()) == original


def test_trace_id_and_time_generated() -> None:
    before = time.time()
    first, second = event(), event()
    assert re.fullmatch(r"[0-9a-f]{32}", first.trace_id)
    assert first.trace_id != second.trace_id
    assert before <= first.time <= time.time()
    assert event(trace_id="abc").trace_id == "abc"


def test_event_is_frozen() -> None:
    with pytest.raises(AttributeError):
        event().key = "other"  # type: ignore[misc]


def test_unknown_wire_fields_are_ignored() -> None:
    data = orjson.loads(event().to_json())
    data["newField"] = 1
    assert LifecycleEvent.from_json(orjson.dumps(data)).key == "ns/a"


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (b"{", "invalid JSON"),
        (b"[]", "expected a JSON object, got list"),
        (b'{"kind":"K","key":"k","traceId":"t","time":1}', "'type' must be a non-empty string"),
        (b'{"type":"","kind":"K","key":"k","traceId":"t","time":1}', "'type' must be"),
        (b'{"type":"T","kind":"K","key":"k","traceId":"t","time":1,"to":3}', "'to' must be"),
        (b'{"type":"T","kind":"K","key":"k","traceId":"t","time":1,"reason":null}', "'reason'"),
        (b'{"type":"T","kind":"K","key":"k","traceId":"t","time":"1"}', "'time' must be"),
        (b'{"type":"T","kind":"K","key":"k","traceId":"t","time":true}', "'time' must be"),
        (b'{"type":"T","kind":"K","key":"k","traceId":"t"}', "'time' must be"),
    ],
)
def test_bad_wire_events_are_refused(wire: bytes, message: str) -> None:
    with pytest.raises(EventDecodeError, match=re.escape(message)):
        LifecycleEvent.from_json(wire)


def test_retry_policy_delays() -> None:
    policy = RetryPolicy(attempts=6, initial=0.1, factor=2.0, max_delay=0.5)
    assert [policy.delay(n) for n in range(1, 6)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)


# -- subscriptions -----------------------------------------------------------------------


async def on_active(_: LifecycleEvent) -> None:
    return None


def test_default_subscription_names() -> None:
    assert Subscription(on_active).name == f"{__name__}.on_active"
    assert (
        Subscription(on_active, event_type="PhaseChanged", kind=DB, to_phase="Active").name
        == f"{__name__}.on_active[type=PhaseChanged,kind={DB},to=Active]"
    )
    assert Subscription(on_active, name="mine").name == "mine"


async def test_duplicate_names_are_refused() -> None:
    bus = InProcessBus()
    bus.subscribe(on_active)
    with pytest.raises(ValueError, match="exists already"):
        bus.subscribe(on_active)
    bus.subscribe(on_active, name="second")
    await bus.stop()


async def test_filters() -> None:
    bus = InProcessBus()
    got: dict[str, list[tuple[str, str, str | None]]] = {}

    def record(name: str) -> Handler:
        got[name] = []

        async def handler(e: LifecycleEvent) -> None:
            got[name].append((e.event_type, e.kind, e.to_phase))

        return handler

    bus.subscribe(record("all"), name="all")
    bus.subscribe(record("type"), event_type="IllegalTransition", name="type")
    bus.subscribe(record("kind"), kind="Cache.example.com", name="kind")
    bus.subscribe(record("db-active"), kind=DB, to_phase="Active", name="db-active")
    await bus.start()
    matrix = [
        (t, k, p)
        for t in ("PhaseChanged", "IllegalTransition")
        for k in (DB, "Cache.example.com")
        for p in ("Active", "Failed", None)
    ]
    for i, (t, k, p) in enumerate(matrix):
        await bus.publish(event(f"ns/{i}", event_type=t, kind=k, to_phase=p))
    await bus.stop()
    assert got["all"] == matrix
    assert got["type"] == [m for m in matrix if m[0] == "IllegalTransition"]
    assert got["kind"] == [m for m in matrix if m[1] == "Cache.example.com"]
    assert got["db-active"] == [m for m in matrix if m[1] == DB and m[2] == "Active"]


async def test_unsubscribe_stops_delivery() -> None:
    registry = CollectorRegistry()
    bus = InProcessBus(registry)
    seen: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        seen.append(e.message)

    subscription = bus.subscribe(handler, name="gone")
    await bus.start()
    await bus.publish(event(seq=1))
    await bus.unsubscribe(subscription)  # finishes what it accepted
    await bus.publish(event(seq=2))
    assert seen == ["1"]
    assert registry.get_sample_value("kubewerk_bus_queue_length", {"topic": "gone"}) is None
    with pytest.raises(ValueError, match="not subscribed"):
        await bus.unsubscribe(subscription)
    await bus.stop()


async def test_unsubscribing_a_full_subscription_releases_its_waiting_publishers() -> None:
    bus = InProcessBus(capacity=1, concurrency=1)
    gate = asyncio.Event()
    other: list[str] = []

    async def stuck(e: LifecycleEvent) -> None:
        await gate.wait()

    async def fine(e: LifecycleEvent) -> None:
        other.append(e.message)

    full = bus.subscribe(stuck, name="full")
    bus.subscribe(fine, name="fine")
    await bus.start()
    await bus.publish(event(seq=0))
    waiting = asyncio.create_task(bus.publish(event(seq=1)))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    await bus.unsubscribe(full, timeout=0.05)
    await asyncio.wait_for(waiting, 1.0)  # no BusClosed: only that subscription went away
    await bus.publish(event(seq=2))
    await bus.stop()
    assert other == ["0", "1", "2"]


# -- order and concurrency ---------------------------------------------------------------


async def test_events_of_one_key_arrive_in_order() -> None:
    bus = InProcessBus(concurrency=8)
    rng = random.Random(7)
    seen: dict[str, list[int]] = {}
    active: set[str] = set()
    overlaps = 0

    async def handler(e: LifecycleEvent) -> None:
        nonlocal overlaps
        if e.key in active:
            overlaps += 1
        active.add(e.key)
        await asyncio.sleep(rng.random() * 0.002)
        seen.setdefault(e.key, []).append(int(e.message))
        active.discard(e.key)

    bus.subscribe(handler)
    await bus.start()
    keys = [f"ns/db{i}" for i in range(20)]
    for seq in range(30):
        for key in rng.sample(keys, len(keys)):
            await bus.publish(event(key, seq))
            if rng.random() < 0.2:  # let handlers run: later events find their key busy
                await asyncio.sleep(rng.random() * 0.001)
    await bus.stop()
    assert overlaps == 0
    assert seen == {key: list(range(30)) for key in keys}


async def test_keys_are_handled_concurrently_up_to_the_limit() -> None:
    bus = InProcessBus(concurrency=3)
    gate = asyncio.Event()
    active = peak = done = 0

    async def handler(e: LifecycleEvent) -> None:
        nonlocal active, peak, done
        active += 1
        peak = max(peak, active)
        await gate.wait()
        active -= 1
        done += 1

    bus.subscribe(handler)
    await bus.start()
    for i in range(10):
        await bus.publish(event(f"ns/k{i}"))
    await until(lambda: active == 3)
    await asyncio.sleep(0.02)
    assert peak == 3
    gate.set()
    await until(lambda: done == 10)
    assert peak == 3
    await bus.stop()


async def test_a_stuck_key_does_not_hold_up_other_keys() -> None:
    bus = InProcessBus(concurrency=2)
    gate = asyncio.Event()
    seen: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        if e.key == "ns/stuck":
            await gate.wait()
        seen.append(f"{e.key}:{e.message}")

    bus.subscribe(handler)
    await bus.start()
    await bus.publish(event("ns/stuck", 0))
    await bus.publish(event("ns/stuck", 1))
    for i in range(5):
        await bus.publish(event("ns/free", i))
    await until(lambda: len(seen) == 5)
    assert seen == [f"ns/free:{i}" for i in range(5)]
    gate.set()
    await bus.stop()
    assert seen[5:] == ["ns/stuck:0", "ns/stuck:1"]


# -- retries and failures ----------------------------------------------------------------


async def test_a_failing_handler_is_retried_with_backoff_and_order_kept() -> None:
    registry = CollectorRegistry()
    bus = InProcessBus(registry, retry=RetryPolicy(attempts=5, initial=0.02, factor=2.0))
    calls: list[tuple[str, float]] = []

    async def handler(e: LifecycleEvent) -> None:
        calls.append((e.message, time.monotonic()))
        if e.message == "0" and len(calls) < 3:
            raise RuntimeError("not yet")

    bus.subscribe(handler)
    await bus.start()
    await bus.publish(event(seq=0))
    await bus.publish(event(seq=1))
    await bus.stop()
    assert [m for m, _ in calls] == ["0", "0", "0", "1"]
    first, second, third = (t for _, t in calls[:3])
    assert second - first >= 0.02 * 0.9
    assert third - second >= 0.04 * 0.9
    assert sample(registry, "retried") == 2
    assert sample(registry, "delivered") == 2
    assert sample(registry, "failed") == 0
    assert sample(registry, "published") == 2


async def test_final_failure_is_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    bus = InProcessBus(registry, retry=FAST_RETRY)
    calls: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        calls.append(e.message)
        if e.message == "0":
            raise RuntimeError("broken handler")

    bus.subscribe(handler, name="breaks")
    await bus.start()
    doomed = event(seq=0)
    with caplog.at_level(logging.ERROR, logger="kubewerk.lifecycle.bus"):
        await bus.publish(doomed)
        await bus.publish(event(seq=1))
        await bus.stop()
    assert calls == ["0", "0", "0", "1"]  # three attempts, then the next event of the key
    assert sample(registry, "failed") == 1
    assert sample(registry, "retried") == 2
    assert sample(registry, "delivered") == 1
    [record] = [r for r in caplog.records if "gave up" in r.getMessage()]
    assert doomed.trace_id in record.getMessage()
    assert "breaks" in record.getMessage()
    assert record.exc_info is not None and "broken handler" in str(record.exc_info[1])


async def test_terminal_errors_are_not_retried() -> None:
    registry = CollectorRegistry()
    bus = InProcessBus(registry, retry=FAST_RETRY)
    calls = 0

    async def handler(e: LifecycleEvent) -> None:
        nonlocal calls
        calls += 1
        raise TerminalError("cannot be fixed by waiting")

    bus.subscribe(handler)
    await bus.start()
    await bus.publish(event())
    await bus.stop()
    assert calls == 1
    assert sample(registry, "failed") == 1
    assert sample(registry, "retried") == 0


async def test_a_retry_waiting_for_its_backoff_holds_no_worker() -> None:
    bus = InProcessBus(concurrency=1, retry=RetryPolicy(attempts=2, initial=0.3))
    seen: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        seen.append(e.key)
        if e.key == "ns/flaky" and seen.count("ns/flaky") == 1:
            raise RuntimeError("once")

    bus.subscribe(handler)
    await bus.start()
    await bus.publish(event("ns/flaky"))
    await until(lambda: seen == ["ns/flaky"])
    await bus.publish(event("ns/other"))
    await until(lambda: len(seen) == 2, timeout=0.2)  # well before the 0.3 s backoff ends
    assert seen == ["ns/flaky", "ns/other"]
    await bus.stop()
    assert seen == ["ns/flaky", "ns/other", "ns/flaky"]


# -- backpressure ------------------------------------------------------------------------


async def test_a_full_subscription_makes_publish_wait() -> None:
    registry = CollectorRegistry()
    bus = InProcessBus(registry, capacity=4, concurrency=1)
    gate = asyncio.Event()
    seen: list[int] = []

    async def handler(e: LifecycleEvent) -> None:
        await gate.wait()
        seen.append(int(e.message))

    subscription = bus.subscribe(handler, name="slow")
    await bus.start()
    for i in range(4):  # one in the handler, three waiting: the capacity
        await asyncio.wait_for(bus.publish(event(seq=i)), 1.0)
    fifth = asyncio.create_task(bus.publish(event(seq=4)))
    sixth = asyncio.create_task(bus.publish(event(seq=5)))
    await asyncio.sleep(0.05)
    assert not fifth.done() and not sixth.done()
    assert bus.lane(subscription).size == 4
    assert registry.get_sample_value("kubewerk_bus_queue_length", {"topic": "slow"}) == 4
    gate.set()
    await asyncio.wait_for(asyncio.gather(fifth, sixth), 1.0)
    await bus.stop()
    assert seen == list(range(6))  # waiting publishers got their slots in order
    assert registry.get_sample_value("kubewerk_bus_queue_length", {"topic": "slow"}) == 0


async def test_memory_stays_bounded_under_a_fast_publisher() -> None:
    bus = InProcessBus(capacity=16, concurrency=4)
    sizes: list[int] = []
    done = 0

    async def handler(e: LifecycleEvent) -> None:
        nonlocal done
        sizes.append(bus.lane(subscription).size)
        await asyncio.sleep(0)
        done += 1

    subscription = bus.subscribe(handler)
    await bus.start()
    for i in range(2000):
        await bus.publish(event(f"ns/k{i % 50}", i))
    await bus.stop()
    assert done == 2000
    assert max(sizes) <= 16


async def test_a_cancelled_waiting_publisher_gives_its_slot_on() -> None:
    bus = InProcessBus(capacity=1, concurrency=1)
    gate = asyncio.Event()
    seen: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        await gate.wait()
        seen.append(e.message)

    subscription = bus.subscribe(handler)
    await bus.start()
    await bus.publish(event(seq=0))
    cancelled = asyncio.create_task(bus.publish(event(seq=1)))
    waiting = asyncio.create_task(bus.publish(event(seq=2)))
    await asyncio.sleep(0.01)
    cancelled.cancel()
    gate.set()
    await asyncio.wait_for(waiting, 1.0)
    await bus.stop()
    assert seen == ["0", "2"]
    assert bus.lane(subscription).size == 0


# -- start and stop ----------------------------------------------------------------------


async def test_events_published_before_start_are_delivered_after_it() -> None:
    bus = InProcessBus()
    seen: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        seen.append(e.message)

    bus.subscribe(handler)
    await bus.publish(event(seq=0))
    await asyncio.sleep(0.01)
    assert seen == []
    await bus.start()
    await until(lambda: seen == ["0"])
    await bus.stop()


async def test_stop_drains_accepted_events() -> None:
    registry = CollectorRegistry()
    bus = InProcessBus(registry, capacity=8, concurrency=2)
    seen: list[str] = []

    async def handler(e: LifecycleEvent) -> None:
        await asyncio.sleep(0.001)
        seen.append(e.message)

    bus.subscribe(handler)
    await bus.start()
    publishers = [asyncio.create_task(bus.publish(event(f"ns/{i % 4}", i))) for i in range(40)]
    await asyncio.sleep(0)  # some publishers now wait for slots
    await bus.stop()
    assert all(p.done() and p.exception() is None for p in publishers)
    assert sorted(seen, key=int) == [str(i) for i in range(40)]
    assert sample(registry, "delivered") == 40
    with pytest.raises(BusClosed):
        await bus.publish(event())
    with pytest.raises(BusClosed):
        await bus.start()


async def test_stop_gives_up_after_its_timeout(caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    bus = InProcessBus(registry, concurrency=1)
    cancelled = asyncio.Event()

    async def handler(e: LifecycleEvent) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    bus.subscribe(handler, name="stuck")
    await bus.start()
    for i in range(3):
        await bus.publish(event(seq=i))
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="kubewerk.lifecycle.bus"):
        await bus.stop(timeout=0.2)
    assert 0.15 <= time.monotonic() - started < 2.0
    assert cancelled.is_set()
    assert sample(registry, "failed") == 3  # the one in the handler and the two waiting
    lost = [r.getMessage() for r in caplog.records if "stopped before" in r.getMessage()]
    assert len(lost) == 3 and all("stuck" in m for m in lost)


async def test_metrics_exposition() -> None:
    registry = CollectorRegistry()
    bus = InProcessBus(registry)

    async def handler(e: LifecycleEvent) -> None:
        return None

    bus.subscribe(handler, name="watcher")
    await bus.start()
    await bus.publish(event())
    await bus.publish(event(event_type="IllegalTransition"))
    await bus.stop()
    text = generate_latest(registry).decode()
    assert 'kubewerk_bus_events_total{status="published",type="PhaseChanged"} 1.0' in text
    assert 'kubewerk_bus_events_total{status="delivered",type="IllegalTransition"} 1.0' in text
    assert 'kubewerk_bus_processing_seconds_count{type="PhaseChanged"} 1.0' in text
    assert 'kubewerk_bus_queue_length{topic="watcher"} 0.0' in text
