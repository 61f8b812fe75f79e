"""Predicates, conditions, owner references, merge-patch diffs, event series, lease decisions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kubewerk.runtime import (
    ANNOTATIONS_CHANGED,
    GENERATION_CHANGED,
    LABELS_CHANGED,
    RESOURCE_VERSION_CHANGED,
    AlreadyOwnedError,
    LeaderRecord,
    SeriesCache,
    controller_of,
    decide,
    get_condition,
    has_labels,
    is_condition_true,
    label_selector,
    merge_patch_diff,
    predicate,
    remove_condition,
    set_condition,
    set_controller_reference,
    set_owner_reference,
)
from kubewerk.runtime.leaderelection import Observed
from tests.client.models import Widget


def obj(
    gen: int = 1,
    labels: dict[str, str] | None = None,
    ann: dict[str, str] | None = None,
    rv: str = "1",
) -> dict:
    return {
        "metadata": {
            "name": "a",
            "generation": gen,
            "labels": labels or {},
            "annotations": ann or {},
            "resourceVersion": rv,
        }
    }


def test_builtin_predicates() -> None:
    assert GENERATION_CHANGED.create(obj()) and GENERATION_CHANGED.delete(obj())
    assert not GENERATION_CHANGED.update(obj(1, rv="1"), obj(1, rv="2"))
    assert GENERATION_CHANGED.update(obj(1), obj(2))
    assert LABELS_CHANGED.update(obj(labels={"a": "1"}), obj(labels={"a": "2"}))
    assert not LABELS_CHANGED.update(obj(labels={"a": "1"}), obj(2, labels={"a": "1"}))
    assert ANNOTATIONS_CHANGED.update(obj(), obj(ann={"x": "y"}))
    assert not RESOURCE_VERSION_CHANGED.update(obj(rv="5"), obj(rv="5"))


def test_predicates_compose() -> None:
    team = has_labels({"team": "db"})
    p = GENERATION_CHANGED & team
    assert p.update(obj(1, {"team": "db"}), obj(2, {"team": "db"}))
    assert not p.update(obj(1, {"team": "web"}), obj(2, {"team": "web"}))
    q = GENERATION_CHANGED | LABELS_CHANGED
    assert q.update(obj(1, {"a": "1"}), obj(1, {"a": "2"}))
    assert not (~team).create(obj(labels={"team": "db"}))
    sel = label_selector("env in (prod,staging),!legacy")
    assert sel.create(obj(labels={"env": "prod"}))
    assert not sel.create(obj(labels={"env": "prod", "legacy": "1"}))
    named = predicate(lambda o: o["metadata"]["name"].startswith("a"))
    assert named.generic(obj()) and named.update(obj(), obj())


def test_conditions_transition_semantics_on_dicts() -> None:
    o: dict = {"metadata": {"generation": 3}}
    t1 = datetime(2026, 1, 1, tzinfo=UTC)
    t2 = datetime(2026, 1, 2, tzinfo=UTC)
    assert set_condition(o, "Ready", False, "Creating", "creating", now=t1)
    c = get_condition(o, "Ready")
    assert c == {
        "type": "Ready",
        "status": "False",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "Creating",
        "message": "creating",
        "observedGeneration": 3,
    }
    assert not set_condition(o, "Ready", False, "Creating", "creating", now=t2)  # no change
    assert set_condition(o, "Ready", False, "Waiting", "still", now=t2)
    assert (
        get_condition(o, "Ready")["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    )  # status unchanged
    assert set_condition(o, "Ready", True, "Done", now=t2)
    assert get_condition(o, "Ready")["lastTransitionTime"] == "2026-01-02T00:00:00Z"
    assert is_condition_true(o, "Ready")
    assert remove_condition(o, "Ready") and get_condition(o, "Ready") is None
    with pytest.raises(ValueError):
        set_condition(o, "Ready", "Yes", "X")  # type: ignore[arg-type]


def test_conditions_on_typed_models() -> None:
    w = Widget.model_validate(
        {"metadata": {"name": "w", "generation": 2}, "spec": {}, "status": {}}
    )
    assert set_condition(w, "Ready", True, "Up", "all good")
    assert w.status is not None and w.status.conditions is not None
    assert w.status.conditions[0].observed_generation == 2
    first = w.status.conditions[0].last_transition_time
    assert not set_condition(w, "Ready", True, "Up", "all good")
    assert set_condition(w, "Ready", False, "Down")
    assert is_condition_true(w, "Ready") is False
    assert w.to_dict()["status"]["conditions"][0]["status"] == "False"
    assert w.status.conditions[0].last_transition_time >= first


def owner(uid: str = "u1", name: str = "db", ns: str | None = "default") -> dict:
    meta: dict = {"name": name, "uid": uid}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "example.com/v1", "kind": "Database", "metadata": meta}


def test_controller_reference_rules() -> None:
    child: dict = {"metadata": {"name": "c", "namespace": "default"}}
    set_controller_reference(owner(), child)
    set_controller_reference(owner(), child)  # idempotent
    refs = child["metadata"]["ownerReferences"]
    assert refs == [
        {
            "apiVersion": "example.com/v1",
            "kind": "Database",
            "name": "db",
            "uid": "u1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert controller_of(child)["uid"] == "u1"
    with pytest.raises(AlreadyOwnedError):
        set_controller_reference(owner("u2", "other"), child)
    set_owner_reference(owner("u3", "third"), child)
    assert len(child["metadata"]["ownerReferences"]) == 2
    with pytest.raises(ValueError, match="cross-namespace"):
        set_controller_reference(owner(), {"metadata": {"name": "c", "namespace": "elsewhere"}})
    with pytest.raises(ValueError, match="cluster-scoped"):
        set_controller_reference(owner(), {"metadata": {"name": "c"}})
    set_controller_reference(
        owner(ns=None), {"metadata": {"name": "c", "namespace": "x"}}
    )  # cluster-scoped owner is fine
    with pytest.raises(ValueError, match="uid"):
        set_controller_reference(
            {"apiVersion": "v1", "kind": "X", "metadata": {"name": "n"}}, child
        )


def test_owner_reference_with_an_unparseable_api_version_is_no_match() -> None:
    # controller-runtime's referSameObject: a reference whose apiVersion does not parse
    # is not the same owner, so setting the owner adds a reference beside it
    child: dict = {
        "metadata": {
            "name": "c",
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "example.com/v1/x", "kind": "Database", "name": "db", "uid": "u0"},
            ],
        }
    }
    odd = {**owner("u2"), "apiVersion": "example.com/v1/y"}
    set_owner_reference(odd, child)  # not read as group "example.com/v1" twice
    assert [r["uid"] for r in child["metadata"]["ownerReferences"]] == ["u0", "u2"]
    set_owner_reference(owner(), child)
    set_owner_reference(owner(), child)  # a parseable one is matched
    assert [r["uid"] for r in child["metadata"]["ownerReferences"]] == ["u0", "u2", "u1"]


def test_merge_patch_diff() -> None:
    old = {"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2], "gone": True}
    new = {"a": 1, "b": {"c": 2, "d": 4, "e": 5}, "l": [1, 2, 3]}
    assert merge_patch_diff(old, new) == {"b": {"d": 4, "e": 5}, "l": [1, 2, 3], "gone": None}
    assert merge_patch_diff(old, old) == {}
    assert merge_patch_diff({"x": 1}, {"x": 1.5}) == {"x": 1.5}


def event(reason: str = "Created", name: str = "db", action: str = "Reconcile") -> dict:
    return {
        "metadata": {"name": f"{name}.1", "namespace": "default"},
        "action": action,
        "reason": reason,
        "reportingController": "ctl",
        "regarding": {
            "apiVersion": "v1",
            "kind": "X",
            "name": name,
            "namespace": "default",
            "uid": "u",
            "resourceVersion": "1",
        },
        "note": "n",
    }


def test_event_series_logic() -> None:
    cache = SeriesCache()
    assert cache.observe(event(), 0.0) == ("create", event())
    what, body = cache.observe({**event(), "note": "other text"}, 1.0)  # type: ignore[misc]
    assert what == "series" and body["series"]["count"] == 2
    assert cache.observe(event(), 2.0) is None  # count bumped only in the cache
    assert cache.observe(event(), 3.0) is None
    assert cache.observe(event("Deleted"), 3.0)[0] == "create"  # a different reason is a new event
    assert cache.observe(event(name="other"), 3.0)[0] == "create"
    # not due yet; flush writes the current count
    assert cache.due(10.0, 360, 1800) == []
    flushed = cache.due(10.0, 360, 1800, flush_all=True)
    assert [(w, b["series"]["count"]) for w, b in flushed] == [("series", 4)]
    assert cache.due(11.0, 360, 1800, flush_all=True) == []  # nothing new since
    # six minutes without an occurrence: the series finishes and leaves the cache
    finished = cache.due(3.0 + 360, 360, 1800)
    assert [b["series"]["count"] for _, b in finished] == [4]
    assert cache.observe(event(), 400.0)[0] == "create"


def test_lease_decisions() -> None:
    obs = Observed()
    free = LeaderRecord()
    write, rec, _ = decide(free, obs, "me", 100.0, 1e9, 15)
    assert (
        write and rec.holder == "me" and rec.transitions == 1 and rec.lease_duration_seconds == 15
    )
    other = LeaderRecord("them", 15, "t0", "t0", 4)
    obs = Observed()
    write, _, why = decide(other, obs, "me", 100.0, 1e9, 15)
    assert not write and "held by them" in why
    # unchanged record observed for longer than its duration: expired, take over
    write, rec, _ = decide(other, obs, "me", 115.1, 1e9, 15)
    assert write and rec.holder == "me" and rec.transitions == 5
    # the holder renewed (record changed): the observation clock restarts
    renewed = LeaderRecord("them", 15, "t0", "t1", 4)
    write, _, _ = decide(renewed, obs, "me", 116.0, 1e9, 15)
    assert not write
    # our own lease: renew, keep acquireTime and transitions
    mine = LeaderRecord("me", 15, "2026-01-01T00:00:00.000000Z", "x", 7)
    write, rec, _ = decide(mine, Observed(), "me", 0.0, 1e9, 15)
    assert write and rec.acquire_time == mine.acquire_time and rec.transitions == 7
    # a released lease (empty holder) can be taken at once
    released = LeaderRecord("", 1, "a", "a", 7)
    write, rec, _ = decide(released, Observed(), "next", 0.0, 1e9, 15)
    assert write and rec.transitions == 8
