"""Odd HTTP/1.x requests over raw sockets, answered as Go's net/http server (so
kube-apiserver) answers them: the status line, the plain-text body Go writes, and whether
the connection stays open. The expected bytes are Go's own (net/http server.go
``conn.serve`` writes ``HTTP/1.1 400 Bad Request`` + ``Content-Type: text/plain;
charset=utf-8`` + ``Connection: close`` + the words again as the body)."""

from __future__ import annotations

import socket

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer

CMS = "/api/v1/namespaces/default/configmaps"
GO_HEADERS = b"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
BAD_REQUEST = b"HTTP/1.1 400 Bad Request" + GO_HEADERS + b"400 Bad Request"
MISSING_HOST = (
    b"HTTP/1.1 400 Bad Request: missing required Host header"
    + GO_HEADERS
    + b"400 Bad Request: missing required Host header"
)
MALFORMED_HOST = (
    b"HTTP/1.1 400 Bad Request: malformed Host header"
    + GO_HEADERS
    + b"400 Bad Request: malformed Host header"
)
UNSUPPORTED_TE = b"HTTP/1.1 501 Not Implemented" + GO_HEADERS + b"Unsupported transfer encoding"
UNSUPPORTED_VERSION = (
    b"HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version"
    + GO_HEADERS
    + b"505 HTTP Version Not Supported: unsupported protocol version"
)
EXPECTATION_FAILED = (
    b"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
)


def connect(server: EmbeddedServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=5)


def exchange(server: EmbeddedServer, data: bytes) -> bytes:
    """Send ``data`` on a new connection; everything answered until the server closes."""
    with connect(server) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def read_response(sock: socket.socket) -> tuple[bytes, bytes]:
    """One response with a Content-Length (or a 1xx): its head and its body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed after {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, f"closed in the body of {head!r}"
        rest += chunk
    assert len(rest) == length, (head, rest)  # nothing else was sent
    return head, rest


def closed(sock: socket.socket) -> bool:
    """Whether the server closed the connection (nothing more arrives but the end)."""
    return sock.recv(65536) == b""


def configmap(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})


def stored(server: EmbeddedServer, name: str) -> bool:
    answer = exchange(
        server,
        f"GET {CMS}/{name} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode(),
    )
    return answer.startswith(b"HTTP/1.1 200 ")


# -- Host -------------------------------------------------------------------------------


@pytest.mark.parametrize("second", [b"localhost", b"127.0.0.2"])
def test_two_host_lines_are_a_bad_request(server: EmbeddedServer, second: bytes) -> None:
    # request.go readRequest: "too many Host headers", a plain error: no detail on the wire
    answer = exchange(
        server, b"GET /version HTTP/1.1\r\nHost: localhost\r\nHost: " + second + b"\r\n\r\n"
    )
    assert answer == BAD_REQUEST


@pytest.mark.parametrize("target", [b"/version", b"http://localhost/version"])
def test_http11_without_host_is_refused(server: EmbeddedServer, target: bytes) -> None:
    answer = exchange(server, b"GET " + target + b" HTTP/1.1\r\n\r\n")
    assert answer == MISSING_HOST


def test_http10_without_host_is_served(server: EmbeddedServer) -> None:
    answer = exchange(server, b"GET /version HTTP/1.0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


@pytest.mark.parametrize(
    "host", [b"local host", b"a/b", b"user@localhost", b"d\xc3\xa9", b"localhost\x80"]
)
def test_a_malformed_host_is_refused(server: EmbeddedServer, host: bytes) -> None:
    answer = exchange(server, b"GET /version HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
    assert answer == MALFORMED_HOST


def test_an_empty_host_is_served(server: EmbeddedServer) -> None:
    # httpguts.ValidHostHeader("") is true; no browser sends an empty Host
    with connect(server) as sock:
        sock.sendall(b"GET /version HTTP/1.1\r\nHost:\r\n\r\n")
        head, body = read_response(sock)
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert b'"gitVersion"' in body


# -- the request target -----------------------------------------------------------------


def test_raw_non_ascii_bytes_in_the_target_mean_their_escapes(server: EmbeddedServer) -> None:
    """url.ParseRequestURI accepts bytes of 0x80 and above; the path is the one their
    percent-escapes spell (kube answers with the UTF-8 name)."""
    raw = exchange(
        server,
        f"GET {CMS}/cm-".encode()
        + b"\xc3\xa9 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    escaped = exchange(
        server,
        f"GET {CMS}/cm-%C3%A9 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode(),
    )
    assert raw.startswith(b"HTTP/1.1 404 "), raw[:200]
    assert 'configmaps \\"cm-\u00e9\\" not found'.encode() in raw, raw
    assert raw.split(b"\r\n\r\n", 1)[1] == escaped.split(b"\r\n\r\n", 1)[1]
    listed = exchange(
        server,
        b"GET /api/v1/namespaces/d\x80/configmaps?x=\xc3\xa9 HTTP/1.1\r\n"
        b"Host: localhost\r\nConnection: close\r\n\r\n",
    )
    assert listed.startswith(b"HTTP/1.1 200 "), listed[:200]
    assert b'"kind":"ConfigMapList"' in listed
    # the query is read as its escapes spell it too: the selector's value is "é"
    raw = exchange(
        server,
        f"GET {CMS}?labelSelector=a%3D".encode()
        + b"\xc3\xa9 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    escaped = exchange(
        server,
        f"GET {CMS}?labelSelector=a%3D%C3%A9 HTTP/1.1\r\nHost: localhost\r\n"
        "Connection: close\r\n\r\n".encode(),
    )
    assert raw.startswith(b"HTTP/1.1 400 "), raw[:200]
    assert 'Invalid value: \\"\u00e9\\"'.encode() in raw, raw
    assert raw.split(b"\r\n\r\n", 1)[1] == escaped.split(b"\r\n\r\n", 1)[1]


@pytest.mark.parametrize("path", [b"/ver%zzsion", b"/version%", b"/api/v1/%4"])
def test_a_bad_escape_in_the_path_is_a_bad_request(server: EmbeddedServer, path: bytes) -> None:
    answer = exchange(server, b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert answer == BAD_REQUEST


def test_a_bad_escape_in_the_query_is_not_checked_there(server: EmbeddedServer) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /version?x=%zz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        head, _ = read_response(sock)
    assert head.startswith(b"HTTP/1.1 200 "), head


def test_options_star_is_answered_by_the_server(server: EmbeddedServer) -> None:
    # server.go serverHandler: globalOptionsHandler, 200 with an empty body, keep-alive
    with connect(server) as sock:
        sock.sendall(b"OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n")
        head, body = read_response(sock)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
        assert b"\r\ncontent-length: 0" in head.lower() and body == b""
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n")
        head, _ = read_response(sock)
    assert head.startswith(b"HTTP/1.1 200 "), head


# -- versions ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/3.0"])
def test_a_major_version_other_than_1_is_505(server: EmbeddedServer, version: bytes) -> None:
    answer = exchange(server, b"GET /version " + version + b"\r\nHost: localhost\r\n\r\n")
    assert answer == UNSUPPORTED_VERSION


def test_a_refused_version_runs_nothing(server: EmbeddedServer) -> None:
    body = configmap("kept-by-version")
    created = exchange(
        server,
        f"POST {CMS} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n".encode()
        + body,
    )
    assert created.startswith(b"HTTP/1.1 201 "), created[:200]
    answer = exchange(
        server, f"DELETE {CMS}/kept-by-version HTTP/2.0\r\nHost: localhost\r\n\r\n".encode()
    )
    assert answer == UNSUPPORTED_VERSION
    assert stored(server, "kept-by-version")


def test_a_pipelined_refused_version_is_answered_in_its_turn(server: EmbeddedServer) -> None:
    answer = exchange(
        server,
        b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n"
        b"GET /version HTTP/3.0\r\nHost: localhost\r\n\r\n"
        b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert answer.endswith(b"}" + UNSUPPORTED_VERSION), answer[-300:]
    assert answer.count(b"HTTP/1.1 ") == 2


def test_a_pipelined_bad_request_is_answered_after_the_ones_before(
    server: EmbeddedServer,
) -> None:
    answer = exchange(
        server,
        b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n"
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
        b"GET /version HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n"
        b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert answer.endswith(b"ok" + BAD_REQUEST), answer[-300:]
    assert answer.count(b"HTTP/1.1 ") == 3


def test_a_request_line_without_version_is_a_bad_request(server: EmbeddedServer) -> None:
    assert exchange(server, b"GET /version\r\n\r\n") == BAD_REQUEST


def test_http_1_2_is_read_as_http_1_1(server: EmbeddedServer) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /version HTTP/1.2\r\nHost: localhost\r\n\r\n")
        head, _ = read_response(sock)
        assert head.startswith(b"HTTP/1.1 200 "), head
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n")
        head, _ = read_response(sock)
    assert head.startswith(b"HTTP/1.1 200 "), head


def test_http10_keep_alive_keeps_the_connection(server: EmbeddedServer) -> None:
    request = b"GET /version HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
    with connect(server) as sock:
        for _ in range(2):
            sock.sendall(request)
            head, body = read_response(sock)
            assert head.startswith(b"HTTP/1.1 200 "), head
            assert b"\r\nconnection: keep-alive" in head.lower(), head
            assert b'"gitVersion"' in body
        sock.sendall(b"GET /version HTTP/1.0\r\n\r\n")
        head, _ = read_response(sock)
        assert b"\r\nconnection: close" in head.lower(), head
        assert closed(sock)


def test_http10_keep_alive_ends_a_streamed_response_with_the_connection(
    server: EmbeddedServer,
) -> None:
    # Go keeps an HTTP/1.0 connection only for a response that states its length
    answer = exchange(
        server,
        f"GET {CMS}?watch=1&timeoutSeconds=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".encode(),
    )
    head = answer.partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 200 "), head
    assert b"\r\nconnection: close" in head and b"keep-alive" not in head, head


# -- bodies -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "encoding",
    [
        b"Transfer-Encoding: gzip\r\n",
        b"Transfer-Encoding: gzip, chunked\r\n",
        b"Transfer-Encoding: identity\r\nContent-Length: 2\r\n",
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
    ],
)
def test_a_transfer_encoding_other_than_one_chunked_is_501(
    server: EmbeddedServer, encoding: bytes
) -> None:
    answer = exchange(
        server,
        f"POST {CMS} HTTP/1.1\r\nHost: localhost\r\n".encode()
        + encoding
        + b"\r\n2\r\n{}\r\n0\r\n\r\n",
    )
    assert answer == UNSUPPORTED_TE


def test_chunked_in_any_case_is_read(server: EmbeddedServer) -> None:
    body = configmap("chunked-any-case")
    answer = exchange(
        server,
        f"POST {CMS} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: ChunKed\r\n"
        "Connection: close\r\n\r\n".encode()
        + b"%x\r\n%b\r\n0\r\n\r\n" % (len(body), body),
    )
    assert answer.startswith(b"HTTP/1.1 201 "), answer[:200]


@pytest.mark.parametrize(
    "head",
    [
        b"Content-Length: +2\r\n",
        b"Content-Length: 2\r\nContent-Length: 3\r\n",
        b"Content-Length:\r\n",
        b"X\x01Y: z\r\n",
        b"X-Y: a\x00b\r\n",
        b": no-name\r\n",
    ],
)
def test_a_malformed_head_gets_go_plain_400(server: EmbeddedServer, head: bytes) -> None:
    answer = exchange(
        server, f"POST {CMS} HTTP/1.1\r\nHost: localhost\r\n".encode() + head + b"\r\nab"
    )
    assert answer == BAD_REQUEST


def test_a_broken_chunked_body_is_a_bad_request_and_stores_nothing(
    server: EmbeddedServer,
) -> None:
    body = configmap("broken-chunks")
    answer = exchange(
        server,
        f"POST {CMS} HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        + b"%x\r\n%b\r\nzz\r\n" % (len(body), body),
    )
    assert answer == BAD_REQUEST
    assert not stored(server, "broken-chunks")


# -- Expect -----------------------------------------------------------------------------


def test_an_unknown_expectation_is_417_and_the_request_is_not_run(
    server: EmbeddedServer,
) -> None:
    body = configmap("expect-else")
    answer = exchange(
        server,
        f"POST {CMS} HTTP/1.1\r\nHost: localhost\r\nExpect: something-else\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body,
    )
    assert answer == EXPECTATION_FAILED
    assert not stored(server, "expect-else")


@pytest.mark.parametrize("expect", [b"100-continue", b"100-Continue", b"foo, 100-continue"])
def test_100_continue_before_an_announced_body(server: EmbeddedServer, expect: bytes) -> None:
    name = "expect-" + expect.hex()
    body = configmap(name)
    with connect(server) as sock:
        sock.sendall(
            f"POST {CMS} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n".encode()
            + b"Expect: "
            + expect
            + b"\r\n\r\n"
        )
        head, _ = read_response(sock)
        assert head == b"HTTP/1.1 100 Continue"
        sock.sendall(body)
        head, _ = read_response(sock)
    assert head.startswith(b"HTTP/1.1 201 "), head


@pytest.mark.parametrize(
    "request_head",
    [
        # HTTP/1.0: Go never sends 100 Continue
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.0\r\nContent-Length: %d\r\n",
        # no body announced: nothing to continue
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Length: 0\r\n",
    ],
)
def test_no_100_continue_without_an_http11_body(
    server: EmbeddedServer, request_head: bytes
) -> None:
    body = configmap("expect-legacy") if b"%d" in request_head else b""
    head = request_head.replace(b"%d", str(len(body)).encode())
    answer = exchange(server, head + b"Expect: 100-continue\r\nConnection: close\r\n\r\n" + body)
    assert not answer.startswith(b"HTTP/1.1 100"), answer[:200]
    assert answer.startswith(b"HTTP/1.1 201 " if body else b"HTTP/1.1 400 "), answer[:300]
