"""HTTP-level bounds of the embedded server, over real sockets: header size (431, as Go's
net/http answers), header-read / idle / body timeouts, the connection cap, and the open-file
limit. Timeouts are set to fractions of a second so the whole file runs in seconds."""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubewerk.apiserver.httpproto import HEADER_SLOP
from kubewerk.apiserver.server import EmbeddedServer

HEADER_TIMEOUT = 0.5
IDLE_TIMEOUT = 0.3
BODY_TIMEOUT = 0.5
GO_431 = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n\r\n431 Request Header Fields Too Large"
)


@pytest.fixture
def server() -> Iterator[EmbeddedServer]:
    """A threaded server with short timeouts and the default 1 MiB header limit."""
    srv = EmbeddedServer(
        "memory",
        read_header_timeout=HEADER_TIMEOUT,
        idle_timeout=IDLE_TIMEOUT,
        request_body_timeout=BODY_TIMEOUT,
    ).start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


def connect(srv: EmbeddedServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_to_close(sock: socket.socket, timeout: float = 5.0) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and the seconds that took."""
    started = time.monotonic()
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data, time.monotonic() - started


_unread: dict[int, bytes] = {}  # bytes received past the last response, per socket


def read_response(sock: socket.socket) -> bytes:
    """One response with a Content-Length body (bytes after it are kept for the next call)."""
    data = _unread.pop(id(sock), b"")
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    if body[length:]:
        _unread[id(sock)] = body[length:]
    return head + b"\r\n\r\n" + body[:length]


def trickle_until_closed(sock: socket.socket, give_up_after: float) -> float | None:
    """Send a byte every 50 ms until the server closes; the seconds that took, or None."""
    started = time.monotonic()
    sock.settimeout(0.05)
    try:
        while time.monotonic() - started < give_up_after:
            try:
                sock.sendall(b"X")
                if sock.recv(100) == b"":
                    return time.monotonic() - started
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - started
        return None
    finally:
        sock.close()


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def head_of_size(size: int, *, header_len: int = 0) -> bytes:
    """A GET /version head of exactly ``size`` bytes: one filler header, or many of
    ``header_len``."""
    start = b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    end = b"\r\n"
    room = size - len(start) - len(end)
    lines = []
    if header_len:
        i = 0
        while room > 2 * header_len:
            name = b"X-H%d: " % i
            line = name + b"v" * (header_len - len(name) - 2) + b"\r\n"
            lines.append(line)
            room -= len(line)
            i += 1
    lines.append(b"X-Fill: " + b"f" * (room - len(b"X-Fill: \r\n")) + b"\r\n")
    head = start + b"".join(lines) + end
    assert len(head) == size
    return head


# -- header size ---------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc")
def test_a_50_mb_header_line_is_answered_431_at_once_and_memory_stays_bounded(
    server: EmbeddedServer,
) -> None:
    before = rss_mib()
    sock = connect(server)

    def send() -> None:
        chunk = b"a" * 65536
        try:
            sock.sendall(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
            for _ in range(50 * 16):
                sock.sendall(chunk)
            sock.sendall(b"\r\n\r\n")
        except OSError:
            pass  # the server closed: expected once it has answered

    sender = threading.Thread(target=send)
    sender.start()
    answer, elapsed = read_to_close(sock)
    sender.join(10)
    sock.close()
    assert answer == GO_431
    assert elapsed < 4.0  # the old server took ~8 s to read it all, then answered 200
    assert rss_mib() - before < 20, "the server buffered the oversized header"


def test_many_headers_summing_over_1_mib_are_answered_431(server: EmbeddedServer) -> None:
    sock = connect(server)
    sock.sendall(head_of_size((1 << 20) + HEADER_SLOP + 1, header_len=60))
    answer, _ = read_to_close(sock)
    assert answer == GO_431


def test_a_head_just_within_1_mib_is_served(server: EmbeddedServer) -> None:
    with connect(server) as sock:
        sock.sendall(head_of_size(1 << 20, header_len=60))
        response = read_response(sock)
    assert response.startswith(b"HTTP/1.1 200 ")
    assert b'"gitVersion"' in response


def test_the_limit_is_exact_the_limit_plus_gos_slop() -> None:
    with EmbeddedServer("memory", max_header_bytes=1024) as srv:
        limit = 1024 + HEADER_SLOP
        with connect(srv) as sock:
            sock.sendall(head_of_size(limit))
            assert read_response(sock).startswith(b"HTTP/1.1 200 ")
            # the same connection goes on; the count starts again for the next request
            sock.sendall(head_of_size(limit))
            assert read_response(sock).startswith(b"HTTP/1.1 200 ")
        with connect(srv) as sock:
            sock.sendall(head_of_size(limit + 1))
            assert read_to_close(sock)[0] == GO_431
        with connect(srv) as sock:
            # the same head dribbled in small pieces is counted the same way
            head = head_of_size(limit + 1)
            for i in range(0, len(head), 700):
                sock.sendall(head[i : i + 700])
            assert read_to_close(sock)[0] == GO_431


def test_pipelined_and_fragmented_requests_are_still_served(server: EmbeddedServer) -> None:
    with connect(server) as sock:
        get = b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        sock.sendall(get * 3)
        for _ in range(3):
            assert read_response(sock).startswith(b"HTTP/1.1 200 ")
        body = json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "split"}}
        ).encode()
        post = (
            b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        ) + body
        for i in range(0, len(post), 9):  # the request in small pieces, within the timeouts
            sock.sendall(post[i : i + 9])
            time.sleep(0.001)
        assert read_response(sock).startswith(b"HTTP/1.1 201 ")


# -- timeouts --------------------------------------------------------------------------------


def test_headers_trickled_byte_by_byte_are_cut_after_the_header_timeout(
    server: EmbeddedServer,
) -> None:
    sock = connect(server)
    sock.sendall(b"GET /version HTTP/1.1\r\n")
    closed_after = trickle_until_closed(sock, HEADER_TIMEOUT + 2)
    assert closed_after is not None, "a slowloris connection stayed open"
    assert HEADER_TIMEOUT - 0.1 <= closed_after < HEADER_TIMEOUT + 1


def test_a_head_trickled_behind_a_complete_request_is_cut_too(server: EmbeddedServer) -> None:
    sock = connect(server)
    sock.sendall(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /version HTTP/1.1\r\n")
    assert read_response(sock).startswith(b"HTTP/1.1 200 ")
    closed_after = trickle_until_closed(sock, HEADER_TIMEOUT + IDLE_TIMEOUT + 2)
    assert closed_after is not None, "a trickled pipelined head kept the connection open"
    assert closed_after < HEADER_TIMEOUT + 1


def test_a_connection_that_never_sends_is_closed_after_the_header_timeout(
    server: EmbeddedServer,
) -> None:
    with connect(server) as sock:
        answer, elapsed = read_to_close(sock)
    assert answer == b""  # closed without an answer, as Go's server does
    assert HEADER_TIMEOUT - 0.1 <= elapsed < HEADER_TIMEOUT + 1


def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(
    server: EmbeddedServer,
) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_response(sock).startswith(b"HTTP/1.1 200 ")
        answer, elapsed = read_to_close(sock)
    assert answer == b""
    assert IDLE_TIMEOUT - 0.1 <= elapsed < IDLE_TIMEOUT + 1


def test_a_body_that_stops_arriving_is_answered_504_and_closed(server: EmbeddedServer) -> None:
    with connect(server) as sock:
        sock.sendall(
            b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"apiVersion":'
        )
        answer, elapsed = read_to_close(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 504 Gateway Timeout\r\n")
    assert b"Connection: close" in head
    assert json.loads(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Timeout: request did not complete within the allotted timeout",
        "reason": "Timeout",
        "code": 504,
    }
    assert BODY_TIMEOUT - 0.1 <= elapsed < BODY_TIMEOUT + 1.5


def test_a_watch_outlives_every_timeout(server: EmbeddedServer) -> None:
    with connect(server) as watch:
        watch.sendall(
            b"GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\n"
            b"Host: 127.0.0.1\r\n\r\n"
        )
        watch.settimeout(5)
        first = watch.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 ")
        time.sleep(
            2 * max(HEADER_TIMEOUT, IDLE_TIMEOUT, BODY_TIMEOUT)
        )  # a quiet watch, no bookmarks
        body = json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"}}
        ).encode()
        req = urllib.request.Request(
            server.url + "/api/v1/namespaces/default/configmaps",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 201
        seen = first
        while b'"later"' not in seen:
            chunk = watch.recv(65536)
            assert chunk, "the watch was closed"
            seen += chunk
        assert b'"ADDED"' in seen


# -- connections and descriptors ------------------------------------------------------------


def test_connections_over_the_cap_are_refused_at_once() -> None:
    with EmbeddedServer("memory", max_connections=3, read_header_timeout=HEADER_TIMEOUT) as srv:
        held = [connect(srv) for _ in range(3)]
        try:
            time.sleep(0.1)
            with connect(srv) as extra:
                answer, elapsed = read_to_close(extra)
            assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
            assert answer.endswith(b"too many open connections")
            assert elapsed < 0.5
        finally:
            for sock in held:
                sock.close()
        time.sleep(0.1)  # the held ones are gone: room again
        with connect(srv) as sock:
            sock.sendall(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert read_response(sock).startswith(b"HTTP/1.1 200 ")


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="needs /proc")
def test_idle_sockets_beyond_a_low_soft_descriptor_limit_do_not_lock_clients_out(
    tmp_path: Path,
) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip("the hard descriptor limit is too low to raise anything")

    def low_soft_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubewerk.cli",
            "up",
            "--port",
            "0",
            "--kubeconfig",
            str(tmp_path / "kc"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=low_soft_limit,
    )
    idle: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        banner = ""
        while "press Ctrl-C" not in banner:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            banner += line
        url = re.search(r"listening on (http://\S+)", banner).group(1)  # type: ignore[union-attr]
        port = int(url.rsplit(":", 1)[1])
        idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(300)]
        with urllib.request.urlopen(url + "/version", timeout=5) as resp:
            assert resp.status == 200
        limits = Path(f"/proc/{proc.pid}/limits").read_text()
        max_open = re.search(r"Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)", limits)
        assert max_open is not None and max_open.group(1) == max_open.group(2), limits
    finally:
        for sock in idle:
            sock.close()
        proc.terminate()
        proc.communicate(timeout=10)
