"""A request whose body never arrives whole is not acted on (real sockets, both ways it ends)."""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest

from kubewerk.apiserver.server import EmbeddedServer

CMS = "/api/v1/namespaces/default/configmaps"


def configmap_body(name: str) -> bytes:
    return json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}
    ).encode()


def exists(url: str, name: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}{CMS}/{name}", timeout=5):
            return True
    except urllib.error.HTTPError as err:
        assert err.code == 404
        return False


async def send_partial(srv: EmbeddedServer, body: bytes, declared: int, *, close: bool) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
    head = (
        f"POST {CMS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {declared}\r\n\r\n"
    ).encode()
    writer.write(head + body)
    await writer.drain()
    if close:
        writer.close()
        await writer.wait_closed()
        return b""
    answer = await asyncio.wait_for(reader.read(), timeout=10)
    writer.close()
    return answer


@pytest.mark.parametrize("extra", [1, 50])
async def test_a_body_cut_by_the_client_is_not_acted_on(extra: int) -> None:
    async with EmbeddedServer("memory") as srv:
        body = configmap_body("cut")  # complete JSON, but fewer bytes than announced
        await send_partial(srv, body, len(body) + extra, close=True)
        await asyncio.sleep(0.3)
        assert not await asyncio.to_thread(exists, srv.url, "cut")


async def test_a_body_that_times_out_is_not_acted_on() -> None:
    async with EmbeddedServer("memory", request_body_timeout=0.3) as srv:
        body = configmap_body("slow")
        answer = await send_partial(srv, body, len(body) + 50, close=False)
        assert answer.startswith(b"HTTP/1.1 504"), answer[:200]
        assert not await asyncio.to_thread(exists, srv.url, "slow")
        # the same body, whole, is stored
        body = configmap_body("whole")
        await send_partial(srv, body, len(body), close=True)
        for _ in range(50):
            if await asyncio.to_thread(exists, srv.url, "whole"):
                break
            await asyncio.sleep(0.02)
        assert await asyncio.to_thread(exists, srv.url, "whole")
