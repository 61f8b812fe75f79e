"""A thin HTTP helper for tests that talk to the embedded API server."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

DB_PATH = "/apis/demo.kubewerk.dev/v1/namespaces/default/databases"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
DEMO_CRD = Path(__file__).resolve().parents[2] / "src" / "kubewerk" / "cli" / "demo_data" / "crd.yaml"


class Api:
    """``await api.get(path)`` → ``(status, body)``; JSON in and out."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.session = aiohttp.ClientSession()

    async def close(self) -> None:
        await self.session.close()

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json", headers: dict[str, str] | None = None,
                      raw: bytes | None = None) -> tuple[int, Any]:
        hdrs = {"Content-Type": content_type, **(headers or {})}
        data = raw if raw is not None else (orjson.dumps(body) if body is not None else None)
        async with self.session.request(method, self.base + path, data=data, headers=hdrs) as resp:
            text = await resp.read()
            try:
                parsed = orjson.loads(text) if text else None
            except orjson.JSONDecodeError:
                parsed = text.decode()
            return resp.status, parsed

    async def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, kind: str = "merge", **kw: Any) -> tuple[int, Any]:
        ctype = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
                 "strategic": "application/strategic-merge-patch+json"}[kind]
        return await self.request("PATCH", path, body, content_type=ctype, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return await self.request("DELETE", path, body, **kw)

    async def watch(self, path: str, stop_after: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Collect ``stop_after`` watch events (or fewer if the stream ends / times out)."""
        events: list[dict[str, Any]] = []
        async with self.session.get(self.base + path) as resp:
            assert resp.status == 200, await resp.text()

            async def read() -> None:
                async for line in resp.content:
                    if line.strip():
                        events.append(orjson.loads(line))
                        if len(events) >= stop_after:
                            return

            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(read(), timeout)
        return events

    async def install_demo_crd(self) -> dict[str, Any]:
        crd = yaml.safe_load(DEMO_CRD.read_text())
        status, body = await self.post(CRD_PATH, crd)
        assert status == 201, body
        await self.wait_established(crd["metadata"]["name"])
        return crd

    async def wait_established(self, name: str, timeout: float = 5.0) -> dict[str, Any]:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            status, body = await self.get(f"{CRD_PATH}/{name}")
            assert status == 200, body
            conds = {c["type"]: c for c in (body.get("status") or {}).get("conditions") or []}
            if conds.get("Established", {}).get("status") == "True":
                # served as soon as Established
                return body
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"CRD {name} not established: {body.get('status')}")
            await asyncio.sleep(0.01)

    async def wait_gone(self, path: str, timeout: float = 5.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            status, body = await self.get(path)
            if status == 404:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{path} still there: {body}")
            await asyncio.sleep(0.01)


def database(name: str, engine: str = "postgres", replicas: int | None = 1, **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"engine": engine}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "demo.kubewerk.dev/v1", "kind": "Database",
            "metadata": {"name": name, **meta}, "spec": spec}


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": data or {}}
