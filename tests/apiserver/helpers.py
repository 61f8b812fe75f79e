"""A thin HTTP helper for tests that talk to the embedded API server."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from kubewerk.webhook import WebhookServer
from kubewerk.webhook.certs import CertificateSet, write_certificates

DB_PATH = "/apis/demo.kubewerk.dev/v1/namespaces/default/databases"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
DEMO_CRD = (
    Path(__file__).resolve().parents[2] / "src" / "kubewerk" / "cli" / "demo_data" / "crd.yaml"
)


class Api:
    """``await api.get(path)`` → ``(status, body)``; JSON in and out."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.session = aiohttp.ClientSession()

    async def close(self) -> None:
        await self.session.close()

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> tuple[int, Any]:
        hdrs = {"Content-Type": content_type, **(headers or {})}
        data = raw if raw is not None else (orjson.dumps(body) if body is not None else None)
        async with self.session.request(method, self.base + path, data=data, headers=hdrs) as resp:
            text = await resp.read()
            try:
                parsed = orjson.loads(text) if text else None
            except orjson.JSONDecodeError:
                parsed = text.decode()
            return resp.status, parsed

    async def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, kind: str = "merge", **kw: Any) -> tuple[int, Any]:
        ctype = {
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
            "strategic": "application/strategic-merge-patch+json",
        }[kind]
        return await self.request("PATCH", path, body, content_type=ctype, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return await self.request("DELETE", path, body, **kw)

    async def watch(self, path: str, stop_after: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Collect ``stop_after`` watch events (or fewer if the stream ends / times out)."""
        events: list[dict[str, Any]] = []
        async with self.session.get(self.base + path) as resp:
            assert resp.status == 200, await resp.text()

            async def read() -> None:
                async for line in resp.content:
                    if line.strip():
                        events.append(orjson.loads(line))
                        if len(events) >= stop_after:
                            return

            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(read(), timeout)
        return events

    async def install_demo_crd(self) -> dict[str, Any]:
        crd = yaml.safe_load(DEMO_CRD.read_text())
        status, body = await self.post(CRD_PATH, crd)
        assert status == 201, body
        await self.wait_established(crd["metadata"]["name"])
        return crd

    async def wait_established(self, name: str, timeout: float = 5.0) -> dict[str, Any]:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            status, body = await self.get(f"{CRD_PATH}/{name}")
            assert status == 200, body
            conds = {c["type"]: c for c in (body.get("status") or {}).get("conditions") or []}
            if conds.get("Established", {}).get("status") == "True":
                # served as soon as Established
                return body
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"CRD {name} not established: {body.get('status')}")
            await asyncio.sleep(0.01)

    async def wait_gone(self, path: str, timeout: float = 5.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            status, body = await self.get(path)
            if status == 404:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{path} still there: {body}")
            await asyncio.sleep(0.01)


def database(
    name: str, engine: str = "postgres", replicas: int | None = 1, **meta: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"engine": engine}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "demo.kubewerk.dev/v1",
        "kind": "Database",
        "metadata": {"name": name, **meta},
        "spec": spec,
    }


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **meta},
        "data": data or {},
    }


def configmap_name_policy(
    name: str, refused: str, failure_policy: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ValidatingAdmissionPolicy ``name`` refusing ConfigMaps named ``refused`` on
    CREATE and UPDATE, and its Deny binding (same name): the smallest policy in force."""
    spec: dict[str, Any] = {
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["configmaps"],
                }
            ]
        },
        "validations": [{"expression": f"object.metadata.name != '{refused}'"}],
    }
    if failure_policy is not None:
        spec = {"failurePolicy": failure_policy, **spec}
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    return policy, binding


def open_crd(group: str, plural: str, kind: str, scope: str = "Namespaced") -> dict[str, Any]:
    """A CRD of one served version ``v1`` whose schema takes any object (preserves unknown
    fields): for tests about anything but the schema."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


async def asgi_call(
    app: Any,
    method: str,
    path: str,
    query: str = "",
    headers: dict[str, str] | None = None,
    body: bytes = b"",
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request straight into an ASGI app (no HTTP): status, response headers (lower-case
    names, in order, repeated ones kept) and body. Fails on an ASGI protocol slip: no or two
    response starts, body before start, a message after the end, a wrong Content-Length."""
    raw_headers = [
        (k.encode("latin-1"), v.encode("utf-8")) for k, v in (headers or {}).items() if v
    ]
    raw_headers.append((b"content-length", str(len(body)).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("utf-8", "surrogatepass"),
        "query_string": query.encode(),
        "headers": raw_headers,
        "server": ("127.0.0.1", 6443),
        "client": ("127.0.0.1", 50000),
        "root_path": "",
    }
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(0.05)  # a client that hangs up right after its request
        return {"type": "http.disconnect"}

    starts: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    finished = False

    async def send(message: dict[str, Any]) -> None:
        nonlocal finished
        assert not finished, f"message after the response completed: {message['type']}"
        if message["type"] == "http.response.start":
            assert not starts, "two response starts"
            starts.append(message)
        elif message["type"] == "http.response.body":
            assert starts, "body before start"
            chunks.append(message.get("body", b""))
            finished = not message.get("more_body", False)

    await app(scope, receive, send)
    assert len(starts) == 1, "no response"
    resp_headers = [(k.decode().lower(), v.decode()) for k, v in starts[0]["headers"]]
    payload = b"".join(chunks)
    length = dict(resp_headers).get("content-length")
    if length is not None:
        assert int(length) == len(payload)
    return starts[0]["status"], resp_headers, payload


async def json_call(app: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """``asgi_call`` with a JSON body (``path`` may carry ``?query``): status and the
    decoded answer."""
    path, _, query = path.partition("?")
    status, _, payload = await asgi_call(
        app,
        method,
        path,
        query,
        headers={"content-type": "application/json"},
        body=b"" if body is None else orjson.dumps(body),
    )
    return status, orjson.loads(payload)


@contextlib.contextmanager
def tls_http_server(
    handler: type[BaseHTTPRequestHandler], certs: CertificateSet, directory: Path
) -> Iterator[str]:
    """A threaded HTTPS server on loopback answering with ``handler``, serving ``certs``
    (written into ``directory``); yields its base URL, ``https://127.0.0.1:PORT``."""
    files = write_certificates(certs, directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(files["cert"], files["key"])
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.asynccontextmanager
async def tls_webhook_server(
    app: Any, certs: CertificateSet, directory: Path
) -> AsyncIterator[WebhookServer]:
    """A :class:`~kubewerk.webhook.WebhookServer` on loopback serving the raw ASGI ``app``
    over TLS with ``certs`` (written into ``directory``), running for the block."""
    files = write_certificates(certs, directory)
    server = WebhookServer(
        app, host="127.0.0.1", port=0, cert_file=files["cert"], key_file=files["key"]
    )
    async with server:
        yield server
