"""Fixtures for client tests: a client bound to the per-test embedded server, Widget CRD
installed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import CRD, Client
from kubewerk.model import crd_for
from tests.client.models import Widget


async def install_crd(client: Client, model: type) -> None:
    crd = crd_for(model)
    await client.create(crd)
    for _ in range(500):
        got = await client.get(CRD, crd["metadata"]["name"])
        conds = (got.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
            client.forget_discovery()
            return
        await asyncio.sleep(0.01)
    raise AssertionError("CRD never became Established")


@pytest.fixture
async def client(aserver: EmbeddedServer) -> AsyncIterator[Client]:
    async with Client.from_url(aserver.url) as c:
        await install_crd(c, Widget)
        yield c
