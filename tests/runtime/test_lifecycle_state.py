"""The public state the manager and its helpers read instead of private attributes:
``Controller.running`` and ``Manager.use_client`` / ``Manager.has_client``."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import Client, ResourceType
from kubewerk.client.errors import ConfigError
from kubewerk.runtime import Controller, Manager
from kubewerk.runtime.metrics import Metrics

WIDGET = ResourceType("example.dev", "v1", "Widget", "widgets")


class FakeCache:
    def informer(self, kind: Any) -> Any:
        class Informer:
            def add_handler(self, handler: Any) -> None:
                pass

        return Informer()


async def _reconcile(obj: Any, ctx: Any) -> None:
    return None


async def test_controller_running_from_start_until_stop() -> None:
    ctrl: Controller[Any] = Controller("widget", WIDGET, _reconcile, max_concurrent_reconciles=2)
    ctrl.bind(None, FakeCache(), Metrics(process=False), None)  # type: ignore[arg-type]
    assert not ctrl.running
    ctrl.start()
    assert ctrl.running
    await ctrl.stop(grace=1.0)
    assert not ctrl.running


class CountingClient(Client):
    closes = 0

    async def close(self) -> None:
        self.closes += 1
        await super().close()


async def test_use_client_is_the_callers_to_close(kube_server: EmbeddedServer) -> None:
    mgr = Manager(probe_port=None)
    assert not mgr.has_client
    client = CountingClient.from_url(kube_server.url)
    assert isinstance(client, CountingClient)
    mgr.use_client(client)
    assert mgr.has_client and mgr.client is client
    await mgr.start()
    with pytest.raises(RuntimeError, match="before starting"):
        mgr.use_client(client)
    await mgr.stop()
    assert client.closes == 0  # the manager did not close what it was handed
    await client.close()


async def test_an_unusable_probe_address_fails_start_before_anything_runs(
    kube_server: EmbeddedServer,
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        mgr = Manager(probe_host="127.0.0.1", probe_port=port)
        client = CountingClient.from_url(kube_server.url)
        mgr.use_client(client)
        with pytest.raises(
            ConfigError, match=f"^cannot serve probes on 127.0.0.1:{port}: Address already in use$"
        ):
            await mgr.start()
        assert not mgr.running and client.closes == 0
    await mgr.start()  # the address is free again: the same manager starts
    assert mgr.probe_address == ("127.0.0.1", port)
    await mgr.stop()
    await client.close()
