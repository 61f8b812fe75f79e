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


async def apply_builtin(app: ApiServer, path: str, body: Any, query: str) -> tuple[int, Any]:
    status, _, payload = await asgi_call(
        app,
        "PATCH",
        f"{path}/{body['metadata']['name']}",
        query,
        headers={"content-type": "application/apply-patch+yaml"},
        body=orjson.dumps(body),
    )
    return status, orjson.loads(payload)


@pytest.mark.parametrize("validation", ["", "Ignore"])
async def test_a_built_in_kind_is_typed_by_its_kubernetes_definition(
    demo_app: ApiServer, validation: str
) -> None:
    """The messages real clusters give (a SOPS-encrypted Secret, a stray ConfigMap key, a
    field in the wrong place in a keyed list)."""
    query = "fieldManager=me" + (f"&fieldValidation={validation}" if validation else "")
    secrets = "/api/v1/namespaces/default/secrets"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "stringData": {"a": "b"},
        "sops": {"mac": "x"},
    }
    status, err = await apply_builtin(demo_app, secrets, secret, query)
    assert (status, err["message"]) == (
        400,
        "failed to create typed patch object (default/s; /v1, Kind=Secret): "
        ".sops: field not declared in schema",
    )
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    container = {"name": "web", "image": "nginx", "resources": {"cpu": "1"}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": "2",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [container]},
            },
        },
    }
    status, err = await apply_builtin(demo_app, deployments, deployment, query)
    assert (status, err["message"]) == (
        400,
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): errors:\n"
        "  .spec.replicas: expected numeric (int or float), got string\n"
        '  .spec.template.spec.containers[name="web"].resources.cpu: '
        "field not declared in schema",
    )
    # typed cleanly: applied
    deployment["spec"]["replicas"] = 2
    del container["resources"]
    status, obj = await apply_builtin(demo_app, deployments, deployment, query)
    assert status == 201, obj
