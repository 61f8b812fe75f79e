"""Server-side apply of a custom resource with fields its schema does not declare is
refused whatever ``fieldValidation`` says, as kube-apiserver's field manager refuses to
make a typed patch object of it (kube answers the same text as a 500,
kubernetes/kubernetes#122480; kubewerk answers 400)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import CRD_PATH, DB_PATH, DEMO_CRD, asgi_call, database, json_call


@pytest.fixture
async def demo_app() -> ApiServer:
    """An in-process server with the demo Database CRD served."""
    app = ApiServer(open_store("memory"))
    status, body = await json_call(app, "POST", CRD_PATH, yaml.safe_load(DEMO_CRD.read_text()))
    assert status == 201, body
    for _ in range(500):
        if app.registry.get("demo.kubewerk.dev", "databases") is not None:
            return app
        await asyncio.sleep(0.005)
    raise AssertionError("the demo CRD was not served")


async def apply(app: ApiServer, body: Any, query: str = "fieldManager=me") -> tuple[int, Any]:
    status, _, payload = await asgi_call(
        app,
        "PATCH",
        f"{DB_PATH}/{body['metadata']['name']}",
        query,
        headers={"content-type": "application/apply-patch+yaml"},
        body=orjson.dumps(body),
    )
    return status, orjson.loads(payload)


PREFIX = "failed to create typed patch object (default/d1; demo.kubewerk.dev/v1, Kind=Database): "


@pytest.mark.parametrize("validation", ["", "Strict", "Warn", "Ignore"])
async def test_an_undeclared_field_is_refused_whatever_field_validation_says(
    demo_app: ApiServer, validation: str
) -> None:
    body = database("d1", namespace="default")
    body["spec"]["color"] = "red"
    query = "fieldManager=me" + (f"&fieldValidation={validation}" if validation else "")
    status, err = await apply(demo_app, body, query)
    assert (status, err["message"]) == (400, PREFIX + ".spec.color: field not declared in schema")


async def test_several_undeclared_fields_are_listed_and_nothing_is_written(
    demo_app: ApiServer,
) -> None:
    body = database("d1", namespace="default")
    body["spec"]["color"] = "red"
    body["spec"]["zone"] = "a"  # the same object as color: kube names only one of them
    body["metadata"]["colour"] = "blue"
    body["sops"] = {"mac": "x"}
    status, err = await apply(demo_app, body)
    assert status == 400
    assert err["message"] == PREFIX + (
        "errors:\n  .metadata.colour: field not declared in schema"
        "\n  .sops: field not declared in schema"
        "\n  .spec.color: field not declared in schema"
    )
    status, _, _ = await asgi_call(demo_app, "GET", f"{DB_PATH}/d1", "", headers={})
    assert status == 404
    # a declared configuration is applied
    status, obj = await apply(demo_app, database("d1", namespace="default"))
    assert status == 201, obj
