"""/status writes change only status: whatever else the request carries is ignored,
down to JSON number types (3.0 is not 3 on the wire)."""

from __future__ import annotations

from tests.apiserver.helpers import DB_PATH, Api, database


async def test_status_patch_keeps_the_old_spec_bytes(api: Api) -> None:
    status, created = await api.post(DB_PATH, database("typed", replicas=3))
    assert status == 201, created
    path = f"{DB_PATH}/typed/status"
    status, out = await api.patch(
        path,
        {
            "spec": {"replicas": 3.0, "engine": "mysql"},
            "metadata": {"labels": {"x": "y"}},
            "status": {"replicas": 1},
        },
    )
    assert status == 200, out
    assert out["spec"] == created["spec"] and type(out["spec"]["replicas"]) is int
    assert "labels" not in out["metadata"] and out["status"] == {"replicas": 1}
    assert out["metadata"]["generation"] == created["metadata"]["generation"]

    out["spec"]["replicas"] = 5
    out["status"] = {"replicas": 2}
    status, put = await api.put(path, out)
    assert status == 200, put
    assert put["spec"] == created["spec"] and put["status"] == {"replicas": 2}

    status, cleared = await api.patch(path, {"status": None})
    assert status == 200, cleared
    assert "status" not in cleared and cleared["spec"] == created["spec"]
    _, got = await api.get(f"{DB_PATH}/typed")
    assert got == cleared


FREE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "blobs.example.dev"},
    "spec": {
        "group": "example.dev",
        "names": {"kind": "Blob", "plural": "blobs"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                        },
                    }
                },
            }
        ],
    },
}


async def test_true_is_not_one(api: Api) -> None:
    """Python counts True == 1; JSON and Kubernetes do not: true replacing 1 is a change
    (written, generation bumped), not a no-op."""
    status, out = await api.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", FREE_CRD
    )
    assert status == 201, out
    await api.wait_established("blobs.example.dev")
    path = "/apis/example.dev/v1/namespaces/default/blobs"
    status, created = await api.post(
        path,
        {
            "apiVersion": "example.dev/v1",
            "kind": "Blob",
            "metadata": {"name": "b"},
            "spec": {"flag": 1, "n": 3},
        },
    )
    assert status == 201, created
    status, same = await api.patch(f"{path}/b", {"spec": {"n": 3}})
    assert (
        status == 200
        and same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    )
    status, flipped = await api.patch(f"{path}/b", {"spec": {"flag": True}})
    assert status == 200, flipped
    assert flipped["spec"]["flag"] is True
    assert flipped["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert flipped["metadata"]["generation"] == 2
