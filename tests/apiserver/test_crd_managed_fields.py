"""The managedFields of a write are worked out on the decoded, defaulted object, as kube's
handlers hand it to the field manager (create.go and update.go call
``FieldManager.UpdateNoErrors`` after the codec decoded and defaulted the body): a
CustomResourceDefinition's creator owns the ``conversion``, ``singular`` and ``listKind``
its decoding defaulted, not the zero values its stored form drops; an update that leaves
them out (they are defaulted again) does not take them from their owner."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import CRD_PATH, Api

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "things.fields.test"},
    "spec": {
        "group": "fields.test",
        "scope": "Namespaced",
        "names": {"plural": "things", "kind": "Thing"},
        "preserveUnknownFields": False,  # a zero value: not stored, not owned
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }
        ],
    },
}

OWNED_SPEC = {
    ".": {},
    "f:conversion": {".": {}, "f:strategy": {}},
    "f:group": {},
    "f:names": {".": {}, "f:kind": {}, "f:listKind": {}, "f:plural": {}, "f:singular": {}},
    "f:scope": {},
    "f:versions": {},
}


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


def owned(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    (entry,) = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager]
    assert entry["operation"] == "Update"
    fields: dict[str, Any] = entry["fieldsV1"]
    return fields


async def test_crd_create_owns_what_decoding_defaulted(api: Api) -> None:
    status, body = await api.post(f"{CRD_PATH}?fieldManager=me", CRD)
    assert status == 201, body
    assert body["spec"]["conversion"] == {"strategy": "None"}
    assert "preserveUnknownFields" not in body["spec"]
    assert owned(body, "me")["f:spec"] == OWNED_SPEC


async def test_crd_update_leaving_defaults_out_keeps_their_owner(api: Api) -> None:
    status, body = await api.post(f"{CRD_PATH}?fieldManager=me", CRD)
    assert status == 201, body
    name = CRD["metadata"]["name"]
    for _ in range(20):  # the CRD controller writes the status meanwhile: 409, read again
        body = await api.wait_established(name)
        body["spec"].pop("conversion")
        body["spec"]["names"].pop("singular")
        body["metadata"].pop("managedFields")
        body["metadata"].setdefault("labels", {})["tier"] = "a"
        status, body = await api.put(f"{CRD_PATH}/{name}?fieldManager=other", body)
        if status != 409:
            break
    assert status == 200, body
    assert body["spec"]["conversion"] == {"strategy": "None"}
    assert body["spec"]["names"]["singular"] == "thing"
    assert owned(body, "me")["f:spec"] == OWNED_SPEC
    assert owned(body, "other") == {"f:metadata": {"f:labels": {".": {}, "f:tier": {}}}}
