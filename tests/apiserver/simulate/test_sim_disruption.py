"""The simulated disruption controller: PodDisruptionBudget status as
``pkg/controller/disruption/disruption.go`` computes it, and evictions spending it.

One manual-clock cluster per module; each test works in a namespace of its own."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from kubewerk.apiserver.auth.types import UserInfo
from kubewerk.apiserver.kinds.eviction import _Eviction
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.simulate import ManualClock, Simulation
from kubewerk.apiserver.simulate.clock import rfc3339
from kubewerk.apiserver.simulate.disruption import DELETION_TIMEOUT, go_selector
from kubewerk.core.errors import ApiError
from kubewerk.core.jsoncopy import copy_json

from .conftest import add_missing_kinds, fast_config

JSON = dict[str, Any]

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cluster() -> AsyncIterator[tuple[EmbeddedServer, ManualClock]]:
    clock = ManualClock(dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
    server = EmbeddedServer(simulate=fast_config(clock=clock, start_seconds=1))
    add_missing_kinds(server)
    await server.start()
    try:
        yield server, clock
    finally:
        await server.stop()


def api_create(server: EmbeddedServer, group: str, resource: str, ns: str, body: JSON) -> JSON:
    rtype = server.app.registry.get(group, resource)
    assert rtype is not None
    body["metadata"]["namespace"] = ns
    return server.app.api.create(Target(rtype, rtype.storage_version, ns), body, {}).body


def namespace(server: EmbeddedServer, name: str) -> str:
    rtype = server.app.registry.get("", "namespaces")
    assert rtype is not None
    server.app.api.create(
        Target(rtype, rtype.storage_version, None), {"metadata": {"name": name}}, {}
    )
    return name


def deployment(name: str, replicas: int) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
            },
        },
    }


def pdb(name: str, selector: JSON | None, **spec: Any) -> JSON:
    body: JSON = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget"}
    body["metadata"] = {"name": name}
    body["spec"] = dict(spec)
    if selector is not None:
        body["spec"]["selector"] = selector
    return body


async def run(server: EmbeddedServer, clock: ManualClock, seconds: float = 0.0) -> None:
    sim = server.simulation
    assert isinstance(sim, Simulation)
    await sim.settle()
    if seconds:
        clock.advance(seconds)
        await sim.settle()


def status_of(server: EmbeddedServer, ns: str, name: str) -> JSON:
    obj = server.store.get(f"/policy/poddisruptionbudgets/{ns}/{name}")
    assert obj is not None
    return dict(obj.get("status") or {})


def counts(status: JSON) -> tuple[int, int, int, int]:
    return (
        status.get("expectedPods", -1),
        status.get("currentHealthy", -1),
        status.get("desiredHealthy", -1),
        status.get("disruptionsAllowed", -1),
    )


def pods_of(server: EmbeddedServer, ns: str) -> list[JSON]:
    items, _, _ = server.store.list(f"/core/pods/{ns}/")
    return [p for _, p in items]


def evict(server: EmbeddedServer, ns: str, name: str) -> int:
    """A ``pods/eviction`` create through the server's handler: its status code."""
    rtype = server.app.registry.get("", "pods")
    assert rtype is not None
    target = Target(rtype, rtype.storage_version, ns, name, "eviction")
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    try:
        return _Eviction(server.app)(target, body, UserInfo("admin"), {}).status
    except ApiError as exc:
        return exc.code


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({"minAvailable": 2}, (3, 3, 2, 1)),
        ({"minAvailable": "50%"}, (3, 3, 2, 1)),  # 1.5 rounded up
        ({"maxUnavailable": 1}, (3, 3, 2, 1)),
        ({"maxUnavailable": "34%"}, (3, 3, 1, 2)),  # 1.02 rounded up: 2 unavailable
        ({"maxUnavailable": 0}, (3, 3, 3, 0)),
        ({"minAvailable": 5}, (3, 3, 5, 0)),
    ],
    ids=["min-int", "min-percent", "max-int", "max-percent", "max-zero", "min-above"],
)
async def test_budget_status_from_the_deployment(
    cluster: tuple[EmbeddedServer, ManualClock], spec: JSON, want: tuple[int, ...], request: Any
) -> None:
    server, clock = cluster
    ns = namespace(server, "d-" + request.node.callspec.id)
    api_create(server, "apps", "deployments", ns, deployment("web", 3))
    await run(server, clock, 2)
    api_create(
        server,
        "policy",
        "poddisruptionbudgets",
        ns,
        pdb("b", {"matchLabels": {"app": "web"}}, **spec),
    )
    await run(server, clock)
    status = status_of(server, ns, "b")
    assert counts(status) == want
    assert status["observedGeneration"] == 1
    (cond,) = status["conditions"]
    allowed = want[3] > 0
    assert cond == {
        "type": "DisruptionAllowed",
        "status": "True" if allowed else "False",
        "observedGeneration": 1,
        "lastTransitionTime": rfc3339(clock.now()),
        "reason": "SufficientPods" if allowed else "InsufficientPods",
        "message": "",
    }
    assert "disruptedPods" not in status


async def test_status_follows_pods_and_scale(cluster: tuple[EmbeddedServer, ManualClock]) -> None:
    server, clock = cluster
    ns = namespace(server, "follow")
    api_create(
        server,
        "policy",
        "poddisruptionbudgets",
        ns,
        pdb("b", {"matchLabels": {"app": "web"}}, maxUnavailable="50%"),
    )
    await run(server, clock)
    # no Pods yet: nothing expected, nothing allowed
    assert counts(status_of(server, ns, "b")) == (0, 0, 0, 0)
    api_create(server, "apps", "deployments", ns, deployment("web", 4))
    await run(server, clock)
    # Pods exist but none is Ready yet
    assert counts(status_of(server, ns, "b")) == (4, 0, 2, 0)
    await run(server, clock, 2)
    assert counts(status_of(server, ns, "b")) == (4, 4, 2, 2)
    # a Pod that stops being ready is no longer healthy
    pod = pods_of(server, ns)[0]
    key = f"/core/pods/{ns}/{pod['metadata']['name']}"
    new = copy_json(pod)
    new["status"]["conditions"] = [
        dict(c, status="False") if c["type"] == "Ready" else c for c in pod["status"]["conditions"]
    ]
    server.app.api.write_back(key, new)
    await run(server, clock)
    assert counts(status_of(server, ns, "b"))[1] == 3


async def test_unmanaged_and_orphaned_pods(cluster: tuple[EmbeddedServer, ManualClock]) -> None:
    server, clock = cluster
    ns = namespace(server, "bare")
    bare = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "solo", "labels": {"app": "solo"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    api_create(server, "", "pods", ns, bare)
    await run(server, clock, 2)
    # an integer minAvailable counts the Pods themselves
    api_create(
        server,
        "policy",
        "poddisruptionbudgets",
        ns,
        pdb("int", {"matchLabels": {"app": "solo"}}, minAvailable=0),
    )
    # a percentage needs controllers: the bare Pod is left out, with a Warning event
    api_create(
        server,
        "policy",
        "poddisruptionbudgets",
        ns,
        pdb("pct", {"matchLabels": {"app": "solo"}}, maxUnavailable="10%"),
    )
    await run(server, clock)
    assert counts(status_of(server, ns, "int")) == (1, 1, 0, 1)
    assert counts(status_of(server, ns, "pct")) == (0, 1, 0, 0)
    events, _, _ = server.store.list(f"/core/events/{ns}/")
    unmanaged = [e for _, e in events if e["reason"] == "UnmanagedPods"]
    assert unmanaged and unmanaged[0]["involvedObject"]["name"] == "pct"
    assert unmanaged[0]["source"] == {"component": "controllermanager"}
    assert (
        "(selector: &LabelSelector{MatchLabels:map[string]string{app: solo,},"
        in (unmanaged[0]["message"])
    )

    # a controller without a scale subresource (a DaemonSet): the sync fails safe
    daemons = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            },
        },
    }
    api_create(server, "apps", "daemonsets", ns, daemons)
    await run(server, clock, 2)
    api_create(
        server,
        "policy",
        "poddisruptionbudgets",
        ns,
        pdb("lost", {"matchLabels": {"app": "agent"}}, minAvailable="50%"),
    )
    await run(server, clock)
    status = status_of(server, ns, "lost")
    assert status["disruptionsAllowed"] == 0
    (cond,) = status["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "SyncFailed",
        "daemonsets.apps does not implement the scale subresource",
    )
    # no selector selects nothing; {} selects every Pod of the namespace
    api_create(server, "policy", "poddisruptionbudgets", ns, pdb("none", None, minAvailable=0))
    api_create(server, "policy", "poddisruptionbudgets", ns, pdb("all", {}, minAvailable=0))
    await run(server, clock)
    assert counts(status_of(server, ns, "none"))[0] == 0
    assert counts(status_of(server, ns, "all"))[0] == len(pods_of(server, ns)) == 4


async def test_evictions_spend_the_budget_and_it_recovers(
    cluster: tuple[EmbeddedServer, ManualClock],
) -> None:
    server, clock = cluster
    ns = namespace(server, "evict")
    api_create(server, "apps", "deployments", ns, deployment("web", 3))
    await run(server, clock, 2)
    api_create(
        server,
        "policy",
        "poddisruptionbudgets",
        ns,
        pdb("b", {"matchLabels": {"app": "web"}}, minAvailable=2),
    )
    await run(server, clock)
    first, second, _ = sorted(p["metadata"]["name"] for p in pods_of(server, ns))
    assert evict(server, ns, first) == 201
    spent = status_of(server, ns, "b")
    assert spent["disruptionsAllowed"] == 0 and list(spent["disruptedPods"]) == [first]
    assert evict(server, ns, second) == 429
    await run(server, clock)
    # the replacement is not Ready yet: still no disruption allowed
    assert status_of(server, ns, "b")["disruptionsAllowed"] == 0
    await run(server, clock, 2)
    after = status_of(server, ns, "b")
    assert counts(after) == (3, 3, 2, 1)
    assert "disruptedPods" not in after  # the evicted Pod is gone
    assert evict(server, ns, second) == 201


async def test_a_disrupted_pod_not_deleted_counts_again_after_the_timeout(
    cluster: tuple[EmbeddedServer, ManualClock],
) -> None:
    server, clock = cluster
    ns = namespace(server, "stuck")
    api_create(server, "apps", "deployments", ns, deployment("web", 2))
    await run(server, clock, 2)
    api_create(
        server,
        "policy",
        "poddisruptionbudgets",
        ns,
        pdb("b", {"matchLabels": {"app": "web"}}, minAvailable=1),
    )
    await run(server, clock)
    # what the eviction API writes when its delete then fails: the Pod listed, still there
    key = f"/policy/poddisruptionbudgets/{ns}/b"
    obj = server.store.get(key)
    assert obj is not None
    name = pods_of(server, ns)[0]["metadata"]["name"]
    new = copy_json(obj)
    new["status"].update(disruptionsAllowed=0, disruptedPods={name: rfc3339(clock.now())})
    server.app.api.write_back(key, new)
    await run(server, clock)
    held = status_of(server, ns, "b")
    assert counts(held) == (2, 1, 1, 0) and list(held["disruptedPods"]) == [name]
    await run(server, clock, DELETION_TIMEOUT + 1)
    back = status_of(server, ns, "b")
    assert counts(back) == (2, 2, 1, 1) and "disruptedPods" not in back
    events, _, _ = server.store.list(f"/core/events/{ns}/")
    assert [e["message"] for _, e in events if e["reason"] == "NotDeleted"] == [
        f"Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't"
    ]


async def test_go_selector_print() -> None:
    assert go_selector(None) == "nil"
    assert go_selector(
        {
            "matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}],
        }
    ) == (
        "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},"
        "MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{"
        "Key:k,Operator:In,Values:[x y],},},}"
    )


async def test_eviction_policies_and_the_empty_selector(
    cluster: tuple[EmbeddedServer, ManualClock],
) -> None:
    server, clock = cluster
    ns = namespace(server, "policy")
    api_create(server, "apps", "deployments", ns, deployment("web", 2))
    await run(server, clock, 2)
    # {} selects every Pod of the namespace, for the eviction API too
    api_create(server, "policy", "poddisruptionbudgets", ns, pdb("all", {}, minAvailable=2))
    await run(server, clock)
    first, second = sorted(p["metadata"]["name"] for p in pods_of(server, ns))
    assert counts(status_of(server, ns, "all")) == (2, 2, 2, 0)
    assert evict(server, ns, first) == 429

    # a Pod that is not Ready, under a budget short of healthy Pods: IfHealthyBudget (the
    # default) keeps it, AlwaysAllow lets it go without spending the budget
    key = f"/core/pods/{ns}/{first}"
    pod = server.store.get(key)
    assert pod is not None
    unready = copy_json(pod)
    unready["status"]["conditions"] = [
        dict(c, status="False") if c["type"] == "Ready" else c
        for c in unready["status"]["conditions"]
    ]
    server.app.api.write_back(key, unready)
    await run(server, clock)
    assert counts(status_of(server, ns, "all")) == (2, 1, 2, 0)
    assert evict(server, ns, first) == 429
    obj = server.store.get(f"/policy/poddisruptionbudgets/{ns}/all")
    assert obj is not None
    always = copy_json(obj)
    always["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    rtype = server.app.registry.get("policy", "poddisruptionbudgets")
    assert rtype is not None
    server.app.api.update(Target(rtype, rtype.storage_version, ns, "all"), always, {})
    await run(server, clock)
    assert evict(server, ns, first) == 201
    assert evict(server, ns, second) == 429  # a Ready Pod still needs the budget
    assert "disruptedPods" not in status_of(server, ns, "all")
