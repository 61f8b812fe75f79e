"""Stopping a TLS server with idle keep-alive clients does not wait out the graceful
shutdown timeout: an idle TLS connection is sent its close_notify and dropped, as Go's
http.Server.Shutdown closes idle connections without waiting for the peer's answer."""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from pathlib import Path

from kubewerk.apiserver.server import EmbeddedServer


async def test_an_idle_tls_client_does_not_hold_the_stop(tmp_path: Path) -> None:
    server = EmbeddedServer(tls=True, pki_dir=tmp_path / "pki")
    await server.start()
    try:
        assert server.pki is not None
        ctx = ssl.create_default_context(cadata=server.pki.ca_pem.decode())

        # a blocking client (as httpx's or Go's pools): one request answered, then the
        # connection sits in the pool and nothing reads it, so no close_notify is answered
        def request() -> tuple[ssl.SSLSocket, bytes]:
            sock = ctx.wrap_socket(
                socket.create_connection(("127.0.0.1", server.port), timeout=10),
                server_hostname="127.0.0.1",
            )
            sock.sendall(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            return sock, sock.recv(65536)

        client, head = await asyncio.to_thread(request)
        assert head.startswith(b"HTTP/1.1 ")
    finally:
        started = time.monotonic()
        await server.stop()
        took = time.monotonic() - started
    client.close()
    assert took < 1.0, f"stop took {took:.2f} s with one idle TLS connection"
