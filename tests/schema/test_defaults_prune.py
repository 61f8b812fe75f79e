"""Structural defaulting and pruning as the apiserver does them."""

from __future__ import annotations

from typing import Any

from kubewerk.schema import compile_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "default": {},
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "nullable": True, "default": "auto"},
                "strategy": {"type": "string", "default": "Rolling"},
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                        },
                    },
                },
                "labels": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "default": "x"},
                },
                "raw": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "known": {"type": "object", "properties": {"a": {"type": "string"}}}
                    },
                },
                "tmpl": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object"}},
                },
            },
        }
    },
}


def test_defaults_fill_absent_and_non_nullable_null() -> None:
    cs = compile_schema(SCHEMA)
    obj: dict[str, Any] = {
        "spec": {
            "mode": None,
            "strategy": None,
            "ports": [{"port": 80}, {"port": 81, "protocol": "UDP"}],
            "labels": {"a": None},
        }
    }
    cs.apply_defaults(obj)
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["mode"] is None  # nullable: null is kept
    assert obj["spec"]["strategy"] == "Rolling"  # non-nullable null is defaulted
    assert obj["spec"]["ports"] == [
        {"port": 80, "protocol": "TCP"},
        {"port": 81, "protocol": "UDP"},
    ]
    assert obj["spec"]["labels"] == {"a": "x"}
    empty: dict[str, Any] = {}
    cs.apply_defaults(empty)
    assert empty == {"spec": {"replicas": 1, "mode": "auto", "strategy": "Rolling"}}


def test_defaults_are_copies() -> None:
    cs = compile_schema(
        {
            "type": "object",
            "properties": {"l": {"type": "array", "items": {"type": "string"}, "default": ["a"]}},
        }
    )
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    cs.apply_defaults(a)
    a["l"].append("mutated")
    cs.apply_defaults(b)
    assert b == {"l": ["a"]}


def test_prune_reports_paths() -> None:
    cs = compile_schema(SCHEMA)
    obj: dict[str, Any] = {
        "apiVersion": "x/v1",
        "kind": "X",
        "metadata": {"name": "n", "bogus": 1, "creationTimestamp": None},
        "top": 1,
        "spec": {
            "foo": 1,
            "ports": [{"port": 1, "x": 2}],
            "raw": {"anything": {"deep": 1}, "known": {"a": "b", "drop": 1}},
            "tmpl": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "junk": 1},
                "spec": {"k": 1},
                "status": {},
            },
        },
    }
    dropped = cs.prune(obj)
    assert dropped == [
        "metadata.bogus",
        "spec.foo",
        "spec.ports[0].x",
        "spec.raw.known.drop",
        "spec.tmpl.metadata.junk",
        "spec.tmpl.spec.k",
        "spec.tmpl.status",
        "top",
    ]
    assert obj["metadata"] == {"name": "n"}
    assert obj["spec"]["raw"] == {"anything": {"deep": 1}, "known": {"a": "b"}}
    assert obj["spec"]["tmpl"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {},
    }


def test_prune_additional_properties_true_empties_nested_objects() -> None:
    # additionalProperties: true carries no schema, so nested objects lose their fields
    # (as upstream)
    cs = compile_schema(
        {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": True}}}
    )
    obj: dict[str, Any] = {"m": {"a": 1, "b": {"c": 2}}}
    assert cs.prune(obj) == ["m.b.c"]
    assert obj == {"m": {"a": 1, "b": {}}}
