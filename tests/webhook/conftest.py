"""Fixtures for the webhook tests: certificates, reviews built as kube-apiserver builds
them, an in-process ASGI caller and a raw HTTP/1.1 client (plain or TLS)."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubewerk.webhook import CertificateSet, make_certificates, write_certificates

from .models import GROUP


@pytest.fixture(scope="session")
def cert_set() -> CertificateSet:
    return make_certificates("db-webhook", "ops", days=2)


@pytest.fixture
def cert_dir(cert_set: CertificateSet, tmp_path: Path) -> dict[str, Path]:
    return write_certificates(cert_set, tmp_path / "certs")


def client_context(ca_pem: bytes, server_hostname_check: bool = True) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    ctx.check_hostname = server_hostname_check
    return ctx


def kube_review(
    operation: str = "CREATE",
    obj: dict[str, Any] | None = None,
    old: dict[str, Any] | None = None,
    *,
    version: str = "v1",
    kind: str = "Database",
    resource: str = "databases",
    namespace: str = "default",
    dry_run: bool = False,
    api_version: str = "admission.k8s.io/v1",
) -> dict[str, Any]:
    """An AdmissionReview with every field kube-apiserver's CreateV1AdmissionReview
    fills (request.{uid, kind, resource, requestKind, requestResource, name, namespace,
    operation, userInfo, object, oldObject, dryRun, options}); subResource and
    requestSubResource are left out when empty, as Go's omitempty does."""
    name = ((obj or old or {}).get("metadata") or {}).get("name", "")
    options = {
        "CREATE": {
            "kind": "CreateOptions",
            "apiVersion": "meta.k8s.io/v1",
            "fieldManager": "kubectl-client-side-apply",
            "fieldValidation": "Strict",
        },
        "UPDATE": {
            "kind": "UpdateOptions",
            "apiVersion": "meta.k8s.io/v1",
            "fieldManager": "kubectl-edit",
            "fieldValidation": "Strict",
        },
        "DELETE": {
            "kind": "DeleteOptions",
            "apiVersion": "meta.k8s.io/v1",
            "propagationPolicy": "Background",
        },
    }.get(operation)
    if dry_run and options is not None:
        options["dryRun"] = ["All"]
    gvk = {"group": GROUP, "version": version, "kind": kind}
    gvr = {"group": GROUP, "version": version, "resource": resource}
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": gvk,
        "resource": gvr,
        "requestKind": dict(gvk),
        "requestResource": dict(gvr),
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": {
            "username": "kubernetes-admin",
            "groups": ["kubeadm:cluster-admins", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=abc"]},
        },
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
        "options": options,
    }
    if not name:
        del request["name"]
    return {"kind": "AdmissionReview", "apiVersion": api_version, "request": request}


def database(name: str = "db", **spec: Any) -> dict[str, Any]:
    """A v1 Database as kube-apiserver sends it (server-set metadata included)."""
    body: dict[str, Any] = {"engine": "postgres", **spec}
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Database",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": "5f2b8f5e-0000-4000-8000-000000000001",
            "creationTimestamp": "2025-01-02T03:04:05Z",
            "generation": 1,
            "managedFields": [
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": f"{GROUP}/v1",
                    "time": "2025-01-02T03:04:05Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {".": {}, "f:engine": {}}},
                }
            ],
        },
        "spec": body,
    }


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


async def asgi_call(
    app: Callable[..., Any],
    path: str,
    body: bytes | dict[str, Any],
    *,
    method: str = "POST",
    content_type: bytes = b"application/json",
    chunks: int = 1,
) -> Answer:
    """Call an ASGI app in process, as uvicorn would."""
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    headers = [(b"content-type", content_type), (b"content-length", str(len(data)).encode())]
    scope = {"type": "http", "method": method, "path": path, "headers": headers, "scheme": "https"}
    size = max(1, -(-len(data) // chunks))
    pieces = [data[i : i + size] for i in range(0, len(data), size)] or [b""]
    messages = [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
        for i, p in enumerate(pieces)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    return Answer(
        start["status"],
        {k.decode(): v.decode() for k, v in start["headers"]},
        b"".join(m.get("body", b"") for m in sent[1:]),
    )


async def review(app: Callable[..., Any], path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` of an AdmissionReview answered 200 by ``app``, after checking the
    envelope (apiVersion echoed, kind, the request's uid)."""
    answer = await asgi_call(app, path, body)
    assert answer.status == 200, answer.body
    out = answer.json()
    assert out["apiVersion"] == body["apiVersion"] and out["kind"] == "AdmissionReview"
    assert out["response"]["uid"] == body["request"]["uid"]
    response: dict[str, Any] = out["response"]
    return response


async def http_post(
    port: int,
    path: str,
    body: bytes | dict[str, Any],
    *,
    ssl_context: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
    content_type: str = "application/json",
    method: str = "POST",
) -> Answer:
    """One HTTP/1.1 request over a new connection (TLS when ``ssl_context``)."""
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=ssl_context, server_hostname=server_hostname if ssl_context else None
    )
    try:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: db-webhook.ops.svc:443\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(data)}\r\n"
            "Accept: application/json, */*\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + data)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    head_bytes, _, rest = raw.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return Answer(status, headers, rest)


from kubewerk.testing.plugin import kube_server, run_manager  # noqa: E402, F401
