"""Compat checks: a trigger and a near-miss for each; the corpus history end to end."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubewerk.govern.compat import CHECKS, compare_documents
from kubewerk.govern.findings import Finding
from kubewerk.govern.loader import parse, read_file

from .helpers import GOOD_STATUS, compat, crd

S = {"type": "string"}
INT = {"type": "integer"}


def spec_of(data: dict[str, Any], version: int = 0) -> dict[str, Any]:
    props: dict[str, Any] = data["spec"]["versions"][version]["schema"]["openAPIV3Schema"][
        "properties"
    ]
    return props["spec"]


def changed(
    old_props: dict[str, Any], mutate: Callable[[dict[str, Any]], None], check: str
) -> list[tuple[str, str]]:
    old = crd(copy.deepcopy(old_props), status_props=GOOD_STATUS)
    new = copy.deepcopy(old)
    mutate(new)
    return [(f.severity.label, f.field) for f in compat(old, new, check)]


def test_identical_crds_have_no_changes() -> None:
    data = crd({"a": S}, status_props=GOOD_STATUS)
    assert compat(data, copy.deepcopy(data)) == []


def test_description_only_change_is_silent() -> None:
    old = crd({"a": S})
    new = copy.deepcopy(old)
    spec_of(new)["properties"]["a"]["description"] = "now documented"
    assert compat(old, new) == []


def test_field_removed_and_added() -> None:
    def mutate(d: dict[str, Any]) -> None:
        props = spec_of(d)["properties"]
        del props["a"]
        props["c"] = S

    assert changed({"a": S, "b": S}, mutate, "field-removed") == [("error", "spec.a")]
    assert changed({"a": S, "b": S}, mutate, "field-added") == [("info", "spec.c")]

    def preserve(d: dict[str, Any]) -> None:
        spec_of(d)["x-kubernetes-preserve-unknown-fields"] = True
        del spec_of(d)["properties"]["a"]

    assert changed({"a": S}, preserve, "field-removed") == [("warning", "spec.a")]


def test_type_changed() -> None:
    def to_string(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["n"] = S

    def to_number(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["n"] = {"type": "number"}

    assert changed({"n": INT}, to_string, "type-changed") == [("error", "spec.n")]
    assert changed({"n": INT}, to_number, "type-changed") == [("warning", "spec.n")]


def test_required_added() -> None:
    def require(d: dict[str, Any]) -> None:
        spec_of(d)["required"] = ["a"]

    def require_with_default(d: dict[str, Any]) -> None:
        spec_of(d)["required"] = ["a"]
        spec_of(d)["properties"]["a"]["default"] = "x"

    assert changed({"a": S}, require, "required-added") == [("error", "spec.a")]
    assert changed({"a": S}, require_with_default, "required-added") == [("warning", "spec.a")]

    # a new optional object with required children is not a new requirement
    def new_object(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["tls"] = {
            "type": "object",
            "required": ["cert"],
            "properties": {"cert": S},
        }

    assert changed({"a": S}, new_object, "required-added") == []


def test_enum_changes() -> None:
    def add_enum(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["m"]["enum"] = ["a", "b"]

    def remove_value(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["m"]["enum"] = ["a"]

    def add_value(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["m"]["enum"] = ["a", "b", "c"]

    assert changed({"m": S}, add_enum, "enum-changed") == [("error", "spec.m")]
    enum = {"m": {"type": "string", "enum": ["a", "b"]}}
    assert changed(enum, remove_value, "enum-changed") == [("error", "spec.m")]
    assert changed(enum, add_value, "enum-changed") == [("info", "spec.m")]


@pytest.mark.parametrize(
    ("old", "new", "severity"),
    [
        ({}, {"maximum": 10}, "error"),
        ({"maximum": 10}, {"maximum": 5}, "error"),
        ({"maximum": 10}, {"maximum": 20}, "info"),
        ({"minimum": 1}, {"minimum": 2}, "error"),
        ({"minimum": 2}, {"minimum": 1}, "info"),
        ({"maxLength": 10}, {}, "info"),
        ({"maximum": 10}, {"maximum": 10, "exclusiveMaximum": True}, "error"),
    ],
)
def test_bounds(old: dict[str, Any], new: dict[str, Any], severity: str) -> None:
    def mutate(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["n"] = {"type": "integer", **new}

    assert changed({"n": {"type": "integer", **old}}, mutate, "bounds-changed") == [
        (severity, "spec.n")
    ]


def test_pattern_format_default_nullable() -> None:
    def pattern(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["s"]["pattern"] = "^a"

    assert changed({"s": S}, pattern, "pattern-changed") == [("error", "spec.s")]
    assert changed({"s": {"type": "string", "pattern": "^b"}}, pattern, "pattern-changed") == [
        ("warning", "spec.s")
    ]

    def fmt(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["s"]["format"] = "uri"

    assert changed({"s": S}, fmt, "format-changed") == [("warning", "spec.s")]

    def default(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["s"]["default"] = "b"

    assert changed({"s": S}, default, "default-changed") == [("warning", "spec.s")]
    assert changed({"s": {"type": "string", "default": "a"}}, default, "default-changed") == [
        ("warning", "spec.s")
    ]
    assert changed({"s": {"type": "string", "default": "b"}}, default, "default-changed") == []

    def not_nullable(d: dict[str, Any]) -> None:
        del spec_of(d)["properties"]["s"]["nullable"]

    assert changed(
        {"s": {"type": "string", "nullable": True}}, not_nullable, "nullable-removed"
    ) == [("error", "spec.s")]


def test_list_and_map_types() -> None:
    lst = {"l": {"type": "array", "items": {"type": "object", "properties": {"name": S}}}}

    def to_map(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["l"].update(
            {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
        )

    assert changed(lst, to_map, "list-type-changed") == [("error", "spec.l")]

    def explicit_atomic(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["l"]["x-kubernetes-list-type"] = "atomic"

    assert changed(lst, explicit_atomic, "list-type-changed") == []  # absent means atomic

    mapped = copy.deepcopy(lst)
    mapped["l"].update({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})

    def keys(d: dict[str, Any]) -> None:
        spec_of(d)["properties"]["l"]["x-kubernetes-list-map-keys"] = ["name", "port"]

    assert changed(mapped, keys, "list-type-changed") == [("error", "spec.l")]


def test_preserve_unknown_fields_removed() -> None:
    def mutate(d: dict[str, Any]) -> None:
        del spec_of(d)["properties"]["v"]["x-kubernetes-preserve-unknown-fields"]

    assert changed(
        {"v": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        mutate,
        "preserve-unknown-fields-removed",
    ) == [("error", "spec.v")]


def test_cel_rules() -> None:
    def add(d: dict[str, Any]) -> None:
        spec_of(d)["x-kubernetes-validations"] = [
            {"rule": "self.a == oldSelf.a", "message": "immutable"}
        ]

    old = crd({"a": S})
    new = copy.deepcopy(old)
    add(new)
    found = compat(old, new, "cel-rule-changed")
    assert len(found) == 1 and found[0].severity.label == "warning"
    assert "self.a == oldSelf.a" in found[0].message and "transition" in found[0].message
    assert compat(new, old, "cel-rule-removed")[0].severity.label == "info"
    # a changed message alone is not a rule change
    again = copy.deepcopy(new)
    spec_of(again)["x-kubernetes-validations"][0]["message"] = "a is immutable"
    assert compat(new, again) == []


def test_crd_level_changes() -> None:
    old = crd({"a": S}, status_props=GOOD_STATUS, versions=("v1beta1", "v1"))
    old["spec"]["names"]["shortNames"] = ["wd"]
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    new["spec"]["names"]["kind"] = "Gadget"
    new["spec"]["names"]["shortNames"] = []
    new["spec"]["versions"][0]["served"] = False
    del new["spec"]["versions"][1]["subresources"]
    rules = sorted((f.rule, f.severity.label) for f in compat(old, new))
    assert rules == [
        ("names-changed", "error"),
        ("names-changed", "warning"),
        ("scope-changed", "error"),
        ("subresource-changed", "error"),
        ("version-removed", "error"),
    ]


def test_versions_added_removed_and_storage() -> None:
    old = crd({"a": S}, versions=("v1beta1",))
    new = crd({"a": S, "b": S}, versions=("v1",))
    found = sorted((f.rule, f.severity.label) for f in compat(old, new))
    assert found == [
        ("storage-version-changed", "error"),
        ("version-added", "info"),
        ("version-removed", "error"),
    ]
    # with a conversion webhook the storage switch is safe (info)
    new["spec"]["conversion"] = {"strategy": "Webhook"}
    assert ("storage-version-changed", "info") in [
        (f.rule, f.severity.label) for f in compat(old, new)
    ]
    # an unserved, never-stored version can go
    old2 = crd({"a": S}, versions=("v1alpha1", "v1"))
    old2["spec"]["versions"][0]["served"] = False
    new2 = crd({"a": S}, versions=("v1",))
    assert [(f.rule, f.severity.label) for f in compat(old2, new2)] == [("version-removed", "info")]


def test_crds_matched_by_name() -> None:
    a, b = crd({}, name="as.example.com"), crd({}, name="bs.example.com")
    c = crd({}, name="cs.example.com")
    from .helpers import doc

    found = compare_documents([doc(a), doc(b)], [doc(b), doc(c)]).findings
    assert sorted((f.rule, f.crd) for f in found) == [
        ("crd-added", "cs.example.com"),
        ("crd-removed", "as.example.com"),
    ]


# --- the corpus history ------------------------------------------------------------


def history_pairs(corpus: Path) -> list[tuple[Path, Path]]:
    pairs: list[tuple[Path, Path]] = []
    for d in sorted((corpus / "crd-history").glob("*/*")):
        files = sorted(d.glob("*.yaml"))
        pairs.extend(itertools.pairwise(files))
    return pairs


@pytest.fixture(scope="module")
def history(corpus_dir: Path) -> dict[tuple[str, str], list[Finding]]:
    """Compat over every consecutive pair of the history (each file parsed once)."""
    from kubewerk.govern.loader import gc_paused

    parsed: dict[Path, Any] = {}
    out: dict[tuple[str, str], list[Finding]] = {}
    with gc_paused():
        for old, new in history_pairs(corpus_dir):
            for p in (old, new):
                if p not in parsed:
                    parsed[p] = parse(read_file(p))
            rel = old.relative_to(corpus_dir / "crd-history")
            out[(str(rel), new.name)] = compare_documents(parsed.pop(old), parsed[new]).findings
    return out


def test_every_history_pair_runs(history: dict[tuple[str, str], list[Finding]]) -> None:
    assert len(history) == 656
    counts: dict[str, int] = {}
    for findings in history.values():
        for f in findings:
            assert f.rule in CHECKS
            assert f.line is not None and f.line > 0
            counts[f.rule] = counts.get(f.rule, 0) + 1
    # pinned so that a change in behaviour shows up here
    assert counts == {
        "bounds-changed": 49,
        "cel-rule-changed": 132,
        "cel-rule-removed": 122,
        "default-changed": 26,
        "enum-changed": 29,
        "field-added": 407,
        "field-removed": 15,
        "format-changed": 4,
        "list-type-changed": 15,
        "names-changed": 1,
        "pattern-changed": 11,
        "preserve-unknown-fields-removed": 8,
        "required-added": 11,
        "storage-version-changed": 26,
        "subresource-changed": 5,
        "type-changed": 1,
        "version-added": 16,
        "version-removed": 21,
    }


# (pair, expected {(check, severity, field or version)}) — each checked by hand against
# a diff of the two files
HAND_CHECKED: list[tuple[str, str, set[tuple[str, str, str]]]] = [
    # Argo CD dropped status.summary.isAppOfApps (a 3-line deletion in the schema)
    (
        "argoproj+argo-cd/argoproj.io_applications/2026-06-10_566c6225.yaml",
        "2026-06-10_86936e24.yaml",
        {("field-removed", "error", "status.summary.isAppOfApps")},
    ),
    # AppProject: description got maxLength: 255; syncWindows gained a description
    (
        "argoproj+argo-cd/argoproj.io_appprojects/2025-04-07_76d1772b.yaml",
        "2025-11-28_f68f0ec1.yaml",
        {
            ("bounds-changed", "error", "spec.description"),
            ("field-added", "info", "spec.syncWindows[*].description"),
        },
    ),
    # cert-manager reverted renewalInformationSource on ClusterIssuer
    (
        "cert-manager+cert-manager/cert-manager.io_clusterissuers/2026-08-05_932a47ac.yaml",
        "2026-08-09_ce16c202.yaml",
        {("field-removed", "error", "spec.acme.renewalInformationSource")},
    ),
    # a new PKCS#12 profile value
    (
        "cert-manager+cert-manager/cert-manager.io_certificates/2026-05-11_f60433a5.yaml",
        "2026-06-03_7dc980ba.yaml",
        {("enum-changed", "info", "spec.keystores.pkcs12.profile")},
    ),
    # Crossplane renamed its only version v2alpha1 to v1alpha1
    (
        "crossplane+crossplane/apiextensions.crossplane.io_managedresourceactivationpolicies/2025-07-24_1fe013ec.yaml",
        "2025-07-30_1885f2fa.yaml",
        {
            ("version-removed", "error", "v2alpha1"),
            ("storage-version-changed", "info", "v1alpha1"),
            ("version-added", "info", "v1alpha1"),
        },
    ),
    # Tekton dropped two short names
    (
        "tektoncd+pipeline/resolution.tekton.dev_resolutionrequests/2025-03-11_c82e6676.yaml",
        "9999-head_3ee1745a.yaml",
        {("names-changed", "warning", "")},
    ),  # a CRD-level change: no field, no version
    # Tekton CustomRun went from an opaque root to a declared schema
    (
        "tektoncd+pipeline/tekton.dev_customruns/2024-03-11_a4072c52.yaml",
        "2025-03-11_c82e6676.yaml",
        {
            ("preserve-unknown-fields-removed", "error", "v1beta1"),
            ("field-added", "info", "apiVersion"),
            ("field-added", "info", "kind"),
            ("field-added", "info", "metadata"),
            ("field-added", "info", "spec"),
            ("field-added", "info", "status"),
        },
    ),
    # Velero removed the status subresource of DeleteBackupRequest
    (
        "vmware-tanzu+velero/velero.io_deletebackuprequests/2022-04-27_74fd158a.yaml",
        "2022-06-09_34087fe5.yaml",
        {("subresource-changed", "error", "v1")},
    ),
    # Velero renamed status.recentMaintenanceStatus to recentMaintenance
    (
        "vmware-tanzu+velero/velero.io_backuprepositories/2024-12-19_3b2c50b4.yaml",
        "2024-12-23_77f1141e.yaml",
        {
            ("field-removed", "error", "status.recentMaintenanceStatus"),
            ("field-added", "info", "status.recentMaintenance"),
        },
    ),
    # controller-gen 0.12 marked the credential selector atomic
    (
        "vmware-tanzu+velero/velero.io_volumesnapshotlocations/2022-09-08_596114b4.yaml",
        "2023-05-15_307b82a2.yaml",
        {("list-type-changed", "warning", "spec.credential")},
    ),
    # External Secrets dropped the default of valuesDecodingStrategy
    (
        "external-secrets+external-secrets/external-secrets.io_pushsecrets/2026-07-30_4bf0eb6b.yaml",
        "9999-head_cc5bfbc2.yaml",
        {("default-changed", "warning", "spec.template.templateFrom[*].valuesDecodingStrategy")},
    ),
    # Strimzi removed v1alpha1/v1beta1/v1beta2 of KafkaUser, leaving v1 (storage moved from v1beta2)
    (
        "strimzi+strimzi-kafka-operator/kafka.strimzi.io_kafkausers/2026-01-18_783c992d.yaml",
        "2026-04-28_c70a0959.yaml",
        {
            ("version-removed", "error", "v1beta2"),
            ("version-removed", "error", "v1beta1"),
            ("version-removed", "error", "v1alpha1"),
            ("storage-version-changed", "error", "v1"),
        },
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"), HAND_CHECKED, ids=[h[0].split("/")[1] for h in HAND_CHECKED]
)
def test_hand_checked_pairs(
    history: dict[tuple[str, str], list[Finding]],
    old: str,
    new: str,
    expected: set[tuple[str, str, str]],
) -> None:
    found = {(f.rule, f.severity.label, f.field or f.version) for f in history[(old, new)]}
    assert found == expected
