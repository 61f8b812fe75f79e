"""kubewerk gen rbac: least-privilege RBAC derived from what an operator's controllers
watch, own and write, compared with expectations written by hand from the runtime's
code paths (docs/security.md, "Least privilege for operators")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.cli.gen import rbac_for
from kubewerk.client import CONFIGMAP, SECRET
from kubewerk.lifecycle.rbac import platform_permissions
from kubewerk.runtime import Manager
from kubewerk.runtime.informer import Scope
from kubewerk.runtime.rbac import declare, manager_permissions, rbac, rbac_objects, rule
from tests.client.models import Widget

ROOT = Path(__file__).resolve().parents[2]
READ = ["get", "list", "watch"]
CHILD = ["create", "delete", "get", "list", "patch", "update", "watch"]
EVENTS = {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}


def r(
    group: str, resources: list[str], verbs: list[str], names: list[str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"apiGroups": [group], "resources": resources}
    if names:
        out["resourceNames"] = names
    out["verbs"] = verbs
    return out


def by_kind(objects: list[dict[str, Any]]) -> dict[tuple[str, str | None], dict[str, Any]]:
    return {(o["kind"], o["metadata"].get("namespace")): o for o in objects}


def test_database_operator() -> None:
    """For Database (finalizer, status, Events) owning Secrets and ConfigMaps; For
    BackupPolicy watching Databases."""
    from examples.database_operator.main import manager

    objects = rbac_objects(manager_permissions(manager), "database-operator", "ops")
    assert [o["kind"] for o in objects] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    assert objects[1]["rules"] == [
        r("", ["configmaps", "secrets"], CHILD),
        EVENTS,
        r(
            "example.kubewerk.dev",
            ["backuppolicies", "databases"],
            ["get", "list", "patch", "watch"],
        ),
        r("example.kubewerk.dev", ["backuppolicies/status", "databases/status"], ["patch"]),
        # blockOwnerDeletion on the Secret's and ConfigMap's controller reference
        r("example.kubewerk.dev", ["databases/finalizers"], ["update"]),
    ]
    assert objects[0] == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "database-operator", "namespace": "ops"},
    }
    assert objects[2] == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "database-operator"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "database-operator",
        },
        "subjects": [{"kind": "ServiceAccount", "name": "database-operator", "namespace": "ops"}],
    }


def test_widget_operator_with_leader_election_in_its_namespace() -> None:
    from tests.runtime.widget_operator import build

    mgr = build(leader_election=True, leader_election_id="widgets", name="widgets")
    objects = by_kind(rbac_objects(manager_permissions(mgr, namespace="ops"), "widgets", "ops"))
    assert objects["ClusterRole", None]["rules"] == [
        r("", ["configmaps"], CHILD),
        EVENTS,
        r("test.kubewerk.dev", ["widgets"], ["get", "list", "patch", "watch"]),
        r("test.kubewerk.dev", ["widgets/finalizers"], ["update"]),
        r("test.kubewerk.dev", ["widgets/status"], ["patch"]),
    ]
    # create cannot be limited by name (the name is not in the URL); the rest can
    assert objects["Role", "ops"]["rules"] == [
        r("coordination.k8s.io", ["leases"], ["create"]),
        r("coordination.k8s.io", ["leases"], ["get", "update"], ["widgets"]),
    ]
    assert objects["RoleBinding", "ops"]["roleRef"]["kind"] == "Role"
    # the manager's own Lease namespace wins over the operator's
    mgr = build(leader_election=True, leader_election_namespace="kube-system")
    spaces = manager_permissions(mgr, namespace="ops").namespaces()
    assert spaces == [None, "kube-system"]
    # off unless asked for
    assert manager_permissions(build(), namespace="ops").namespaces() == [None]
    assert manager_permissions(build(), leader_election=True).namespaces() == [None, "default"]


def test_a_namespace_scoped_manager_gets_roles_in_its_namespaces() -> None:
    mgr = Manager(
        namespaces=["a", "b"], by_kind={SECRET: Scope(namespaces=("vault",))}, probe_port=None
    )

    @mgr.reconciler(Widget, owns=[CONFIGMAP], watches=[(SECRET, lambda o: [])])
    async def reconcile(w: Any, ctx: Any) -> None:
        return None

    objects = by_kind(rbac_objects(manager_permissions(mgr), "w", "ops"))
    assert ("ClusterRole", None) not in objects
    for ns in ("a", "b"):
        assert objects["Role", ns]["rules"] == [
            r("", ["configmaps"], CHILD),
            EVENTS,
            r("test.kubewerk.dev", ["widgets"], ["get", "list", "patch", "watch"]),
            r("test.kubewerk.dev", ["widgets/finalizers"], ["update"]),
            r("test.kubewerk.dev", ["widgets/status"], ["patch"]),
        ]
        assert objects["RoleBinding", ns]["subjects"] == [
            {"kind": "ServiceAccount", "name": "w", "namespace": "ops"}
        ]
    assert objects["Role", "vault"]["rules"] == [r("", ["secrets"], READ)]


def test_cluster_scoped_kinds_stay_cluster_wide_and_their_events_go_to_default() -> None:
    from examples.platform_demo.models import Tenant

    mgr = Manager(namespaces=["a"], probe_port=None)

    @mgr.reconciler(Tenant)
    async def reconcile(t: Any, ctx: Any) -> None:
        return None

    objects = by_kind(rbac_objects(manager_permissions(mgr), "t", "ops"))
    assert objects["ClusterRole", None]["rules"] == [
        r("platform.kubewerk.dev", ["tenants"], ["get", "list", "patch", "watch"]),
        r("platform.kubewerk.dev", ["tenants/status"], ["patch"]),
    ]
    assert objects["Role", "default"]["rules"] == [EVENTS]


def test_declared_rules_markers_and_manager_declarations() -> None:
    mgr = Manager(probe_port=None)

    @mgr.reconciler(Widget)
    @rbac(
        rule("", "secrets", "get"), rule("apps", ["deployments", "deployments/scale"], "get;update")
    )
    async def reconcile(w: Any, ctx: Any) -> None:
        return None

    @rbac(rule("", "secrets", ["list"]))  # after registration: the same function object
    async def other(w: Any, ctx: Any) -> None:
        return None

    assert other is not reconcile
    declare(mgr, rule("", "configmaps", "get", names=["settings"], namespace="ops"))
    declare(mgr, rule(urls=["/metrics"], verbs="get"))
    declare(mgr, rule("", "secrets", "get", names=["covered"]))  # covered by get on all
    objects = by_kind(rbac_objects(manager_permissions(mgr), "w", "ops"))
    assert objects["ClusterRole", None]["rules"] == [
        r("", ["secrets"], ["get"]),
        r("apps", ["deployments", "deployments/scale"], ["get", "update"]),
        EVENTS,
        r("test.kubewerk.dev", ["widgets"], ["get", "list", "patch", "watch"]),
        r("test.kubewerk.dev", ["widgets/status"], ["patch"]),
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
    ]
    assert objects["Role", "ops"]["rules"] == [r("", ["configmaps"], ["get"], ["settings"])]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"groups": "", "resources": "secrets", "verbs": ""}, "at least one verb"),
        ({"verbs": "get"}, "resources or non-resource URLs"),
        ({"resources": "x", "verbs": "get", "urls": ["/x"]}, "either resources or"),
        ({"verbs": "get", "urls": ["/x"], "namespace": "a"}, "cluster-wide"),
    ],
)
def test_rule_refuses_what_kube_refuses(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rule(**kwargs)


PLATFORM_KINDS = [
    "alerts", "applications", "backups", "buckets", "caches", "certificates",
    "credentialbindings", "databases", "dnsrecords", "environments", "jobs", "projects",
    "queues", "quotas", "routes", "schedules",
]  # fmt: skip


def test_the_platform_example() -> None:
    """17 kinds on the lifecycle kernel: each read, its status patched, its finalizer
    kept (every kind has the teardown handler) with patch; every kind but Tenant is the
    dependent of a cascading ref, so the kernel deletes its objects; CredentialBinding's
    ref to a Secret reads Secrets; every transition records an Event. Nothing creates,
    updates (PUT) or owns anything."""
    import examples.platform_demo.main as example

    objects = by_kind(rbac_for(example.platform, "ops", None, None))
    assert set(objects) == {
        ("ServiceAccount", "ops"),
        ("ClusterRole", None),
        ("ClusterRoleBinding", None),
    }
    assert objects["ClusterRole", None]["metadata"] == {"name": "platform-example"}
    assert objects["ClusterRole", None]["rules"] == [
        r("", ["secrets"], READ),
        EVENTS,
        r("platform.kubewerk.dev", PLATFORM_KINDS, ["delete", "get", "list", "patch", "watch"]),
        r(
            "platform.kubewerk.dev",
            [f"{k}/status" for k in sorted([*PLATFORM_KINDS, "tenants"])],
            ["patch"],
        ),
        r("platform.kubewerk.dev", ["tenants"], ["get", "list", "patch", "watch"]),
    ]
    perms = platform_permissions(example.platform, namespace="ops", leader_election=True)
    assert perms.rules("ops") == [
        r("coordination.k8s.io", ["leases"], ["create"]),
        r("coordination.k8s.io", ["leases"], ["get", "update"], ["platform-example"]),
    ]


def kubewerk(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from kubewerk.cli import main; raise SystemExit(main())", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_writes_files_and_a_manager_of_a_platform_reads_as_the_platform(tmp_path: Path) -> None:
    out = tmp_path / "rbac"
    done = kubewerk(
        "gen", "rbac", "examples.platform_demo.main:manager", "-n", "ops", "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "role.yaml", "role_binding.yaml", "service_account.yaml",
    ]  # fmt: skip
    roles = list(yaml.safe_load_all((out / "role.yaml").read_text()))
    import examples.platform_demo.main as example

    expected = rbac_for(example.platform, "ops", None, None)
    assert roles == [o for o in expected if o["kind"] == "ClusterRole"]
    first = (out / "role.yaml").read_bytes()
    again = kubewerk(
        "gen", "rbac", "examples.platform_demo.main:platform", "-n", "ops", "-o", str(out)
    )
    assert again.returncode == 0 and (out / "role.yaml").read_bytes() == first  # stable
    stdout = kubewerk(
        "gen", "rbac", "examples.database_operator.main:manager", "--name", "db", "--leader-elect"
    )
    docs = list(yaml.safe_load_all(stdout.stdout))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("ServiceAccount", "db"), ("ClusterRole", "db"), ("Role", "db"),
        ("ClusterRoleBinding", "db"), ("RoleBinding", "db"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["examples.platform_demo.main"], "must look like MODULE:MANAGER"),
        (["examples.platform_demo.main:nothing"], "has no attribute 'nothing'"),
        (["examples.platform_demo.main:WORKERS"], "is not a kubewerk.runtime.Manager"),
        (["no_such_module:m"], "cannot import module"),
        (["examples.platform_demo.main:manager", "-n", "Ops"], "--namespace 'Ops'"),
    ],
)
def test_cli_usage_errors_without_traceback(args: list[str], message: str) -> None:
    done = kubewerk("gen", "rbac", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
