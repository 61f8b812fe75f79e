"""The create path's shortcuts answer exactly what the checks they stand in for answer:
ObjectMeta validation of a create carrying managedFields (``core.validation``'s clean-meta
shortcut, which accepts entries that pass ``validate_managed_fields``)
and the typed-ObjectMeta decoding check (``rest._meta_types_ok``), on hostile inputs."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from kubewerk.apiserver import rest
from kubewerk.apiserver.admission import Admission, AdmissionRequest
from kubewerk.apiserver.schema_admission import SchemaAdmission
from kubewerk.apiserver.strategy import Strategy
from kubewerk.core import validation
from kubewerk.core.validation import NameRule

ENTRY: dict[str, Any] = {
    "manager": "kubectl",
    "operation": "Update",
    "apiVersion": "v1",
    "time": "2024-01-01T00:00:00Z",
    "fieldsType": "FieldsV1",
    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:a": {}}}},
}


def _entry(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(ENTRY)
    out.update(changes)
    return out


GOOD_META: dict[str, Any] = {
    "name": "db-1",
    "namespace": "default",
    "generateName": "db-",
    "labels": {"a": "b"},
    "annotations": {"example.com/x": "y"},
    "finalizers": ["example.com/f"],
    "generation": 1,
    "uid": "u",
    "creationTimestamp": "2024-01-01T00:00:00Z",
    "managedFields": [ENTRY],
}


def _meta(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(GOOD_META)
    for key, value in changes.items():
        if value is _DROP:
            out.pop(key, None)
        else:
            out[key] = value
    return out


_DROP: Any = object()

METAS: list[dict[str, Any]] = [
    _meta(),
    _meta(managedFields=[ENTRY, _entry(manager="other", operation="Apply")]),
    # bad entries, alone and with other errors (their order must stay the full check's)
    _meta(managedFields=[_entry(operation="Patch")]),
    _meta(managedFields=[_entry(fieldsType="FieldsV2")]),
    _meta(managedFields=[_entry(manager="x" * 129)]),
    _meta(managedFields=[_entry(manager="bad\x00name\u200b")]),
    _meta(managedFields=[_entry(subresource="s" * 257)]),
    _meta(managedFields=["not an object", 7, None]),
    _meta(managedFields=[_entry(operation="Patch")], labels={"-bad": "v"}),
    _meta(managedFields=[_entry(manager="m\x7f")], name="Bad_Name", generateName="-x"),
    # other ObjectMeta errors with clean entries
    _meta(name="Bad_Name"),
    _meta(name=_DROP),
    _meta(name=_DROP, generateName=_DROP),
    _meta(name="a" * 254),
    _meta(name="."),
    _meta(name="a%b"),
    _meta(namespace=_DROP),
    _meta(namespace="Bad_NS"),
    _meta(generation=-1),
    _meta(labels={"a": "b" * 64}),
    _meta(labels={"a": 1}),
    _meta(labels="nope"),
    _meta(annotations={"Bad Key": "v"}),
    _meta(annotations={"k": "v" * (256 * 1024)}),
    _meta(finalizers=["no-slash-or-domain"]),
    _meta(finalizers=["bad/Final/izer"]),
    _meta(ownerReferences=[{"apiVersion": "v1", "kind": "X", "name": "n", "uid": ""}]),
    _meta(ownerReferences="nope"),
    # managedFields that are not a list, or an empty one: the general check
    _meta(managedFields=[]),
    _meta(managedFields={"manager": "m"}),
    _meta(managedFields="text"),
    _meta(managedFields=None),
]


class _Kind:
    """The parts of a served resource ObjectMeta validation reads."""

    def __init__(self, strategy: Strategy, namespaced: bool) -> None:
        self.strategy = strategy
        self.namespaced = namespaced


class _Warning(Strategy):
    name_rule: ClassVar[NameRule] = "subdomain"

    def warnings(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
        meta = obj.get("metadata")
        return [f"finalizers: {meta.get('finalizers') if isinstance(meta, dict) else None!r}"]


def _strategy(rule: NameRule) -> Strategy:
    cls = type(f"Rule_{rule.replace('-', '_')}", (_Warning,), {"name_rule": rule})
    return cls()


@dataclass
class _Answer:
    errors: list[str]
    warnings: list[str]


def _validate(admission: Admission, meta: Any, rule: NameRule, namespaced: bool) -> _Answer:
    req = AdmissionRequest(
        operation="CREATE",
        rtype=_Kind(_strategy(rule), namespaced),  # type: ignore[arg-type]
        version="v1",
        obj={"apiVersion": "v1", "kind": "T", "metadata": copy.deepcopy(meta)},
        old=None,
        field_validation="Warn",
        warnings=["before"],
    )
    errors = admission.validate_meta(req)
    return _Answer([e.message() for e in errors], req.warnings)


@pytest.mark.parametrize("index", range(len(METAS)))
@pytest.mark.parametrize("rule", ["subdomain", "label", "dns1035-label", "path-segment"])
@pytest.mark.parametrize("namespaced", [True, False])
def test_create_meta_validation_with_managed_fields_is_the_full_checks(
    index: int, rule: NameRule, namespaced: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = METAS[index]
    fast = _validate(SchemaAdmission(), meta, rule, namespaced)
    monkeypatch.setattr(validation, "_create_meta_ok", lambda *_: False)
    full = _validate(Admission(), meta, rule, namespaced)
    assert fast == full


def test_the_hostile_metas_do_reach_errors_and_the_shortcut() -> None:
    """The table is not vacuous: clean metas pass, and entries alone can fail."""
    assert _validate(SchemaAdmission(), METAS[0], "subdomain", True).errors == []
    bad_entry = _validate(SchemaAdmission(), METAS[2], "subdomain", True).errors
    assert bad_entry == [
        'metadata.managedFields[0].operation: Invalid value: "Patch": must be `Apply` or `Update`'
    ]
    mixed = _validate(SchemaAdmission(), METAS[8], "subdomain", True).errors
    assert len(mixed) == 2 and mixed[-1].startswith("metadata.managedFields[0].operation")


def test_updates_and_bodies_without_metadata_take_the_general_path() -> None:
    req = AdmissionRequest(
        operation="UPDATE",
        rtype=_Kind(_strategy("subdomain"), True),  # type: ignore[arg-type]
        version="v1",
        obj={"metadata": _meta(resourceVersion="2")},
        old={"metadata": _meta(resourceVersion="1", name="other")},
        field_validation="Warn",
    )
    full = copy.deepcopy(req)
    assert [e.message() for e in SchemaAdmission().validate_meta(req)] == [
        e.message() for e in Admission().validate_meta(full)
    ]
    assert req.warnings == full.warnings
    # no metadata at all (a body's non-object metadata is refused before admission)
    assert _validate(SchemaAdmission(), None, "subdomain", True) == _validate(
        Admission(), None, "subdomain", True
    )


# -- the typed ObjectMeta check of a body -------------------------------------------------

TYPED_METAS: list[dict[str, Any]] = [
    {},
    {"name": "a", "generateName": "b", "labels": {"a": "b", "n": None}},
    {"name": None, "labels": None, "annotations": None, "finalizers": None},
    {"name": 1},
    {"uid": True},
    {"resourceVersion": 5},
    {"creationTimestamp": {"a": 1}},
    {"deletionTimestamp": []},
    {"namespace": 1.5},
    {"labels": "x"},
    {"labels": {"a": 1}},
    {"labels": {"a": True}},
    {"annotations": []},
    {"annotations": {"a": {"b": "c"}}},
    {"finalizers": "x"},
    {"finalizers": ["a", None, 3]},
    {"ownerReferences": {}},
    {"ownerReferences": [None, "x"]},
    {"ownerReferences": [{"name": "a"}]},
    # several errors: the first in the full check's order wins
    {"labels": {"a": 1}, "name": 2},
    {"ownerReferences": 1, "finalizers": 2, "annotations": 3, "labels": 4},
    {"finalizers": [1], "annotations": {"a": 2}},
    # fields the check does not look at
    {"generation": "one", "managedFields": "x", "unknown": object()},
]


@pytest.mark.parametrize("index", range(len(TYPED_METAS)))
def test_meta_type_shortcut_is_the_full_check(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    meta = TYPED_METAS[index]
    fast = rest._meta_type_error(meta)
    monkeypatch.setattr(rest, "_meta_types_ok", lambda meta: False)
    full = rest._meta_type_error(meta)
    assert fast == full
    if rest._meta_types_ok(meta):
        assert full is None


def test_meta_type_shortcut_refuses_what_the_check_refuses() -> None:
    assert rest._meta_types_ok(TYPED_METAS[1])
    assert rest._meta_type_error({"labels": {"a": 1}}) == (
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels "
        "of type string"
    )
