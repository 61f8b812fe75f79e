"""Requests asking to upgrade the connection (``Connection: Upgrade``, ``Upgrade: websocket``
or ``SPDY/3.1``): the server upgrades nothing and answers them as the plain HTTP requests
they also are, as kube-apiserver's handlers that do not upgrade do. kr8s's ``exec`` and
kubectl 1.31+'s exec/attach/port-forward open WebSockets first: they get the server's
Status (405 for pods/exec here), whatever WebSocket library happens to be installed."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer

WEBSOCKET = (
    "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
)
SPDY = (
    "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
)


def ask(server: EmbeddedServer, method: str, path: str, upgrade: str) -> tuple[int, bytes]:
    """Send one request with ``upgrade``'s headers; the status code and body answered."""
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=5) as s:
        s.sendall(
            f"{method} {path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Length: 0\r\n"
            f"{upgrade}\r\n".encode()
        )
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    return int(head.split(b" ")[1]), body


@pytest.mark.parametrize("upgrade", [WEBSOCKET, SPDY], ids=["websocket", "spdy"])
def test_exec_upgrade_gets_the_servers_status(server: EmbeddedServer, upgrade: str) -> None:
    code, body = ask(
        server, "GET", "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true", upgrade
    )
    assert code == 405, body
    got = orjson.loads(body)
    assert (got["kind"], got["reason"]) == ("Status", "MethodNotAllowed")
    assert got["message"] == (
        "pods/exec is not supported by kubewerk: it runs no containers (there is no "
        "kubelet), so there is nothing to exec into"
    )


def test_a_websocket_get_of_a_resource_is_answered_as_http(server: EmbeddedServer) -> None:
    code, body = ask(server, "GET", "/api/v1/namespaces", WEBSOCKET)
    assert code == 200
    assert orjson.loads(body)["kind"] == "NamespaceList"
