"""The floor of a watch fan-out on this machine: one socket write per stream, nothing else.

The 1,000-watcher case of ``benchmarks/scale.py`` measures ~13-14 µs of API server CPU
per delivery (an event written to one watch stream). This script measures what the same
machine charges for the write alone: a uvloop server holds ``-n`` loopback connections
from a client process that only reads, and writes one ``--size``-byte chunk to every
connection per round (one ``transport.write`` each, as a watch's direct write does),
``--rounds`` times, ``--interval`` seconds apart; it prints the server's CPU time per
write (user + system, from ``/proc``), and the client's (its process time while reading).

    .venv/bin/python benchmarks/fanout_floor.py [-n 1000] [--rounds 300] [--interval 0.01]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import socket
import time
from typing import Any


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client(port: int, n: int, expect: int, ready: Any, done: Any) -> None:
    """``n`` connections that read until each has ``expect`` bytes."""
    import uvloop

    async def one(counts: list[int]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        got = 0
        while got < expect:
            data = await reader.read(65536)
            if not data:
                break
            got += len(data)
        counts.append(got)
        writer.close()

    async def main() -> None:
        counts: list[int] = []
        tasks = [asyncio.create_task(one(counts)) for _ in range(n)]
        ready.set()
        await asyncio.sleep(0.3)  # connected: what follows is reading
        start = time.process_time()
        await asyncio.gather(*tasks)
        done.put((sum(counts), time.process_time() - start))

    uvloop.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="connections")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--interval", type=float, default=0.01, help="seconds between rounds")
    parser.add_argument("--size", type=int, default=400, help="bytes per write")
    args = parser.parse_args()
    import uvloop

    chunk = b"x" * args.size
    transports: list[Any] = []

    class Sink(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            # uvloop's TCP transport (not an asyncio.Transport subclass); NODELAY as the
            # API server's connections have it
            transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            transports.append(transport)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Sink, "127.0.0.1", 0, backlog=4096)
        port = server.sockets[0].getsockname()[1]
        ctx = mp.get_context("spawn")
        ready, done = ctx.Event(), ctx.Queue()
        proc = ctx.Process(target=client, args=(port, args.n, args.rounds * args.size, ready, done))
        proc.start()
        while len(transports) < args.n:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)
        me = os.getpid()
        cpu0, start = _cpu(me), time.monotonic()
        for i in range(args.rounds):
            due = start + i * args.interval - time.monotonic()
            if due > 0:
                await asyncio.sleep(due)
            for t in transports:
                t.write(chunk)
        wall = time.monotonic() - start
        cpu1 = _cpu(me)
        received, client_cpu = await loop.run_in_executor(None, done.get)
        proc.join()
        writes = args.rounds * args.n
        print(
            f"{args.n} connections x {args.rounds} rounds of {args.size} B every "
            f"{args.interval * 1000:.0f} ms: {writes:,} writes in {wall:.2f} s "
            f"({writes / wall:,.0f}/s); received {received:,} B"
        )
        print(f"server CPU per write: {(cpu1 - cpu0) / writes * 1e6:.1f} us")
        print(f"client CPU per write: {client_cpu / writes * 1e6:.1f} us")
        server.close()

    uvloop.run(run())


if __name__ == "__main__":
    main()
