"""Scale benchmark (issue 17): thousands of kinds, a hundred thousand objects, a thousand
watchers, a Manager watching a thousand kinds.

Every case runs the embedded server in its own process (uvicorn + httptools + uvloop,
as ``kubewerk up`` serves it) and prints its figures next to the issue's targets:

- register N CRDs (default 5,000 small CRDs in groups of 20, SQLite store): CRDs/s from
  the first POST until the last is served (aggregated discovery lists it); server RSS;
- with those CRDs, real kubectl (a cold discovery/OpenAPI cache, as a new user has, then
  warm): ``apply -f`` of one object, ``explain``, ``api-resources``;
- restart from the SQLite file: process spawn to every CRD served (``/readyz`` then the
  last group in discovery), and the first request to a never-used kind (its schema and
  CEL compile then);
- objects (memory store): create rate (wrk, POST with generateName) near 0 objects and
  at ``--objects``; full and paginated (limit=500) list; memory per object for the memory
  and the SQLite store (in-process, store API); watch from the resourceVersion before the
  fill; compaction of the change log at that size;
- watchers: ``--watchers`` streams spread over ``--watch-procs`` client processes, once
  per ``--watch-client`` (default both, each on a new server: ``raw``, bare protocols
  noting arrival times and decoding after the run, so the delay is the server's and the
  network's; ``aiohttp``, each event decoded as it comes, so the clients' own CPU shares
  the machine), 300 creates due every 10 ms, delivery
  delay p50/p99 (stamp at send to arrival), CPU per delivery of server and clients, and
  the server's own time from commit to the last stream's write; a stuck watcher (never
  reads) while 20 MiB of events go out: server RSS growth and whether the server closed it;
- fanout (in-process): the server's delivery time and CPU per delivery for
  ``--watchers`` streams over real sockets, without client processes;
- create (POST of the demo Database: schema, defaults, CEL) vs the no-op endpoint (same
  uvicorn configuration), wrk, same run;
- Manager (kubewerk.runtime) with ``--kinds`` controllers, one per CRD, no objects: time
  from spawn to all caches synced, RSS, open sockets.

    .venv/bin/python benchmarks/scale.py                  # everything, defaults of the issue
    .venv/bin/python benchmarks/scale.py --crds 500 --objects 10000 --watchers 100 --kinds 100
    .venv/bin/python benchmarks/scale.py --only kinds,kubectl,restart
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import multiprocessing as mp
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import apiserver as base  # benchmarks/apiserver.py: servers, wrk, the watch client

GROUP_SIZE = 20
CASES = (
    "kinds",
    "kubectl",
    "restart",
    "objects",
    "stores",
    "watchers",
    "fanout",
    "create",
    "manager",
)
PY = sys.executable


def small_crd(i: int) -> dict[str, Any]:
    """CRD ``i``: kind ``Kind<i>`` in group ``g<i // 20>.scale.bench`` (20 kinds a group,
    as a provider installs them), one version, a small schema with a default and a CEL
    rule."""
    group = f"g{i // GROUP_SIZE}.scale.bench"
    plural = f"kind{i}s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": f"kind{i}", "kind": f"Kind{i}"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": f"Kind{i} is a benchmark kind.",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {"type": "integer", "default": 1},
                                        "name": {"type": "string", "maxLength": 63},
                                    },
                                    "x-kubernetes-validations": [
                                        {"rule": "self.size <= 100", "message": "too big"}
                                    ],
                                },
                                "status": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


def kind_object(i: int, name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"g{i // GROUP_SIZE}.scale.bench/v1",
        "kind": f"Kind{i}",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 3, "name": name},
    }


# -- server process -----------------------------------------------------------------------


def serve(port_q: Any, store: str) -> None:
    """The embedded server on uvloop over ``store`` (``memory`` or ``sqlite:PATH``); puts
    its port, then the wall-clock time this function was entered (after the process
    spawned and imported this module, before kubewerk.apiserver is imported)."""
    entered = time.time()
    gc_threshold = os.environ.get("SCALE_GC_THRESHOLD")  # e.g. "20000,50,100": what-if runs
    if gc_threshold:
        gc.set_threshold(*(int(x) for x in gc_threshold.split(",")))
    from kubewerk.apiserver.server import EmbeddedServer, new_event_loop
    from kubewerk.core.gcpolicy import tune_for_long_lived_data

    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    server = EmbeddedServer(store)
    stop = asyncio.Event()

    async def main() -> None:
        await server.start()
        if not gc_threshold:
            tune_for_long_lived_data()  # as ``kubewerk up`` does once started
        probe_log = os.environ.get("SCALE_FANOUT_LOG")
        fanout = fanout_probe(server) if probe_log else None
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        port_q.put(server.port)
        port_q.put(entered)
        await stop.wait()
        await server.stop()
        if probe_log and fanout is not None:
            Path(probe_log).write_bytes(orjson.dumps(fanout))

    loop.run_until_complete(main())


def fanout_probe(server: Any) -> list[float]:
    """In the server process: for every committed object carrying the benchmark's send
    stamp, the seconds from its commit until the hub's flush has written it to every
    watcher, appended to the returned list. The flush list is first in, first out and
    only a commit adds to it, so the event is out once the flush has taken as many
    watchers off the list as were on it right after the commit. The hub's flush is
    wrapped to count them: the probe costs O(1) per turn of the flush."""
    hub = server.app.hub
    times: list[float] = []
    waiting: collections.deque[tuple[float, int]] = collections.deque()
    taken = 0  # watchers the flush has taken off its list so far
    flush = hub._flush

    def after(ev: Any) -> None:
        if base.STAMP in (ev.obj.get("metadata", {}).get("annotations") or {}):
            waiting.append((time.perf_counter(), taken + len(hub._flush_list)))

    def timed_flush() -> None:
        nonlocal taken
        listed = len(hub._flush_list)
        flush()
        taken += listed - len(hub._flush_list)
        now = time.perf_counter()
        while waiting and waiting[0][1] <= taken:
            times.append(now - waiting.popleft()[0])

    hub._flush = timed_flush
    server.app.store.subscribe(after)  # after the hub's dispatch
    return times


def start_server(store: str) -> tuple[mp.process.BaseProcess, str, float]:
    """The server process, its URL and the wall-clock time its ``serve`` was entered."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=serve, args=(q, store), daemon=True)
    proc.start()
    port = int(q.get(timeout=60))
    return proc, f"http://127.0.0.1:{port}", float(q.get(timeout=10))


def stop_server(proc: mp.process.BaseProcess) -> None:
    if proc.pid is not None and proc.is_alive():
        os.kill(proc.pid, signal.SIGTERM)
    proc.join(30)
    if proc.is_alive():
        proc.kill()


def rss(proc: mp.process.BaseProcess) -> float:
    assert proc.pid is not None
    return base.rss_mib(proc.pid)


async def post_all(url: str, path: str, bodies: list[Any], connections: int = 16) -> None:
    todo = iter(bodies)
    async with aiohttp.ClientSession(url, connector=aiohttp.TCPConnector(limit=connections)) as s:

        async def worker() -> None:
            for body in todo:
                async with s.post(
                    path, data=orjson.dumps(body), headers={"content-type": "application/json"}
                ) as r:
                    if r.status != 201:
                        raise RuntimeError(f"{r.status} from POST {path}: {await r.text()}")

        await asyncio.gather(*(worker() for _ in range(connections)))


AGG = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


async def served_kinds(s: aiohttp.ClientSession) -> int:
    async with s.get("/apis", headers={"accept": AGG}) as r:
        body = orjson.loads(await r.read())
    return sum(
        len(v["resources"])
        for item in body["items"]
        if item["metadata"]["name"].endswith(".scale.bench")
        for v in item["versions"]
    )


async def wait_served(url: str, n: int, timeout: float = 300.0) -> float:
    """Seconds until aggregated discovery lists ``n`` benchmark kinds."""
    t0 = time.perf_counter()
    async with aiohttp.ClientSession(url) as s:
        while await served_kinds(s) < n:
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError(f"fewer than {n} kinds served after {timeout}s")
            await asyncio.sleep(0.05)
    return time.perf_counter() - t0


def line(case: str, value: str, target: str, met: bool | None) -> None:
    verdict = "" if met is None else ("met" if met else "MISSED")
    print(f"{case:<52} {value:<34} {target:<22} {verdict}", flush=True)


# -- kinds, kubectl, restart -------------------------------------------------------------------


def kubeconfig(url: str, path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "scale", "cluster": {"server": url}}],
                "users": [{"name": "scale", "user": {}}],
                "contexts": [{"name": "scale", "context": {"cluster": "scale", "user": "scale"}}],
                "current-context": "scale",
            }
        )
    )
    path.chmod(0o600)
    return path


def kubectl(config: Path, cache: Path, *args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        ["kubectl", f"--kubeconfig={config}", f"--cache-dir={cache}", *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return time.perf_counter() - t0


def run_kinds(args: argparse.Namespace, work: Path, cases: set[str]) -> None:
    db = work / "kinds.db"
    proc, url, _ = start_server(f"sqlite:{db}")
    try:
        rss0 = rss(proc)
        crds = [small_crd(i) for i in range(args.crds)]
        t0 = time.perf_counter()
        asyncio.run(post_all(url, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crds))
        posted = time.perf_counter() - t0
        asyncio.run(wait_served(url, args.crds))
        total = time.perf_counter() - t0
        rate = args.crds / total
        after = rss(proc)
        line(
            f"register {args.crds:,} CRDs (SQLite)",
            f"{rate:,.0f} CRDs/s ({total:.1f} s; POSTs {posted:.1f} s)",
            ">= 500 CRDs/s",
            rate >= 500,
        )
        line(
            f"  RSS after {args.crds:,} CRDs",
            f"{after:,.0f} MiB (start {rss0:,.0f} MiB)",
            "<= 500 MB",
            after * 1.048576 <= 500,
        )
        if "kubectl" in cases and shutil.which("kubectl"):
            time.sleep(args.settle)  # --settle: let the server's background builds finish
            run_kubectl(args, work, url)
        if "restart" in cases:
            stop_server(proc)
            run_restart(args, db)
    finally:
        stop_server(proc)


def run_kubectl(args: argparse.Namespace, work: Path, url: str) -> None:
    config = kubeconfig(url, work / "kubeconfig")
    i = args.crds // 2
    group = f"g{i // GROUP_SIZE}.scale.bench"
    manifest = work / "obj.yaml"
    manifest.write_text(yaml.safe_dump(kind_object(i, "from-kubectl")))
    commands = {
        "kubectl apply -f (one object)": ("apply", "-f", str(manifest)),
        "kubectl explain": ("explain", f"kind{i}s.{group}.spec"),
        "kubectl api-resources": ("api-resources",),
    }
    for label, cmd in commands.items():
        cold = kubectl(config, work / f"cache-{cmd[0]}", *cmd)
        warm = kubectl(config, work / f"cache-{cmd[0]}", *cmd)
        line(
            f"{label} with {args.crds:,} CRDs",
            f"cold {cold:.2f} s, warm {warm:.2f} s",
            "<= 1 s",
            max(cold, warm) <= 1.0,
        )


def run_restart(args: argparse.Namespace, db: Path) -> None:
    t0 = time.time()
    proc, url, entered = start_server(f"sqlite:{db}")
    try:
        listening = time.time() - entered
        asyncio.run(wait_served(url, args.crds))
        ready = time.time() - entered
        line(
            f"restart from SQLite with {args.crds:,} CRDs",
            f"all served {ready:.2f} s (listening {listening:.2f} s)",
            "ready <= 2 s",
            ready <= 2.0,
        )
        line(
            "  the same from process spawn (interpreter, imports)",
            f"{time.time() - t0:.2f} s (serve() entered at {entered - t0:.2f} s)",
            "",
            None,
        )
        i = args.crds - 1
        path = f"/apis/g{i // GROUP_SIZE}.scale.bench/v1/namespaces/default/kind{i}s"

        async def first() -> tuple[float, float]:
            async with aiohttp.ClientSession(url) as s:
                times = []
                for n in range(2):
                    t = time.perf_counter()
                    async with s.post(path, json=kind_object(i, f"first-{n}")) as r:
                        assert r.status == 201, await r.text()
                    times.append(time.perf_counter() - t)
                return times[0], times[1]

        cold, warm = asyncio.run(first())
        line(
            "  first request to a never-used kind (POST)",
            f"{cold * 1000:.0f} ms (second {warm * 1000:.1f} ms)",
            "<= 100 ms",
            cold <= 0.1,
        )
        line("  RSS after restart", f"{rss(proc):,.0f} MiB", "", None)
    finally:
        stop_server(proc)


# -- objects ----------------------------------------------------------------------------------

BENCH_CRD = small_crd(0)
BENCH_PATH = "/apis/g0.scale.bench/v1/namespaces/default/kind0s"


def bench_object(name: str | None = None) -> dict[str, Any]:
    obj = kind_object(0, name or "x")
    if name is None:
        del obj["metadata"]["name"]
        obj["metadata"]["generateName"] = "gen-"
    obj["metadata"]["labels"] = {"app": "scale", "shard": "a"}
    return obj


async def fill_objects(url: str, n: int, start: int = 0) -> None:
    await post_all(
        url, BENCH_PATH, [bench_object(f"o-{k:06d}") for k in range(start, start + n)], 32
    )


async def list_times(url: str) -> tuple[float, int, float, int]:
    async with aiohttp.ClientSession(url, timeout=aiohttp.ClientTimeout(total=300)) as s:
        full = []
        count = 0
        for _ in range(3):
            t = time.perf_counter()
            async with s.get(BENCH_PATH) as r:
                raw = await r.read()
            full.append(time.perf_counter() - t)
            count = len(orjson.loads(raw)["items"])
        t = time.perf_counter()
        pages = 0
        token = ""
        while True:
            params = {"limit": "500"}
            if token:
                params["continue"] = token
            async with s.get(BENCH_PATH, params=params) as r:
                body = orjson.loads(await r.read())
            pages += 1
            token = body["metadata"].get("continue", "")
            if not token:
                break
        return min(full), count, time.perf_counter() - t, pages


async def watch_from(url: str, rv: str, expected: int) -> tuple[float, int, str]:
    """Seconds to receive ``expected`` events from ``rv``; events seen; first event type."""
    seen = 0
    first = ""
    t = time.perf_counter()
    async with aiohttp.ClientSession(url, timeout=aiohttp.ClientTimeout(total=300)) as s:
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "120"}
        async with s.get(BENCH_PATH, params=params) as r:
            while seen < expected:
                raw = await r.content.readline()
                if not raw:
                    break
                ev = orjson.loads(raw)
                first = first or ev["type"]
                if ev["type"] == "ERROR":
                    break
                seen += 1
    return time.perf_counter() - t, seen, first


async def current_rv(url: str) -> str:
    async with aiohttp.ClientSession(url) as s, s.get(BENCH_PATH, params={"limit": "1"}) as r:
        return str(orjson.loads(await r.read())["metadata"]["resourceVersion"])


def run_objects(args: argparse.Namespace) -> None:
    proc, url, _ = start_server("memory")
    try:
        asyncio.run(
            post_all(url, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", [BENCH_CRD])
        )
        asyncio.run(wait_served(url, 1))
        body = orjson.dumps(bench_object())
        rate0 = base.wrk(url + BENCH_PATH, 32, args.duration, "POST", body)
        rv0 = asyncio.run(current_rv(url))
        rss0 = rss(proc)
        t = time.perf_counter()
        asyncio.run(fill_objects(url, args.objects))
        filled = time.perf_counter() - t
        per_object = (rss(proc) - rss0) * 1024 * 1024 / args.objects
        rate_n = base.wrk(url + BENCH_PATH, 32, args.duration, "POST", body)
        ratio = rate_n / rate0
        line(
            f"create rate at {args.objects:,} objects vs at ~0",
            f"{ratio:.2f}x ({rate_n:,.0f} vs {rate0:,.0f}/s)",
            ">= 0.9x",
            ratio >= 0.9,
        )
        full, count, paged, pages = asyncio.run(list_times(url))
        line(
            f"full list of {count:,} objects",
            f"{full:.2f} s (best of 3)",
            "<= 1 s",
            full <= 1.0,
        )
        line(f"  paginated list (limit=500, {pages} pages)", f"{paged:.2f} s", "", None)
        line(
            "  memory per object (memory store, server RSS)",
            f"{per_object / 1024:.2f} KiB (filled at {args.objects / filled:,.0f}/s)",
            "",
            None,
        )
        expected = args.objects
        took, seen, first = asyncio.run(watch_from(url, rv0, expected))
        line(
            f"  watch from the RV before the fill ({expected:,} events)",
            f"{took:.2f} s, {seen:,} events" + (f" ({first})" if first == "ERROR" else ""),
            "",
            None,
        )
    finally:
        stop_server(proc)


def run_stores(args: argparse.Namespace, work: Path) -> None:
    """Memory per object and compaction, in-process, through the store API."""
    from kubewerk.apiserver.storage import MemoryStore, SQLiteStore

    def objects() -> Any:
        for k in range(args.objects):
            obj = kind_object(0, f"o-{k:06d}")
            obj["metadata"]["uid"] = f"3f1c9a6e-0000-4000-8000-{k:012d}"
            obj["metadata"]["labels"] = {"app": "scale", "shard": "a"}
            yield f"/g0.scale.bench/kind0s/default/o-{k:06d}", obj

    for name, make in (
        ("memory", lambda: MemoryStore()),
        ("SQLite", lambda: SQLiteStore(str(work / "objects.db"))),
    ):
        gc.collect()
        before = base.rss_mib(os.getpid())
        store = make()
        for key, obj in objects():
            store.create(key, obj)
        gc.collect()
        per = (base.rss_mib(os.getpid()) - before) * 1024 / args.objects
        t = time.perf_counter()
        store.compact(store.revision)
        compacted = time.perf_counter() - t
        line(
            f"  {name} store: RSS per object, {args.objects:,} objects",
            f"{per:.2f} KiB; compact all {compacted * 1000:.0f} ms",
            "",
            None,
        )
        store.close()
        del store


# -- watchers ---------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def watch_procs_client(url: str, watchers: int, expected: int, out_q: Any, ready_q: Any) -> None:
    """``watchers`` watch streams in this process: every delivery delay (seconds), and
    this process's CPU seconds while the events arrived."""
    import resource

    import uvloop

    async def run() -> list[float]:
        delays: list[float] = []
        opened = 0
        async with aiohttp.ClientSession(url, connector=aiohttp.TCPConnector(limit=0)) as s:

            async def one() -> None:
                nonlocal opened
                seen = 0
                params = {"watch": "true", "resourceVersion": "0", "timeoutSeconds": "120"}
                async with s.get(
                    f"/apis/{base.GV}/namespaces/watch/databases",
                    params=params,
                    timeout=aiohttp.ClientTimeout(total=180),
                ) as r:
                    opened += 1
                    if opened == watchers:
                        ready_q.put(True)
                    while seen < expected:
                        line = await r.content.readline()
                        if not line:
                            return
                        now = time.monotonic_ns()
                        ev = orjson.loads(line)
                        sent = int(ev["object"]["metadata"]["annotations"][base.STAMP])
                        delays.append((now - sent) / 1e9)
                        seen += 1

            await asyncio.gather(*(one() for _ in range(watchers)))
        return delays

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    before = 0.0

    async def main() -> list[float]:
        nonlocal before
        before = cpu()
        return await run()

    delays = uvloop.run(main())
    out_q.put((delays, cpu() - before))


def watch_procs_raw_client(
    url: str, watchers: int, expected: int, out_q: Any, ready_q: Any
) -> None:
    """Like ``watch_procs_client``, but each stream is a bare asyncio protocol that only
    notes when each piece of bytes arrived (``time.monotonic_ns``) and keeps it; the
    chunked framing and the events are decoded after the last event came, to match each
    event's stamp with the arrival of the piece that completed it. The delivery delay is
    then the server's and the network's alone, not the client's own decoding time."""
    import bisect
    import resource

    import uvloop

    port = int(url.rsplit(":", 1)[1])
    path = f"/apis/{base.GV}/namespaces/watch/databases?watch=true&resourceVersion=0"
    request = f"GET {path}&timeoutSeconds=120 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"

    class Stream(asyncio.Protocol):
        def __init__(self, done: asyncio.Future[None]) -> None:
            self.pieces: list[bytes] = []
            self.times: list[int] = []
            self.lines = 0
            self.last = b""
            self.done = done

        def connection_made(self, transport: Any) -> None:
            transport.write(request.encode())

        def data_received(self, data: bytes) -> None:
            self.times.append(time.monotonic_ns())
            self.pieces.append(data)
            # an event line ends with "}\n" (then the chunk's CRLF); one may span pieces
            self.lines += data.count(b"}\n") + (self.last == b"}" and data[:1] == b"\n")
            self.last = data[-1:]
            if self.lines >= expected and not self.done.done():
                self.done.set_result(None)

        def connection_lost(self, exc: Exception | None) -> None:
            if not self.done.done():
                self.done.set_result(None)

    def delays_of(stream: Stream) -> list[float]:
        data = b"".join(stream.pieces)
        ends, total = [], 0
        for piece in stream.pieces:
            total += len(piece)
            ends.append(total)
        pos = data.index(b"\r\n\r\n") + 4
        carry, out = b"", []
        while len(out) < expected:
            eol = data.index(b"\r\n", pos)
            size = int(data[pos:eol], 16)
            start = eol + 2
            chunk = data[start : start + size]
            pos = start + size + 2
            at = 0
            while (nl := chunk.find(b"\n", at)) >= 0:
                line, carry = carry + chunk[at:nl], b""
                at = nl + 1
                arrived = stream.times[bisect.bisect_right(ends, start + nl)]
                ev = orjson.loads(line)
                if ev["type"] == "BOOKMARK":
                    continue
                sent = int(ev["object"]["metadata"]["annotations"][base.STAMP])
                out.append((arrived - sent) / 1e9)
            carry += chunk[at:]
        return out

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    async def main() -> tuple[list[float], float]:
        loop = asyncio.get_running_loop()
        streams = []
        for _ in range(watchers):
            stream = Stream(loop.create_future())
            await loop.create_connection(lambda s=stream: s, "127.0.0.1", port)  # type: ignore[misc]
            streams.append(stream)
        while not all(s.pieces for s in streams):  # every watch answered its head
            await asyncio.sleep(0.01)
        ready_q.put(True)
        before = cpu()
        await asyncio.wait_for(asyncio.gather(*(s.done for s in streams)), 300)
        spent = cpu() - before
        return [d for s in streams for d in delays_of(s)], spent

    out_q.put(uvloop.run(main()))


async def write_paced(url: str, n: int, interval: float) -> float:
    """``n`` stamped creates on a fixed schedule, the ``i``-th due ``i * interval`` seconds
    after the first (one at a time: a create that answers late makes the next ones go
    at once until the schedule is met again); the writes per second achieved."""
    async with aiohttp.ClientSession(url) as s:
        start = time.monotonic()
        for i in range(n):
            delay = start + i * interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            body = base.database(f"w-{i:05d}", **{base.STAMP: str(time.monotonic_ns())})
            async with s.post(
                f"/apis/{base.GV}/namespaces/watch/databases",
                data=orjson.dumps(body),
                headers={"content-type": "application/json"},
            ) as r:
                assert r.status == 201, await r.text()
        return n / (time.monotonic() - start)


def run_watchers(args: argparse.Namespace) -> None:
    """``watchers_once`` with each client of ``--watch-client`` (a new server each); the
    stuck watcher with the last."""
    kinds = [c for c in args.watch_client.split(",") if c]
    for k, client in enumerate(kinds):
        if client not in ("raw", "aiohttp"):
            raise SystemExit(f"--watch-client: raw or aiohttp, not {client!r}")
        watchers_once(args, client, stuck=k == len(kinds) - 1 and not args.skip_stuck)


def watchers_once(args: argparse.Namespace, client_kind: str, stuck: bool) -> None:
    """Delivery delay with the watch streams spread over ``--watch-procs`` client
    processes, and the CPU the server and the clients spent meanwhile (on 2 cores, a
    process near 1.0 core is the bottleneck)."""
    probe = Path(tempfile.mkdtemp(prefix="kubewerk-fanout-")) / "fanout.json"
    os.environ["SCALE_FANOUT_LOG"] = str(probe)
    try:
        proc, url, _ = start_server("memory")
    finally:
        del os.environ["SCALE_FANOUT_LOG"]
    stopped = False
    try:
        asyncio.run(base.setup(url))
        writes = 300
        procs = max(1, args.watch_procs)
        ctx = mp.get_context("spawn")
        out_q, ready_q = ctx.Queue(), ctx.Queue()
        share = [
            args.watchers // procs + (1 if k < args.watchers % procs else 0) for k in range(procs)
        ]
        client_main = watch_procs_raw_client if client_kind == "raw" else watch_procs_client
        clients = [
            ctx.Process(target=client_main, args=(url, n, writes, out_q, ready_q))
            for n in share
            if n
        ]
        for client in clients:
            client.start()
        for _ in clients:
            ready_q.get(timeout=120)
        rss_open = rss(proc)
        assert proc.pid is not None
        server_cpu = cpu_seconds(proc.pid)
        t = time.perf_counter()
        rate = asyncio.run(write_paced(url, writes, 0.01))
        delays: list[float] = []
        client_cpu = 0.0
        for _ in clients:
            got, spent = out_q.get(timeout=300)
            delays.extend(got)
            client_cpu += spent
        wall = time.perf_counter() - t
        server_cpu = cpu_seconds(proc.pid) - server_cpu
        for client in clients:
            client.join(30)
        p50, p99 = base.percentile(delays, 0.5), base.percentile(delays, 0.99)
        line(
            f"{args.watchers:,} watchers, one write every 10 ms",
            f"p99 {p99 * 1000:.1f} ms (p50 {p50 * 1000:.1f}, {len(delays):,} deliveries, "
            f"{client_kind} client)",
            "p99 < 50 ms",
            p99 < 0.05,
        )
        line(
            f"  CPU while delivering ({len(clients)} client processes)",
            f"server {server_cpu / wall:.2f} cores, clients {client_cpu / wall:.2f} cores "
            f"({wall:.1f} s, {rate:.0f} writes/s); per delivery: "
            f"server {server_cpu / len(delays) * 1e6:.1f} us, "
            f"clients {client_cpu / len(delays) * 1e6:.1f} us",
            "",
            None,
        )
        line("  server RSS with the watchers open", f"{rss_open:,.0f} MiB", "", None)
        if stuck:
            stuck_watcher(url, proc)
        stop_server(proc)
        stopped = True
        fanout = orjson.loads(probe.read_bytes()) if probe.exists() else []
        if fanout:
            line(
                "  server side: commit to the last stream's write",
                f"p50 {base.percentile(fanout, 0.5) * 1000:.1f} ms, "
                f"p99 {base.percentile(fanout, 0.99) * 1000:.1f} ms ({len(fanout)} writes)",
                "",
                None,
            )
    finally:
        if not stopped:
            stop_server(proc)
        shutil.rmtree(probe.parent, ignore_errors=True)


def run_fanout(args: argparse.Namespace) -> None:
    """Server-side fan-out, in this process (the embedded server on uvloop, real sockets):
    ``--watchers`` watch streams of one kind, then ``--fanout-writes`` commits one after
    the other; for each, the time from just before the commit until every stream has
    written the event to its socket (the loop has run every stream the commit woke), the
    server's delivery time without any client. The clients' sockets are drained between
    commits, outside the timed part; every stream must have received every event."""
    from kubewerk.apiserver.server import EmbeddedServer, new_event_loop

    loop = new_event_loop()
    try:
        took, cpu, per_round = loop.run_until_complete(
            fanout_in_process(EmbeddedServer, args.watchers, args.fanout_writes)
        )
    finally:
        loop.close()
    took.sort()
    cpu.sort()
    p50, p99 = base.percentile(took, 0.5), base.percentile(took, 0.99)
    line(
        f"  fan-out in-process, {args.watchers:,} streams (server only)",
        f"p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms, max {took[-1] * 1000:.2f} ms",
        "",
        None,
    )
    cpu50 = base.percentile(cpu, 0.5)
    line(
        "    per delivery (median of the per-commit times)",
        f"{p50 / args.watchers * 1e6:.2f} us wall, {cpu50 / args.watchers * 1e6:.2f} us CPU "
        f"({len(took):,} commits; rounds {per_round})",
        "",
        None,
    )


async def fanout_in_process(
    server_class: Any, watchers: int, writes: int
) -> tuple[list[float], list[float], str]:
    """See ``run_fanout``: the per-commit delivery times and this process's CPU time for
    each (seconds), and the rounds' median times."""
    async with server_class("memory", bookmark_interval=3600.0) as srv:
        url = f"http://127.0.0.1:{srv.port}"
        await base.setup(url)
        path = f"/apis/{base.GV}/namespaces/watch/databases"
        async with (
            aiohttp.ClientSession(url) as s,
            s.post(path, json=base.database("template")) as r,
        ):
            assert r.status == 201, await r.text()
        store, hub = srv.app.store, srv.app.hub
        key = next(k for k, _ in store.list("/")[0] if k.endswith("/watch/template"))
        template = store.get(key)
        assert template is not None
        socks = []
        request = f"GET {path}?watch=true&resourceVersion={store.revision} HTTP/1.1\r\n"
        request += f"Host: 127.0.0.1:{srv.port}\r\n\r\n"
        for _ in range(watchers):
            sock = socket.create_connection(("127.0.0.1", srv.port))
            sock.setblocking(False)
            sock.sendall(request.encode())
            socks.append(sock)
        t = time.perf_counter()
        while len(hub.watchers) < watchers:
            if time.perf_counter() - t > 60:
                raise RuntimeError(f"{len(hub.watchers)} of {watchers} watches registered")
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        received = [0] * watchers

        def drain() -> None:
            for i, sock in enumerate(socks):
                while True:
                    try:
                        data = sock.recv(1 << 20)
                    except BlockingIOError:
                        break
                    received[i] += data.count(b'{"type":"ADDED"')

        drain()
        loop = asyncio.get_running_loop()
        took: list[float] = []
        cpu: list[float] = []
        medians = []
        rounds = 3
        for r in range(rounds):
            this_round: list[float] = []
            for i in range(writes // rounds):
                obj = dict(template)
                meta = dict(obj["metadata"])
                name = f"f{r}-{i:05d}"
                meta.update(name=name, uid=f"uid-{r}-{i}")
                obj["metadata"] = meta
                done = loop.create_future()

                def mark(done: asyncio.Future[tuple[float, float]] = done) -> None:
                    # every stream has its event once the hub's flush list is empty and
                    # every stream is idle again; until then, look again later (the
                    # cheap test first, so looking costs the flush nothing)
                    if not hub._flush_list and all(
                        w.waiter is not None and not w.queue for w in hub.watchers
                    ):
                        done.set_result((time.perf_counter(), time.process_time()))
                    else:
                        loop.call_soon(mark)

                c0 = time.process_time()
                t0 = time.perf_counter()
                store.create(key.rsplit("/", 1)[0] + "/" + name, obj)
                loop.call_soon(mark)
                t1, c1 = await done
                this_round.append(t1 - t0)
                cpu.append(c1 - c0)
                drain()
                await asyncio.sleep(0.002)
            took.extend(this_round)
            this_round.sort()
            medians.append(f"{base.percentile(this_round, 0.5) * 1000:.2f}")
        await asyncio.sleep(0.05)
        drain()
        expected = rounds * (writes // rounds)
        short = sum(1 for n in received if n != expected)
        for sock in socks:
            sock.close()
        if short:
            raise RuntimeError(f"{short} of {watchers} streams did not get {expected} events")
        return took, cpu, "/".join(medians) + " ms"


def watch_metrics(url: str) -> tuple[int, int]:
    """From /metrics: ``apiserver_terminated_watchers_total`` summed over resources, and
    the open WATCH requests of databases (``apiserver_longrunning_requests``)."""

    async def scrape() -> str:
        async with aiohttp.ClientSession(url) as s, s.get("/metrics") as r:
            return await r.text()

    terminated = watching = 0.0
    for text_line in asyncio.run(scrape()).splitlines():
        if text_line.startswith("apiserver_terminated_watchers_total{"):
            terminated += float(text_line.rsplit(" ", 1)[1])
        elif (
            text_line.startswith("apiserver_longrunning_requests{")
            and 'resource="databases"' in text_line
            and 'verb="WATCH"' in text_line
        ):
            watching += float(text_line.rsplit(" ", 1)[1])
    return int(terminated), int(watching)


def stuck_watcher(url: str, proc: mp.process.BaseProcess) -> None:
    """A client that opens a watch and never reads while ~20 MiB of events go out: server
    RSS growth, how long until the server closes the watcher (counted on
    apiserver_terminated_watchers_total) and whether it then closes the connection."""
    port = int(url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    path = f"/apis/{base.GV}/namespaces/watch/databases?watch=true&resourceVersion=0"
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    time.sleep(0.3)
    before = rss(proc)
    terminated_before, _ = watch_metrics(url)
    big = "x" * 10_000

    async def write() -> None:
        async with aiohttp.ClientSession(url) as s:
            for k in range(2000):
                body = base.database(f"big-{k:05d}", note=big)
                async with s.post(
                    f"/apis/{base.GV}/namespaces/watch/databases",
                    data=orjson.dumps(body),
                    headers={"content-type": "application/json"},
                ) as r:
                    assert r.status == 201, await r.text()

    t = time.perf_counter()
    asyncio.run(write())
    took = time.perf_counter() - t
    after = rss(proc)
    # the client still reads nothing: wait for the server to give up on it, then on its request
    closed_at = ended_at = None
    while time.perf_counter() - t < took + 40:
        terminated, watching = watch_metrics(url)
        if closed_at is None and terminated > terminated_before:
            closed_at = time.perf_counter() - t
        if closed_at is not None and watching == 0:
            ended_at = time.perf_counter() - t
            break
        time.sleep(0.1)
    sock.close()
    line(
        "  stuck watcher, 2,000 writes of 10 KiB",
        f"RSS +{after - before:.0f} MiB; writes took {took:.1f} s; watcher closed "
        + (f"at {closed_at:.1f} s" if closed_at is not None else "never")
        + ", request ended "
        + (f"at {ended_at:.1f} s" if ended_at is not None else "never"),
        "bounded, dropped",
        closed_at is not None and ended_at is not None and after - before < 100,
    )


# -- create vs no-op ------------------------------------------------------------------------


def run_create(args: argparse.Namespace) -> None:
    api, port = base.start(base.serve_api, None)
    noop, noop_port = base.start(base.serve_noop)
    try:
        url = f"http://127.0.0.1:{port}"
        asyncio.run(base.setup(url))
        body = orjson.dumps(base.database())
        path = f"/apis/{base.GV}/namespaces/bench/databases"
        rates = []
        for _ in range(3):
            noop_rate = base.wrk(
                f"http://127.0.0.1:{noop_port}{path}", 32, args.duration, "POST", body
            )
            api_rate = base.wrk(url + path, 32, args.duration, "POST", body)
            rates.append((api_rate / noop_rate, api_rate, noop_rate))
        worst = min(r[0] for r in rates)
        text = ", ".join(f"{r[0]:.2f}x ({r[1]:,.0f}/{r[2]:,.0f})" for r in rates)
        line("create (POST Database) vs no-op, 3 runs", text, ">= 0.15x every run", worst >= 0.15)
    finally:
        stop_server(api)
        stop_server(noop)


# -- manager --------------------------------------------------------------------------------

MANAGER = """
import asyncio, os, sys, time
from kubewerk.client import Client, ResourceType
from kubewerk.runtime import Manager

GROUP_SIZE = int(sys.argv[4])

def is_socket(fd: str) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    except OSError:
        return False

async def main(config: str, kinds: int) -> None:
    t0 = float(sys.argv[3])
    mgr = Manager(kubeconfig=config, probe_port=None)
    reconciled = set()
    all_done = asyncio.Event()
    async def reconcile(obj, ctx):
        reconciled.add(obj["kind"])
        if len(reconciled) == kinds:
            all_done.set()
        return None
    rts = []
    for i in range(kinds):
        group = f"g{i // GROUP_SIZE}.scale.bench"
        rt = ResourceType(group, "v1", f"Kind{i}", f"kind{i}s")
        rts.append(rt)
        mgr.controller(rt).named(f"kind{i}").complete(reconcile)
    await mgr.start()
    synced = time.time() - t0
    await asyncio.sleep(1.0)
    fds = os.listdir("/proc/self/fd")
    socks = sum(1 for f in fds if is_socket(f))
    rss = 0.0
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    # one object per kind, written by another client: how long until every kind's
    # controller has reconciled its object (every watch streaming)
    writer = Client.from_environment(config)
    sem = asyncio.Semaphore(32)
    async def create(rt):
        async with sem:
            await writer.create(
                {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": "one"},
                 "spec": {"size": 1}},
                "default",
            )
    t1 = time.perf_counter()
    await asyncio.gather(*(create(rt) for rt in rts))
    try:
        await asyncio.wait_for(all_done.wait(), 60)
    except TimeoutError:
        pass
    delivered = time.perf_counter() - t1
    await writer.close()
    print(f"{synced:.3f} {rss:.1f} {socks} {len(reconciled)} {delivered:.3f}", flush=True)
    await mgr.stop()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def run_manager(args: argparse.Namespace, work: Path) -> None:
    proc, url, _ = start_server("memory")
    try:
        crds = [small_crd(i) for i in range(args.kinds)]
        asyncio.run(post_all(url, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crds))
        asyncio.run(wait_served(url, args.kinds))
        config = kubeconfig(url, work / "manager-kubeconfig")
        script = work / "manager.py"
        script.write_text(MANAGER)
        out = subprocess.run(
            [PY, str(script), str(config), str(args.kinds), repr(time.time()), str(GROUP_SIZE)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if out.returncode != 0:
            line(f"Manager with {args.kinds:,} kinds", "failed", "", False)
            print(out.stderr[-3000:])
            return
        synced, mib, socks, reconciled, delivered = out.stdout.split()
        line(
            f"Manager with {args.kinds:,} watched kinds (no objects)",
            f"synced {float(synced):.2f} s, RSS {float(mib):.0f} MiB",
            "<= 10 s; <= 200 MB",
            float(synced) <= 10 and float(mib) * 1.048576 <= 200,
        )
        line("  manager sockets open", socks, "", None)
        line(
            "  one object per kind: every kind reconciled",
            f"{int(reconciled):,} of {args.kinds:,} kinds in {float(delivered):.2f} s",
            "all",
            int(reconciled) == args.kinds,
        )
        line("  server RSS", f"{rss(proc):,.0f} MiB", "", None)
    finally:
        stop_server(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--crds", type=int, default=5000)
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--kinds", type=int, default=1000)
    parser.add_argument(
        "--watch-procs", type=int, default=2, help="client processes for the watchers case"
    )
    parser.add_argument(
        "--watch-client",
        default="raw,aiohttp",
        help="watchers case, comma-separated, each run on a new server: raw (bare protocols "
        "noting arrival times, decoding after the run) and/or aiohttp (streams decoding each "
        "event as it comes)",
    )
    parser.add_argument(
        "--skip-stuck", action="store_true", help="watchers case: leave out the stuck watcher"
    )
    parser.add_argument(
        "--fanout-writes", type=int, default=300, help="commits timed in the fanout case"
    )
    parser.add_argument("--duration", type=int, default=3, help="seconds per wrk run")
    parser.add_argument(
        "--settle", type=float, default=0.0, help="seconds to wait between registering and kubectl"
    )
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated cases")
    args = parser.parse_args()
    cases = set(args.only.split(","))
    print(f"{'case':<52} {'measured':<34} {'target':<22}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kubewerk-scale-") as tmp:
        work = Path(tmp)
        if cases & {"kinds", "kubectl", "restart"}:
            run_kinds(args, work, cases)
        if "objects" in cases:
            run_objects(args)
        if "stores" in cases:
            run_stores(args, work)
        if "watchers" in cases:
            run_watchers(args)
        if "fanout" in cases:
            run_fanout(args)
        if "create" in cases:
            run_create(args)
        if "manager" in cases:
            run_manager(args, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
