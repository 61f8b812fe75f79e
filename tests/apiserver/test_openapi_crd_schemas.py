"""A custom resource's schemas in ``/openapi/v3`` and ``/openapi/v2`` against what
kube-apiserver 1.33 publishes for the same CRD.

Each expected value below was worked out by hand from kube's code, not from kubewerk's:
apiextensions-apiserver ``pkg/controller/openapi/builder/builder.go`` (``buildKubeNative``,
``addEmbeddedProperties``, ``buildListSchema``), ``pkg/apiserver/schema`` (``NewStructural``,
``Unfold``, ``ToKubeOpenAPI``: what a structural schema keeps and writes),
``pkg/controller/openapi/v2/conversion.go`` (``ToStructuralOpenAPIV2``), the CRD
controllers (``handler.PruneDefaults`` for v2 only; the builder options of both) and
kube-openapi (``builder3/util.WrapRefs`` for v3). Real CRDs come from tests/data/crd_openapi
(copied from the corpus, see its README); the table of small cases is a CRD of our own.
No HTTP: the documents are built from a registry, once for the module.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver import openapi, openapi_v2
from kubewerk.apiserver.kinds.custom import crd_to_type
from kubewerk.apiserver.registry import Registry

DATA = Path(__file__).resolve().parents[1] / "data" / "crd_openapi"
REAL_CRDS = (
    "velero.io_deletebackuprequests.yaml",
    "networking.istio.io_proxyconfigs.yaml",
    "ops.crossplane.io_operations.yaml",
    "acme.cert-manager.io_orders.yaml",
)

CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
META_DESCRIPTION = f"Standard object's metadata. More info: {CONVENTIONS}#metadata"
V3_META = {
    "allOf": [{"$ref": "#/components/schemas/" + OBJECT_META}],
    "description": META_DESCRIPTION,
}
V2_META = {"$ref": "#/definitions/" + OBJECT_META, "description": META_DESCRIPTION}
# TypeMeta's, at the root of every kind and list kind
ROOT_API_VERSION = {
    "description": "APIVersion defines the versioned schema of this representation of an "
    "object. Servers should convert recognized schemas to the latest internal value, and may "
    f"reject unrecognized values. More info: {CONVENTIONS}#resources",
    "type": "string",
}
ROOT_KIND = {
    "description": "Kind is a string value representing the REST resource this object "
    "represents. Servers may infer this from the endpoint the client submits requests to. "
    f"Cannot be updated. In CamelCase. More info: {CONVENTIONS}#types-kinds",
    "type": "string",
}
# the builder's own, in an x-kubernetes-embedded-resource node
EMBEDDED_API_VERSION = {
    "description": "apiVersion defines the versioned schema of this representation of an "
    f"object. More info: {CONVENTIONS}#resources",
    "type": "string",
}
EMBEDDED_KIND = {
    "description": "kind is a string value representing the type of this object. In "
    f"CamelCase. More info: {CONVENTIONS}#types-kinds",
    "type": "string",
}
EMB = "x-kubernetes-embedded-resource"
KEEP = "x-kubernetes-preserve-unknown-fields"
IOS = "x-kubernetes-int-or-string"
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def _embedded(v2: bool) -> dict[str, Any]:
    return {
        "apiVersion": EMBEDDED_API_VERSION,
        "kind": EMBEDDED_KIND,
        "metadata": V2_META if v2 else V3_META,
    }


# name -> (the node in the CRD, kube's v3 node, kube's v2 node)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "embedded": (
        {
            "type": "object",
            EMB: True,
            "required": ["spec"],
            "properties": {"spec": {"type": "object", KEEP: True}},
        },
        {
            "type": "object",
            EMB: True,
            "required": ["spec", "kind", "apiVersion"],
            "properties": {"spec": {"type": "object", KEEP: True}, **_embedded(False)},
        },
        {
            "type": "object",
            EMB: True,
            "required": ["spec", "kind", "apiVersion"],
            # an object keeping unknown fields loses its type in v2
            "properties": {"spec": {KEEP: True}, **_embedded(True)},
        },
    ),
    "embeddedKeepingFields": (
        {"type": "object", "description": "any object", EMB: True, KEEP: True},
        {
            "type": "object",
            "description": "any object",
            EMB: True,
            KEEP: True,
            "properties": _embedded(False),
            "required": ["kind", "apiVersion"],
        },
        # v2: no properties (kubectl would refuse the unknown fields), not even the type
        {"description": "any object", EMB: True, KEEP: True},
    ),
    "embeddedNullable": (
        {
            "type": "object",
            "nullable": True,
            EMB: True,
            "required": ["kind"],
            "properties": {"a": {"type": "string"}},
        },
        {
            "type": "object",
            "nullable": True,
            EMB: True,
            "required": ["kind", "apiVersion"],
            "properties": {"a": {"type": "string"}, **_embedded(False)},
        },
        # nullable: type and properties go, then the embedded fields are added
        {EMB: True, "required": ["kind", "apiVersion"], "properties": _embedded(True)},
    ),
    "embeddedItems": (
        {"type": "array", "items": {"type": "object", EMB: True, KEEP: True}},
        {
            "type": "array",
            "items": {
                "type": "object",
                EMB: True,
                KEEP: True,
                "properties": _embedded(False),
                "required": ["kind", "apiVersion"],
            },
        },
        {"type": "array", "items": {EMB: True, KEEP: True}},
    ),
    "embeddedValues": (
        {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                EMB: True,
                "properties": {"data": {"type": "string"}},
            },
        },
        {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                EMB: True,
                "properties": {"data": {"type": "string"}, **_embedded(False)},
                "required": ["kind", "apiVersion"],
            },
        },
        {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                EMB: True,
                "properties": {"data": {"type": "string"}, **_embedded(True)},
                "required": ["kind", "apiVersion"],
            },
        },
    ),
    "zeroValues": (
        {
            "type": "string",
            "description": "",
            "title": "",
            "format": "",
            "pattern": "",
            "nullable": False,
            EMB: False,
            "example": "a",
            "externalDocs": {"url": "https://example.com/docs"},
            "enum": ["a", "b"],
            "maxLength": 0,
            "default": "a",
        },
        # Go's omitempty, and no example or externalDocs in 1.33's structural schema
        {"type": "string", "enum": ["a", "b"], "maxLength": 0, "default": "a"},
        {"type": "string", "enum": ["a", "b"], "maxLength": 0},
    ),
    "nullableParent": (
        {
            "type": "object",
            "nullable": True,
            "required": ["a"],
            "properties": {"a": {"type": "string", "nullable": True}},
        },
        {
            "type": "object",
            "nullable": True,
            "required": ["a"],
            "properties": {"a": {"type": "string", "nullable": True}},
        },
        # its properties are gone before kube's filter reads them: required stays
        {"required": ["a"]},
    ),
    "requiredOfNullable": (
        {
            "type": "object",
            "required": ["a", "b"],
            "properties": {"a": {"type": "string", "nullable": True}, "b": {"type": "string"}},
        },
        {
            "type": "object",
            "required": ["a", "b"],
            "properties": {"a": {"type": "string", "nullable": True}, "b": {"type": "string"}},
        },
        {"type": "object", "required": ["b"], "properties": {"a": {}, "b": {"type": "string"}}},
    ),
    "keepsFields": (
        {"type": "object", KEEP: True, "properties": {"x": {"type": "string"}}},
        {"type": "object", KEEP: True, "properties": {"x": {"type": "string"}}},
        {KEEP: True},
    ),
    "keepsFieldsArray": (
        {"type": "array", KEEP: True, "items": {"type": "string"}},
        {"type": "array", KEEP: True, "items": {"type": "string"}},
        # items go, then an array without items loses its type
        {KEEP: True},
    ),
    "intOrString": (
        {IOS: True},
        {IOS: True, "anyOf": INT_OR_STRING},
        {IOS: True},
    ),
    "intOrStringBounded": (
        {IOS: True, "anyOf": [{"maximum": 10}]},
        {IOS: True, "anyOf": [{"maximum": 10}], "allOf": [{"anyOf": INT_OR_STRING}]},
        {IOS: True},
    ),
    "junctors": (
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "oneOf": [{"required": ["a"], "additionalProperties": {"maxLength": 3}}],
            "not": {"required": ["b"]},
        },
        # a junctor's additionalProperties is not written out (NestedValueValidation)
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "oneOf": [{"required": ["a"]}],
            "not": {"required": ["b"]},
        },
        {"type": "object", "properties": {"a": {"type": "string"}}},
    ),
    "rules": (
        {
            "type": "string",
            "x-kubernetes-validations": [
                {
                    "rule": "self != 'x'",
                    "message": "",
                    "fieldPath": "",
                    "reason": "FieldValueForbidden",
                }
            ],
        },
        {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self != 'x'", "reason": "FieldValueForbidden"}],
        },
        {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self != 'x'", "reason": "FieldValueForbidden"}],
        },
    ),
    "mapList": (
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "x-kubernetes-map-type": "atomic",
                "required": ["name"],
                "properties": {"name": {"type": "string"}},
            },
        },
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "x-kubernetes-map-type": "atomic",
                "required": ["name"],
                "properties": {"name": {"type": "string"}},
            },
        },
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "x-kubernetes-map-type": "atomic",
                "required": ["name"],
                "properties": {"name": {"type": "string"}},
            },
        },
    ),
    "defaults": (
        {"type": "object", "default": {}, "properties": {"n": {"type": "integer", "default": 1}}},
        {"type": "object", "default": {}, "properties": {"n": {"type": "integer", "default": 1}}},
        {"type": "object", "properties": {"n": {"type": "integer"}}},
    ),
}


def _sample_crd(group: str, kind: str, plural: str, schema: dict[str, Any] | None) -> Any:
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True}
    if schema is not None:
        version["schema"] = {"openAPIV3Schema": schema}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [version],
        },
    }


SAMPLE_ROOT: dict[str, Any] = {
    "type": "object",
    "description": "A sample.",
    "required": ["spec"],
    "properties": {
        # the CRD's own apiVersion, kind and metadata are replaced
        "apiVersion": {"type": "string", "description": "mine"},
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 9}}},
        "spec": {
            "type": "object",
            "properties": {name: node for name, (node, _, _) in CASES.items()},
        },
    },
}
SAMPLE = _sample_crd("samples.example.com", "Sample", "samples", SAMPLE_ROOT)
BLOB = _sample_crd(
    "samples.example.com",
    "Blob",
    "blobs",
    {"type": "object", KEEP: True, "properties": {"spec": {"type": "object"}}},
)
BARE = _sample_crd("samples.example.com", "Bare", "bares", None)


def _load(name: str) -> Any:
    return yaml.safe_load((DATA / name).read_text())


@pytest.fixture(scope="module")
def docs() -> dict[str, Any]:
    """Both documents of a registry serving the CRDs of this module: ``v2`` (the one
    Swagger document) and each group-version's v3 document by ``apis/G/V``."""
    registry = Registry()
    for crd in (*(_load(n) for n in REAL_CRDS), SAMPLE, BLOB, BARE):
        rtype = crd_to_type(crd)
        assert rtype is not None
        registry.add(rtype)
    out: dict[str, Any] = {"v2": orjson.loads(openapi_v2.encoded(registry).json)}
    for gv in openapi.index(registry)["paths"]:
        encoded = openapi.encoded_document(registry, gv)
        assert encoded is not None
        out[gv] = orjson.loads(encoded)
    return out


def _v3(docs: dict[str, Any], group: str, version: str, kind: str) -> Any:
    name = ".".join(reversed(group.split("."))) + f".{version}.{kind}"
    return docs[f"apis/{group}/{version}"]["components"]["schemas"][name]


def _v2(docs: dict[str, Any], group: str, version: str, kind: str) -> Any:
    name = ".".join(reversed(group.split("."))) + f".{version}.{kind}"
    return docs["v2"]["definitions"][name]


def _at(schema: Any, pointer: str) -> Any:
    for part in pointer.strip("/").split("/"):
        if part:
            schema = schema[int(part)] if isinstance(schema, list) else schema[part]
    return schema


# -- the table ------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_in_v3(docs: dict[str, Any], case: str) -> None:
    sample = _v3(docs, "samples.example.com", "v1", "Sample")
    assert sample["properties"]["spec"]["properties"][case] == CASES[case][1]


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_in_v2(docs: dict[str, Any], case: str) -> None:
    sample = _v2(docs, "samples.example.com", "v1", "Sample")
    assert sample["properties"]["spec"]["properties"][case] == CASES[case][2]


def test_root_in_both_documents(docs: dict[str, Any]) -> None:
    """``metadata`` (the CRD's replaced by the ObjectMeta reference), ``apiVersion`` and
    ``kind`` TypeMeta's, the group-version-kind; the rest as the CRD has it."""
    gvk = [{"group": "samples.example.com", "kind": "Sample", "version": "v1"}]
    for doc, meta in (
        (_v3(docs, "samples.example.com", "v1", "Sample"), V3_META),
        (_v2(docs, "samples.example.com", "v1", "Sample"), V2_META),
    ):
        assert {k: v for k, v in doc.items() if k != "properties"} == {
            "type": "object",
            "description": "A sample.",
            "required": ["spec"],
            "x-kubernetes-group-version-kind": gvk,
        }
        props = doc["properties"]
        assert sorted(props) == ["apiVersion", "kind", "metadata", "spec"]
        assert (props["apiVersion"], props["kind"], props["metadata"]) == (
            ROOT_API_VERSION,
            ROOT_KIND,
            meta,
        )


def test_root_keeping_unknown_fields_and_no_schema(docs: dict[str, Any]) -> None:
    """A root keeping unknown fields is a bare object in v2 only; a version without a
    schema is a bare object in both."""
    gvk = {"group": "samples.example.com", "version": "v1"}
    assert _v2(docs, "samples.example.com", "v1", "Blob") == {
        "type": "object",
        "x-kubernetes-group-version-kind": [{**gvk, "kind": "Blob"}],
    }
    assert _v3(docs, "samples.example.com", "v1", "Blob") == {
        "type": "object",
        KEEP: True,
        "properties": {
            "spec": {"type": "object"},
            "apiVersion": ROOT_API_VERSION,
            "kind": ROOT_KIND,
            "metadata": V3_META,
        },
        "x-kubernetes-group-version-kind": [{**gvk, "kind": "Blob"}],
    }
    bare = {"type": "object", "x-kubernetes-group-version-kind": [{**gvk, "kind": "Bare"}]}
    assert _v2(docs, "samples.example.com", "v1", "Bare") == bare
    assert _v3(docs, "samples.example.com", "v1", "Bare") == bare


# -- real CRDs ------------------------------------------------------------------------

VELERO = ("velero.io", "v1", "DeleteBackupRequest")
ISTIO = ("networking.istio.io", "v1beta1", "ProxyConfig")
CROSSPLANE = ("ops.crossplane.io", "v1alpha1", "Operation")
CERT_MANAGER = ("acme.cert-manager.io", "v1", "Order")
PIPELINE = "/properties/spec/properties/pipeline/items/properties"

ABSENT = "<absent>"
"""An expected value: the pointer names nothing in that document."""

# (kind, JSON pointer into its definition, kube's v3 value, kube's v2 value)
REAL_NODES: dict[str, tuple[tuple[str, str, str], str, Any, Any]] = {
    "velero-nullable-array": (
        VELERO,
        "/properties/status/properties/errors",
        {
            "description": "Errors contains any errors that were encountered during the "
            "deletion process.",
            "items": {"type": "string"},
            "nullable": True,
            "type": "array",
        },
        {
            "description": "Errors contains any errors that were encountered during the "
            "deletion process."
        },
    ),
    "velero-root-apiVersion": (
        VELERO,
        "/properties/apiVersion",
        ROOT_API_VERSION,
        ROOT_API_VERSION,
    ),
    "velero-root-kind": (VELERO, "/properties/kind", ROOT_KIND, ROOT_KIND),
    "istio-nullable-integer": (
        ISTIO,
        "/properties/spec/properties/concurrency",
        {
            "description": "The number of worker threads to run.",
            "format": "int32",
            "minimum": 0,
            "nullable": True,
            "type": "integer",
        },
        {"description": "The number of worker threads to run.", "format": "int32", "minimum": 0},
    ),
    "istio-status-keeping-fields": (
        ISTIO,
        "/properties/status/properties/observedGeneration",
        {"anyOf": INT_OR_STRING, IOS: True},
        ABSENT,  # v2: the status keeps unknown fields, so it has no properties
    ),
    "istio-status-type": (ISTIO, "/properties/status/type", "object", ABSENT),
    "istio-status-keeps-fields": (ISTIO, f"/properties/status/{KEEP}", True, True),
    "istio-validations": (
        ISTIO,
        "/properties/spec/properties/selector/properties/matchLabels/x-kubernetes-validations",
        [
            {
                "message": "wildcard not allowed in label key match",
                "rule": 'self.all(key, !key.contains("*"))',
            },
            {"message": "key must not be empty", "rule": "self.all(key, key.size() != 0)"},
        ],
        [
            {
                "message": "wildcard not allowed in label key match",
                "rule": 'self.all(key, !key.contains("*"))',
            },
            {"message": "key must not be empty", "rule": "self.all(key, key.size() != 0)"},
        ],
    ),
    "crossplane-embedded-input": (
        CROSSPLANE,
        PIPELINE + "/input",
        {
            "description": "Input is an optional, arbitrary Kubernetes resource (i.e. a "
            "resource\nwith an apiVersion and kind) that will be passed to the unction as\n"
            "the 'input' of its RunFunctionRequest.",
            "type": "object",
            EMB: True,
            KEEP: True,
            "properties": _embedded(False),
            "required": ["kind", "apiVersion"],
        },
        {
            "description": "Input is an optional, arbitrary Kubernetes resource (i.e. a "
            "resource\nwith an apiVersion and kind) that will be passed to the unction as\n"
            "the 'input' of its RunFunctionRequest.",
            EMB: True,
            KEEP: True,
        },
    ),
    "crossplane-default": (
        CROSSPLANE,
        "/properties/spec/properties/mode/default",
        "Pipeline",
        ABSENT,
    ),
    "crossplane-map-list": (
        CROSSPLANE,
        PIPELINE + "/credentials/x-kubernetes-list-map-keys",
        ["name"],
        ["name"],
    ),
}


@pytest.mark.parametrize("case", sorted(REAL_NODES))
def test_real_crd_nodes(docs: dict[str, Any], case: str) -> None:
    (group, version, kind), pointer, v3, v2 = REAL_NODES[case]
    for found, expected in (
        (_v3(docs, group, version, kind), v3),
        (_v2(docs, group, version, kind), v2),
    ):
        if expected is ABSENT:
            with pytest.raises(KeyError):
                _at(found, pointer)
        else:
            assert _at(found, pointer) == expected, case


def test_list_kind_in_both_documents(docs: dict[str, Any]) -> None:
    """``buildListSchema``: an object requiring ``items``; ``metadata`` a ListMeta (in
    ``allOf`` in v3), TypeMeta's fields, its own group-version-kind."""
    for prefix, v2 in (("#/components/schemas/", False), ("#/definitions/", True)):
        listed = (_v2 if v2 else _v3)(docs, "velero.io", "v1", "DeleteBackupRequestList")
        meta_ref = {"$ref": prefix + LIST_META}
        assert listed == {
            "description": "DeleteBackupRequestList is a list of DeleteBackupRequest",
            "type": "object",
            "required": ["items"],
            "properties": {
                "items": {
                    "description": f"List of deletebackuprequests. More info: {CONVENTIONS}",
                    "type": "array",
                    "items": {"$ref": prefix + "io.velero.v1.DeleteBackupRequest"},
                },
                "metadata": {
                    **(meta_ref if v2 else {"allOf": [meta_ref]}),
                    "description": f"Standard list metadata. More info: {CONVENTIONS}#types-kinds",
                },
                "apiVersion": ROOT_API_VERSION,
                "kind": ROOT_KIND,
            },
            "x-kubernetes-group-version-kind": [
                {"group": "velero.io", "kind": "DeleteBackupRequestList", "version": "v1"}
            ],
        }


def test_selectable_fields_on_kind_and_list(docs: dict[str, Any]) -> None:
    """The CustomResourceFieldSelectors gate is on in 1.33 (GA in 1.32): the kind and the
    list kind carry the version's selectable fields, without the leading dot."""
    expected = [
        {"fieldPath": "spec.issuerRef.group"},
        {"fieldPath": "spec.issuerRef.kind"},
        {"fieldPath": "spec.issuerRef.name"},
    ]
    for get in (_v2, _v3):
        for kind in ("Order", "OrderList"):
            assert get(docs, "acme.cert-manager.io", "v1", kind)[
                "x-kubernetes-selectable-fields"
            ] == (expected), kind
    assert "x-kubernetes-selectable-fields" not in _v3(docs, *VELERO)


def test_status_path_only_with_the_subresource(docs: dict[str, Any]) -> None:
    """``subresources: {}`` publishes no ``/status`` path; ``status: {}`` does."""
    velero = docs["apis/velero.io/v1"]["paths"]
    assert "/apis/velero.io/v1/namespaces/{namespace}/deletebackuprequests/{name}" in velero
    assert not [p for p in velero if p.endswith("/status")]
    istio = docs["apis/networking.istio.io/v1beta1"]["paths"]
    assert (
        "/apis/networking.istio.io/v1beta1/namespaces/{namespace}/proxyconfigs/{name}/status"
        in istio
    )
    cluster = docs["apis/ops.crossplane.io/v1alpha1"]["paths"]
    assert "/apis/ops.crossplane.io/v1alpha1/operations/{name}/status" in cluster


# -- kubectl explain ----------------------------------------------------------------------

GADGET = _sample_crd(
    "explain.example.com",
    "Gadget",
    "gadgets",
    {
        "type": "object",
        "description": "A gadget.",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    name: CASES[name][0]
                    for name in ("embedded", "embeddedKeepingFields", "embeddedNullable")
                },
            }
        },
    },
)


def _fields(explained: str) -> dict[str, tuple[str, bool, str]]:
    """``kubectl explain``'s FIELDS: name -> (type, required, first description line)."""
    lines = explained.splitlines()
    out: dict[str, tuple[str, bool, str]] = {}
    for i, line in enumerate(lines):
        m = re.fullmatch(r"\s+(\w+)\t<([^>]*)>( -required-)?", line)
        if m:
            after = lines[i + 1].strip() if i + 1 < len(lines) else ""
            out[m[1]] = (m[2], bool(m[3]), after)
    return out


def test_kubectl_explain_in_v3_and_v2(kubectl: Any) -> None:
    """The real kubectl reads both documents as it reads kube's: an embedded resource shows
    the builder's apiVersion, kind (required) and metadata in v3 and, unless it keeps
    unknown fields, in v2 (which has none of its fields, nor a type: no RESOURCE line);
    the root's metadata is ObjectMeta (through v3's allOf) with PartialObjectMetadata's
    description."""
    kubectl("apply", "-f", "-", input=orjson.dumps(GADGET).decode())
    kubectl("wait", "--for=condition=Established", "crd/gadgets.explain.example.com")
    embedded_api = "apiVersion defines the versioned schema of this representation of an object."
    embedded_kind = "kind is a string value representing the type of this object. In CamelCase."
    meta = "Standard object's metadata. More info:"

    v3 = _fields(kubectl("explain", "gadgets.spec.embedded").stdout)
    assert v3 == {
        "apiVersion": ("string", True, embedded_api),
        "kind": ("string", True, embedded_kind),
        "metadata": ("ObjectMeta", False, meta),
        "spec": ("Object", True, "<no description>"),
    }
    v2_text = kubectl("explain", "gadgets.spec.embedded", "--output=plaintext-openapiv2").stdout
    assert "RESOURCE: embedded <Object>" in v2_text
    v2 = _fields(v2_text)
    assert v2["metadata"] == ("Object", False, meta)
    assert v2["kind"][:2] == ("string", True) and v2["apiVersion"][:2] == ("string", True)
    assert v2["spec"][:2] == ("", True)  # keeps unknown fields: no type in v2

    keeping = "gadgets.spec.embeddedKeepingFields"
    assert set(_fields(kubectl("explain", keeping).stdout)) == {"apiVersion", "kind", "metadata"}
    v2_keeping = kubectl("explain", keeping, "--output=plaintext-openapiv2").stdout
    assert "any object" in v2_keeping
    assert "RESOURCE:" not in v2_keeping and "FIELDS:" not in v2_keeping

    for args in ((), ("--output=plaintext-openapiv2",)):
        root = _fields(kubectl("explain", "gadgets", *args).stdout)
        assert root["metadata"] == ("Object" if args else "ObjectMeta", False, meta)
        assert root["apiVersion"][2].startswith("APIVersion defines the versioned schema")
