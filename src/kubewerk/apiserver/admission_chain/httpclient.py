"""A small async HTTPS POST client for calling webhooks (asyncio streams + httptools).

One request per connection (webhook calls are rare next to the server's own traffic,
and a fresh connection makes a changed caBundle or endpoint take effect at once).
The response body is bounded (:data:`MAX_RESPONSE_BYTES`, as kube-apiserver bounds a
webhook's answer), the whole exchange by a deadline. Failures raise
:class:`CallError` with Go's ``net/http`` wording (``Post "https://…": dial tcp
127.0.0.1:1: connect: connection refused``, ``… context deadline exceeded``), which
is what kube-apiserver puts in its messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass, field
from typing import Final

import httptools

MAX_RESPONSE_BYTES: Final = 3 * 1024 * 1024
"""Bytes of a webhook's response body read at most (kube's limit for webhook answers)."""


class CallError(Exception):
    """The call did not produce a response; ``str()`` is Go's ``url.Error`` text."""


@dataclass
class HttpResponse:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class _Collector:
    def __init__(self) -> None:
        self.body = bytearray()
        self.done = False
        self.too_large = False
        self.headers: dict[str, str] = {}

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, chunk: bytes) -> None:
        if len(self.body) + len(chunk) > MAX_RESPONSE_BYTES:
            self.too_large = True
            return
        self.body += chunk

    def on_message_complete(self) -> None:
        self.done = True


def client_context(ca_pem: bytes | None) -> ssl.SSLContext:
    """TLS client context trusting ``ca_pem`` (the caBundle), else the system roots."""
    ctx = ssl.create_default_context()
    if ca_pem:
        ctx = ssl.create_default_context(cadata=ca_pem.decode("ascii", "replace"))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


async def post(
    url: str,
    host: str,
    port: int,
    path: str,
    body: bytes,
    *,
    server_name: str,
    context: ssl.SSLContext,
    timeout: float,
) -> HttpResponse:
    """POST ``body`` (JSON) to ``host:port`` over TLS checked against ``server_name``.

    ``url`` is the URL as the error messages name it. Raises :class:`CallError`.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    prefix = f'Post "{url}": '
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                host, port, ssl=context, server_hostname=server_name, limit=2**16
            ),
            timeout,
        )
    except TimeoutError:
        raise CallError(prefix + "context deadline exceeded") from None
    except ssl.SSLCertVerificationError as exc:
        raise CallError(prefix + "tls: failed to verify certificate: " + _tls_reason(exc)) from None
    except ssl.SSLError as exc:
        raise CallError(prefix + f"remote error: tls: {exc.reason or exc}") from None
    except OSError as exc:
        raise CallError(prefix + _dial_error(host, port, exc)) from None
    try:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {server_name}:{port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, */*\r\n"
            "User-Agent: kube-apiserver-admission\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode("latin-1")
        writer.write(head + body)
        collector = _Collector()
        parser = httptools.HttpResponseParser(collector)
        while not collector.done:
            left = deadline - loop.time()
            if left <= 0:
                raise CallError(prefix + "context deadline exceeded")
            try:
                chunk = await asyncio.wait_for(reader.read(65536), left)
            except TimeoutError:
                raise CallError(prefix + "context deadline exceeded") from None
            if not chunk:
                if not collector.done:
                    raise CallError(prefix + "EOF")
                break
            try:
                parser.feed_data(chunk)
            except httptools.HttpParserError as exc:
                raise CallError(prefix + f"malformed HTTP response: {exc}") from None
            if collector.too_large:
                raise CallError(
                    prefix + f"response body larger than the limit of {MAX_RESPONSE_BYTES} bytes"
                )
        return HttpResponse(parser.get_status_code(), bytes(collector.body), collector.headers)
    except OSError as exc:
        raise CallError(prefix + str(exc)) from None
    finally:
        writer.close()
        with contextlib.suppress(OSError, TimeoutError, ssl.SSLError):
            await asyncio.wait_for(writer.wait_closed(), 1.0)


def _dial_error(host: str, port: int, exc: OSError) -> str:
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(exc, ConnectionRefusedError):
        return f"dial tcp {target}: connect: connection refused"
    return f"dial tcp {target}: {exc.strerror or exc}"


def _tls_reason(exc: ssl.SSLCertVerificationError) -> str:
    message = str(exc.verify_message or exc)
    if "unable to get local issuer" in message or "self-signed" in message:
        return "x509: certificate signed by unknown authority"
    if "Hostname mismatch" in message or "IP address mismatch" in message:
        return f"x509: certificate is not valid for the requested name ({message})"
    return f"x509: {message}"
