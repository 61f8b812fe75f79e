"""The CEL pass memo keyed by an object's JSON text (``rules._text_key``): a rule set that
passed on an object answers an identical object without evaluating, and never answers an
object CEL can tell apart (another type with the same Python value, another field order
or value), nor a value orjson would write ambiguously (floats: NaN is written ``null``)."""

from __future__ import annotations

from typing import Any

from kubewerk.schema import compile_schema
from kubewerk.schema.cel import rules

from .conftest import messages


def _schema(rule: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "x-kubernetes-validations": [{"rule": rule}],
            }
        },
    }


def test_text_keys_tell_types_and_values_apart() -> None:
    keys = [
        rules._text_key({"x": 1}),
        rules._text_key({"x": True}),
        rules._text_key({"x": "1"}),
        rules._text_key({"x": None}),
        rules._text_key({"x": 1, "y": 2}),
        rules._text_key({"y": 2, "x": 1}),
    ]
    assert None not in keys
    assert len(set(keys)) == len(keys)


def test_values_without_a_text_key() -> None:
    assert rules._text_key({"x": 1.5}) is None  # floats: NaN and infinities are written null
    assert rules._text_key({"x": float("nan")}) is None
    assert rules._text_key({"x": {"y": 1}}) is None  # containers: left to _memo_key
    assert rules._text_key({"x": [1]}) is None
    assert rules._text_key({"x": 2**64}) is None  # orjson refuses it
    assert rules._text_key({"x": "\ud800"}) is None  # a lone surrogate
    assert rules._text_key({1: "x"}) is None  # type: ignore[dict-item]
    assert rules._text_key({"x": "a" * (rules._TEXT_KEY_MAX + 1)}) is None
    assert rules._text_key({"x": True, "y": None, "z": "s", "n": -(2**63)}) is not None


def test_a_passed_object_does_not_answer_one_cel_tells_apart() -> None:
    cs = compile_schema(_schema("type(self.x) == int"))
    assert cs.validate({"spec": {"x": 1}}) == []
    assert cs.validate({"spec": {"x": 1}}) == []  # answered by the memo
    assert messages(cs.validate({"spec": {"x": True}})) == [
        'spec: Invalid value: "object": failed rule: type(self.x) == int'
    ]
    assert messages(cs.validate({"spec": {"x": "1"}})) == [
        'spec: Invalid value: "object": failed rule: type(self.x) == int'
    ]


def test_a_failed_object_is_evaluated_again() -> None:
    cs = compile_schema(_schema("self.n < 3"))
    for _ in range(3):
        assert messages(cs.validate({"spec": {"n": 5, "s": "a"}})) == [
            'spec: Invalid value: "object": failed rule: self.n < 3'
        ]
    assert cs.validate({"spec": {"n": 1, "s": "a"}}) == []
    assert messages(cs.validate({"spec": {"n": 5, "s": "a"}})) == [
        'spec: Invalid value: "object": failed rule: self.n < 3'
    ]
