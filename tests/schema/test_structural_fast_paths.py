"""The shortcuts of the structural walks (pruning a map whose keys are all known,
ObjectMeta coercion below embedded-bearing properties only, defaulting and list checks
by the shorter key set) give exactly what the plain walks give: the same object, the
same pruned paths, the same errors in the same order. The plain walks are written out
here as the reference (one loop over every key, as kube's pruning, defaulting and
listtype packages walk), and random objects over a schema with every kind of node
(embedded resources, additionalProperties, lists of maps, defaults, scalars that get
objects) are put through both."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubewerk.core.errors import FieldError
from kubewerk.core.meta import OBJECT_META_FIELDS
from kubewerk.schema import _structural as structural
from kubewerk.schema import compile_schema
from kubewerk.schema._structural import META_FIELDS, Structural

EMBEDDED = {
    "type": "object",
    "x-kubernetes-embedded-resource": True,
    "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer"}}}},
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "engine": {"type": "string"},
                "replicas": {"type": "integer", "default": 1},
                "storage": {"type": "string", "default": "1Gi"},
                "tmpl": EMBEDDED,
                "byName": {"type": "object", "additionalProperties": EMBEDDED},
                "sub": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "string", "default": "x"},
                        "b": {"type": "integer"},
                    },
                },
                "conds": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    "items": {
                        "type": "object",
                        "properties": {"type": {"type": "string"}, "v": {"type": "integer"}},
                    },
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                }
            },
        },
    },
}


# -- the plain walks (reference) --------------------------------------------------------


def ref_default(x: Any, s: Structural | None) -> None:
    if s is None or not s.has_defaults:
        return
    if type(x) is dict:
        for k, prop in s.defaulted_props:
            if k not in x or (x[k] is None and not prop.nullable):
                x[k] = copy.deepcopy(prop.default)
        addl = s.additional
        if addl is None:
            for k, v in x.items():
                prop2 = s.defaults_below.get(k)
                if prop2 is not None:
                    ref_default(v, prop2)
            return
        for k in list(x):
            prop2 = s.properties.get(k)
            if prop2 is not None:
                ref_default(x[k], prop2)
            else:
                if x[k] is None and not addl.nullable and addl.has_default:
                    x[k] = copy.deepcopy(addl.default)
                ref_default(x[k], addl)
    elif type(x) is list and s.items is not None:
        for i, v in enumerate(x):
            if v is None and s.items.has_default and not s.items.nullable:
                x[i] = copy.deepcopy(s.items.default)
            ref_default(x[i], s.items)


def ref_prune(x: Any, s: Structural | None, path: str, out: list[str]) -> None:
    if type(x) is dict:
        if s is None:
            for k in list(x):
                out.append(f"{path}.{k}" if path else k)
                del x[k]
            return
        for k in list(x):
            if s.embedded and k in META_FIELDS:
                continue
            prop = s.properties.get(k)
            if prop is not None:
                if type(x[k]) in (dict, list):
                    ref_prune(x[k], prop, f"{path}.{k}" if path else k, out)
            elif s.additional_bool:
                if type(x[k]) in (dict, list):
                    ref_prune(x[k], s.additional, f"{path}.{k}" if path else k, out)
            else:
                if k not in META_FIELDS or path:
                    out.append(f"{path}.{k}" if path else k)
                del x[k]
    elif type(x) is list:
        for i, v in enumerate(x):
            if type(v) in (dict, list):
                ref_prune(v, None if s is None else s.items, f"{path}[{i}]", out)


def ref_coerce_meta(x: Any, s: Structural | None, path: str, out: list[str]) -> None:
    if s is None:
        return
    if type(x) is dict:
        if s.embedded:
            for k in ("apiVersion", "kind"):
                if k in x and not isinstance(x[k], str):
                    del x[k]
            meta = x.get("metadata")
            if type(meta) is dict:
                base = f"{path}.metadata" if path else "metadata"
                for k in list(meta):
                    if k not in OBJECT_META_FIELDS:
                        out.append(f"{base}.{k}")
                        del meta[k]
                if "creationTimestamp" in meta and meta["creationTimestamp"] is None:
                    del meta["creationTimestamp"]
            elif "metadata" in x and meta is not None:
                del x["metadata"]
        if not s.has_embedded:
            return
        for k, v in x.items():
            prop = s.properties.get(k)
            if prop is not None:
                if prop.has_embedded:
                    ref_coerce_meta(v, prop, f"{path}.{k}" if path else k, out)
            elif s.additional is not None and s.additional.has_embedded:
                ref_coerce_meta(v, s.additional, f"{path}.{k}" if path else k, out)
    elif type(x) is list and s.items is not None and s.items.has_embedded:
        for i, v in enumerate(x):
            ref_coerce_meta(v, s.items, f"{path}[{i}]", out)


def ref_validate_lists(x: Any, s: Structural | None, path: str, errs: list[FieldError]) -> None:
    if s is None or not s.has_lists:
        return
    if type(x) is dict:
        if s.additional is not None and s.additional.has_lists:
            for k, v in x.items():
                ref_validate_lists(v, s.additional, f"{path}[{k}]", errs)
        for k, v in x.items():
            sub = s.lists_below.get(k)
            if sub is not None:
                ref_validate_lists(v, sub, f"{path}.{k}" if path else k, errs)
    elif type(x) is list:
        # the list's own checks are not shortcut: the library's, on the same node
        own: list[FieldError] = []
        structural.validate_lists(x, _without_items(s), path, own)
        errs.extend(own)
        if s.items is not None and s.items.has_lists:
            for i, v in enumerate(x):
                ref_validate_lists(v, s.items, f"{path}[{i}]", errs)


def _without_items(s: Structural) -> Structural:
    clone = copy.copy(s)
    clone.items = None
    return clone


# -- random objects ----------------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", ""]))
KEYS = ["engine", "replicas", "storage", "tmpl", "byName", "sub", "conds", "tags", "a", "b"]
KEYS += ["x", "type", "v", "n", "spec", "apiVersion", "kind", "metadata", "name", "bogus"]
keys = st.sampled_from(KEYS)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=25,
)
objects = st.dictionaries(
    st.sampled_from(["apiVersion", "kind", "metadata", "spec", "status", "x"]), values, max_size=5
)


@settings(max_examples=150, deadline=None)
@given(objects)
def test_walks_equal_the_plain_walks(obj: dict[str, Any]) -> None:
    root = compile_schema(SCHEMA).root
    fast, ref = copy.deepcopy(obj), copy.deepcopy(obj)
    fast_out: list[str] = []
    ref_out: list[str] = []
    structural.prune(fast, root, "", fast_out)
    ref_prune(ref, root, "", ref_out)
    assert (fast, fast_out) == (ref, ref_out)
    structural.coerce_meta(fast, root, "", fast_out)
    ref_coerce_meta(ref, root, "", ref_out)
    assert (fast, fast_out) == (ref, ref_out)
    structural.default(fast, root)
    ref_default(ref, root)
    assert fast == ref
    fast_errs: list[FieldError] = []
    ref_errs: list[FieldError] = []
    structural.validate_lists(fast, root, "", fast_errs)
    ref_validate_lists(ref, root, "", ref_errs)
    assert [(e.type, e.field, e.detail) for e in fast_errs] == [
        (e.type, e.field, e.detail) for e in ref_errs
    ]


def test_known_keys_holding_objects_where_scalars_belong() -> None:
    """A map whose keys are all known still prunes below them: an object given for a
    string property loses all its fields, and the paths say where."""
    cs = compile_schema(SCHEMA)
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "K",
        "metadata": {"name": "n", "bogus": 1},
        "spec": {"engine": {"a": 1, "b": [1]}, "sub": {"a": "x", "zz": 2}},
    }
    assert cs.prune(obj) == ["metadata.bogus", "spec.engine.a", "spec.engine.b", "spec.sub.zz"]
    assert obj == {
        "apiVersion": "v1",
        "kind": "K",
        "metadata": {"name": "n"},
        "spec": {"engine": {}, "sub": {"a": "x"}},
    }


def test_embedded_resources_below_additional_properties_are_coerced() -> None:
    cs = compile_schema(SCHEMA)
    obj: dict[str, Any] = {
        "spec": {
            "byName": {
                "one": {"apiVersion": 1, "metadata": {"name": "a", "nope": True}},
                "two": {"kind": "K", "metadata": {"creationTimestamp": None}},
            },
            "tmpl": {"metadata": {"labels": {}, "odd": 1}},
        }
    }
    assert cs.prune(obj) == [
        "spec.byName.one.metadata.nope",
        "spec.tmpl.metadata.odd",
    ]
    assert obj["spec"]["byName"] == {
        "one": {"metadata": {"name": "a"}},
        "two": {"kind": "K", "metadata": {}},
    }


def test_list_errors_keep_the_object_order() -> None:
    """Two properties with lists below: errors in the object's key order (as before);
    one: looked up by name, the same errors."""
    cs = compile_schema(SCHEMA)
    obj = {
        "status": {"tags": ["a", "a"]},
        "spec": {"tags": ["b", "b"], "conds": [{"type": "x"}, {"type": "x"}]},
    }
    fields = [e.field for e in cs.validate(obj)]
    assert fields == ["status.tags[1]", "spec.tags[1]", "spec.conds[1]"]
