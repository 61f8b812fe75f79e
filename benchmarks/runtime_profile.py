"""Where the operator's CPU goes per reconcile: benchmarks/runtime.py's operator, in-process.

Run:  .venv/bin/python benchmarks/runtime_profile.py [-n 2000] [--rounds 5]
      [--mode server|offline] [--profile] [--top 25] [--dump /tmp/runtime.prof]

The operator is exactly ``benchmarks/runtime.py``'s (its ``KUBEWERK_OPERATOR`` source is
executed here): a :class:`~kubewerk.runtime.Manager` with one controller,
``GENERATION_CHANGED``, 16 concurrent reconciles, each reading ``spec.value`` and
merge-patching ``status.observed``. Per round, ``-n`` fresh objects exist before the
manager starts; the clock starts when the controller's workers start (the initial list
is done) and stops once every object was reconciled *and* the informer has handled the
watch event of every status write (that event is filtered by the predicate, but decoding,
storing and comparing it is per-reconcile work too). The figure is the operator
process's CPU time (``time.process_time``) over that window divided by ``-n``, best of
``--rounds`` (the machine is shared; the minimum is the least disturbed round).

Modes:

``server`` (default)
    The embedded API server runs in its own process (memory store, uvloop), as in
    ``benchmarks/runtime.py``; this process is the operator alone on uvloop, so its CPU
    is the operator's: kubewerk.runtime, kubewerk.client, aiohttp and the event loop.

``offline``
    No server and no HTTP: the manager gets an in-process fake client whose status PATCH
    applies the merge patch to its own copy (guarded by resourceVersion, as the server),
    returns a freshly decoded object and feeds the MODIFIED event to the informer's watch,
    decoded, as the real client would. What remains is kubewerk.runtime's own CPU (plus
    list_watch's generator and the event loop's task switches); the fake's own work
    (encoding and decoding its copies, which the real client does on the wire) is timed
    and subtracted. The fake's suspension (one ``sleep(0)`` per PATCH) and its
    ``asyncio.Queue`` stay in the figure, standing for the real client's I/O wait.
    Deterministic under ``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0``: the
    difference between ``-n 3000`` and ``-n 1000`` (``--rounds 1``) over 2,000 gives
    instructions per object (initial list and fake included).

Figures (2026-11-30, shared 2-core machine, best of 5, A/B alternated in one session):
offline 24.9-27.4 us of runtime CPU per reconcile before the runtime work of that day
(commit a403f99), 17.6-21.2 us after; callgrind 272k -> 225k instructions per object;
server mode 180-188 us -> 169-178 us of operator CPU per reconcile (mostly aiohttp).

``--profile`` runs the measured window under cProfile and prints the own time by area
(kubewerk.runtime, kubewerk.client, aiohttp & co, prometheus-client, event loop, other;
built-ins such as ``orjson.loads`` are charged to the area that called them) and the
functions with the most own time. cProfile inflates Python-heavy code, so the areas are
shares of a profiled run, not of the unprofiled CPU figure. For a sampling view without
that bias: ``py-spy record -o /tmp/rt.svg -- .venv/bin/python benchmarks/runtime_profile.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from kubewerk.client import Client, ResourceType  # noqa: E402
from kubewerk.client.client import ObjectList, WatchEvent  # noqa: E402
from kubewerk.client.errors import error_from_status  # noqa: E402
from kubewerk.core.patch import merge_patch  # noqa: E402
from kubewerk.runtime import Manager  # noqa: E402
from runtime import BENCH, CRD, KUBEWERK_OPERATOR, SERVER  # noqa: E402  (benchmarks/runtime.py)

CRD_RT = ResourceType(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)


# -- the operator, instrumented only at its edges -------------------------------------------


def build_manager(namespace: str, concurrency: int) -> Manager:
    """benchmarks/runtime.py's operator, from its own source."""
    os.environ["BENCH_NAMESPACE"] = namespace
    os.environ["BENCH_CONCURRENCY"] = str(concurrency)
    scope: dict[str, Any] = {}
    exec(compile(KUBEWERK_OPERATOR, "kw_operator.py", "exec"), scope)
    manager: Manager = scope["manager"]
    return manager


class Window:
    """Marks the measured window: from the workers' start to the last status write's
    watch event handled by the informer. Costs one extra await per reconcile (the wrapper)
    and a 2 ms poll."""

    def __init__(self, manager: Manager, n: int, profiler: cProfile.Profile | None) -> None:
        self.ctrl = manager.controllers[0]
        self.n = n
        self.profiler = profiler
        self.cpu0 = self.wall0 = 0.0
        self.written_rv = 0
        start, fn = self.ctrl.start, self.ctrl.reconcile_fn

        def start_and_mark() -> None:
            gc.collect()
            self.cpu0, self.wall0 = time.process_time(), time.perf_counter()
            if self.profiler is not None:
                self.profiler.enable()
            start()

        async def reconcile(obj: Any, ctx: Any) -> Any:
            result = await fn(obj, ctx)
            self.written_rv = max(self.written_rv, int(obj["metadata"]["resourceVersion"]))
            return result

        self.ctrl.start = start_and_mark  # type: ignore[method-assign]
        self.ctrl.reconcile_fn = reconcile

    def finished(self) -> bool:
        ctrl = self.ctrl
        if ctrl.reconciles < self.n or len(ctrl.queue) or ctrl.queue.in_flight():
            return False
        rv = ctrl.informer.resource_version
        return bool(rv) and int(rv) >= self.written_rv

    async def wait(self, timeout: float) -> tuple[float, float]:
        """(CPU seconds, wall seconds) of the window once it closes."""
        deadline = time.monotonic() + timeout
        while not self.finished():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.ctrl.reconciles}/{self.n} reconciled after {timeout}s")
            await asyncio.sleep(0.002)
        cpu, wall = time.process_time() - self.cpu0, time.perf_counter() - self.wall0
        if self.profiler is not None:
            self.profiler.disable()
        if self.ctrl.reconciles != self.n:
            raise RuntimeError(f"{self.ctrl.reconciles} reconciles for {self.n} objects")
        return cpu, wall


# -- offline: a fake client answering in-process --------------------------------------------


def bench_object(namespace: str, i: int, rv: int) -> dict[str, Any]:
    """A Bench as the embedded server returns it."""
    return {
        "apiVersion": "bench.kubewerk.dev/v1",
        "kind": "Bench",
        "metadata": {
            "name": f"b{i:05d}",
            "namespace": namespace,
            "uid": f"00000000-0000-4000-8000-{i:012d}",
            "creationTimestamp": "2026-11-30T11:35:59Z",
            "generation": 1,
            "resourceVersion": str(rv),
        },
        "spec": {"value": i},
    }


class FakeClient:
    """The part of :class:`kubewerk.client.Client` the operator uses, answered in-process.

    ``fake_seconds`` accumulates the fake's own work (encoding its copies, decoding the
    objects it hands out: the real client's decode work), to be subtracted.
    """

    namespace = "default"

    def __init__(self, namespace: str, n: int) -> None:
        self.objects = {
            f"{namespace}/b{i:05d}": bench_object(namespace, i, 100 + i) for i in range(n)
        }
        self.rv = 100 + n
        self.events: asyncio.Queue[bytes] = asyncio.Queue()
        self.fake_seconds = 0.0

    async def request(self, method: str, path: str, **_: Any) -> Any:
        return {"major": "1", "minor": "33"}

    async def resolve(self, api_version: str, kind: str) -> ResourceType:
        return BENCH

    async def close(self) -> None:
        return None

    async def list_all(
        self, rt: ResourceType, namespace: str | None = None, **_: Any
    ) -> ObjectList:
        return ObjectList(orjson.loads(orjson.dumps(list(self.objects.values()))), str(self.rv))

    async def watch(
        self, rt: ResourceType, namespace: str | None = None, **_: Any
    ) -> AsyncIterator[WatchEvent]:
        while True:
            line = await self.events.get()
            t = time.perf_counter()
            obj = orjson.loads(line)
            event = WatchEvent("MODIFIED", obj, obj)
            self.fake_seconds += time.perf_counter() - t
            yield event

    async def patch(
        self,
        rt: ResourceType,
        name: str,
        body: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        **_: Any,
    ) -> Any:
        await asyncio.sleep(0)  # the round trip: other tasks run meanwhile
        t = time.perf_counter()
        key = f"{namespace}/{name}"
        current = self.objects[key]
        want = (body.get("metadata") or {}).get("resourceVersion")
        if want is not None and want != current["metadata"]["resourceVersion"]:
            raise error_from_status(
                409,
                {
                    "kind": "Status",
                    "code": 409,
                    "reason": "Conflict",
                    "message": "the object has been modified",
                },
            )
        assert subresource == "status"
        self.rv += 1
        new = {**current, "metadata": {**current["metadata"], "resourceVersion": str(self.rv)}}
        new["status"] = merge_patch(current.get("status"), body.get("status"))
        self.objects[key] = new
        raw = orjson.dumps(new)
        self.events.put_nowait(raw)
        answer = orjson.loads(raw)
        self.fake_seconds += time.perf_counter() - t
        return answer


# -- rounds ---------------------------------------------------------------------------------


async def offline_round(
    n: int, concurrency: int, profiler: cProfile.Profile | None, r: int
) -> tuple[float, float, float]:
    ns = f"offline-{r}"
    manager = build_manager(ns, concurrency)
    fake = FakeClient(ns, n)
    manager.use_client(fake)  # type: ignore[arg-type]  # a benchmark's shortcut: no server
    window = Window(manager, n, profiler)
    await manager.start()
    try:
        cpu, wall = await window.wait(600)
    finally:
        await manager.stop()
    return cpu - fake.fake_seconds, wall, fake.fake_seconds


async def create_objects(client: Client, namespace: str, n: int) -> None:
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    sem = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        async with sem:
            await client.create(
                {
                    "apiVersion": BENCH.api_version,
                    "kind": "Bench",
                    "metadata": {"name": f"b{i:05d}", "namespace": namespace},
                    "spec": {"value": i},
                }
            )

    await asyncio.gather(*(one(i) for i in range(n)))


async def server_rounds(
    args: argparse.Namespace, profiler: cProfile.Profile | None
) -> list[tuple[float, float, float]]:
    tmp = Path(tempfile.mkdtemp(prefix="kubewerk-rtprof-"))
    kubeconfig = tmp / "kubeconfig"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(kubeconfig)], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    os.environ["KUBECONFIG"] = str(kubeconfig)
    out = []
    try:
        async with Client.from_url(url, timeout=120) as client:
            await client.create(CRD)
            for _ in range(500):
                crd = await client.get(CRD_RT, CRD["metadata"]["name"])
                if any(
                    c["type"] == "Established" and c["status"] == "True"
                    for c in (crd.get("status") or {}).get("conditions", [])
                ):
                    break
                await asyncio.sleep(0.02)
            for r in range(args.rounds):
                ns = f"prof-{os.getpid()}-{r}"
                await create_objects(client, ns, args.n)
                manager = build_manager(ns, args.concurrency)
                window = Window(manager, args.n, profiler)
                await manager.start()
                try:
                    cpu, wall = await window.wait(args.timeout)
                finally:
                    await manager.stop()
                out.append((cpu, wall, 0.0))
                print(
                    f"  round {r + 1}: {cpu / args.n * 1e6:6.1f} us "
                    f"CPU/reconcile, {args.n / wall:,.0f} reconciles/s",
                    flush=True,
                )
    finally:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(10)
        if server.poll() is None:
            server.kill()
    return out


# -- reporting ------------------------------------------------------------------------------

AREAS = (
    ("kubewerk/runtime/", "kubewerk.runtime"),
    ("kubewerk/client/", "kubewerk.client"),
    ("kubewerk/", "kubewerk (other)"),
    ("prometheus_client", "prometheus-client"),
    ("aiohttp", "aiohttp & co"),
    ("yarl", "aiohttp & co"),
    ("multidict", "aiohttp & co"),
    ("propcache", "aiohttp & co"),
    ("frozenlist", "aiohttp & co"),
    ("asyncio", "event loop"),
    ("uvloop", "event loop"),
    ("runtime_profile.py", "this script (fake client, window)"),
    ("kw_operator.py", "the reconcile function"),
)


def area_of(filename: str) -> str | None:
    """The area of a profiled function's file; None for built-ins (charged to callers)."""
    if filename == "~":
        return None
    for needle, area in AREAS:
        if needle in filename:
            return area
    return "other"


def report(stats: pstats.Stats, n: int, top: int) -> None:
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values())
    by_area: dict[str, float] = {}
    for func, (_cc, _nc, tt, _ct, callers) in raw.items():
        area = area_of(func[0])
        if area is None:  # a built-in: split its own time among its callers' areas
            edge = {c: e[2] for c, e in callers.items()}
            weight = sum(edge.values())
            if weight <= 0:
                by_area["other"] = by_area.get("other", 0.0) + tt
                continue
            for c, w in edge.items():
                a = area_of(c[0]) or "other"
                by_area[a] = by_area.get(a, 0.0) + tt * w / weight
        else:
            by_area[area] = by_area.get(area, 0.0) + tt
    print(
        "\ncProfile, own time per reconcile by area (profiled "
        f"total {total / n * 1e6:.1f} us/reconcile):"
    )
    for area, t in sorted(by_area.items(), key=lambda kv: -kv[1]):
        print(f"  {area:<36} {t / n * 1e6:7.2f} us  {100 * t / total:5.1f} %")
    print(f"\ntop {top} functions by own time:")
    stats.sort_stats("tottime").print_stats(top)


async def amain(args: argparse.Namespace) -> None:
    profiler = cProfile.Profile() if args.profile else None
    if args.mode == "offline":
        results = []
        for r in range(args.rounds):
            cpu, wall, fake = await offline_round(args.n, args.concurrency, profiler, r)
            results.append((cpu, wall, fake))
            print(
                f"  round {r + 1}: {cpu / args.n * 1e6:6.1f} us CPU/reconcile "
                f"(fake client's {fake / args.n * 1e6:.1f} us subtracted)",
                flush=True,
            )
    else:
        results = await server_rounds(args, profiler)
    best = min(results)
    print(
        f"\n{args.mode}: {args.n} objects, concurrency {args.concurrency}, best of {args.rounds}: "
        f"{best[0] / args.n * 1e6:.1f} us of operator CPU per reconcile "
        f"(median {sorted(r[0] for r in results)[len(results) // 2] / args.n * 1e6:.1f} us)"
    )
    if profiler is not None:
        stats = pstats.Stats(profiler)
        if args.dump:
            stats.dump_stats(args.dump)
        report(stats, args.n * args.rounds, args.top)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=2000, help="objects (reconciles) per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--mode", choices=("server", "offline"), default="server")
    parser.add_argument("--profile", action="store_true", help="cProfile the measured windows")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--dump", help="write the cProfile stats here")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument(
        "--loop", choices=("uvloop", "asyncio"), default="uvloop", help="as `kubewerk run` (uvloop)"
    )
    args = parser.parse_args()
    if args.loop == "uvloop":
        import uvloop

        uvloop.run(amain(args))
    else:
        asyncio.run(amain(args))


if __name__ == "__main__":
    main()
