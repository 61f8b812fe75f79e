"""Pod deletion as the simulated kubelet sees it, both ways a Pod can go.

kube-apiserver deletes a bound, unfinished Pod gracefully (``CheckGracefulDelete``): it
stays, with ``deletionTimestamp`` and ``deletionGracePeriodSeconds``, until the kubelet has
stopped its containers and deletes it with a grace period of 0. A Pod deleted at once (the
served Pod kind without graceful deletion, ``gracePeriodSeconds=0``, or an unbound or
finished Pod) is simply gone. The kubelet handles both: it removes a terminating Pod after
``min(terminate_seconds, grace)`` unless its node is down, and forgets a Pod that vanished.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.simulate import SimulationConfig
from kubewerk.apiserver.simulate.clock import rfc3339

from .conftest import condition, fast_config, stored, wait_for
from .test_cluster import available, create, delete, deployment, pods

JSON = dict[str, Any]


@pytest.fixture
def sim_config() -> SimulationConfig:
    return fast_config(terminate_seconds=0.2)


@pytest.fixture
def graceful_pods(sim_server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods kept while a grace period runs, as kube-apiserver keeps them (whatever the
    served Pod kind does now): a deleting Pod with ``deletionGracePeriodSeconds`` > 0 is
    held; the kubelet's delete with grace 0 releases it."""
    rtype = sim_server.app.registry.get("", "pods")
    assert rtype is not None
    monkeypatch.setattr(
        rtype.strategy,
        "holds_deletion",
        lambda obj: bool((obj.get("metadata") or {}).get("deletionGracePeriodSeconds")),
    )


def mark_terminating(server: EmbeddedServer, pod: JSON, grace: int) -> str:
    """What kube-apiserver stores for a graceful delete of ``pod`` with ``grace`` seconds."""
    key = f"/core/pods/default/{pod['metadata']['name']}"
    new = dict(pod, metadata=dict(pod["metadata"]))
    now = dt.datetime.now(dt.UTC)
    new["metadata"]["deletionTimestamp"] = rfc3339(now + dt.timedelta(seconds=grace))
    new["metadata"]["deletionGracePeriodSeconds"] = grace
    server.app.api.write_back(key, new)
    return key


def live(server: EmbeddedServer) -> list[JSON]:
    return [
        p
        for p in pods(server)
        if not p["metadata"].get("deletionTimestamp")
        and (condition(p, "Ready") or {}).get("status") == "True"
    ]


async def test_kubelet_removes_a_gracefully_deleted_pod_after_its_grace(
    sim_server: EmbeddedServer, graceful_pods: None
) -> None:
    sim = sim_server.simulation
    assert sim is not None
    create(sim_server, "apps", "deployments", deployment("g", 2))
    await wait_for(lambda: available(sim_server, "g", 2), what="g Available")
    first, second = pods(sim_server)
    loop_time = __import__("asyncio").get_running_loop().time
    # grace 30 s > terminate_seconds: the kubelet's 0.2 s decides
    key = mark_terminating(sim_server, first, 30)
    started = loop_time()
    # the ReplicaSet does not count a terminating Pod: a replacement starts meanwhile
    await wait_for(lambda: len(live(sim_server)) == 2, what="replacement")
    assert sim_server.store.get(key) is not None, loop_time() - started  # still Terminating
    await wait_for(lambda: sim_server.store.get(key) is None, what="removed by the kubelet")
    assert loop_time() - started >= 0.15
    assert key not in sim.pods.runs
    # grace 0 < terminate_seconds: removed at once
    key = mark_terminating(sim_server, second, 0)
    await wait_for(lambda: sim_server.store.get(key) is None, timeout=0.15, what="grace 0")

    # a Pod on a node that is down stays Terminating until the node is back
    node = live(sim_server)[0]["spec"]["nodeName"]
    victim = next(p for p in live(sim_server) if p["spec"]["nodeName"] == node)
    sim.nodes.failed.add(node)  # the kubelet stops, nothing else yet
    key = mark_terminating(sim_server, victim, 1)
    await __import__("asyncio").sleep(0.4)
    assert sim_server.store.get(key) is not None
    sim.recover_node(node)
    await wait_for(lambda: sim_server.store.get(key) is None, what="removed after recovery")


async def test_kubelet_forgets_a_pod_deleted_at_once(sim_server: EmbeddedServer) -> None:
    sim = sim_server.simulation
    assert sim is not None
    create(sim_server, "apps", "deployments", deployment("now", 1))
    await wait_for(lambda: available(sim_server, "now", 1), what="now Available")
    (pod,) = pods(sim_server)
    key = f"/core/pods/default/{pod['metadata']['name']}"
    assert key in sim.pods.runs
    delete(sim_server, "", "pods", pod["metadata"]["name"])
    if sim_server.store.get(key) is not None:  # the served Pod kind deletes gracefully
        assert sim_server.store.get(key)["metadata"]["deletionTimestamp"]
    await wait_for(lambda: sim_server.store.get(key) is None, what="gone")
    await wait_for(lambda: key not in sim.pods.runs, what="kubelet forgot it")
    await wait_for(lambda: available(sim_server, "now", 1), what="replaced")
    assert [p["metadata"]["name"] for p in stored(sim_server, "/core/pods/default/")] != [
        pod["metadata"]["name"]
    ]
