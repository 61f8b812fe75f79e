"""Readiness gates (what a gate is and answers, which kinds it applies to) and the
memory of the kernel's own writes (which events and reconciles it drops)."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.lifecycle import Blocked, Gate, LifecycleDefinitionError, Platform
from kubewerk.lifecycle.own_writes import OwnWrites
from kubewerk.model import KubeModel, Resource
from kubewerk.runtime import Manager

from .models import GROUP, Cache, Database


def test_blocked_and_gate_check_their_fields() -> None:
    assert Blocked("DependencyNotReady", "waits for db", 5).requeue_after == 5
    with pytest.raises(ValueError, match="must be CamelCase"):
        Blocked("not ready")
    with pytest.raises(ValueError, match="requeue_after must be >= 0"):
        Blocked("Waiting", requeue_after=-1)
    with pytest.raises(LifecycleDefinitionError, match="is not a condition type"):
        Gate("deps ready", lambda o, c: None)
    with pytest.raises(LifecycleDefinitionError, match="belongs to the lifecycle"):
        Gate("Ready", lambda o, c: None)
    with pytest.raises(LifecycleDefinitionError, match="passed_reason"):
        Gate("DependenciesReady", lambda o, c: None, passed_reason="all good")
    assert Gate("example.com/Approved", lambda o, c: None).condition == "example.com/Approved"


async def test_a_gate_answers_blocked_or_none_sync_or_async() -> None:
    def sync_check(obj: Any, ctx: Any) -> Blocked | None:
        return Blocked("Waiting") if obj else None

    async def async_check(obj: Any, ctx: Any) -> Blocked | None:
        return sync_check(obj, ctx)

    for check in (sync_check, async_check):
        gate = Gate("DependenciesReady", check)
        assert await gate.ask(1, None) == Blocked("Waiting")
        assert await gate.ask(0, None) is None
    assert Gate("X", sync_check).name == "sync_check"
    wrong = Gate("X", lambda o, c: True)
    with pytest.raises(TypeError, match=r"returned True; return Blocked\(...\) or None"):
        await wrong.ask(None, None)


def test_gates_apply_to_their_kinds_and_own_their_condition() -> None:
    platform = Platform(Manager(probe_port=None))

    async def handler(obj: Any, ctx: Any) -> None:
        return None

    platform.kind(Database)(handler)
    platform.kind(Cache)(handler)

    @platform.gate("DependenciesReady")
    def everywhere(obj: Any, ctx: Any) -> None:
        return None

    @platform.gate("Approved", kinds=[Database])
    def databases_only(obj: Any, ctx: Any) -> None:
        return None

    @platform.gate("Drained", kinds=[Cache], teardown=True)
    def before_teardown(obj: Any, ctx: Any) -> None:
        return None

    db, cache = platform.registration(Database), platform.registration(Cache)
    assert [g.condition for g in platform.gates_for(db, teardown=False)] == [
        "DependenciesReady",
        "Approved",
    ]
    assert [g.condition for g in platform.gates_for(cache, teardown=False)] == ["DependenciesReady"]
    assert [g.condition for g in platform.gates_for(cache, teardown=True)] == ["Drained"]
    assert platform.gates_for(db, teardown=True) == []
    # a teardown gate means the kernel keeps its finalizer on the kind's objects
    assert platform._needs_finalizer(cache) and not platform._needs_finalizer(db)
    with pytest.raises(LifecycleDefinitionError, match="condition Approved is already registered"):
        platform.gate("Approved")(databases_only)
    platform.gate("Approved", kinds=[Cache])(databases_only)  # another kind: fine


def test_registering_a_kind_twice_or_without_a_phase_is_refused() -> None:
    platform = Platform(Manager(probe_port=None))

    async def handler(obj: Any, ctx: Any) -> None:
        return None

    platform.kind(Database)(handler)
    with pytest.raises(LifecycleDefinitionError, match="already registered"):
        platform.kind(Database)(handler)
    with pytest.raises(KeyError, match=r"Cache\.lifecycle\.kubewerk\.dev is not registered"):
        platform.registration(Cache)

    class NoPhaseStatus(KubeModel):
        ready: bool = False

    class Plain(Resource[KubeModel, NoPhaseStatus], group=GROUP):
        """No lifecycle, no phase."""

    with pytest.raises(LifecycleDefinitionError, match="Plain: the platform needs a status type"):
        platform.kind(Plain)(handler)


def obj(key: str, rv: str) -> dict[str, Any]:
    ns, name = key.split("/")
    return {"metadata": {"namespace": ns, "name": name, "resourceVersion": rv}}


def test_own_writes_drop_their_echoes_only() -> None:
    own = OwnWrites()
    pred = own.predicate
    own.begin("ns/a")
    # events of the key while it is reconciled are held, then decided
    assert not pred.update(obj("ns/a", "4"), obj("ns/a", "5"))
    assert not pred.update(obj("ns/a", "5"), obj("ns/a", "6"))
    assert own.end("ns/a", ["5", "6"], remember=True) is False  # all its own: no reconcile
    assert len(own) == 1
    # later echoes of those writes are dropped; someone else's change passes
    assert not pred.update(obj("ns/a", "4"), obj("ns/a", "5"))
    assert not pred.update(obj("ns/a", "5"), obj("ns/a", "6"))
    assert pred.update(obj("ns/a", "6"), obj("ns/a", "7"))
    assert own.is_own("ns/a", "6") and not own.is_own("ns/a", "7")
    assert pred.create(obj("ns/a", "6"))
    # a resync (same version) passes and clears the memory
    assert pred.update(obj("ns/a", "6"), obj("ns/a", "6"))
    assert not own.is_own("ns/a", "6")


def test_a_change_by_someone_else_during_a_reconcile_reconciles_again() -> None:
    own = OwnWrites()
    own.begin("ns/a")
    assert not own.predicate.update(obj("ns/a", "4"), obj("ns/a", "5"))  # not ours
    assert not own.predicate.update(obj("ns/a", "5"), obj("ns/a", "6"))  # ours
    assert own.end("ns/a", ["6"], remember=True) is True
    # a reconcile that failed or asked for more remembers nothing
    own.begin("ns/b")
    assert own.end("ns/b", ["9"], remember=False) is False
    assert own.predicate.update(obj("ns/b", "8"), obj("ns/b", "9"))
    # another key's reconcile holds nothing of this one
    own.begin("ns/c")
    assert own.predicate.update(obj("ns/d", "1"), obj("ns/d", "2"))
    own.end("ns/c", [], remember=True)
    # deletion and poke forget
    own.begin("ns/e")
    own.end("ns/e", ["3"], remember=True)
    own.poke("ns/e")
    assert not own.is_own("ns/e", "3")
    own.begin("ns/e")
    own.end("ns/e", ["4"], remember=True)
    assert own.predicate.delete(obj("ns/e", "4"))
    assert not own.is_own("ns/e", "4") and len(own) == 1  # ns/a's memory only


def test_two_kinds_of_one_name_get_two_controllers() -> None:
    from kubewerk.lifecycle import LifecycleStatus

    class OtherDatabase(
        Resource[KubeModel, LifecycleStatus], group="other.kubewerk.dev", kind="Database"
    ):
        """The same kind name in another group."""

    platform = Platform(Manager(probe_port=None))

    async def handler(obj: Any, ctx: Any) -> None:
        return None

    platform.kind(Database)(handler)
    platform.kind(OtherDatabase)(handler)
    assert [c.name for c in platform.manager.controllers] == [
        "database",
        "database.other.kubewerk.dev",
    ]


def test_gates_scale_with_kinds_and_stay_in_registration_order() -> None:
    """Asking costs no scan of every gate: with 2,000 gates of other kinds registered, a
    kind's gates are found without reading the others (counted: every implementation must
    read a gate's ``teardown`` to tell the two lists apart; a scan reads it 2,000 times an
    ask), a gate added after a first answer is seen, order is kept."""
    from kubewerk.client import ResourceType

    reads = 0

    class CountingGate(Gate):
        def __getattribute__(self, name: str) -> Any:
            nonlocal reads
            if name == "teardown":
                reads += 1
            return super().__getattribute__(name)

    platform = Platform(Manager(probe_port=None))

    async def handler(obj: Any, ctx: Any) -> None:
        return None

    platform.kind(Database)(handler)
    registration = platform.registration(Database)
    before = [g.condition for g in platform.gates_for(registration, teardown=False)]
    kinds = [ResourceType(GROUP, "v1", f"Kind{i}", f"kind{i}s") for i in range(2000)]
    for i, kind in enumerate(kinds):
        platform.add_gate(CountingGate(f"Gate{i}", lambda obj, ctx: None), kinds=[kind])
    platform.add_gate(CountingGate("Late", lambda obj, ctx: None))  # every kind, after an answer
    reads = 0
    answers = [platform.gates_for(registration, teardown=False) for _ in range(1000)]
    assert reads <= 1000 * (len(before) + 1), reads
    assert [g.condition for g in answers[-1]] == [*before, "Late"]
    with pytest.raises(LifecycleDefinitionError, match="condition Gate7 is already registered"):
        platform.add_gate(Gate("Gate7", lambda obj, ctx: None), kinds=[kinds[7]])
    with pytest.raises(LifecycleDefinitionError, match="condition Gate7 is already registered"):
        platform.add_gate(Gate("Gate7", lambda obj, ctx: None))
    platform.add_gate(Gate("Gate7", lambda obj, ctx: None, teardown=True), kinds=[kinds[7]])
