"""Storage benchmark: memory and SQLite stores against raw sqlite3 in the same run.

Measures creates/s, updates/s, gets/s and the time to list N objects for
``MemoryStore`` and ``SQLiteStore``, each as a ratio to raw ``sqlite3`` doing the
same work on the same bytes (the orjson encoding of the same objects): one
``INSERT`` per transaction, one ``SELECT`` by primary key, one ordered range scan,
with the same WAL/synchronous settings. Raw sqlite3 neither encodes nor decodes
JSON; the stores do (SQLite) or need not (memory). Ratios above 1 mean faster than
the raw baseline.

    .venv/bin/python benchmarks/storage.py [-n 10000] [--durable-n 1000]
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from kubewerk.apiserver.storage import MemoryStore, SQLiteStore, Store

PREFIX = "/example.com/widgets/"


def make_objects(n: int) -> list[tuple[str, dict[str, Any]]]:
    """N custom resources of about 1 KiB each, spread over 10 namespaces."""
    out = []
    for i in range(n):
        ns, name = f"ns{i % 10}", f"widget-{i:06d}"
        out.append(
            (
                f"{PREFIX}{ns}/{name}",
                {
                    "apiVersion": "example.com/v1",
                    "kind": "Widget",
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "uid": f"3f1c9a6e-0000-4000-8000-{i:012d}",
                        "generation": 1,
                        "creationTimestamp": "2026-01-01T00:00:00Z",
                        "labels": {"app": "bench", "tier": f"t{i % 3}", "shard": str(i % 16)},
                        "annotations": {"note": "x" * 200},
                    },
                    "spec": {
                        "replicas": i % 5,
                        "image": "registry.example.com/widget:1.2.3",
                        "ports": [
                            {"name": "http", "port": 8080},
                            {"name": "metrics", "port": 9090},
                        ],
                        "env": [{"name": f"VAR_{j}", "value": f"value-{j}"} for j in range(8)],
                    },
                    "status": {
                        "phase": "Ready",
                        "observedGeneration": 1,
                        "conditions": [
                            {
                                "type": "Ready",
                                "status": "True",
                                "lastTransitionTime": "2026-01-01T00:00:00Z",
                                "reason": "Ok",
                                "message": "all good",
                            }
                        ],
                    },
                },
            )
        )
    return out


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        gc.enable()


class Raw:
    """The baseline: raw sqlite3 on one table, same pragmas as the store."""

    def __init__(self, path: Path, synchronous: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.conn.execute("CREATE TABLE kv (key TEXT PRIMARY KEY, value BLOB NOT NULL)")

    def creates(self, rows: list[tuple[str, bytes]]) -> None:
        ex = self.conn.execute
        for k, b in rows:
            ex("INSERT INTO kv(key, value) VALUES (?, ?)", (k, b))

    def updates(self, rows: list[tuple[str, bytes]]) -> None:
        ex = self.conn.execute
        for k, b in rows:
            ex("UPDATE kv SET value = ? WHERE key = ?", (b, k))

    def gets(self, keys: list[str]) -> None:
        ex = self.conn.execute
        for k in keys:
            ex("SELECT value FROM kv WHERE key = ?", (k,)).fetchone()

    def list(self) -> None:
        self.conn.execute(
            "SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key",
            (PREFIX, PREFIX[:-1] + "0"),
        ).fetchall()


def run_store(store: Store, objs: list[tuple[str, dict[str, Any]]]) -> dict[str, float]:
    keys = [k for k, _ in objs]
    changed = changed_objects(objs)

    def creates() -> None:
        for k, o in objs:
            store.create(k, o)

    def updates() -> None:
        for k, o in changed:
            store.update(k, o)

    def gets() -> None:
        for k in keys:
            store.get(k)

    def lists() -> None:
        items, _, _ = store.list(PREFIX)
        assert len(items) == len(objs)

    return {
        "create": timed(creates),
        "update": timed(updates),
        "get": timed(gets),
        "list": min(timed(lists) for _ in range(3)),
    }


def changed_objects(objs: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The same objects with a spec change (SQLite skips writing identical bytes)."""
    return [(k, {**o, "spec": {**o["spec"], "replicas": 7}}) for k, o in objs]


def run_raw(raw: Raw, objs: list[tuple[str, dict[str, Any]]]) -> dict[str, float]:
    rows = [(k, orjson.dumps(o)) for k, o in objs]
    new_rows = [(k, orjson.dumps(o)) for k, o in changed_objects(objs)]
    keys = [k for k, _ in objs]
    return {
        "create": timed(lambda: raw.creates(rows)),
        "update": timed(lambda: raw.updates(new_rows)),
        "get": timed(lambda: raw.gets(keys)),
        "list": min(timed(raw.list) for _ in range(3)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10_000, help="objects (default 10000)")
    ap.add_argument(
        "--durable-n",
        type=int,
        default=1000,
        help="objects for the durable (fsync per commit) comparison; 0 skips it",
    )
    args = ap.parse_args()
    n = args.n
    objs = make_objects(n)
    size = sum(len(orjson.dumps(o)) for _, o in objs) / n
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        raw = run_raw(Raw(d / "raw.db", "NORMAL"), objs)
        mem = run_store(MemoryStore(), objs)
        sql_store = SQLiteStore(d / "store.db")
        sql = run_store(sql_store, objs)
        sql_store.close()
        durable: tuple[dict[str, float], dict[str, float]] | None = None
        if args.durable_n:
            few = objs[: args.durable_n]
            raw_full = run_raw(Raw(d / "raw_full.db", "FULL"), few)
            dstore = SQLiteStore(d / "durable.db", durable=True)
            durable = (raw_full, run_store(dstore, few))
            dstore.close()

    print(f"{n} objects of {size:.0f} bytes (orjson); ratio = store rate / raw sqlite3 rate\n")
    print(
        f"{'operation':<22}{'raw sqlite3':>14}{'MemoryStore':>14}{'ratio':>8}"
        f"{'SQLiteStore':>14}{'ratio':>8}"
    )

    def row(
        label: str,
        op: str,
        r: dict[str, float],
        m: dict[str, float] | None,
        s: dict[str, float],
        count: int,
    ) -> None:
        def fmt(t: float) -> str:
            return f"{t * 1000:.1f} ms" if op == "list" else f"{count / t:,.0f}/s"

        mcol = f"{fmt(m[op]):>14}{r[op] / m[op]:>7.2f}x" if m else f"{'':>14}{'':>8}"
        print(f"{label:<22}{fmt(r[op]):>14}{mcol}{fmt(s[op]):>14}{r[op] / s[op]:>7.2f}x")

    row("create", "create", raw, mem, sql, n)
    row("update", "update", raw, mem, sql, n)
    row("get", "get", raw, mem, sql, n)
    row(f"list {n:,}", "list", raw, mem, sql, n)
    if durable:
        raw_full, dur = durable
        dn = args.durable_n
        row(f"create, durable ({dn})", "create", raw_full, None, dur, dn)
        row(f"update, durable ({dn})", "update", raw_full, None, dur, dn)


if __name__ == "__main__":
    main()
