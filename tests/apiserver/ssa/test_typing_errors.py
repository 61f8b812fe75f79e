"""Typing an applied configuration as structured-merge-diff does
(``kubewerk.core.fieldpath.validate``), over types read from CRD schemas
(``OpenApiTypes``): undeclared fields of closed structs, list items a set or keyed list
cannot name, duplicates, with kube's paths (keys printed as Go's ``value.ToString``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.core.fieldpath import ManagedFields, Manager, apply, path_string
from kubewerk.core.fieldpath.path import key_element, value_element
from kubewerk.core.fieldpath.types import OpenApiTypes, TypeNode, struct
from kubewerk.core.fieldpath.validate import typing_errors

NOW = "2024-01-01T00:00:00Z"

STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
BOOL: dict[str, Any] = {"type": "boolean"}


def _map_list(keys: list[str], props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": keys,
        "items": {"type": "object", "properties": props},
    }


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "ports": _map_list(
                    ["port", "protocol"],
                    {"port": INT, "protocol": {"type": "string", "default": "TCP"}, "x": STR},
                ),
                "byFlag": _map_list(["on"], {"on": BOOL, "v": STR}),
                "outer": _map_list(
                    ["name"],
                    {
                        "name": STR,
                        "inner": _map_list(["id"], {"id": INT, "v": STR}),
                        "tags": {
                            "type": "array",
                            "x-kubernetes-list-type": "set",
                            "items": STR,
                        },
                    },
                ),
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": STR},
                "plain": {"type": "array", "items": {"type": "object", "properties": {"a": STR}}},
                "atomic": {
                    "type": "array",
                    "x-kubernetes-list-type": "atomic",
                    "items": {"type": "object", "properties": {"name": STR}},
                },
                "open": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"inner": {"type": "object", "properties": {"a": STR}}},
                },
                "free": {"type": "object", "additionalProperties": STR},
                "closedEmpty": {"type": "object", "additionalProperties": False},
                "anything": {"type": "object"},
                "embedded": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {"a": STR}}},
                },
            },
        }
    },
}

META = struct({"name": OpenApiTypes().node(STR), "labels": OpenApiTypes().node({})}, closed=True)


def _node() -> TypeNode:
    return OpenApiTypes(object_meta=META).node(SCHEMA)


def _errors(spec: dict[str, Any]) -> list[str]:
    return typing_errors({"spec": spec}, _node())


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"ports": [{"port": 80}, {"port": 80, "protocol": "TCP"}]},
            ['.spec.ports: duplicate entries for key [port=80,protocol="TCP"]'],
            id="multi-key-duplicate-through-a-key-default",
        ),
        pytest.param(
            {"ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}]}, [], id="multi-key-distinct"
        ),
        pytest.param(
            {"byFlag": [{"on": True}, {"on": False}, {"on": True}]},
            [".spec.byFlag: duplicate entries for key [on=true]"],
            id="boolean-key",
        ),
        pytest.param(
            {"tags": ["x", "y", "x", "x"]},
            [
                '.spec.tags: duplicate entries for key [="x"]',
                '.spec.tags: duplicate entries for key [="x"]',
            ],
            id="set-once-per-extra-occurrence",
        ),
        pytest.param(
            {"outer": [{"name": "a", "inner": [{"id": 1}, {"id": 1}], "tags": ["t", "t"]}]},
            [
                '.spec.outer[name="a"].inner: duplicate entries for key [id=1]',
                '.spec.outer[name="a"].tags: duplicate entries for key [="t"]',
            ],
            id="nested-lists-named-by-their-parents-key",
        ),
        pytest.param(
            {"outer": [{"name": "a", "inner": [{"id": 1, "nope": 1}]}]},
            ['.spec.outer[name="a"].inner[id=1].nope: field not declared in schema'],
            id="undeclared-inside-keyed-items",
        ),
        pytest.param(
            {"outer": [{"name": 'a"<b>', "bad": 1}]},
            ['.spec.outer[name="a\\"<b>"].bad: field not declared in schema'],
            id="string-keys-go-quoted",
        ),
        pytest.param(
            {"plain": [{"a": "x"}, {"b": "y"}], "atomic": [{"name": "a"}, {"name": "a", "z": 1}]},
            [
                ".spec.atomic[1].z: field not declared in schema",
                ".spec.plain[1].b: field not declared in schema",
            ],
            id="atomic-lists-by-index-and-duplicates-allowed",
        ),
        pytest.param(
            {"byFlag": [{"on": True}, {"v": "only"}, {"on": True}]},
            [
                ".spec.byFlag: element 1: associative list with keys has an element that omits "
                'all key fields ["on"] (and doesn\'t have default values for any key fields)'
            ],
            id="unkeyable-item-stops-the-list",
        ),
        pytest.param(
            {"tags": ["a", {"b": 1}]},
            [
                ".spec.tags: element 1: associative list without keys has an element that's "
                "a map type"
            ],
            id="map-in-a-set",
        ),
        pytest.param(
            {"byFlag": [None]},
            [".spec.byFlag: element 0: associative list with keys may not have a null element"],
            id="null-keyed-item",
        ),
        pytest.param(
            {"open": {"inner": {"b": 1}, "c": {"d": 1}}},
            [],
            id="preserve-unknown-reaches-inlined-children",
        ),
        pytest.param({"free": {"any": "x"}, "anything": {"x": {"y": 1}}}, [], id="open-maps"),
        pytest.param(
            {"closedEmpty": {"x": "1"}},
            [".spec.closedEmpty.x: field not declared in schema"],
            id="additional-properties-false",
        ),
        pytest.param(
            {
                "embedded": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p", "bogus": 1},
                    "spec": {"a": "x"},
                }
            },
            [".spec.embedded.metadata.bogus: field not declared in schema"],
            id="embedded-resource-metadata-is-object-meta",
        ),
        pytest.param(
            {"zzz": 1, "aaa": 1, "tags": ["a", "a"], "outer": [{"name": "o", "q": 1}]},
            [
                ".spec.aaa: field not declared in schema",
                '.spec.outer[name="o"].q: field not declared in schema',
                '.spec.tags: duplicate entries for key [="a"]',
            ],
            id="one-undeclared-per-object-the-first-by-name-after-the-declared-ones",
        ),
        pytest.param(
            {"ports": None, "tags": None, "outer": [{"name": "a", "inner": None}]}, [], id="nulls"
        ),
    ],
)
def test_typing_errors(spec: dict[str, Any], expected: list[str]) -> None:
    assert _errors(spec) == expected


def test_a_key_default_names_an_item_that_omits_the_key() -> None:
    spec = {"ports": [{"protocol": "TCP"}, {"x": "only"}]}
    assert _errors(spec) == ['.spec.ports: duplicate entries for key [protocol="TCP"]']


def test_a_root_level_error_has_no_path() -> None:
    node = OpenApiTypes().node({"type": "array", "x-kubernetes-list-type": "set", "items": STR})
    assert typing_errors(["a", "a"], node) == ['duplicate entries for key [="a"]']


@pytest.mark.parametrize(
    ("pe", "text"),
    [
        pytest.param(key_element([("name", "a<b")]), '[name="a<b"]', id="string-not-html-escaped"),
        pytest.param(key_element([("on", True)]), "[on=true]", id="bool"),
        pytest.param(key_element([("p", 80), ("a", "x")]), '[a="x",p=80]', id="keys-sorted"),
        pytest.param(key_element([("f", 1e21)]), "[f=1e+21]", id="float-as-go-prints-it"),
        pytest.param(value_element("\u00e9\n"), '[="\u00e9\\n"]', id="value-go-quoted"),
    ],
)
def test_paths_print_values_as_go(pe: tuple[Any, ...], text: str) -> None:
    assert path_string((pe,)) == text


def _owned(managed: ManagedFields, name: str) -> list[str]:
    owned = managed.owners[Manager(name, "Apply")]
    return sorted(path_string(p) for p in owned.fields.paths())


def test_two_appliers_own_one_item_each_of_a_nested_map_list() -> None:
    node = _node()

    def config(inner: list[dict[str, Any]]) -> dict[str, Any]:
        return {"spec": {"outer": [{"name": "a", "inner": inner}]}}

    obj, managed = apply(
        {},
        config([{"id": 1, "v": "x"}]),
        node,
        ManagedFields(),
        Manager("one", "Apply"),
        "v1",
        NOW,
        False,
    )
    obj, managed = apply(
        obj, config([{"id": 2, "v": "y"}]), node, managed, Manager("two", "Apply"), "v1", NOW, False
    )
    assert obj["spec"]["outer"][0]["inner"] == [{"id": 1, "v": "x"}, {"id": 2, "v": "y"}]
    assert '.spec.outer[name="a"].inner[id=2].v' in _owned(managed, "two")
    assert '.spec.outer[name="a"].inner[id=1].v' not in _owned(managed, "two")
    # "one" applies the outer item without its inner item: only that inner item goes
    obj, managed = apply(
        obj,
        {"spec": {"outer": [{"name": "a"}]}},
        node,
        managed,
        Manager("one", "Apply"),
        "v1",
        NOW,
        False,
    )
    assert obj["spec"]["outer"] == [{"name": "a", "inner": [{"id": 2, "v": "y"}]}]
    assert _owned(managed, "one") == ['.spec.outer[name="a"]', '.spec.outer[name="a"].name']
