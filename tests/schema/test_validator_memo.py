"""An object node of scalar settings remembers the JSON texts of the objects it accepted
(``_validator._remembered``): an identical object is accepted without checking, and
nothing else is: another type with the same Python value (``1``/``True``), another
value, a float (NaN is written ``null`` and must not pass for a null), a node whose
objects differ every time (it stops remembering) — the errors stay kube-openapi's."""

from __future__ import annotations

from typing import Any

from kubewerk.schema import compile_schema

from .conftest import messages

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"type": "integer", "minimum": 0},
                "b": {"type": "string", "maxLength": 3},
                "c": {"type": "boolean"},
                "d": {"type": "string", "enum": ["p", "q"]},
                "n": {"type": "number"},
            },
        }
    },
}
GOOD = {"a": 1, "b": "x", "c": True, "d": "p"}


def test_an_accepted_object_does_not_answer_another() -> None:
    cs = compile_schema(SCHEMA)
    for _ in range(3):
        assert cs.validate({"spec": dict(GOOD)}) == []
    assert messages(cs.validate({"spec": {**GOOD, "a": True}})) == [
        'spec.a: Invalid value: "boolean": spec.a in body must be of type integer: "boolean"'
    ]
    assert messages(cs.validate({"spec": {**GOOD, "b": "long"}})) == [
        "spec.b: Too long: may not be more than 3 bytes"
    ]
    assert messages(cs.validate({"spec": {**GOOD, "a": "1"}})) == [
        'spec.a: Invalid value: "string": spec.a in body must be of type integer: "string"'
    ]
    assert messages(cs.validate({"spec": {**GOOD, "d": "r"}})) == [
        'spec.d: Unsupported value: "r": supported values: "p", "q"'
    ]
    # the same keys in another order are another text: checked, and valid
    assert cs.validate({"spec": dict(reversed(list(GOOD.items())))}) == []


def test_a_float_is_never_taken_for_null() -> None:
    cs = compile_schema(SCHEMA)
    assert cs.validate({"spec": {**GOOD, "n": float("nan")}}) == []
    assert messages(cs.validate({"spec": {**GOOD, "n": None}})) == [
        'spec.n: Invalid value: "null": spec.n in body must be of type number: "null"'
    ]


def test_objects_that_differ_every_time_are_still_checked() -> None:
    cs = compile_schema(SCHEMA)
    for i in range(600):  # past the trial: the node stops remembering
        assert cs.validate({"spec": {**GOOD, "a": i}}) == []
    assert cs.validate({"spec": dict(GOOD)}) == []
    assert messages(cs.validate({"spec": {**GOOD, "a": -1}})) == [
        "spec.a: Invalid value: -1: spec.a in body should be greater than or equal to 0"
    ]
    assert messages(cs.validate({"spec": {"b": "x"}})) == ["spec.a: Required value"]
