"""The example operator (examples/database_operator) end to end, with the testing
plugin's fixtures."""

from __future__ import annotations

import importlib
from typing import Any

from kubewerk.client import CONFIGMAP, SECRET, Client, NotFound
from kubewerk.runtime import get_condition
from kubewerk.testing import wait_for_condition


def fresh_example() -> Any:
    import examples.database_operator.main as main

    return importlib.reload(main)  # a fresh Manager per test


async def test_database_and_backup_policy(
    kube_client: Client, install_crds, run_manager, wait_for
) -> None:  # type: ignore[no-untyped-def]
    main = fresh_example()
    from examples.database_operator.models import BackupPolicy, Database

    await install_crds(Database, BackupPolicy)
    main.manager.probe_port = None
    await run_manager(main.manager)

    policy = {
        "apiVersion": "example.kubewerk.dev/v1",
        "kind": "BackupPolicy",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"databaseRef": {"name": "orders"}},
    }
    await kube_client.create(policy)
    p = await wait_for_condition(kube_client, BackupPolicy, "nightly", "default", "Ready", "False")
    assert get_condition(p, "Ready")["reason"] == "DatabaseNotFound"

    await kube_client.create(
        {
            "apiVersion": "example.kubewerk.dev/v1",
            "kind": "Database",
            "metadata": {"name": "orders", "namespace": "default"},
            "spec": {"engine": "mysql"},
        }
    )
    db = await wait_for_condition(kube_client, Database, "orders", "default")
    assert db.status.endpoint == "orders.default.svc:3306" and db.metadata.finalizers == [
        main.FINALIZER
    ]
    secret = await kube_client.get(SECRET, "orders-credentials", "default")
    password = secret["data"]["password"]
    settings = await kube_client.get(CONFIGMAP, "orders-settings", "default")
    assert settings["data"]["port"] == "3306"
    # the policy follows the database (Watches + index)
    await wait_for_condition(kube_client, BackupPolicy, "nightly", "default")

    # spec change: settings follow, the password is kept
    await kube_client.patch(Database, "orders", {"spec": {"version": "8.4"}}, "default")
    await wait_for(lambda: settings_version(kube_client, "8.4"), 10)
    assert (await kube_client.get(SECRET, "orders-credentials", "default"))["data"][
        "password"
    ] == password

    # deletion: the finalizer drops the database, GC removes the children, the policy notices
    await kube_client.delete(Database, "orders", "default")
    await wait_for(lambda: gone(kube_client, Database, "orders"), 10)
    assert main.dropped == ["default/orders"]
    await wait_for(lambda: gone(kube_client, SECRET, "orders-credentials"), 10)
    await wait_for(lambda: gone(kube_client, CONFIGMAP, "orders-settings"), 10)
    p = await wait_for_condition(kube_client, BackupPolicy, "nightly", "default", "Ready", "False")
    assert get_condition(p, "Ready")["reason"] in ("DatabaseNotFound", "DatabaseDeleting")


async def settings_version(client: Client, want: str) -> bool:
    return (
        str((await client.get(CONFIGMAP, "orders-settings", "default"))["data"]["version"]) == want
    )


async def gone(client: Client, kind: Any, name: str) -> bool:
    try:
        await client.get(kind, name, "default")
    except NotFound:
        return True
    return False
