"""The pytest plugin's RBAC mode: an operator runs as its ServiceAccount with the RBAC
``kubewerk gen rbac`` derives, against an embedded server that authenticates tokens and
authorizes with RBAC; with one permission taken away it fails with kube's exact 403."""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kubewerk.client import CONFIGMAP
from kubewerk.client.client import Client
from kubewerk.client.errors import Forbidden
from kubewerk.testing.rbac import (
    PermissionDenied,
    ServiceAccountRun,
    authorizing_server,
    operator_rbac,
    service_account_kubeconfig,
    without_permission,
    write_kubeconfig,
)
from tests.client.models import Widget
from tests.runtime.widget_operator import build

pytestmark = pytest.mark.kubewerk_rbac

SA = "system:serviceaccount:default:kubewerk"


def widget(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "test.kubewerk.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 3},
    }


async def test_the_operator_works_with_its_generated_rbac(
    kube_client: Client, install_crds: Any, run_manager: Any, wait_for: Any
) -> None:
    await install_crds(Widget)
    mgr = await run_manager(build())
    assert mgr.client is not kube_client
    await kube_client.create(widget("w1"))

    async def converged() -> bool:
        w = await kube_client.get(Widget, "w1", "default")
        cm = await kube_client.get(CONFIGMAP, "w1-config", "default")
        return bool(w.status and w.status.phase == "Ready" and cm["data"]["size"] == "3")

    await wait_for(converged, timeout=15)
    await kube_client.delete(Widget, "w1", "default")  # finalizer removed by the operator

    async def gone() -> bool:
        return not [w async for w in _widgets(kube_client)]

    await wait_for(gone, timeout=15)


async def _widgets(client: Client) -> Any:
    for item in (await client.list(Widget, "default")).items:
        yield item


async def test_the_operator_is_not_the_admin(
    kube_server: Any, kube_client: Client, tmp_path: Path
) -> None:
    await kube_client.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody"}}
    )
    path = await service_account_kubeconfig(
        kube_client, kube_server.url, "default", "nobody", tmp_path / "k"
    )
    assert path.stat().st_mode & 0o777 == 0o600
    async with Client.from_environment(str(path)) as nobody:
        with pytest.raises(Forbidden) as info:
            await nobody.list(CONFIGMAP, "default")
    assert info.value.message == (
        'configmaps is forbidden: User "system:serviceaccount:default:nobody" cannot list '
        'resource "configmaps" in API group "" in the namespace "default"'
    )


async def test_without_list_on_its_children_the_manager_cannot_start(
    install_crds: Any, run_manager: Any
) -> None:
    await install_crds(Widget)
    mgr = build()
    rbac = without_permission(operator_rbac(mgr, "default"), "", "configmaps", "list")
    with pytest.raises(PermissionDenied) as info:
        await run_manager(mgr, rbac=rbac)
    assert (
        'configmaps is forbidden: User "system:serviceaccount:default:kubewerk" cannot list '
        'resource "configmaps" in API group "" at the cluster scope'
    ) in str(info.value).splitlines()


async def test_without_status_patch_the_reconcile_fails_with_the_exact_403() -> None:
    """The library without the fixtures: the Widget's status write is refused."""
    from kubewerk.testing.helpers import install_crds, wait_for

    token = secrets.token_urlsafe(16)
    server, recorder = authorizing_server(token)
    async with server:
        directory = Path(tempfile.mkdtemp())
        async with Client.from_environment(
            str(write_kubeconfig(directory / "admin", server.url, token))
        ) as admin:
            await install_crds(admin, Widget)
            mgr = build()
            run = ServiceAccountRun(server, recorder, admin, directory)
            rbac = without_permission(
                operator_rbac(mgr, "default"), "test.kubewerk.dev", "widgets/status", "patch"
            )
            await run.start(mgr, rbac=rbac)
            try:
                await admin.create(widget("w2"))
                expected = (
                    'widgets.test.kubewerk.dev "w2" is forbidden: User '
                    '"system:serviceaccount:default:kubewerk" cannot patch resource '
                    '"widgets/status" in API group "test.kubewerk.dev" in the namespace "default"'
                )
                await wait_for(lambda: expected in run.denials(), timeout=15)
                assert run.denials() == [expected]
                # the rest of what it needs was granted: the ConfigMap got written
                cm = await admin.get(CONFIGMAP, "w2-config", "default")
                assert cm["data"] == {"size": "3"}
            finally:
                await mgr.stop()
                await run.close()
            await asyncio.sleep(0)


def test_without_permission_refuses_what_was_never_granted() -> None:
    objects = operator_rbac(build(), "default")
    with pytest.raises(ValueError, match="no role grants delete on 'widgets'"):
        without_permission(objects, "test.kubewerk.dev", "widgets", "delete")
    fewer = without_permission(objects, "", "configmaps", "list")
    (role,) = [o for o in fewer if o["kind"] == "ClusterRole"]
    assert {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["create", "delete", "get", "patch", "update", "watch"],
    } in role["rules"]
