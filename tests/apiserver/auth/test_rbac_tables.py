"""RBAC Tables as kube-apiserver prints them: Role/ClusterRole through the default table
convertor (NAME, CREATED AT), RoleBinding/ClusterRoleBinding as ``printRoleBinding``
(ROLE, AGE, wide USERS, GROUPS, SERVICEACCOUNTS)."""

from __future__ import annotations

from typing import Any

from tests.apiserver.auth.test_app_wiring import call

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.kinds.rbac import install_rbac
from kubewerk.apiserver.printers import printer
from kubewerk.apiserver.storage import MemoryStore
from kubewerk.core.meta import parse_time

RBAC = "rbac.authorization.k8s.io/v1"
NOW = parse_time("2025-01-01T12:00:00Z") or 0.0
CREATED = "2025-01-01T11:00:00Z"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"

SUBJECTS = [
    {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
    {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
    {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"},
    {"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"},
    {"kind": "ServiceAccount", "name": "default", "namespace": "team-a"},
]


def binding(kind: str, ref_kind: str, subjects: Any = SUBJECTS) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": RBAC,
        "kind": kind,
        "metadata": {"name": "b", "namespace": "team-a", "creationTimestamp": CREATED},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": "edit"},
    }
    if subjects is not None:
        body["subjects"] = subjects
    return body


def test_columns_are_kubes() -> None:
    for kind in ("Role", "ClusterRole"):
        p = printer(RBAC, kind)
        assert p is not None
        assert [(c.name, c.type, c.priority) for c in p.columns] == [("Created At", "date", 0)]
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        p = printer(RBAC, kind)
        assert p is not None
        assert [(c.name, c.priority) for c in p.columns] == [
            ("Role", 0),
            ("Age", 0),
            ("Users", 1),
            ("Groups", 1),
            ("ServiceAccounts", 1),
        ]


def test_binding_cells() -> None:
    p = printer(RBAC, "RoleBinding")
    assert p is not None
    assert p.cells_at(binding("RoleBinding", "ClusterRole"), NOW) == [
        "ClusterRole/edit",
        "60m",
        "alice, bob",
        "devs",
        "ci/builder, team-a/default",
    ]
    crb = printer(RBAC, "ClusterRoleBinding")
    assert crb is not None
    assert crb.cells_at(binding("ClusterRoleBinding", "ClusterRole", None), NOW) == [
        "ClusterRole/edit",
        "60m",
        "",
        "",
        "",
    ]


async def test_tables_over_http() -> None:
    app = ApiServer(MemoryStore())
    install_rbac(app)
    try:
        role = {
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": {"name": "edit"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        }
        base = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
        status, _, created = await call(app, "POST", f"{base}/roles", role)
        assert status == 201, created
        rb = binding("RoleBinding", "Role")
        del rb["metadata"]["namespace"], rb["metadata"]["creationTimestamp"]
        status, _, body = await call(app, "POST", f"{base}/rolebindings", rb)
        assert status == 201, body
        status, _, table = await call(app, "GET", f"{base}/roles", headers={"Accept": TABLE})
        assert status == 200, table
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
        assert table["rows"][0]["cells"] == ["edit", created["metadata"]["creationTimestamp"]]
        status, _, table = await call(app, "GET", f"{base}/rolebindings", headers={"Accept": TABLE})
        assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
            ("Name", 0),
            ("Role", 0),
            ("Age", 0),
            ("Users", 1),
            ("Groups", 1),
            ("ServiceAccounts", 1),
        ]
        cells = table["rows"][0]["cells"]
        assert cells[:2] == ["b", "Role/edit"]
        assert cells[3:] == ["alice, bob", "devs", "ci/builder, team-a/default"]
    finally:
        await app.stop()
