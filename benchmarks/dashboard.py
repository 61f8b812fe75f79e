"""The health dashboard at scale (issue 19): 10,000 objects across the platform
example's 17 kinds on the embedded API server (in memory, in this process), a fifth of
them stuck (Failed, or DependenciesReady=False), with Events.

Figures:

- **first page load, server time**: the four requests of a first visit (the page, its
  script and style, ``/api/summary``) on one keep-alive connection over loopback,
  timed from the request's first byte to the response's last; and ``summary()`` alone
  in-process. The baseline is the same connection fetching the stylesheet only (the
  HTTP stack serving a fixed response), so the ratio shows what building the summary
  costs over the transport.
- **watch update reaches the page**: a status write through the API client, then the
  time until the server-sent ``change`` event arrives on an open ``/api/stream``, and
  until ``/api/summary`` fetched right after it shows the change (what the page does).

    .venv/bin/python benchmarks/dashboard.py [--objects 10000] [--updates 30]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubewerk.apiserver.server import EmbeddedServer  # noqa: E402
from kubewerk.client import CRD, Client, ResourceType  # noqa: E402
from kubewerk.observe.server import DashboardServer  # noqa: E402
from kubewerk.observe.views import summary  # noqa: E402

CRDS = ROOT / "examples" / "platform_demo" / "crds"
STACK = ROOT / "examples" / "platform_demo" / "stack" / "acme.yaml"
NAMESPACES = 20


async def install(client: Client) -> dict[str, ResourceType]:
    kinds: dict[str, ResourceType] = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        await client.create(crd)
        spec = crd["spec"]
        kinds[spec["names"]["kind"]] = ResourceType(
            spec["group"],
            "v1",
            spec["names"]["kind"],
            spec["names"]["plural"],
            spec["scope"] != "Cluster",
        )
    for _ in range(400):
        listed = await client.list(CRD)
        if all(
            any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (i.get("status") or {}).get("conditions") or []
            )
            for i in listed.items
        ) and len(listed.items) == len(kinds):
            break
        await asyncio.sleep(0.05)
    return kinds


def status_for(i: int, kind: str) -> dict[str, Any]:
    when = "2025-01-01T00:00:00Z"
    if i % 10 == 0:
        return {
            "phase": "Failed",
            "observedGeneration": 1,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "ProvisioningFailed",
                    "message": f"provider error {i}",
                    "lastTransitionTime": when,
                }
            ],
        }
    if i % 10 == 1:
        return {
            "phase": "Pending",
            "observedGeneration": 1,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "Pending",
                    "message": "",
                    "lastTransitionTime": when,
                },
                {
                    "type": "DependenciesReady",
                    "status": "False",
                    "reason": "DependenciesNotReady",
                    "message": "waiting for something",
                    "lastTransitionTime": when,
                },
            ],
        }
    return {
        "phase": "Succeeded" if kind == "Job" else "Active",
        "observedGeneration": 1,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Active",
                "message": "",
                "lastTransitionTime": when,
            }
        ],
    }


async def populate(
    client: Client, kinds: dict[str, ResourceType], total: int
) -> list[dict[str, Any]]:
    templates = {
        d["kind"]: d for d in yaml.safe_load_all(STACK.read_text()) if d and d["kind"] in kinds
    }
    for n in range(NAMESPACES):
        await client.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"t{n}"}}
        )
    names = sorted(kinds)
    created: list[dict[str, Any]] = []
    sem = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        kind = names[i % len(names)]
        obj = copy.deepcopy(templates[kind])
        obj["metadata"] = {"name": f"{obj['metadata']['name']}-{i}"}
        if kinds[kind].namespaced:
            obj["metadata"]["namespace"] = f"t{i % NAMESPACES}"
        async with sem:
            made = await client.create(obj)
            made["status"] = status_for(i, kind)
            made = await client.replace_status(made)
            if i % 5 == 0:
                meta = made["metadata"]
                await client.create(
                    {
                        "apiVersion": "v1",
                        "kind": "Event",
                        "metadata": {
                            "generateName": "bench-",
                            "namespace": meta.get("namespace") or "default",
                        },
                        "involvedObject": {
                            "apiVersion": made["apiVersion"],
                            "kind": made["kind"],
                            "name": meta["name"],
                            "namespace": meta.get("namespace"),
                            "uid": meta["uid"],
                        },
                        "reason": "PhaseChanged",
                        "message": "Pending → Active: Provisioned",
                        "type": "Normal",
                        "source": {"component": "bench"},
                        "count": 1,
                        "firstTimestamp": "2025-01-01T00:00:00Z",
                        "lastTimestamp": "2025-01-01T00:00:00Z",
                    }
                )
        created.append(made)

    await asyncio.gather(*(one(i) for i in range(total)))
    return created


class Conn:
    """One keep-alive HTTP/1.1 connection; ``get`` answers (seconds, body)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str
    ) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    async def get(self, path: str) -> tuple[float, bytes]:
        start = time.perf_counter()
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        body = await self.reader.readexactly(length)
        return time.perf_counter() - start, body


async def connect(url: str) -> Conn:
    hostport = url.split("//", 1)[1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    return Conn(reader, writer, hostport)


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


async def main(total: int, updates: int) -> None:
    async with EmbeddedServer("memory") as srv, Client.from_url(srv.url) as client:
        t0 = time.perf_counter()
        kinds = await install(client)
        created = await populate(client, kinds, total)
        print(
            f"setup: {len(kinds)} kinds, {len(created)} objects in {time.perf_counter() - t0:.1f} s"
        )
        dash = DashboardServer(client, name="bench")
        t0 = time.perf_counter()
        await dash.start()
        print(
            f"dashboard synced (every kind and the Events listed): {time.perf_counter() - t0:.2f} s"
        )
        n = sum(len(o) for o in dash.state.objects.values())
        assert n == total, n

        conn = await connect(dash.url)
        loads, bases, summaries, inproc = [], [], [], []
        for _ in range(7):
            page = 0.0
            for path in ("/", "/static/dashboard.js", "/static/dashboard.css", "/api/summary"):
                took, body = await conn.get(path)
                page += took
                if path == "/api/summary":
                    summaries.append(took)
                    doc = orjson.loads(body)
            loads.append(page)
            bases.append((await conn.get("/static/dashboard.css"))[0])
            start = time.perf_counter()
            summary(dash.state)
            inproc.append(time.perf_counter() - start)
        print(
            f"summary: {len(doc['kinds'])} kinds, stuckTotal {doc['stuckTotal']}, {len(body)} bytes"
        )
        print(
            f"first page load (4 requests), median of 7: {ms(statistics.median(loads))} "
            f"(max {ms(max(loads))}; target <= 1000 ms)"
        )
        print(
            f"  /api/summary alone: {ms(statistics.median(summaries))}; summary() in-process: "
            f"{ms(statistics.median(inproc))}"
        )
        print(
            f"  baseline (stylesheet, fixed response): {ms(statistics.median(bases))}; "
            f"page load = {statistics.median(loads) / statistics.median(bases):.0f}x baseline"
        )

        # watch update -> change event -> summary showing it
        host = dash.url.split("//", 1)[1].rstrip("/")
        h, _, p = host.rpartition(":")
        reader, writer = await asyncio.open_connection(h, int(p))
        writer.write(f"GET /api/stream HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        await reader.readuntil(b"\r\n\r\n")
        await reader.readuntil(b"\n\n")
        to_event, to_page = [], []
        failed = [
            o
            for o in created
            if o["status"]["phase"] == "Failed" and o["kind"] not in ("Job", "Schedule")
        ]
        for i in range(updates):
            obj = failed[i]
            fresh = await client.get(
                ResourceType(
                    *obj["apiVersion"].split("/"),
                    obj["kind"],
                    kinds[obj["kind"]].plural,
                    kinds[obj["kind"]].namespaced,
                ),
                obj["metadata"]["name"],
                obj["metadata"].get("namespace"),
            )
            fresh["status"]["phase"] = "Reconciling"
            start = time.perf_counter()
            await client.replace_status(fresh)
            while b"event: change" not in await reader.readuntil(b"\n\n"):
                pass
            to_event.append(time.perf_counter() - start)
            _took, body = await conn.get("/api/summary")
            to_page.append(time.perf_counter() - start)
            assert orjson.loads(body)["stuckTotal"] == doc["stuckTotal"] - i - 1
            await asyncio.sleep(0.15)  # past the stream's coalescing gap
        writer.close()
        q = statistics.quantiles
        print(
            f"write -> change event, {updates} writes: median {ms(statistics.median(to_event))}, "
            f"p95 {ms(q(to_event, n=20)[-1])}"
        )
        print(
            f"write -> summary showing it: median {ms(statistics.median(to_page))}, "
            f"p95 {ms(q(to_page, n=20)[-1])}, max {ms(max(to_page))} (target <= 500 ms)"
        )
        await dash.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--updates", type=int, default=30)
    a = parser.parse_args()
    asyncio.run(main(a.objects, a.updates))
