"""Typed models against plain dicts: parse and dump N objects of a realistic kind.

    .venv/bin/python benchmarks/model.py            # -n 10000 --repeat 5

The kind is a KEDA-style ScaledObject with typed ObjectMeta (labels, annotations,
finalizers, ownerReferences, managedFields), a spec with nested objects, lists, maps,
int-or-string and bounded integers, and a status with two metav1 Conditions: about
1.6 KiB of JSON per object. The baseline is orjson on the same bytes in the same run:
``orjson.loads`` (parse) and ``orjson.dumps`` (dump). Ratios are model time / orjson
time (lower is better; the target is <= 5x for parse + dump). Memory is what
``tracemalloc`` sees allocated for the N parsed objects, per object.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

import orjson
from pydantic import Field

from kubewerk.model import Conditions, Int32, KubeModel, ListType, Quantity, Resource


class ScalingPolicy(KubeModel):
    type: str
    value: Int32
    period_seconds: Int32


class ScalingRules(KubeModel):
    stabilization_window_seconds: Int32 | None = None
    policies: Annotated[list[ScalingPolicy], ListType.ATOMIC] | None = None
    tolerance: Quantity | None = None


class Behavior(KubeModel):
    scale_up: ScalingRules | None = None
    scale_down: ScalingRules | None = None


class Target(KubeModel):
    api_version: str | None = None
    kind: str | None = None
    name: Annotated[str, Field(min_length=1)]


class AuthRef(KubeModel):
    name: str
    kind: Literal["TriggerAuthentication", "ClusterTriggerAuthentication"] | None = None


class Trigger(KubeModel):
    type: Annotated[str, Field(min_length=1)]
    name: str | None = None
    metadata: dict[str, str]
    authentication_ref: AuthRef | None = None
    use_cached_metrics: bool | None = None


class BenchSpec(KubeModel):
    scale_target_ref: Target
    polling_interval: Annotated[Int32, Field(ge=1)] | None = None
    cooldown_period: Annotated[Int32, Field(ge=0)] | None = None
    min_replica_count: Annotated[Int32, Field(ge=0)] | None = None
    max_replica_count: Annotated[Int32, Field(ge=1)] | None = None
    behavior: Behavior | None = None
    triggers: Annotated[list[Trigger], Field(min_length=1)]


class BenchStatus(KubeModel):
    conditions: Conditions | None = None
    hpa_name: str | None = None
    original_replica_count: Int32 | None = None
    last_active_time: datetime | None = None
    external_metric_names: list[str] | None = None
    health: dict[str, dict[str, Any]] | None = None


class BenchScaledObject(
    Resource[BenchSpec, BenchStatus], group="bench.kubewerk.dev", kind="ScaledObject"
):
    """A ScaledObject-like kind for the benchmark."""


def make(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "bench.kubewerk.dev/v1",
        "kind": "ScaledObject",
        "metadata": {
            "name": f"web-{i}",
            "namespace": f"team-{i % 17}",
            "uid": f"5f1c8c1e-0000-4000-8000-{i:012d}",
            "resourceVersion": str(100_000 + i),
            "generation": 3,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {
                "app.kubernetes.io/name": "web",
                "app.kubernetes.io/part-of": "shop",
                "tier": "frontend",
            },
            "annotations": {"example.com/owner": "platform-team", "example.com/revision": str(i)},
            "finalizers": ["finalizer.keda.sh"],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": f"web-{i}",
                    "uid": f"7a1c8c1e-0000-4000-8000-{i:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Apply",
                    "apiVersion": "bench.kubewerk.dev/v1",
                    "time": "2024-05-01T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:triggers": {}, "f:scaleTargetRef": {"f:name": {}}}},
                }
            ],
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"web-{i}"},
            "pollingInterval": 30,
            "cooldownPeriod": 300,
            "minReplicaCount": 1,
            "maxReplicaCount": 10 + i % 5,
            "behavior": {
                "scaleDown": {
                    "stabilizationWindowSeconds": 300,
                    "tolerance": "0.05",
                    "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}],
                }
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "name": "rps",
                    "metadata": {
                        "serverAddress": "http://prometheus:9090",
                        "threshold": "100",
                        "query": f'sum(rate(http_requests_total{{app="web-{i}"}}[2m]))',
                    },
                    "authenticationRef": {"name": "prom", "kind": "ClusterTriggerAuthentication"},
                },
                {"type": "cpu", "metadata": {"value": "60"}, "useCachedMetrics": False},
            ],
        },
        "status": {
            "hpaName": f"keda-hpa-web-{i}",
            "originalReplicaCount": 2,
            "lastActiveTime": "2024-05-01T10:00:05Z",
            "externalMetricNames": ["s0-prometheus"],
            "health": {"s0-prometheus": {"numberOfFailures": 0, "status": "Happy"}},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "ScaledObjectReady",
                    "message": "ScaledObject is defined correctly and is ready for scaling",
                    "lastTransitionTime": "2024-05-01T10:00:05Z",
                    "observedGeneration": 3,
                },
                {
                    "type": "Active",
                    "status": "False",
                    "reason": "ScalerNotActive",
                    "message": "Scaling is not performed because triggers are not active",
                    "lastTransitionTime": "2024-05-01T10:00:05Z",
                    "observedGeneration": 3,
                },
            ],
        },
    }


def best(repeat: int, func: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def allocated(build: Callable[[], list[Any]]) -> tuple[int, list[Any]]:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    objects = build()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return after - before, objects


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=10_000, help="objects (default 10000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement, best kept")
    args = parser.parse_args(argv)
    n = args.n
    model = BenchScaledObject
    dicts = [make(i) for i in range(n)]
    blobs = [orjson.dumps(d) for d in dicts]
    # correctness first: every object survives the round trip unchanged
    for blob in blobs[:100]:
        assert orjson.loads(model.from_json(blob).to_json()) == orjson.loads(blob)

    gc.disable()
    try:
        loads = best(args.repeat, lambda: [orjson.loads(b) for b in blobs])
        parsed_dicts = [orjson.loads(b) for b in blobs]
        dumps = best(args.repeat, lambda: [orjson.dumps(d) for d in parsed_dicts])
        from_json = best(args.repeat, lambda: [model.from_json(b) for b in blobs])
        models = [model.from_json(b) for b in blobs]
        to_json = best(args.repeat, lambda: [m.to_json() for m in models])
        from_dict = best(args.repeat, lambda: [model.from_dict(d) for d in parsed_dicts])
        to_dict = best(args.repeat, lambda: [m.to_dict() for m in models])
    finally:
        gc.enable()
    dict_bytes, _ = allocated(lambda: [orjson.loads(b) for b in blobs])
    model_bytes, _ = allocated(lambda: [model.from_json(b) for b in blobs])

    size = sum(len(b) for b in blobs) / n
    us = 1e6 / n
    print(
        f"{n} objects of {size:.0f} bytes of JSON; Python {sys.version.split()[0]}, "
        f"best of {args.repeat}; ratio = model time / orjson time"
    )
    print()
    print(f"{'operation':<34}{'per object':>12}{'ratio':>9}")
    print(f"{'orjson.loads (baseline parse)':<34}{loads * us:>9.1f} µs")
    print(f"{'orjson.dumps (baseline dump)':<34}{dumps * us:>9.1f} µs")
    print(f"{'Model.from_json (parse)':<34}{from_json * us:>9.1f} µs{from_json / loads:>8.2f}x")
    print(f"{'model.to_json (dump)':<34}{to_json * us:>9.1f} µs{to_json / dumps:>8.2f}x")
    total_ratio = (from_json + to_json) / (loads + dumps)
    print(f"{'parse + dump (JSON)':<34}{(from_json + to_json) * us:>9.1f} µs{total_ratio:>8.2f}x")
    print(
        f"{'Model.from_dict (parse a dict)':<34}{from_dict * us:>9.1f} µs{from_dict / loads:>8.2f}x"
    )
    print(f"{'model.to_dict (dump to a dict)':<34}{to_dict * us:>9.1f} µs{to_dict / dumps:>8.2f}x")
    dict_ratio = (from_dict + to_dict) / (loads + dumps)
    print(f"{'parse + dump (dicts)':<34}{(from_dict + to_dict) * us:>9.1f} µs{dict_ratio:>8.2f}x")
    print()
    print(
        f"memory per object: dict {dict_bytes / n:,.0f} B, model {model_bytes / n:,.0f} B "
        f"({model_bytes / dict_bytes:.2f}x)"
    )
    print(
        "target parse + dump <= 5x orjson: "
        f"{'met' if total_ratio <= 5 else 'NOT met'} ({total_ratio:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
