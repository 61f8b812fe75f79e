"""ObjectMeta validation: Kubernetes' exact messages and field paths."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubewerk.core.errors import ApiError
from kubewerk.core.validation import (
    finalizer_warnings,
    generate_name,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_path_segment_name,
    is_path_segment_prefix,
    name_errors,
    validate_annotations,
    validate_managed_fields,
    validate_object_meta,
    validate_object_meta_for_create,
    validate_object_meta_update,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
KEY_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def messages(meta: dict[str, Any], **kwargs: Any) -> list[str]:
    return [e.message() for e in validate_object_meta(meta, **kwargs)]


def test_dns_helpers() -> None:
    assert is_dns1123_subdomain("example.com") == []
    assert is_dns1123_subdomain("Example.com") == [SUBDOMAIN_MSG]
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 bytes"]
    assert is_dns1123_label("my-name") == []
    assert is_dns1123_label("my.name") == ["must not contain dots"]
    assert is_dns1123_label("-x") == [LABEL_MSG]
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 bytes"]
    assert is_dns1035_label("1abc") == [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
        "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]
    # Go's $ never matches before a trailing newline
    assert is_dns1123_subdomain("abc\n") == [SUBDOMAIN_MSG]


def test_path_segment_rules() -> None:
    assert is_path_segment_name(".") == ["may not be '.'"]
    assert is_path_segment_name("..") == ["may not be '..'"]
    assert is_path_segment_name("a/b%c") == ["may not contain '/'", "may not contain '%'"]
    assert is_path_segment_prefix("..") == []
    assert name_errors("Any_Name", "path-segment") == []


def test_generate_name_prefix_masks_trailing_dash() -> None:
    # upstream replaces the last two characters of a dash-terminated prefix by "a"
    assert name_errors("my-app-", "subdomain", prefix=True) == []
    assert name_errors("A-", "subdomain", prefix=True) == []
    assert name_errors("-", "subdomain", prefix=True) == [SUBDOMAIN_MSG]
    assert messages({"generateName": "bad-"}, namespaced=False) == [
        "metadata.name: Required value: name or generateName is required"
    ]
    assert messages({"generateName": "Bad_x-", "name": "ok"}, namespaced=False) == [
        f'metadata.generateName: Invalid value: "Bad_x-": {SUBDOMAIN_MSG}'
    ]


def test_generate_name() -> None:
    name = generate_name("x" * 70)
    assert len(name) == 63 and name.startswith("x" * 58)
    assert all(c in "bcdfghjklmnpqrstvwxz2456789" for c in name[58:])


def test_name_and_namespace() -> None:
    assert messages({"name": "ok", "namespace": "default"}, namespaced=True) == []
    assert messages({"name": "Bad"}, namespaced=True) == [
        f'metadata.name: Invalid value: "Bad": {SUBDOMAIN_MSG}',
        "metadata.namespace: Required value",
    ]
    assert messages({"name": "a.b"}, namespaced=False, name_rule="label") == [
        'metadata.name: Invalid value: "a.b": must not contain dots'
    ]
    assert messages({"name": "ok", "namespace": "x"}, namespaced=False) == [
        "metadata.namespace: Forbidden: not allowed on this type"
    ]
    assert messages({"name": "ok", "namespace": "a.b"}, namespaced=True) == [
        'metadata.namespace: Invalid value: "a.b": must not contain dots'
    ]
    assert messages({}, namespaced=False) == [
        "metadata.name: Required value: name or generateName is required"
    ]
    assert messages({"name": "ok", "generation": -1}, namespaced=False) == [
        "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_labels_and_annotations() -> None:
    assert messages({"name": "ok", "labels": {"a b": "x", "k": "-v"}}, namespaced=False) == [
        f'metadata.labels: Invalid value: "a b": {KEY_NAME_MSG}',
        'metadata.labels: Invalid value: "-v": a valid label must be an empty string or consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]
    # annotation keys are checked lower-cased, but reported as given
    assert validate_annotations({"Example.COM/Key": "v"}) == []
    assert [e.message() for e in validate_annotations({"x": "v" * (256 * 1024)})] == [
        "metadata.annotations: Too long: may not be more than 262144 bytes"
    ]
    assert validate_annotations({"x": "v" * (256 * 1024 - 1)}) == []


def test_owner_references() -> None:
    ok = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "1"}
    assert messages({"name": "ok", "ownerReferences": [ok]}, namespaced=False) == []
    assert messages(
        {"name": "ok", "ownerReferences": [{"apiVersion": "apps/"}]}, namespaced=False
    ) == [
        'metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": must not be empty',
    ]
    event = {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}
    assert messages({"name": "ok", "ownerReferences": [event]}, namespaced=False) == [
        "metadata.ownerReferences: Invalid value: "
        '{"apiVersion":"v1","kind":"Event","name":"e","uid":"u"}: '
        "/v1, Kind=Event is disallowed from being an owner"
    ]
    two = [{**ok, "controller": True}, {**ok, "name": "v", "uid": "2", "controller": True}]
    assert messages({"name": "ok", "ownerReferences": two}, namespaced=False) == [
        "metadata.ownerReferences: Invalid value: "
        '[{"apiVersion":"example.com/v1","kind":"Widget","name":"w","uid":"1","controller":true},'
        '{"apiVersion":"example.com/v1","kind":"Widget","name":"v","uid":"2","controller":true}]: '
        'Only one reference can have Controller set to true. Found "true" in references for '
        "Widget/w and Widget/v"
    ]


def test_finalizers() -> None:
    assert (
        messages({"name": "ok", "finalizers": ["example.com/x", "kubernetes"]}, namespaced=False)
        == []
    )
    assert messages({"name": "ok", "finalizers": ["a/b/c"]}, namespaced=False) == [
        'metadata.finalizers: Invalid value: "a/b/c": a valid label key must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName')"
    ]
    assert messages(
        {"name": "ok", "finalizers": ["orphan", "foregroundDeletion"]}, namespaced=False
    ) == [
        'metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: '
        "finalizer orphan and foregroundDeletion cannot be both set"
    ]


def test_finalizer_warnings() -> None:
    assert finalizer_warnings(["example.com/x", "orphan", "kubernetes"]) == []
    assert finalizer_warnings(["foo", "a.b"]) == [
        'metadata.finalizers: "a.b": prefer a domain-qualified finalizer name including a path (/) '
        "to avoid accidental conflicts with other finalizer writers",
        'metadata.finalizers: "foo": prefer a domain-qualified finalizer name to avoid accidental '
        "conflicts with other finalizer writers",
    ]
    assert finalizer_warnings(["foo", "bar"], ["foo"]) == [
        'metadata.finalizers: "bar": prefer a domain-qualified finalizer name to avoid accidental '
        "conflicts with other finalizer writers"
    ]


def test_managed_fields() -> None:
    entries = [{"manager": "kube\u0001ctl", "operation": "Patch", "fieldsType": "FieldsV2"}]
    assert [e.message() for e in validate_managed_fields(entries)] == [
        'metadata.managedFields[0].operation: Invalid value: "Patch": must be `Apply` or `Update`',
        'metadata.managedFields[0].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`',
        "metadata.managedFields[0].manager: Invalid value: "
        '"kube\\x01ctl": invalid character U+0001 (at position 4)',
    ]
    assert [
        e.message() for e in validate_managed_fields([{"manager": "m" * 129, "operation": "Apply"}])
    ] == ["metadata.managedFields[0].manager: Too long: may not be more than 128 bytes"]


def test_create_runs_path_segment_rule_after_the_kind_rule() -> None:
    assert [
        e.message()
        for e in validate_object_meta_for_create(
            {"name": ".."}, namespaced=False, name_rule="path-segment"
        )
    ] == ["metadata.name: Invalid value: \"..\": may not be '..'"]
    errs = validate_object_meta_for_create({"name": ".."}, namespaced=False)
    assert [e.message() for e in errs] == [f'metadata.name: Invalid value: "..": {SUBDOMAIN_MSG}']
    # an ApiError built from them carries causes with field paths
    status = ApiError.invalid("Widget", "example.com", "..", errs).to_status()
    assert status["code"] == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "..": {SUBDOMAIN_MSG}',
            "field": "metadata.name",
        }
    ]


def test_update_rules() -> None:
    old = {
        "name": "a",
        "namespace": "n",
        "uid": "1",
        "resourceVersion": "5",
        "generation": 3,
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "deletionTimestamp": "2024-01-02T00:00:00Z",
        "finalizers": ["x/a"],
    }
    new = {
        **old,
        "resourceVersion": "",
        "generation": 2,
        "uid": "2",
        "finalizers": ["x/a", "x/c", "x/b"],
    }
    assert [e.message() for e in validate_object_meta_update(new, old)] == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the "
        'object is being deleted, found new finalizers []string{"x/b", "x/c"}',
        'metadata.resourceVersion: Invalid value: "": must be specified for an update',
        "metadata.generation: Invalid value: 2: must not be decremented",
        'metadata.uid: Invalid value: "2": field is immutable',
    ]
    moved = {**old, "creationTimestamp": "2025-01-01T00:00:00Z"}
    assert [e.message() for e in validate_object_meta_update(moved, old)] == [
        'metadata.creationTimestamp: Invalid value: "2025-01-01T00:00:00Z": field is immutable'
    ]


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,40}[a-z0-9])?", fullmatch=True))
def test_valid_subdomains_pass_both_passes(name: str) -> None:
    errs = validate_object_meta_for_create({"name": name}, namespaced=False)
    if ".." in name or ".-" in name or "-." in name:
        assert errs
    else:
        assert errs == []


@pytest.mark.parametrize("rule", ["subdomain", "label", "path-segment"])
def test_rules_accept_simple_names(rule: Any) -> None:
    assert validate_object_meta({"name": "web-1"}, namespaced=False, name_rule=rule) == []


def test_a_status_without_a_reason_leaves_the_field_out() -> None:
    """metav1.Status's reason is omitempty: kube's bare 500s (an apply's "failed to create
    typed live object") carry no reason field at all, not an empty one."""
    status = ApiError(500, "", "failed to create typed live object (x)").to_status()
    assert "reason" not in status and status["code"] == 500
    assert ApiError.internal("boom").to_status()["reason"] == "InternalError"
