"""Malformed schemas and hostile objects: no crash, no hang, a clear error."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubewerk.schema import SchemaError, compile_schema, validate_crd

from .conftest import messages


def _nested(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    cur = root
    for _ in range(depth):
        nxt: dict[str, Any] = {}
        cur["x"] = nxt
        cur = nxt
    return root


def _nested_schema(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {"type": "object"}
    cur = root
    for _ in range(depth):
        nxt: dict[str, Any] = {"type": "object"}
        cur["properties"] = {"x": nxt}
        cur = nxt
    return root


def test_deep_objects() -> None:
    cs = compile_schema(
        {
            "type": "object",
            "properties": {
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "x-kubernetes-validations": [{"rule": "has(self.x)"}],
                },
                "loose": {"type": "object", "additionalProperties": True},
            },
        }
    )
    deep = _nested(1000)  # deeper than any JSON decoder in the stack accepts
    start = time.perf_counter()
    assert cs.validate({"free": deep}) == []
    obj = {"loose": {"a": _nested(1000)}}
    assert cs.prune(obj) == ["loose.a.x"]
    assert time.perf_counter() - start < 5


def test_deep_schema_is_refused_or_handled() -> None:
    try:
        cs = compile_schema(_nested_schema(2000))
    except SchemaError as err:
        assert err.errors[0].detail == "schema is nested too deeply"
    else:
        assert cs.validate(_nested(10)) == []
    cs = compile_schema(_nested_schema(150))
    assert cs.validate(_nested(150)) == []
    assert messages(cs.validate({"x": {"x": 5}})) == [
        'x.x: Invalid value: "integer": x.x in body must be of type object: "integer"'
    ]


def test_huge_strings_and_catastrophic_patterns() -> None:
    cs = compile_schema(
        {
            "type": "object",
            "properties": {
                "p": {"type": "string", "pattern": "^(a+)+$"},
                "q": {"type": "string", "pattern": "^(a|aa)*c$"},
                "m": {"type": "string", "maxLength": 10},
                "e": {"type": "string", "format": "email"},
                "h": {"type": "string", "format": "hostname"},
                "d": {"type": "string", "format": "duration"},
                "r": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self.matches('^(a+)+$')"},
                        {"rule": "self.findAll('a').size() > 0"},
                    ],
                },
            },
        }
    )
    evil = "a" * 200_000 + "b"
    start = time.perf_counter()
    errs = messages(
        cs.validate(
            {"p": evil, "q": evil, "m": "x" * 10_000_000, "e": evil, "h": evil, "d": "1" * 100_000}
        )
    )
    errs += messages(cs.validate({"r": evil}))  # alone: the TooLong above blocks CEL rules
    elapsed = time.perf_counter() - start
    assert elapsed < 10, elapsed
    assert "m: Too long: may not be more than 10 bytes" in errs
    assert any(
        e.startswith("p: Invalid value: ") and e.endswith("p in body should match '^(a+)+$'")
        for e in errs
    )
    assert any(
        e == "r: Invalid value: \"string\": failed rule: self.matches('^(a+)+$')" for e in errs
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": "not-a-map"},
        {"type": "object", "properties": {"a": "not-a-schema"}},
        {"type": 5, "items": [1, 2], "required": "x", "maximum": "big", "pattern": "("},
        {"type": "array"},
        {"type": "object", "x-kubernetes-validations": "nope"},
        {"type": "object", "x-kubernetes-validations": [{"rule": 5}]},
    ],
)
def test_malformed_schemas_never_crash(schema: dict[str, Any]) -> None:
    try:
        cs = compile_schema(schema)
    except SchemaError as err:
        assert err.errors
        return
    for obj in ({}, {"a": 1}, [], None, "x", {"a": {"b": [1, {"c": None}]}}):
        cs.validate(obj)
        if isinstance(obj, dict):
            cs.apply_defaults(obj)
            cs.prune(obj)


@pytest.mark.parametrize(
    "crd",
    [
        {},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"},
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "spec": "x",
            "metadata": 5,
        },
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "spec": {
                "versions": [
                    5,
                    {"schema": {"openAPIV3Schema": {"type": "object", "properties": {"a": None}}}},
                ]
            },
        },
    ],
)
def test_malformed_crds_rejected(crd: dict[str, Any]) -> None:
    assert validate_crd(crd)


def test_big_lists_bounded() -> None:
    cs = compile_schema(
        {
            "type": "object",
            "properties": {
                "s": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "l": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "x-kubernetes-validations": [{"rule": "self.all(x, self.exists(y, y == x))"}],
                },
            },
        }
    )
    start = time.perf_counter()
    errs = cs.validate({"s": [str(i) for i in range(100_000)] + ["1"], "l": list(range(2000))})
    # cel-cpp's iteration budget stands in for the Kubernetes cost limit
    assert messages(errs) == [
        's[100000]: Duplicate value: "1"',
        "l: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': "
        "call cost exceeds limit for rule: self.all(x, self.exists(y, y == x))",
    ]
    assert time.perf_counter() - start < 10
