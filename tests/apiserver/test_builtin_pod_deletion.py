"""Graceful deletion of Pods, as kube-apiserver's registry does it (``rest.BeforeDelete``
with the Pod strategy's ``CheckGracefulDelete``): a Pod bound to a node stays Terminating
for its grace period until a delete with period 0 (the kubelet's); an unbound or finished
Pod goes at once; a later delete may only shorten the period."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.core.meta import parse_time
from tests.apiserver.helpers import Api

PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


async def test_a_bound_pod_stays_terminating_for_its_grace_period(api: Api) -> None:
    status, created = await api.post(PODS, pod("web", nodeName="node-1"))
    assert status == 201, created
    assert created["spec"]["terminationGracePeriodSeconds"] == 30  # the default
    status, body = await api.delete(f"{PODS}/web")
    assert status == 200 and body["kind"] == "Pod"
    meta = body["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30
    deadline = parse_time(meta["deletionTimestamp"])
    assert deadline is not None and deadline - (parse_time(meta["creationTimestamp"]) or 0) >= 29
    assert meta["generation"] == created["metadata"]["generation"] + 1
    # a longer or equal period changes nothing; a shorter one moves the deadline back
    status, again = await api.delete(f"{PODS}/web", {"gracePeriodSeconds": 60})
    assert status == 200 and again["metadata"] == meta
    status, shorter = await api.delete(f"{PODS}/web", {"gracePeriodSeconds": 10})
    assert status == 200 and shorter["metadata"]["deletionGracePeriodSeconds"] == 10
    assert parse_time(shorter["metadata"]["deletionTimestamp"]) == deadline - 20
    # the kubelet's delete with period 0 removes it
    status, gone = await api.delete(f"{PODS}/web", {"gracePeriodSeconds": 0})
    # gone at once: the Pod registry answers the deleted Pod (ReturnDeletedObject), no Status
    assert status == 200 and gone["kind"] == "Pod" and gone["metadata"]["name"] == "web"
    assert (await api.get(f"{PODS}/web"))[0] == 404


async def test_unbound_finished_and_zero_grace_pods_go_at_once(api: Api) -> None:
    await api.post(PODS, pod("unbound"))
    status, body = await api.delete(f"{PODS}/unbound")
    assert status == 200 and body["kind"] == "Pod"
    await api.post(PODS, pod("quick", nodeName="node-1", terminationGracePeriodSeconds=0))
    status, body = await api.delete(f"{PODS}/quick")
    assert status == 200 and body["kind"] == "Pod"
    _, bound = await api.post(PODS, pod("done", nodeName="node-1"))
    bound["status"]["phase"] = "Succeeded"
    status, _ = await api.put(f"{PODS}/done/status", bound)
    assert status == 200
    status, body = await api.delete(f"{PODS}/done")
    assert status == 200 and body["kind"] == "Pod"
    # a negative period is 1 s on the delete path
    await api.post(PODS, pod("neg", nodeName="node-1"))
    status, body = await api.delete(f"{PODS}/neg", {"gracePeriodSeconds": -5})
    assert status == 200 and body["metadata"]["deletionGracePeriodSeconds"] == 1


async def test_losing_a_finalizer_in_the_grace_period_does_not_remove_it(api: Api) -> None:
    body = pod("held", nodeName="node-1")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await api.post(PODS, body)
    status, deleting = await api.delete(f"{PODS}/held")
    assert status == 200 and deleting["metadata"]["deletionGracePeriodSeconds"] == 30
    status, _ = await api.patch(f"{PODS}/held", {"metadata": {"finalizers": None}})
    assert status == 200
    assert (await api.get(f"{PODS}/held"))[0] == 200  # still Terminating
    status, gone = await api.delete(f"{PODS}/held", {"gracePeriodSeconds": 0})
    assert status == 200 and gone["kind"] == "Pod"


async def test_dry_run_and_other_kinds_are_unchanged(api: Api) -> None:
    await api.post(PODS, pod("dry", nodeName="node-1"))
    status, body = await api.delete(f"{PODS}/dry?dryRun=All")
    assert status == 200 and body["metadata"]["deletionGracePeriodSeconds"] == 30
    _, stored = await api.get(f"{PODS}/dry")
    assert "deletionTimestamp" not in stored["metadata"]
    # a ConfigMap has no graceful deletion: a grace period is ignored
    await api.post(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    status, body = await api.delete(f"{CMS}/c", {"gracePeriodSeconds": 30})
    assert status == 200 and body["kind"] == "Status"
