"""Stuck reasons and Ready read from single objects (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubewerk.observe.health import ready_of, stuck_reasons

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def obj(**parts: Any) -> dict[str, Any]:
    meta = {"name": "a", "namespace": "ns", "creationTimestamp": ts(3600), **parts.pop("meta", {})}
    return {"apiVersion": "x.example.com/v1", "kind": "Thing", "metadata": meta, **parts}


def codes(o: dict[str, Any]) -> list[str]:
    return [s.code for s in stuck_reasons(o, NOW)]


def test_healthy_object_is_not_stuck() -> None:
    o = obj(
        meta={"generation": 2},
        status={
            "phase": "Active",
            "observedGeneration": 2,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    )
    assert codes(o) == []
    assert ready_of(o) == "True"
    assert ready_of(obj()) is None


def test_failed_phase_takes_the_ready_reason() -> None:
    o = obj(
        status={
            "phase": "Failed",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "QuotaExceeded",
                    "message": "too big",
                }
            ],
        }
    )
    [stuck] = stuck_reasons(o, NOW)
    assert (stuck.code, stuck.reason, stuck.message) == ("Failed", "QuotaExceeded", "too big")
    bare = stuck_reasons(obj(status={"phase": "Failed"}), NOW)
    assert (bare[0].reason, bare[0].message) == ("Failed", "phase is Failed")


def test_dependencies_not_ready() -> None:
    cond = {
        "type": "DependenciesReady",
        "status": "False",
        "reason": "DependencyCycle",
        "message": "A -> B -> A",
    }
    [stuck] = stuck_reasons(obj(status={"conditions": [cond]}), NOW)
    assert (stuck.code, stuck.reason, stuck.message) == (
        "DependenciesNotReady",
        "DependencyCycle",
        "A -> B -> A",
    )
    ok = {**cond, "status": "True"}
    assert codes(obj(status={"conditions": [ok]})) == []


def test_finalizers_pending_after_grace_only() -> None:
    held = obj(meta={"deletionTimestamp": ts(300), "finalizers": ["kubewerk.dev/lifecycle"]})
    [stuck] = stuck_reasons(held, NOW)
    assert stuck.code == "FinalizersPending"
    assert stuck.message == "deleted 5m ago, still held by finalizers: kubewerk.dev/lifecycle"
    fresh = obj(meta={"deletionTimestamp": ts(5), "finalizers": ["f"]})
    assert codes(fresh) == []
    assert codes(obj(meta={"deletionTimestamp": ts(300), "finalizers": []})) == []


def test_generation_not_observed_after_grace() -> None:
    behind = obj(meta={"generation": 3}, status={"observedGeneration": 2})
    [stuck] = stuck_reasons(behind, NOW)
    assert stuck.message == "generation 3 not observed (observedGeneration 2)"
    # just written: the controller gets its grace period
    just = obj(
        meta={"generation": 3, "managedFields": [{"manager": "kubectl", "time": ts(2)}]},
        status={"observedGeneration": 2},
    )
    assert codes(just) == []
    # the Ready condition's observedGeneration counts when status has none
    by_condition = obj(
        meta={"generation": 5},
        status={"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 4}]},
    )
    assert codes(by_condition) == ["GenerationNotObserved"]
    # no observedGeneration at all: a kind that does not report it is not stuck
    assert codes(obj(meta={"generation": 5}, status={})) == []


def test_severity_order_and_malformed_fields() -> None:
    o = obj(
        meta={"generation": 3, "deletionTimestamp": ts(100), "finalizers": ["f"]},
        status={
            "phase": "Failed",
            "observedGeneration": 1,
            "conditions": [{"type": "DependenciesReady", "status": "False"}],
        },
    )
    assert codes(o) == [
        "Failed",
        "DependenciesNotReady",
        "FinalizersPending",
        "GenerationNotObserved",
    ]
    junk = {
        "metadata": {"generation": "x", "finalizers": "nope"},
        "status": {"conditions": "no", "phase": 3},
    }
    assert stuck_reasons(junk, NOW) == []
    assert ready_of({"status": []}) is None
