"""The embedded server as the client of a hostile CRD conversion webhook.

Whoever may create a CRD chooses its conversion webhook. The hostile TLS server of
``test_hostile_admission`` answers ConversionReviews for one CRD (one server and one
embedded server for the module); each case is chosen by a label of the object sent.
kube-apiserver's webhook converter is the reference: fewer or more objects, objects of
another kind, version, name or uid are refused with its messages; of the metadata only
labels and annotations may change (the rest is put back); the answer is bounded, typed
and timed as an admission webhook's. Nothing is stored when a conversion fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.model import crd_for
from kubewerk.webhook.certs import CertificateSet, make_certificates
from tests.apiserver.admission.test_hostile_admission import (
    Action,
    Client,
    HostileServer,
    Raw,
    Review,
    http,
)
from tests.webhook.models import GROUP, Database

V1A1 = f"/apis/{GROUP}/v1alpha1/namespaces/default/databases"
V1 = f"/apis/{GROUP}/v1/namespaces/default/databases"
GVK = f"{GROUP}/v1alpha1, Kind=Database"


def converted(objects: list[dict[str, Any]], desired: str) -> list[dict[str, Any]]:
    """What an honest webhook answers (the spec of these objects is the same in both
    versions: ``engine`` only)."""
    return [{**o, "apiVersion": desired} for o in objects]


def _deep(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


async def _slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ in range(100):  # a byte every 50 ms: never a whole answer within the second
        writer.write(b"1\r\n \r\n")
        await writer.drain()
        await asyncio.sleep(0.05)


SLOW: Action = _slow


def answer(review: Review) -> Action:
    """The case named by the ``case`` label of the first object sent."""
    request = review["request"]
    objects, desired = request["objects"], request["desiredAPIVersion"]
    case = objects[0]["metadata"]["labels"]["case"]
    result: Any = {"status": "Success"}
    out: Any = converted(objects, desired)
    if case == "fewer":
        out = []
    elif case == "more":
        out = out + out
    elif case == "other-kind":
        out[0]["kind"] = "Pod"
    elif case == "other-version":
        out = objects
    elif case == "other-name":
        out[0]["metadata"] = {**out[0]["metadata"], "name": "someone-else"}
    elif case == "other-uid" and out[0]["metadata"].get("uid"):
        out[0]["metadata"] = {**out[0]["metadata"], "uid": "0000"}
    elif case == "metadata":
        out[0]["metadata"] = {
            **out[0]["metadata"],
            "labels": {"case": "metadata", "added": "by-webhook"},
            "finalizers": ["evil.io/never-deleted"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": "1", "controller": True}
            ],
            "generation": 99,
            "deletionTimestamp": "2020-01-01T00:00:00Z",
        }
    elif case == "bad-labels":
        out[0]["metadata"] = {**out[0]["metadata"], "labels": {"case": "bad-labels", "-x": "1"}}
    elif case == "result-type":
        result = {"status": "Success", "code": "200"}
    elif case == "failure":
        result = {"status": "Failure", "message": "cannot convert that"}
    elif case == "deep":
        out[0]["spec"] = Raw(_deep(150))
    elif case == "huge":
        return http(b'{"pad":"' + b"x" * (4 * 1024 * 1024) + b'"}')
    elif case == "slow":
        return SLOW
    body = {
        "apiVersion": review["apiVersion"],
        "kind": "ConversionReview",
        "response": {"uid": request["uid"], "result": result, "convertedObjects": out},
    }
    raws: list[bytes] = []

    def raw(value: Any) -> str:
        raws.append(value.text)
        return f"@@raw{len(raws) - 1}@@"

    text = orjson.dumps(body, default=raw)
    for n, item in enumerate(raws):
        text = text.replace(f'"@@raw{n}@@"'.encode(), item)
    return http(text)


@pytest.fixture(scope="module")
def certs() -> CertificateSet:
    return make_certificates("convert", "default", days=2, extra_names=["127.0.0.1"])


@pytest.fixture(scope="module")
def hostile(
    certs: CertificateSet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HostileServer]:
    server = HostileServer(certs, tmp_path_factory.mktemp("hostile")).start()
    server.handlers["convert"] = answer
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def kube(hostile: HostileServer, certs: CertificateSet) -> Iterator[EmbeddedServer]:
    """One embedded server with the Database CRD converting through ``hostile``, its
    conversion calls bounded to one second."""
    srv = EmbeddedServer("memory").start_in_thread()
    srv.app.conversion.timeout = 1.0

    async def install() -> None:
        client = Client(srv.url)
        try:
            crd = crd_for(Database)
            crd["spec"]["conversion"]["webhook"]["clientConfig"] = {
                "url": f"https://127.0.0.1:{hostile.port}/convert",
                "caBundle": certs.ca_bundle,
            }
            got = await client.call(
                "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
            )
            assert got.status == 201, got
            for _ in range(100):
                if (await client.call("GET", V1)).status == 200:
                    return
                await asyncio.sleep(0.05)
            raise AssertionError("the CRD is not served")
        finally:
            await client.session.close()

    asyncio.run(install())
    try:
        yield srv
    finally:
        srv.stop_thread()


@pytest.fixture
async def client(kube: EmbeddedServer) -> AsyncIterator[Client]:
    c = Client(kube.url)
    try:
        yield c
    finally:
        await c.session.close()


def database(case: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Database",
        "metadata": {"name": case, "labels": {"case": case}},
        "spec": {"engine": "postgres"},
    }


def failed(reason: str) -> str:
    return f"Internal error occurred: conversion webhook for {GVK} failed: {reason}"


def returned(reason: str) -> str:
    return f"Internal error occurred: conversion webhook for {GVK} returned {reason}"


@pytest.mark.parametrize(
    ("case", "message"),
    [
        pytest.param("fewer", returned("0 objects, expected 1"), id="fewer"),
        pytest.param("more", returned("2 objects, expected 1"), id="more"),
        pytest.param(
            "other-kind",
            returned("invalid object at index 0: invalid kind (expected Database, received Pod)"),
            id="other-kind",
        ),
        pytest.param(
            "other-version",
            returned(
                f"invalid object at index 0: invalid groupVersion (expected {GROUP}/v1, "
                f"received {GROUP}/v1alpha1)"
            ),
            id="other-version",
        ),
        pytest.param(
            "other-name",
            returned("invalid object: must have the same name: other-name != someone-else"),
            id="other-name",
        ),
        pytest.param(
            "bad-labels",
            returned('invalid metadata: metadata.labels: Invalid value: "-x": name part must '),
            id="bad-labels",
        ),
        pytest.param(
            "result-type",
            failed(
                "json: cannot unmarshal string into Go struct field Status.response.result.code "
                "of type int32"
            ),
            id="result-type",
        ),
        pytest.param("failure", failed("cannot convert that"), id="failure"),
        pytest.param(
            "slow",
            failed(
                "unexpected error when reading response body. Please retry. Original error: "
                "context deadline exceeded (Client.Timeout or context cancellation while "
                "reading body)"
            ),
            id="slow",
        ),
        pytest.param(
            "deep",
            returned(
                "invalid object: the converted object nests deeper than 100 levels of objects "
                "and arrays (the embedded server's limit; Kubernetes allows 10000)"
            ),
            id="deep",
        ),
        pytest.param(
            "huge",
            failed(
                "unexpected error when reading response body. Please retry. Original error: "
                "response body larger than the limit of 3145728 bytes"
            ),
            id="huge",
        ),
    ],
)
async def test_hostile_conversion_answers_store_nothing(client, case: str, message: str) -> None:  # type: ignore[no-untyped-def]
    got = await client.call("POST", V1A1, database(case))
    assert got.status == 500, got
    assert got.message.startswith(message), got
    assert (await client.call("GET", f"{V1}/{case}")).status == 404


async def test_only_labels_and_annotations_may_change(client) -> None:  # type: ignore[no-untyped-def]
    got = await client.call("POST", V1A1, database("metadata"))
    assert got.status == 201, got
    stored = (await client.call("GET", f"{V1}/metadata")).body
    meta = stored["metadata"]
    assert meta["labels"] == {"case": "metadata", "added": "by-webhook"}
    for injected in ("finalizers", "ownerReferences", "deletionTimestamp"):
        assert injected not in meta, meta
    assert meta["generation"] == 1
    assert (await client.call("DELETE", f"{V1}/metadata")).status == 200


async def test_uid_changed_on_the_way_back_is_refused(client) -> None:  # type: ignore[no-untyped-def]
    # on create the object sent has no uid yet; the read back to v1alpha1 carries one
    got = await client.call(
        "POST",
        f"/apis/{GROUP}/v1/namespaces/default/databases",
        {**database("other-uid"), "apiVersion": f"{GROUP}/v1"},
    )
    assert got.status == 201, got
    uid = got.body["metadata"]["uid"]
    got = await client.call("GET", f"{V1A1}/other-uid")
    assert got.status == 500, got
    assert got.message == returned(
        f"invalid object: must have the same UID: {uid} != 0000"
    ).replace("v1alpha1, Kind", "v1, Kind")
