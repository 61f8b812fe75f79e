"""``kubectl drain`` against the simulated cluster with a PodDisruptionBudget, and
``kubectl describe`` showing the controllers' Events: what a user sees on a cluster.

The simulated disruption controller keeps the budget's status; drain evicts what the
budget allows, is refused (429) for the rest and retries (kubectl waits 5 s between
tries), and completes once the Deployment's replacements elsewhere are Ready."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.simulate import SimulationConfig

from ..conftest import KubectlRun
from .conftest import wait_until

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]


@pytest.fixture
def tserver() -> Iterator[EmbeddedServer]:
    """The ``kubectl`` fixture's server, here a simulated two-node cluster."""
    config = SimulationConfig.with_nodes(2, start_seconds=0.05, terminate_seconds=0.1)
    srv = EmbeddedServer("memory", simulate=config, bookmark_interval=0.5).start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


def read(srv: EmbeddedServer, path: str) -> Any:
    """A GET straight to the server (the checks need not start kubectl each time)."""
    with urllib.request.urlopen(srv.url + path, timeout=10) as resp:
        return json.loads(resp.read())


def web_pods(srv: EmbeddedServer) -> list[JSON]:
    """The Deployment's Pods that are not being deleted."""
    items = read(srv, "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def rolled_out(srv: EmbeddedServer) -> bool:
    status = read(srv, "/apis/apps/v1/namespaces/default/deployments/web").get("status") or {}
    return bool(status.get("updatedReplicas") == status.get("availableReplicas") == 3) and (
        status.get("replicas") == 3
    )


def test_drain_respects_the_budget_and_describe_tells_the_story(
    kubectl: KubectlRun, tserver: EmbeddedServer
) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=3")
    wait_until(lambda: rolled_out(tserver), timeout=20)
    kubectl("create", "pdb", "web", "--selector=app=web", "--max-unavailable=1")
    budget = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web"
    wait_until(lambda: read(tserver, budget).get("status", {}).get("disruptionsAllowed") == 1)
    pdb = read(tserver, budget)["status"]
    assert (pdb["expectedPods"], pdb["currentHealthy"], pdb["desiredHealthy"]) == (3, 3, 2)
    assert [(c["type"], c["status"], c["reason"]) for c in pdb["conditions"]] == [
        ("DisruptionAllowed", "True", "SufficientPods")
    ]

    pods = web_pods(tserver)
    by_node: dict[str, list[str]] = {}
    for pod in pods:
        by_node.setdefault(pod["spec"]["nodeName"], []).append(pod["metadata"]["name"])
    node = max(by_node, key=lambda n: len(by_node[n]))
    assert len(by_node[node]) == 2  # the least-loaded spread of 3 over 2 nodes
    out = kubectl("drain", node, "--timeout=60s", timeout=90)
    said = out.stdout.splitlines()
    assert said[0] == f"node/{node} cordoned"
    assert said[-1] == f"node/{node} drained"
    for name in by_node[node]:
        assert f"evicting pod default/{name}" in said
        assert f"pod/{name} evicted" in said
    # the budget refused one eviction until a replacement was Ready elsewhere
    refusals = [line for line in out.stderr.splitlines() if line.startswith("error when evicting")]
    assert refusals, out.stderr
    assert refusals[0].endswith(
        "(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget."
    )
    wait_until(lambda: rolled_out(tserver), timeout=20)
    pods = web_pods(tserver)
    assert len(pods) == 3 and all(p["spec"]["nodeName"] != node for p in pods)

    described = kubectl("describe", "deployment", "web").stdout
    events = described[described.index("Events:") :].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    rows = [line.split(None, 4) for line in events[3:] if line.strip()]
    assert rows, described
    assert all(r[:2] == ["Normal", "ScalingReplicaSet"] for r in rows), described
    assert all(r[3] == "deployment-controller" for r in rows), described
    assert rows[0][4].startswith("Scaled up replica set web-") and rows[0][4].endswith(
        "from 0 to 3"
    )

    # a replacement: placed by the scheduler, started by a kubelet that had the image
    original = {name for names in by_node.values() for name in names}
    replacement = next(p for p in pods if p["metadata"]["name"] not in original)
    told = kubectl("describe", "pod", replacement["metadata"]["name"]).stdout
    table = told[told.index("Events:") :].splitlines()[3:]
    assert [line.split()[1] for line in table if line.strip()] == [
        "Scheduled",
        "Pulled",
        "Created",
        "Started",
    ], told
    assert (
        f"default-scheduler  Successfully assigned default/{replacement['metadata']['name']} "
        f"to {replacement['spec']['nodeName']}"
    ) in told
    assert 'kubelet            Container image "nginx:1.25" already present on machine' in told
    # the kubelet's event about its node (its reference has no apiVersion, as the
    # kubelet's nodeRef: ``kubectl describe node`` finds it, ``kubectl events --for``
    # does not, as on a cluster)
    about_node = kubectl("describe", "node", node).stdout
    assert (
        "Normal  NodeNotSchedulable  " in about_node
        and f"kubelet  Node {node} status is now: NodeNotSchedulable" in about_node
    ), about_node
    assert kubectl("events", "--for", f"node/{node}").stdout == ""
