"""One write per response (httpproto.CoalescingWriter): a response's head goes out with its
body, a head alone goes out at the end of the loop's turn, nothing is reordered or lost."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kubewerk.apiserver.httpproto import CoalescingWriter
from kubewerk.apiserver.server import EmbeddedServer


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        assert not self.closed, "write after close"
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


async def _turn() -> None:
    """Let the loop run the callbacks scheduled so far."""
    await asyncio.sleep(0)


def test_head_and_body_in_one_turn_are_one_write() -> None:
    async def main() -> list[bytes]:
        t = FakeTransport()
        w = CoalescingWriter(t, asyncio.get_running_loop())  # type: ignore[arg-type]
        w.write(b"HEAD\r\n\r\n")
        assert t.writes == []
        w.write(b"body")
        await _turn()
        return t.writes

    assert asyncio.run(main()) == [b"HEAD\r\n\r\nbody"]


def test_a_head_alone_goes_out_at_the_end_of_the_turn() -> None:
    async def main() -> list[list[bytes]]:
        t = FakeTransport()
        w = CoalescingWriter(t, asyncio.get_running_loop())  # type: ignore[arg-type]
        w.write(b"HEAD")
        seen = [list(t.writes)]
        await _turn()
        seen.append(list(t.writes))
        w.write(b"chunk-1")  # later chunks of a stream are not held
        w.write(b"chunk-2")
        seen.append(list(t.writes))
        return seen

    assert asyncio.run(main()) == [[], [b"HEAD"], [b"HEAD", b"chunk-1", b"chunk-2"]]


def test_only_the_first_write_is_held() -> None:
    async def main() -> list[bytes]:
        t = FakeTransport()
        w = CoalescingWriter(t, asyncio.get_running_loop())  # type: ignore[arg-type]
        w.write(bytearray(b"A"))
        w.write(memoryview(b"B"))
        w.write(b"C")
        await _turn()
        w.write(b"D")
        return t.writes

    assert asyncio.run(main()) == [b"AB", b"C", b"D"]


def test_close_sends_what_is_held_first() -> None:
    async def main() -> tuple[list[bytes], bool]:
        t = FakeTransport()
        w = CoalescingWriter(t, asyncio.get_running_loop())  # type: ignore[arg-type]
        w.write(b"HEAD")
        w.close()
        await _turn()  # the scheduled flush finds nothing and writes nothing after close
        return t.writes, t.closed

    assert asyncio.run(main()) == ([b"HEAD"], True)


def test_nothing_is_held_on_a_closing_transport_and_other_attributes_pass_through() -> None:
    class Closing(FakeTransport):
        def write(self, data: Any) -> None:
            self.writes.append(bytes(data))  # a closing transport drops them itself

    async def main() -> tuple[list[bytes], str, bool]:
        t = Closing()
        t.closed = True
        w = CoalescingWriter(t, asyncio.get_running_loop())  # type: ignore[arg-type]
        w.write(b"x")
        written = list(t.writes)
        await _turn()
        return written, w.get_extra_info("peername"), w.is_closing()

    assert asyncio.run(main()) == ([b"x"], "info:peername", True)


# -- through the protocol ------------------------------------------------------------------


async def _plain_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await receive()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


def _protocol_writes(requests: bytes, app: Any = _plain_app) -> list[bytes]:
    """The writes ``LimitedHttpToolsProtocol`` makes to its transport for ``requests``."""
    import uvicorn
    from uvicorn.server import ServerState

    from kubewerk.apiserver.httpproto import HttpLimits, protocol_class

    async def main() -> list[bytes]:
        config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False)
        config.load()
        cls = protocol_class(HttpLimits())
        proto = cls(config, ServerState(), {}, asyncio.get_running_loop())

        class Transport(FakeTransport):
            def get_extra_info(self, name: str) -> Any:
                return {"peername": ("127.0.0.1", 9), "sockname": ("127.0.0.1", 8)}.get(name)

            def set_write_buffer_limits(self, *args: Any, **kwargs: Any) -> None:
                pass

            def pause_reading(self) -> None:
                pass

            def resume_reading(self) -> None:
                pass

        t = Transport()
        proto.connection_made(t)  # type: ignore[arg-type]
        proto.data_received(requests)
        for _ in range(20):
            await _turn()
        proto.connection_lost(None)
        return t.writes

    return asyncio.run(main())


def test_the_protocol_writes_each_response_once() -> None:
    one = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    writes = _protocol_writes(one + one)  # two pipelined requests: two responses
    assert len(writes) == 2
    for w in writes:
        assert w.startswith(b"HTTP/1.1 200 OK\r\n") and w.endswith(b"\r\n\r\nok")


def test_the_protocol_sends_a_streaming_head_without_waiting_for_the_body() -> None:
    gate = asyncio.Event()

    async def stream(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await gate.wait()  # never set: the body never comes

    writes = _protocol_writes(b"GET /w HTTP/1.1\r\nHost: x\r\n\r\n", stream)
    assert len(writes) == 1
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"transfer-encoding: chunked\r\n\r\n" in writes[0]


# -- over real sockets ---------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[EmbeddedServer]:
    srv = EmbeddedServer("memory").start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


def _request(path: str, extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode()


def test_plain_responses_on_one_connection(server: EmbeddedServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        for _ in range(3):  # keep-alive: every response of the connection
            sock.sendall(_request("/api/v1/namespaces/default"))
            data = sock.recv(65536)
            head, sep, body = data.partition(b"\r\n\r\n")
            assert sep and head.startswith(b"HTTP/1.1 200 ")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(body) < length:
                body += sock.recv(65536)
            assert len(body) == length


def test_a_watch_sends_its_headers_before_any_event(server: EmbeddedServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        # a watch from "now" on a resource with no changes: headers, then nothing
        sock.sendall(_request("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0"))
        sock.sendall(b"")
        started = time.monotonic()
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk
            data += chunk
        assert data.startswith(b"HTTP/1.1 200 ")
        assert b"transfer-encoding: chunked" in data.lower()
        assert time.monotonic() - started < 4


def test_head_request_and_connection_close_are_answered(server: EmbeddedServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"HEAD /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = sock.recv(65536)
        assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"\r\n\r\n")
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 200 ") and b'"gitVersion"' in data


def test_direct_body_chunks_follow_the_head_on_the_connection() -> None:
    from kubewerk.apiserver.httpproto import chunk_frame, direct_body

    async def stream(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        body = direct_body(send)
        assert body is not None
        assert body.write(chunk_frame(b"event-1"))
        await asyncio.sleep(0)
        assert body.write(chunk_frame(b"event-2"))
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    writes = _protocol_writes(b"GET /w HTTP/1.1\r\nHost: x\r\n\r\n", stream)
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and writes[0].endswith(b"\r\n\r\n")
    assert writes[1:] == [b"7\r\nevent-1\r\n", b"7\r\nevent-2\r\n", b"0\r\n\r\n"]


def test_a_large_body_follows_its_head_without_a_joined_copy() -> None:
    from kubewerk.apiserver.httpproto import COALESCE_MAX

    async def main() -> list[bytes]:
        t = FakeTransport()
        w = CoalescingWriter(t, asyncio.get_running_loop())  # type: ignore[arg-type]
        w.write(b"HEAD")
        w.write(b"b" * (COALESCE_MAX + 1))
        await _turn()
        return t.writes

    writes = asyncio.run(main())
    assert [len(x) for x in writes] == [4, COALESCE_MAX + 1]
    assert writes[0] == b"HEAD"
