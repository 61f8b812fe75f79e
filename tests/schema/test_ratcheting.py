"""CRD validation ratcheting (KEP-4008, CRDValidationRatcheting, GA in 1.33).

Cases follow the apiserver's behaviour: ``apiextensions-apiserver/pkg/apiserver/validation
/ratcheting.go`` (+ its tests), ``apiserver/pkg/cel/common/equality.go``
(``CorrelatedObject``) and ``apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go``.
"""

from __future__ import annotations

import copy
from typing import Any

from kubewerk.schema import compile_schema

from .conftest import messages


def _schema(spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    props = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": spec,
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    }
    return {"type": "object", "properties": props, **extra}


def _obj(spec: Any, status: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    }
    if status is not None:
        out["status"] = status
    return out


SCALARS = _schema(
    {
        "type": "object",
        "properties": {
            "small": {"type": "integer", "maximum": 50},
            "name": {"type": "string", "pattern": "^[a-z]+$"},
        },
    }
)


def test_create_is_not_ratcheted() -> None:
    cs = compile_schema(SCALARS)
    assert messages(cs.validate(_obj({"small": 500}))) == [
        "spec.small: Invalid value: 500: spec.small in body should be less than or equal to 50"
    ]


def test_unchanged_invalid_field_is_accepted() -> None:
    cs = compile_schema(SCALARS)
    old = _obj({"small": 500, "name": "ok"})
    new = _obj({"small": 500, "name": "fine"})  # a sibling changed, small did not
    assert cs.validate(new, old) == []
    # a /status write leaves spec unchanged
    assert cs.validate(_obj({"small": 500}, {"phase": "Ready"}), _obj({"small": 500})) == []


def test_changed_invalid_field_is_rejected_with_the_usual_message() -> None:
    cs = compile_schema(SCALARS)
    errs = cs.validate(_obj({"small": 501}), _obj({"small": 500}))
    assert messages(errs) == [
        "spec.small: Invalid value: 501: spec.small in body should be less than or equal to 50"
    ]
    # newly added invalid field: no old value to correlate with
    errs = cs.validate(_obj({"small": 1, "name": "X"}), _obj({"small": 1}))
    assert messages(errs) == [
        "spec.name: Invalid value: \"X\": spec.name in body should match '^[a-z]+$'"
    ]


def test_go_deep_equal_types() -> None:
    # reflect.DeepEqual on decoded JSON: int64 500 and float64 500 differ
    cs = compile_schema(SCALARS)
    assert len(cs.validate(_obj({"small": 500.0}), _obj({"small": 500}))) == 1


def test_nested_objects_from_upstream_tests() -> None:
    # TestObjectObjectFieldsRatcheting
    schema = _schema(
        {
            "type": "object",
            "properties": {
                "nested": {
                    "type": "object",
                    "properties": {
                        "small": {"type": "number", "maximum": 50},
                        "medium": {"type": "number", "minimum": 50, "maximum": 10000},
                    },
                }
            },
        }
    )
    cs = compile_schema(schema)
    assert cs.validate(_obj({"nested": {"small": 500}}), _obj({"nested": {"small": 500}})) == []
    assert (
        cs.validate(
            _obj({"nested": {"small": 501}}), _obj({"nested": {"small": 501, "medium": 500}})
        )
        == []
    )
    assert len(cs.validate(_obj({"nested": {"small": 500}}), _obj({"nested": {"small": 501}}))) == 1


def test_required_ratchets_with_its_object() -> None:
    # `required` is reported by the object's validator: dropped only while that object
    # is unchanged, reported as soon as anything else in it changes
    schema = _schema(
        {
            "type": "object",
            "required": ["mode"],
            "properties": {"mode": {"type": "string"}, "size": {"type": "integer"}},
        }
    )
    cs = compile_schema(schema)
    old = _obj({"size": 1})
    assert cs.validate(_obj({"size": 1}, {"phase": "x"}), old) == []
    assert messages(cs.validate(_obj({"size": 2}), old)) == ["spec.mode: Required value"]


def test_map_values_correlate_by_key() -> None:
    schema = _schema(
        {
            "type": "object",
            "additionalProperties": {"type": "string", "maxLength": 3},
        }
    )
    cs = compile_schema(schema)
    old = _obj({"a": "toolong", "b": "ok"})
    assert cs.validate(_obj({"a": "toolong", "b": "new"}), old) == []
    assert messages(cs.validate(_obj({"a": "toolong", "c": "toolong"}), old)) == [
        "spec.c: Too long: may not be more than 3 bytes"
    ]


MAP_LIST = _schema(
    {
        "type": "object",
        "properties": {
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "port": {"type": "integer", "maximum": 1024},
                    },
                },
            }
        },
    }
)


def test_map_list_items_correlate_by_key() -> None:
    cs = compile_schema(MAP_LIST)
    old = _obj({"ports": [{"name": "a", "port": 8080}, {"name": "b", "port": 80}]})
    # reordered, and item b changed validly: item a is unchanged, by key
    new = _obj({"ports": [{"name": "b", "port": 81}, {"name": "a", "port": 8080}]})
    assert cs.validate(new, old) == []
    # item a changed
    new = _obj({"ports": [{"name": "a", "port": 8081}, {"name": "b", "port": 80}]})
    assert messages(cs.validate(new, old)) == [
        "spec.ports[0].port: Invalid value: 8081: spec.ports[0].port in body should be less "
        "than or equal to 1024"
    ]
    # a new key with the old invalid value is not correlated
    new = _obj({"ports": [{"name": "c", "port": 8080}, {"name": "b", "port": 80}]})
    assert len(cs.validate(new, old)) == 1


def _list_schema(list_type: str | None) -> dict[str, Any]:
    lst: dict[str, Any] = {"type": "array", "items": {"type": "string", "maxLength": 3}}
    if list_type is not None:
        lst["x-kubernetes-list-type"] = list_type
    return _schema({"type": "object", "properties": {"tags": lst, "n": {"type": "integer"}}})


def test_atomic_and_set_lists_are_not_correlated_by_item() -> None:
    for list_type in ("atomic", "set"):
        cs = compile_schema(_list_schema(list_type))
        old = _obj({"tags": ["toolong", "ok"], "n": 1})
        # the whole list unchanged: ratcheted as a unit
        assert cs.validate(_obj({"tags": ["toolong", "ok"], "n": 2}), old) == [], list_type
        # another item changed: the unchanged invalid item is reported again
        assert messages(cs.validate(_obj({"tags": ["toolong", "ok2"]}), old)) == [
            "spec.tags[0]: Too long: may not be more than 3 bytes"
        ], list_type


def test_list_without_list_type_correlates_by_index() -> None:
    # CorrelatedObject correlates lists without x-kubernetes-list-type by index
    cs = compile_schema(_list_schema(None))
    old = _obj({"tags": ["toolong", "ok"]})
    assert cs.validate(_obj({"tags": ["toolong", "ok2"]}), old) == []
    assert len(cs.validate(_obj({"tags": ["ok2", "toolong"]}), old)) == 1


def test_unknown_fields_make_an_object_changed() -> None:
    # CorrelatedObject.Key has no schema for an undeclared field: never equal
    schema = _schema(
        {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "required": ["mode"],
            "properties": {"mode": {"type": "string"}},
        }
    )
    cs = compile_schema(schema)
    old = _obj({"extra": 1})
    assert messages(cs.validate(copy.deepcopy(old), old)) == ["spec.mode: Required value"]


def test_list_set_and_map_uniqueness_ratchets_on_the_old_object() -> None:
    cs = compile_schema(MAP_LIST)
    dup = _obj({"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]})
    fine = _obj({"ports": [{"name": "a", "port": 1}]})
    assert cs.validate(copy.deepcopy(dup), dup) == []
    assert messages(cs.validate(dup, fine)) == ['spec.ports[1]: Duplicate value: {"name":"a"}']


CEL = _schema(
    {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.max >= oldSelf.max", "message": "max may only grow"},
        ],
        "properties": {
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "items": {
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self != 'bad'"}],
                },
            },
        },
    }
)


def test_cel_rule_on_unchanged_node_is_skipped() -> None:
    cs = compile_schema(CEL)
    old = _obj({"min": 5, "max": 1})
    assert cs.validate(_obj({"min": 5, "max": 1}, {"phase": "Ready"}), old) == []
    assert messages(cs.validate(_obj({"min": 6, "max": 1}), old)) == [
        'spec: Invalid value: "object": min must not exceed max'
    ]
    # create: not ratcheted
    assert messages(cs.validate(old)) == ['spec: Invalid value: "object": min must not exceed max']


def test_cel_transition_rule_always_runs() -> None:
    cs = compile_schema(CEL)
    old = _obj({"min": 0, "max": 5})
    assert messages(cs.validate(_obj({"min": 0, "max": 4}), old)) == [
        'spec: Invalid value: "object": max may only grow'
    ]


def test_cel_uncorrelated_items_ratchet_with_nearest_correlated_ancestor() -> None:
    cs = compile_schema(CEL)
    old = _obj({"min": 0, "max": 1, "items": ["bad", "ok"]})
    # the atomic list is unchanged: its items' failures are dropped
    assert cs.validate(_obj({"min": 0, "max": 2, "items": ["bad", "ok"]}), old) == []
    # the list changed: every item is checked
    assert messages(cs.validate(_obj({"min": 0, "max": 1, "items": ["bad", "ok", "x"]}), old)) == [
        "spec.items[0]: Invalid value: \"string\": failed rule: self != 'bad'"
    ]


def test_cel_evaluation_errors_are_not_ratcheted() -> None:
    # validation.go appends evaluation errors directly; only failures are ratcheted
    schema = _schema(
        {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.a['x'] > 0"}],
            "properties": {"a": {"type": "object", "additionalProperties": {"type": "integer"}}},
        }
    )
    cs = compile_schema(schema)
    old = _obj({"a": {"y": 1}})
    assert messages(cs.validate(copy.deepcopy(old), old)) == [
        "spec: Invalid value: \"object\": no such key: x evaluating rule: self.a['x'] > 0"
    ]


def test_map_list_keys_are_typed_scalars() -> None:
    # CompositeKeyFor: keys compare by typed scalar value; several keys must all be set
    schema = _schema(
        {
            "type": "object",
            "properties": {
                "routes": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port", "proto"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "port": {"type": "number"},
                            "proto": {"type": "string"},
                            "note": {"type": "string", "maxLength": 3},
                        },
                    },
                }
            },
        }
    )
    cs = compile_schema(schema)
    old = _obj({"routes": [{"port": 80, "proto": "TCP", "note": "toolong"}]})
    same = _obj({"routes": [{"port": 80, "proto": "TCP", "note": "toolong"}], "x": 1})
    assert cs.validate(same, old) == []
    as_float = _obj({"routes": [{"port": 80.0, "proto": "TCP", "note": "toolong"}], "x": 1})
    assert messages(cs.validate(as_float, old)) == [
        "spec.routes[0].note: Too long: may not be more than 3 bytes"
    ]
