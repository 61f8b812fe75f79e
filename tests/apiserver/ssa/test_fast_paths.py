"""The cheap paths of ownership tracking give exactly what the general algorithm gives:
a create's entry made in one walk, comparisons that skip unchanged subtrees, and
entries decoded lazily and reused."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubewerk.core.fieldpath import (
    UPDATE,
    FieldSet,
    ManagedFields,
    Manager,
    OpenApiTypes,
    TypeNode,
    compare,
    update,
)
from kubewerk.core.fieldpath import typed as typed_mod
from kubewerk.core.fieldpath.managed import _STRIPPED
from kubewerk.core.fieldpath.path import field

NOW = "2024-01-01T00:00:00Z"
ME = Manager("me", UPDATE, "v1")

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
                    "items": {
                        "type": "object",
                        "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                            "name": {"type": "string"},
                        },
                    },
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "args": {"type": "array", "items": {"type": "string"}},
                "atomic": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "properties": {"a": {"type": "string"}},
                },
                "free": {"x-kubernetes-preserve-unknown-fields": True},
                "empty": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}

OBJECTS: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "T",
        "metadata": {
            "name": "a",
            "uid": "u",
            "resourceVersion": "1",
            "labels": {"x": "1", "y": "2"},
            "annotations": {},
        },
        "spec": {
            "ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "name": "dns"}],
            "tags": ["b", "a", "c"],
            "args": ["x", "y"],
            "atomic": {"a": "1"},
            "free": {"n": {"deep": [1, {"k": True}]}, "z": None},
            "empty": {},
        },
        "status": {"ready": True},
    },
    # duplicates: a set's repeated value and a keyed list's repeated key are one leaf
    {"metadata": {"name": "d"}, "spec": {"tags": ["a", "a", "b"], "ports": [{"port": 1}] * 2}},
    # shapes the schema does not expect are leaves
    {"metadata": "odd", "spec": {"ports": {"not": "a list"}, "tags": [], "free": []}},
    {"kind": "OnlyKind", "spec": None},
    {},
]


def _node() -> TypeNode:
    return OpenApiTypes().node(SCHEMA)


def _reference_created(obj: dict[str, Any], node: TypeNode, ignored: FieldSet) -> dict[str, Any]:
    added = compare({}, obj, node).added
    return added.recursive_difference(ignored).difference(_STRIPPED).to_fields_v1()


@pytest.mark.parametrize("index", range(len(OBJECTS)))
@pytest.mark.parametrize("ignore_status", [False, True])
def test_created_entry_is_the_general_algorithms(index: int, ignore_status: bool) -> None:
    node = _node()
    obj = OBJECTS[index]
    ignored = FieldSet.of((field("status"),)) if ignore_status else FieldSet()
    out = update(None, obj, node, ManagedFields(), ME, "v1", NOW, ignored)
    expected = _reference_created(obj, node, ignored)
    got = out.owners[ME].encoded() if ME in out.owners else {}
    assert got == expected
    assert list(_keys(got)) == list(_keys(expected))  # the same key order, recursively
    if ME in out.owners:
        # the lazily decoded set is the one the encoding describes
        assert out.owners[ME].fields == FieldSet.from_fields_v1(expected)


def _keys(v1: dict[str, Any], prefix: str = "") -> Any:
    for key, sub in v1.items():
        yield prefix + key
        yield from _keys(sub, prefix + key + "/")


def _changes() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    base = OBJECTS[0]
    out = []
    for path, value in [
        (("spec", "args"), ["x", "z"]),
        (("spec", "ports"), [{"port": 80, "name": "web"}]),
        (("spec", "free", "n", "deep"), [1, {"k": 1}]),  # true -> 1 is a change
        (("spec", "free", "n"), {"deep": [1.0, {"k": True}]}),  # 1 -> 1.0 is not
        (("metadata", "labels", "x"), "3"),
        (("spec", "tags"), ["c", "a", "b"]),
    ]:
        new = copy.deepcopy(base)
        target = new
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        out.append((base, new))
    return out


@pytest.mark.parametrize("case", range(6))
def test_compare_skipping_unchanged_subtrees_is_exact(
    case: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _changes()[case]
    node = _node()
    fast = compare(old, copy.deepcopy(new), node)
    monkeypatch.setattr(typed_mod, "_same", lambda a, b: False)
    slow = compare(copy.deepcopy(old), copy.deepcopy(new), node)
    assert (fast.added, fast.modified, fast.removed) == (slow.added, slow.modified, slow.removed)


def test_true_for_one_is_a_change_inside_an_equal_looking_container() -> None:
    node = _node()
    old = {"spec": {"free": {"n": [1, 2]}}}
    new = {"spec": {"free": {"n": [True, 2]}}}
    assert old == new  # Python's equality cannot tell them apart
    assert compare(old, new, node).modified == FieldSet.of(
        (field("spec"), field("free"), field("n"))
    )


def test_updates_keep_the_entry_while_its_fields_do_not_change() -> None:
    node = _node()
    created = update(None, OBJECTS[0], node, ManagedFields(), ME, "v1", NOW)
    entries = created.encode()
    stored = ManagedFields.decode(entries, stored=True)
    new = copy.deepcopy(OBJECTS[0])
    new["spec"]["args"] = ["changed"]
    after = update(OBJECTS[0], new, node, stored, ME, "v1", "2024-01-02T00:00:00Z")
    again = after.encode()
    assert again[0]["fieldsV1"] is entries[0]["fieldsV1"]  # reused, not written again
    assert again[0]["time"] == "2024-01-02T00:00:00Z"
    # and it is what decoding everything afresh gives
    fresh = update(
        OBJECTS[0], new, node, ManagedFields.decode(entries), ME, "v1", "2024-01-02T00:00:00Z"
    )
    assert fresh.encode() == again
    # another manager's write takes the changed field from us
    other = Manager("other", UPDATE, "v1")
    newer = copy.deepcopy(new)
    newer["spec"]["args"] = ["again"]
    taken = update(new, newer, node, after, other, "v1", NOW)
    assert not taken.owners[ME].fields.has((field("spec"), field("args")))
    assert taken.owners[other].fields == FieldSet.of((field("spec"), field("args")))
