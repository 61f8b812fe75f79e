"""The dashboard mounted in a Manager at /dashboard on its probe port, beside the probes,
with the manager's own metrics as its chart source."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest

from kubewerk.client import Client
from kubewerk.observe.mounted import mount_dashboard
from kubewerk.runtime.manager import Manager

from .scenario import install_platform_crds


def get(url: str) -> tuple[int, bytes, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, err.read(), dict(err.headers)


async def test_the_dashboard_is_served_beside_the_probes(
    kube_client: Client, run_manager: Callable[..., Awaitable[Any]]
) -> None:
    mgr = Manager(probe_host="127.0.0.1", probe_port=0)
    app = mount_dashboard(mgr, metrics_interval=0.2)
    await install_platform_crds(kube_client)
    await kube_client.create(
        {
            "apiVersion": "platform.kubewerk.dev/v1",
            "kind": "Tenant",
            "metadata": {"name": "acme"},
            "spec": {"displayName": "ACME Corp", "tier": "enterprise"},
        }
    )
    await run_manager(mgr)
    assert mgr.probe_address is not None
    base = f"http://127.0.0.1:{mgr.probe_address[1]}"
    status, body, headers = await asyncio.to_thread(get, base + "/dashboard/")
    assert status == 200 and b"<html" in body.lower()
    assert (
        "script-src 'self'" in {k.lower(): v for k, v in headers.items()}["content-security-policy"]
    )
    for _ in range(100):
        status, body, _ = await asyncio.to_thread(get, base + "/dashboard/api/summary")
        assert status == 200
        if app.state.version > 0 and orjson.loads(body)["kinds"]:
            break
        await asyncio.sleep(0.05)
    assert orjson.loads(body)["kinds"]
    # the probes are still the manager's; other paths still 404
    assert (await asyncio.to_thread(get, base + "/healthz"))[0] == 200
    assert (await asyncio.to_thread(get, base + "/nothing"))[0] == 404
    status, _, _ = await asyncio.to_thread(get, base + "/dashboard/api/metrics")
    assert status == 200


def test_mount_refuses_probe_paths_and_duplicates() -> None:
    mgr = Manager(probe_port=None)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not called")

    for bad in ("/healthz", "dashboard", "/dashboard/"):
        with pytest.raises(ValueError):
            mgr.mount(bad, app)
    mgr.mount("/x", app)
    with pytest.raises(ValueError):
        mgr.mount("/x", app)
