"""Semantic diff and sync against embedded API servers (issue 18; docs/sync.md).

    .venv/bin/python benchmarks/sync.py [--objects 10000] [--changed 1000] [--rounds 3]

Two embedded servers run in their own processes (memory store, uvloop, as ``kubewerk up``
runs them); both hold the same ``--objects`` Widgets (a CRD with defaults, a set, a
map-list and an int-or-string quantity), the second with 1 % of them changed; a directory
holds the same objects as a user writes them (defaults left out, sets in another order,
``1024Mi`` where the server has ``1Gi``), 100 per file.

Diff, each against plain ``orjson`` equality of the same object pairs in the same run:

- dir↔server: ``diff_sources(dir, server)`` vs reading and parsing the same files (the
  same C YAML loader), one paginated list of the server, matching by key and comparing
  ``orjson.dumps(OPT_SORT_KEYS)`` of each pair;
- server↔server: ``diff_sources(a, b)`` vs two paginated lists, matching and comparing;
- compare only: the comparison step alone on pairs already in memory (normalize, defaults,
  shapes) vs ``orjson`` equality of the same pairs.

Sync: ``--changed`` objects changed in the manifests, synced with ``git-wins`` to a third
server holding just them
(one object at a time, as the engine applies in dependency order) vs the server's raw
apply rate: the same number of server-side apply patches sent one at a time through the
same client. Target: diff <= 5x its baseline; sync >= 0.5x the raw rate.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.sync.conftest import widget_crd  # noqa: E402

from kubewerk.client import Client  # noqa: E402
from kubewerk.sync import diff_sources, load  # noqa: E402
from kubewerk.sync.compare import Normalizer  # noqa: E402
from kubewerk.sync.diff import diff_objects, quick_equal  # noqa: E402
from kubewerk.sync.engine import sync  # noqa: E402
from kubewerk.sync.schemas import KindSchemas  # noqa: E402
from kubewerk.sync.sources import ClusterSource, ManifestSource  # noqa: E402
from kubewerk.testing import install_crds  # noqa: E402

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def serve(port_q: Any) -> None:
    from kubewerk.apiserver.server import EmbeddedServer, new_event_loop

    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    server = EmbeddedServer("memory")
    stop = asyncio.Event()

    async def main() -> None:
        await server.start()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        port_q.put(server.port)
        await stop.wait()
        await server.stop()

    loop.run_until_complete(main())


def start() -> tuple[mp.process.BaseProcess, str]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=serve, args=(q,), daemon=True)
    proc.start()
    return proc, f"http://127.0.0.1:{int(q.get(timeout=60))}"


def served(i: int, variant: int = 0) -> dict[str, Any]:
    """Widget i as the server holds it (defaults written out)."""
    return {
        "apiVersion": "sync.test/v1",
        "kind": "Widget",
        "metadata": {
            "name": f"w{i:05}",
            "namespace": "default",
            "labels": {"app": "bench", "shard": str(i % 16)},
        },
        "spec": {
            "size": "large" if variant else "small",
            "replicas": 1,
            "memory": "1Gi",
            "tags": ["a", "b", "c"],
            "endpoints": [
                {"name": "http", "url": f"http://w{i}", "weight": 10},
                {"name": "grpc", "url": f"grpc://w{i}", "weight": 10},
            ],
        },
    }


def written(i: int) -> dict[str, Any]:
    """Widget i as a user writes it: defaults left out, a set reordered, 1024Mi."""
    obj = served(i)
    spec = obj["spec"]
    del spec["size"], spec["replicas"]
    spec["memory"] = "1024Mi"
    spec["tags"] = ["c", "a", "b"]
    spec["endpoints"] = [{"name": e["name"], "url": e["url"]} for e in reversed(spec["endpoints"])]
    return obj


async def fill(url: str, n: int, changed_every: int = 0) -> None:
    async with Client.from_url(url) as c:
        await install_crds(c, widget_crd())
        sem = asyncio.Semaphore(32)

        async def one(i: int) -> None:
            async with sem:
                await c.create(served(i, 1 if changed_every and i % changed_every == 0 else 0))

        await asyncio.gather(*(one(i) for i in range(n)))


def write_dir(root: Path, n: int) -> None:
    for start in range(0, n, 100):
        docs = [written(i) for i in range(start, min(n, start + 100))]
        (root / f"w{start:05}.yaml").write_text(
            "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)
        )


def key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"].split("/")[0], obj["kind"], meta.get("namespace", ""), meta["name"])


async def listed(url: str) -> list[dict[str, Any]]:
    async with Client.from_url(url) as c:
        rt = await c.resolve("sync.test/v1", "Widget")
        return list((await c.list_all(rt)).items)


def plain_eq(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> int:
    ia = {key(o): o for o in a}
    ib = {key(o): o for o in b}
    same = 0
    for k, o in ia.items():
        p = ib.get(k)
        if p is not None and orjson.dumps(o, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            p, option=orjson.OPT_SORT_KEYS
        ):
            same += 1
    return same


async def baseline_dir_server(root: Path, url: str) -> int:
    docs: list[dict[str, Any]] = []
    for p in sorted(root.glob("*.yaml")):
        docs.extend(d for d in yaml.load_all(p.read_bytes(), Loader=_Loader) if d)
    return plain_eq(docs, await listed(url))


async def baseline_server_server(a: str, b: str) -> int:
    la, lb = await asyncio.gather(listed(a), listed(b))
    return plain_eq(la, lb)


async def ours(left: str, right: str) -> dict[str, int]:
    ls, rs = load(left), load(right)
    try:
        report = await diff_sources(ls, rs)
    finally:
        await ls.close()
        await rs.close()
    return report.summary()


def timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def compare_only(
    pairs: list[tuple[dict[str, Any], dict[str, Any]]], schemas: KindSchemas
) -> tuple[float, float]:
    norm = Normalizer(schemas)
    t0 = time.perf_counter()
    for a, b in pairs:
        orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)  # noqa: B015
    base = time.perf_counter() - t0
    t0 = time.perf_counter()
    shape = schemas.shape("sync.test/v1", "Widget")
    for a, b in pairs:
        x, y = norm.strip(a), norm.strip(b)
        if not quick_equal(x, y):
            diff_objects(norm.defaulted(x), norm.defaulted(y), shape)
    return base, time.perf_counter() - t0


async def bench_sync(url: str, n: int, rounds: int) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    async with Client.from_url(url) as c:
        await install_crds(c, widget_crd())
        rt = await c.resolve("sync.test/v1", "Widget")
        objs = [
            {**served(i), "metadata": {**served(i)["metadata"], "name": f"s{i:05}"}}
            for i in range(n)
        ]
        for r in range(rounds):
            # raw: n server-side apply patches, one at a time
            for o in objs:
                o["spec"]["replicas"] = 100 + r
            t0 = time.perf_counter()
            for o in objs:
                await c.patch(
                    rt,
                    o["metadata"]["name"],
                    o,
                    "default",
                    type="apply",
                    field_manager="raw",
                    force=True,
                )
            raw = time.perf_counter() - t0
            # sync: the same objects changed in the manifests, synced git-wins
            for o in objs:
                o["spec"]["replicas"] = 200 + r
            src = ManifestSource(
                "bench",
                None,
                {"m.json": orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objs})},
            )
            t0 = time.perf_counter()
            report = await sync(src, [ClusterSource(url, c, owns_client=False)], "git-wins")
            took = time.perf_counter() - t0
            counts = report.targets[0].counts()
            assert report.ok and counts.get("unchanged", 0) == 0, counts
            out.append((n / raw, n / took))
    return out


async def main_async(args: argparse.Namespace) -> None:
    (pa, a), (pb, b) = start(), start()
    try:
        t0 = time.perf_counter()
        await asyncio.gather(fill(a, args.objects), fill(b, args.objects, changed_every=100))
        tmp = Path(tempfile.mkdtemp(prefix="kw-sync-bench-"))
        write_dir(tmp, args.objects)
        took = time.perf_counter() - t0
        print(
            f"setup: {args.objects} widgets in two servers,"
            f" {args.objects // 100} files ({took:.1f}s)"
        )
        print("round   dir-server base     ours  ratio   server-server base     ours  ratio")
        ratios_ds: list[float] = []
        ratios_ss: list[float] = []
        for r in range(args.rounds):
            t0 = time.perf_counter()
            await baseline_dir_server(tmp, a)
            base_ds = time.perf_counter() - t0
            t0 = time.perf_counter()
            s1 = await ours(str(tmp), a)
            ours_ds = time.perf_counter() - t0
            t0 = time.perf_counter()
            await baseline_server_server(a, b)
            base_ss = time.perf_counter() - t0
            t0 = time.perf_counter()
            s2 = await ours(a, b)
            ours_ss = time.perf_counter() - t0
            assert s1["equal"] == args.objects and s1["changed"] == 0, s1
            assert s2["changed"] == args.objects // 100, s2
            ratios_ds.append(ours_ds / base_ds)
            ratios_ss.append(ours_ss / base_ss)
            print(
                f"{r:>5} {base_ds:>16.2f}s {ours_ds:>7.2f}s {ours_ds / base_ds:>5.2f}x"
                f" {base_ss:>19.2f}s {ours_ss:>7.2f}s {ours_ss / base_ss:>5.2f}x"
            )
        for what, ratios in (("dir<->server", ratios_ds), ("server<->server", ratios_ss)):
            median = statistics.median(ratios)
            print(f"diff {what}: median {median:.2f}x plain orjson equality (target <= 5x)")
        # compare only, on pairs in memory
        docs: list[dict[str, Any]] = []
        for p in sorted(tmp.glob("*.yaml")):
            docs.extend(d for d in yaml.load_all(p.read_bytes(), Loader=_Loader) if d)
        live = {key(o): o for o in await listed(a)}
        pairs = [(d, live[key(d)]) for d in docs]
        schemas = KindSchemas()
        schemas.add_crd(widget_crd())
        base, mine = compare_only(pairs, schemas)
        print(
            f"compare only ({len(pairs)} pairs, every one defaulted and diffed):"
            f" orjson {base * 1e3:.0f} ms, ours {mine * 1e3:.0f} ms = {mine / base:.1f}x"
        )
        fast = [(live[k], live[k]) for k in list(live)[: len(pairs)]]
        base, mine = compare_only(fast, schemas)
        print(
            f"compare only (identical pairs): orjson {base * 1e3:.0f} ms,"
            f" ours {mine * 1e3:.0f} ms = {mine / base:.1f}x"
        )
        print(f"sync of {args.changed} changed objects (git-wins) vs raw apply, one at a time:")
        pc, c = start()  # a cluster holding only the synced objects (and the defaults)
        try:
            results = await bench_sync(c, args.changed, args.rounds)
        finally:
            pc.terminate()
            pc.join(10)
        for raw, ours_rate in results:
            print(f"  raw {raw:7.0f}/s  sync {ours_rate:7.0f}/s  = {ours_rate / raw:.2f}x")
        median = statistics.median(o / r for r, o in results)
        print(f"sync: median {median:.2f}x the raw apply rate (target >= 0.5x)")
    finally:
        for p in (pa, pb):
            p.terminate()
            p.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
