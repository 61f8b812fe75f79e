"""The simulated cluster under load: 1,000 Deployments x 3 replicas created at once.

Measures, against a server process started with ``simulate=`` (10 nodes of 400 pods,
Pods Running 0.5 s after binding):

* the time from the first Deployment create until every Deployment is Available with
  3 available replicas (target <= 20 s on the 2-core machine);
* the server's RSS before and after (VmRSS);
* the create rate of Deployments against the create rate of ConfigMaps in the same run,
  same connections (target: Deployments cost at most 2x a ConfigMap) — the real creates
  share the server with the simulation they set off, so a ``dryRun=All`` create rate
  (admission, defaults and validation only) is printed too;
* the issue's question on its own: real Deployment creates against ConfigMap creates on
  a second server process *without* the simulation, in the same run, alternating the two
  kinds in rounds (so neither meets a larger store or a warmer process than the other);
* with ``--profile PATH``: a third, plain server process runs cProfile while it takes the
  Deployment creates alone; the stats go to PATH and the top functions are printed.

Run: ``.venv/bin/python benchmarks/simulate.py [--deployments N] [--connections C]
[--rounds R] [--profile PATH]``.
Where a workload kind is not served by the tree being measured, a schemaless stand-in
is registered (printed), so the figure is comparable across trees.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import multiprocessing as mp
import pstats
import signal
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

STANDINS = (
    ("", "pods", "Pod", True),
    ("", "nodes", "Node", False),
    ("apps", "deployments", "Deployment", True),
    ("apps", "replicasets", "ReplicaSet", True),
    ("coordination.k8s.io", "leases", "Lease", True),
)


def serve(
    port_q: Any, nodes: int, start_seconds: float, simulate: bool = True, profile: str = ""
) -> None:
    """One server process (``simulate``: with the simulated cluster); ``profile``: run
    cProfile from start-up done to SIGTERM and dump the stats there."""
    from kubewerk.apiserver.registry import ServedResource
    from kubewerk.apiserver.server import EmbeddedServer, new_event_loop
    from kubewerk.apiserver.simulate import SimulationConfig

    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    config = SimulationConfig.with_nodes(
        nodes, cpu="64", memory="256Gi", pods=400, start_seconds=start_seconds
    )
    server = EmbeddedServer("memory", simulate=config if simulate else None)
    standins = []
    for group, resource, kind, namespaced in STANDINS:
        if server.app.registry.get(group, resource) is None:
            standins.append(f"{group or 'core'}/{resource}")
            server.app.registry.add(
                ServedResource(
                    group=group,
                    resource=resource,
                    kind=kind,
                    list_kind=f"{kind}List",
                    singular=kind.lower(),
                    namespaced=namespaced,
                    versions=["v1"],
                    storage_version="v1",
                    status_subresource=True,
                )
            )
    stop = asyncio.Event()

    profiler = cProfile.Profile() if profile else None

    async def main() -> None:
        await server.start()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        if profiler is not None:
            profiler.enable()
        port_q.put((server.port, standins))
        await stop.wait()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)
        await server.stop()

    loop.run_until_complete(main())


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
            },
        },
    }


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}}


async def create_all(
    s: aiohttp.ClientSession, path: str, bodies: list[dict[str, Any]], connections: int
) -> float:
    todo = iter(bodies)

    async def worker() -> None:
        for body in todo:
            async with s.post(
                path, data=orjson.dumps(body), headers={"content-type": "application/json"}
            ) as r:
                assert r.status == 201, await r.text()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    return time.perf_counter() - started


async def run(base: str, n: int, connections: int) -> dict[str, float]:
    conn = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(base, connector=conn) as s:
        for ns in ("cms", "deps"):
            async with s.post(
                "/api/v1/namespaces",
                json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            ) as r:
                assert r.status == 201, await r.text()
        cm_time = await create_all(
            s,
            "/api/v1/namespaces/cms/configmaps",
            [configmap(f"cm-{i:05d}") for i in range(n)],
            connections,
        )
        dry_time = await create_all(
            s,
            "/apis/apps/v1/namespaces/deps/deployments?dryRun=All",
            [deployment(f"d-{i:05d}") for i in range(n)],
            connections,
        )
        started = time.perf_counter()
        dep_time = await create_all(
            s,
            "/apis/apps/v1/namespaces/deps/deployments",
            [deployment(f"d-{i:05d}") for i in range(n)],
            connections,
        )
        while True:
            async with s.get("/apis/apps/v1/namespaces/deps/deployments") as r:
                items = (await r.json(loads=orjson.loads))["items"]
            ready = sum(
                1
                for d in items
                if (d.get("status") or {}).get("availableReplicas") == 3
                and any(
                    c.get("type") == "Available" and c.get("status") == "True"
                    for c in (d.get("status") or {}).get("conditions") or []
                )
            )
            if ready == n:
                break
            await asyncio.sleep(0.25)
        available = time.perf_counter() - started
        async with s.get("/api/v1/pods") as r:
            pods = len((await r.json(loads=orjson.loads))["items"])
    return {
        "configmap_rate": n / cm_time,
        "deployment_rate": n / dep_time,
        "dry_rate": n / dry_time,
        "available_s": available,
        "pods": pods,
    }


async def plain(base: str, n: int, connections: int, rounds: int) -> dict[str, float]:
    """ConfigMap and Deployment creates on a server without the simulation, alternating
    the kinds in ``rounds`` rounds of n/rounds objects each."""
    conn = aiohttp.TCPConnector(limit=connections)
    per = max(1, n // rounds)
    times = {"configmap": 0.0, "deployment": 0.0}
    async with aiohttp.ClientSession(base, connector=conn) as s:
        for ns in ("cms", "deps"):
            async with s.post(
                "/api/v1/namespaces",
                json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            ) as r:
                assert r.status == 201, await r.text()
        # warm-up, not timed: every connection opened, the vendored schemas loaded
        warm = [f"warm-{i}" for i in range(connections)]
        await create_all(
            s, "/api/v1/namespaces/cms/configmaps", [configmap(x) for x in warm], connections
        )
        await create_all(
            s,
            "/apis/apps/v1/namespaces/deps/deployments",
            [deployment(x) for x in warm],
            connections,
        )
        for r in range(rounds):
            names = [f"{r:02d}-{i:05d}" for i in range(per)]
            times["configmap"] += await create_all(
                s,
                "/api/v1/namespaces/cms/configmaps",
                [configmap(f"cm-{x}") for x in names],
                connections,
            )
            times["deployment"] += await create_all(
                s,
                "/apis/apps/v1/namespaces/deps/deployments",
                [deployment(f"d-{x}") for x in names],
                connections,
            )
    return {
        "configmap_rate": per * rounds / times["configmap"],
        "deployment_rate": per * rounds / times["deployment"],
    }


async def deployments_only(base: str, n: int, connections: int) -> float:
    conn = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(base, connector=conn) as s:
        await create_all(s, "/apis/apps/v1/namespaces/default/deployments", [deployment("w")], 1)
        took = await create_all(
            s,
            "/apis/apps/v1/namespaces/default/deployments",
            [deployment(f"d-{i:05d}") for i in range(n)],
            connections,
        )
    return n / took


def start_server(
    ctx: Any, nodes: int, start_seconds: float, simulate: bool, profile: str = ""
) -> tuple[Any, int, list[str]]:
    q = ctx.Queue()
    proc = ctx.Process(target=serve, args=(q, nodes, start_seconds, simulate, profile), daemon=True)
    proc.start()
    port, standins = q.get(timeout=60)
    return proc, port, standins


def stop_server(proc: Any) -> None:
    proc.terminate()
    proc.join(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--start-seconds", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=4, help="alternations on the plain server")
    parser.add_argument("--profile", default="", metavar="PATH", help="profile Deployment creates")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    proc, port, standins = start_server(ctx, args.nodes, args.start_seconds, True)
    try:
        rss_before = rss_mib(proc.pid)
        figures = asyncio.run(run(f"http://127.0.0.1:{port}", args.deployments, args.connections))
        rss_after = rss_mib(proc.pid)
    finally:
        stop_server(proc)
    proc, port, _ = start_server(ctx, args.nodes, args.start_seconds, False)
    try:
        plain_figures = asyncio.run(
            plain(f"http://127.0.0.1:{port}", args.deployments, args.connections, args.rounds)
        )
    finally:
        stop_server(proc)
    print(f"stand-in kinds (not served by this tree): {', '.join(standins) or 'none'}")
    print(
        f"{args.deployments} Deployments x 3 replicas, {args.nodes} nodes, "
        f"{args.connections} connections"
    )
    print(f"  all Available after      {figures['available_s']:.1f} s (target <= 20 s)")
    print(f"  pods                     {figures['pods']}")
    print(f"  ConfigMap creates        {figures['configmap_rate']:.0f}/s")
    print(f"  Deployment creates       {figures['deployment_rate']:.0f}/s")
    ratio = figures["configmap_rate"] / figures["deployment_rate"]
    print(f"  Deployment cost          {ratio:.2f}x a ConfigMap's (target <= 2x)")
    print(
        f"  Deployment dry-run creates {figures['dry_rate']:.0f}/s: "
        f"{figures['configmap_rate'] / figures['dry_rate']:.2f}x a ConfigMap's "
        "(admission alone, no simulation work behind it)"
    )
    print(f"  server RSS               {rss_before:.0f} MiB -> {rss_after:.0f} MiB")
    print(
        f"without the simulation, {args.rounds} alternating rounds of "
        f"{args.deployments // args.rounds} of each kind:"
    )
    print(f"  ConfigMap creates        {plain_figures['configmap_rate']:.0f}/s")
    print(f"  Deployment creates       {plain_figures['deployment_rate']:.0f}/s")
    plain_ratio = plain_figures["configmap_rate"] / plain_figures["deployment_rate"]
    print(f"  Deployment cost          {plain_ratio:.2f}x a ConfigMap's (target <= 2x)")
    if args.profile:
        proc, port, _ = start_server(ctx, args.nodes, args.start_seconds, False, args.profile)
        try:
            rate = asyncio.run(
                deployments_only(f"http://127.0.0.1:{port}", args.deployments, args.connections)
            )
        finally:
            stop_server(proc)
        print(f"profiled plain server: {rate:.0f} Deployment creates/s under cProfile")
        stats = pstats.Stats(args.profile)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
