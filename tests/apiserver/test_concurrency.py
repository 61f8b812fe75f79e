"""Many writers racing on a few objects plus several watchers, over real HTTP.

Writers do read-modify-write PUTs guarded by ``resourceVersion`` and retry on 409, each
incrementing a counter kept in an annotation of a ``Database`` custom resource. The
invariants checked (for the memory and the SQLite store alike):

- no lost update: each object's counter ends at exactly the number of PUTs that
  succeeded on it, and every successful PUT returned a distinct resourceVersion;
- every watcher (started from the resourceVersion of an initial list) sees every
  committed revision exactly once, in strictly increasing order, and the set of
  revisions it saw is exactly the set the writers got back;
- per object, the counters a watcher sees go 1, 2, 3, ... with no gap or repeat.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer

GROUP_VERSION = "demo.kubewerk.dev/v1"
NAMESPACES = ("default", "kube-public")
OBJECTS_PER_NS = 2
WRITERS = 8
OPS_PER_WRITER = 100
WATCHERS = 5
COUNTER = "test.kubewerk.dev/counter"

JSON = dict[str, Any]


async def _install_crd(session: aiohttp.ClientSession, demo_dir: Path) -> None:
    crd = yaml.safe_load((demo_dir / "crd.yaml").read_text())
    async with session.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd
    ) as resp:
        assert resp.status == 201, await resp.text()
    for _ in range(500):
        async with session.get(f"/apis/{GROUP_VERSION}") as resp:
            if resp.status == 200:
                return
        await asyncio.sleep(0.01)
    raise AssertionError("the Database CRD never became served")


def _path(ns: str, name: str | None = None) -> str:
    base = f"/apis/{GROUP_VERSION}/namespaces/{ns}/databases"
    return f"{base}/{name}" if name else base


async def _watch(
    session: aiohttp.ClientSession,
    path: str,
    rv: str,
    events: list[JSON],
    bookmarks: list[int],
    target: dict[str, int],
) -> None:
    """Collect events until the writers are done and the last committed revision arrived.

    ``target["rv"]`` is set (by the test) once every writer has finished; bookmarks every
    0.2 s wake the reader up so it can notice that without a further event.
    """
    params = {
        "watch": "true",
        "resourceVersion": rv,
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "60",
    }
    async with session.get(path, params=params, timeout=aiohttp.ClientTimeout(total=90)) as resp:
        assert resp.status == 200, await resp.text()
        while True:
            last = int(events[-1]["object"]["metadata"]["resourceVersion"]) if events else 0
            if "rv" in target and last >= target["rv"]:
                return
            line = await resp.content.readline()
            if not line:
                return
            event = orjson.loads(line)
            if event["type"] == "BOOKMARK":
                bookmarks.append(int(event["object"]["metadata"]["resourceVersion"]))
                continue
            # a bookmark promises that nothing at or below its revision is still to come
            assert (
                not bookmarks or int(event["object"]["metadata"]["resourceVersion"]) > bookmarks[-1]
            )
            events.append(event)


async def _writer(
    session: aiohttp.ClientSession,
    seed: int,
    keys: list[tuple[str, str]],
    committed: dict[tuple[str, str], list[int]],
) -> int:
    """Increment counters with guarded PUTs; record the revision of every success."""
    rng = random.Random(seed)
    conflicts = 0
    for _ in range(OPS_PER_WRITER):
        ns, name = rng.choice(keys)
        while True:
            async with session.get(_path(ns, name)) as resp:
                assert resp.status == 200, await resp.text()
                obj = await resp.json(loads=orjson.loads)
            annotations = obj["metadata"].setdefault("annotations", {})
            annotations[COUNTER] = str(int(annotations[COUNTER]) + 1)
            if rng.random() < 0.5:
                await asyncio.sleep(0)  # widen the race window now and then
            async with session.put(
                _path(ns, name),
                data=orjson.dumps(obj),
                headers={"content-type": "application/json"},
            ) as resp:
                body = await resp.json(loads=orjson.loads)
                if resp.status == 409:
                    assert body["kind"] == "Status" and body["reason"] == "Conflict", body
                    assert body["message"] == (
                        "Operation cannot be fulfilled on databases.demo.kubewerk.dev "
                        f'"{name}": the object has been modified; please apply your '
                        "changes to the latest version and try again"
                    )
                    conflicts += 1
                    continue
                assert resp.status == 200, body
                rv = int(body["metadata"]["resourceVersion"])
                assert rv > int(obj["metadata"]["resourceVersion"])
                assert body["metadata"]["annotations"][COUNTER] == annotations[COUNTER]
                committed[(ns, name)].append(rv)
                break
    return conflicts


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
async def test_racing_writers_and_watchers(store_kind: str, tmp_path: Path, demo_dir: Path) -> None:
    spec = "memory" if store_kind == "memory" else f"sqlite:{tmp_path / 'kubewerk.db'}"
    async with EmbeddedServer(spec, bookmark_interval=0.2) as srv:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(srv.url, connector=connector) as session:
            await _install_crd(session, demo_dir)
            keys = [(ns, f"db-{i}") for ns in NAMESPACES for i in range(OBJECTS_PER_NS)]
            for ns, name in keys:
                body = {
                    "apiVersion": GROUP_VERSION,
                    "kind": "Database",
                    "metadata": {"name": name, "annotations": {COUNTER: "0"}},
                    "spec": {"engine": "postgres"},
                }
                async with session.post(_path(ns), json=body) as resp:
                    assert resp.status == 201, await resp.text()

            # the watchers' starting point: one consistent list of everything
            async with session.get(f"/apis/{GROUP_VERSION}/databases") as resp:
                listed = await resp.json(loads=orjson.loads)
            list_rv = listed["metadata"]["resourceVersion"]
            assert sorted(
                (o["metadata"]["namespace"], o["metadata"]["name"]) for o in listed["items"]
            ) == sorted(keys)
            assert all(o["metadata"]["annotations"][COUNTER] == "0" for o in listed["items"])

            total = WRITERS * OPS_PER_WRITER
            # watchers 0..2 watch all namespaces; 3..4 watch one namespace each
            paths = [f"/apis/{GROUP_VERSION}/databases"] * 3 + [_path(ns) for ns in NAMESPACES]
            scopes: list[str | None] = [None, None, None, *NAMESPACES]
            watch_events: list[list[JSON]] = [[] for _ in range(WATCHERS)]
            bookmarks: list[list[int]] = [[] for _ in range(WATCHERS)]
            targets: list[dict[str, int]] = [{} for _ in range(WATCHERS)]

            def start_watcher(i: int) -> asyncio.Task[None]:
                return asyncio.create_task(
                    _watch(session, paths[i], list_rv, watch_events[i], bookmarks[i], targets[i])
                )

            # watchers 0 and 3 start before the writers, the others while they run: replay
            # from list_rv and live delivery must join without a gap or a repeat
            watchers = {i: start_watcher(i) for i in (0, 3)}
            committed: dict[tuple[str, str], list[int]] = {k: [] for k in keys}
            writers = [
                asyncio.create_task(_writer(session, seed, keys, committed))
                for seed in range(WRITERS)
            ]
            await asyncio.sleep(0.3)
            watchers.update({i: start_watcher(i) for i in (1, 2, 4)})
            conflicts = await asyncio.wait_for(asyncio.gather(*writers), timeout=60)
            for i, scope in enumerate(scopes):
                rvs = [
                    rv
                    for (ns, _), v in committed.items()
                    for rv in v
                    if scope is None or ns == scope
                ]
                targets[i]["rv"] = max(rvs)
            await asyncio.wait_for(asyncio.gather(*watchers.values()), timeout=30)

            # no lost update
            all_rvs = sorted(rv for rvs in committed.values() for rv in rvs)
            assert len(all_rvs) == total
            assert len(set(all_rvs)) == total, (
                "two successful writes returned the same resourceVersion"
            )
            for (ns, name), rvs in committed.items():
                async with session.get(_path(ns, name)) as resp:
                    final = await resp.json(loads=orjson.loads)
                assert int(final["metadata"]["annotations"][COUNTER]) == len(rvs), (ns, name)
                if rvs:
                    assert final["metadata"]["resourceVersion"] == str(max(rvs))
            assert sum(conflicts) > 0, "the writers never raced; the test proves nothing"

            # every watcher saw every committed revision once, in order
            for i, events in enumerate(watch_events):
                scope_ns = scopes[i]
                want = sorted(
                    rv
                    for (ns, _), rvs in committed.items()
                    for rv in rvs
                    if scope_ns is None or ns == scope_ns
                )
                got = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
                assert all(e["type"] == "MODIFIED" for e in events), {e["type"] for e in events}
                assert got == want, (
                    f"watcher {i} ({paths[i]}): saw {len(got)} events, expected {len(want)}"
                )
                seen: dict[tuple[str, str], int] = {}
                for e in events:
                    meta = e["object"]["metadata"]
                    key = (meta["namespace"], meta["name"])
                    counter = int(meta["annotations"][COUNTER])
                    assert counter == seen.get(key, 0) + 1, (
                        f"watcher {i}: {key} jumped to {counter}"
                    )
                    seen[key] = counter
