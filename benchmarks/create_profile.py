"""In-process profile of the embedded API server's create path (no HTTP, no client).

Run:  .venv/bin/python benchmarks/create_profile.py [-n 20000] [--profile] [--top 30]
      [--dump /tmp/create.prof]

Builds ``ApiServer(open_store("memory"))``, installs the demo CRD
(``src/kubewerk/cli/demo_data/crd.yaml``) through an ASGI call, waits until it is
Established, then POSTs ``-n`` ``Database`` objects with ``generateName`` (the body
``benchmarks/apiserver.py`` sends) straight into the ASGI app with a fake
scope/receive/send, and prints the Python time per create: what the server spends per
request beside the HTTP stack. ``--profile`` runs the same loop under cProfile and
prints the functions with the most own time (``--dump`` keeps the stats for snakeviz
or pstats). Each round uses a fresh namespace, so the store grows the same way in every
round; the figure is the best of ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from kubewerk.apiserver.app import ApiServer  # noqa: E402
from kubewerk.apiserver.storage import open_store  # noqa: E402

CRD = ROOT / "src" / "kubewerk" / "cli" / "demo_data" / "crd.yaml"
GV = "demo.kubewerk.dev/v1"
BODY = orjson.dumps(
    {
        "apiVersion": GV,
        "kind": "Database",
        "metadata": {"generateName": "bench-", "labels": {"app": "bench", "tier": "db"}},
        "spec": {"engine": "postgres", "version": "16", "replicas": 3, "storage": "10Gi"},
    }
)


async def call(app: ApiServer, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request through the ASGI interface; returns (status, response body)."""
    scope: dict[str, Any] = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    status = 0
    parts: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            parts.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(parts)


async def setup() -> ApiServer:
    app = ApiServer(open_store("memory"))
    crd = yaml.safe_load(CRD.read_text())
    status, body = await call(
        app, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", orjson.dumps(crd)
    )
    if status != 201:
        raise SystemExit(f"installing the CRD failed: {status} {body[:300]!r}")
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + crd["metadata"]["name"]
    for _ in range(500):
        status, body = await call(app, "GET", path)
        conditions = orjson.loads(body).get("status", {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return app
        await asyncio.sleep(0.01)
    raise SystemExit("the CRD did not become Established")


async def create_many(app: ApiServer, namespace: str, n: int) -> float:
    """POST ``n`` Databases into ``namespace``; returns the seconds taken."""
    status, body = await call(
        app,
        "POST",
        "/api/v1/namespaces",
        orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    if status != 201:
        raise SystemExit(f"creating namespace {namespace} failed: {status} {body[:300]!r}")
    path = f"/apis/{GV}/namespaces/{namespace}/databases"
    gc.collect()
    start = time.perf_counter()
    for _ in range(n):
        status, body = await call(app, "POST", path, BODY)
        if status != 201:
            raise SystemExit(f"create failed: {status} {body[:300]!r}")
    return time.perf_counter() - start


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=20_000, help="creates per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="one more round under cProfile")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--dump", help="write the cProfile stats to this file")
    args = parser.parse_args()
    app = await setup()
    await create_many(app, "warmup", 200)
    times = [await create_many(app, f"bench-{r}", args.n) for r in range(args.rounds)]
    best = min(times)
    shown = ", ".join(f"{t / args.n * 1e6:.1f}" for t in times)
    print(
        f"create (POST Database, generateName) in-process: {best / args.n * 1e6:.1f} us per create, "
        f"{args.n / best:,.0f}/s (best of {args.rounds}: {shown} us)"
    )
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        await create_many(app, "profiled", args.n)
        prof.disable()
        stats = pstats.Stats(prof)
        if args.dump:
            stats.dump_stats(args.dump)
        stats.sort_stats("tottime").print_stats(args.top)
    await app.stop()


if __name__ == "__main__":
    asyncio.run(main())
