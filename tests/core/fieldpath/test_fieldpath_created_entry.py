"""A create's ownership entry, made in one walk straight to ``fieldsV1`` (``update`` with
no old object), is exactly what the general algorithm gives (``compare`` from nothing,
then the set's encoding): same keys, same order, same errors, on hostile objects — deep,
wide, keyed lists, sets, atomic maps and lists, duplicates, nulls, empty containers,
values whose shape the schema does not expect."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.core.fieldpath import (
    UPDATE,
    FieldSet,
    ListItemError,
    ManagedFields,
    Manager,
    OpenApiTypes,
    TypeNode,
    compare,
    update,
)
from kubewerk.core.fieldpath.managed import _STRIPPED
from kubewerk.core.fieldpath.path import field
from kubewerk.core.fieldpath.typed import entry_fields_v1, new_fields_v1

NOW = "2024-01-01T00:00:00Z"
ME = Manager("me", UPDATE, "v1")

ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "port": {"type": "integer"},
        "protocol": {"type": "string", "default": "TCP"},
        "inner": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["k"],
            "items": {"type": "object", "properties": {"k": {"type": "string"}}},
        },
    },
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "spec": {
            "type": "object",
            "properties": {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port", "protocol"],
                    "items": ITEM,
                },
                "byName": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": ITEM,
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "numbers": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "number"},
                },
                "args": {"type": "array", "items": {"type": "string"}},
                "atomic": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "properties": {"a": {"type": "string"}},
                },
                "free": {"x-kubernetes-preserve-unknown-fields": True},
                "map": {"type": "object", "additionalProperties": {"type": "integer"}},
                "nested": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "text": {"type": "string"},
                "count": {"type": "integer"},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def _deep(levels: int) -> dict[str, Any]:
    out: dict[str, Any] = {"leaf": [1, {"x": None}]}
    for i in range(levels):
        out = {f"l{i}": out, f"s{i}": i, "e": {}}
    return out


OBJECTS: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "T",
        "metadata": {
            "name": "n",
            "namespace": "ns",
            "uid": "u",
            "generateName": "g-",
            "resourceVersion": "3",
            "generation": 2,
            "creationTimestamp": NOW,
            "managedFields": [{"manager": "x"}],
            "labels": {"b": "2", "a": "1", "": "empty-key"},
            "annotations": {},
            "finalizers": ["f"],
        },
        "spec": {
            "ports": [
                {"port": 80},
                {"port": 80, "protocol": "UDP", "name": "dns"},
                {"port": 8080, "inner": [{"k": "z"}, {"k": "a"}], "name": "web"},
            ],
            "byName": [{"name": "b"}, {"name": "a", "inner": []}],
            "tags": ["z", "a", "m", "a"],
            "numbers": [3, 1.5, -2, 1],
            "args": ["x", {"not": "a string"}],
            "atomic": {"a": "1", "b": {"deep": True}},
            "free": _deep(12),
            "map": {"k": 1, "j": None, "i": {}},
            "nested": {"o": {"p": ["a", "b"], "q": []}, "r": {}},
            "text": "t",
            "count": 0,
        },
        "status": {"ready": True, "conditions": [{"type": "A"}]},
    },
    # wide: many fields at one level, keys that sort unlike their insertion order
    {"spec": {"free": {f"k{i:03d}"[::-1]: i for i in range(300)}, "map": {"b": 1, "a": 2}}},
    # duplicates: a set's repeated value and a keyed list's repeated key are one leaf each
    {"spec": {"tags": ["a", "a", "b", "a"], "ports": [{"port": 1}, {"port": 1}, {"port": 2}]}},
    # shapes the schema does not expect are leaves, and so are empty containers and nulls
    {"metadata": "odd", "spec": {"ports": {"not": "a list"}, "tags": [], "atomic": []}},
    {"metadata": {"labels": None}, "spec": {"text": {"a": 1}, "count": [1, 2], "free": None}},
    {"metadata": {}, "spec": {}, "status": {}},
    {"spec": {"byName": [{"name": "x", "port": True}], "numbers": [True, False, 0]}},
    {"kind": "OnlyKind", "spec": None},
    {"spec": {"free": {"": {"": [{"": ""}]}}}},
    # maps of leaves only (one shared entry per key tuple), in other key orders, with
    # odd keys and empty containers, also as keyed list items and inside free-form maps
    {
        "metadata": {"labels": {"a": "1", "b": "2", "": "empty-key"}},
        "spec": {
            "map": {"a": 2, "b": 1},
            "ports": [{"port": 1, "name": "a"}, {"name": "b", "port": 2, "protocol": "UDP"}],
            "free": {"x": {"\u00e9": 1, "a b": None, "": "", "e": [], "d": {}}, "y": {"e": []}},
        },
        "status": {"\u00e9": 1, "a b": None, "": "", "e": [], "d": {}, "f:x": "fake prefix"},
    },
    {},
]


def _node() -> TypeNode:
    return OpenApiTypes().node(SCHEMA)


def _reference(obj: dict[str, Any], node: TypeNode, ignored: FieldSet) -> dict[str, Any]:
    added = compare({}, obj, node).added
    return added.recursive_difference(ignored).difference(_STRIPPED).to_fields_v1()


def _keys(v1: dict[str, Any], prefix: str = "") -> Any:
    for key, sub in v1.items():
        yield prefix + key
        yield from _keys(sub, prefix + key + "/")


@pytest.mark.parametrize("index", range(len(OBJECTS)))
@pytest.mark.parametrize("ignore", ["", "status", "spec"])
def test_created_entry_is_the_general_algorithms(index: int, ignore: str) -> None:
    node = _node()
    obj = OBJECTS[index]
    ignored = FieldSet.of((field(ignore),)) if ignore else FieldSet()
    out = update(None, obj, node, ManagedFields(), ME, "v1", NOW, ignored)
    expected = _reference(obj, node, ignored)
    got = out.owners[ME].encoded() if ME in out.owners else {}
    assert got == expected
    assert list(_keys(got)) == list(_keys(expected))  # the same order, at every level
    if ME in out.owners:
        assert out.owners[ME].fields == FieldSet.from_fields_v1(expected)
        assert out.owners[ME].time == NOW


def test_the_table_reaches_every_kind_of_entry() -> None:
    """Not vacuous: keyed items, set values, leaves and containers all appear."""
    got = update(None, OBJECTS[0], _node(), ManagedFields(), ME, "v1", NOW).owners[ME].encoded()
    text = repr(got)
    for part in ('k:{"port":80,"protocol":"TCP"}', 'v:"a"', "v:1.5", "f:l11", "f:atomic"):
        assert part in text
    assert "f:uid" not in text and "f:status" in text


@pytest.mark.parametrize(
    "spec",
    [
        {"byName": [{"port": 1}]},
        {"ports": [None]},
        {"ports": ["scalar"]},
        {"tags": [{"a": 1}]},
        {"tags": [["nested"]]},
        {"tags": ["ok", None]},
        {"byName": [{"name": "a", "inner": [{"notk": 1}]}]},
    ],
)
def test_unidentifiable_items_fail_as_the_general_algorithm_does(spec: dict[str, Any]) -> None:
    node = _node()
    obj = {"spec": spec}
    with pytest.raises(ListItemError) as reference:
        compare({}, obj, node)
    with pytest.raises(ListItemError) as fast:
        update(None, obj, node, ManagedFields(), ME, "v1", NOW)
    assert str(fast.value) == str(reference.value)
    with pytest.raises(ListItemError) as walked:
        new_fields_v1(obj, node)
    assert str(walked.value) == str(reference.value)


@pytest.mark.parametrize("index", range(len(OBJECTS)))
def test_new_fields_v1_is_the_comparison_from_nothing(index: int) -> None:
    node = _node()
    obj = OBJECTS[index]
    expected = compare({}, obj, node).added.to_fields_v1()
    # the whole object's own path is not in the walk's answer
    got = new_fields_v1(obj, node)
    assert got == expected and list(_keys(got)) == list(_keys(expected))


def test_a_map_of_leaves_has_one_entry_per_key_tuple() -> None:
    """Maps whose values are all leaves share one entry (equal to the walked one); a map
    with a non-empty container among its values is walked."""
    node = _node().member("spec").member("free")
    first = entry_fields_v1({"b": 1, "a": "x", "c": {}}, node, (field("free"),))
    again = entry_fields_v1({"b": 2, "a": None, "c": []}, node, (field("free"),))
    assert again is first
    assert list(first) == [".", "f:a", "f:b", "f:c"]
    other_order = entry_fields_v1({"a": 1, "c": 3, "b": 2}, node, (field("free"),))
    assert other_order == first and list(other_order) == list(first)
    nested = entry_fields_v1({"b": 1, "a": {"z": 1}}, node, (field("free"),))
    assert nested == {".": {}, "f:a": {".": {}, "f:z": {}}, "f:b": {}}
