"""Webhook server benchmark: kubewerk.webhook against a no-op ASGI app on the same stack.

Starts, each in its own process on uvloop, a :class:`kubewerk.webhook.WebhookServer`
(a validating and a mutating webhook for a typed ``Database`` model) and
``benchmarks/noop_app.py`` on the same uvicorn + httptools configuration, both over TLS
(a certificate from ``kubewerk.webhook.make_certificates``) and over plain HTTP, then
drives each with the same AdmissionReview body (a ``Database`` as kube-apiserver sends
it, server-set metadata and managedFields included, ~1.3 KB) and prints requests/s and
the ratio to the no-op app's rate for the same transport in this run:

- validate: parse the review, the model, call the handler, answer allowed;
- mutate: the same plus the model's dump before and after, the JSON Patch and its check;
- patch: the opt-in patching contract (``app.patching``): validate's work plus the
  handler's recorded operation, its check and the encoded patch (no dumps, no diff).

Load comes from ``wrk`` (keep-alive, ``-c`` connections, one thread; TLS sessions are
set up once per connection). Target (issue 14): the webhook answers >= 0.5x the no-op
handler's rate.

Each row alternates ``--rounds`` runs of the no-op app and the webhook (the order
flipped every round) and reports the round with the median ratio. Beside the rates it
prints each server process's CPU time per answered request (user + system, from
``/proc``, over the same runs): on a machine shared with other work the rates move with
the load, while CPU per request barely does, so ``no-op CPU / webhook CPU`` is the rate
ratio the webhook would reach with a core of its own.

``--in-process`` calls the ASGI apps directly (no HTTP, no wrk): per-request CPU
microseconds of the no-op app, validate, mutate and patch, in alternating batches (the minimum
and median batch), and with ``--profile [validate|mutate|patch]`` where one case's time
goes.

    .venv/bin/python benchmarks/webhook.py [-c 32] [-d 5] [-r 3]
    .venv/bin/python benchmarks/webhook.py --in-process [-n 200] [-r 300] [--profile [CASE]]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Annotated, Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
GROUP = "bench.webhook.kubewerk.dev"
VALIDATE = f"/validate-{GROUP.replace('.', '-')}-v1-database"
MUTATE = f"/mutate-{GROUP.replace('.', '-')}-v1-database"
PATCH = f"/patch-{GROUP.replace('.', '-')}-v1-database"


def review() -> bytes:
    obj = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Database",
        "metadata": {
            "name": "orders",
            "namespace": "shop",
            "uid": str(uuid.uuid4()),
            "creationTimestamp": "2025-01-02T03:04:05Z",
            "generation": 1,
            "labels": {"app": "orders", "tier": "db"},
            "managedFields": [
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": f"{GROUP}/v1",
                    "time": "2025-01-02T03:04:05Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {".": {}, "f:engine": {}, "f:storageGi": {}}},
                }
            ],
        },
        "spec": {"engine": "postgres", "version": "16", "storageGi": 10, "tags": ["a", "b"]},
    }
    gvk = {"group": GROUP, "version": "v1", "kind": "Database"}
    gvr = {"group": GROUP, "version": "v1", "resource": "databases"}
    body = {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": "orders",
            "namespace": "shop",
            "operation": "CREATE",
            "userInfo": {
                "username": "kubernetes-admin",
                "groups": ["system:masters", "system:authenticated"],
            },
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {
                "kind": "CreateOptions",
                "apiVersion": "meta.k8s.io/v1",
                "fieldManager": "kubectl",
            },
        },
    }
    return orjson.dumps(body)


def build_app() -> Any:
    from pydantic import Field

    from kubewerk.model import KubeModel, Resource
    from kubewerk.webhook import AdmissionRequest, Allowed, Denied, Patch, WebhookApp

    class DatabaseSpec(KubeModel):
        engine: str
        version: str | None = None
        storage_gi: Annotated[int, Field(ge=1, le=1000)] | None = None
        replicas: int | None = None
        tags: list[str] | None = None

    class Database(Resource[DatabaseSpec, None], group=GROUP, version="v1"):
        """A database."""

    app = WebhookApp()

    @app.validating(Database)
    async def check(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed | Denied:
        if db.spec.engine not in ("postgres", "mysql"):
            return Denied(f"engine {db.spec.engine!r} is not supported")
        return Allowed()

    @app.mutating(Database)
    async def default(db: Database, old: Database | None, req: AdmissionRequest) -> None:
        if db.spec.replicas is None:
            db.spec.replicas = 1

    @app.patching(Database, PATCH)
    async def default_fast(
        db: Database, old: Database | None, req: AdmissionRequest, patch: Patch
    ) -> None:
        if db.spec.replicas is None:
            patch.set(("spec", "replicas"), 1)

    return app


def _listen() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    return sock


def serve_webhook(port_q: Any, cert: str | None, key: str | None) -> None:
    import uvloop

    from kubewerk.webhook import WebhookServer

    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    server = WebhookServer(build_app(), host="127.0.0.1", port=0, cert_file=cert, key_file=key)

    async def main() -> None:
        await server.start()
        port_q.put(server.port)
        await asyncio.Event().wait()

    loop.run_until_complete(main())


def serve_noop(port_q: Any, cert: str | None, key: str | None) -> None:
    """The no-op app on the webhook server's uvicorn configuration."""
    import uvicorn
    import uvloop

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from noop_app import app

    sock = _listen()
    config = uvicorn.Config(
        app,
        http="httptools",
        loop="none",
        lifespan="off",
        log_config=None,
        access_log=False,
        proxy_headers=False,
        backlog=2048,
        ssl_certfile=cert,
        ssl_keyfile=key,
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    url: str, pid: int, connections: int, duration: int, body: bytes
) -> tuple[float, float]:
    """(requests/s, server CPU µs per request) of one wrk run against process ``pid``."""
    before = cpu_seconds(pid)
    rate, count = wrk(url, connections, duration, body)
    return rate, (cpu_seconds(pid) - before) / max(count, 1) * 1e6


def wrk(url: str, connections: int, duration: int, body: bytes) -> tuple[float, int]:
    """(requests/s, requests) from one wrk thread POSTing ``body``; fails on any non-2xx
    answer."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write('wrk.method = "POST"\n')
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
        raise RuntimeError(f"{bad.group(1)} non-2xx answers from {url}:\n{out}")
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    count = re.search(r"(\d+) requests in", out)
    if match is None or count is None:
        raise RuntimeError(out)
    return float(match.group(1)), int(count.group(1))


def check_answers(port: int, scheme: str, body: bytes) -> None:
    """One request per path, answered as expected (before measuring anything)."""
    import ssl
    import urllib.request

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    for path, key in ((VALIDATE, "allowed"), (MUTATE, "patch"), (PATCH, "patch")):
        req = urllib.request.Request(
            f"{scheme}://127.0.0.1:{port}{path}", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, context=ctx if scheme == "https" else None) as answer:
            response = orjson.loads(answer.read())["response"]
        if not response.get(key):
            raise RuntimeError(f"{path}: unexpected answer {response}")


def _flags() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("-c", "--connections", type=int, default=32)
    parser.add_argument("-d", "--duration", type=int, default=5)
    parser.add_argument(
        "-r", "--rounds", type=int, default=None, help="alternating rounds (3; in-process 300)"
    )
    parser.add_argument(
        "--in-process", action="store_true", help="no HTTP: call the ASGI apps directly"
    )
    parser.add_argument("-n", type=int, default=200, help="requests per in-process batch")
    parser.add_argument(
        "--profile",
        nargs="?",
        const="mutate",
        choices=("validate", "mutate", "patch"),
        help="in-process: cProfile of one case's requests (mutate when not named)",
    )
    return parser.parse_args()


def main() -> int:
    args = _flags()
    sys.path.insert(0, str(ROOT / "src"))
    if args.in_process:
        return in_process(args.n, args.rounds or 300, args.profile)
    rounds_per_row = args.rounds or 3
    if shutil.which("wrk") is None:
        print("wrk not found: apt-get install wrk / brew install wrk", file=sys.stderr)
        return 2
    from kubewerk.webhook import make_certificates, write_certificates

    body = review()
    rows: list[tuple[str, str, float, float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_certificates(make_certificates("bench", "default", days=1), tmp)
        for scheme in ("http", "https"):
            cert, key = (
                (str(paths["cert"]), str(paths["key"])) if scheme == "https" else (None, None)
            )
            noop_proc, noop_port = start(serve_noop, cert, key)
            hook_proc, hook_port = start(serve_webhook, cert, key)
            assert noop_proc.pid is not None and hook_proc.pid is not None
            try:
                check_answers(hook_port, scheme, body)
                for path in (VALIDATE, MUTATE, PATCH):
                    # warm-up, then alternate so drift hits both alike; the row is the
                    # round with the median ratio
                    hook_url = f"{scheme}://127.0.0.1:{hook_port}{path}"
                    noop_url = f"{scheme}://127.0.0.1:{noop_port}{path}"
                    wrk(hook_url, args.connections, 1, body)
                    wrk(noop_url, args.connections, 1, body)
                    rounds = []
                    cpu_ratios = []
                    for i in range(rounds_per_row):
                        hook_run = (hook_url, hook_proc.pid, args.connections, args.duration, body)
                        noop_run = (noop_url, noop_proc.pid, args.connections, args.duration, body)
                        if i % 2 == 0:
                            noop, noop_cpu = measure(*noop_run)
                            hook, hook_cpu = measure(*hook_run)
                        else:
                            hook, hook_cpu = measure(*hook_run)
                            noop, noop_cpu = measure(*noop_run)
                        rounds.append((hook / noop, hook, noop, hook_cpu, noop_cpu))
                        cpu_ratios.append(noop_cpu / hook_cpu)
                    rounds.sort()
                    _, hook, noop, hook_cpu, noop_cpu = rounds[len(rounds) // 2]
                    ratios = " ".join(f"{r[0]:.2f}" for r in rounds)
                    cpu_text = " ".join(f"{r:.2f}" for r in sorted(cpu_ratios))
                    kind = path.split("-")[0].strip("/")
                    print(f"{scheme} {kind}: rate ratios {ratios}; CPU ratios {cpu_text}")
                    rows.append((scheme, kind, hook, noop, hook_cpu, noop_cpu))
            finally:
                for proc in (noop_proc, hook_proc):
                    proc.terminate()
                    proc.join(5)
    print(
        f"AdmissionReview body: {len(body)} bytes; wrk -t1 -c{args.connections} "
        f"-d{args.duration}s; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    print(
        f"{'transport':<10}{'webhook':<10}{'req/s':>9}{'no-op req/s':>13}{'ratio':>7}"
        f"{'CPU µs/req':>12}{'no-op CPU':>11}{'CPU ratio':>11}"
    )
    for scheme, kind, hook, noop, hook_cpu, noop_cpu in rows:
        print(
            f"{scheme:<10}{kind:<10}{hook:>9.0f}{noop:>13.0f}{hook / noop:>6.2f}x"
            f"{hook_cpu:>12.1f}{noop_cpu:>11.1f}{noop_cpu / hook_cpu:>10.2f}x"
        )
    worst = min(hook / noop for _, _, hook, noop, _, _ in rows)
    worst_cpu = min(noop_cpu / hook_cpu for *_, hook_cpu, noop_cpu in rows)
    print(
        f"target >= 0.50x: {'met' if worst >= 0.5 else 'NOT met'} (lowest rate ratio "
        f"{worst:.2f}x, lowest CPU ratio {worst_cpu:.2f}x)"
    )
    return 0


def in_process(batch: int, rounds: int, profile: str | None) -> int:
    """Per-request CPU µs of the no-op app, validate, mutate and patch, called in
    process; then each webhook's CPU beside validate's (medians)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from noop_app import app as noop

    body = review()
    app = build_app()

    def caller(target: Any, path: str) -> Any:
        scope = {
            "type": "http",
            "method": "POST",
            "path": path,
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
        message = {"type": "http.request", "body": body, "more_body": False}
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return message

        async def send(answer: dict[str, Any]) -> None:
            sent.append(answer)

        async def run(n: int) -> float:
            sent.clear()
            began = time.thread_time()
            for _ in range(n):
                await target(scope, receive, send)
            spent = time.thread_time() - began
            if sent[0].get("status") != 200:
                raise RuntimeError(f"{path}: {sent[:2]}")
            return spent / n * 1e6

        return run

    runs = {
        "no-op": caller(noop, VALIDATE),
        "validate": caller(app, VALIDATE),
        "mutate": caller(app, MUTATE),
        "patch": caller(app, PATCH),
    }

    async def measure_all() -> dict[str, list[float]]:
        seen: dict[str, list[float]] = {name: [] for name in runs}
        for run in runs.values():
            await run(batch)  # warm-up
        for _ in range(rounds):
            for name, run in runs.items():
                seen[name].append(await run(batch))
        return seen

    seen = asyncio.run(measure_all())
    print(f"in process, {rounds} alternating batches of {batch} (CPU µs per request):")
    for name, values in seen.items():
        values.sort()
        print(f"  {name:<10}min {values[0]:6.1f}   median {values[len(values) // 2]:6.1f}")
    median = {name: values[len(values) // 2] for name, values in seen.items()}
    print(
        "  median CPU beside validate's: "
        + ", ".join(f"{n} {median[n] / median['validate']:.2f}x" for n in ("mutate", "patch"))
    )
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiled = runs[profile]
        profiler.enable()
        asyncio.run(profiled(20 * batch))
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
