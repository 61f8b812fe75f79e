"""The RBAC kinds and the access reviews are served whatever the authorizer, as
kube-apiserver serves rbac.authorization.k8s.io and authorization.k8s.io under
AlwaysAllow: a Helm chart's Roles are stored, ``kubectl auth can-i`` answers yes."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from kubewerk.apiserver.server import EmbeddedServer


def call(server: EmbeddedServer, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def test_roles_are_stored_and_the_bootstrap_policy_is_there(server: EmbeddedServer) -> None:
    names = {
        r["metadata"]["name"]
        for r in call(server, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles")["items"]
    }
    assert {"cluster-admin", "admin", "edit", "view"} <= names
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
    assert call(server, "POST", path, role)["metadata"]["name"] == "reader"
    assert [r["metadata"]["name"] for r in call(server, "GET", path)["items"]] == ["reader"]


def test_access_reviews_answer_allowed_under_always_allow(server: EmbeddedServer) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "create", "resource": "pods"}},
    }
    answer = call(server, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    assert answer["status"]["allowed"] is True
