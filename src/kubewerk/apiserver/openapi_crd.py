"""A custom resource's schemas in the OpenAPI documents, as kube-apiserver publishes them.

kube-apiserver's CRD OpenAPI builder (apiextensions-apiserver
``pkg/controller/openapi/builder/builder.go``, release 1.33, the release kubewerk reports)
turns a version's ``openAPIV3Schema`` into the kind's definition in four steps, each of
which has a function here:

1. ``structural``: the structural schema as ``NewStructural`` reads it and ``Unfold``
   expands it, written back out by ``ToKubeOpenAPI`` (``pkg/apiserver/schema``). Only the
   keywords a structural schema holds survive (``example`` and ``externalDocs`` do not in
   1.33; 1.36 keeps them), a zero value (``nullable: false``, ``description: ""``,
   ``required: []``, ``properties: {}``) is not written, an
   ``x-kubernetes-int-or-string`` node gains ``anyOf: [{type: integer}, {type: string}]``,
   and an ``additionalProperties`` inside a junctor is dropped.
2. For ``/openapi/v2`` only, ``to_openapi_v2``: ``ToStructuralOpenAPIV2``
   (``pkg/controller/openapi/v2/conversion.go``), and no ``default`` anywhere (the v2
   controller's ``PruneDefaults``, kube-openapi ``pkg/handler/default_pruning.go``).
3. ``kind_schema``: ``buildKubeNative``. The root gets ``metadata`` (a reference to
   ObjectMeta), ``apiVersion`` and ``kind`` (TypeMeta's), every
   ``x-kubernetes-embedded-resource`` node its own three (and requires ``kind`` and
   ``apiVersion``; in v2 not where it keeps unknown fields), the root its
   ``x-kubernetes-group-version-kind`` and ``x-kubernetes-selectable-fields``. In v2 a
   root keeping unknown fields is a bare object.
4. In v3 a reference with a description beside it is written as kube-openapi's
   ``WrapRefs`` writes it (``allOf: [{$ref}]``, ``pkg/builder3/util``); the references
   step 3 adds are the only ones a CRD's definition holds.

``list_schema`` is ``buildListSchema``. Every function returns new values and leaves its
argument alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubewerk.core.jsoncopy import copy_tree

JSON = dict[str, Any]

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
V2_PREFIX = "#/definitions/"
V3_PREFIX = "#/components/schemas/"

_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
OBJECT_META_DESCRIPTION = f"Standard object's metadata. More info: {_CONVENTIONS}#metadata"
"""The description of ``metadata`` (PartialObjectMetadata's), at the root and in embedded
resources."""
LIST_META_DESCRIPTION = f"Standard list metadata. More info: {_CONVENTIONS}#types-kinds"
EMBEDDED_API_VERSION_DESCRIPTION = (
    "apiVersion defines the versioned schema of this representation of an object. "
    f"More info: {_CONVENTIONS}#resources"
)
"""The builder's own description of an embedded resource's ``apiVersion`` (not TypeMeta's)."""
EMBEDDED_KIND_DESCRIPTION = (
    "kind is a string value representing the type of this object. In CamelCase. "
    f"More info: {_CONVENTIONS}#types-kinds"
)

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_EMBEDDED = "x-kubernetes-embedded-resource"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_VALIDATIONS = "x-kubernetes-validations"

_STRINGS = ("description", "type", "title", "format", "pattern")
"""Kept when not empty (Go strings with ``omitempty``)."""
_FLAGS = (
    "nullable",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "uniqueItems",
    _PRESERVE,
    _EMBEDDED,
    _INT_OR_STRING,
)
"""Kept when true (Go booleans: false is not written; the extensions only when true)."""
_NUMBERS = (
    "maximum",
    "minimum",
    "multipleOf",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
)
"""Kept when set, zero included (Go pointers)."""
_LISTS = ("required", "enum", "x-kubernetes-list-map-keys")
"""Kept when not empty."""
_POINTED = ("x-kubernetes-list-type", "x-kubernetes-map-type")
"""Kept when set (Go pointers to strings)."""
_JUNCTORS = ("allOf", "anyOf", "oneOf")
_RULE_KEYS = ("rule", "message", "messageExpression", "reason", "fieldPath", "optionalOldSelf")
"""A validation rule's fields, as ``apiextensions/v1.ValidationRule`` writes them."""

_INT_OR_STRING_PATTERN: tuple[JSON, JSON] = ({"type": "integer"}, {"type": "string"})


def structural(schema: Any, embedded: list[JSON] | None = None) -> JSON:
    """``schema`` (a version's ``openAPIV3Schema``) as kube's structural schema writes it
    back out after ``Unfold`` (step 1 of the module's list): what ``/openapi/v3``
    publishes below the root's additions. A value that is not a mapping reads as ``{}``.
    ``embedded``, when given, receives every output node outside junctors marked
    ``x-kubernetes-embedded-resource`` (the nodes ``addEmbeddedProperties`` visits)."""
    return _node(schema, False, embedded)


_STR, _FLAG, _NUMBER, _LIST, _POINTER, _DEFAULT, _RULES, _JUNCTOR, _NOT, _ITEMS, _PROPS, _EXTRA = (
    range(12)
)
_KEYWORDS: dict[str, int] = {
    **dict.fromkeys(_STRINGS, _STR),
    **dict.fromkeys(_FLAGS, _FLAG),
    **dict.fromkeys(_NUMBERS, _NUMBER),
    **dict.fromkeys(_LISTS, _LIST),
    **dict.fromkeys(_POINTED, _POINTER),
    **dict.fromkeys(_JUNCTORS, _JUNCTOR),
    "default": _DEFAULT,
    _VALIDATIONS: _RULES,
    "not": _NOT,
    "items": _ITEMS,
    "properties": _PROPS,
    "additionalProperties": _EXTRA,
}
"""Every keyword a structural schema writes, by how its value is read; a key not here
(``example``, ``externalDocs``, ``$ref``, ``x-`` extensions kube does not know, ...) is
not written."""


def _node(schema: Any, nested: bool, embedded: list[JSON] | None) -> JSON:
    """One node: a ``Structural`` (``nested`` False) or a junctor's
    ``NestedValueValidation`` (True: no ``additionalProperties`` in the output, no
    unfolding, nothing collected into ``embedded``). One pass over the node's own keys."""
    if not isinstance(schema, dict):
        return {}
    out: JSON = {}
    for key, value in schema.items():
        how = _KEYWORDS.get(key)
        if how is None:
            continue
        if how == _PROPS:
            if isinstance(value, dict) and value:
                out[key] = {k: _node(v, nested, embedded) for k, v in value.items()}
        elif how == _STR:
            if isinstance(value, str) and value:
                out[key] = value
        elif how == _FLAG:
            if value is True:
                out[key] = True
        elif how == _ITEMS:
            if isinstance(value, dict):
                out[key] = _node(value, nested, embedded)
        elif how == _LIST:
            if isinstance(value, list) and value:
                out[key] = copy_tree(value)
        elif how == _NUMBER:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = value
        elif how == _POINTER:
            if isinstance(value, str):
                out[key] = value
        elif how == _DEFAULT:
            if value is not None:
                out[key] = copy_tree(value) if isinstance(value, (dict, list)) else value
        elif how == _RULES:
            if isinstance(value, list) and value:
                out[key] = [_rule(r) for r in value if isinstance(r, dict)]
        elif how == _JUNCTOR:
            if isinstance(value, list) and value:
                out[key] = [_node(v, True, None) for v in value]
        elif how == _NOT:
            if isinstance(value, dict):
                out[key] = _node(value, True, None)
        elif not nested:  # _EXTRA
            if isinstance(value, dict):
                out[key] = _node(value, False, embedded)
            elif isinstance(value, bool):
                out[key] = value
    if not nested:
        if out.get(_INT_OR_STRING) is True:
            _unfold(out)
        if embedded is not None and out.get(_EMBEDDED) is True:
            embedded.append(out)
    return out


def _rule(rule: JSON) -> JSON:
    """A validation rule as written by Go: ``rule`` always, the others when set."""
    out: JSON = {}
    for key in _RULE_KEYS:
        value = rule.get(key)
        if key == "rule" or (value is not None and value != ""):
            out[key] = value
    return out


def _unfold(node: JSON) -> None:
    """``Structural.Unfold`` for one int-or-string node: ``anyOf`` of integer and string,
    or that ``anyOf`` in front of its ``allOf`` when it has an ``anyOf`` of its own; left
    alone when it spells either pattern already."""
    pattern = list(_INT_OR_STRING_PATTERN)
    if node.get("anyOf") == pattern:
        return
    all_of = node.get("allOf")
    if isinstance(all_of, list) and all_of and all_of[0].get("anyOf") == pattern:
        return
    fresh = [dict(p) for p in _INT_OR_STRING_PATTERN]
    if "anyOf" not in node:
        node["anyOf"] = fresh
    else:
        node["allOf"] = [{"anyOf": fresh}, *(all_of or [])]


def to_openapi_v2(node: JSON, embedded: list[JSON] | None = None) -> JSON:
    """A ``structural`` schema as the CRD's v2 definition carries it: ``ToStructuralOpenAPIV2``
    and then the v2 controller's ``PruneDefaults``. No junctors and no ``default``; a
    nullable node loses ``nullable``, its type, properties and items; a node keeping
    unknown fields its properties and items, and its type when that is ``object``; an
    array left without items its type; a nullable property leaves its parent's
    ``required`` (all of it goes when ``additionalProperties`` is nullable). Parent before
    children, as kube's visitor: the ``required`` filter reads the children as they were,
    and a node whose properties were cleared keeps its ``required``. ``embedded``, when
    given, receives the output's ``x-kubernetes-embedded-resource`` nodes that do not keep
    unknown fields (those ``addEmbeddedProperties`` completes in v2)."""
    out: JSON = {k: v for k, v in node.items() if k not in _NOT_V2}
    if out.pop("nullable", False) is True:
        out.pop("type", None)
        out.pop("items", None)
        out.pop("properties", None)
    preserve = out.get(_PRESERVE) is True
    if preserve:
        out.pop("items", None)
        out.pop("properties", None)
    if out.get("type") == "array" and "items" not in out:
        del out["type"]
    if preserve and out.get("type") == "object":
        del out["type"]
    props: JSON = out.get("properties") or {}
    required = out.get("required")
    if isinstance(required, list):
        kept = [n for n in required if not _is_nullable(props.get(n))]
        extra = out.get("additionalProperties")
        if _is_nullable(extra):
            kept = []
        if kept:
            out["required"] = kept
        else:
            del out["required"]
    if isinstance(out.get("items"), dict):
        out["items"] = to_openapi_v2(out["items"], embedded)
    if props:
        out["properties"] = {k: to_openapi_v2(v, embedded) for k, v in props.items()}
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = to_openapi_v2(out["additionalProperties"], embedded)
    if embedded is not None and out.get(_EMBEDDED) is True and not preserve:
        embedded.append(out)
    return out


_NOT_V2 = frozenset((*_JUNCTORS, "not", "default"))


def _is_nullable(node: Any) -> bool:
    return isinstance(node, dict) and node.get("nullable") is True


def _type_meta(name: str) -> JSON:
    """TypeMeta's ``apiVersion`` or ``kind`` property (a string with its description), as
    the vendored definitions of every built-in kind carry it."""
    from kubewerk.apiserver.kinds import k8s_openapi

    found = (k8s_openapi.definition(_TYPED_SAMPLE) or {}).get("properties", {}).get(name)
    return dict(found) if isinstance(found, dict) else {"type": "string"}


_TYPED_SAMPLE = "io.k8s.api.core.v1.ConfigMap"
"""A vendored kind whose ``apiVersion`` and ``kind`` are TypeMeta's."""


def _ref(name: str, description: str, *, v2: bool) -> JSON:
    """A described reference to ``name``: ``$ref`` beside the description in v2, and in
    v3 the reference in ``allOf`` as kube-openapi's ``WrapRefs`` writes every reference
    with siblings. (A structural schema holds no ``$ref`` of its own, so these are the
    only ones to wrap.)"""
    if v2:
        return {"$ref": V2_PREFIX + name, "description": description}
    return {"allOf": [{"$ref": V3_PREFIX + name}], "description": description}


def _complete_embedded(node: JSON, *, v2: bool) -> None:
    """``addEmbeddedProperties`` for one ``x-kubernetes-embedded-resource`` node (as
    ``structural``/``to_openapi_v2`` collect them: through properties, items and
    ``additionalProperties``, not junctors; in v2 not one keeping unknown fields, whose
    added fields kubectl would refuse): ``apiVersion`` and ``kind`` with the builder's
    descriptions, ``metadata``, and ``kind`` and ``apiVersion`` required."""
    props = node.setdefault("properties", {})
    props["apiVersion"] = {
        **_type_meta("apiVersion"),
        "description": EMBEDDED_API_VERSION_DESCRIPTION,
    }
    props["kind"] = {**_type_meta("kind"), "description": EMBEDDED_KIND_DESCRIPTION}
    props["metadata"] = _ref(OBJECT_META, OBJECT_META_DESCRIPTION, v2=v2)
    required = list(node.get("required") or [])
    for name in ("kind", "apiVersion"):
        if name not in required:
            required.append(name)
    node["required"] = required


def _selectable(fields: Sequence[str]) -> list[JSON]:
    return [{"fieldPath": path} for path in fields]


def kind_schema(
    schema: JSON | None,
    group: str,
    version: str,
    kind: str,
    selectable: Sequence[str] = (),
    *,
    v2: bool,
) -> JSON:
    """The kind's definition as kube-apiserver publishes it in ``/openapi/v3`` (``v2``
    False) or ``/openapi/v2``, from the version's ``openAPIV3Schema`` (None: the version
    has none, and the definition is a bare object) and its ``selectableFields`` paths
    (without the leading dot)."""
    if schema is None or (v2 and schema.get(_PRESERVE) is True):
        out: JSON = {"type": "object"}
    else:
        embedded: list[JSON] = []
        out = to_openapi_v2(structural(schema), embedded) if v2 else structural(schema, embedded)
        props = out.setdefault("properties", {})
        props["metadata"] = _ref(OBJECT_META, OBJECT_META_DESCRIPTION, v2=v2)
        props["apiVersion"] = _type_meta("apiVersion")
        props["kind"] = _type_meta("kind")
        for node in embedded:  # the root too, when it is marked (after its TypeMeta)
            _complete_embedded(node, v2=v2)
    out["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    if selectable:
        out["x-kubernetes-selectable-fields"] = _selectable(selectable)
    return out


def list_schema(
    group: str,
    version: str,
    kind: str,
    list_kind: str,
    plural: str,
    kind_name: str,
    selectable: Sequence[str] = (),
    *,
    v2: bool,
) -> JSON:
    """``buildListSchema``: the list kind's definition (``items`` an array of the kind,
    named ``kind_name``; ``metadata`` a ListMeta; TypeMeta's fields; its
    group-version-kind and the version's selectable fields), in v3 (``v2`` False: the
    ``metadata`` reference wrapped in ``allOf``) or v2 form."""
    out: JSON = {
        "description": f"{list_kind} is a list of {kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "items": {
                "description": f"List of {plural}. More info: {_CONVENTIONS}",
                "type": "array",
                "items": {"$ref": (V2_PREFIX if v2 else V3_PREFIX) + kind_name},
            },
            "metadata": _ref(LIST_META, LIST_META_DESCRIPTION, v2=v2),
            "apiVersion": _type_meta("apiVersion"),
            "kind": _type_meta("kind"),
        },
        "x-kubernetes-group-version-kind": [
            {"group": group, "kind": list_kind, "version": version}
        ],
    }
    if selectable:
        out["x-kubernetes-selectable-fields"] = _selectable(selectable)
    return out
