"""Federation of many templates to three member clusters (issue 18; docs/sync.md).

    .venv/bin/python benchmarks/federation.py [--templates 100] [--rounds 3]

Four embedded servers run in their own processes (memory store, uvloop, as ``kubewerk
up`` runs them): a host and three members. The host holds a ClusterSet of the three
members (kubeconfigs in Secrets) and a ``Spread`` Placement selecting all of them; the
Federation controllers run in this process against the host (4 concurrent reconciles).

Each round creates ``--templates`` FederatedObjects (a ConfigMap template each, with one
override per member) and measures the time until every one of them has ``Propagated``
True on the host (polled every 20 ms) — so every member holds every copy.

Baseline in the same run: the writes an ideal propagator cannot avoid, sent through the
same kind of clients with the same concurrency (4 objects in flight, the three members
of one object written concurrently): one create per object on the host and one
server-side apply per object per member (``templates * 3``).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from kubewerk.apiserver.server import kubeconfig_text  # noqa: E402
from kubewerk.client import Client  # noqa: E402
from kubewerk.client.resources import CONFIGMAP  # noqa: E402
from kubewerk.runtime import Manager  # noqa: E402
from kubewerk.sync.federation import (  # noqa: E402
    CLUSTER_SET,
    FEDERATED_OBJECT,
    PLACEMENT,
    Federation,
    crds,
)
from kubewerk.testing import install_crds  # noqa: E402
from sync import start  # noqa: E402  (the sibling benchmark: an embedded server process)

MEMBERS = ("m1", "m2", "m3")
CONCURRENCY = 4


def template(name: str) -> dict[str, Any]:
    return {
        "apiVersion": FEDERATED_OBJECT.api_version,
        "kind": "FederatedObject",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "placement": "all",
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name},
                "data": {"a": "1", "b": "2", "c": "3"},
            },
            "overrides": [
                {"clusterName": m, "patch": [{"op": "add", "path": "/data/member", "value": m}]}
                for m in MEMBERS
            ],
        },
    }


async def setup(host: Client, members: dict[str, str]) -> None:
    await install_crds(host, *crds())
    for name, url in members.items():
        text = kubeconfig_text(url, context=name)
        await host.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"{name}-kc", "namespace": "default"},
                "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
            }
        )
    await host.create(
        {
            "apiVersion": CLUSTER_SET.api_version,
            "kind": "ClusterSet",
            "metadata": {"name": "fleet", "namespace": "default"},
            "spec": {
                "clusters": [
                    {"name": n, "kubeconfigSecretRef": {"name": f"{n}-kc"}, "labels": {"env": "x"}}
                    for n in members
                ]
            },
        }
    )
    await host.create(
        {
            "apiVersion": PLACEMENT.api_version,
            "kind": "Placement",
            "metadata": {"name": "all", "namespace": "default"},
            "spec": {"clusterSet": "fleet"},
        }
    )


async def decided(host: Client, count: int) -> None:
    while True:
        pl = await host.get(PLACEMENT, "all", "default")
        if len((pl.get("status") or {}).get("decisions") or []) == count:
            return
        await asyncio.sleep(0.05)


async def federation_round(host: Client, prefix: str, n: int) -> float:
    names = [f"{prefix}-{i:04d}" for i in range(n)]
    t0 = time.perf_counter()
    for name in names:
        await host.create(template(name))
    wanted = set(names)
    while True:
        items = (await host.list(FEDERATED_OBJECT, "default")).items
        done = {
            i["metadata"]["name"]
            for i in items
            if any(
                c.get("type") == "Propagated" and c.get("status") == "True"
                for c in (i.get("status") or {}).get("conditions") or []
            )
        }
        if wanted <= done:
            return time.perf_counter() - t0
        await asyncio.sleep(0.02)


async def baseline_round(host: Client, members: list[Client], prefix: str, n: int) -> float:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        name = f"{prefix}-{i:04d}"
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"a": "1", "b": "2", "c": "3"},
        }
        async with sem:
            await host.create(body)
            await asyncio.gather(
                *(
                    m.patch(
                        CONFIGMAP,
                        name,
                        body,
                        "default",
                        type="apply",
                        force=True,
                        field_manager="bench",
                    )
                    for m in members
                )
            )

    t0 = time.perf_counter()
    for i in range(0, n, CONCURRENCY * 4):
        await asyncio.gather(*(one(j) for j in range(i, min(n, i + CONCURRENCY * 4))))
    return time.perf_counter() - t0


async def main_async(args: argparse.Namespace) -> None:
    procs: list[mp.process.BaseProcess] = []
    try:
        urls = []
        for _ in range(1 + len(MEMBERS)):
            p, url = start()
            procs.append(p)
            urls.append(url)
        host = Client.from_url(urls[0])
        member_urls = dict(zip(MEMBERS, urls[1:], strict=True))
        members = [Client.from_url(u) for u in member_urls.values()]
        await setup(host, member_urls)
        mgr = Manager(host, probe_port=None, graceful_shutdown_timeout=5)
        Federation(mgr, max_concurrent_reconciles=CONCURRENCY)
        await mgr.start()
        await decided(host, len(MEMBERS))
        fed: list[float] = []
        base: list[float] = []
        for r in range(args.rounds):
            base.append(await baseline_round(host, members, f"b{r}", args.templates))
            fed.append(await federation_round(host, f"f{r}", args.templates))
            print(
                f"round {r + 1}: federation {fed[-1]:.2f} s, baseline {base[-1]:.2f} s, "
                f"ratio {fed[-1] / base[-1]:.2f}x",
                flush=True,
            )
        mf, mb = statistics.median(fed), statistics.median(base)
        n = args.templates
        print(
            f"\n{n} templates -> {len(MEMBERS)} clusters: all Propagated in {mf:.2f} s median "
            f"({n / mf:.0f} templates/s, {n * len(MEMBERS) / mf:.0f} copies/s); baseline "
            f"(host create + {len(MEMBERS)} applies per object) {mb:.2f} s "
            f"({n * len(MEMBERS) / mb:.0f} applies/s); ratio {mf / mb:.2f}x"
        )
        await mgr.stop()
        await host.close()
        for m in members:
            await m.close()
    finally:
        for p in procs:
            if p.pid is not None and p.is_alive():
                p.terminate()
                p.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--templates", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
