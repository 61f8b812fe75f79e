"""Typed resources on pydantic v2, markers, CRD generation, versions and conversion.

One class is the typed client model, the reconciler's argument and the complete CRD::

    from typing import Annotated
    from pydantic import Field
    from kubewerk.model import Conditions, KubeModel, Resource, crd_for

    class WidgetSpec(KubeModel):
        \"\"\"Desired state of a widget.\"\"\"
        replicas: Annotated[int, Field(ge=0, le=100)] = 1

    class WidgetStatus(KubeModel):
        conditions: Conditions | None = None

    class Widget(Resource[WidgetSpec, WidgetStatus], group="example.com"):
        \"\"\"A widget.\"\"\"

    crd = crd_for(Widget)          # apiextensions.k8s.io/v1 CustomResourceDefinition
    w = Widget.from_dict({...})    # typed, with Kubernetes field paths in errors
    w.to_dict()                    # only what was set, JSON names

See docs/model.md for the markers and the conversion API; references between kinds
(``Ref[Database]``) are in :mod:`kubewerk.model.refs`.
"""

from kubewerk.model.base import KubeModel, ObjectRule
from kubewerk.model.conversion import convert, convert_dict, converter, converters
from kubewerk.model.crdgen import (
    ConversionWebhook,
    crd_for,
    crd_yaml,
    crds_for,
    dump_yaml,
    schema_for,
    storage_version,
)
from kubewerk.model.errors import ConversionError, InvalidObjectError, ModelDefinitionError
from kubewerk.model.markers import (
    AtMostOneOf,
    EmbeddedResource,
    ExactlyOneOf,
    Format,
    Immutable,
    ListMapKeys,
    ListType,
    MapType,
    Nullable,
    PreserveUnknownFields,
    PrinterColumn,
    Rule,
    Scale,
    Selectable,
    Title,
)
from kubewerk.model.meta import (
    Condition,
    Conditions,
    Int32,
    Int64,
    IntOrString,
    LabelSelector,
    LabelSelectorRequirement,
    ManagedFieldsEntry,
    ObjectMeta,
    OwnerReference,
    Quantity,
)
from kubewerk.model.ref_fields import (
    REFERENCES_ANNOTATION,
    RefField,
    parse_references,
    references_of,
)
from kubewerk.model.refs import CrossNamespace, ExternalKind, OnDelete, Ref
from kubewerk.model.resource import KindInfo, Resource, kinds, resource_class, versions_of
from kubewerk.model.secret_ref import SecretRef
from kubewerk.model.status_phase import PhaseDeclaration, PhaseSchema

__all__ = [
    "REFERENCES_ANNOTATION",
    "AtMostOneOf",
    "Condition",
    "Conditions",
    "ConversionError",
    "ConversionWebhook",
    "CrossNamespace",
    "EmbeddedResource",
    "ExactlyOneOf",
    "ExternalKind",
    "Format",
    "Immutable",
    "Int32",
    "Int64",
    "IntOrString",
    "InvalidObjectError",
    "KindInfo",
    "KubeModel",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ListMapKeys",
    "ListType",
    "ManagedFieldsEntry",
    "MapType",
    "ModelDefinitionError",
    "Nullable",
    "ObjectMeta",
    "ObjectRule",
    "OnDelete",
    "OwnerReference",
    "PhaseDeclaration",
    "PhaseSchema",
    "PreserveUnknownFields",
    "PrinterColumn",
    "Quantity",
    "Ref",
    "RefField",
    "Resource",
    "Rule",
    "Scale",
    "SecretRef",
    "Selectable",
    "Title",
    "convert",
    "convert_dict",
    "converter",
    "converters",
    "crd_for",
    "crd_yaml",
    "crds_for",
    "dump_yaml",
    "kinds",
    "parse_references",
    "references_of",
    "resource_class",
    "schema_for",
    "storage_version",
    "versions_of",
]
