"""Strategic merge patch for built-in kinds: strategies, directives, order, errors."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubewerk.core.errors import ApiError
from kubewerk.core.strategic import (
    PATCH_STRATEGIES,
    STRATEGIC_KINDS,
    StrategicPatchError,
    strategic_merge_patch,
)

SA = "v1/ServiceAccount"
NS = "v1/Namespace"
CM = "v1/ConfigMap"


def _owner(uid: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": f"o-{uid}", "uid": uid, **extra}


def test_kinds_table() -> None:
    assert {
        "v1/Namespace",
        "v1/ConfigMap",
        "v1/Secret",
        "v1/ServiceAccount",
        "v1/Event",
        "events.k8s.io/v1/Event",
        "coordination.k8s.io/v1/Lease",
        "apiextensions.k8s.io/v1/CustomResourceDefinition",
    } == STRATEGIC_KINDS
    assert PATCH_STRATEGIES[SA]["secrets"].merge_key == "name"
    assert PATCH_STRATEGIES[NS]["status.conditions"].merge_key == "type"
    for key in STRATEGIC_KINDS:
        assert PATCH_STRATEGIES[key]["metadata.ownerReferences"].merge_key == "uid"
        assert PATCH_STRATEGIES[key]["metadata.finalizers"].strategy == "merge"


def test_maps_merge_and_null_deletes() -> None:
    doc = {"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"x": "1"}}
    out = strategic_merge_patch(
        doc, {"metadata": {"labels": {"a": None, "c": "3"}}, "data": {"y": "2"}}, CM
    )
    assert out == {
        "metadata": {"name": "c", "labels": {"b": "2", "c": "3"}},
        "data": {"x": "1", "y": "2"},
    }


def test_finalizers_union_patch_items_first() -> None:
    doc = {"metadata": {"finalizers": ["a", "b"]}}
    assert strategic_merge_patch(doc, {"metadata": {"finalizers": ["c", "a"]}}, CM) == {
        "metadata": {"finalizers": ["c", "a", "b"]}
    }


def test_delete_from_primitive_list() -> None:
    doc = {"metadata": {"finalizers": ["a", "b", "c"]}}
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}
    assert strategic_merge_patch(doc, patch, CM) == {"metadata": {"finalizers": ["a", "c"]}}


def test_set_element_order_for_primitives() -> None:
    doc = {"metadata": {"finalizers": ["a", "b", "c"]}}
    patch = {"metadata": {"$setElementOrder/finalizers": ["c", "a", "b"]}}
    assert strategic_merge_patch(doc, patch, CM) == {"metadata": {"finalizers": ["c", "a", "b"]}}


def test_owner_references_merge_by_uid() -> None:
    doc = {"metadata": {"ownerReferences": [_owner("1"), _owner("2")]}}
    patch = {"metadata": {"ownerReferences": [{"uid": "2", "controller": True}, _owner("3")]}}
    out = strategic_merge_patch(doc, patch, CM)
    # live order is kept where the patch names live items; new items follow them
    assert out["metadata"]["ownerReferences"] == [
        _owner("1"),
        _owner("2", controller=True),
        _owner("3"),
    ]


def test_list_element_delete_and_replace_directives() -> None:
    doc = {"metadata": {"ownerReferences": [_owner("1"), _owner("2")]}}
    out = strategic_merge_patch(
        doc, {"metadata": {"ownerReferences": [{"uid": "1", "$patch": "delete"}]}}, CM
    )
    assert out["metadata"]["ownerReferences"] == [_owner("2")]
    out = strategic_merge_patch(
        doc, {"metadata": {"ownerReferences": [_owner("9"), {"$patch": "replace"}]}}, CM
    )
    assert out["metadata"]["ownerReferences"] == [_owner("9")]


def test_service_account_secrets_merge_image_pull_secrets_replace() -> None:
    doc = {"secrets": [{"name": "a"}, {"name": "b"}], "imagePullSecrets": [{"name": "x"}]}
    out = strategic_merge_patch(
        doc, {"secrets": [{"name": "c"}], "imagePullSecrets": [{"name": "y"}]}, SA
    )
    assert out == {
        "secrets": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
        "imagePullSecrets": [{"name": "y"}],
    }


def test_namespace_conditions_merge_by_type_and_spec_finalizers_replace() -> None:
    doc = {
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active", "conditions": [{"type": "A", "status": "True"}]},
    }
    patch = {
        "spec": {"finalizers": []},
        "status": {
            "conditions": [{"type": "A", "status": "False"}, {"type": "B", "status": "True"}]
        },
    }
    out = strategic_merge_patch(doc, patch, NS)
    assert out["spec"] == {"finalizers": []}
    assert out["status"]["conditions"] == [
        {"type": "A", "status": "False"},
        {"type": "B", "status": "True"},
    ]


def test_map_directives() -> None:
    doc = {"metadata": {"labels": {"a": "1"}, "annotations": {"x": "y"}}}
    out = strategic_merge_patch(doc, {"metadata": {"labels": {"$patch": "replace", "b": "2"}}}, CM)
    assert out["metadata"]["labels"] == {"b": "2"}
    out = strategic_merge_patch(doc, {"metadata": {"annotations": {"$patch": "delete"}}}, CM)
    assert out["metadata"]["annotations"] == {}
    assert strategic_merge_patch(doc, {"$patch": "delete"}, CM) == {}


def test_retain_keys() -> None:
    doc = {"data": {"a": "1", "b": "2", "c": "3"}}
    out = strategic_merge_patch(doc, {"data": {"$retainKeys": ["a", "d"], "d": "4"}}, CM)
    assert out == {"data": {"a": "1", "d": "4"}}


def test_new_values_lose_nulls_and_directives() -> None:
    out = strategic_merge_patch(
        {}, {"metadata": {"labels": {"a": "1", "b": None}, "annotations": {"$patch": "delete"}}}, CM
    )
    assert out == {"metadata": {"labels": {"a": "1"}}}


def test_type_change_replaces() -> None:
    assert strategic_merge_patch({"data": {"a": "1"}}, {"data": "x"}, CM) == {"data": "x"}
    assert strategic_merge_patch(
        {"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": "a"}}, CM
    ) == {"metadata": {"finalizers": "a"}}


@pytest.mark.parametrize(
    ("patch", "code", "upstream", "message"),
    [
        (
            {"metadata": {"$deleteFromPrimitiveList": ["a"]}},
            400,
            400,
            "invalid patch format of primitive list",
        ),
        (
            {"metadata": {"$setElementOrder": ["a"]}},
            400,
            400,
            "invalid patch format of setElementOrder list",
        ),
        ({"data": {"$retainKeys": "a"}}, 400, 400, "invalid patch format of retainKeys"),
        (
            {"data": {"$retainKeys": ["a"], "b": "2"}},
            400,
            400,
            "invalid patch format of retainKeys",
        ),
        (
            {"metadata": {"ownerReferences": [{"name": "x"}]}},
            400,
            500,
            "map: map[name:x] does not contain declared merge key: uid",
        ),
        (
            {"metadata": {"ownerReferences": [{"uid": "1", "$patch": "merge"}]}},
            400,
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            {"metadata": {"$patch": "merge"}},
            400,
            500,
            "unknown patch type: merge in map: map[$patch:merge]",
        ),
        (
            {"metadata": {"ownerReferences": [{"uid": "1", "$patch": 7}]}},
            400,
            500,
            "unknown patch type: %!s(int64=7) in map: map[$patch:7 uid:1]",
        ),
        (
            {"metadata": {"finalizers": [1]}},
            400,
            500,
            "list element types are not identical: [[a] [1]]",
        ),
        (
            {"metadata": {"finalizers": [["a"]]}},
            400,
            500,
            "list element types are not identical: [[a] [[a]]]",
        ),
    ],
)
def test_errors(patch: dict[str, Any], code: int, upstream: int, message: str) -> None:
    doc = {"metadata": {"finalizers": ["a"], "ownerReferences": [_owner("1")]}, "data": {"a": "1"}}
    with pytest.raises(StrategicPatchError) as info:
        strategic_merge_patch(doc, patch, CM)
    err = info.value
    assert (err.code, err.upstream_code, err.message) == (code, upstream, message)
    assert isinstance(err, ApiError)


def test_list_of_lists_is_422() -> None:
    with pytest.raises(StrategicPatchError) as info:
        strategic_merge_patch(
            {"metadata": {"finalizers": [["a"]]}}, {"metadata": {"finalizers": [["b"]]}}, CM
        )
    assert (info.value.code, info.value.detail) == (422, "lists of lists are not supported")
    assert info.value.message == "the server rejected our request due to an error in our request"


def test_non_object_patch_is_400() -> None:
    with pytest.raises(StrategicPatchError) as info:
        strategic_merge_patch({}, [1], CM)
    assert (
        info.value.message
        == "json: cannot unmarshal array into Go value of type map[string]interface {}"
    )
    assert strategic_merge_patch({"a": 1}, None, CM) == {"a": 1}
    for patch, word in (("x", "string"), (True, "bool"), (1, "number"), (1.5, "number")):
        with pytest.raises(StrategicPatchError) as info:
            strategic_merge_patch({}, patch, CM)
        assert info.value.message == (
            f"json: cannot unmarshal {word} into Go value of type map[string]interface {{}}"
        )


def test_kind_key_aliases() -> None:
    doc = {"secrets": [{"name": "a"}]}
    patch = {"secrets": [{"name": "b"}]}
    assert strategic_merge_patch(doc, patch, "ServiceAccount") == strategic_merge_patch(
        doc, patch, SA
    )
    assert strategic_merge_patch({}, {"spec": {"holderIdentity": "x"}}, "Lease") == {
        "spec": {"holderIdentity": "x"}
    }
    assert strategic_merge_patch({}, {"note": "n"}, "events.k8s.io/Event") == {"note": "n"}


def test_unknown_kind_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        strategic_merge_patch({}, {}, "example.com/v1/Widget")


_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "b", "c"])
_meta = st.fixed_dictionaries(
    {},
    optional={
        "labels": st.dictionaries(st.sampled_from(["a", "b", "c"]), _scalars, max_size=3),
        "finalizers": st.lists(st.sampled_from(["f1", "f2", "f3"]), max_size=3),
        "ownerReferences": st.lists(
            st.fixed_dictionaries(
                {"uid": st.sampled_from(["1", "2", "3"])},
                optional={"name": st.sampled_from(["x", "y"])},
            ),
            max_size=3,
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(_meta, _meta)
def test_never_mutates_inputs(doc_meta: dict[str, Any], patch_meta: dict[str, Any]) -> None:
    doc = {"metadata": doc_meta, "data": {"k": "v"}}
    patch = {"metadata": patch_meta}
    doc_before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    try:
        out = strategic_merge_patch(doc, patch, CM)
    except StrategicPatchError:
        out = None
    assert doc == doc_before
    assert patch == patch_before
    if out is not None:
        out.setdefault("metadata", {})["x"] = 1
        assert doc == doc_before
