"""In-process profile of the embedded API server's hot request paths (no HTTP, no client).

Run:  .venv/bin/python benchmarks/request_profile.py [--op create|create-varied|get|status-patch]
      [--kind demo|bench|prometheus] [-n 20000] [--profile] [--top 30] [--dump /tmp/create.prof]

Builds ``ApiServer(open_store("memory"))``, installs a CRD through an ASGI call (``demo``:
the ``Database`` of ``src/kubewerk/cli/demo_data/crd.yaml`` with defaults, patterns and
CEL, as benchmarks/apiserver.py uses; ``bench``: the plain kind of benchmarks/runtime.py;
``prometheus``: the large corpus CRD and object of benchmarks/schema.py),
waits until it is Established, then sends ``-n`` requests straight into the ASGI app with a fake
scope/receive/send and prints the Python time per request: what the server spends per
request beside the HTTP stack. The operations are the hot paths of the benchmarks:

- ``create``: POST of an object with ``generateName`` (the body
  ``benchmarks/apiserver.py`` sends); each round uses a fresh namespace, so the store
  grows the same way in every round;
- ``create-varied``: the same POSTs with a different spec in each (``demo`` only), so
  nothing the server remembers of earlier values (validated flat objects, CEL results)
  is found again;
- ``get``: GET of one object (``benchmarks/apiserver.py``);
- ``status-patch``: a merge patch of the status through ``/status`` on
  ``-n`` distinct objects, as each reconcile of ``benchmarks/runtime.py`` sends it.

``--profile`` runs one more round under cProfile and prints the functions with the
most own time (``--dump`` keeps the stats for snakeviz or pstats). The figure is the
best of ``--rounds``.
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


class Kind:
    """A CRD and the bodies the timed requests send for it."""

    def __init__(
        self, crd: dict[str, Any], body: dict[str, Any], status_patch: dict[str, Any]
    ) -> None:
        self.crd = crd
        spec = crd["spec"]
        self.gv = f"{spec['group']}/{spec['versions'][0]['name']}"
        self.plural = spec["names"]["plural"]
        self.body = orjson.dumps(body)
        self.status_patch = orjson.dumps(status_patch)


def demo_kind() -> Kind:
    """The demo ``Database`` (defaults, patterns, CEL): what benchmarks/apiserver.py sends."""
    crd = yaml.safe_load((ROOT / "src" / "kubewerk" / "cli" / "demo_data" / "crd.yaml").read_text())
    body = {
        "apiVersion": "demo.kubewerk.dev/v1",
        "kind": "Database",
        "metadata": {"generateName": "bench-", "labels": {"app": "bench", "tier": "db"}},
        "spec": {"engine": "postgres", "version": "16", "replicas": 3, "storage": "10Gi"},
    }
    return Kind(crd, body, {"status": {"replicas": 3}})


def bench_kind() -> Kind:
    """The ``Bench`` kind of benchmarks/runtime.py (spec.value, free-form status)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from runtime import CRD as BENCH_CRD

    body = {
        "apiVersion": "bench.kubewerk.dev/v1",
        "kind": "Bench",
        "metadata": {"generateName": "bench-"},
        "spec": {"value": 7},
    }
    return Kind(BENCH_CRD, body, {"status": {"observed": 7}})


def prometheus_kind() -> Kind:
    """A Prometheus of the prometheus-operator corpus CRD (a large schema; the object of
    benchmarks/schema.py), status as the operator writes it."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import random

    from schema import CRD as PROMETHEUS_CRD
    from schema import make_object

    crd = yaml.safe_load(PROMETHEUS_CRD.read_text())
    crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    body = make_object(random.Random(7), 0)
    body["spec"].pop("extraUnknown")
    body["metadata"] = {"generateName": "prom-", "labels": body["metadata"]["labels"]}
    status = {
        "availableReplicas": 1,
        "paused": False,
        "replicas": 1,
        "unavailableReplicas": 0,
        "updatedReplicas": 1,
    }
    return Kind(crd, body, {"status": status})


KINDS = {"demo": demo_kind, "bench": bench_kind, "prometheus": prometheus_kind}
KIND: Kind = demo_kind()


async def call(
    app: ApiServer,
    method: str,
    path: str,
    body: bytes = b"",
    content_type: bytes = b"application/json",
) -> tuple[int, bytes]:
    """One request through the ASGI interface; returns (status, response body)."""
    scope: dict[str, Any] = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": [
            (b"content-type", content_type),
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
    crd = KIND.crd
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


async def new_namespace(app: ApiServer, namespace: str) -> None:
    status, body = await call(
        app,
        "POST",
        "/api/v1/namespaces",
        orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    if status != 201:
        raise SystemExit(f"creating namespace {namespace} failed: {status} {body[:300]!r}")


async def timed(
    requests: list[tuple[str, str, bytes, bytes]], app: ApiServer, expect: int
) -> tuple[float, float]:
    """Send the requests in order; returns the seconds taken, wall and this process's CPU
    (fails on any other status). On a shared machine the CPU figure is the steadier: it
    leaves out the time other processes held the core."""
    gc.collect()
    start = time.perf_counter()
    cpu = time.process_time()
    for method, path, body, ctype in requests:
        status, answer = await call(app, method, path, body, ctype)
        if status != expect:
            raise SystemExit(f"{method} {path} failed: {status} {answer[:300]!r}")
    return time.perf_counter() - start, time.process_time() - cpu


Prepared = tuple[list[tuple[str, str, bytes, bytes]], int]


async def prepare_create(app: ApiServer, namespace: str, n: int) -> Prepared:
    """``n`` POSTs of an object with generateName into a fresh namespace."""
    await new_namespace(app, namespace)
    path = f"/apis/{KIND.gv}/namespaces/{namespace}/{KIND.plural}"
    return [("POST", path, KIND.body, b"application/json")] * n, 201


async def prepare_create_varied(app: ApiServer, namespace: str, n: int) -> Prepared:
    """``n`` POSTs like ``create`` whose specs all differ (``demo`` kind only): the
    server's memos of validated and CEL-checked values, which the identical bodies of
    ``create`` and of benchmarks/apiserver.py and scale.py hit every time, hit nothing."""
    if KIND.plural != "databases":
        raise SystemExit("--op create-varied needs --kind demo")
    await new_namespace(app, namespace)
    path = f"/apis/{KIND.gv}/namespaces/{namespace}/{KIND.plural}"
    template = orjson.loads(KIND.body)
    requests = []
    for i in range(n):
        template["spec"] = {
            "engine": "postgres" if i % 2 else "mysql",
            "version": str(i),
            "replicas": 1 + i % 3,
            "storage": f"{i + 1}Gi",
        }
        requests.append(("POST", path, orjson.dumps(template), b"application/json"))
    return requests, 201


async def prepare_get(app: ApiServer, namespace: str, n: int) -> Prepared:
    """``n`` GETs of one object."""
    requests, _ = await prepare_create(app, namespace, 1)
    await timed(requests, app, 201)
    _, body = await call(app, "GET", f"/apis/{KIND.gv}/namespaces/{namespace}/{KIND.plural}")
    name = orjson.loads(body)["items"][0]["metadata"]["name"]
    path = f"/apis/{KIND.gv}/namespaces/{namespace}/{KIND.plural}/{name}"
    return [("GET", path, b"", b"")] * n, 200


async def prepare_status_patch(app: ApiServer, namespace: str, n: int) -> Prepared:
    """A merge patch of the status through /status on each of ``n`` fresh objects."""
    requests, _ = await prepare_create(app, namespace, n)
    await timed(requests, app, 201)
    _, body = await call(app, "GET", f"/apis/{KIND.gv}/namespaces/{namespace}/{KIND.plural}")
    base = f"/apis/{KIND.gv}/namespaces/{namespace}/{KIND.plural}/"
    patch = KIND.status_patch
    return [
        (
            "PATCH",
            base + item["metadata"]["name"] + "/status",
            patch,
            b"application/merge-patch+json",
        )
        for item in orjson.loads(body)["items"]
    ], 200


OPS = {
    "create": prepare_create,
    "create-varied": prepare_create_varied,
    "get": prepare_get,
    "status-patch": prepare_status_patch,
}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", choices=sorted(OPS), default="create", help="the request to time")
    parser.add_argument(
        "--kind",
        choices=sorted(KINDS),
        default="demo",
        help="demo: the Database of benchmarks/apiserver.py; bench: the kind of "
        "benchmarks/runtime.py; prometheus: the corpus Prometheus of benchmarks/schema.py",
    )
    parser.add_argument("-n", type=int, default=20_000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="one more round under cProfile")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--dump", help="write the cProfile stats to this file")
    args = parser.parse_args()
    global KIND
    KIND = KINDS[args.kind]()
    app = await setup()
    prepare = OPS[args.op]
    requests, expect = await prepare(app, "warmup", 200)
    await timed(requests, app, expect)
    times: list[float] = []
    cpus: list[float] = []
    for r in range(args.rounds):
        requests, expect = await prepare(app, f"bench-{r}", args.n)
        wall, cpu = await timed(requests, app, expect)
        times.append(wall)
        cpus.append(cpu)
    best = min(times)
    shown = ", ".join(f"{t / args.n * 1e6:.1f}" for t in times)
    shown_cpu = ", ".join(f"{t / args.n * 1e6:.1f}" for t in cpus)
    print(
        f"{args.op} in-process: {best / args.n * 1e6:.1f} us per request, "
        f"{args.n / best:,.0f}/s (best of {args.rounds}: {shown} us)\n"
        f"  CPU of this process: {min(cpus) / args.n * 1e6:.1f} us per request "
        f"(best of {args.rounds}: {shown_cpu} us)"
    )
    if args.profile:
        requests, expect = await prepare(app, "profiled", args.n)
        prof = cProfile.Profile()
        prof.enable()
        await timed(requests, app, expect)
        prof.disable()
        stats = pstats.Stats(prof)
        if args.dump:
            stats.dump_stats(args.dump)
        stats.sort_stats("tottime").print_stats(args.top)
    await app.stop()


if __name__ == "__main__":
    asyncio.run(main())
