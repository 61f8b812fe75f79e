"""What a web page in the developer's browser can do to an embedded server without
authentication, sent over real sockets exactly as browsers send it.

A page cannot read the server's answers (it sends no CORS headers), but a write needs no
answer: ``fetch(url, {method: "POST", mode: "no-cors", body: new Blob([json])})`` carries
no ``Content-Type`` (read as JSON, as kube-apiserver reads it) and no preflight. Browsers
name the page in ``Origin`` on every such request and every WebSocket handshake; the server
answers a request with a foreign ``Origin`` 403 and stores nothing.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.storage.memory import MemoryStore
from tests.apiserver.helpers import asgi_call

CMS = "/api/v1/namespaces/default/configmaps"


def send(server: EmbeddedServer, method: str, path: str, headers: str, body: bytes = b"") -> bytes:
    """One request on its own connection (``Connection: close``); everything answered."""
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=5) as s:
        s.sendall(
            f"{method} {path} HTTP/1.1\r\nHost: {url.netloc}\r\n{headers}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def configmap(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})


def stored(server: EmbeddedServer, name: str) -> bool:
    return status_of(send(server, "GET", f"{CMS}/{name}", "")) == 200


PAGE = "Origin: https://attacker.example\r\nSec-Fetch-Site: cross-site\r\n"

# (id, method, extra headers, content type or None)
BROWSER_WRITES = [
    ("fetch-no-cors-blob", "POST", PAGE + "Sec-Fetch-Mode: no-cors\r\n", None),
    ("form-text-plain", "POST", PAGE + "Sec-Fetch-Mode: navigate\r\n", "text/plain"),
    ("form-urlencoded", "POST", PAGE, "application/x-www-form-urlencoded"),
    ("sandboxed-frame", "POST", "Origin: null\r\n", None),
    ("rebinding-name", "POST", "Origin: http://127.0.0.1.nip.io:8001\r\n", None),
    ("localhost-lookalike", "POST", "Origin: http://localhost.attacker.example\r\n", None),
    ("userinfo-trick", "POST", "Origin: http://localhost@attacker.example\r\n", None),
    ("not-an-origin", "POST", "Origin: attacker\r\n", None),
    ("extension", "POST", "Origin: chrome-extension://abcdef\r\n", None),
    ("second-origin", "POST", "Origin: http://localhost\r\nOrigin: http://evil.example\r\n", None),
]


@pytest.mark.parametrize(
    ("method", "headers", "ctype"),
    [case[1:] for case in BROWSER_WRITES],
    ids=[case[0] for case in BROWSER_WRITES],
)
def test_a_foreign_page_cannot_write(
    server: EmbeddedServer,
    method: str,
    headers: str,
    ctype: str | None,
    request: pytest.FixtureRequest,
) -> None:
    name = "planted-" + request.node.callspec.id
    answer = send(
        server,
        method,
        CMS,
        headers + (f"Content-Type: {ctype}\r\n" if ctype else ""),
        configmap(name),
    )
    assert status_of(answer) == 403, answer
    body = orjson.loads(answer.partition(b"\r\n\r\n")[2])
    assert body["reason"] == "Forbidden" and "is not allowed" in body["message"], body
    assert "--allow-host" in body["message"]
    assert b"access-control-" not in answer.lower()
    assert not stored(server, name)


def test_a_foreign_pages_websocket_is_refused(server: EmbeddedServer) -> None:
    answer = send(
        server,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true",
        PAGE + "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    )
    assert status_of(answer) == 403, answer
    assert b"sec-websocket-accept" not in answer.lower()


def test_a_foreign_pages_preflight_gets_no_cors_grant(server: EmbeddedServer) -> None:
    answer = send(
        server,
        "OPTIONS",
        CMS,
        PAGE + "Access-Control-Request-Method: DELETE\r\n"
        "Access-Control-Request-Headers: content-type\r\n",
    )
    assert status_of(answer) == 403, answer
    assert b"access-control-" not in answer.lower()


LOOPBACK_PAGES = {
    "localhost": "http://localhost:3000",
    "upper-case": "https://LOCALHOST",
    "subdomain": "http://app.localhost:5173",
    "ipv4": "http://127.0.0.1:8080",
    "ipv6": "http://[::1]:9000",
}


@pytest.mark.parametrize("page", list(LOOPBACK_PAGES))
def test_pages_served_from_loopback_may_write(server: EmbeddedServer, page: str) -> None:
    origin = LOOPBACK_PAGES[page]
    name = f"from-{page}"
    answer = send(server, "POST", CMS, f"Origin: {origin}\r\n", configmap(name))
    assert status_of(answer) == 201, answer
    assert b"access-control-" not in answer.lower()
    assert stored(server, name)


def test_clients_without_an_origin_are_answered(server: EmbeddedServer) -> None:
    answer = send(server, "POST", CMS, "User-Agent: kubectl/v1.33.0\r\n", configmap("kubectl-made"))
    assert status_of(answer) == 201, answer


async def test_allowed_hosts_extend_origins_but_a_wildcard_does_not() -> None:
    body = configmap("x")
    headers = {"host": "127.0.0.1", "content-type": "application/json"}
    cases = [
        (["dev.box"], "https://dev.box:8443", 201),
        (["dev.box"], "https://other.box", 403),
        (["*"], "https://attacker.example", 403),
        (["*"], "http://localhost:3000", 201),
        (None, "https://attacker.example", 201),  # authentication on: no Host or Origin check
    ]
    for allowed, origin, code in cases:
        app = ApiServer(MemoryStore(), allowed_hosts=allowed)
        status, _, payload = await asgi_call(
            app, "POST", CMS, headers={**headers, "origin": origin}, body=body
        )
        assert status == code, (allowed, origin, payload)
