"""Objects whose ``managedFields`` are equal hold one list (``fieldmanager._shared_entries``):
shared only when the JSON text is the same, and never changed in place by any writer."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver import fieldmanager
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from kubewerk.core import meta as metautil
from kubewerk.core.fieldpath import UPDATE, ManagedFields, Manager, Owned
from tests.apiserver.helpers import CRD_PATH, DB_PATH, DEMO_CRD, asgi_call

NOW = "2024-01-01T00:00:00Z"
KEY_A = "/demo.kubewerk.dev/databases/default/a"
KEY_B = "/demo.kubewerk.dev/databases/default/b"


def _managed(v1: dict[str, Any], time: str = NOW, name: str = "me") -> ManagedFields:
    out = ManagedFields()
    out.owners[Manager(name, UPDATE, "v1")] = Owned(None, "v1", False, time, v1)
    return out


def _entries_of(managed: ManagedFields) -> Any:
    obj: dict[str, Any] = {}
    fieldmanager._set_entries(obj, managed)
    return obj["metadata"]["managedFields"]


def test_equal_entries_are_one_list() -> None:
    first = _entries_of(_managed({"f:spec": {".": {}, "f:a": {}}}))
    second = _entries_of(_managed({"f:spec": {".": {}, "f:a": {}}}))
    assert second is first
    assert second == ManagedFields.decode(second).encode()
    # the shared list is remembered with the ownership it holds
    assert fieldmanager._live(second).owners[Manager("me", UPDATE, "v1")].encoded() == {
        "f:spec": {".": {}, "f:a": {}}
    }


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"f:spec": {"f:a": {}, ".": {}}}, id="same-fields-other-key-order"),
        pytest.param({"f:spec": {".": {}, "f:b": {}}}, id="other-field"),
        pytest.param({"f:spec": {".": {}, "f:a": {".": {}}}}, id="deeper"),
        pytest.param({"f:spec": {".": {}, "f:\u00e9": {}}}, id="unicode-field"),
        pytest.param({"f:spec": {".": {}, "f:" + "a" * 5000: {}}}, id="long-field"),
    ],
)
def test_entries_whose_text_differs_are_not_shared(other: dict[str, Any]) -> None:
    base = _entries_of(_managed({"f:spec": {".": {}, "f:a": {}}}))
    differs = _entries_of(_managed(other))
    assert differs is not base
    assert differs[0]["fieldsV1"] == other
    assert orjson.dumps(differs[0]["fieldsV1"]) == orjson.dumps(other)  # key order kept


@pytest.mark.parametrize(
    ("time", "name"),
    [
        pytest.param("2024-01-01T00:00:01Z", "me", id="other-time"),
        pytest.param(NOW, "you", id="other-manager"),
    ],
)
def test_entries_of_another_time_or_manager_are_not_shared(time: str, name: str) -> None:
    v1 = {"f:spec": {".": {}, "f:a": {}}}
    base = _entries_of(_managed(v1))
    other = _entries_of(_managed(v1, time, name))
    assert other is not base
    assert (other[0]["time"], other[0]["manager"]) == (time, name)


def test_the_table_is_bounded() -> None:
    for i in range(fieldmanager._SHARED_SIZE + 10):
        _entries_of(_managed({f"f:x{i}": {}}))
    assert len(fieldmanager._shared) <= fieldmanager._SHARED_SIZE


async def _call(app: ApiServer, method: str, path: str, body: Any, ctype: str) -> Any:
    path, _, query = path.partition("?")
    status, _, payload = await asgi_call(
        app, method, path, query, {"content-type": ctype}, orjson.dumps(body)
    )
    assert status in (200, 201), payload[:300]
    return orjson.loads(payload)


async def _writes_leave_the_shared_list_alone(app: ApiServer) -> None:
    crd = yaml.safe_load(DEMO_CRD.read_text())
    await _call(app, "POST", CRD_PATH, crd, "application/json")
    for _ in range(400):
        if app.registry.get("demo.kubewerk.dev", "databases") is not None:
            break
        await asyncio.sleep(0.005)
    spec = {"engine": "postgres", "version": "16", "replicas": 3, "storage": "10Gi"}
    for name in ("a", "b"):
        body = {
            "apiVersion": "demo.kubewerk.dev/v1",
            "kind": "Database",
            "metadata": {"name": name, "labels": {"app": "x"}},
            "spec": spec,
        }
        await _call(app, "POST", DB_PATH, body, "application/json")
    shared = app.store.get(KEY_B)["metadata"]["managedFields"]
    assert app.store.get(KEY_A)["metadata"]["managedFields"] is shared
    before = copy.deepcopy(shared)
    merge = "application/merge-patch+json"
    writes: list[tuple[str, str, Any, str]] = [
        ("PATCH", "/a", {"metadata": {"labels": {"app": "y", "n": "1"}}}, merge),
        (
            "PATCH",
            "/a",
            [{"op": "replace", "path": "/spec/replicas", "value": 4}],
            "application/json-patch+json",
        ),
        (
            "PATCH",
            "/a",
            [{"op": "replace", "path": "/metadata/managedFields/0/manager", "value": "other"}],
            "application/json-patch+json",
        ),
        ("PATCH", "/a/status", {"status": {"phase": "Ready"}}, merge),
        (
            "PATCH",
            "/a?fieldManager=applier&force=true",
            {
                "apiVersion": "demo.kubewerk.dev/v1",
                "kind": "Database",
                "metadata": {"name": "a", "labels": {"app": "z"}},
                "spec": {"replicas": 5},
            },
            "application/apply-patch+yaml",
        ),
        ("PATCH", "/a", {"metadata": {"managedFields": [{}]}}, merge),
        ("DELETE", "/a", {}, "application/json"),
    ]
    for method, suffix, body, ctype in writes:
        await _call(app, method, DB_PATH + suffix, body, ctype)
        stored_b = app.store.get(KEY_B)
        assert stored_b["metadata"]["managedFields"] is shared
        assert shared == before, (method, suffix)
    await _call(
        app,
        "PUT",
        DB_PATH + "/b",
        {**app.store.get(KEY_B), "spec": {**spec, "replicas": 6}},
        "application/json",
    )
    assert shared == before


def test_no_write_changes_a_shared_list_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metautil, "now_rfc3339", lambda: NOW)  # both creates in one second

    async def run() -> None:
        app = ApiServer(open_store("memory"))
        try:
            await _writes_leave_the_shared_list_alone(app)
        finally:
            await app.stop()

    asyncio.run(run())


def test_entries_orjson_cannot_write_are_kept_unshared() -> None:
    deep: dict[str, Any] = {}
    for _ in range(300):
        deep = {"f:x": deep}
    entries = _entries_of(_managed(deep))
    assert entries[0]["fieldsV1"] is deep
    assert _entries_of(_managed(deep)) is not entries
