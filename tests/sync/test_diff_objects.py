"""diff_objects under shapes: list types, by-value scalars, nulls; patches apply."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.core.patch import json_patch
from kubewerk.sync import ANY, diff_objects, same_value, strip_server_fields
from kubewerk.sync.shapes import ShapeReader

from .conftest import widget_schema

SCHEMA: dict[str, Any] = widget_schema()
SCHEMA["properties"]["spec"]["properties"].update(
    {
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "protocol": {"type": "string"},
                    "port": {"type": "integer"},
                },
            },
        },
        "name": {"type": "string"},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }
)
SHAPE = ShapeReader().shape(SCHEMA)


def obj(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x.dev/v1", "kind": "W", "metadata": {"name": "w"}, "spec": spec}


P = [{"name": "a", "protocol": "TCP", "port": 1}, {"name": "b", "protocol": "UDP", "port": 2}]

CASES = [
    ("set reordered", obj(tags=["a", "b"]), obj(tags=["b", "a"]), True),
    ("set member changed", obj(tags=["a", "b"]), obj(tags=["a", "c"]), False),
    ("atomic list reordered", obj(order=["a", "b"]), obj(order=["b", "a"]), False),
    ("map-list reordered", obj(ports=P), obj(ports=P[::-1]), True),
    ("map-list item changed", obj(ports=P), obj(ports=[P[0], {**P[1], "port": 3}]), False),
    ("map-list item added", obj(ports=P[:1]), obj(ports=P), False),
    ("same key other protocol", obj(ports=P[:1]), obj(ports=[{**P[0], "protocol": "UDP"}]), False),
    ("quantity 1Gi = 1024Mi", obj(memory="1Gi"), obj(memory="1024Mi"), True),
    ("quantity 1Gi != 1G", obj(memory="1Gi"), obj(memory="1G"), False),
    ("int-or-string 2 = '2'", obj(memory=2), obj(memory="2"), True),
    ("plain string not by value", obj(name="1Gi"), obj(name="1024Mi"), False),
    ("1 = 1.0", obj(replicas=1), obj(replicas=1.0), True),
    ("true != 1 in free-form", obj(free={"x": True}), obj(free={"x": 1}), False),
    ("null is absent", obj(replicas=None), obj(), True),
    ("free-form list ordered", obj(free={"l": [1, 2]}), obj(free={"l": [2, 1]}), False),
]


@pytest.mark.parametrize(("name", "a", "b", "equal"), CASES, ids=[c[0] for c in CASES])
def test_case(name: str, a: dict[str, Any], b: dict[str, Any], equal: bool) -> None:
    d = diff_objects(a, b, SHAPE)
    assert (d.status == "equal") is equal, d.patch
    # the patch turns a into something semantically equal to b
    patched = json_patch(a, d.patch)
    assert same_value(patched, b, SHAPE)
    assert diff_objects(b, a, SHAPE).status == d.status


def test_patch_on_keyed_list_with_removals_and_changes() -> None:
    a = obj(ports=[*P, {"name": "c", "protocol": "TCP", "port": 9}], tags=["x", "y", "z"])
    b = obj(
        ports=[{**P[1], "port": 7}, {"name": "d", "protocol": "TCP", "port": 4}], tags=["z", "w"]
    )
    d = diff_objects(a, b, SHAPE)
    assert same_value(json_patch(a, d.patch), b, SHAPE)
    assert not same_value(a, b, SHAPE)


def test_without_shape_lists_are_ordered() -> None:
    assert diff_objects(obj(tags=["a", "b"]), obj(tags=["b", "a"]), ANY).status == "changed"


def test_strip_server_fields() -> None:
    live = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "namespace": "default",
            "uid": "u",
            "resourceVersion": "5",
            "generation": 1,
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "managedFields": [{"manager": "m"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        },
        "data": {"a": "1"},
        "status": {"x": 1},
    }
    assert strip_server_fields(live) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
        "data": {"a": "1"},
    }
    assert strip_server_fields(live, keep_status=True)["status"] == {"x": 1}
    assert live["metadata"]["uid"] == "u"  # input untouched
