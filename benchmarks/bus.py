"""Lifecycle event bus throughput: InProcessBus against a plain asyncio.Queue.

    .venv/bin/python benchmarks/bus.py                  # -n 200000 --rounds 3, both loops
    .venv/bin/python benchmarks/bus.py --redis -n 50000 # also the Redis Streams bus

In-process: N prebuilt events (one kind, keys cycling over ``--keys`` objects) are
published one after the other by one publisher and handled by one subscription with a
trivial handler (it counts); the time runs from the first publish to the last handler
call (``stop()`` drains). The baseline, in the same run and event loop, is a bounded
``asyncio.Queue`` of the same capacity (1024) with one consumer task that calls the same
handler: no per-key order, no retries, no metrics. Two handlers: ``trivial`` returns at
once; ``yielding`` awaits ``asyncio.sleep(0)`` (a handler that does any I/O gives the loop
a turn), which makes the bus's concurrency across keys do real work. Rounds alternate
bus and baseline; the best round of each is reported. Target (issue 12): >= 50,000
events/s in-process with one trivial handler.

``--redis`` starts a private ``redis-server`` (loopback, free port, no persistence) and
measures RedisStreamsBus end to end (XADD per publish, one consumer group, the handler,
batched XACK) against a bare redis-py loop doing the same round trips: one XADD per
event from one task, XREADGROUP of up to 128 entries and one XACK per batch from another.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kubewerk.lifecycle.bus import InProcessBus, LifecycleEvent

CAPACITY = 1024


def make_events(n: int, keys: int) -> list[LifecycleEvent]:
    return [
        LifecycleEvent(
            "PhaseChanged",
            "Database.example.com",
            f"tenant-{i % keys % 50}/db-{i % keys}",
            "Pending",
            "Active",
            reason="Provisioned",
            message="database is up",
        )
        for i in range(n)
    ]


class Count:
    def __init__(self) -> None:
        self.n = 0

    async def trivial(self, event: LifecycleEvent) -> None:
        self.n += 1

    async def yielding(self, event: LifecycleEvent) -> None:
        await asyncio.sleep(0)
        self.n += 1


async def run_bus(events: list[LifecycleEvent], handler_name: str) -> float:
    count = Count()
    bus = InProcessBus(capacity=CAPACITY, concurrency=16)
    bus.subscribe(getattr(count, handler_name), name="bench")
    await bus.start()
    started = time.perf_counter()
    for event in events:
        await bus.publish(event)
    await bus.stop(timeout=600)
    elapsed = time.perf_counter() - started
    assert count.n == len(events), (count.n, len(events))
    return len(events) / elapsed


async def run_queue(events: list[LifecycleEvent], handler_name: str) -> float:
    count = Count()
    handler: Callable[[LifecycleEvent], Awaitable[None]] = getattr(count, handler_name)
    queue: asyncio.Queue[LifecycleEvent | None] = asyncio.Queue(CAPACITY)

    async def consume() -> None:
        while (event := await queue.get()) is not None:
            await handler(event)

    started = time.perf_counter()
    consumer = asyncio.create_task(consume())
    for event in events:
        await queue.put(event)
    await queue.put(None)
    await consumer
    elapsed = time.perf_counter() - started
    assert count.n == len(events)
    return len(events) / elapsed


def run_in_loop(loop_name: str, coro: Awaitable[float]) -> float:
    if loop_name == "uvloop":
        import uvloop

        return uvloop.run(coro)  # type: ignore[arg-type]
    return asyncio.run(coro)  # type: ignore[arg-type]


def in_process(args: argparse.Namespace) -> None:
    events = make_events(args.n, args.keys)
    loops = ["uvloop", "asyncio"] if args.loop == "both" else [args.loop]
    print(f"in-process: {args.n:,} events over {args.keys:,} keys, capacity {CAPACITY}, ", end="")
    print(f"best of {args.rounds} alternating rounds")
    print(f"{'loop':<9}{'handler':<10}{'InProcessBus':>16}{'asyncio.Queue':>17}{'ratio':>8}")
    for loop_name in loops:
        for handler in ("trivial", "yielding"):
            bus_rates, queue_rates = [], []
            for _ in range(args.rounds):
                bus_rates.append(run_in_loop(loop_name, run_bus(events, handler)))
                queue_rates.append(run_in_loop(loop_name, run_queue(events, handler)))
            bus, queue = max(bus_rates), max(queue_rates)
            print(
                f"{loop_name:<9}{handler:<10}{bus:>12,.0f} e/s{queue:>13,.0f} e/s"
                f"{bus / queue:>7.2f}x"
            )


# -- Redis -------------------------------------------------------------------------------


def start_redis(directory: str) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("--redis: redis-server not found (scripts/bootstrap.sh installs it as root)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", directory],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    process.kill()
    sys.exit("--redis: redis-server did not start")


async def redis_bus_rate(url: str, events: list[LifecycleEvent]) -> float:
    import redis.asyncio as aioredis

    from kubewerk.lifecycle.redis_bus import RedisStreamsBus

    client = aioredis.Redis.from_url(url)
    await client.flushall()
    await client.aclose()
    count = Count()
    done = asyncio.Event()

    async def handler(event: LifecycleEvent) -> None:
        count.n += 1
        if count.n == len(events):
            done.set()

    consumer = RedisStreamsBus(url, block=0.05, maxlen=len(events) + 1000)
    consumer.subscribe(handler, name="bench")
    await consumer.start()
    publisher = RedisStreamsBus(url, maxlen=len(events) + 1000)
    started = time.perf_counter()
    for event in events:
        await publisher.publish(event)
    await done.wait()
    elapsed = time.perf_counter() - started
    await consumer.stop()
    await publisher.stop()
    return len(events) / elapsed


async def redis_raw_rate(url: str, events: list[LifecycleEvent]) -> float:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    await client.flushall()
    await client.xgroup_create("raw", "bench", id="$", mkstream=True)
    payloads = [event.to_json() for event in events]
    handled = 0

    async def consume() -> None:
        nonlocal handled
        while handled < len(payloads):
            reply = await client.xreadgroup("bench", "c", {"raw": ">"}, count=128, block=50)
            for _stream, entries in reply or []:
                ids = []
                for entry_id, fields in entries:
                    LifecycleEvent.from_json(fields[b"event"])
                    handled += 1
                    ids.append(entry_id)
                if ids:
                    await client.xack("raw", "bench", *ids)

    started = time.perf_counter()
    task = asyncio.create_task(consume())
    for payload in payloads:
        await client.xadd("raw", {"event": payload}, maxlen=len(payloads) + 1000)
    await task
    elapsed = time.perf_counter() - started
    await client.aclose()
    return len(payloads) / elapsed


def redis_bench(args: argparse.Namespace) -> None:
    events = make_events(args.redis_n, args.keys)
    with tempfile.TemporaryDirectory() as directory:
        process, url = start_redis(directory)
        try:
            bus_rates, raw_rates = [], []
            for _ in range(args.rounds):
                bus_rates.append(run_in_loop("uvloop", redis_bus_rate(url, events)))
                raw_rates.append(run_in_loop("uvloop", redis_raw_rate(url, events)))
        finally:
            process.terminate()
            process.wait(10)
    bus, raw = max(bus_rates), max(raw_rates)
    print()
    print(f"Redis Streams: {args.redis_n:,} events, uvloop, best of {args.rounds}")
    print(f"{'RedisStreamsBus':<24}{bus:>10,.0f} e/s{bus / raw:>8.2f}x")
    print(f"{'bare redis-py loop':<24}{raw:>10,.0f} e/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200_000, help="events per in-process round")
    parser.add_argument("--keys", type=int, default=1000, help="distinct object keys")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--loop", choices=["both", "uvloop", "asyncio"], default="both")
    parser.add_argument("--redis", action="store_true", help="also the Redis Streams bus")
    parser.add_argument("--redis-n", type=int, default=20_000, help="events per Redis round")
    args = parser.parse_args()
    in_process(args)
    if args.redis:
        redis_bench(args)


if __name__ == "__main__":
    main()
