"""What a DELETE answers once the object is gone: the deleted object for the kinds whose
kube-apiserver registry sets ``ReturnDeletedObject`` (Pods, StorageClasses,
ServiceAccounts; Namespaces through their own REST), a ``Status`` with ``details`` for
every other kind, custom resources included. Typed clients decode the answer into the
kind (``delete_namespaced_pod`` returns a ``V1Pod``), so a Status there is a broken Pod."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


OBJECTS = {
    "pod": ("/api/v1/namespaces/default/pods", _pod("p")),
    "storageclass": (
        "/apis/storage.k8s.io/v1/storageclasses",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "p"},
            "provisioner": "example.com/disk",
        },
    ),
    "serviceaccount": (
        "/api/v1/namespaces/default/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "p"}},
    ),
}


@pytest.mark.parametrize("which", sorted(OBJECTS))
async def test_kinds_returning_the_deleted_object(api: Api, which: str) -> None:
    path, body = OBJECTS[which]
    status, created = await api.post(path, body)
    assert status == 201, created
    status, deleted = await api.delete(f"{path}/p")
    assert status == 200, deleted
    assert deleted["kind"] == body["kind"] and deleted["apiVersion"] == body["apiVersion"]
    assert deleted["metadata"]["uid"] == created["metadata"]["uid"]
    assert (await api.get(f"{path}/p"))[0] == 404


async def test_other_kinds_answer_a_status(api: Api) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    _, created = await api.post(
        path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    )
    status, deleted = await api.delete(f"{path}/c")
    assert status == 200
    assert deleted == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "c", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
