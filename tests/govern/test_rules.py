"""Every lint rule: fixtures that trigger it and near-misses that must not."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubewerk.govern.findings import Severity
from kubewerk.govern.rules import cel_reads, credential_name

from .helpers import GOOD_STATUS, crd, lint

S = {"type": "string"}


def test_clean_crd_has_no_findings() -> None:
    data = crd({"replicas": {"type": "integer", "maximum": 100}}, status_props=GOOD_STATUS)
    assert lint(data) == []


# --- plaintext-credential ---------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "adminPassword",
        "passwd",
        "token",
        "bearerToken",
        "apiKey",
        "privateKey",
        "clientSecret",
        "credentials",
        "secretAccessKey",
        "passphrase",
        "tlsBootstrapToken",
        "api_key",
    ],
)
def test_credential_names_trigger(name: str) -> None:
    found = lint(crd({"auth": {"type": "object", "properties": {name: S}}}), "plaintext-credential")
    assert len(found) == 1
    f = found[0]
    assert f.field == f"spec.auth.{name}"
    assert f.severity is Severity.ERROR
    assert f.location[-2:] == ("properties", name)
    assert "Secret" in f.message


@pytest.mark.parametrize(
    "name",
    [
        "tokenSecretName",
        "passwordSecretRef",
        "passwordFile",
        "tokenUrl",
        "tokenEndpoint",
        "secretKey",
        "accessKey",
        "publicKey",
        "secret",
        "tokenType",
        "key",
        "topologyKey",
        "bearerTokenFile",
        "passwordPolicy",
        "tokenTTL",
        "credentialsName",
        "rekorPubKey",
    ],
)
def test_reference_and_unrelated_names_do_not_trigger(name: str) -> None:
    assert not credential_name(name)
    assert lint(crd({name: S}), "plaintext-credential") == []


def test_secret_ref_objects_are_references() -> None:
    props = {
        # an object holding a reference: never a string credential
        "passwordSecretRef": {"type": "object", "properties": {"name": S, "key": S}},
        # a Strimzi-style holder: the child named "password" is the key inside the Secret
        "passwordSecret": {"type": "object", "properties": {"secretName": S, "password": S}},
        # described as a reference
        "token": {"type": "string", "description": "Name of the Secret that holds the token."},
        # not a string
        "apiKey": {"type": "object", "properties": {"valueFrom": {"type": "object"}}},
    }
    assert lint(crd(props), "plaintext-credential") == []


def test_credential_in_array_items_and_status() -> None:
    props = {
        "users": {
            "type": "array",
            "x-kubernetes-list-type": "atomic",
            "items": {"type": "object", "properties": {"password": S}},
        }
    }
    found = lint(crd(props, status_props={**GOOD_STATUS, "token": S}), "plaintext-credential")
    assert sorted(f.field for f in found) == ["spec.users[*].password", "status.token"]


# --- logic-in-spec ------------------------------------------------------------------


def test_logic_in_spec_triggers() -> None:
    props = {
        "retryPolicy": S,
        "rolloutStrategy": S,
        "script": S,
        "matchExpression": S,
        "condition": S,
    }
    found = lint(crd(props), "logic-in-spec")
    assert sorted(f.field for f in found) == [
        "spec.condition",
        "spec.matchExpression",
        "spec.retryPolicy",
        "spec.rolloutStrategy",
        "spec.script",
    ]
    assert all(f.severity is Severity.WARNING for f in found)
    by = {f.field: f.message for f in found}
    assert "enum" in by["spec.retryPolicy"]
    assert "structured fields" in by["spec.script"]


def test_logic_in_spec_near_misses() -> None:
    props = {
        "retryPolicy": {"type": "string", "enum": ["Always", "Never"]},
        "strategy": {"type": "string", "pattern": "^(Recreate|Rolling)$"},
        "expression": {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "size(self) < 100"}],
        },
        "imagePullPolicy": S,  # Kubernetes' own enum field, embedded from PodSpec
        "policy": {"type": "string", "description": "Specifies the name of the policy."},
        "policyRef": S,
        "conditionType": S,
        "scriptTimeout": {"type": "integer"},
    }
    assert lint(crd(props), "logic-in-spec") == []
    # status strings are reports, not behaviour
    assert lint(crd({}, status_props={**GOOD_STATUS, "lastPolicy": S}), "logic-in-spec") == []


# --- status-without-subresource ----------------------------------------------------


def test_status_without_subresource() -> None:
    found = lint(crd({}, status_props=GOOD_STATUS, subresources={}), "status-without-subresource")
    assert len(found) == 1 and found[0].field == "status"
    assert found[0].location[-2:] == ("properties", "status")
    assert lint(crd({}, status_props=GOOD_STATUS), "status-without-subresource") == []
    assert lint(crd({}), "status-without-subresource") == []


# --- status-as-cache ----------------------------------------------------------------


def test_status_without_conditions_or_observed_generation() -> None:
    found = lint(crd({}, status_props={"phase": S}), "status-as-cache")
    assert [f.field for f in found] == ["status"]
    assert (
        lint(crd({}, status_props={"observedGeneration": {"type": "integer"}}), "status-as-cache")
        == []
    )


def test_opaque_blobs_in_status() -> None:
    status = {
        **GOOD_STATUS,
        "lastApplied": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "cache": {
            "type": "object",
            "properties": {
                "a": {"type": "string", "format": "byte"},
                "b": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
            },
        },
        "summary": {"type": "object", "properties": {"ready": {"type": "integer"}}},
    }
    found = lint(crd({}, status_props=status), "status-as-cache")
    assert sorted(f.field for f in found) == ["status.cache.a", "status.lastApplied"]
    cache = next(f for f in found if f.field == "status.cache.a")
    assert "1 more" in cache.message and "status.cache.b" in cache.message
    # free-form data in spec is the preserve-unknown-fields rule's business, not this one's
    spec = {"values": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    assert lint(crd(spec, status_props=GOOD_STATUS), "status-as-cache") == []


# --- cross-namespace-reference -------------------------------------------------------


def test_cross_namespace_reference() -> None:
    ref = {"type": "object", "properties": {"name": S, "namespace": S}}
    selector = {"type": "object", "properties": {"name": S, "key": S, "namespace": S}}
    props = {"sourceRef": ref, "tokenSecret": copy.deepcopy(ref), "caProvider": selector}
    found = lint(crd(props), "cross-namespace-reference")
    assert sorted(f.field for f in found) == [
        "spec.caProvider.namespace",
        "spec.sourceRef.namespace",
        "spec.tokenSecret.namespace",
    ]
    assert found[0].location[-1] == "namespace"


def test_cross_namespace_near_misses() -> None:
    ref = {"type": "object", "properties": {"name": S, "namespace": S}}
    assert lint(crd({"sourceRef": ref}, scope="Cluster"), "cross-namespace-reference") == []
    props = {
        "sourceRef": {"type": "object", "properties": {"name": S, "kind": S}},
        # a matcher, not a reference the controller follows
        "target": {"type": "object", "properties": {"kind": S, "name": S, "namespace": S}},
        "template": {
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"name": S, "namespace": S}}
            },
        },
    }
    assert lint(crd(props), "cross-namespace-reference") == []


# --- version-discipline ----------------------------------------------------------------


def test_versions_with_different_schemas_and_no_conversion() -> None:
    data = crd({"a": {"type": "integer"}}, versions=("v1beta1", "v1"))
    data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "b"
    ] = S
    found = lint(data, "version-discipline")
    assert len(found) == 1 and found[0].severity is Severity.ERROR
    assert found[0].versions == ("v1beta1",)
    # identical schemas (descriptions aside) need no conversion
    same = crd({"a": {"type": "integer"}}, versions=("v1beta1", "v1"))
    same["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "old words"
    assert lint(same, "version-discipline") == []
    # a webhook converts
    data["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"]},
    }
    assert lint(data, "version-discipline") == []


def test_prerelease_storage_beside_ga_and_silent_deprecation() -> None:
    data = crd({}, versions=("v1", "v1beta1"))
    assert data["spec"]["versions"][1]["storage"] is True
    data["spec"]["versions"][1]["deprecated"] = True
    found = lint(data, "version-discipline")
    assert sorted((f.severity.label, f.versions) for f in found) == [
        ("info", ("v1beta1",)),
        ("warning", ("v1beta1",)),
    ]
    data["spec"]["versions"][1]["deprecationWarning"] = "use v1"
    data["spec"]["versions"][1]["storage"] = False
    data["spec"]["versions"][0]["storage"] = True
    assert lint(data, "version-discipline") == []


# --- preserve-unknown-fields ------------------------------------------------------------


@pytest.mark.parametrize("where", ["root", "spec", "status"])
def test_preserve_unknown_fields_on_root_spec_status(where: str) -> None:
    data = crd({"a": S}, status_props=GOOD_STATUS)
    schema = data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    target = schema if where == "root" else schema["properties"][where]
    target["x-kubernetes-preserve-unknown-fields"] = True
    found = lint(data, "preserve-unknown-fields")
    assert len(found) == 1
    assert found[0].location[-1] == "x-kubernetes-preserve-unknown-fields"


def test_preserve_unknown_fields_crd_level_and_nested_near_miss() -> None:
    data = crd({"values": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}})
    assert lint(data, "preserve-unknown-fields") == []
    data["spec"]["preserveUnknownFields"] = True
    found = lint(data, "preserve-unknown-fields")
    assert [f.location for f in found] == [("spec", "preserveUnknownFields")]


# --- conditions-shape --------------------------------------------------------------------


def test_conditions_shape() -> None:
    status = copy.deepcopy(GOOD_STATUS)
    del status["conditions"]["x-kubernetes-list-type"]
    del status["conditions"]["items"]["properties"]["reason"]
    found = lint(crd({}, status_props=status), "conditions-shape")
    assert len(found) == 1
    assert "map-list keyed by type" in found[0].message and "reason" in found[0].message
    # the list-type rule leaves conditions to this rule
    assert lint(crd({}, status_props=status), "list-type-missing") == []


def test_conditions_shape_near_miss() -> None:
    assert lint(crd({}, status_props=GOOD_STATUS), "conditions-shape") == []
    # "conditions" in spec is something else (e.g. a rule's conditions)
    spec = {"conditions": {"type": "array", "x-kubernetes-list-type": "atomic", "items": S}}
    assert lint(crd(spec, status_props=GOOD_STATUS), "conditions-shape") == []


# --- list-type-missing ---------------------------------------------------------------------


def test_list_type_missing() -> None:
    props = {
        "ports": {
            "type": "array",
            "items": {"type": "object", "properties": {"port": {"type": "integer"}}},
        },
        "hosts": {"type": "array", "items": S},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": S},
    }
    found = lint(crd(props), "list-type-missing")
    assert sorted(f.field for f in found) == ["spec.hosts", "spec.ports"]
    by = {f.field: f.message for f in found}
    assert "list-map-keys" in by["spec.ports"] and "set" in by["spec.hosts"]
    assert all(f.severity is Severity.INFO for f in found)


# --- no-floats -------------------------------------------------------------------------------


def test_no_floats() -> None:
    props = {
        "ratio": {"type": "number"},
        "count": {"type": "integer"},
        "cpu": {
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
        },
    }
    found = lint(crd(props), "no-floats")
    assert [f.field for f in found] == ["spec.ratio"]


# --- unbounded-cel-input -----------------------------------------------------------------------


def test_cel_reads() -> None:
    assert cel_reads("self.spec.name == 'a' && has(self.x.y)") == [["spec", "name"]]
    assert cel_reads("self.items.all(i, i.size() > 1)") == [["items"]]
    assert cel_reads("size(self) < 3 || self['a-b'] == oldSelf.c") == [["a-b"], ["c"]]
    assert cel_reads("self.x.size() > 0 && self.y.startsWith('a')") == [["y"]]
    assert cel_reads("self.my__dash__field == 'x'") == [["my-field"]]


def test_unbounded_cel_input() -> None:
    spec: dict[str, Any] = {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.name.startsWith('a')"},
            {"rule": "self.items.all(i, i != '')", "messageExpression": "'bad ' + self.label"},
            {"rule": "has(self.notes) || self.mode == 'x'"},
            {"rule": "self.bounded == 'x' && self.when != '' && self.kind == 'A'"},
        ],
        "properties": {
            "name": S,
            "items": {"type": "array", "x-kubernetes-list-type": "atomic", "items": S},
            "label": S,
            "notes": S,  # only tested with has(): not read
            "mode": {"type": "string", "enum": ["x", "y"]},
            "bounded": {"type": "string", "maxLength": 10},
            "when": {"type": "string", "format": "date-time"},
            "kind": {"type": "string", "maxLength": 3},
        },
    }
    data = crd(root={"type": "object", "properties": {"spec": spec}})
    found = lint(data, "unbounded-cel-input")
    assert sorted(f.field for f in found) == ["spec.items", "spec.label", "spec.name"]
    items = next(f for f in found if f.field == "spec.items")
    assert "maxItems" in items.message and dict(items.extra)["rule"] == "self.items.all(i, i != '')"


# --- deprecated-api ---------------------------------------------------------------------------


def test_deprecated_api_and_v1beta1_pruning_default() -> None:
    data = {
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "version": "v1",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "validation": {
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {"password": S}}},
                }
            },
        },
    }
    found = lint(data)
    rules = sorted(f.rule for f in found)
    assert rules == ["deprecated-api", "plaintext-credential", "preserve-unknown-fields"]
    pw = next(f for f in found if f.rule == "plaintext-credential")
    assert pw.location[:3] == ("spec", "validation", "openAPIV3Schema")
    assert pw.versions == ("v1",)
    assert lint(crd({}), "deprecated-api") == []


def test_identical_versions_are_reported_once() -> None:
    found = lint(crd({"password": S}, versions=("v1beta1", "v1")), "plaintext-credential")
    assert len(found) == 1 and found[0].versions == ("v1beta1", "v1")


def test_malformed_crds_do_not_crash() -> None:
    for data in (
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {},
        },
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "spec": {"versions": "x"},
        },
        crd(root={"type": "object", "properties": {"spec": {"properties": ["not", "a", "map"]}}}),
    ):
        lint(data)


def test_walk_is_pre_order_in_document_order() -> None:
    from kubewerk.govern.crd_view import walk

    leaf = {"type": "string"}
    schema = {
        "type": "object",
        "properties": {
            "b": {"type": "array", "items": {"type": "object", "properties": {"x": leaf}}},
            "a": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"y": leaf}},
            },
            "legacy": {
                "type": "array",
                "items": [{"properties": {"p": leaf}}, {"properties": {"q": leaf}}],
            },
        },
        "items": leaf,
        "additionalProperties": leaf,
    }
    assert [n.field_path() for n in walk(schema)] == [
        "",
        "b",
        "b[*]",
        "b[*].x",
        "a",
        "a[*]",
        "a[*].y",
        "legacy",
        "legacy[*]",
        "legacy[*].p",
        "legacy[*]",
        "legacy[*].q",
        "[*]",
        "[*]",
    ]
    assert [n.top for n in walk(schema)][1:8] == ["b", "b", "b", "a", "a", "a", "legacy"]
    assert [n.depth for n in walk(schema)][:4] == [0, 1, 2, 3]
