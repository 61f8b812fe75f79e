"""``apiextensions.k8s.io/v1`` CustomResourceDefinition: generation on spec changes,
status owned by the CRD controller, defaults and validation of the apiextensions
server, the cleanup finalizer that deletes every instance before the CRD goes, and the
form a CRD is stored in.

**Stored form.** kube-apiserver decodes a CRD into its Go types
(``k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1``: ``types.go``,
``types_jsonschema.go``, ``marshal.go``), converts it to the internal version and back
(``conversion.go``), and encodes it: unknown fields and ``null`` members do not survive,
nor does any ``omitempty`` field at its zero value (``nullable: false``,
``description: ""``, ``required: []``, ``properties: {}``, ``priority: 0``,
``preserveUnknownFields: false``, ...), while pointer fields keep theirs
(``maximum: 0``, ``x-kubernetes-list-type: ""``); a version's ``served`` and
``storage`` are always written; ``default``, ``enum`` and ``example`` values pass
through ``interface{}`` (an integral number is written as an integer: ``1.0`` → ``1``),
and so do ``maximum``/``minimum``/``multipleOf`` (``float64``). Schemas under ``items``,
``additionalProperties``, ``additionalItems`` and ``dependencies`` are decoded by their
own ``UnmarshalJSON`` without strictness: their unknown fields are dropped without a
word. ``stored_form`` makes a decoded CRD that form; the schema engine reads it and
finds the same schema (only zero values went).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kubewerk.apiserver.kinds.schemas import object_schema
from kubewerk.apiserver.kinds.typed_decode import TypedDecoder, TypeMismatch
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import PrinterColumn, Strategy
from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import INT64_MAX, INT64_MIN
from kubewerk.core.gonumbers import stored_float

JSON = dict[str, Any]

_V1 = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
CRD_DEFINITION = _V1 + "CustomResourceDefinition"
"""The vendored OpenAPI definition a CRD body is decoded against."""
SCHEMA_DEFINITION = _V1 + "JSONSchemaProps"

CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
"""Held while the CRD controller deletes the instances of a deleted CRD."""


def default_crd(crd: JSON) -> None:
    """``SetObjectDefaults_CustomResourceDefinition``: singular, listKind, conversion
    (``SetDefaults_CustomResourceDefinitionSpec``), a conversion service's port, and
    ``status.storedVersions`` (the storage version) when it is empty."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    status = crd.get("status")
    if isinstance(status, dict) and not status.get("storedVersions"):
        storage = storage_version(crd)
        if storage is not None:
            status["storedVersions"] = [storage]
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        if not names.get("singular"):
            names["singular"] = names["kind"].lower()
        if not names.get("listKind"):
            names["listKind"] = names["kind"] + "List"
    if not isinstance(spec.get("conversion"), dict):
        spec["conversion"] = {"strategy": "None"}
    webhook = spec["conversion"].get("webhook")
    if isinstance(webhook, dict):
        service = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict) and "port" not in service:
            service["port"] = 443


class CustomResourceDefinitionStrategy(Strategy):
    """A create starts with generation 1 and an empty status (the CRD controller fills
    it); the spec alone bumps the generation; unknown fields are left to ``validate``."""

    prunes_unknown_fields: ClassVar[bool] = False

    def prepare_for_create(self, obj: JSON) -> None:
        """kube's ``PrepareForCreate``: generation 1 and the empty status, as encoded
        (``acceptedNames`` with its empty plural and kind, no ``conditions``), whose
        ``storedVersions`` holds the storage version."""
        obj["metadata"]["generation"] = 1
        storage = storage_version(obj)
        obj["status"] = {
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": [] if storage is None else [storage],
        }

    def prepare_for_update(self, new: JSON, old: JSON) -> None:
        """kube's ``PrepareForUpdate`` (the REST layer has kept the stored status): the
        new storage version joins ``storedVersions`` at once."""
        storage = storage_version(new)
        status = new.get("status")
        if storage is None or not isinstance(status, dict):
            return
        stored = status.get("storedVersions")
        if not isinstance(stored, list):
            status["storedVersions"] = [storage]
        elif storage not in stored:
            status["storedVersions"] = [*stored, storage]

    def typed_decode(self, obj: JSON, version: str) -> list[str] | None:
        """Decode into ``v1.CustomResourceDefinition``: unknown fields dropped and
        returned, then ``stored_form``; raises ``ValueError`` with the decoder's text
        for a value of the wrong type."""
        unknown = _decoder().decode(obj, CRD_DEFINITION)
        stored_form(obj)
        return unknown

    def default(self, obj: JSON) -> None:
        default_crd(obj)

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        from kubewerk.schema import validate_crd  # the schema engine loads on first use

        return validate_crd(obj, old)

    def finalizers_on_delete(self, finalizers: list[str]) -> list[str]:
        if CRD_CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CRD_CLEANUP_FINALIZER)
        return finalizers


def storage_version(crd: JSON) -> str | None:
    """The name of the first version marked ``storage`` (None when none is)."""
    versions = (crd.get("spec") or {}).get("versions")
    for version in versions if isinstance(versions, list) else ():
        if isinstance(version, dict) and version.get("storage") is True:
            name = version.get("name")
            return name if isinstance(name, str) else None
    return None


def _decoder() -> TypedDecoder:
    from kubewerk.apiserver.kinds import k8s_openapi

    return TypedDecoder(k8s_openapi.definitions())


# -- the stored form ----------------------------------------------------------------

_SCHEMA_OMIT_EMPTY_STRING = frozenset(
    ("id", "$schema", "description", "type", "format", "title", "pattern")
)
_SCHEMA_OMIT_FALSE = frozenset(
    (
        "exclusiveMaximum",
        "exclusiveMinimum",
        "uniqueItems",
        "nullable",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    )
)
_SCHEMA_OMIT_EMPTY = frozenset(
    (
        "enum",
        "required",
        "allOf",
        "oneOf",
        "anyOf",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-validations",
        "properties",
        "patternProperties",
        "dependencies",
        "definitions",
    )
)
"""``JSONSchemaProps`` fields whose zero value is not written (``omitempty`` on a string,
a bool, a slice or a map); its pointer fields keep their zero values."""


def stored_form(crd: JSON) -> None:
    """Make a CRD decoded by ``TypedDecoder`` (its unknown fields and ``null`` members
    gone where the decoder walks) the form kube-apiserver stores, in place: see the
    module docstring. Raises ``TypeMismatch`` for a nested schema (under ``items``,
    ``additionalProperties``, ...) holding a value of the wrong type, or an
    ``additionalProperties``/``additionalItems`` that is neither a boolean nor a
    schema, as the decoder of that field does."""
    spec = crd.get("spec")
    if isinstance(spec, dict):
        _spec_form(spec)
    status = crd.get("status")
    if isinstance(status, dict):
        _omit(status, ("conditions",), [])
        _omit(status, ("observedGeneration",), 0)
        conditions = status.get("conditions")
        for cond in conditions if isinstance(conditions, list) else ():
            if isinstance(cond, dict):
                _omit(cond, ("reason", "message"), "")
        names = status.get("acceptedNames")
        if isinstance(names, dict):
            _names_form(names)


def _omit(obj: JSON, keys: tuple[str, ...], zero: Any) -> None:
    """Drop each of ``keys`` whose value is ``zero`` (of the same JSON type)."""
    for key in keys:
        value = obj.get(key, obj)
        if type(value) is type(zero) and value == zero:
            del obj[key]


def _names_form(names: JSON) -> None:
    _omit(names, ("singular", "listKind"), "")
    _omit(names, ("shortNames", "categories"), [])


def _spec_form(spec: JSON) -> None:
    _omit(spec, ("preserveUnknownFields",), False)
    names = spec.get("names")
    if isinstance(names, dict):
        _names_form(names)
    conversion = spec.get("conversion")
    webhook = conversion.get("webhook") if isinstance(conversion, dict) else None
    client = webhook.get("clientConfig") if isinstance(webhook, dict) else None
    if isinstance(client, dict):
        _omit(client, ("caBundle",), "")
    versions = spec.get("versions")
    for version in versions if isinstance(versions, list) else ():
        if not isinstance(version, dict):
            continue
        # not omitempty: a version without them is written with false
        version.setdefault("served", False)
        version.setdefault("storage", False)
        _omit(version, ("deprecated",), False)
        _omit(version, ("additionalPrinterColumns", "selectableFields"), [])
        columns = version.get("additionalPrinterColumns")
        for column in columns if isinstance(columns, list) else ():
            if isinstance(column, dict):
                _omit(column, ("format", "description"), "")
                _omit(column, ("priority",), 0)
        schema = version.get("schema")
        root = schema.get("openAPIV3Schema") if isinstance(schema, dict) else None
        if isinstance(root, dict):
            _schema_form(root)


def _schema_form(node: JSON) -> None:
    """One ``JSONSchemaProps`` (already decoded) and every schema under it."""
    for key in ("properties", "patternProperties", "definitions"):
        children = node.get(key)
        if isinstance(children, dict):
            for child in children.values():
                if isinstance(child, dict):
                    _schema_form(child)
    for key in ("allOf", "oneOf", "anyOf"):
        children = node.get(key)
        if isinstance(children, list):
            for child in children:
                if isinstance(child, dict):
                    _schema_form(child)
    if isinstance(node.get("not"), dict):
        _schema_form(node["not"])
    items = node.get("items")
    if isinstance(items, dict):
        _nested_schema(items)
    elif isinstance(items, list):
        for child in items:
            if isinstance(child, dict):
                _nested_schema(child)
    for key in ("additionalProperties", "additionalItems"):
        if key not in node:
            continue
        value = node[key]
        if isinstance(value, dict):
            _nested_schema(value)
        elif not isinstance(value, bool):
            raise TypeMismatch("boolean or JSON schema expected")
    dependencies = node.get("dependencies")
    if isinstance(dependencies, dict):
        for value in dependencies.values():
            if isinstance(value, dict):
                _nested_schema(value)
    rules = node.get("x-kubernetes-validations")
    for rule in rules if isinstance(rules, list) else ():
        if isinstance(rule, dict):
            _omit(rule, ("message", "messageExpression", "fieldPath"), "")
    docs = node.get("externalDocs")
    if isinstance(docs, dict):
        _omit(docs, ("description", "url"), "")
    for key in ("default", "example"):
        if key in node:
            node[key] = _through_interface(node[key])
    if isinstance(node.get("enum"), list):
        node["enum"] = [_through_interface(v) for v in node["enum"]]
    for key in ("maximum", "minimum", "multipleOf"):
        value = node.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            node[key] = _float64(value)
    _omit(node, tuple(_SCHEMA_OMIT_EMPTY_STRING), "")
    _omit(node, tuple(_SCHEMA_OMIT_FALSE), False)
    for key in _SCHEMA_OMIT_EMPTY:
        value = node.get(key)
        if isinstance(value, list | dict) and not value:
            del node[key]


def _nested_schema(node: JSON) -> None:
    """A schema its parent's ``UnmarshalJSON`` decodes with plain ``json.Unmarshal``:
    unknown fields dropped silently, wrong types refused."""
    _decoder().decode(node, SCHEMA_DEFINITION)
    _schema_form(node)


def _float64(value: int | float) -> int | float:
    """``value`` as a Go ``float64`` writes it and reads back (``gonumbers.stored_float``):
    an integral value as the integer of Go's digits (``10.0`` → ``10``) where orjson can
    write it, others as the nearest float (``1e20``: Go's digits do not fit 64 bits, and
    an int of them could not be stored)."""
    return stored_float(float(value))


def _through_interface(value: Any) -> Any:
    """A JSON value after ``util/json.Unmarshal`` into ``interface{}`` and ``Marshal``
    back: an integer within int64 stays, any other number is a ``float64``."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if INT64_MIN <= value <= INT64_MAX else _float64(value)
    if isinstance(value, float):
        return _float64(value)
    if isinstance(value, dict):
        return {k: _through_interface(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_through_interface(v) for v in value]
    return value


def resource_type() -> ServedResource:
    return ServedResource(
        group="apiextensions.k8s.io",
        resource="customresourcedefinitions",
        kind="CustomResourceDefinition",
        list_kind="CustomResourceDefinitionList",
        singular="customresourcedefinition",
        namespaced=False,
        versions=["v1"],
        storage_version="v1",
        short_names=["crd", "crds"],
        categories=["api-extensions"],
        strategic_kind="apiextensions.k8s.io/CustomResourceDefinition",
        status_subresource=True,
        strategy=CustomResourceDefinitionStrategy(
            columns=[PrinterColumn("Created At", "date", ".metadata.creationTimestamp")],
            cells=lambda o: [o.get("metadata", {}).get("creationTimestamp", "")],
        ),
        schemas={
            "v1": object_schema(
                "CustomResourceDefinition represents a resource "
                "that should be exposed on the API server.",
                {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
                ["spec"],
            )
        },
    )
