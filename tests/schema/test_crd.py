"""validate_crd: the corpus is accepted; invalid CRDs get the apiserver's messages."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.schema import SchemaError, compile_crd_version, validate_crd

from .conftest import messages

# Files in the corpus that a kube-apiserver refuses too: removed v1beta1 CRDs, and
# kustomize patches / test assertions / empty bases that are not whole CRDs.
REJECTED: dict[str, str] = {
    "argoproj+argo-cd/argoproj.io_clusterworkflowtemplates.yaml": "apiVersion: Unsupported value",
    "argoproj+argo-cd/argoproj.io_cronworkflows.yaml": "apiVersion: Unsupported value",
    "argoproj+argo-cd/argoproj.io_workfloweventbindings.yaml": "apiVersion: Unsupported value",
    "argoproj+argo-cd/argoproj.io_workflows.yaml": "apiVersion: Unsupported value",
    "argoproj+argo-cd/argoproj.io_workflowtemplates.yaml": "apiVersion: Unsupported value",
    "vmware-tanzu+velero/velero.io_resticrepositories.yaml": "apiVersion: Unsupported value",
    "kubernetes-sigs+cluster-api/nogroup_noplural.yaml": "spec.group: Required value",
    "kyverno+kyverno/nogroup_noplural.yaml": "spec.group: Required value",
    "open-policy-agent+gatekeeper/nogroup_noplural.yaml": "spec.group: Required value",
    "open-policy-agent+gatekeeper/_.yaml": "metadata.name: "
    "Required value: name or generateName is required",
    "open-policy-agent+gatekeeper/_assignimages.yaml": "spec.group: Required value",
    "open-policy-agent+gatekeeper/_assignmetadata.yaml": "spec.group: Required value",
    "open-policy-agent+gatekeeper/_assigns.yaml": "spec.group: Required value",
    "open-policy-agent+gatekeeper/_expansiontemplate.yaml": "spec.group: Required value",
    "open-policy-agent+gatekeeper/_modifysets.yaml": "spec.group: Required value",
}


def test_corpus_accepted_and_compiles(corpus_dir: Path) -> None:
    files = sorted((corpus_dir / "crds").glob("*/*.yaml"))
    assert len(files) >= 250
    compiled = 0
    for path in files:
        rel = f"{path.parent.name}/{path.name}"
        with open(path, encoding="utf-8") as fh:
            crd = yaml.load(fh, Loader=yaml.CSafeLoader)
        errs = messages(validate_crd(crd))
        if rel in REJECTED:
            assert any(m.startswith(REJECTED[rel]) for m in errs), (rel, errs)
            continue
        assert errs == [], (rel, errs[:5])
        for version in crd["spec"]["versions"]:
            cs = compile_crd_version(crd, version["name"])
            obj: dict[str, Any] = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}}
            cs.apply_defaults(obj)  # an object built from the defaults round-trips
            snapshot = copy.deepcopy(obj)
            assert cs.prune(obj) == []
            assert obj == snapshot
            cs.apply_defaults(obj)
            assert obj == snapshot
            compiled += 1
    assert compiled > 300


def _crd(**over: Any) -> dict[str, Any]:
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"size": {"type": "integer"}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    for path, value in over.items():
        node = crd
        keys = path.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        if isinstance(node, list):
            node[int(keys[-1])] = value
        else:
            node[keys[-1]] = value
    return crd


SCHEMA_PATH = "spec.validation.openAPIV3Schema"


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({}, []),
        (
            {"metadata__name": "gadgets.example.com"},
            [
                'metadata.name: Invalid value: "gadgets.example.com": '
                'must be spec.names.plural+"."+spec.group'
            ],
        ),
        (
            {"spec__group": "example"},
            [
                'metadata.name: Invalid value: "widgets.example.com": '
                'must be spec.names.plural+"."+spec.group',
                'spec.group: Invalid value: "example": should be a domain with at least one dot',
            ],
        ),
        (
            {"spec__scope": "Global"},
            ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'],
        ),
        (
            {"spec__names": {"plural": "widgets", "kind": "Widget", "listKind": "Widget"}},
            ['spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same'],
        ),
        (
            {"spec__versions__0__storage": False},
            [
                "spec.versions: Invalid value: "
                '[{"name":"v1","schema":{"openAPIV3Schema":{"properties":{"spec":'
                '{"properties":{"size":{"type":"integer"}},"type":"object"}},"type":"object"}},'
                '"served":true,"storage":false}]: '
                "must have exactly one version marked as storage version",
                "status.storedVersions: Invalid value: []: must have at least one stored version",
            ],
        ),
        (
            {"spec__versions__0__schema": None},
            ["spec.versions[0].schema.openAPIV3Schema: Required value"],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__properties__size": {
                    "description": "no type"
                }
            },
            [
                f"{SCHEMA_PATH}.properties[spec].properties[size].type: "
                "Required value: must not be empty for specified object fields"
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__properties__size": {
                    "type": "integer",
                    "default": "big",
                }
            },
            [
                (
                    f"{SCHEMA_PATH}.properties[spec].properties[size].default: Invalid value: "
                    f'"string": {SCHEMA_PATH[:0]}in body must be of type integer: "string"'
                ).replace(": in body", ":  in body")
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__properties__size": {
                    "type": "object",
                    "default": {"x": 1},
                }
            },
            [
                f"{SCHEMA_PATH}.properties[spec].properties[size].default: "
                'Invalid value: {"x":1}: must not have unknown fields'
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__properties__size": {
                    "type": "string",
                    "pattern": "(unclosed",
                }
            },
            [
                f"{SCHEMA_PATH}.properties[spec].properties[size].pattern: "
                'Invalid value: "(unclosed": must be a valid regular expression, '
                "but isn't: error parsing regexp: missing closing ): `(unclosed`"
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__properties__size": {
                    "type": "array",
                    "items": {"type": "string"},
                    "uniqueItems": True,
                }
            },
            [
                f"{SCHEMA_PATH}.properties[spec].properties[size].uniqueItems: Forbidden: "
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__properties__size": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                }
            },
            [
                f"{SCHEMA_PATH}.properties[spec].properties[size].items.properties[name].default: "
                "Required value: this property is in x-kubernetes-list-map-keys, so it must have "
                "a default or be a required property"
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__metadata": {
                    "type": "object",
                    "properties": {"labels": {"type": "object"}},
                }
            },
            [
                f"{SCHEMA_PATH}.properties[metadata]: Forbidden: must not specify anything "
                "other than name and generateName, but metadata is implicitly specified"
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__anyOf": [
                    {"type": "object"}
                ]
            },
            [
                f"{SCHEMA_PATH}.properties[spec].anyOf[0].type: "
                "Forbidden: must be empty to be structural"
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__"
                "x-kubernetes-validations": [{"rule": "self.size > 0", "reason": "Bad"}]
            },
            [
                f"{SCHEMA_PATH}.properties[spec].x-kubernetes-validations[0].reason: "
                'Unsupported value: "Bad": supported values: "FieldValueDuplicate", '
                '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"'
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__"
                "x-kubernetes-validations": [{"rule": "self.size +"}]
            },
            [
                SCHEMA_PATH
                + (
                    ".properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
                    '{"Rule":"self.size +","Message":"","MessageExpression":"","Reason":null,'
                    '"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: '
                    "<input>:1:12: Syntax error: mismatched input '<EOF>' expecting "
                    "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, "
                    "NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.size +\n | ...........^"
                )
            ],
        ),
        (
            {
                "spec__versions__0__schema__openAPIV3Schema__properties__spec__"
                "x-kubernetes-validations": [{"rule": "self.size", "optionalOldSelf": True}]
            },
            [
                f"{SCHEMA_PATH}.properties[spec].x-kubernetes-validations[0].optionalOldSelf: "
                "Invalid value: true: may not be set if oldSelf is not used in rule"
            ],
        ),
        (
            {
                "spec__versions__0__additionalPrinterColumns": [
                    {"name": "Size", "type": "int", "jsonPath": "spec.size"}
                ]
            },
            [
                "spec.additionalPrinterColumns[0].type: Invalid value: "
                '"int": must be one of boolean,date,integer,number,string',
                "spec.additionalPrinterColumns[0].JSONPath: Invalid value: "
                '"spec.size": must be a simple json path starting with .',
            ],
        ),
        (
            {
                "spec__versions__0__subresources": {
                    "scale": {
                        "specReplicasPath": ".status.replicas",
                        "statusReplicasPath": ".status.replicas",
                    }
                }
            },
            [
                "spec.subresources.scale.specReplicasPath: Invalid value: "
                '".status.replicas": should be a json path under .spec'
            ],
        ),
        (
            {"spec__versions__0__schema__openAPIV3Schema__nullable": True},
            [f"{SCHEMA_PATH}.nullable: Forbidden: nullable cannot be true at the root"],
        ),
        (
            {"spec__conversion": {"strategy": "Webhook"}},
            [
                "spec.conversion.webhookClientConfig: Required "
                "value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ],
        ),
    ],
)
def test_crd_messages(over: dict[str, Any], expected: list[str]) -> None:
    assert messages(validate_crd(_crd(**over))) == expected


def test_per_version_schemas_keep_version_paths() -> None:
    crd = _crd()
    v2 = copy.deepcopy(crd["spec"]["versions"][0])
    v2.update(name="v2", storage=False)
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] = {
        "type": "integer",
        "maximum": 5,
        "default": 9,
    }
    crd["spec"]["versions"].append(v2)
    assert messages(validate_crd(crd)) == [
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[size].default: "
        "Invalid value: 9:  in body should be less than or equal to 5"
    ]


def test_update_rules() -> None:
    old = _crd()
    old["status"] = {
        "storedVersions": ["v1"],
        "conditions": [{"type": "Established", "status": "True"}],
    }
    new = _crd(spec__scope="Cluster")
    new["spec"]["names"] = {"plural": "widgets", "kind": "Gadget"}
    assert messages(validate_crd(new, old)) == [
        'spec.scope: Invalid value: "Cluster": field is immutable',
        'spec.names.kind: Invalid value: "Gadget": field is immutable',
    ]
    renamed = _crd(spec__versions__0__name="v2")
    assert messages(validate_crd(renamed, old)) == [
        'status.storedVersions[0]: Invalid value: "v1": missing from spec.versions; v1 was '
        "previously a storage version, and must remain in spec.versions until a storage migration "
        "ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
    ]


def test_v1beta1_and_compile_errors() -> None:
    crd = _crd(apiVersion="apiextensions.k8s.io/v1beta1")
    assert messages(validate_crd(crd)) == [
        'apiVersion: Unsupported value: "apiextensions.k8s.io/v1beta1": '
        'supported values: "apiextensions.k8s.io/v1"'
    ]
    with pytest.raises(SchemaError):
        compile_crd_version(_crd(), "v9")


def test_compile_cache_per_generation() -> None:
    crd = _crd()
    crd["metadata"].update(uid="u-1", generation=1)
    a = compile_crd_version(crd, "v1")
    assert compile_crd_version(crd, "v1") is a
    crd2 = copy.deepcopy(crd)
    crd2["metadata"]["generation"] = 2
    assert compile_crd_version(crd2, "v1") is not a


def test_status_subresource_restricts_root() -> None:
    crd = _crd(spec__versions__0__subresources={"status": {}})
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["anyOf"] = [{"required": ["spec"]}]
    got = messages(validate_crd(crd))
    assert len(got) == 1
    assert got[0].startswith("spec.validation.openAPIV3Schema: Invalid value: ")
    assert got[0].endswith(
        ": only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum "
        "MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items "
        "Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed "
        "at the root of the schema if the status subresource is enabled"
    )
