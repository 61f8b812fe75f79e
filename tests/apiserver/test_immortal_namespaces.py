"""The NamespaceLifecycle admission plugin's immortal namespaces: ``default``,
``kube-system`` and ``kube-public`` may not be deleted (403, kube's message), with or
without dryRun; ``kube-node-lease`` and every other namespace may."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

NAMESPACES = "/api/v1/namespaces"


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


async def test_immortal_namespaces_may_not_be_deleted(api: Api) -> None:
    for name in ("default", "kube-system", "kube-public"):
        for path in (f"{NAMESPACES}/{name}", f"{NAMESPACES}/{name}?dryRun=All"):
            status, body = await api.delete(path)
            assert status == 403, body
            assert body == {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                "reason": "Forbidden",
                "details": {"name": name, "kind": "namespaces"},
                "code": 403,
            }
        status, ns = await api.get(f"{NAMESPACES}/{name}")
        assert status == 200 and ns["status"]["phase"] == "Active"
        assert "deletionTimestamp" not in ns["metadata"]


async def test_other_namespaces_may_be_deleted(api: Api) -> None:
    status, body = await api.delete(f"{NAMESPACES}/kube-node-lease?dryRun=All")
    assert status == 200 and body["kind"] == "Namespace", body
    await api.post(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
    status, body = await api.delete(f"{NAMESPACES}/x")
    assert status == 200 and body["status"]["phase"] == "Terminating"
