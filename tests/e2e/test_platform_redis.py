"""The platform example with two operator processes (leader election) sharing a Redis
Streams bus (a real redis-server, tests/lifecycle/redis_fixture.py): every phase change
the leader publishes reaches the example's audit handler (``@platform.on()``, which
appends to ``KUBEWERK_PLATFORM_AUDIT``) exactly once across both processes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.lifecycle.redis_fixture import redis_server, redis_url  # noqa: F401

from .conftest import KubectlRun, wait_until
from .test_platform_example import (
    TENANTS,
    Api,
    Metrics,
    Operators,
    all_ready,
    apply_stacks,
    crds,  # noqa: F401
    operators,  # noqa: F401
    platform_objects,
)

pytestmark = pytest.mark.e2e

BUS_EVENTS = "kubewerk_bus_events_total"


def test_two_operators_sharing_a_redis_bus_deliver_each_event_to_exactly_one_handler(
    kc: KubectlRun,
    tserver: EmbeddedServer,
    tmp_path: Path,
    operators: Operators,  # noqa: F811
    redis_url: str,  # noqa: F811
    crds: None,  # noqa: F811
) -> None:
    import redis

    api = Api(tserver.url)
    audit = tmp_path / "audit.jsonl"
    env = {"KUBEWERK_PLATFORM_REDIS": redis_url, "KUBEWERK_PLATFORM_AUDIT": str(audit)}
    elect = ("--leader-elect", "--leader-election-namespace", "default")
    pair = [operators.start(*elect, **env), operators.start(*elect, **env)]
    for op in pair:
        assert op.url  # both are up: probes served, bus started
    docs = apply_stacks(kc, tmp_path, TENANTS, seed=5)
    expected = platform_objects(docs)
    wait_until(lambda: all_ready(api, expected), timeout=45, interval=0.1)

    r = redis.Redis.from_url(redis_url, decode_responses=True)
    try:

        def stream() -> list[dict[str, Any]] | None:
            published = [json.loads(e["event"]) for _, e in r.xrange("kubewerk:lifecycle")]
            changes = [e for e in published if e["type"] == "PhaseChanged"]
            return changes if len(changes) >= 3 * 19 else None

        changes = wait_until(stream, timeout=10)
        assert len(changes) == 3 * 19  # 18 objects a stack, a Job moves twice

        def lines() -> list[dict[str, Any]] | None:
            text = audit.read_text() if audit.exists() else ""
            got = [json.loads(line) for line in text.splitlines()]
            return got if len(got) >= len(changes) else None

        got = wait_until(lines, timeout=15)
        groups = {g["name"]: g for g in r.xinfo_groups("kubewerk:lifecycle")}
        group = next(name for name in groups if ".audit[" in name)
        consumers = r.xinfo_consumers("kubewerk:lifecycle", group)
    finally:
        r.close()
    # exactly once: every published phase change reached one handler, in one process
    key = lambda e: json.dumps(e, sort_keys=True)  # noqa: E731
    assert sorted(key(line["event"]) for line in got) == sorted(key(e) for e in changes)
    by_pid = Counter(line["pid"] for line in got)
    assert set(by_pid) <= {op.pid for op in pair}
    assert len(consumers) == 2  # both processes read the group

    def counted() -> list[Metrics] | None:
        metrics = [op.metrics() for op in pair]
        total = sum(m.value(BUS_EVENTS, type="PhaseChanged", status="delivered") for m in metrics)
        return metrics if total == len(changes) else None

    metrics = wait_until(counted, timeout=10)
    delivered = [m.value(BUS_EVENTS, type="PhaseChanged", status="delivered") for m in metrics]
    assert dict(by_pid) == {op.pid: n for op, n in zip(pair, delivered, strict=True) if n}
    published_by = [m.value(BUS_EVENTS, type="PhaseChanged", status="published") for m in metrics]
    assert sorted(published_by) == [0, len(changes)]  # only the leader reconciles
    print(f"deliveries per process: {dict(by_pid)}")
