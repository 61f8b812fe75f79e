"""A CustomResourceDefinition is stored as kube-apiserver stores it: decoded into the
apiextensions v1 Go types (``types.go``, ``types_jsonschema.go``: zero-valued
``omitempty`` fields and unknown fields gone, pointer fields kept), converted through the
internal version (``conversion.go``: ``default``/``enum`` values through
``interface{}``), with ``SetObjectDefaults_CustomResourceDefinition`` and the strategy's
``PrepareForCreate``/``PrepareForUpdate`` (``registry/customresourcedefinition/
strategy.go``) applied — so ``kubectl get crd -o yaml`` after an apply shows what a cluster
shows, and the schema engine reads the same schema."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import CRD_PATH, asgi_call, json_call

GROUP = "form.test.io"
NAME = f"widgets.{GROUP}"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "",
    "nullable": False,
    "required": [],
    "properties": {
        "spec": {
            "type": "object",
            "title": "",
            "properties": {
                "size": {
                    "type": "integer",
                    "default": 1.0,
                    "minimum": 0,
                    "maximum": 10.0,
                    "exclusiveMaximum": False,
                    "enum": [1.0, 2, 3.5],
                },
                "tags": {
                    "type": "array",
                    "uniqueItems": False,
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string", "format": "", "bogus": 1, "pattern": ""},
                },
                "labels": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "description": "", "alien": True},
                },
                "note": {"type": "string", "maxLength": 0, "default": None, "example": None},
                "empty": {"type": "object", "properties": {}, "x-kubernetes-validations": []},
                "ruled": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "x-kubernetes-validations": [
                        {"rule": "true", "message": "", "messageExpression": "", "fieldPath": ""}
                    ],
                },
            },
        }
    },
}

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": NAME},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "preserveUnknownFields": False,
        "names": {"plural": "widgets", "kind": "Widget", "shortNames": [], "categories": []},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "deprecated": False,
                "schema": {"openAPIV3Schema": SCHEMA},
                "additionalPrinterColumns": [
                    {
                        "name": "Size",
                        "type": "integer",
                        "jsonPath": ".spec.size",
                        "priority": 0,
                        "format": "",
                        "description": "",
                    }
                ],
                "selectableFields": [],
            },
            {"name": "v2", "storage": False, "schema": {"openAPIV3Schema": SCHEMA}},
        ],
    },
}

STORED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {
                    "type": "integer",
                    "default": 1,
                    "minimum": 0,
                    "maximum": 10,
                    "enum": [1, 2, 3.5],
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "note": {"type": "string", "maxLength": 0},
                "empty": {"type": "object"},
                "ruled": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "x-kubernetes-validations": [{"rule": "true"}],
                },
            },
        }
    },
}


async def post(app: ApiServer, body: Any, query: str = "") -> tuple[int, dict[str, str], Any]:
    status, headers, payload = await asgi_call(
        app,
        "POST",
        CRD_PATH,
        query,
        headers={"content-type": "application/json"},
        body=orjson.dumps(body),
    )
    warnings = [v for k, v in headers if k == "warning"]
    return status, {"warnings": "\n".join(warnings)}, orjson.loads(payload)


@pytest.fixture
def app() -> ApiServer:
    return ApiServer(open_store("memory"))


async def test_a_crd_is_stored_without_zero_values_and_with_kubes_defaults(
    app: ApiServer,
) -> None:
    status, _, made = await post(app, CRD)
    assert status == 201, made
    status, stored = await json_call(app, "GET", f"{CRD_PATH}/{NAME}")
    assert status == 200
    spec = stored["spec"]
    assert spec["names"] == {
        "plural": "widgets",
        "singular": "widget",
        "kind": "Widget",
        "listKind": "WidgetList",
    }
    assert spec["conversion"] == {"strategy": "None"}
    assert "preserveUnknownFields" not in spec
    v1, v2 = spec["versions"]
    assert v1["schema"]["openAPIV3Schema"] == STORED_SCHEMA
    assert v2["schema"]["openAPIV3Schema"] == STORED_SCHEMA
    assert set(v1) == {"name", "served", "storage", "schema", "additionalPrinterColumns"}
    assert v1["additionalPrinterColumns"] == [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
    ]
    assert (v2["served"], v2["storage"]) == (False, False)  # not omitempty in Go
    # PrepareForCreate's status, as encoded: no conditions, the storage version stored
    assert made["status"] == {
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": ["v1"],
    }


async def test_numbers_are_written_as_go_writes_them(app: ApiServer) -> None:
    status, _, _ = await post(app, CRD)
    assert status == 201
    status, _, payload = await asgi_call(app, "GET", f"{CRD_PATH}/{NAME}", headers={})
    assert status == 200
    raw = payload.decode()
    assert '"default":1,' in raw and '"maximum":10,' in raw and '"enum":[1,2,3.5]' in raw


async def test_the_schema_engine_reads_the_stored_schema(app: ApiServer) -> None:
    status, _, _ = await post(app, CRD)
    assert status == 201
    for _ in range(500):
        if app.registry.get(GROUP, "widgets") is not None:
            break
        await asyncio.sleep(0.005)
    widget = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"tags": ["a"], "labels": {"x": "y"}},
    }
    status, made = await json_call(
        app, "POST", f"/apis/{GROUP}/v1/namespaces/default/widgets", widget
    )
    assert status == 201, made
    assert made["spec"] == {"size": 1, "tags": ["a"], "labels": {"x": "y"}}
    widget["metadata"]["name"] = "big"
    widget["spec"]["size"] = 11
    status, refused = await json_call(
        app, "POST", f"/apis/{GROUP}/v1/namespaces/default/widgets", widget
    )
    assert status == 422, refused


async def test_unknown_fields_are_dropped_and_reported_where_the_decoder_is_strict(
    app: ApiServer,
) -> None:
    crd = copy.deepcopy(CRD)
    crd["spec"]["colour"] = "red"
    crd["spec"]["versions"][0]["sorted"] = True
    status, headers, made = await post(app, crd)
    assert status == 201, made
    assert "colour" not in made["spec"] and "sorted" not in made["spec"]["versions"][0]
    # in document order; items' and additionalProperties' own UnmarshalJSON is not
    # strict: their unknown fields are dropped silently
    assert headers["warnings"].split("\n") == [
        '299 - "unknown field \\"spec.versions[0].sorted\\""',
        '299 - "unknown field \\"spec.colour\\""',
    ]
    crd["metadata"]["name"] = NAME
    status, _, refused = await post(app, crd, "fieldValidation=Strict")
    assert (status, refused["message"]) == (
        400,
        'strict decoding error: unknown field "spec.versions[0].sorted", '
        'unknown field "spec.colour"',
    )


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        pytest.param(
            lambda v: v.update(served="yes"),
            "json: cannot unmarshal string into Go struct field "
            "CustomResourceDefinitionVersion.spec.versions.served of type bool",
            id="version-served-string",
        ),
        pytest.param(
            lambda v: v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tags"][
                "items"
            ].update(type=1),
            "json: cannot unmarshal number into Go struct field "
            "JSONSchemaProps.type of type string",
            id="items-type-number",
        ),
        pytest.param(
            lambda v: v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
                "labels"
            ].update(additionalProperties="yes"),
            "boolean or JSON schema expected",
            id="additional-properties-string",
        ),
    ],
)
async def test_a_value_of_the_wrong_type_is_the_decoders_error(
    app: ApiServer, mutate: Any, message: str
) -> None:
    crd = copy.deepcopy(CRD)
    mutate(crd["spec"]["versions"][0])
    status, _, refused = await post(app, crd)
    assert (status, refused["message"]) == (
        400,
        'CustomResourceDefinition in version "v1" cannot be handled as a '
        f"CustomResourceDefinition: {message}",
    )


async def test_an_update_stores_the_new_storage_version_at_once(app: ApiServer) -> None:
    status, _, made = await post(app, CRD)
    assert status == 201
    made["spec"]["versions"][0]["storage"] = False
    made["spec"]["versions"][1].update(storage=True, served=True)
    made["spec"]["versions"][1]["description"] = "not a version field"
    status, updated = await json_call(app, "PUT", f"{CRD_PATH}/{NAME}", made)
    assert status == 200, updated
    assert updated["status"]["storedVersions"][-1] == "v2"
    assert "v1" in updated["status"]["storedVersions"]
    assert "description" not in updated["spec"]["versions"][1]
