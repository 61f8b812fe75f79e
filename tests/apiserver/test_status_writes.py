"""/status writes change only status: whatever else the request carries is ignored,
down to JSON number types (3.0 is not 3 on the wire)."""

from __future__ import annotations

from tests.apiserver.helpers import DB_PATH, Api, database


async def test_status_patch_keeps_the_old_spec_bytes(api: Api) -> None:
    status, created = await api.post(DB_PATH, database("typed", replicas=3))
    assert status == 201, created
    path = f"{DB_PATH}/typed/status"
    status, out = await api.patch(path, {"spec": {"replicas": 3.0, "engine": "mysql"},
                                         "metadata": {"labels": {"x": "y"}}, "status": {"replicas": 1}})
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
