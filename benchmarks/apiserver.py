"""API server benchmark: the embedded server against a no-op app on the same HTTP stack.

Starts, each in its own process, the embedded API server (memory store, uvicorn +
httptools + uvloop, as ``kubewerk up`` serves it) and ``benchmarks/noop_app.py`` on the
same stack, then measures:

- creates/s (POST of a ``Database`` custom resource with ``generateName``: decode,
  schema defaulting and validation, CEL, storage, watch fan-out) and gets/s (GET of one
  object), each as a ratio to the no-op app's rate for the same request in this run;
- a list of 10,000 objects: time and size of the response;
- watch delivery latency with 100 watchers: each write carries its send time (monotonic
  clock, shared by all processes on Linux) in an annotation; every watcher records the
  delay at receipt; p50 / p99 / max over all deliveries;
- the server's memory (RSS) for 10,000 stored objects (RSS after minus before creating).

The no-op app is served by the server's own HTTP protocol class
(``kubewerk.apiserver.httpproto``: its connection limits and one write per response);
``BENCH_NOOP_HTTP=httptools`` serves it with uvicorn's stock protocol instead, as runs
before 2026-12-01 did.

Throughput is driven by ``wrk`` (keep-alive, ``-c`` connections, one thread) when it is
installed — ``apt-get install wrk`` (Debian/Ubuntu) or ``brew install wrk`` — else by an
aiohttp client process (which is slower than the servers it measures, so its ratios
come out higher than wrk's). Targets (issue 2): create >= 0.4x no-op, get >= 0.7x
no-op, watch p99 < 20 ms.

    .venv/bin/python benchmarks/apiserver.py [-c 32] [-d 5] [--objects 10000] [--watchers 100]
    .venv/bin/python benchmarks/apiserver.py --profile /tmp/api.prof   # cProfile the server
    .venv/bin/python benchmarks/apiserver.py --auth [--rounds 3]  # authn + RBAC on vs off

``--auth`` (issue 15) measures instead GET and create rates of the same server with
authentication (a bearer token from a static token file) and RBAC on — the token's user
is no superuser, so every request is decided by a RoleBinding — against the server with
both off, in alternating rounds of the same run; the median ratio of the rounds is
reported. Target: >= 0.85x for both.

``--ssa`` (issue 16) measures server-side apply of the demo ``Database`` against a merge
patch of the same object (the same document, ``fieldManager=bench``) on the same server,
in alternating rounds: a no-op re-apply of one object, and an apply that creates a new
object per request (a numbered name in the URL), each as a ratio to the merge patch's
rate; the median ratio of the rounds is reported, and the re-applied object's
resourceVersion is checked to be unchanged by the whole re-apply run (a no-op apply
writes nothing). Target: apply >= 0.5x merge patch.

    .venv/bin/python benchmarks/apiserver.py --ssa [--rounds 3] [-d 5]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

ROOT = Path(__file__).resolve().parent.parent
CRD = ROOT / "src" / "kubewerk" / "cli" / "demo_data" / "crd.yaml"
GV = "demo.kubewerk.dev/v1"
STAMP = "bench.kubewerk.dev/sent-ns"


def database(name: str | None = None, **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} if name else {"generateName": "bench-"}
    meta["labels"] = {"app": "bench", "tier": "db"}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": GV,
        "kind": "Database",
        "metadata": meta,
        "spec": {"engine": "postgres", "version": "16", "replicas": 3, "storage": "10Gi"},
    }


def _listen() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    return sock


# -- server processes -----------------------------------------------------------------


def serve_api(port_q: Any, profile: str | None) -> None:
    """The embedded server on uvloop, as ``kubewerk up --store memory`` runs it."""
    from kubewerk.apiserver.server import EmbeddedServer, new_event_loop
    from kubewerk.core.gcpolicy import tune_for_long_lived_data

    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    server = EmbeddedServer("memory")
    stop = asyncio.Event()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()

    async def main() -> None:
        await server.start()
        tune_for_long_lived_data()  # as ``kubewerk up`` does once started
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        port_q.put(server.port)
        if profiler is not None:
            profiler.enable()
        await stop.wait()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)
        await server.stop()

    loop.run_until_complete(main())


def serve_api_secured(port_q: Any, token_file: str) -> None:
    """The embedded server with ``--token-auth-file`` and ``--authorization-mode RBAC``."""
    from kubewerk.apiserver.server import EmbeddedServer, new_event_loop
    from kubewerk.core.gcpolicy import tune_for_long_lived_data

    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    server = EmbeddedServer("memory", token_auth_file=token_file, authorizer="RBAC")
    stop = asyncio.Event()

    async def main() -> None:
        await server.start()
        tune_for_long_lived_data()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        port_q.put(server.port)
        await stop.wait()
        await server.stop()

    loop.run_until_complete(main())


def serve_noop(port_q: Any) -> None:
    """The no-op app on the same uvicorn configuration as ``EmbeddedServer``: the same
    HTTP protocol class (``httpproto``'s limits and one write per response) with the
    server's default limits."""
    import uvicorn
    import uvloop

    from kubewerk.apiserver.httpproto import HttpLimits, protocol_class

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from noop_app import app

    sock = _listen()
    config = uvicorn.Config(
        app,
        lifespan="off",
        http=os.environ.get("BENCH_NOOP_HTTP") or protocol_class(HttpLimits()),
        loop="none",
        log_config=None,
        access_log=False,
        timeout_keep_alive=30,
        backlog=2048,
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    port_q.put(sock.getsockname()[1])
    loop.run_until_complete(server.serve(sockets=[sock]))


def start(target: Any, *args: Any) -> tuple[mp.process.BaseProcess, int]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=target, args=(q, *args), daemon=True)
    proc.start()
    return proc, int(q.get(timeout=30))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


# -- load ---------------------------------------------------------------------------


def wrk(
    url: str,
    connections: int,
    duration: int,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> float:
    """Requests/s from one wrk thread; fails if any answer was not 2xx."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(f'wrk.method = "{method}"\n')
        for name, value in (headers or {}).items():
            script.write(f'wrk.headers["{name}"] = "{value}"\n')
        if body is not None:
            script.write(f"wrk.body = [==[{body.decode()}]==]\n")
            script.write('wrk.headers["Content-Type"] = "application/json"\n')
    try:
        out = subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "-s", script.name, url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(script.name)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise RuntimeError(f"{bad.group(1)} non-2xx answers from {method} {url}:\n{out}")
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if match is None:
        raise RuntimeError(out)
    return float(match.group(1))


def aiohttp_load(
    url: str,
    connections: int,
    duration: int,
    method: str = "GET",
    body: bytes | None = None,
    extra_headers: dict[str, str] | None = None,
) -> float:
    """Requests/s from one aiohttp client process (the fallback when wrk is missing)."""

    async def run() -> float:
        count = 0
        deadline = time.monotonic() + duration
        headers = {"content-type": "application/json"} if body is not None else {}
        headers.update(extra_headers or {})
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections)
        ) as session:

            async def worker() -> None:
                nonlocal count
                while time.monotonic() < deadline:
                    async with session.request(method, url, data=body, headers=headers) as resp:
                        await resp.read()
                        if resp.status >= 300:
                            raise RuntimeError(f"{resp.status} from {method} {url}")
                    count += 1

            started = time.monotonic()
            await asyncio.gather(*(worker() for _ in range(connections)))
            return count / (time.monotonic() - started)

    import uvloop

    return uvloop.run(run())


# -- measurements driven from this process ----------------------------------------------


async def setup(base: str, headers: dict[str, str] | None = None) -> None:
    async with aiohttp.ClientSession(base, headers=headers) as s:
        async with s.post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            json=yaml.safe_load(CRD.read_text()),
        ) as r:
            assert r.status == 201, await r.text()
        for _ in range(500):
            async with s.get(f"/apis/{GV}") as r:
                if r.status == 200:
                    break
            await asyncio.sleep(0.01)
        for ns in ("bench", "list", "watch"):
            async with s.post(
                "/api/v1/namespaces",
                json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            ) as r:
                assert r.status == 201, await r.text()
        async with s.post(f"/apis/{GV}/namespaces/bench/databases", json=database("get-me")) as r:
            assert r.status == 201, await r.text()


async def fill(base: str, ns: str, n: int, connections: int = 32) -> None:
    async with aiohttp.ClientSession(base, connector=aiohttp.TCPConnector(limit=connections)) as s:
        todo = iter(range(n))

        async def worker() -> None:
            for i in todo:
                async with s.post(
                    f"/apis/{GV}/namespaces/{ns}/databases",
                    data=orjson.dumps(database(f"db-{i:05d}")),
                    headers={"content-type": "application/json"},
                ) as r:
                    assert r.status == 201, await r.text()

        await asyncio.gather(*(worker() for _ in range(connections)))


async def list_all(base: str, ns: str, repeat: int = 3) -> tuple[float, int, int]:
    times, size, count = [], 0, 0
    async with aiohttp.ClientSession(base) as s:
        for _ in range(repeat):
            t0 = time.perf_counter()
            async with s.get(f"/apis/{GV}/namespaces/{ns}/databases") as r:
                raw = await r.read()
            times.append(time.perf_counter() - t0)
            size, count = len(raw), len(orjson.loads(raw)["items"])
    return min(times), size, count


def watch_client(
    base: str, watchers: int, rv: str, expected: int, out_q: Any, ready_q: Any
) -> None:
    """``watchers`` watch streams in one process; reports every delivery delay (seconds)."""
    import uvloop

    async def run() -> list[float]:
        delays: list[float] = []
        opened = 0
        async with aiohttp.ClientSession(base, connector=aiohttp.TCPConnector(limit=0)) as s:

            async def one() -> None:
                nonlocal opened
                seen = 0
                params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "120"}
                async with s.get(
                    f"/apis/{GV}/namespaces/watch/databases",
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
                        sent = int(ev["object"]["metadata"]["annotations"][STAMP])
                        delays.append((now - sent) / 1e9)
                        seen += 1

            await asyncio.gather(*(one() for _ in range(watchers)))
        return delays

    out_q.put(uvloop.run(run()))


async def write_stamped(base: str, n: int, interval: float) -> None:
    async with aiohttp.ClientSession(base) as s:
        for i in range(n):
            body = database(f"w-{i:05d}", **{STAMP: str(time.monotonic_ns())})
            async with s.post(
                f"/apis/{GV}/namespaces/watch/databases",
                data=orjson.dumps(body),
                headers={"content-type": "application/json"},
            ) as r:
                assert r.status == 201, await r.text()
            await asyncio.sleep(interval)


BENCH_RBAC = [
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "bench-databases"},
        "rules": [
            {
                "apiGroups": ["demo.kubewerk.dev"],
                "resources": ["databases"],
                "verbs": ["get", "list", "create"],
            }
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "bench-databases", "namespace": "bench"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "bench-databases",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bench"}],
    },
]


async def setup_rbac(base: str, headers: dict[str, str]) -> None:
    """The bench user's ClusterRole and its RoleBinding in ``bench`` (as the admin)."""
    async with aiohttp.ClientSession(base, headers=headers) as s:
        for obj in BENCH_RBAC:
            plural = obj["kind"].lower() + "s"
            ns = f"/namespaces/{obj['metadata']['namespace']}" if plural == "rolebindings" else ""
            url = f"/apis/rbac.authorization.k8s.io/v1{ns}/{plural}"
            async with s.post(url, json=obj) as r:
                assert r.status == 201, await r.text()


def auth_run(args: Any, client: str) -> int:
    """``--auth``: GET and create rates with bearer-token authentication and RBAC on vs
    the same server with both off, alternating rounds (order flipped each round)."""
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens.csv"
        tokens.write_text('bench-admin,admin,1,"system:masters"\nbench-token,bench,2\n')
        plain, plain_port = start(serve_api, None)
        secured, secured_port = start(serve_api_secured, str(tokens))
        admin = {"Authorization": "Bearer bench-admin"}
        user = {"Authorization": "Bearer bench-token"}
        post_body = orjson.dumps(database())
        rounds: list[tuple[float, float, float, float]] = []
        try:
            asyncio.run(setup(f"http://127.0.0.1:{plain_port}"))
            asyncio.run(setup(f"http://127.0.0.1:{secured_port}", admin))
            asyncio.run(setup_rbac(f"http://127.0.0.1:{secured_port}", admin))

            def rates(port: int, headers: dict[str, str] | None) -> tuple[float, float]:
                base = f"http://127.0.0.1:{port}/apis/{GV}/namespaces/bench/databases"
                c, d = args.connections, args.duration
                if client == "wrk":
                    get = wrk(f"{base}/get-me", c, d, headers=headers)
                    create = wrk(base, c, d, "POST", post_body, headers=headers)
                else:
                    get = aiohttp_load(f"{base}/get-me", c, d, extra_headers=headers)
                    create = aiohttp_load(base, c, d, "POST", post_body, headers)
                return get, create

            for i in range(args.rounds):
                if i % 2 == 0:
                    off, on = rates(plain_port, None), rates(secured_port, user)
                else:
                    on, off = rates(secured_port, user), rates(plain_port, None)
                rounds.append((off[0], on[0], off[1], on[1]))
        finally:
            for proc in (plain, secured):
                if proc.pid is not None and proc.is_alive():
                    os.kill(proc.pid, signal.SIGTERM)
                    proc.join(15)
                if proc.is_alive():
                    proc.kill()
    print(
        f"embedded API server (memory store): bearer token + RBAC (a RoleBinding) vs off, "
        f"client: {client} ({args.connections} connections), {os.cpu_count()} CPUs, "
        f"{args.rounds} alternating rounds of {args.duration} s"
    )
    print()
    print(f"{'round':>5} {'GET off':>10} {'GET on':>10} {'ratio':>6} "
          f"{'POST off':>10} {'POST on':>10} {'ratio':>6}")  # fmt: skip
    for i, (g_off, g_on, c_off, c_on) in enumerate(rounds, 1):
        print(
            f"{i:>5} {g_off:10,.0f} {g_on:10,.0f} {g_on / g_off:5.2f}x "
            f"{c_off:10,.0f} {c_on:10,.0f} {c_on / c_off:5.2f}x"
        )
    get_ratio = statistics.median(r[1] / r[0] for r in rounds)
    create_ratio = statistics.median(r[3] / r[2] for r in rounds)
    print()
    print(f"median ratio: GET {get_ratio:.2f}x, create {create_ratio:.2f}x (target >= 0.85x)")
    return 0


APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def patch_load(
    client: str,
    base: str,
    path: str,
    body: bytes,
    content_type: str,
    connections: int,
    duration: int,
    numbered: str | None = None,
) -> float:
    """PATCHes/s of ``body`` to ``base + path`` (``path + numbered + n`` with ``n``
    counting up per request when ``numbered`` is given: a new object each time); fails
    if any answer was not 2xx."""
    if client == "wrk":
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
            script.write(f'wrk.method = "PATCH"\nwrk.body = [==[{body.decode()}]==]\n')
            script.write(f'wrk.headers["Content-Type"] = "{content_type}"\n')
            if numbered is not None:
                head, _, query = path.partition("?")
                script.write(
                    "counter = 0\nrequest = function()\n  counter = counter + 1\n"
                    f'  return wrk.format(nil, "{head}{numbered}" .. counter .. "?{query}")\n'
                    "end\n"
                )
        try:
            out = subprocess.run(
                [
                    "wrk",
                    "-t1",
                    f"-c{connections}",
                    f"-d{duration}s",
                    "-s",
                    script.name,
                    base + path,
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        finally:
            os.unlink(script.name)
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        if bad:
            raise RuntimeError(f"{bad.group(1)} non-2xx answers from PATCH {path}:\n{out}")
        match = re.search(r"Requests/sec:\s+([\d.]+)", out)
        if match is None:
            raise RuntimeError(out)
        return float(match.group(1))

    async def run() -> float:
        count = 0
        deadline = time.monotonic() + duration
        head, _, query = path.partition("?")
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections)
        ) as session:

            async def worker() -> None:
                nonlocal count
                while time.monotonic() < deadline:
                    count += 1
                    url = base + (f"{head}{numbered}{count}?{query}" if numbered else path)
                    headers = {"content-type": content_type}
                    async with session.patch(url, data=body, headers=headers) as resp:
                        await resp.read()
                        if resp.status >= 300:
                            raise RuntimeError(f"{resp.status} from PATCH {url}")

            started = time.monotonic()
            await asyncio.gather(*(worker() for _ in range(connections)))
            return count / (time.monotonic() - started)

    import uvloop

    return uvloop.run(run())


async def resource_version(base: str, path: str) -> str:
    async with aiohttp.ClientSession(base) as s, s.get(path) as r:
        assert r.status == 200, await r.text()
        return str((await r.json())["metadata"]["resourceVersion"])


def ssa_run(args: Any, client: str) -> int:
    """``--ssa``: no-op re-apply and create-by-apply rates of the demo Database against a
    merge patch of the same object, alternating rounds on one server."""
    api, port = start(serve_api, args.profile)
    base = f"http://127.0.0.1:{port}"
    coll = f"/apis/{GV}/namespaces/bench/databases"
    query = "?fieldManager=bench"
    doc = database("ssa-me")
    applied = orjson.dumps(doc)
    merged = orjson.dumps({**doc, "metadata": {**doc["metadata"], "name": "merge-me"}})
    nameless = orjson.dumps({**doc, "metadata": {"labels": doc["metadata"]["labels"]}})
    rounds: list[tuple[float, float, float]] = []
    unchanged: list[bool] = []
    c, d = args.connections, args.duration
    try:
        asyncio.run(setup(base))
        patch_load(client, base, f"{coll}/ssa-me{query}", applied, APPLY, 1, 1)
        asyncio.run(_post(base, coll, database("merge-me")))
        for i in range(args.rounds):

            def merge() -> float:
                return patch_load(client, base, f"{coll}/merge-me{query}", merged, MERGE, c, d)

            def reapply() -> float:
                before = asyncio.run(resource_version(base, f"{coll}/ssa-me"))
                rate = patch_load(client, base, f"{coll}/ssa-me{query}", applied, APPLY, c, d)
                after = asyncio.run(resource_version(base, f"{coll}/ssa-me"))
                unchanged.append(before == after)
                return rate

            def create(prefix: str = f"r{i}-") -> float:
                return patch_load(
                    client, base, f"{coll}/{query}", nameless, APPLY, c, d, numbered=prefix
                )

            if i % 2 == 0:
                m, r, n = merge(), reapply(), create()
            else:
                n, r, m = create(), reapply(), merge()
            rounds.append((m, r, n))
    finally:
        if api.pid is not None and api.is_alive():
            os.kill(api.pid, signal.SIGTERM)
            api.join(15)
        if api.is_alive():
            api.kill()
    print(
        f"embedded API server (memory store): server-side apply of the demo Database vs a "
        f"merge patch of the same object, client: {client} ({c} connections), "
        f"{os.cpu_count()} CPUs, {args.rounds} alternating rounds of {d} s"
    )
    print()
    print(f"{'round':>5} {'merge /s':>10} {'re-apply /s':>12} {'ratio':>6} "
          f"{'apply-create /s':>16} {'ratio':>6}")  # fmt: skip
    for i, (m, r, n) in enumerate(rounds, 1):
        print(f"{i:>5} {m:10,.0f} {r:12,.0f} {r / m:5.2f}x {n:16,.0f} {n / m:5.2f}x")
    print()
    print(
        f"median ratio to merge patch: no-op re-apply "
        f"{statistics.median(r / m for m, r, _ in rounds):.2f}x, create by apply "
        f"{statistics.median(n / m for m, _, n in rounds):.2f}x (target >= 0.5x)"
    )
    print(
        "no-op re-apply wrote nothing (same resourceVersion after every run): "
        + ("yes" if all(unchanged) else "NO")
    )
    return 0 if all(unchanged) else 1


async def _post(base: str, path: str, obj: dict[str, Any]) -> None:
    async with aiohttp.ClientSession(base) as s, s.post(path, json=obj) as r:
        assert r.status == 201, await r.text()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-c", "--connections", type=int, default=32)
    parser.add_argument("-d", "--duration", type=int, default=5, help="seconds per throughput run")
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument(
        "--writes", type=int, default=300, help="stamped writes for the watch latency"
    )
    parser.add_argument("--write-interval", type=float, default=0.01)
    parser.add_argument("--client", choices=("auto", "wrk", "aiohttp"), default="auto")
    parser.add_argument("--profile", help="write a cProfile of the API server to this file")
    parser.add_argument(
        "--auth", action="store_true", help="authentication + RBAC on vs off (issue 15)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds for --auth and --ssa"
    )
    parser.add_argument(
        "--ssa", action="store_true", help="server-side apply vs merge patch (issue 16)"
    )
    args = parser.parse_args()

    client = args.client
    if client == "auto":
        client = "wrk" if shutil.which("wrk") else "aiohttp"
        if client == "aiohttp":
            print(
                "wrk not found (apt-get install wrk / brew "
                "install wrk); using the slower aiohttp client",
                file=sys.stderr,
            )
    load = wrk if client == "wrk" else aiohttp_load
    if args.auth:
        return auth_run(args, client)
    if args.ssa:
        return ssa_run(args, client)

    api, api_port = start(serve_api, args.profile)
    noop, noop_port = start(serve_noop)
    base, nbase = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{noop_port}"
    try:
        asyncio.run(setup(base))
        # memory and list first, on a store holding only the bootstrap objects
        rss_before = rss_mib(api.pid)
        t0 = time.perf_counter()
        asyncio.run(fill(base, "list", args.objects))
        fill_s = time.perf_counter() - t0
        rss_after = rss_mib(api.pid)
        list_s, list_bytes, list_count = asyncio.run(list_all(base, "list"))
        assert list_count == args.objects, list_count

        # watch latency: watchers in their own process, stamped writes from this one
        async def current_rv() -> str:
            async with (
                aiohttp.ClientSession(base) as s,
                s.get(f"/apis/{GV}/namespaces/watch/databases") as r,
            ):
                return str((await r.json())["metadata"]["resourceVersion"])

        rv = asyncio.run(current_rv())
        ctx = mp.get_context("spawn")
        out_q, ready_q = ctx.Queue(), ctx.Queue()
        wproc = ctx.Process(
            target=watch_client, args=(base, args.watchers, rv, args.writes, out_q, ready_q)
        )
        wproc.start()
        ready_q.get(timeout=60)
        time.sleep(0.2)
        asyncio.run(write_stamped(base, args.writes, args.write_interval))
        delays = out_q.get(timeout=120)
        wproc.join(10)

        # throughput, each against the no-op on the same request shape
        post_body = orjson.dumps(database())
        get_url = f"{base}/apis/{GV}/namespaces/bench/databases/get-me"
        noop_get = load(nbase + "/apis/x", args.connections, args.duration)
        get_rate = load(get_url, args.connections, args.duration)
        noop_post = load(nbase + "/apis/x", args.connections, args.duration, "POST", post_body)
        create_rate = load(
            f"{base}/apis/{GV}/namespaces/bench/databases",
            args.connections,
            args.duration,
            "POST",
            post_body,
        )
    finally:
        for proc in (api, noop):
            if proc.pid is not None and proc.is_alive():
                os.kill(proc.pid, signal.SIGTERM)
                proc.join(15)
            if proc.is_alive():
                proc.kill()

    print(
        f"embedded API server (memory store) vs no-op ASGI app, uvicorn+httptools+uvloop, "
        f"client: {client} ({args.connections} connections), {os.cpu_count()} CPUs"
    )
    print()
    print(f"{'measure':34} {'no-op':>12} {'API server':>12} {'ratio':>7} {'target':>8}")
    print(
        f"{'create (POST Database) /s':34} {noop_post:12,.0f} {create_rate:12,.0f} "
        f"{create_rate / noop_post:6.2f}x {'>= 0.4x':>8}"
    )
    print(
        f"{'get (GET Database) /s':34} {noop_get:12,.0f} {get_rate:12,.0f} "
        f"{get_rate / noop_get:6.2f}x {'>= 0.7x':>8}"
    )
    print()
    print(
        f"list of {list_count:,} objects: {list_s * 1000:.0f} ms, {list_bytes / 1e6:.1f} MB "
        f"({list_count / list_s:,.0f} objects/s)"
    )
    print(
        f"memory for {args.objects:,} objects: {rss_after - rss_before:.1f} MiB RSS "
        f"({(rss_after - rss_before) * 1024 * 1024 / args.objects / 1024:.1f} KiB/object; server "
        f"RSS {rss_after:.0f} MiB); filled at {args.objects / fill_s:,.0f} creates/s (aiohttp)"
    )
    print(
        f"watch delivery, {args.watchers} watchers x {args.writes} writes ({len(delays):,} "
        f"deliveries): p50 {percentile(delays, 0.5) * 1000:.1f} ms, p99 "
        f"{percentile(delays, 0.99) * 1000:.1f} ms, max {max(delays) * 1000:.1f} ms, mean "
        f"{statistics.fmean(delays) * 1000:.1f} ms (target p99 < 20 ms)"
    )
    if len(delays) != args.watchers * args.writes:
        print(f"WARNING: expected {args.watchers * args.writes} deliveries, got {len(delays)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
