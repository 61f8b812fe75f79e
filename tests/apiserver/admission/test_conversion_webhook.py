"""CRD conversion strategy Webhook in the embedded server, against a real
``kubewerk.webhook`` conversion server over TLS (caBundle): objects written in one
version read back in the other (get, list, watch, status), lossless round trips, and
kube-apiserver's errors for a webhook that is down or answers wrongly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.model import crd_for
from kubewerk.webhook import WebhookServer
from kubewerk.webhook.certs import CertificateSet, make_certificates
from tests.apiserver.helpers import CRD_PATH, Api, tls_webhook_server
from tests.webhook.models import GROUP, LOST, Database, make_app

CRD = f"databases.{GROUP}"
V1 = f"/apis/{GROUP}/v1/namespaces/default/databases"
V1A1 = f"/apis/{GROUP}/v1alpha1/namespaces/default/databases"


class Hooks:
    """The conversion app, with misbehaving variants on other paths."""

    def __init__(self) -> None:
        self.app = make_app()
        self.reviews: list[dict[str, Any]] = []
        self.paths = ["/convert", "/extra", "/rename"]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] == "/convert":
            if scope["type"] == "http":
                receive = self._recording(receive)
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        review = orjson.loads(body)
        request = review["request"]
        objects = [{**o, "apiVersion": request["desiredAPIVersion"]} for o in request["objects"]]
        if scope["path"] == "/extra":
            objects.append(objects[0])
        if scope["path"] == "/rename":
            objects[0] = {**objects[0], "metadata": {**objects[0]["metadata"], "name": "other"}}
        answer = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": {
                "uid": request["uid"],
                "result": {"status": "Success"},
                "convertedObjects": objects,
            },
        }
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": orjson.dumps(answer)})

    def _recording(self, receive: Any) -> Any:
        chunks: list[bytes] = []

        async def wrapped() -> Any:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body") and message["type"] == "http.request":
                self.reviews.append(orjson.loads(b"".join(chunks)))
            return message

        return wrapped


@pytest.fixture(scope="module")
def certs() -> CertificateSet:
    return make_certificates("convert", "default", days=2, extra_names=["127.0.0.1"])


@pytest.fixture
async def hooks(
    certs: CertificateSet, tmp_path: Path
) -> AsyncIterator[tuple[WebhookServer, Hooks]]:
    app = Hooks()
    async with tls_webhook_server(app, certs, tmp_path / "certs") as server:
        yield server, app


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


async def install(api: Api, client_config: dict[str, Any]) -> None:
    crd = crd_for(Database)
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = client_config
    status, body = await api.post(CRD_PATH, crd)
    assert status == 201, body
    await api.wait_established(CRD)


def url_config(server: WebhookServer, certs: CertificateSet, path: str = "/convert") -> Any:
    return {"url": f"https://127.0.0.1:{server.port}{path}", "caBundle": certs.ca_bundle}


def alpha(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Database",
        "metadata": {"name": name, "labels": {"team": "a"}},
        "spec": {"engine": "postgres", **spec},
    }


async def test_written_in_one_version_read_in_the_other(
    api: Api, aserver: EmbeddedServer, hooks: tuple[WebhookServer, Hooks], certs: CertificateSet
) -> None:
    server, app = hooks
    pool = aserver.app.chain.pool
    await install(api, url_config(server, certs))
    status, created = await api.post(V1A1, alpha("one", size="10Gi"))
    assert status == 201, created
    # the answer is in the request's version, the object stored in v1 (the hub)
    assert created["apiVersion"] == f"{GROUP}/v1alpha1"
    assert created["spec"] == {"engine": "postgres", "size": "10Gi"}
    # the body went to the storage version, the stored object came back
    assert [r["request"]["desiredAPIVersion"] for r in app.reviews] == [
        f"{GROUP}/v1",
        f"{GROUP}/v1alpha1",
    ]
    status, got = await api.get(f"{V1}/one")
    assert status == 200, got
    assert got["apiVersion"] == f"{GROUP}/v1"
    assert got["spec"] == {"engine": "postgres", "storageGi": 10}
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["metadata"]["labels"] == {"team": "a"}
    # v1 → v1alpha1 → v1 is lossless: fields v1alpha1 lacks ride in an annotation
    status, body = await api.patch(
        f"{V1}/one", {"spec": {"replicas": 3, "tags": ["x", "y"], "backup": {"schedule": "@daily"}}}
    )
    assert status == 200, body
    status, old = await api.get(f"{V1A1}/one")
    assert status == 200, old
    assert old["apiVersion"] == f"{GROUP}/v1alpha1"
    assert old["spec"] == {"engine": "postgres", "size": "10Gi"}
    assert LOST in old["metadata"]["annotations"]
    old["metadata"]["labels"]["changed"] = "yes"
    status, put = await api.put(f"{V1A1}/one", old)
    assert status == 200, put
    assert put["apiVersion"] == f"{GROUP}/v1alpha1"
    status, back = await api.get(f"{V1}/one")
    assert back["spec"] == {
        "engine": "postgres",
        "storageGi": 10,
        "replicas": 3,
        "tags": ["x", "y"],
        "backup": {"schedule": "@daily"},
    }
    assert LOST not in (back["metadata"].get("annotations") or {})
    assert back["metadata"]["labels"] == {"team": "a", "changed": "yes"}
    # a patch in v1alpha1 is applied to the object as v1alpha1 serves it
    status, patched = await api.patch(f"{V1A1}/one", {"spec": {"size": "20Gi"}})
    assert status == 200, patched
    assert patched["spec"]["size"] == "20Gi"
    status, back = await api.get(f"{V1}/one")
    assert back["spec"]["storageGi"] == 20 and back["spec"]["replicas"] == 3
    # every review went over one kept connection (the admission chain's pool): one handshake
    assert len(app.reviews) >= 8
    assert pool.connections_made == 1 and pool.idle_count() == 1


async def test_list_is_one_review_and_watch_is_converted(
    api: Api, hooks: tuple[WebhookServer, Hooks], certs: CertificateSet
) -> None:
    server, app = hooks
    await install(api, url_config(server, certs))
    for n in range(3):
        status, body = await api.post(V1, {**alpha(f"db{n}"), "apiVersion": f"{GROUP}/v1"})
        assert status == 201, body
    before = len(app.reviews)  # writes in the storage version call nothing
    assert before == 0
    status, listed = await api.get(V1A1)
    assert status == 200, listed
    assert listed["apiVersion"] == f"{GROUP}/v1alpha1"
    assert [i["apiVersion"] for i in listed["items"]] == [f"{GROUP}/v1alpha1"] * 3
    assert len(app.reviews) == 1 and len(app.reviews[0]["request"]["objects"]) == 3
    events = await api.watch(f"{V1A1}?watch=true", stop_after=3)
    assert [e["object"]["apiVersion"] for e in events] == [f"{GROUP}/v1alpha1"] * 3


async def test_service_reference_through_endpoints(
    api: Api, hooks: tuple[WebhookServer, Hooks], certs: CertificateSet
) -> None:
    server, _ = hooks
    status, body = await api.post(
        "/api/v1/namespaces/default/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "convert"},
            "spec": {"ports": [{"port": 443, "targetPort": server.port}]},
        },
    )
    assert status == 201, body
    status, body = await api.post(
        "/api/v1/namespaces/default/endpoints",
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "convert"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": server.port}]}],
        },
    )
    assert status == 201, body
    config = {
        "service": {"namespace": "default", "name": "convert", "path": "/convert"},
        "caBundle": certs.ca_bundle,
    }
    await install(api, config)
    status, body = await api.post(V1A1, alpha("svc", size="1Gi"))
    assert status == 201, body
    status, got = await api.get(f"{V1}/svc")
    assert got["spec"]["storageGi"] == 1


async def test_webhook_down_is_kubes_error_and_stores_nothing(
    api: Api, aserver: EmbeddedServer, certs: CertificateSet
) -> None:
    await install(api, {"url": "https://127.0.0.1:1/convert", "caBundle": certs.ca_bundle})
    status, body = await api.post(V1A1, alpha("down"))
    assert status == 500, body
    assert body["reason"] == "InternalError"
    assert body["message"] == (
        f"Internal error occurred: conversion webhook for {GROUP}/v1alpha1, Kind=Database "
        'failed: Post "https://127.0.0.1:1/convert": dial tcp 127.0.0.1:1: connect: '
        "connection refused"
    )
    status, listed = await api.get(V1)
    assert listed["items"] == []
    status, body = await api.post(V1, {**alpha("stored"), "apiVersion": f"{GROUP}/v1"})
    assert status == 201, body
    status, body = await api.get(f"{V1A1}/stored")
    assert status == 500
    assert body["message"].startswith(
        f"Internal error occurred: conversion webhook for {GROUP}/v1, Kind=Database failed: "
    )
    status, body = await api.get(V1A1)
    assert status == 500
    assert f"conversion webhook for {GROUP}/v1, Kind=DatabaseList failed: " in body["message"]


async def test_wrong_answers_get_kubes_messages(
    api: Api, hooks: tuple[WebhookServer, Hooks], certs: CertificateSet
) -> None:
    server, _ = hooks
    await install(api, url_config(server, certs, "/extra"))
    status, body = await api.post(V1, {**alpha("x"), "apiVersion": f"{GROUP}/v1"})
    assert status == 201, body
    status, body = await api.get(f"{V1A1}/x")
    assert status == 500
    assert body["message"] == (
        f"Internal error occurred: conversion webhook for {GROUP}/v1, Kind=Database "
        "returned 2 objects, expected 1"
    )
    _, crd = await api.get(f"{CRD_PATH}/{CRD}")
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = url_config(server, certs, "/rename")
    status, body = await api.put(f"{CRD_PATH}/{CRD}", crd)
    assert status == 200, body
    await asyncio.sleep(0.2)  # the served type follows the CRD
    status, body = await api.get(f"{V1A1}/x")
    assert status == 500
    assert body["message"] == (
        f"Internal error occurred: conversion webhook for {GROUP}/v1, Kind=Database "
        "returned invalid object: must have the same name: x != other"
    )
    status, body = await api.get(V1A1)
    assert body["message"] == (
        f"Internal error occurred: conversion webhook for {GROUP}/v1, Kind=DatabaseList "
        "returned invalid converted object at index 1: must have the same name: x != other"
    )


async def test_timeout(api: Api, aserver: EmbeddedServer, certs: CertificateSet) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)
        writer.close()

    tcp = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = tcp.sockets[0].getsockname()[1]
    try:
        aserver.app.conversion.timeout = 0.3
        await install(
            api, {"url": f"https://127.0.0.1:{port}/convert", "caBundle": certs.ca_bundle}
        )
        status, body = await api.post(V1A1, alpha("slow"))
        assert status == 500
        assert body["message"].endswith(
            "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )
    finally:
        tcp.close()
