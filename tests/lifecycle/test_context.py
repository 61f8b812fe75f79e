"""LifecycleContext.transition and settle, over a fake client: what one transition
writes (one guarded status patch), what a refused one writes (nothing), what is
counted, recorded and published, and the cases that are no transition."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kubewerk.client import ResourceType
from kubewerk.client.errors import Conflict, error_from_status
from kubewerk.lifecycle import (
    DEFAULT_LIFECYCLE,
    IllegalTransition,
    Lifecycle,
    LifecycleContext,
    Phase,
    Transition,
    UnknownPhase,
)
from kubewerk.lifecycle.metrics import LifecycleMetrics
from kubewerk.runtime.controller import Controller

from .helpers import samples
from .models import CACHE_LIFECYCLE, Cache, CachePhase, Database


class FakeClient:
    def __init__(self, fail: Exception | None = None) -> None:
        self.patches: list[tuple[str, Any, str | None]] = []
        self.fail = fail

    async def patch(
        self, rt: Any, name: str, body: Any, namespace: str | None = None, **kw: Any
    ) -> Any:
        if self.fail is not None:
            raise self.fail
        self.patches.append((name, body, kw.get("subresource")))
        written = orjson.loads(orjson.dumps(STORED[name]))
        written["metadata"]["resourceVersion"] = "8"
        if isinstance(body.get("status"), dict):
            written["status"] = {**(written.get("status") or {}), **body["status"]}
        return written


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, regarding: Any, type: str, reason: str, note: str = "", **kw: Any) -> None:
        self.events.append((type, reason, note, kw.get("action", "")))


STORED: dict[str, dict[str, Any]] = {}


def stored(kind: Any, status: dict[str, Any] | None, generation: int = 1) -> dict[str, Any]:
    info = kind.kind_info() if hasattr(kind, "kind_info") else None
    obj: dict[str, Any] = {
        "apiVersion": info.api_version if info else "example.dev/v1",
        "kind": info.kind if info else "Widget",
        "metadata": {
            "name": "x",
            "namespace": "ns",
            "resourceVersion": "7",
            "generation": generation,
            "creationTimestamp": "2024-05-01T10:00:00Z",
        },
        "spec": {},
    }
    if status is not None:
        obj["status"] = status
    STORED["x"] = obj
    return obj


class Published(list[tuple[Any, ...]]):
    async def __call__(self, *args: Any) -> None:
        self.append(args)


def context(
    kind: Any,
    status: dict[str, Any] | None,
    lifecycle: Lifecycle[Any] = DEFAULT_LIFECYCLE,
    *,
    generation: int = 1,
    fail: Exception | None = None,
) -> tuple[LifecycleContext, FakeClient, FakeRecorder, Published, LifecycleMetrics, Any]:
    raw = stored(kind, status, generation)
    client = FakeClient(fail)
    recorder = FakeRecorder()
    ctrl: Controller[Any] = Controller("kind", kind, _nothing)
    ctrl.client = client  # type: ignore[assignment]
    ctrl.cache = None  # type: ignore[assignment]
    ctrl.recorder = recorder  # type: ignore[assignment]
    metrics = LifecycleMetrics(CollectorRegistry())
    published = Published()
    ctx = LifecycleContext(
        ctrl,
        "ns/x",
        orjson.dumps(raw),
        lifecycle,
        kind="Kind.example.dev",
        metrics=metrics,
        publish=published,
    )
    obj = (
        kind.model_validate(raw)
        if hasattr(kind, "model_validate")
        else orjson.loads(orjson.dumps(raw))
    )
    return ctx, client, recorder, published, metrics, obj


async def _nothing(obj: Any, ctx: Any) -> None:
    return None


async def test_a_transition_is_one_guarded_status_write_then_counted_recorded_published() -> None:
    ctx, client, recorder, published, metrics, db = context(Database, None)
    assert ctx.phase is Phase.PENDING and ctx.recorded_phase is None
    assert await ctx.transition(db, Phase.ACTIVE, reason="Provisioned", message="serving") is True
    ((name, body, sub),) = client.patches
    assert (name, sub) == ("x", "status")
    assert body["metadata"] == {"resourceVersion": "7"}
    status = body["status"]
    assert status["phase"] == "Active" and status["observedGeneration"] == 1
    assert status["lastTransitionTime"].endswith("Z")
    (ready,) = status["conditions"]
    assert (ready["type"], ready["status"], ready["reason"], ready["message"]) == (
        "Ready",
        "True",
        "Provisioned",
        "serving",
    )
    assert ready["observedGeneration"] == 1
    assert db.metadata.resource_version == "8" and ctx.recorded_phase == "Active"
    assert ctx.written_versions == ["8"]
    assert recorder.events == [
        ("Normal", "PhaseChanged", "Pending → Active: Provisioned (serving)", "PendingToActive")
    ]
    (event,) = published
    assert event[:7] == (
        "PhaseChanged",
        "Kind.example.dev",
        "ns/x",
        "Pending",
        "Active",
        "Provisioned",
        "serving",
    )
    assert len(event[7]) == 32 and all(c in "0123456789abcdef" for c in event[7])
    exposition = generate_latest(metrics.registry)
    assert samples(exposition, "kubewerk_phase_transitions_total") == {
        '{from="Pending",kind="Kind.example.dev",to="Active"}': 1.0
    }
    # time in Pending counted from creationTimestamp (no lastTransitionTime yet)
    (spent,) = samples(exposition, "kubewerk_phase_duration_seconds_sum").values()
    assert spent > 3600
    assert [str(t) for t in ctx.transitions] == ["Pending → Active (Provisioned)"]


async def test_an_illegal_transition_writes_nothing() -> None:
    ctx, client, recorder, published, _metrics, db = context(Database, {"phase": "Failed"})
    with pytest.raises(IllegalTransition) as info:
        await ctx.transition(db, Phase.ACTIVE)
    assert info.value.detail == (
        "illegal phase transition Failed → Active (allowed from Failed: Reconciling, Deleting)"
    )
    assert (info.value.source, info.value.target) == ("Failed", "Active")
    assert client.patches == []
    assert recorder.events == [("Warning", "IllegalTransition", info.value.detail, "Transition")]
    assert [p[:5] for p in published] == [
        ("IllegalTransition", "Kind.example.dev", "ns/x", "Failed", "Active")
    ]
    assert ctx.transitions == []


async def test_a_guard_is_asked_with_the_object_and_the_context() -> None:
    asked: list[Any] = []

    async def approved(obj: Any, ctx: Any) -> bool:
        asked.append((obj, ctx))
        return bool(obj["spec"].get("approved"))

    class_lc = Lifecycle(
        CachePhase,
        initial=CachePhase.WAITING,
        transitions=[
            Transition(CachePhase.WAITING, CachePhase.WARM, guard=approved),
            (CachePhase.WARM, CachePhase.COLD),
            (CachePhase.COLD, CachePhase.EVICTED),
        ],
        terminal=[CachePhase.EVICTED],
    )
    widget = ResourceType("example.dev", "v1", "Widget", "widgets")
    ctx, client, _recorder, _, _, obj = context(widget, None, class_lc)
    with pytest.raises(IllegalTransition, match="refused by its guard approved"):
        await ctx.transition(obj, "Warm")
    assert asked == [(obj, ctx)] and client.patches == []
    obj["spec"]["approved"] = True
    assert await ctx.transition(obj, CachePhase.WARM)
    assert client.patches[0][1]["status"]["phase"] == "Warm"
    # a plain dict object: the status is written into it too
    assert obj["status"]["phase"] == "Warm"
    assert obj["status"]["conditions"][0]["status"] == "False"  # Warm is not ready here


async def test_the_transitions_trigger_is_the_default_reason() -> None:
    ctx, client, recorder, _, _, cache = context(Cache, None, CACHE_LIFECYCLE)
    cache.spec.size = 2
    await ctx.transition(cache, CachePhase.WARM)
    assert client.patches[0][1]["status"]["conditions"][0]["reason"] == "Filled"
    assert recorder.events[0][2] == "Waiting → Warm: Filled"


async def test_staying_is_no_transition() -> None:
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Provisioned",
        "message": "serving",
        "lastTransitionTime": "2024-05-01T10:00:05Z",
        "observedGeneration": 1,
    }
    status = {"phase": "Active", "observedGeneration": 1, "conditions": [ready]}
    ctx, client, recorder, published, _, db = context(Database, status)
    assert await ctx.transition(db, Phase.ACTIVE) is False
    assert client.patches == [] and recorder.events == [] and published == []
    # a new generation: observedGeneration follows, the reason and message stay
    ctx, client, recorder, published, _, db = context(Database, status, generation=2)
    assert await ctx.transition(db, "Active") is False
    ((_, body, _),) = client.patches
    assert body["status"]["observedGeneration"] == 2
    (written,) = body["status"]["conditions"]
    assert (written["reason"], written["message"], written["observedGeneration"]) == (
        "Provisioned",
        "serving",
        2,
    )
    assert written["lastTransitionTime"] == "2024-05-01T10:00:05Z"
    assert recorder.events == [] and published == []


async def test_recording_the_initial_phase_is_no_transition() -> None:
    ctx, client, recorder, published, _metrics, db = context(Database, None)
    assert await ctx.transition(db, Phase.PENDING, message="waiting") is False
    ((_, body, _),) = client.patches
    assert body["status"]["phase"] == "Pending"
    assert body["status"]["lastTransitionTime"] == "2024-05-01T10:00:00Z"  # created then
    assert body["status"]["conditions"][0]["status"] == "False"
    assert recorder.events == [] and published == [] and ctx.transitions == []


async def test_settle_records_the_initial_phase_or_refreshes_the_generation() -> None:
    ctx, client, _, _, _, db = context(Database, None)
    assert await ctx.settle(db) is True
    assert client.patches[0][1]["status"]["phase"] == "Pending"
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Active",
        "message": "",
        "lastTransitionTime": "2024-05-01T10:00:05Z",
        "observedGeneration": 3,
    }
    current = {"phase": "Active", "observedGeneration": 3, "conditions": [ready]}
    ctx, client, _, _, _, db = context(Database, current, generation=3)
    assert await ctx.settle(db) is False and client.patches == []
    # a phase someone else wrote, without a Ready condition: Ready follows the phase
    ctx, client, _, _, _, db = context(Database, {"phase": "Active"}, generation=2)
    assert await ctx.settle(db) is True
    status = client.patches[0][1]["status"]
    assert status["observedGeneration"] == 2
    assert (status["conditions"][0]["status"], status["conditions"][0]["reason"]) == (
        "True",
        "Active",
    )


async def test_a_stored_phase_the_lifecycle_does_not_declare_may_go_anywhere() -> None:
    ctx, _client, recorder, _, _, db = context(Database, {"phase": "Retired"})
    assert ctx.phase is None and ctx.recorded_phase == "Retired"
    assert await ctx.transition(db, Phase.ACTIVE)
    assert recorder.events[0][2] == "Retired → Active: Active"


async def test_mistakes_raise_before_anything_is_written() -> None:
    ctx, client, recorder, published, _, db = context(Database, None)
    with pytest.raises(UnknownPhase):
        await ctx.transition(db, "Activ")
    with pytest.raises(ValueError, match="transition reason 'not camel' must be CamelCase"):
        await ctx.transition(db, Phase.ACTIVE, reason="not camel")
    assert client.patches == [] and recorder.events == [] and published == []


async def test_a_lost_race_counts_nothing() -> None:
    conflict = error_from_status(409, {"kind": "Status", "reason": "Conflict", "code": 409})
    assert isinstance(conflict, Conflict)
    ctx, _client, recorder, published, _metrics, db = context(Database, None, fail=conflict)
    with pytest.raises(Conflict):
        await ctx.transition(db, Phase.ACTIVE)
    assert recorder.events == [] and published == [] and ctx.transitions == []


async def test_a_failing_bus_does_not_undo_the_transition() -> None:
    ctx, client, recorder, _, _, db = context(Database, None)

    async def broken(*args: Any) -> None:
        raise RuntimeError("bus down")

    ctx.publish = broken
    assert await ctx.transition(db, Phase.ACTIVE) is True
    assert len(client.patches) == 1 and recorder.events[0][1] == "PhaseChanged"


def test_spec_changed_and_requeue_after() -> None:
    ctx, *_ = context(Database, {"phase": "Active", "observedGeneration": 1}, generation=2)
    assert ctx.spec_changed
    ctx, *_ = context(Database, {"phase": "Active", "observedGeneration": 2}, generation=2)
    assert not ctx.spec_changed
    ctx.requeue_after(5)
    ctx.requeue_after(2)
    ctx.requeue_after(9)
    assert ctx.requeue == 2
    with pytest.raises(ValueError):
        ctx.requeue_after(-1)
