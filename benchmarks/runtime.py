"""Controller runtime benchmark: kubewerk vs kopf vs a bare status-patch client.

One embedded API server (memory store, its own process). N custom resources per
contender, each in its own namespace; a reconcile reads ``spec.value`` and writes
``status.observed``. Each operator runs in its own process, started after its objects
exist; the driver watches the objects and records when every one carries
``status.observed == spec.value``.

Reported per contender: time to converge (from process spawn, so start-up and the
initial list are included), the steady reconcile rate (objects / time between the
first and the last status write the driver saw), and the operator process's peak RSS
(``ru_maxrss`` from ``wait4``). Baselines: two bare clients merge-patching the
``/status`` of N objects with the same concurrency, on the same server, in the same run,
run and measured exactly as the operators are: each its own process (on uvloop, as
``kubewerk run``), rate from the first to the last write the driver's watch saw. One is
aiohttp, the other kubewerk's own HTTP/1.1 pool (``kubewerk.client.transport``) used
bare, with no informer, queue or client layer; "vs raw" divides by the faster of the two
in each round. Each bare client also reports the CPU time its process spent per PATCH
(``time.process_time`` around the patch loop: the client's own cost, start-up excluded).
The machine has 2 cores and the server, the contender and the driver's watch share them,
so a baseline timed inside the driver with nobody watching would be measured under
lighter load than the operators; that older (aiohttp) figure is printed too, for comparison.

    .venv/bin/python benchmarks/runtime.py                 # -n 2000 --concurrency 16
    .venv/bin/python benchmarks/runtime.py -n 500 --no-kopf

kopf runs with its defaults (``--standalone``; it also stores its last-handled
configuration in an annotation, one extra patch per object, which is how kopf works),
except that event posting is switched off, since the kubewerk reconcile posts none.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kubewerk.client import Client, ResourceType
from kubewerk.client.watch import Listed, list_watch

GROUP = "bench.kubewerk.dev"
BENCH = ResourceType(GROUP, "v1", "Bench", "benches")
PY = sys.executable

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"benches.{GROUP}"},
    "spec": {
        "group": GROUP,
        "names": {
            "kind": "Bench",
            "plural": "benches",
            "singular": "bench",
            "listKind": "BenchList",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"value": {"type": "integer"}},
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

SERVER = textwrap.dedent(
    """
    import asyncio, sys, uvloop
    from kubewerk.apiserver.server import EmbeddedServer
    async def main():
        async with EmbeddedServer("memory") as srv:
            srv.write_kubeconfig(sys.argv[1])
            print(srv.url, flush=True)
            await asyncio.Event().wait()
    uvloop.run(main())
    """
)

KUBEWERK_OPERATOR = textwrap.dedent(
    """
    import os
    from kubewerk.client import ResourceType
    from kubewerk.runtime import GENERATION_CHANGED, Context, Manager, Result

    BENCH = ResourceType("bench.kubewerk.dev", "v1", "Bench", "benches")
    manager = Manager(namespaces=[os.environ["BENCH_NAMESPACE"]], probe_port=None)

    if os.environ.get("BENCH_TRACING") == "1":  # --tracing: spans made, batched, dropped
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor, SpanExporter, SpanExportResult,
        )
        from kubewerk.observe import tracing

        class Discard(SpanExporter):
            def export(self, spans):
                return SpanExportResult.SUCCESS

        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

        ratio = float(os.environ.get("BENCH_TRACING_RATIO", "1"))
        provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(ratio)))
        provider.add_span_processor(BatchSpanProcessor(Discard()))
        assert tracing.instrument(provider)

    @manager.reconciler(BENCH, predicates=[GENERATION_CHANGED],
                        max_concurrent_reconciles=int(os.environ["BENCH_CONCURRENCY"]))
    async def reconcile(obj: dict, ctx: Context) -> Result:
        obj.setdefault("status", {})["observed"] = obj["spec"]["value"]
        await ctx.patch_status(obj)
        return Result()
    """
)

# In the scripts below, a backslash ending a line joins it with the next (the string
# keeps the script's long lines as they were).
RAW_PATCHER = textwrap.dedent(
    """
    import asyncio, os, signal, sys, time
    import aiohttp, orjson, uvloop
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the driver's SIGTERM may race the CPU \
report; we exit when done

    async def main():
        url, ns, n, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        sem = asyncio.Semaphore(concurrency)
        headers = {"Content-Type": "application/merge-patch+json"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100)) as http:
            async def one(i):
                async with sem:
                    path = f"{url}/apis/bench.kubewerk.dev/v1/namespaces/{ns}/benches/\
b{i:05d}/status"
                    async with http.patch(path, data=orjson.dumps({"status": {"observed": i}}), \
headers=headers) as resp:
                        await resp.read()
                        if resp.status != 200:
                            raise SystemExit(f"raw patch failed: HTTP {resp.status}")
            cpu = time.process_time()
            await asyncio.gather(*(one(i) for i in range(n)))
            print(f"cpu_us_per_patch {(time.process_time() - cpu) / n * 1e6:.1f}", flush=True)

    uvloop.run(main())
    """
)

# The same PATCH loop on kubewerk's HTTP/1.1 pool, bare: request bytes built by hand as
# the client builds them (Host, User-Agent, Accept, Content-Type, Content-Length).
RAW_TRANSPORT_PATCHER = textwrap.dedent(
    """
    import asyncio, signal, sys, time
    from urllib.parse import urlsplit
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as the aiohttp patcher
    import orjson, uvloop
    from kubewerk.client.transport import ConnectionPool

    async def main():
        url, ns, n, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        parts = urlsplit(url)
        pool = ConnectionPool(parts.hostname, parts.port, limit=100)
        prefix = f"Host: {parts.netloc}\\r\\nUser-Agent: raw\\r\\nAccept: application/json\\r\\n"
        sem = asyncio.Semaphore(concurrency)

        async def one(i):
            async with sem:
                body = orjson.dumps({"status": {"observed": i}})
                head = (f"PATCH /apis/bench.kubewerk.dev/v1/namespaces/{ns}/benches/b{i:05d}/\
status HTTP/1.1\\r\\n{prefix}"
                        f"Content-Type: application/merge-patch+json\\r\\n\
Content-Length: {len(body)}\\r\\n\\r\\n")
                resp = await pool.request(head.encode() + body, safe=False, timeout=60)
                if resp.status != 200:
                    raise SystemExit(f"raw transport patch failed: HTTP {resp.status}")

        cpu = time.process_time()
        await asyncio.gather(*(one(i) for i in range(n)))
        print(f"cpu_us_per_patch {(time.process_time() - cpu) / n * 1e6:.1f}", flush=True)
        await pool.close()

    uvloop.run(main())
    """
)

KOPF_OPERATOR = textwrap.dedent(
    """
    import kopf

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.posting.enabled = False

    @kopf.on.create("bench.kubewerk.dev", "v1", "benches")
    def create(spec, patch, **_):
        patch.status["observed"] = spec["value"]
    """
)


class Tracker:
    """Follows the objects of one namespace and records when all have converged."""

    def __init__(self, client: Client, namespace: str, n: int) -> None:
        self.client = client
        self.namespace = namespace
        self.n = n
        self.done: set[str] = set()
        self.first_write: float | None = None
        self.converged = asyncio.Event()
        self.converged_at = 0.0

    def _see(self, obj: dict[str, Any]) -> None:
        status = obj.get("status") or {}
        if "observed" in status and status["observed"] == obj["spec"]["value"]:
            if self.first_write is None:
                self.first_write = time.perf_counter()
            self.done.add(obj["metadata"]["name"])
            if len(self.done) >= self.n and not self.converged.is_set():
                self.converged_at = time.perf_counter()
                self.converged.set()

    async def run(self) -> None:
        async for item in list_watch(self.client, BENCH, self.namespace):
            if isinstance(item, Listed):
                for obj in item.items:
                    self._see(obj)  # type: ignore[arg-type]
            elif item.type in ("ADDED", "MODIFIED"):
                self._see(item.object)


async def create_objects(client: Client, namespace: str, n: int, concurrency: int) -> None:
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await client.create(
                {
                    "apiVersion": f"{GROUP}/v1",
                    "kind": "Bench",
                    "metadata": {"name": f"b{i:05d}", "namespace": namespace},
                    "spec": {"value": i},
                }
            )

    await asyncio.gather(*(one(i) for i in range(n)))


def wait4(proc: subprocess.Popen[bytes]) -> tuple[int, int]:
    """Reap the child; returns (exit status, peak RSS in KiB)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = status
    return status, usage.ru_maxrss


async def run_operator(
    client: Client,
    name: str,
    argv: list[str],
    env: dict[str, str],
    namespace: str,
    n: int,
    timeout: float,
) -> dict[str, Any]:
    tracker = Tracker(client, namespace, n)
    watcher = asyncio.create_task(tracker.run())
    await asyncio.sleep(0.5)  # the tracker has listed
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:  # the bare clients print their CPU per PATCH
        proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=out, stderr=subprocess.PIPE)
        try:
            await asyncio.wait_for(tracker.converged.wait(), timeout)
            ok = True
        except TimeoutError:
            ok = False
        finally:
            proc.send_signal(signal.SIGTERM)
            loop = asyncio.get_running_loop()
            try:
                _, rss = await asyncio.wait_for(loop.run_in_executor(None, wait4, proc), 40)
            except TimeoutError:
                proc.kill()
                _, rss = wait4(proc)
            watcher.cancel()
        out.seek(0)
        printed = out.read().decode(errors="replace").splitlines()
    converge = (tracker.converged_at or time.perf_counter()) - t0
    steady = (
        (tracker.converged_at - tracker.first_write) if ok and tracker.first_write else float("nan")
    )
    cpu = float("nan")
    for line in printed:
        if line.startswith("cpu_us_per_patch "):
            cpu = float(line.split()[1])
    return {
        "name": name,
        "ok": ok,
        "done": len(tracker.done),
        "converge_s": converge,
        "rate": n / steady if steady and steady > 0 else float("nan"),
        "rss_mib": rss / 1024,
        "cpu_us": cpu,
    }


async def raw_patch_rate(url: str, namespace: str, n: int, concurrency: int) -> float:
    """A bare aiohttp client in the driver process merge-patching /status of n existing
    objects, timed in-process with nobody watching (the baseline before it ran as its own
    observed process; printed for comparison)."""
    sem = asyncio.Semaphore(concurrency)
    headers = {"Content-Type": "application/merge-patch+json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100)) as http:

        async def one(i: int) -> None:
            async with sem:
                path = f"{url}/apis/{GROUP}/v1/namespaces/{namespace}/benches/b{i:05d}/status"
                async with http.patch(
                    path, data=orjson.dumps({"status": {"observed": i}}), headers=headers
                ) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"raw patch failed: HTTP {resp.status}")

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return n / (time.perf_counter() - t0)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=2000, help="custom resources per contender")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=16,
        help="max concurrent reconciles / raw patches in flight",
    )
    parser.add_argument("--no-kopf", action="store_true")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--repeat", type=int, default=3, help="rounds (medians are reported)")
    parser.add_argument(
        "--tracing",
        action="store_true",
        help="also run the kubewerk operator with OpenTelemetry tracing on (kubewerk[otel]: "
        "a span per reconcile and per request, batched to an exporter that drops them) "
        "and report its rate against the untraced run of the same round",
    )
    parser.add_argument(
        "--tracing-ratio",
        type=float,
        default=1.0,
        help="with --tracing: the share of reconciles sampled (default 1: every one)",
    )
    parser.add_argument(
        "--tracing-control",
        action="store_true",
        help="with --tracing: run the second kubewerk operator untraced too (an A/A run: "
        "what its place in the round costs by itself)",
    )
    args = parser.parse_args()
    n = args.n

    tmp = Path(tempfile.mkdtemp(prefix="kubewerk-bench-"))
    kubeconfig = tmp / "kubeconfig"
    (tmp / "kw_operator.py").write_text(KUBEWERK_OPERATOR)
    (tmp / "kopf_operator.py").write_text(KOPF_OPERATOR)
    (tmp / "raw_patcher.py").write_text(RAW_PATCHER)
    (tmp / "raw_transport_patcher.py").write_text(RAW_TRANSPORT_PATCHER)
    server = subprocess.Popen(
        [PY, "-c", SERVER, str(kubeconfig)], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    try:
        async with Client.from_url(url, timeout=120) as client:
            await client.create(CRD)
            for _ in range(500):
                crd = await client.get(
                    ResourceType(
                        "apiextensions.k8s.io",
                        "v1",
                        "CustomResourceDefinition",
                        "customresourcedefinitions",
                        False,
                    ),
                    CRD["metadata"]["name"],
                )
                if any(
                    c["type"] == "Established" and c["status"] == "True"
                    for c in (crd.get("status") or {}).get("conditions", [])
                ):
                    break
                await asyncio.sleep(0.02)
            rounds: list[dict[str, Any]] = []
            env = {
                "KUBECONFIG": str(kubeconfig),
                "PYTHONPATH": f"{tmp}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            }
            for r in range(args.repeat):
                namespaces = {
                    k: f"bench-{k}-{r}"
                    for k in ("inproc", "raw", "rawkw", "kubewerk", "kopf", "traced")
                }
                for key, ns in namespaces.items():
                    if (key != "kopf" or not args.no_kopf) and (key != "traced" or args.tracing):
                        await create_objects(client, ns, n, 32)
                row: dict[str, Any] = {
                    "inproc": await raw_patch_rate(url, namespaces["inproc"], n, args.concurrency)
                }
                # the two bare clients: aiohttp, then kubewerk's transport used bare
                for ns_key, name, script, which in (
                    ("raw", "raw", "raw_patcher.py", "aiohttp"),
                    ("rawkw", "raw-transport", "raw_transport_patcher.py", "transport"),
                ):
                    raw_run = await run_operator(
                        client,
                        name,
                        [
                            PY,
                            str(tmp / script),
                            url,
                            namespaces[ns_key],
                            str(n),
                            str(args.concurrency),
                        ],
                        env,
                        namespaces[ns_key],
                        n,
                        args.timeout,
                    )
                    if not raw_run["ok"]:
                        raise RuntimeError(f"the {name} patcher did not patch every object")
                    row[f"raw_{which}"] = raw_run["rate"]
                    row[f"cpu_{which}"] = raw_run["cpu_us"]
                row["raw"] = max(row["raw_aiohttp"], row["raw_transport"])  # the stricter baseline
                row["kubewerk"] = await run_operator(
                    client,
                    "kubewerk",
                    [
                        PY,
                        "-m",
                        "kubewerk.cli",
                        "run",
                        "kw_operator:manager",
                        "--probe-address",
                        "0",
                        "--log-level",
                        "warning",
                    ],
                    {
                        **env,
                        "BENCH_NAMESPACE": namespaces["kubewerk"],
                        "BENCH_CONCURRENCY": str(args.concurrency),
                    },
                    namespaces["kubewerk"],
                    n,
                    args.timeout,
                )
                if args.tracing:
                    row["traced"] = await run_operator(
                        client,
                        "kubewerk+otel",
                        [
                            PY,
                            "-m",
                            "kubewerk.cli",
                            "run",
                            "kw_operator:manager",
                            "--probe-address",
                            "0",
                            "--log-level",
                            "warning",
                        ],
                        {
                            **env,
                            "BENCH_NAMESPACE": namespaces["traced"],
                            "BENCH_CONCURRENCY": str(args.concurrency),
                            "BENCH_TRACING": "0" if args.tracing_control else "1",
                            "BENCH_TRACING_RATIO": str(args.tracing_ratio),
                        },
                        namespaces["traced"],
                        n,
                        args.timeout,
                    )
                if not args.no_kopf:
                    kopf_bin = str(Path(PY).parent / "kopf")
                    row["kopf"] = await run_operator(
                        client,
                        "kopf",
                        [
                            kopf_bin,
                            "run",
                            "--standalone",
                            "--namespace",
                            namespaces["kopf"],
                            "--quiet",
                            str(tmp / "kopf_operator.py"),
                        ],
                        env,
                        namespaces["kopf"],
                        n,
                        args.timeout,
                    )
                rounds.append(row)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()

    print(
        f"{n} custom resources per contender; reconcile = read spec.value, patch status.observed; "
        f"concurrency {args.concurrency}; median of {args.repeat} rounds (all rounds below)"
    )
    raw = statistics.median(r["raw"] for r in rounds)
    raw_aiohttp = statistics.median(r["raw_aiohttp"] for r in rounds)
    raw_transport = statistics.median(r["raw_transport"] for r in rounds)
    inproc = statistics.median(r["inproc"] for r in rounds)
    cpu_aiohttp = statistics.median(r["cpu_aiohttp"] for r in rounds)
    cpu_transport = statistics.median(r["cpu_transport"] for r in rounds)
    print(
        "raw status-patch rate (bare client, own process, observed like the operators): "
        f"aiohttp {raw_aiohttp:,.0f}/s, kubewerk transport {raw_transport:,.0f}/s; "
        f"the faster per round (the 'vs raw' baseline): {raw:,.0f}/s"
    )
    print(f"(the aiohttp client timed inside the driver with nobody watching: {inproc:,.0f}/s)")
    print(
        f"client CPU per status PATCH (bare clients, loop only): aiohttp {cpu_aiohttp:.0f} us, "
        f"kubewerk transport {cpu_transport:.0f} us"
    )
    print()
    print(
        f"{'operator':<10} {'converged':>10} {'time':>8} "
        f"{'reconciles/s':>13} {'vs raw':>7} {'peak RSS':>10}"
    )
    medians: dict[str, dict[str, float]] = {}
    for name in ("kubewerk", "kopf"):
        runs = [r[name] for r in rounds if name in r]
        if not runs:
            continue
        ok = all(x["ok"] for x in runs)
        med = {k: statistics.median(x[k] for x in runs) for k in ("converge_s", "rate", "rss_mib")}
        med["vs_raw"] = statistics.median(
            x["rate"] / r["raw"] for x, r in zip(runs, rounds, strict=True)
        )
        medians[name] = med
        flag = "yes" if ok else "NO"
        med["vs_inproc"] = statistics.median(
            x["rate"] / r["inproc"] for x, r in zip(runs, rounds, strict=True)
        )
        print(
            f"{name:<10} {flag:>10} {med['converge_s']:>7.2f}s {med['rate']:>13,.0f} "
            f"{med['vs_raw']:>6.2f}x {med['rss_mib']:>8.1f}MiB   "
            f"({med['vs_inproc']:.2f}x the unobserved in-driver rate)"
        )
    traced_runs = [r["traced"] for r in rounds if "traced" in r]
    if traced_runs:
        ratios = [r["traced"]["rate"] / r["kubewerk"]["rate"] for r in rounds if "traced" in r]
        print()
        print(
            (
                "A/A control (the second kubewerk run untraced): "
                if args.tracing_control
                else f"tracing on (a span per reconcile and per request, sampled "
                f"{args.tracing_ratio:.0%}): "
            )
            + f"{statistics.median(x['rate'] for x in traced_runs):,.0f} reconciles/s, "
            f"{statistics.median(ratios):.2f}x the untraced rate of the same round "
            f"(rounds: {', '.join(f'{x:.2f}x' for x in ratios)}); "
            f"converged: {'yes' if all(x['ok'] for x in traced_runs) else 'NO'}"
        )
    if "kopf" in medians:
        kw, kp = medians["kubewerk"], medians["kopf"]
        print()
        print(
            f"kubewerk vs kopf: {kp['converge_s'] / kw['converge_s']:.1f}x "
            f"faster to converge, {kw['rate'] / kp['rate']:.1f}x the reconcile "
            f"rate, {kw['rss_mib'] / kp['rss_mib']:.2f}x the peak RSS"
        )
        print(f"(the server's own ceiling, raw rate / kopf rate, is {raw / kp['rate']:.1f}x)")
    print()
    print(
        "rounds: "
        + "; ".join(
            f"raw aiohttp {r['raw_aiohttp']:,.0f}/s ({r['cpu_aiohttp']:.0f} us CPU/patch, "
            f"unobserved {r['inproc']:,.0f}/s), raw transport {r['raw_transport']:,.0f}/s "
            f"({r['cpu_transport']:.0f} us CPU/patch), kubewerk {r['kubewerk']['converge_s']:.2f}s "
            f"{r['kubewerk']['rate']:,.0f}/s"
            + (
                f", kopf {r['kopf']['converge_s']:.2f}s {r['kopf']['rate']:,.0f}/s"
                if "kopf" in r
                else ""
            )
            for r in rounds
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
