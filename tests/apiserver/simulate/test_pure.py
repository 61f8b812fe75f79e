"""The simulation's pure parts: fenceposts and rolling steps, scheduler fit and its
message, pod-template hash and names, Job arithmetic, cron schedules, the manual clock."""

from __future__ import annotations

import datetime as dt

import pytest

from kubewerk.apiserver.simulate import naming
from kubewerk.apiserver.simulate.batch import _index_ranges, want_active
from kubewerk.apiserver.simulate.clock import ManualClock
from kubewerk.apiserver.simulate.cron import CronError, parse_schedule
from kubewerk.apiserver.simulate.fit import NodeUse, filter_node, fit_error, pod_requests, qos_class
from kubewerk.apiserver.simulate.rollout import (
    IntOrPercentError,
    RSCounts,
    fenceposts,
    new_rs_replicas,
    old_rs_scale_down,
)

UTC = dt.UTC


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        ("25%", "25%", 10, (3, 2)),  # surge rounds up, unavailable down
        ("25%", "25%", 3, (1, 0)),
        ("0%", "0%", 3, (0, 1)),  # both zero after rounding: one may be unavailable
        (0, "10%", 5, (0, 1)),
        (2, 5, 3, (2, 3)),  # never more unavailable than desired
        ("50%", "50%", 0, (0, 0)),
    ],
)
def test_fenceposts(
    surge: object, unavailable: object, desired: int, expected: tuple[int, int]
) -> None:
    assert fenceposts(surge, unavailable, desired) == expected


def test_fenceposts_refuse_a_bare_string() -> None:
    with pytest.raises(IntOrPercentError, match="string is not a percentage"):
        fenceposts("3", 1, 3)


def test_rolling_step_respects_surge_and_unavailability() -> None:
    desired, surge, unavailable = 4, 1, 1
    new = RSCounts("new", 0, 0, "2")
    old = RSCounts("old", 4, 4, "1")
    # the new set may grow by the surge only
    assert new_rs_replicas(desired, surge, new, [new, old]) == 1
    new = RSCounts("new", 1, 0, "2")
    # one old pod may go: 4 available - minAvailable 3
    assert old_rs_scale_down(desired, unavailable, new, [old]) == {"old": 3}
    # nothing more until the new pod is available
    old = RSCounts("old", 3, 3, "1")
    assert old_rs_scale_down(desired, unavailable, new, [old]) == {}
    assert new_rs_replicas(desired, surge, new, [new, old]) == 2
    # unhealthy old pods go first, beyond the availability budget
    broken = RSCounts("broken", 2, 0, "0")
    assert old_rs_scale_down(2, 0, RSCounts("new", 1, 1, "3"), [broken]) == {"broken": 1}


def test_scale_up_without_rollout_takes_the_whole_step() -> None:
    new = RSCounts("new", 3, 3, "1")
    assert new_rs_replicas(10, 3, new, [new]) == 10
    assert new_rs_replicas(2, 1, new, [new]) == 2


def _node(name: str, cpu: str = "2", pods: int = 110, **spec: object) -> dict[str, object]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "disk": "ssd"}},
        "spec": dict(spec),
        "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": str(pods)}},
    }


def _pod(cpu: str = "500m", **spec: object) -> dict[str, object]:
    return {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


def test_fit_counts_requests_and_pods() -> None:
    node = _node("n", cpu="1", pods=2)
    use = NodeUse()
    use.add(pod_requests(_pod("600m")))
    assert filter_node(_pod("500m"), node, use) == (["Insufficient cpu"], True)
    use = NodeUse()
    use.add({})
    use.add({})
    assert filter_node(_pod("1m"), node, use) == (["Too many pods"], True)
    assert filter_node(_pod("1m"), node, NodeUse()) == ([], True)


def test_fit_selector_taints_and_unschedulable() -> None:
    assert filter_node(_pod(nodeSelector={"disk": "hdd"}), _node("n"), NodeUse())[0] == [
        "node(s) didn't match Pod's node affinity/selector"
    ]
    tainted = _node("n", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    assert filter_node(_pod(), tainted, NodeUse()) == (
        ["node(s) had untolerated taint {dedicated: gpu}"],
        False,
    )
    tolerating = _pod(tolerations=[{"key": "dedicated", "operator": "Exists"}])
    assert filter_node(tolerating, tainted, NodeUse())[0] == []
    assert filter_node(_pod(), _node("n", unschedulable=True), NodeUse())[0] == [
        "node(s) were unschedulable"
    ]


def test_fit_error_is_kubes_message() -> None:
    failures = {f"n{i}": (["Insufficient cpu"], True) for i in range(3)}
    assert fit_error(failures, 3) == (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod."
    )
    mixed = {
        "a": (["Insufficient cpu", "Insufficient memory"], True),
        "b": (["node(s) didn't match Pod's node affinity/selector"], False),
    }
    assert fit_error(mixed, 2) == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are "
        "available: 1 No preemption victims found for incoming pod, 1 Preemption is not "
        "helpful for scheduling."
    )


def test_qos_class() -> None:
    assert qos_class({"spec": {"containers": [{"name": "a"}]}}) == "BestEffort"
    assert qos_class(_pod("1")) == "Burstable"
    limits = {"limits": {"cpu": "1", "memory": "1Gi"}}
    assert qos_class({"spec": {"containers": [{"resources": limits}]}}) == "Guaranteed"


def test_pod_template_hash_form_and_sensitivity() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}
    first = naming.pod_template_hash(template)
    assert first == naming.pod_template_hash({**template})
    assert set(first) <= set(naming.SAFE_ALPHABET)
    assert 1 <= len(first) <= 10
    assert naming.pod_template_hash(template, 1) != first
    other = {**template, "spec": {"containers": [{"name": "d"}]}}
    assert naming.pod_template_hash(other) != first


def test_fnv_and_safe_encoding_match_go() -> None:
    # Go: fnv.New32a() over "hello" -> 0x4f9f2cab
    assert naming.fnv32a(b"hello") == 0x4F9F2CAB
    # rand.SafeEncodeString maps byte values modulo the alphabet's length
    assert naming.safe_encode("0123") == "".join(naming.SAFE_ALPHABET[ord(c) % 27] for c in "0123")


def test_names() -> None:
    when = dt.datetime(2024, 1, 1, 0, 5, tzinfo=UTC)
    assert naming.cronjob_job_name("backup", when) == f"backup-{int(when.timestamp()) // 60}"
    assert naming.stateful_pod_name("db", 2) == "db-2"
    assert naming.ordinal_of("db", "db-10") == 10
    assert naming.ordinal_of("db", "db-01") is None
    assert naming.ordinal_of("db", "dbx-1") is None


def test_job_arithmetic() -> None:
    assert want_active(2, 5, 0, 0) == 2
    assert want_active(3, 5, 4, 1) == 1
    assert want_active(3, None, 0, 0) == 3
    assert want_active(3, None, 1, 2) == 2  # work queue: no new pods after a success
    assert _index_ranges([0, 1, 2, 4, 6, 7]) == "0-2,4,6-7"


def _next(spec: str, after: str, zone: str | None = None) -> str:
    from zoneinfo import ZoneInfo

    sched = parse_schedule(spec)
    start = dt.datetime.fromisoformat(after)
    found = sched.next_after(start, ZoneInfo(zone) if zone else None)
    assert found is not None
    return found.strftime("%Y-%m-%dT%H:%M")


def test_cron_fields_and_macros() -> None:
    assert _next("*/15 * * * *", "2024-01-01T00:07:00+00:00") == "2024-01-01T00:15"
    assert _next("0 9 * * MON-FRI", "2024-01-05T10:00:00+00:00") == "2024-01-08T09:00"
    assert _next("@hourly", "2024-01-01T00:00:00+00:00") == "2024-01-01T01:00"
    assert _next("@monthly", "2024-01-15T00:00:00+00:00") == "2024-02-01T00:00"
    assert _next("5/20 1 * * *", "2024-01-01T01:06:00+00:00") == "2024-01-01T01:25"
    # both day fields restricted: either matches (the 13th, or a Friday)
    assert _next("0 0 13 * 5", "2024-01-01T00:00:00+00:00") == "2024-01-05T00:00"
    # strictly after: an exact match moves on
    assert _next("0 0 * * *", "2024-01-01T00:00:00+00:00") == "2024-01-02T00:00"


def test_cron_time_zone() -> None:
    # 09:00 in New York is 14:00 UTC in winter
    assert _next("0 9 * * *", "2024-01-01T00:00:00+00:00", "America/New_York") == "2024-01-01T14:00"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("* * * *", "expected exactly 5 fields"),
        ("60 * * * *", "above maximum (59)"),
        ("* * * * 7", "above maximum (6)"),
        ("@reboot", "unrecognized descriptor"),
        ("a * * * *", "failed to parse int from a"),
        ("5-2 * * * *", "beyond end of range"),
    ],
)
def test_cron_refusals(spec: str, message: str) -> None:
    with pytest.raises(CronError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_schedule(spec)


def test_manual_clock_fires_in_order() -> None:
    clock = ManualClock()
    fired: list[str] = []
    clock.call_later(2, lambda: fired.append("b"))
    clock.call_later(
        1, lambda: (fired.append("a"), clock.call_later(0.5, lambda: fired.append("a2")))
    )
    cancelled = clock.call_later(1.2, lambda: fired.append("x"))
    cancelled.cancel()
    clock.advance(1.9)
    assert fired == ["a", "a2"]
    clock.advance(0.1)
    assert fired == ["a", "a2", "b"]
    with pytest.raises(ValueError):
        clock.set(clock.now() - dt.timedelta(seconds=1))
