"""``namespaceObject`` holds what kube-apiserver's ``CreateNamespaceObject`` copies of the
Namespace: spec, status and twelve metadata fields — not ownerReferences or managedFields."""

from __future__ import annotations

from kubewerk.schema.admission_policy.request import namespace_object_value

KEPT = {
    "name": "team-a",
    "generateName": "team-",
    "namespace": "",
    "uid": "0f0e",
    "resourceVersion": "7",
    "generation": 2,
    "creationTimestamp": "2026-01-01T00:00:00Z",
    "deletionTimestamp": "2026-01-02T00:00:00Z",
    "deletionGracePeriodSeconds": 0,
    "labels": {"team": "a"},
    "annotations": {"note": "x"},
    "finalizers": ["kubernetes"],
}
DROPPED = {
    "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "1"}],
    "managedFields": [{"manager": "kubectl", "operation": "Update"}],
    "selfLink": "/api/v1/namespaces/team-a",
}


def test_namespace_object_keeps_what_kube_copies() -> None:
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {**KEPT, **DROPPED},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
    assert namespace_object_value(ns) == {
        "metadata": KEPT,
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
    assert namespace_object_value(None) is None
