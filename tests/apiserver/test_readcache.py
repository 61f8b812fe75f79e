"""The read cache answers repeated plain GETs with the bytes the full path would answer now."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import CRD_PATH, DB_PATH, Api, database

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def get_raw(
    api: Api, path: str, headers: dict[str, str] | None = None
) -> tuple[int, bytes, list[str]]:
    async with api.session.get(api.base + path, headers=headers or {}) as resp:
        return resp.status, await resp.read(), resp.headers.getall("Warning", [])


async def test_repeated_gets_follow_every_write(api: Api, aserver: EmbeddedServer) -> None:
    await api.post(DB_PATH, database("cached", replicas=1))
    path = f"{DB_PATH}/cached"
    first = await get_raw(api, path)
    again = await get_raw(api, path)
    assert first == again and first[0] == 200
    assert path in aserver.app.reads._entries  # the second GET could be answered from the cache

    status, patched = await api.patch(path, {"spec": {"replicas": 2}})
    assert status == 200, patched
    status, body, _ = await get_raw(api, path)
    assert orjson.loads(body) == patched  # the new object, not the remembered bytes

    status, _ = await api.patch(f"{path}/status", {"status": {"replicas": 2}})
    assert status == 200
    _, body, _ = await get_raw(api, path)
    assert orjson.loads(body)["status"] == {"replicas": 2}

    status, _ = await api.delete(path)
    assert status == 200
    status, body, _ = await get_raw(api, path)
    assert status == 404 and orjson.loads(body)["reason"] == "NotFound"
    await api.post(DB_PATH, database("cached", replicas=3))
    _, body, _ = await get_raw(api, path)
    assert orjson.loads(body)["spec"]["replicas"] == 3


async def test_a_schema_change_is_seen_by_cached_paths(api: Api) -> None:
    """Defaults are applied on read: a new default in the CRD shows at once."""
    await api.post(DB_PATH, database("schema", replicas=1))
    path = f"{DB_PATH}/schema"
    for _ in range(2):
        _, body, _ = await get_raw(api, path)
    assert "backup" not in orjson.loads(body)["spec"]
    _, crd = await api.get(f"{CRD_PATH}/databases.demo.kubewerk.dev")
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]
    props["backup"] = {"type": "string", "default": "daily"}
    status, out = await api.put(f"{CRD_PATH}/databases.demo.kubewerk.dev", crd)
    assert status == 200, out
    for _ in range(200):
        _, body, _ = await get_raw(api, path)
        if orjson.loads(body)["spec"].get("backup") == "daily":
            break
        await asyncio.sleep(0.01)
    assert orjson.loads(body)["spec"]["backup"] == "daily"


async def test_tables_queries_and_warnings_take_the_full_path(api: Api) -> None:
    await api.post(DB_PATH, database("other", replicas=1))
    path = f"{DB_PATH}/other"
    for _ in range(2):
        status, body, _ = await get_raw(api, path)
    status, table, _ = await get_raw(api, path, {"Accept": TABLE})
    assert status == 200 and orjson.loads(table)["kind"] == "Table"
    status, body, _ = await get_raw(api, path + "?resourceVersion=999999")
    assert (
        status == 504 and orjson.loads(body)["reason"] == "Timeout"
    )  # too large resourceVersion: not the cached 200

    _, crd = await api.get(f"{CRD_PATH}/databases.demo.kubewerk.dev")
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [v1, {**v1, "name": "v1beta1", "storage": False, "deprecated": True}]
    status, out = await api.put(f"{CRD_PATH}/databases.demo.kubewerk.dev", crd)
    assert status == 200, out
    beta = "/apis/demo.kubewerk.dev/v1beta1/namespaces/default/databases/other"
    for _ in range(200):
        status, body, warnings = await get_raw(api, beta)
        if status == 200:
            break
        await asyncio.sleep(0.01)
    expected = [
        '299 - "demo.kubewerk.dev/v1beta1 Database is '
        'deprecated; use demo.kubewerk.dev/v1 Database"'
    ]
    assert warnings == expected
    status, again, warnings = await get_raw(
        api, beta
    )  # served from the cache: same bytes, same warning
    assert (status, again, warnings) == (200, body, expected)
    assert orjson.loads(again)["apiVersion"] == "demo.kubewerk.dev/v1beta1"


async def test_sqlite_store_never_caches(tmp_path: Path) -> None:
    async with EmbeddedServer(f"sqlite:{tmp_path / 'db.sqlite'}") as srv:
        api = Api(srv.url)
        try:
            await api.install_demo_crd()
            await api.post(DB_PATH, database("lite"))
            for _ in range(3):
                status, _, _ = await get_raw(api, f"{DB_PATH}/lite")
                assert status == 200
            assert not srv.app.reads.enabled and not srv.app.reads._entries
        finally:
            await api.close()


async def test_the_cache_is_bounded_in_bytes(aserver: EmbeddedServer) -> None:
    """Large answers are not kept; many answers together stay under MAX_BYTES, with the
    stored objects they pin (a replaced object is not kept alive by an old answer for ever)."""
    from kubewerk.apiserver import readcache

    api = Api(aserver.url)
    cms = "/api/v1/namespaces/default/configmaps"
    reads = aserver.app.reads
    try:
        big = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "big"},
            # the most a ConfigMap may hold (ValidateConfigMap: 1 MiB); with its
            # metadata the answer is larger than MAX_ENTRY_BYTES
            "data": {"k": "x" * (1024 * 1024)},
        }
        assert (await api.post(cms, big))[0] == 201
        for _ in range(2):
            assert (await get_raw(api, f"{cms}/big"))[0] == 200
        assert f"{cms}/big" not in reads._entries
        value = "y" * (512 * 1024)
        for i in range(80):  # 80 answers of 512 KiB: 40 MiB, over the 32 MiB bound
            name = f"m{i}"
            assert (
                await api.post(
                    cms,
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": name},
                        "data": {"k": value},
                    },
                )
            )[0] == 201
            assert (await get_raw(api, f"{cms}/{name}"))[0] == 200
            assert reads.bytes <= readcache.MAX_BYTES
            assert reads.bytes == sum(len(e.payload) for e in reads._entries.values())
        assert f"{cms}/m79" in reads._entries and f"{cms}/m0" not in reads._entries
        first, again = await get_raw(api, f"{cms}/m79"), await get_raw(api, f"{cms}/m79")
        assert first == again
    finally:
        await api.close()


async def test_the_cache_keeps_the_newest_answers_up_to_its_count(
    aserver: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over ``MAX_ENTRIES`` answers the oldest go first, and the byte count follows."""
    from kubewerk.apiserver import readcache

    monkeypatch.setattr(readcache, "MAX_ENTRIES", 3)
    api = Api(aserver.url)
    cms = "/api/v1/namespaces/default/configmaps"
    reads = aserver.app.reads
    try:
        for i in range(6):
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}}
            assert (await api.post(cms, body))[0] == 201
            assert (await get_raw(api, f"{cms}/c{i}"))[0] == 200
        assert list(reads._entries) == [f"{cms}/c3", f"{cms}/c4", f"{cms}/c5"]
        assert reads.bytes == sum(len(e.payload) for e in reads._entries.values())
    finally:
        await api.close()
