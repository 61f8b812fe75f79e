"""The simulated cluster end to end inside one embedded server: workloads become ready,
scale, roll, fail and are collected as on a cluster."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from kubewerk.apiserver.request import Target
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.simulate import FAIL_ANNOTATION, ManualClock

from .conftest import condition, fast_config, stored, wait_for

JSON = dict[str, Any]


def create(server: EmbeddedServer, group: str, resource: str, body: JSON) -> JSON:
    rtype = server.app.registry.get(group, resource)
    assert rtype is not None
    ns = body["metadata"].get("namespace", "default") if rtype.namespaced else None
    if ns:
        body["metadata"]["namespace"] = ns
    return server.app.api.create(Target(rtype, rtype.storage_version, ns), body, {}).body


def patch(server: EmbeddedServer, group: str, resource: str, name: str, doc: JSON) -> JSON:
    import orjson

    rtype = server.app.registry.get(group, resource)
    assert rtype is not None
    target = Target(rtype, rtype.storage_version, "default", name)
    return server.app.api.patch(target, orjson.dumps(doc), "application/merge-patch+json", {}).body


def delete(
    server: EmbeddedServer, group: str, resource: str, name: str, ns: str = "default"
) -> None:
    rtype = server.app.registry.get(group, resource)
    assert rtype is not None
    server.app.api.delete(Target(rtype, rtype.storage_version, ns, name), {}, {})


def deployment(name: str, replicas: int, image: str = "nginx:1.25", **spec: Any) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
            **spec,
        },
    }


def get(server: EmbeddedServer, key: str) -> JSON | None:
    return server.store.get(key)


def available(server: EmbeddedServer, name: str, replicas: int) -> JSON | None:
    d = get(server, f"/apps/deployments/default/{name}")
    cond = condition(d, "Available")
    prog = condition(d, "Progressing")
    status = (d or {}).get("status") or {}
    if (
        cond
        and cond["status"] == "True"
        and prog
        and prog.get("reason") == "NewReplicaSetAvailable"
        and status.get("availableReplicas", 0) == replicas
        and status.get("replicas", 0) == replicas
    ):
        return d
    return None


def pods(server: EmbeddedServer, ns: str = "default") -> list[JSON]:
    return stored(server, f"/core/pods/{ns}/")


async def test_deployment_becomes_available_scales_and_is_collected(
    sim_server: EmbeddedServer,
) -> None:
    create(sim_server, "apps", "deployments", deployment("web", 3))
    d = await wait_for(lambda: available(sim_server, "web", 3), what="web Available")
    assert d["status"]["updatedReplicas"] == 3 and d["status"]["readyReplicas"] == 3
    assert condition(d, "Available")["reason"] == "MinimumReplicasAvailable"
    assert condition(d, "Available")["message"] == "Deployment has minimum availability."
    rs = stored(sim_server, "/apps/replicasets/default/")
    assert len(rs) == 1
    template_hash = rs[0]["metadata"]["labels"]["pod-template-hash"]
    assert rs[0]["metadata"]["name"] == f"web-{template_hash}"
    assert rs[0]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    ref = rs[0]["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["controller"], ref["blockOwnerDeletion"]) == ("Deployment", True, True)
    running = pods(sim_server)
    assert len(running) == 3
    for pod in running:
        assert pod["status"]["phase"] == "Running"
        assert pod["metadata"]["name"].startswith(f"web-{template_hash}-")
        assert pod["metadata"]["labels"]["pod-template-hash"] == template_hash
        assert pod["spec"]["nodeName"].startswith("kubewerk-node-")
        status = pod["status"]["containerStatuses"][0]
        assert status["ready"] and status["started"] and "running" in status["state"]
        assert [c["type"] for c in pod["status"]["conditions"]] == [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ]
        assert pod["status"]["podIP"].startswith("10.244.")
    # spread over the nodes
    assert len({p["spec"]["nodeName"] for p in running}) == 3
    patch(sim_server, "apps", "deployments", "web", {"spec": {"replicas": 5}})
    await wait_for(lambda: available(sim_server, "web", 5), what="scaled up")
    patch(sim_server, "apps", "deployments", "web", {"spec": {"replicas": 1}})
    await wait_for(lambda: available(sim_server, "web", 1), what="scaled down")
    await wait_for(lambda: len(pods(sim_server)) == 1, what="surplus pods gone")
    # garbage collection removes the tree
    delete(sim_server, "apps", "deployments", "web")
    await wait_for(
        lambda: not pods(sim_server) and not stored(sim_server, "/apps/replicasets/default/"),
        what="tree collected",
    )


async def test_rolling_update_respects_surge_and_unavailable(sim_server: EmbeddedServer) -> None:
    spec = {
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}
    }
    create(sim_server, "apps", "deployments", deployment("roll", 4, **spec))
    await wait_for(lambda: available(sim_server, "roll", 4), what="first rollout")
    seen: list[tuple[int, int]] = []

    def watch(ev: Any) -> None:
        if ev.key.startswith("/core/pods/default/roll-"):
            live = [p for p in pods(sim_server) if not p["metadata"].get("deletionTimestamp")]
            ready = [p for p in live if (condition(p, "Ready") or {}).get("status") == "True"]
            seen.append((len(live), len(ready)))

    unsubscribe = sim_server.store.subscribe(watch)
    try:
        patch(
            sim_server,
            "apps",
            "deployments",
            "roll",
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}
                }
            },
        )
        d = await wait_for(
            lambda: (
                available(sim_server, "roll", 4)
                if len(stored(sim_server, "/apps/replicasets/default/")) == 2
                and all(
                    p["spec"]["containers"][0]["image"] == "nginx:1.26" for p in pods(sim_server)
                )
                and len(pods(sim_server)) == 4
                else None
            ),
            what="second rollout",
        )
    finally:
        unsubscribe()
    assert seen
    assert max(total for total, _ in seen) <= 4 + 1  # maxSurge
    assert min(ready for _, ready in seen) >= 4 - 1 - 1  # maxUnavailable (+ the one starting)
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    old = [
        rs
        for rs in stored(sim_server, "/apps/replicasets/default/")
        if rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    ]
    assert old and old[0]["spec"]["replicas"] == 0


async def test_unschedulable_pod_gets_kubes_condition(sim_server: EmbeddedServer) -> None:
    body = deployment("huge", 1)
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "64"}}
    create(sim_server, "apps", "deployments", body)

    def pending() -> JSON | None:
        for pod in pods(sim_server):
            cond = condition(pod, "PodScheduled")
            if cond and cond["status"] == "False":
                return cond
        return None

    cond = await wait_for(pending, what="Unschedulable")
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod."
    )
    d = get(sim_server, "/apps/deployments/default/huge")
    assert (condition(d, "Available") or {}).get("status") == "False"


async def test_available_means_minimum_availability(sim_server: EmbeddedServer) -> None:
    """``Available`` is True once ``availableReplicas >= replicas - maxUnavailable``
    (kube's calculateStatus), not when every replica is available: of two Pods that
    each fill a node, pinned to one node, one runs and one stays Pending."""

    def pinned(name: str, node: str, **spec: Any) -> JSON:
        body = deployment(name, 2, **spec)
        pod = body["spec"]["template"]["spec"]
        pod["nodeSelector"] = {"kubernetes.io/hostname": node}
        pod["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
        return body

    one = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}
    create(sim_server, "apps", "deployments", pinned("lenient", "kubewerk-node-0", strategy=one))
    # the default 25%/25%: maxUnavailable floor(0.5) = 0
    create(sim_server, "apps", "deployments", pinned("strict", "kubewerk-node-1"))

    def settled() -> list[JSON] | None:
        out = []
        for name in ("lenient", "strict"):
            d = get(sim_server, f"/apps/deployments/default/{name}")
            status = (d or {}).get("status") or {}
            if (status.get("replicas"), status.get("availableReplicas")) != (2, 1):
                return None
            out.append(d)
        return out

    lenient, strict = await wait_for(settled, what="one Pod of two available in each")
    assert lenient["status"]["unavailableReplicas"] == 1
    cond = condition(lenient, "Available") or {}
    assert (cond.get("status"), cond.get("reason"), cond.get("message")) == (
        "True",
        "MinimumReplicasAvailable",
        "Deployment has minimum availability.",
    )
    cond = condition(strict, "Available") or {}
    assert (cond.get("status"), cond.get("reason"), cond.get("message")) == (
        "False",
        "MinimumReplicasUnavailable",
        "Deployment does not have minimum availability.",
    )


async def test_crash_loop_and_image_pull_failures(sim_server: EmbeddedServer) -> None:
    crash = deployment("crash", 1)
    crash["spec"]["template"]["metadata"]["annotations"] = {FAIL_ANNOTATION: "crash"}
    create(sim_server, "apps", "deployments", crash)
    pull = deployment("pull", 1)
    pull["spec"]["template"]["metadata"]["annotations"] = {FAIL_ANNOTATION: "image-pull"}
    create(sim_server, "apps", "deployments", pull)

    def status_of(prefix: str) -> JSON | None:
        for pod in pods(sim_server):
            if pod["metadata"]["name"].startswith(prefix):
                statuses = pod["status"].get("containerStatuses") or []
                return statuses[0] if statuses else None
        return None

    def crash_looping() -> JSON | None:
        status = status_of("crash-")
        waiting = ((status or {}).get("state") or {}).get("waiting") or {}
        if waiting.get("reason") == "CrashLoopBackOff" and status and status["restartCount"] >= 2:
            return status
        return None

    status = await wait_for(crash_looping, what="CrashLoopBackOff")
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert status["lastState"]["terminated"]["reason"] == "Error"
    assert status["state"]["waiting"]["message"].startswith("back-off ")
    assert "restarting failed container=main pod=crash-" in status["state"]["waiting"]["message"]
    assert status["ready"] is False
    pulled = await wait_for(
        lambda: (
            (s := status_of("pull-"))
            and (s.get("state") or {}).get("waiting", {}).get("reason") == "ImagePullBackOff"
            and s
        ),
        what="ImagePullBackOff",
    )
    assert pulled["state"]["waiting"]["message"] == 'Back-off pulling image "nginx:1.25"'


@pytest.fixture
def sim_config() -> Any:
    return fast_config(eviction_seconds=0.05)


async def test_node_failure_marks_node_and_replaces_pods(sim_server: EmbeddedServer) -> None:
    create(sim_server, "apps", "deployments", deployment("ha", 3))
    await wait_for(lambda: available(sim_server, "ha", 3), what="ha Available")
    sim = sim_server.simulation
    assert sim is not None
    victim = pods(sim_server)[0]["spec"]["nodeName"]
    disrupted: list[JSON] = []

    def watch(ev: Any) -> None:
        if ev.key.startswith("/core/pods/") and condition(ev.obj, "DisruptionTarget"):
            disrupted.append(ev.obj)

    unsubscribe = sim_server.store.subscribe(watch)
    sim.fail_node(victim)

    def node_unknown() -> JSON | None:
        node = get(sim_server, f"/core/nodes//{victim}")
        cond = condition(node, "Ready")
        return node if cond and cond["status"] == "Unknown" else None

    node = await wait_for(node_unknown, what="node NotReady")
    ready = condition(node, "Ready")
    assert ready["reason"] == "NodeStatusUnknown"
    assert ready["message"] == "Kubelet stopped posting node status."
    assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} == {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }

    def replaced() -> bool:
        live = [
            p
            for p in pods(sim_server)
            if not p["metadata"].get("deletionTimestamp")
            and (condition(p, "Ready") or {}).get("status") == "True"
        ]
        return len(live) == 3 and all(p["spec"]["nodeName"] != victim for p in live)

    await wait_for(replaced, what="replacement pods")
    unsubscribe()
    assert disrupted and all(p["spec"]["nodeName"] == victim for p in disrupted)
    cond = condition(disrupted[0], "DisruptionTarget") or {}
    assert (cond.get("reason"), cond.get("message")) == (
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )
    assert (condition(disrupted[0], "Ready") or {}).get("status") == "False"
    # evicted pods stay Terminating while their node is down (where deletion is graceful)
    evicted = [p for p in pods(sim_server) if p["spec"]["nodeName"] == victim]
    assert all(p["metadata"].get("deletionTimestamp") for p in evicted)
    sim.recover_node(victim)
    await wait_for(
        lambda: not [p for p in pods(sim_server) if p["spec"]["nodeName"] == victim],
        what="terminating pods removed after recovery",
    )
    node = get(sim_server, f"/core/nodes//{victim}")
    assert condition(node, "Ready")["status"] == "True"
    assert not node["spec"].get("taints")


async def test_job_completions_and_backoff_limit(sim_server: EmbeddedServer) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi"},
        "spec": {
            "completions": 3,
            "parallelism": 2,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}
            },
        },
    }
    create(sim_server, "batch", "jobs", job)

    def done(name: str, ctype: str) -> JSON | None:
        j = get(sim_server, f"/batch/jobs/default/{name}")
        return j if (condition(j, ctype) or {}).get("status") == "True" else None

    j = await wait_for(lambda: done("pi", "Complete"), what="Job Complete")
    assert j["status"]["succeeded"] == 3 and "active" not in j["status"]
    assert condition(j, "SuccessCriteriaMet")["reason"] == "CompletionsReached"
    assert condition(j, "Complete")["message"] == "Reached expected number of succeeded pods"
    assert j["status"]["completionTime"] and j["status"]["startTime"]
    failing = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "bad"},
        "spec": {
            "backoffLimit": 1,
            "template": {
                "metadata": {"annotations": {FAIL_ANNOTATION: "crash"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "x", "image": "busybox"}],
                },
            },
        },
    }
    create(sim_server, "batch", "jobs", failing)
    j = await wait_for(lambda: done("bad", "Failed"), what="Job Failed")
    assert j["status"]["failed"] == 2
    assert condition(j, "FailureTarget")["reason"] == "BackoffLimitExceeded"
    assert condition(j, "Failed")["message"] == "Job has reached the specified backoff limit"


async def test_statefulset_ordered_daemonset_per_node_and_claims(
    sim_server: EmbeddedServer,
) -> None:
    created_order: list[str] = []

    def watch(ev: Any) -> None:
        if ev.type == "ADDED" and ev.key.startswith("/core/pods/default/db-"):
            created_order.append(ev.key.rsplit("/", 1)[1])

    unsubscribe = sim_server.store.subscribe(watch)
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "pg", "image": "postgres"}]},
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }
    create(sim_server, "apps", "statefulsets", sts)
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "a", "image": "agent"}]},
            },
        },
    }
    create(sim_server, "apps", "daemonsets", ds)

    def sts_ready() -> JSON | None:
        s = get(sim_server, "/apps/statefulsets/default/db")
        return s if ((s or {}).get("status") or {}).get("readyReplicas") == 3 else None

    s = await wait_for(sts_ready, what="StatefulSet ready")
    unsubscribe()
    assert created_order == ["db-0", "db-1", "db-2"]
    assert s["status"]["currentRevision"] == s["status"]["updateRevision"]
    pod = get(sim_server, "/core/pods/default/db-1")
    assert pod["spec"]["hostname"] == "db-1" and pod["spec"]["subdomain"] == "db"
    assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}} in pod["spec"][
        "volumes"
    ]

    def claims_bound() -> list[JSON] | None:
        claims = stored(sim_server, "/core/persistentvolumeclaims/default/")
        ok = len(claims) == 3 and all(c.get("status", {}).get("phase") == "Bound" for c in claims)
        return claims if ok else None

    claims = await wait_for(claims_bound, what="claims bound")
    pv = get(sim_server, f"/core/persistentvolumes//{claims[0]['spec']['volumeName']}")
    assert pv["status"]["phase"] == "Bound"
    assert pv["spec"]["claimRef"]["name"] == claims[0]["metadata"]["name"]
    assert claims[0]["spec"]["storageClassName"] == "standard"
    assert claims[0]["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"

    def ds_ready() -> JSON | None:
        d = get(sim_server, "/apps/daemonsets/default/agent")
        status = (d or {}).get("status") or {}
        return (
            d
            if status.get("numberReady") == 3 and status.get("desiredNumberScheduled") == 3
            else None
        )

    await wait_for(ds_ready, what="DaemonSet ready")
    agents = [p for p in pods(sim_server) if p["metadata"]["name"].startswith("agent-")]
    assert sorted(p["spec"]["nodeName"] for p in agents) == [f"kubewerk-node-{i}" for i in range(3)]


async def test_service_endpoints_follow_ready_pods(sim_server: EmbeddedServer) -> None:
    create(sim_server, "apps", "deployments", deployment("api", 2))
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "api", "labels": {"tier": "backend"}},
        "spec": {
            "selector": {"app": "api"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
        },
    }
    create(sim_server, "", "services", svc)

    def slice_ready() -> JSON | None:
        for s in stored(sim_server, "/discovery.k8s.io/endpointslices/default/"):
            eps = s.get("endpoints") or []
            if len(eps) == 2 and all(e["conditions"]["ready"] for e in eps):
                return s
        return None

    s = await wait_for(slice_ready, what="EndpointSlice")
    assert s["metadata"]["labels"]["kubernetes.io/service-name"] == "api"
    assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == (
        "endpointslice-controller.k8s.io"
    )
    assert s["metadata"]["name"].startswith("api-")
    assert s["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    ep = get(sim_server, "/core/endpoints/default/api")
    assert len(ep["subsets"][0]["addresses"]) == 2
    delete(sim_server, "", "services", "api")
    await wait_for(
        lambda: (
            not stored(sim_server, "/discovery.k8s.io/endpointslices/default/api-")
            and get(sim_server, "/core/endpoints/default/api") is None
        ),
        what="endpoints removed",
    )


async def test_cronjob_runs_on_the_manual_clock() -> None:
    from .conftest import add_missing_kinds

    clock = ManualClock(dt.datetime(2024, 1, 1, 0, 0, 30, tzinfo=dt.UTC))
    server = EmbeddedServer(simulate=fast_config(clock=clock, start_seconds=1, run_seconds=5))
    add_missing_kinds(server)
    await server.start()
    try:
        sim = server.simulation
        assert sim is not None
        cj = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "tick"},
            "spec": {
                "schedule": "*/5 * * * *",
                "successfulJobsHistoryLimit": 1,
                "jobTemplate": {
                    "spec": {
                        "template": {
                            "spec": {
                                "restartPolicy": "OnFailure",
                                "containers": [{"name": "t", "image": "busybox"}],
                            }
                        }
                    }
                },
            },
        }
        # creationTimestamp is wall time; the controller counts from the manual clock
        created = create(server, "batch", "cronjobs", cj)
        assert created
        await sim.settle()
        assert not stored(server, "/batch/jobs/default/")
        for minute in (5, 10):
            clock.set(dt.datetime(2024, 1, 1, 0, minute, tzinfo=dt.UTC))
            await sim.settle()
            clock.advance(1)  # the pod starts
            await sim.settle()
            clock.advance(5)  # and finishes
            await sim.settle()
        jobs = stored(server, "/batch/jobs/default/")
        # one successful job kept (successfulJobsHistoryLimit=1): the 00:10 one
        expected = f"tick-{int(dt.datetime(2024, 1, 1, 0, 10, tzinfo=dt.UTC).timestamp()) // 60}"
        assert [j["metadata"]["name"] for j in jobs] == [expected]
        assert (
            jobs[0]["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
            == "2024-01-01T00:10:00Z"
        )
        status = get(server, "/batch/cronjobs/default/tick")["status"]
        assert status["lastScheduleTime"] == "2024-01-01T00:10:00Z"
        assert status["lastSuccessfulTime"] == "2024-01-01T00:10:06Z"
        assert "active" not in status
    finally:
        await server.stop()
