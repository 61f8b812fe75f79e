"""The RBAC kinds as kube-apiserver defaults and stores them (k8s.io/kubernetes
pkg/apis/rbac/v1/defaults.go; k8s.io/api rbac/v1/types.go, stored as protobuf): a Role
or ClusterRole without rules is served with ``"rules": null``, empty ``omitempty``
fields are dropped, and a binding's ``roleRef`` and ``User``/``Group`` subjects get the
RBAC group when they name none."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.kinds.rbac import install_rbac
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call

RBAC = "rbac.authorization.k8s.io"
V1 = f"{RBAC}/v1"
BASE = f"/apis/{V1}"
PATHS = {
    "Role": f"{BASE}/namespaces/default/roles",
    "ClusterRole": f"{BASE}/clusterroles",
    "RoleBinding": f"{BASE}/namespaces/default/rolebindings",
    "ClusterRoleBinding": f"{BASE}/clusterrolebindings",
}
_names = itertools.count()


@pytest.fixture(scope="module")
def app() -> ApiServer:
    server = ApiServer(open_store("memory"))
    install_rbac(server)
    return server


async def call(
    app: ApiServer, method: str, path: str, body: Any = None, ctype: str = "application/json"
) -> tuple[int, Any, bytes]:
    raw = b"" if body is None else orjson.dumps(body)
    status, _, payload = await asgi_call(app, method, path, "", {"content-type": ctype}, raw)
    return status, orjson.loads(payload) if payload else None, payload


def obj(kind: str, **fields: Any) -> dict[str, Any]:
    name = f"{kind.lower()}-{next(_names)}"
    return {"apiVersion": V1, "kind": kind, "metadata": {"name": name}, **fields}


RULELESS = [
    ("role-absent", "Role", {}),
    ("role-empty", "Role", {"rules": []}),
    ("role-null", "Role", {"rules": None}),
    ("clusterrole-absent", "ClusterRole", {}),
    ("clusterrole-empty", "ClusterRole", {"rules": []}),
    (
        "clusterrole-aggregated",
        "ClusterRole",
        {"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"nothing": "matches"}}]}},
    ),
]


@pytest.mark.parametrize(
    ("kind", "fields"), [r[1:] for r in RULELESS], ids=[r[0] for r in RULELESS]
)
async def test_a_role_without_rules_is_served_with_rules_null(
    app: ApiServer, kind: str, fields: dict[str, Any]
) -> None:
    body = obj(kind, **fields)
    name = body["metadata"]["name"]
    status, created, raw = await call(app, "POST", PATHS[kind], body)
    assert status == 201, created
    assert created["rules"] is None and b'"rules":null' in raw
    status, got, _ = await call(app, "GET", f"{PATHS[kind]}/{name}")
    assert got["rules"] is None
    _, listed, _ = await call(app, "GET", PATHS[kind])
    assert [i["rules"] for i in listed["items"] if i["metadata"]["name"] == name] == [None]


async def test_an_aggregated_clusterrole_left_without_sources_has_rules_null(
    app: ApiServer,
) -> None:
    label = f"agg-{next(_names)}"
    aggregated = obj(
        "ClusterRole", aggregationRule={"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]}
    )
    name = aggregated["metadata"]["name"]
    assert (await call(app, "POST", PATHS["ClusterRole"], aggregated))[0] == 201
    source = obj(
        "ClusterRole", rules=[{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    )
    source["metadata"]["labels"] = {label: "true"}
    assert (await call(app, "POST", PATHS["ClusterRole"], source))[0] == 201
    _, got, _ = await call(app, "GET", f"{PATHS['ClusterRole']}/{name}")
    assert got["rules"] == [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    status, _, _ = await call(app, "DELETE", f"{PATHS['ClusterRole']}/{source['metadata']['name']}")
    assert status == 200
    _, got, raw = await call(app, "GET", f"{PATHS['ClusterRole']}/{name}")
    assert got["rules"] is None and b'"rules":null' in raw


async def test_empty_optional_fields_are_dropped(app: ApiServer) -> None:
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": []}
    role = obj("Role", rules=[{"nonResourceURLs": [], **rule}])
    status, created, _ = await call(app, "POST", PATHS["Role"], role)
    assert status == 201
    assert created["rules"] == [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    ref = {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"}
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        status, created, _ = await call(
            app, "POST", PATHS[kind], obj(kind, subjects=[], roleRef=ref)
        )
        assert status == 201 and "subjects" not in created
    subject = {"kind": "ServiceAccount", "name": "builder", "apiGroup": "", "namespace": ""}
    binding = obj("RoleBinding", subjects=[subject], roleRef=ref)
    status, created, _ = await call(app, "POST", PATHS["RoleBinding"], binding)
    assert status == 201 and created["subjects"] == [{"kind": "ServiceAccount", "name": "builder"}]


async def test_bindings_get_the_rbac_group_by_default(app: ApiServer) -> None:
    subjects = [
        {"kind": "User", "name": "alice"},
        {"name": "devs", "kind": "Group"},
        {"kind": "ServiceAccount", "name": "ci", "namespace": "default"},
    ]
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        binding = obj(kind, subjects=subjects, roleRef={"kind": "ClusterRole", "name": "view"})
        status, created, raw = await call(app, "POST", PATHS[kind], binding)
        assert status == 201, created
        assert created["roleRef"] == {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"}
        assert created["subjects"] == [
            {"kind": "User", "apiGroup": RBAC, "name": "alice"},
            {"kind": "Group", "apiGroup": RBAC, "name": "devs"},
            {"kind": "ServiceAccount", "name": "ci", "namespace": "default"},
        ]
        # Go writes the struct's fields in order: subjects before roleRef, kind first
        assert raw.index(b'"subjects"') < raw.index(b'"roleRef"')
        assert b'{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"devs"}' in raw
        # an update naming the roleRef without its group changes nothing
        name = binding["metadata"]["name"]
        again = obj(kind, subjects=subjects[:1], roleRef={"kind": "ClusterRole", "name": "view"})
        again["metadata"]["name"] = name
        status, updated, _ = await call(app, "PUT", f"{PATHS[kind]}/{name}", again)
        assert status == 200, updated
        assert updated["subjects"] == [{"kind": "User", "apiGroup": RBAC, "name": "alice"}]


async def test_a_changed_roleref_is_still_refused(app: ApiServer) -> None:
    binding = obj("RoleBinding", roleRef={"kind": "ClusterRole", "name": "view"})
    name = binding["metadata"]["name"]
    assert (await call(app, "POST", PATHS["RoleBinding"], binding))[0] == 201
    patch = {"roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "edit"}}
    status, body, _ = await call(
        app, "PATCH", f"{PATHS['RoleBinding']}/{name}", patch, "application/merge-patch+json"
    )
    assert status == 422
    assert body["message"] == (
        f'RoleBinding.rbac.authorization.k8s.io "{name}" is invalid: roleRef: Invalid value: '
        '{"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: '
        "cannot change roleRef"
    )


async def test_managers_are_kubes(app: ApiServer) -> None:
    """The bootstrap policy is written by ``kube-apiserver``; aggregated rules by a forced
    apply of ``clusterrole-aggregation-controller`` owning ``rules`` alone."""
    _, admin, _ = await call(app, "GET", f"{PATHS['ClusterRole']}/admin")
    managers = {
        (m.get("manager"), m["operation"]): m["fieldsV1"]
        for m in admin["metadata"]["managedFields"]
    }
    assert managers[("clusterrole-aggregation-controller", "Apply")] == {"f:rules": {}}
    assert "f:aggregationRule" in managers[("kube-apiserver", "Update")]
    _, cluster_admin, _ = await call(app, "GET", f"{PATHS['ClusterRole']}/cluster-admin")
    assert [m.get("manager") for m in cluster_admin["metadata"]["managedFields"]] == [
        "kube-apiserver"
    ]
