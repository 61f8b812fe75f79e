"""The ``fieldsV1`` encoding and ``managedFields`` entries, byte for byte as Kubernetes
writes them (structured-merge-diff's serialize.go ordering; kube's entry order and
conflict messages)."""

from __future__ import annotations

import orjson
import pytest

from kubewerk.core.fieldpath import (
    APPLY,
    UPDATE,
    ApplyConflict,
    BadManagedFields,
    FieldSet,
    ManagedFields,
    Manager,
    apply,
    update,
)
from kubewerk.core.fieldpath.path import field, key_element, value_element
from kubewerk.core.fieldpath.types import list_of, map_of, scalar, struct

S = scalar()
POD_LIKE = struct(
    {
        "metadata": struct({"labels": map_of(S), "name": S}),
        "spec": struct(
            {
                "containers": list_of(
                    struct(
                        {
                            "name": S,
                            "image": S,
                            "ports": list_of(
                                struct({"containerPort": S, "protocol": S}),
                                "map",
                                ("containerPort", "protocol"),
                            ),
                        }
                    ),
                    "map",
                    ("name",),
                ),
                "finalizers": list_of(S, "set"),
            }
        ),
    }
)


def test_encoding_orders_fields_keys_values_and_marks_dot() -> None:
    s = FieldSet.of(
        (field("spec"), field("containers"), key_element([("name", "b")])),
        (field("spec"), field("containers"), key_element([("name", "b")]), field("image")),
        (field("spec"), field("containers"), key_element([("name", "a")])),
        (field("spec"), field("finalizers"), value_element("x")),
        (field("metadata"), field("labels"), field("z")),
        (field("metadata"), field("labels"), field("a")),
    )
    text = orjson.dumps(s.to_fields_v1()).decode()
    assert text == (
        '{"f:metadata":{"f:labels":{"f:a":{},"f:z":{}}},'
        '"f:spec":{"f:containers":{"k:{\\"name\\":\\"a\\"}":{},'
        '"k:{\\"name\\":\\"b\\"}":{".":{},"f:image":{}}},'
        '"f:finalizers":{"v:\\"x\\"":{}}}}'
    )
    assert FieldSet.from_fields_v1(orjson.loads(text)) == s


def test_multi_field_keys_sorted_and_numbers_as_go_writes_them() -> None:
    pe = key_element([("protocol", "TCP"), ("containerPort", 80)])
    s = FieldSet.of((field("ports"), pe))
    assert list(s.to_fields_v1()["f:ports"]) == ['k:{"containerPort":80,"protocol":"TCP"}']
    html = FieldSet.of((field("l"), value_element("<a&b>")))
    assert list(html.to_fields_v1()["f:l"]) == ['v:"\\u003ca\\u0026b\\u003e"']


def test_create_like_update_has_dot_entries_for_new_containers() -> None:
    obj = {
        "metadata": {"name": "p", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]},
    }
    managed = update(
        None, obj, POD_LIKE, ManagedFields(), Manager("kubectl", UPDATE, "v1"), "v1", "T"
    )
    entries = managed.encode()
    assert entries == [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "T",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    ".": {},
                    "f:containers": {
                        ".": {},
                        'k:{"name":"c"}': {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                ".": {},
                                'k:{"containerPort":80}': {".": {}, "f:containerPort": {}},
                            },
                        },
                    },
                },
            },
        }
    ]


def test_apply_entry_has_no_dot_for_structs_and_strips_metadata() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}}}
    new, managed = apply(
        {}, obj, POD_LIKE, ManagedFields(), Manager("kubectl", APPLY), "v1", "T", False
    )
    assert new == obj
    (entry,) = managed.encode()
    assert entry["operation"] == "Apply"
    assert entry["fieldsV1"] == {"f:metadata": {"f:labels": {"f:a": {}}}}


def test_entries_sorted_apply_first_then_time_then_manager() -> None:
    m = ManagedFields()
    one = FieldSet.of((field("a"),))
    from kubewerk.core.fieldpath import Owned

    m.owners[Manager("z", UPDATE, "v1")] = Owned(one, "v1", False, "2020-01-01T00:00:00Z")
    m.owners[Manager("b", UPDATE, "v1")] = Owned(one, "v1", False, "2021-01-01T00:00:00Z")
    m.owners[Manager("y", APPLY)] = Owned(one, "v1", True, "2022-01-01T00:00:00Z")
    m.owners[Manager("x", APPLY, "", "status")] = Owned(one, "v1", True, "2022-01-01T00:00:00Z")
    names = [(e["manager"], e.get("subresource")) for e in m.encode()]
    assert names == [("x", "status"), ("y", None), ("z", None), ("b", None)]
    back = ManagedFields.decode(m.encode())
    assert set(back.owners) == set(m.owners)


def test_conflict_messages_as_kube_writes_them() -> None:
    one = ApplyConflict(
        [
            (
                Manager("kubectl-client-side-apply", UPDATE, "apps/v1"),
                (field("spec"), field("replicas")),
            )
        ]
    )
    assert one.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
        "using apps/v1: .spec.replicas"
    )
    assert one.code == 409
    assert one.details["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
            "field": ".spec.replicas",
        }
    ]
    two = ApplyConflict(
        [
            (Manager("b", APPLY), (field("x"),)),
            (Manager("a", APPLY, "", "status"), (field("status"), field("y"))),
        ]
    )
    assert two.message == (
        'Apply failed with 2 conflicts: conflicts with "a" with subresource "status":\n'
        '- .status.y\nconflicts with "b":\n- .x'
    )


def test_bad_entries_are_refused() -> None:
    with pytest.raises(BadManagedFields):
        ManagedFields.decode(
            [{"manager": "a", "operation": "Update", "fieldsType": "FieldsV2", "fieldsV1": {}}]
        )
    with pytest.raises(BadManagedFields):
        ManagedFields.decode(
            [
                {
                    "manager": "a",
                    "operation": "Apply",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"x": {}},
                }
            ]
        )
    with pytest.raises(BadManagedFields):
        ManagedFields.decode(
            [{"manager": "a", "operation": "Apply"}, {"manager": "a", "operation": "Apply"}]
        )


def test_more_than_ten_updaters_are_capped_into_ancient_changes() -> None:
    managed = ManagedFields()
    obj: dict[str, object] = {}
    schema = map_of(S)
    for i in range(12):
        new = {**obj, f"k{i}": i}
        managed = update(
            obj,
            new,
            schema,
            managed,
            Manager(f"m{i:02d}", UPDATE, "v1"),
            "v1",
            f"2020-01-01T00:00:{i:02d}Z",
        )
        obj = new
    names = sorted(m.name for m in managed.owners)
    assert len(names) == 10
    assert "ancient-changes" in names
    assert "m00" not in names and "m01" not in names and "m02" not in names
