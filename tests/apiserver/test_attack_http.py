"""HTTP framing attacks on the embedded server over real sockets: request smuggling
(Content-Length with Transfer-Encoding, two Content-Lengths, obs-fold), oversized chunk
extensions, oversized heads, and pipelining. Each ambiguous request is refused (400;
501 for a coding other than chunked, as Go answers) and its connection closed, so no
second request can hide in its body; nothing is stored."""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlsplit

import orjson
import pytest

from kubewerk.apiserver.httpproto import FEED_SLICE, PIPELINE_DEPTH
from kubewerk.apiserver.server import EmbeddedServer

CMS = "/api/v1/namespaces/default/configmaps"


def exchange(server: EmbeddedServer, data: bytes) -> bytes:
    """Send ``data`` on a new connection; everything answered until the server closes."""
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=5) as s:
        s.sendall(data)
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    return answer


def stored(server: EmbeddedServer, name: str) -> bool:
    answer = exchange(
        server,
        f"GET {CMS}/{name} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode(),
    )
    return answer.startswith(b"HTTP/1.1 200")


def smuggled(name: str) -> bytes:
    """A create hidden where a server that picked the other framing would read it."""
    body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    return (
        f"POST {CMS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


AMBIGUOUS = {
    "cl-and-te": lambda inner: (
        b"POST /version HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + inner
    ),
    "te-and-cl": lambda inner: (
        b"POST /version HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
        b"Content-Length: 4\r\n\r\n0\r\n\r\n" + inner
    ),
    "two-content-lengths": lambda inner: (
        b"POST /version HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
        b"Content-Length: %d\r\n\r\n" % len(inner) + inner
    ),
    "obs-fold": lambda inner: (
        b"POST /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\r\n Content-Length: %d\r\n"
        b"\r\n" % len(inner) + inner
    ),
    "te-not-chunked": lambda inner: (
        b"POST /version HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: identity\r\n\r\n" + inner
    ),
}


# Go's server answers a coding other than chunked 501 (transfer.go parseTransferEncoding)
REFUSED_WITH = {"te-not-chunked": b"HTTP/1.1 501 "}


@pytest.mark.parametrize("framing", list(AMBIGUOUS))
def test_ambiguous_framing_is_refused_and_hides_nothing(
    server: EmbeddedServer, framing: str
) -> None:
    name = f"smuggled-{framing}"
    answer = exchange(server, AMBIGUOUS[framing](smuggled(name)))
    assert answer.startswith(REFUSED_WITH.get(framing, b"HTTP/1.1 400 ")), answer[:200]
    assert answer.count(b"HTTP/1.1 ") == 1, answer
    assert not stored(server, name)


def test_a_huge_chunk_extension_is_read_through_and_answered(server: EmbeddedServer) -> None:
    body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ext"}})
    answer = exchange(
        server,
        f"POST {CMS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode()
        + b"%x;ext=" % len(body)
        + b"x" * 500_000
        + b"\r\n"
        + body
        + b"\r\n0\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 201 "), answer[:300]


def test_a_head_over_the_limit_is_still_431(server: EmbeddedServer) -> None:
    answer = exchange(
        server,
        b"GET " + CMS.encode() + b"?labelSelector=" + b"a" * (1 << 21) + b" HTTP/1.1\r\n"
        b"Host: 127.0.0.1\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]


def test_pipelined_requests_wait_unparsed_beyond_the_pipeline_depth(
    server: EmbeddedServer,
) -> None:
    """400 KB of pipelined requests from a client that reads no answer: the server parses
    no more than PIPELINE_DEPTH of them ahead, and one slice's worth (httptools parsed
    every request of each read, and uvicorn kept each one's scope and cycle: 4 MB of them
    cost about 25 MB per connection); as the client reads, they are answered in order."""
    one = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=10) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sender = threading.Thread(target=s.sendall, args=(one * 10_000,), daemon=True)
        sender.start()
        time.sleep(0.5)
        waiting = [len(conn.pipeline) for conn in server._server.server_state.connections]
        # the depth, plus the requests of the one slice that took the pipeline past it
        assert waiting and max(waiting) <= PIPELINE_DEPTH + FEED_SLICE // len(one), waiting
        answered = b""
        while answered.count(b"\r\n\r\nok") < 100:
            chunk = s.recv(65536)
            assert chunk, answered[-200:]
            answered += chunk
        assert answered.startswith(b"HTTP/1.1 200 OK\r\n"), answered[:200]
