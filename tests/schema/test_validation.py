"""OpenAPI value validation: each keyword's exact Kubernetes message and cause type."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.core.gofmt import go_quote
from kubewerk.schema import compile_schema

from .conftest import messages


def _check(prop: dict[str, Any], value: Any) -> list[str]:
    cs = compile_schema(
        {"type": "object", "properties": {"spec": {"type": "object", "properties": {"f": prop}}}}
    )
    return messages(cs.validate({"spec": {"f": value}}))


@pytest.mark.parametrize(
    ("prop", "value", "expected"),
    [
        (
            {"type": "integer", "maximum": 100},
            200,
            "spec.f: Invalid value: 200: spec.f in body should be less than or equal to 100",
        ),
        (
            {"type": "integer", "maximum": 100, "exclusiveMaximum": True},
            100,
            "spec.f: Invalid value: 100: spec.f in body should be less than 100",
        ),
        (
            {"type": "integer", "minimum": 1},
            0,
            "spec.f: Invalid value: 0: spec.f in body should be greater than or equal to 1",
        ),
        (
            {"type": "integer", "minimum": 1, "exclusiveMinimum": True},
            1,
            "spec.f: Invalid value: 1: spec.f in body should be greater than 1",
        ),
        (
            {"type": "number", "maximum": 1000000},
            2e6,
            "spec.f: Invalid value: 2e+06: spec.f in body should be less than or equal to 1e+06",
        ),
        (
            {"type": "number", "maximum": 1.5},
            2.25,
            "spec.f: Invalid value: 2.25: spec.f in body should be less than or equal to 1.5",
        ),
        (
            {"type": "integer", "multipleOf": 5},
            7,
            "spec.f: Invalid value: 7: spec.f in body should be a multiple of 5",
        ),
        (
            {"type": "number", "multipleOf": 0.5},
            0.7,
            "spec.f: Invalid value: 0.7: spec.f in body should be a multiple of 0.5",
        ),
        (
            {"type": "string", "maxLength": 3},
            "abcd",
            "spec.f: Too long: may not be more than 3 bytes",
        ),
        ({"type": "string", "maxLength": 1}, "ab", "spec.f: Too long: may not be more than 1 byte"),
        (
            {"type": "string", "minLength": 3},
            "ab",
            'spec.f: Invalid value: "ab": spec.f in body should be at least 3 chars long',
        ),
        (
            {"type": "string", "pattern": "^[a-z]+$"},
            "A",
            "spec.f: Invalid value: \"A\": spec.f in body should match '^[a-z]+$'",
        ),
        (
            {"type": "string", "enum": ["a", "b"]},
            "x",
            'spec.f: Unsupported value: "x": supported values: "a", "b"',
        ),
        (
            {"type": "integer", "enum": [1, 2]},
            3,
            'spec.f: Unsupported value: 3: supported values: "1", "2"',
        ),
        (
            {"type": "string"},
            5,
            'spec.f: Invalid value: "integer": spec.f in body must be of type string: "integer"',
        ),
        (
            {"type": "integer"},
            "5",
            'spec.f: Invalid value: "string": spec.f in body must be of type integer: "string"',
        ),
        (
            {"type": "integer"},
            None,
            'spec.f: Invalid value: "null": spec.f in body must be of type integer: "null"',
        ),
        (
            {"type": "boolean"},
            "true",
            'spec.f: Invalid value: "string": spec.f in body must be of type boolean: "string"',
        ),
        (
            {"type": "object"},
            [],
            'spec.f: Invalid value: "array": spec.f in body must be of type object: "array"',
        ),
        (
            {"x-kubernetes-int-or-string": True},
            True,
            'spec.f: Invalid value: "boolean": spec.f in '
            'body must be of type integer,string: "boolean"',
        ),
        (
            {"type": "array", "maxItems": 1, "items": {"type": "integer"}},
            [1, 2],
            "spec.f: Too many: 2: must have at most 1 item",
        ),
        (
            {"type": "array", "minItems": 2, "items": {"type": "integer"}},
            [1],
            "spec.f: Invalid value: 1: spec.f in body should have at least 2 items",
        ),
        (
            {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
            {"a": "1", "b": "2"},
            "spec.f: Too many: 2: must have at most 1 item",
        ),
        (
            {"type": "object", "minProperties": 2, "additionalProperties": {"type": "string"}},
            {"a": "1"},
            "spec.f: Invalid value: 1: spec.f in body should have at least 2 properties",
        ),
        (
            {"type": "string", "format": "uuid"},
            "nope",
            'spec.f: Invalid value: "nope": spec.f in body must be of type uuid: "nope"',
        ),
        (
            {"type": "string", "format": "date-time"},
            "2024-13-01T00:00:00Z",
            'spec.f: Invalid value: "2024-13-01T00:00:00Z": spec.f in '
            'body must be of type date-time: "2024-13-01T00:00:00Z"',
        ),
        (
            {"type": "string", "format": "ipv4"},
            "1.2.3",
            'spec.f: Invalid value: "1.2.3": spec.f in body must be of type ipv4: "1.2.3"',
        ),
        (
            {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
            {},
            "spec.f.name: Required value",
        ),
        (
            {"type": "array", "items": {"type": "string", "maxLength": 2}},
            ["ok", "long"],
            "spec.f[1]: Too long: may not be more than 2 bytes",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            {"k": "v"},
            'spec.f.k: Invalid value: "string": spec.f.k in body must be of type integer: "string"',
        ),
    ],
)
def test_keyword_messages(prop: dict[str, Any], value: Any, expected: str) -> None:
    assert _check(prop, value) == [expected]


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        ({"type": "integer"}, 5.0),  # integral floats pass as integers
        ({"type": "number"}, 5),
        ({"type": "string", "nullable": True}, None),
        ({"type": "string", "format": "unknown-format"}, "anything"),
        ({"type": "string", "format": "int32"}, "not checked"),  # stripped: not a supported format
        ({"x-kubernetes-int-or-string": True}, "50%"),
        ({"type": "string", "format": "date"}, "2024-02-29"),
        ({"type": "string", "format": "cidr"}, "10.0.0.0/8"),
        ({"type": "string", "format": "byte"}, "aGVsbG8="),
        ({"type": "string", "format": "email"}, "a@example.com"),
        ({"type": "string", "format": "hostname"}, "example.com"),
        ({"type": "string", "pattern": "a+"}, "xaax"),  # unanchored like Go's MatchString
    ],
)
def test_accepted_values(prop: dict[str, Any], value: Any) -> None:
    assert _check(prop, value) == []


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ("^.$", "é", True),  # one code point, two bytes
        ("^é+$", "ééé", True),
        ("^é+$", "ée", False),
        ("^a", "a\ud800", True),  # text that is not valid UTF-8 is matched, not an error
        ("^a", "\ud800", False),
    ],
)
def test_pattern_matches_text(pattern: str, value: str, matches: bool) -> None:
    cs = compile_schema(
        {
            "type": "object",
            "properties": {"f": {"type": "string", "pattern": pattern}},
        }
    )
    detail = f"f in body should match '{pattern}'"
    expected = [] if matches else [f"f: Invalid value: {go_quote(value)}: {detail}"]
    # the detailed check, the fast-accept predicate and the remembered answer agree
    for _ in range(3):
        assert messages(cs.validate({"f": value})) == expected


def test_null_enum_and_nullable() -> None:
    assert _check({"type": "string", "nullable": True, "enum": ["a"]}, None) == [
        'spec.f: Unsupported value: null: supported values: "a"'
    ]


def test_junctors() -> None:
    cs = compile_schema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                    "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                    "not": {"required": ["c"]},
                }
            },
        }
    )
    assert messages(cs.validate({"spec": {}})) == [
        '<nil>: Invalid value: "": "spec" must validate '
        "one and only one schema (oneOf). Found none valid",
        "spec.a: Required value",
    ]
    assert messages(cs.validate({"spec": {"a": "x", "b": "y"}})) == [
        '<nil>: Invalid value: "": "spec" must validate one and '
        "only one schema (oneOf). Found 2 valid alternatives"
    ]
    assert messages(cs.validate({"spec": {"a": "x", "c": 1}})) == [
        '<nil>: Invalid value: "": "spec" must not validate the schema (not)'
    ]
    any_of = compile_schema(
        {
            "type": "object",
            "properties": {
                "v": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]}
            },
        }
    )
    assert messages(any_of.validate({"v": "c"})) == [
        '<nil>: Invalid value: "": "v" must validate at least one schema (anyOf)',
        "v: Invalid value: \"c\": v in body should match '^a'",
    ]


def test_list_set_and_map() -> None:
    cs = compile_schema(
        {
            "type": "object",
            "properties": {
                "s": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "m": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "proto"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "proto": {"type": "string"}},
                    },
                },
            },
        }
    )
    got = messages(
        cs.validate(
            {
                "s": ["a", "b", "a", "a"],
                "m": [
                    {"name": "x", "proto": "TCP"},
                    {"name": "x", "proto": "TCP"},
                    {"name": "x", "proto": "UDP"},
                ],
            }
        )
    )
    assert got == [
        's[2]: Duplicate value: "a"',
        'm[1]: Duplicate value: {"name":"x","proto":"TCP"}',
    ]


def test_embedded_resource() -> None:
    cs = compile_schema(
        {
            "type": "object",
            "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                }
            },
        }
    )
    assert messages(
        cs.validate({"template": {"kind": "pod_x", "metadata": {"name": "Bad_Name"}}})
    ) == [
        "template.apiVersion: Required value",
        'template.kind: Invalid value: "pod_x": may have mixed case, but should otherwise match: a '
        "DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
        "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        'template.metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must '
        "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ]


def test_big_int_is_a_float_like_go() -> None:
    # 2**70 reaches Go as an integral float64: the type check passes, the int64 range check does not
    assert _check({"type": "integer"}, 2**70) == [
        '<nil>: Invalid value: "": Checked value must '
        "be of type integer (default format) in spec.f",
    ]
    assert _check({"type": "integer"}, 1.5) == [
        'spec.f: Invalid value: "number": spec.f in body must be of type integer: "number"',
        '<nil>: Invalid value: "": Checked value must '
        "be of type integer (default format) in spec.f",
    ]
