"""kube-root-ca.crt: the root CA publisher of kube-controller-manager, run by the embedded
server when it serves TLS (its CA in every active namespace, put back when changed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubewerk.apiserver.controllers import ROOT_CA_DESCRIPTION
from kubewerk.apiserver.rest import Target
from kubewerk.apiserver.server import EmbeddedServer

DESCRIPTION = "kubernetes.io/description"


async def _eventually(probe: Callable[[], Any], what: str) -> Any:
    for _ in range(300):
        value = probe()
        if value:
            return value
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def _cm(server: EmbeddedServer, namespace: str) -> Any:
    return server.store.get(f"/core/configmaps/{namespace}/kube-root-ca.crt")


def _target(
    server: EmbeddedServer, resource: str, namespace: str | None, name: str | None = None
) -> Target:
    rtype = server.app.registry.get("", resource)
    assert rtype is not None
    return Target(rtype, "v1", namespace, name)


async def test_published_kept_and_restored(tmp_path: Path) -> None:
    async with EmbeddedServer(tls=True, pki_dir=tmp_path / "pki") as server:
        assert server.pki is not None
        ca = server.pki.ca_pem.decode()
        for ns in ("default", "kube-system", "kube-public"):
            cm = await _eventually(lambda ns=ns: _cm(server, ns), f"kube-root-ca.crt in {ns}")
            assert cm["data"] == {"ca.crt": ca}
            assert cm["metadata"]["annotations"] == {DESCRIPTION: ROOT_CA_DESCRIPTION}
            [entry] = cm["metadata"]["managedFields"]
            assert entry["manager"] == "kube-controller-manager"
            assert entry["operation"] == "Update"
        api = server.app.api
        # a new namespace gets one
        api.create(
            _target(server, "namespaces", None),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
            {},
        )
        await _eventually(lambda: _cm(server, "team-a"), "kube-root-ca.crt in team-a")
        # changed data and a dropped annotation are put back; other metadata is kept
        cm = _cm(server, "team-a")
        changed = {
            **cm,
            "metadata": {**cm["metadata"], "annotations": {"mine": "x"}, "labels": {"l": "1"}},
            "data": {"ca.crt": "not a CA", "extra": "y"},
        }
        api.update(_target(server, "configmaps", "team-a", "kube-root-ca.crt"), changed, {})
        restored = await _eventually(
            lambda: (c := _cm(server, "team-a")) and c["data"] == {"ca.crt": ca} and c,
            "the data put back",
        )
        assert restored["metadata"]["annotations"] == {
            "mine": "x",
            DESCRIPTION: ROOT_CA_DESCRIPTION,
        }
        assert restored["metadata"]["labels"] == {"l": "1"}
        # deleted: made again
        uid = restored["metadata"]["uid"]
        api.delete(_target(server, "configmaps", "team-a", "kube-root-ca.crt"), {}, {})
        again = await _eventually(
            lambda: (c := _cm(server, "team-a")) and c["metadata"]["uid"] != uid and c,
            "made again after a delete",
        )
        assert again["data"] == {"ca.crt": ca}


async def test_not_published_without_tls() -> None:
    async with EmbeddedServer() as server:
        rtype = server.app.registry.get("", "serviceaccounts")
        assert rtype is not None
        # the namespace controller has run (default ServiceAccount made), and made no CA
        await _eventually(
            lambda: server.store.get(rtype.key("default", "default")), "default ServiceAccount"
        )
        await asyncio.sleep(0.05)
        assert _cm(server, "default") is None
