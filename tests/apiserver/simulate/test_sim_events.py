"""Events from the simulated cluster: what each component writes, as kube's do, and the
event correlator's deduplication, spam filter, series and expiry.

One manual-clock cluster per module; each test works in a namespace of its own."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubewerk.apiserver.request import Target
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.simulate import ManualClock, Simulation
from kubewerk.apiserver.simulate.clock import rfc3339
from kubewerk.apiserver.simulate.events import (
    SERIES_HEARTBEAT_SECONDS,
    SPAM_BURST,
    SPAM_REFILL_SECONDS,
    object_ref,
)
from kubewerk.core.jsoncopy import copy_json

from .conftest import add_missing_kinds, fast_config

JSON = dict[str, Any]

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster() -> AsyncIterator[tuple[EmbeddedServer, ManualClock]]:
    clock = ManualClock(dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
    config = fast_config(clock=clock, start_seconds=1, run_seconds=5, nodes=2)
    server = EmbeddedServer(simulate=config)
    add_missing_kinds(server)
    await server.start()
    try:
        yield server, clock
    finally:
        await server.stop()


def sim_of(server: EmbeddedServer) -> Simulation:
    sim = server.simulation
    assert isinstance(sim, Simulation)
    return sim


async def run(server: EmbeddedServer, clock: ManualClock, seconds: float = 0.0) -> None:
    await sim_of(server).settle()
    if seconds:
        clock.advance(seconds)
        await sim_of(server).settle()


def create(server: EmbeddedServer, group: str, resource: str, ns: str | None, body: JSON) -> JSON:
    rtype = server.app.registry.get(group, resource)
    assert rtype is not None
    if ns is not None:
        body["metadata"]["namespace"] = ns
    return server.app.api.create(Target(rtype, rtype.storage_version, ns), body, {}).body


def namespace(server: EmbeddedServer, name: str) -> str:
    create(server, "", "namespaces", None, {"metadata": {"name": name}})
    return name


def events(server: EmbeddedServer, ns: str, **match: str) -> list[JSON]:
    """The namespace's Events whose involvedObject has the ``match`` fields, oldest
    first."""
    items, _, _ = server.store.list(f"/core/events/{ns}/")
    out = [
        e
        for _, e in items
        if all((e.get("involvedObject") or {}).get(k) == v for k, v in match.items())
    ]
    return sorted(out, key=lambda e: e["metadata"]["name"].rsplit(".", 1)[-1].zfill(20))


def story(evs: list[JSON]) -> list[tuple[str, str, str]]:
    return [(e["type"], e["reason"], e["message"]) for e in evs]


def workload(kind: str, name: str, **spec: Any) -> JSON:
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template, **spec},
    }


async def test_a_deployment_tells_its_story(cluster: tuple[EmbeddedServer, ManualClock]) -> None:
    server, clock = cluster
    ns = namespace(server, "story")
    create(server, "apps", "deployments", ns, workload("Deployment", "web", replicas=2))
    await run(server, clock, 2)
    items, _, _ = server.store.list(f"/apps/replicasets/{ns}/")
    ((_, rs),) = items
    rs_name = rs["metadata"]["name"]
    (scaled,) = events(server, ns, kind="Deployment")
    assert story([scaled]) == [
        ("Normal", "ScalingReplicaSet", f"Scaled up replica set {rs_name} from 0 to 2")
    ]
    d = server.store.get(f"/apps/deployments/{ns}/web")
    assert d is not None
    assert scaled["involvedObject"] == {
        "kind": "Deployment",
        "namespace": ns,
        "name": "web",
        "uid": d["metadata"]["uid"],
        "apiVersion": "apps/v1",
        "resourceVersion": scaled["involvedObject"]["resourceVersion"],
    }
    assert scaled["source"] == {"component": "deployment-controller"}
    assert (scaled["reportingComponent"], scaled["reportingInstance"]) == (
        "deployment-controller",
        "",
    )
    assert scaled["count"] == 1 and scaled["firstTimestamp"] == scaled["lastTimestamp"]
    assert scaled["metadata"]["name"].startswith("web.")
    int(scaled["metadata"]["name"].split(".", 1)[1], 16)  # <name>.<hex nanoseconds>

    pods, _, _ = server.store.list(f"/core/pods/{ns}/")
    names = sorted(p["metadata"]["name"] for _, p in pods)
    created = story(events(server, ns, kind="ReplicaSet"))
    assert sorted(created) == [("Normal", "SuccessfulCreate", f"Created pod: {n}") for n in names]
    assert {e["source"]["component"] for e in events(server, ns, kind="ReplicaSet")} == {
        "replicaset-controller"
    }

    # one Pod's story: the scheduler (events.k8s.io), then its kubelet
    pod = next(p for _, p in pods if p["metadata"]["name"] == names[0])
    node = pod["spec"]["nodeName"]
    told = events(server, ns, kind="Pod", name=names[0])
    scheduled = told[0]
    assert story([scheduled]) == [
        ("Normal", "Scheduled", f"Successfully assigned {ns}/{names[0]} to {node}")
    ]
    assert scheduled["action"] == "Binding"
    assert scheduled["reportingComponent"] == "default-scheduler"
    assert scheduled["reportingInstance"].startswith("default-scheduler-")
    assert scheduled["source"] == {} and scheduled["firstTimestamp"] is None
    assert "count" not in scheduled and scheduled["eventTime"].endswith("Z")
    # written as the components' field managers
    assert [m["manager"] for m in scheduled["metadata"]["managedFields"]] == ["kube-scheduler"]
    assert [m["manager"] for m in scaled["metadata"]["managedFields"]] == [
        "kube-controller-manager"
    ]
    kubelet = told[1:]
    assert [(e["reason"], e["involvedObject"].get("fieldPath")) for e in kubelet] == [
        ("Pulling", "spec.containers{main}"),
        ("Pulled", "spec.containers{main}"),
        ("Created", "spec.containers{main}"),
        ("Started", "spec.containers{main}"),
    ]
    assert kubelet[0]["message"] == 'Pulling image "nginx:1.25"'
    assert kubelet[1]["message"].startswith('Successfully pulled image "nginx:1.25" in 1s (1s ')
    assert [e["message"] for e in kubelet][2:] == [
        "Created container: main",
        "Started container main",
    ]
    assert all(e["source"] == {"component": "kubelet", "host": node} for e in kubelet)
    assert all(e["reportingInstance"] == node for e in kubelet)
    assert {m["manager"] for e in kubelet for m in e["metadata"]["managedFields"]} == {"kubelet"}

    # scaling down: the Deployment's event and the ReplicaSet's delete
    rtype = server.app.registry.get("apps", "deployments")
    assert rtype is not None
    d = copy_json(d)
    d["spec"]["replicas"] = 1
    server.app.api.update(Target(rtype, rtype.storage_version, ns, "web"), d, {})
    await run(server, clock, 1)
    assert story(events(server, ns, kind="Deployment"))[-1] == (
        "Normal",
        "ScalingReplicaSet",
        f"Scaled down replica set {rs_name} from 2 to 1",
    )
    deleted = [
        e for e in events(server, ns, kind="ReplicaSet") if e["reason"] == "SuccessfulDelete"
    ]
    assert len(deleted) == 1 and deleted[0]["message"].startswith("Deleted pod: ")
    gone = deleted[0]["message"].removeprefix("Deleted pod: ")
    assert story(events(server, ns, kind="Pod", name=gone))[-1] == (
        "Normal",
        "Killing",
        "Stopping container main",
    )


async def test_identical_events_are_counted_not_repeated(
    cluster: tuple[EmbeddedServer, ManualClock],
) -> None:
    server, clock = cluster
    ns = namespace(server, "dedup")
    # a budget that selects nothing: every sync says NoPods again
    create(
        server,
        "policy",
        "poddisruptionbudgets",
        ns,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "none"}}},
        },
    )
    await run(server, clock)
    (first,) = events(server, ns, kind="PodDisruptionBudget")
    assert story([first]) == [("Normal", "NoPods", "No matching pods found")]
    assert first["source"] == {"component": "controllermanager"}
    clock.advance(7)
    sim_of(server).engine.enqueue("pdb", f"/policy/poddisruptionbudgets/{ns}/b")
    await run(server, clock)
    (again,) = events(server, ns, kind="PodDisruptionBudget")
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert again["count"] >= 2 and again["count"] == first["count"] + 1
    assert again["firstTimestamp"] == first["firstTimestamp"]
    assert again["lastTimestamp"] == rfc3339(clock.now()) != first["lastTimestamp"]


async def test_spam_filter_and_expiry(cluster: tuple[EmbeddedServer, ManualClock]) -> None:
    server, clock = cluster
    ns = namespace(server, "spam")
    cm = create(
        server,
        "",
        "configmaps",
        ns,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
    )
    sink = sim_of(server).engine.events
    recorder = sink.recorder("test-controller")
    dropped = sink.dropped
    for n in range(SPAM_BURST + 5):
        recorder.normal(cm, "Tick", f"tick {n}")
    assert len(events(server, ns, name="c")) == SPAM_BURST
    assert sink.dropped - dropped == 5
    # another source, or another object, has its own bucket
    sink.recorder("other").normal(cm, "Tick", "tick")
    assert len(events(server, ns, name="c")) == SPAM_BURST + 1
    # one token comes back every five minutes
    clock.advance(SPAM_REFILL_SECONDS)
    recorder.normal(cm, "Tick", "late 1")
    recorder.normal(cm, "Tick", "late 2")
    assert [e["message"] for e in events(server, ns, name="c")][-1] == "late 1"
    # an hour after its last write, an Event is gone (kube-apiserver's --event-ttl)
    await run(server, clock, 3600 - SPAM_REFILL_SECONDS + 1)
    assert [e["message"] for e in events(server, ns, name="c")] == ["late 1"]
    await run(server, clock, SPAM_REFILL_SECONDS)
    assert events(server, ns, name="c") == []
    assert object_ref(cm)["kind"] == "ConfigMap"


async def test_failed_scheduling_becomes_a_series(
    cluster: tuple[EmbeddedServer, ManualClock],
) -> None:
    server, clock = cluster
    ns = namespace(server, "series")
    big = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big"},
        "spec": {
            "containers": [
                {"name": "main", "image": "nginx:1.25", "resources": {"requests": {"cpu": "64"}}}
            ]
        },
    }
    create(server, "", "pods", ns, big)
    await run(server, clock)
    (failed,) = events(server, ns, name="big")
    assert (failed["type"], failed["reason"], failed["action"]) == (
        "Warning",
        "FailedScheduling",
        "Scheduling",
    )
    assert failed["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert "series" not in failed
    sim = sim_of(server)
    # the scheduler tries again: the second time is written at once as a series of 2
    sim.engine.retry_unschedulable()
    await run(server, clock)
    (twice,) = events(server, ns, name="big")
    assert twice["series"]["count"] == 2
    # later ones are counted, and written on the recorder's 30 s heartbeat
    sim.engine.retry_unschedulable()
    await run(server, clock)
    assert events(server, ns, name="big")[0]["series"]["count"] == 2
    await run(server, clock, SERIES_HEARTBEAT_SECONDS)
    (thrice,) = events(server, ns, name="big")
    assert thrice["series"]["count"] == 3
    assert thrice["metadata"]["name"] == failed["metadata"]["name"]


async def test_batch_sets_and_nodes(cluster: tuple[EmbeddedServer, ManualClock]) -> None:
    server, clock = cluster
    ns = namespace(server, "batch")
    job_template = {
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox:1.36"}],
            }
        }
    }
    create(
        server,
        "batch",
        "cronjobs",
        ns,
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "tick"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": job_template}},
        },
    )
    await run(server, clock)
    minute = int(clock.now().timestamp()) // 60
    wait = (5 - minute % 5) * 60 - clock.now().second
    await run(server, clock, wait)
    await run(server, clock, 2)
    await run(server, clock, 6)
    await run(server, clock, 1)
    jobs, _, _ = server.store.list(f"/batch/jobs/{ns}/")
    ((_, job),) = jobs
    job_name = job["metadata"]["name"]
    assert story(events(server, ns, kind="CronJob")) == [
        ("Normal", "SuccessfulCreate", f"Created job {job_name}"),
        ("Normal", "SawCompletedJob", f"Saw completed job: {job_name}, condition: Complete"),
    ]
    pods, _, _ = server.store.list(f"/core/pods/{ns}/")
    ((_, pod),) = pods
    assert story(events(server, ns, kind="Job")) == [
        ("Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}"),
        ("Normal", "Completed", "Job completed"),
    ]
    assert {e["source"]["component"] for e in events(server, ns, kind="Job")} == {"job-controller"}

    create(server, "apps", "statefulsets", ns, workload("StatefulSet", "db", replicas=1))
    await run(server, clock, 2)
    assert story(events(server, ns, kind="StatefulSet")) == [
        ("Normal", "SuccessfulCreate", "create Pod db-0 in StatefulSet db successful")
    ]

    # a cordoned node: its kubelet says so
    rtype = server.app.registry.get("", "nodes")
    assert rtype is not None
    node_name = sim_of(server).node_names[0]
    node = server.store.get(f"/core/nodes//{node_name}")
    assert node is not None
    node = copy_json(node)
    node["spec"]["unschedulable"] = True
    server.app.api.update(Target(rtype, rtype.storage_version, None, node_name), node, {})
    await run(server, clock)
    (cordon,) = events(server, "default", kind="Node", name=node_name)
    assert story([cordon]) == [
        ("Normal", "NodeNotSchedulable", f"Node {node_name} status is now: NodeNotSchedulable")
    ]
    assert cordon["involvedObject"] == {"kind": "Node", "name": node_name, "uid": node_name}
    assert cordon["source"] == {"component": "kubelet", "host": node_name}
    node = server.store.get(f"/core/nodes//{node_name}")
    assert node is not None
    node = copy_json(node)
    node["spec"]["unschedulable"] = False
    server.app.api.update(Target(rtype, rtype.storage_version, None, node_name), node, {})
    await run(server, clock)
    assert story(events(server, "default", kind="Node", name=node_name))[-1] == (
        "Normal",
        "NodeSchedulable",
        f"Node {node_name} status is now: NodeSchedulable",
    )


async def test_a_failed_node_and_its_evicted_pods(
    cluster: tuple[EmbeddedServer, ManualClock],
) -> None:
    server, clock = cluster
    ns = namespace(server, "failing")
    sim = sim_of(server)
    node_name = sim.node_names[1]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"nodeName": node_name, "containers": [{"name": "main", "image": "nginx:1.25"}]},
    }
    create(server, "", "pods", ns, pod)
    await run(server, clock, 2)
    sim.fail_node(node_name)
    try:
        await run(server, clock, 1)  # past node_monitor_grace_seconds and the eviction time
        await run(server, clock, 1)
        node_events = [
            e
            for e in events(server, "default", kind="Node", name=node_name)
            if e["source"]["component"] == "node-controller"
        ]
        assert story(node_events) == [
            ("Normal", "NodeNotReady", f"Node {node_name} status is now: NodeNotReady")
        ]
        assert node_events[0]["involvedObject"]["apiVersion"] == "v1"
        told = [
            (e["source"]["component"], e["type"], e["reason"], e["message"])
            for e in events(server, ns, name="p")
        ]
        assert ("node-controller", "Warning", "NodeNotReady", "Node is not ready") in told
        assert (
            "taint-eviction-controller",
            "Normal",
            "TaintManagerEviction",
            f"Marking for deletion Pod {ns}/p",
        ) in told
    finally:
        sim.recover_node(node_name)
        await run(server, clock, 1)
