"""The OpenAPI v2 document (``/openapi/v2``): Swagger 2.0 JSON, or gnostic protobuf.

kube-apiserver still serves one Swagger 2.0 document for everything it serves, and
kubectl still reads it: ``kubectl explain --output=plaintext-openapiv2``, and client-side
validation when a kind is missing from ``/openapi/v3`` (a CRD and one of its objects in
one file: kubectl looks the new kind up in v2, finds nothing, skips validation and then
says the kind has no mapping — "ensure CRDs are installed first"). client-go's
``OpenAPISchema`` asks only for the protobuf form
(``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``: gnostic's
``openapi.v2.Document``) and cannot read JSON, so both forms are served, chosen by the
``Accept`` header as kube-openapi's handler chooses, with an ``ETag`` (the SHA-512 of the
JSON form) and 304 for a matching ``If-None-Match``.

The document holds, for every served resource, the paths and operations
``openapi.resource_paths`` describes (kube-apiserver's: the collection, the all-namespaces
list, the object, ``/status``, ``/scale``; operationIds such as
``patchAppsV1NamespacedDeployment``, tags, ``x-kubernetes-action`` and
``x-kubernetes-group-version-kind``, the ``fieldValidation`` parameter kubectl looks
for), and the discovery paths of the built-in groups. As kube-openapi's builder does, the
query parameters and ``namespace`` are published once in the top-level ``parameters``
section, named ``<name>-<8 characters of a content hash>``, and operations and paths name
them by ``$ref`` (kubectl resolves such references when it looks for a parameter); a body
parameter and a path's ``name`` stay inline. Definitions are the vendored Kubernetes ones
for built-in kinds (and what they reference), and for custom resources their structural
schema in v2 form (``nullable``, ``oneOf``/``anyOf``/``not`` dropped as kube-apiserver's
v2 conversion drops them, and ``default`` pruned as kube-apiserver prunes it from the CRD
definitions it merges into its v2 document) with their group-version-kind, and their list
kind. Each type's
share (paths, definitions and their protobuf entries) is built once and kept until that
type changes; after a change the document is assembled again from those shares on the
next request.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass
from typing import Any

import orjson

from kubewerk.apiserver import openapi_crd
from kubewerk.apiserver.discovery import KUBE_MAJOR, KUBE_MINOR
from kubewerk.apiserver.openapi import (
    LIST_META,
    OBJECT_META,
    OBJECT_META_SCHEMA,
    QUERY_PARAMETERS,
    STATIC_PATHS,
    Operation,
    PathItem,
    add_tags_and_kind,
    crd_kind_schema,
    discovery_path,
    kind_names,
    list_schema,
    publishes_list,
    resource_paths,
)
from kubewerk.apiserver.registry import Registry, ServedResource

JSON = dict[str, Any]

PROTOBUF_MEDIA_TYPES = (
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
)
PROTOBUF_CONTENT_TYPE = PROTOBUF_MEDIA_TYPES[1]
"""What a protobuf answer says it is (kube-openapi answers the dotted form for both)."""
_REF = "#/definitions/"
_STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"


# -- the Swagger document -----------------------------------------------------------


def _query(name: str) -> JSON:
    kind, description = QUERY_PARAMETERS[name]
    return {
        "uniqueItems": True,
        "type": kind,
        "description": description,
        "name": name,
        "in": "query",
    }


def _shared_name(param: JSON) -> str:
    """The top-level name kube-openapi gives a shared parameter: its name, a dash and the
    URL-safe base64 of the first 6 bytes of the SHA-224 of its JSON (8 characters)."""
    digest = hashlib.sha224(orjson.dumps(param, option=orjson.OPT_SORT_KEYS)).digest()
    return f"{param['name']}-{base64.urlsafe_b64encode(digest[:6]).decode()}"


_NAMESPACE = {
    "uniqueItems": True,
    "type": "string",
    "description": "object name and auth scope, such as for teams and projects",
    "name": "namespace",
    "in": "path",
    "required": True,
}
SHARED_PARAMETERS: dict[str, JSON] = {
    _shared_name(p): p for p in (*(_query(q) for q in QUERY_PARAMETERS), _NAMESPACE)
}
"""The document's top-level ``parameters``: every query parameter an operation names, and
the ``namespace`` path parameter (the same on every namespaced path)."""
_PARAM_REFS: dict[str, JSON] = {
    p["name"]: {"$ref": "#/parameters/" + name} for name, p in SHARED_PARAMETERS.items()
}
"""By parameter name, the reference into ``SHARED_PARAMETERS`` every operation and path
holds (these very dicts, whose encoding is made once)."""


def _operation(op: Operation) -> JSON:
    """``op`` as a Swagger 2.0 operation, as kube-openapi's v2 builder writes it: the body
    parameter inline, the query parameters by reference, in name order."""
    params: list[JSON] = []
    if op.body is not None:
        body: JSON = {"name": "body", "in": "body", "schema": {"$ref": _REF + op.body}}
        if op.body_required:
            body["required"] = True
        params.append(body)
    params.extend(_PARAM_REFS[q] for q in op.query)
    out: JSON = {"description": op.description}
    if op.body_types:
        out["consumes"] = list(op.body_types)
    out["produces"] = list(op.produces)
    out["schemes"] = ["https"]
    out["operationId"] = op.operation_id
    out["parameters"] = params
    responses: JSON = {}
    for code, description, ref in op.responses:
        response: JSON = {"description": description}
        if ref is not None:
            response["schema"] = {"$ref": _REF + ref}
        responses[code] = response
    out["responses"] = responses
    add_tags_and_kind(out, op)
    return out


def _path_item(item: PathItem) -> JSON:
    """``item`` as a Swagger 2.0 path item: its operations and its path-level parameters
    (the path parameters and the query parameters every operation shares)."""
    out: JSON = {op.method: _operation(op) for op in item.operations}
    params: list[tuple[str, JSON]] = [(q, _PARAM_REFS[q]) for q in item.common]
    for name, description in item.path_params:
        if name == "namespace":
            params.append((name, _PARAM_REFS[name]))
        else:
            params.append(
                (
                    name,
                    {
                        "uniqueItems": True,
                        "type": "string",
                        "description": description,
                        "name": name,
                        "in": "path",
                        "required": True,
                    },
                )
            )
    if params:
        out["parameters"] = [p for _, p in sorted(params, key=lambda pair: pair[0])]
    return out


def _v2_schema(value: Any) -> JSON:
    """A schema node as a CRD's v2 definition carries it below the root: its structural
    form (``openapi_crd.structural``) converted by ``ToStructuralOpenAPIV2``
    (``openapi_crd.to_openapi_v2``), with no ``default`` (``PruneDefaults``)."""
    return openapi_crd.to_openapi_v2(openapi_crd.structural(value))


class BuildCounts:
    """How many parts were built (not taken from cache) since start: what the scale tests
    count to see that one CRD's change builds only its own type's part (``v2_types``) and
    regathers only its group (``v2_groups``)."""

    __slots__ = ("v2_groups", "v2_types")

    def __init__(self) -> None:
        self.v2_groups = 0
        self.v2_types = 0


BUILDS = BuildCounts()


@dataclass
class _Part:
    """One served type's share of the document (or a group's, gathered from its types'):
    its paths, the definitions of its versions that are not vendored, and the vendored
    definitions it needs; with their protobuf encodings, made on first use."""

    paths: JSON
    definitions: JSON
    vendored: list[str]
    _paths_pb: dict[str, bytes] | None = None
    _definitions_pb: dict[str, bytes] | None = None

    def paths_pb(self) -> dict[str, bytes]:
        if self._paths_pb is None:
            self._paths_pb = {k: _path_entry(k, v) for k, v in self.paths.items()}
        return self._paths_pb

    def definitions_pb(self) -> dict[str, bytes]:
        if self._definitions_pb is None:
            self._definitions_pb = {k: _definition_entry(k, v) for k, v in self.definitions.items()}
        return self._definitions_pb


_PART_KEY = ("openapi.v2.part",)


def _type_part(rtype: ServedResource) -> _Part:
    """``rtype``'s part, kept on it (``ServedResource.derived``): built once per served
    type, so a CRD's change (a new served type) builds its own part and nothing else."""
    found = rtype.derived.get(_PART_KEY)
    if isinstance(found, _Part):
        return found
    BUILDS.v2_types += 1
    part = _Part({}, {}, [])
    for version in rtype.versions:
        kind_name, list_name, vendored = kind_names(rtype, version)
        if not vendored:
            part.definitions[kind_name] = crd_kind_schema(rtype, version, v2=True)
            if publishes_list(rtype):
                part.definitions[list_name] = list_schema(rtype, version, v2=True)
                part.vendored.append(LIST_META)
        for item in resource_paths(rtype, version, kind_name, list_name):
            part.paths[item.path] = _path_item(item)
            for op in item.operations:
                names = [r for _, _, r in op.responses if r is not None]
                if op.body is not None:
                    names.append(op.body)
                part.vendored.extend(n for n in names if n not in part.definitions)
    rtype.derived[_PART_KEY] = part
    return part


def _group_parts(registry: Registry, group: str) -> list[_Part]:
    """The parts of ``group``'s types, gathered until a type of that group changes."""

    def build() -> list[_Part]:
        BUILDS.v2_groups += 1
        return [_type_part(rtype) for rtype in registry.group(group)]

    parts: list[_Part] = registry.memo(("openapi.v2",), build, group)
    return parts


def warm_group(registry: Registry, group: str) -> bool:
    """Build the parts of ``group``'s types and their protobuf entries now, unless already
    gathered; whether anything was gathered. (The CRD controller calls it when idle.)"""
    if registry.has_memo(("openapi.v2",), group):
        return False
    for part in _group_parts(registry, group):
        part.paths_pb()
        part.definitions_pb()
    return True


def _assemble(registry: Registry) -> tuple[JSON, list[_Part]]:
    """The whole document from the groups' parts (only changed groups are rebuilt)."""
    from kubewerk.apiserver.kinds import k8s_openapi

    # groups by name (core first), so the paths come near the byte order kube-apiserver
    # writes them in, not in discovery's priority order
    groups = sorted(registry.group_names(), key=lambda g: (g != "", g))
    parts = [part for g in groups for part in _group_parts(registry, g)]
    paths: JSON = {}
    definitions: JSON = {}
    vendored: list[str] = [OBJECT_META, _STATUS]
    for part in parts:
        paths.update(part.paths)
        definitions.update(part.definitions)
        vendored.extend(part.vendored)
    for item in _discovery_items(registry, groups):
        paths[item.path] = _path_item(item)
        vendored.extend(r for op in item.operations for _, _, r in op.responses if r is not None)
    for name in k8s_openapi.closure(vendored):
        schema = k8s_openapi.definition(name)
        if schema is not None:
            definitions[name] = schema
    definitions.setdefault(OBJECT_META, _v2_schema(OBJECT_META_SCHEMA))
    doc = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": f"v{KUBE_MAJOR}.{KUBE_MINOR}.0"},
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(definitions.items())),
        "parameters": dict(sorted(SHARED_PARAMETERS.items())),
    }
    return doc, parts


def _discovery_items(registry: Registry, groups: list[str]) -> list[PathItem]:
    """The discovery paths kube-apiserver's document holds beside the resources':
    ``/api/``, ``/apis/``, ``/version/``, and for each group of built-in kinds ``/apis/G/``
    and each of its versions' ``/apis/G/V/`` (``/api/v1/`` for core)."""
    items = [discovery_path("", None), *STATIC_PATHS.values()]
    for group in groups:
        types = [t for t in registry.group(group) if t.builtin]
        if not types:
            continue
        if group:
            items.append(discovery_path(group, None))
        for version in sorted({v for t in types for v in t.versions}):
            items.append(discovery_path(group, version))
    return items


def document(registry: Registry) -> JSON:
    """The whole Swagger 2.0 document of what ``registry`` serves."""
    return _assemble(registry)[0]


# -- gnostic protobuf ---------------------------------------------------------------------


class _Writer:
    """Protocol buffer wire format, written field by field (proto3: zero values are
    left out)."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def data(self) -> bytes:
        return b"".join(self.parts)

    @staticmethod
    def _varint(value: int) -> bytes:
        if 0 <= value < 128:
            return _SMALL_VARINTS[value]
        if value < 0:
            value += 1 << 64
        out = bytearray()
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                out.append(byte | 0x80)
            else:
                out.append(byte)
                return bytes(out)

    def _key(self, field: int, wire: int) -> None:
        self.parts.append(self._varint((field << 3) | wire))

    def string(self, field: int, value: Any) -> None:
        if isinstance(value, str) and value:
            self.message(field, value.encode())

    def strings(self, field: int, values: Any) -> None:
        for value in values if isinstance(values, list) else []:
            if isinstance(value, str):
                self.message(field, value.encode(), keep_empty=True)

    def boolean(self, field: int, value: Any) -> None:
        if value is True:
            self._key(field, 0)
            self.parts.append(b"\x01")

    def int64(self, field: int, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value:
            self._key(field, 0)
            self.parts.append(self._varint(value))

    def double(self, field: int, value: Any) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool) and value:
            self._key(field, 1)
            self.parts.append(struct.pack("<d", float(value)))

    def message(self, field: int, payload: bytes, keep_empty: bool = False) -> None:
        parts = self.parts
        parts.append(
            _SMALL_VARINTS[(field << 3) | 2] if field < 16 else self._varint((field << 3) | 2)
        )
        size = len(payload)
        parts.append(_SMALL_VARINTS[size] if size < 128 else self._varint(size))
        parts.append(payload)


_SMALL_VARINTS = tuple(bytes((n,)) for n in range(128))
"""The one-byte varints (0-127): most keys and lengths."""


def _named_value(name: str, value: bytes) -> bytes:
    """A gnostic ``Named*`` pair: name (1) and value (2)."""
    w = _Writer()
    w.string(1, name)
    w.message(2, value, keep_empty=True)
    return w.data()


def _wrap(field: int, payload: bytes) -> bytes:
    """A message holding ``payload`` as its field ``field`` (oneof wrappers)."""
    w = _Writer()
    w.message(field, payload, keep_empty=True)
    return w.data()


def _any(value: Any) -> bytes:
    """gnostic ``Any``: the value as YAML text (JSON is YAML), field 2."""
    w = _Writer()
    w.message(2, orjson.dumps(value), keep_empty=True)
    return w.data()


def _vendor_extensions(w: _Writer, field: int, obj: JSON) -> None:
    for key, value in obj.items():
        if key.startswith("x-"):
            w.message(field, _named_value(key, _any(value)))


def _schema(schema: JSON) -> bytes:
    w = _Writer()
    w.string(1, schema.get("$ref"))
    w.string(2, schema.get("format"))
    w.string(3, schema.get("title"))
    w.string(4, schema.get("description"))
    if "default" in schema:
        w.message(5, _any(schema["default"]))
    w.double(6, schema.get("multipleOf"))
    w.double(7, schema.get("maximum"))
    w.boolean(8, schema.get("exclusiveMaximum"))
    w.double(9, schema.get("minimum"))
    w.boolean(10, schema.get("exclusiveMinimum"))
    w.int64(11, schema.get("maxLength"))
    w.int64(12, schema.get("minLength"))
    w.string(13, schema.get("pattern"))
    w.int64(14, schema.get("maxItems"))
    w.int64(15, schema.get("minItems"))
    w.boolean(16, schema.get("uniqueItems"))
    w.int64(17, schema.get("maxProperties"))
    w.int64(18, schema.get("minProperties"))
    w.strings(19, schema.get("required"))
    for value in schema.get("enum") or []:
        w.message(20, _any(value))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        w.message(21, _wrap(1, _schema(extra)), keep_empty=True)
    elif isinstance(extra, bool):
        w.message(21, b"\x10\x01" if extra else b"\x10\x00", keep_empty=True)
    kind = schema.get("type")
    if isinstance(kind, str):
        kind = [kind]
    if isinstance(kind, list):
        types = _Writer()
        types.strings(1, kind)
        w.message(22, types.data(), keep_empty=True)
    items = schema.get("items")
    if isinstance(items, dict):
        items = [items]
    if isinstance(items, list):
        listed = _Writer()
        for sub in items:
            if isinstance(sub, dict):
                listed.message(1, _schema(sub), keep_empty=True)
        w.message(23, listed.data(), keep_empty=True)
    for sub in schema.get("allOf") or []:
        if isinstance(sub, dict):
            w.message(24, _schema(sub), keep_empty=True)
    props = schema.get("properties")
    if isinstance(props, dict):
        w.message(25, _named_schemas(props), keep_empty=True)
    w.string(26, schema.get("discriminator"))
    w.boolean(27, schema.get("readOnly"))
    if "example" in schema:
        w.message(30, _any(schema["example"]))
    _vendor_extensions(w, 31, schema)
    return w.data()


def _named_schemas(schemas: JSON) -> bytes:
    """``Properties``/``Definitions``: repeated NamedSchema (field 1), in order."""
    w = _Writer()
    for name, value in schemas.items():
        if isinstance(value, dict):
            w.message(1, _named_value(name, _schema(value)))
    return w.data()


def _parameter_item(param: JSON) -> bytes:
    """A ``ParametersItem``: a ``JsonReference`` (field 2) for ``{"$ref": ...}``, otherwise
    the ``Parameter`` itself (field 1)."""
    ref = param.get("$ref")
    if isinstance(ref, str):
        reference = _Writer()
        reference.string(1, ref)
        return _wrap(2, reference.data())
    return _wrap(1, _parameter(param))


def _parameter(param: JSON) -> bytes:
    """A ``Parameter`` holding a body or a query/path/header parameter."""
    if param.get("in") == "body":
        body = _Writer()
        body.string(1, param.get("description"))
        body.string(2, param.get("name"))
        body.string(3, "body")
        body.boolean(4, param.get("required"))
        body.message(5, _schema(param.get("schema") or {}), keep_empty=True)
        parameter = _wrap(1, body.data())
    else:
        where = param.get("in", "")
        field = {"query": 3, "path": 4, "header": 1}.get(where, 3)
        q = _Writer()
        q.boolean(1, param.get("required"))
        q.string(2, where)
        q.string(3, param.get("description"))
        q.string(4, param.get("name"))
        q.string(6 if field == 3 else 5, param.get("type"))
        q.boolean(20 if field == 3 else 19, param.get("uniqueItems"))
        parameter = _wrap(2, _wrap(field, q.data()))
    return parameter


def _responses(responses: JSON) -> bytes:
    w = _Writer()
    for code, response in responses.items():
        body = _Writer()
        body.string(1, response.get("description"))
        schema = response.get("schema")
        if isinstance(schema, dict):
            body.message(2, _wrap(1, _schema(schema)))
        w.message(1, _named_value(code, _wrap(1, body.data())))
    return w.data()


_SHARED_PARAMS: dict[int, tuple[JSON, bytes]] = {}
"""The references every write operation holds, encoded once (as field 8 of an
Operation), by the identity of their dict."""


def _shared_params() -> None:
    for param in _PARAM_REFS.values():
        w = _Writer()
        w.message(8, _parameter_item(param), keep_empty=True)
        _SHARED_PARAMS[id(param)] = (param, w.data())


_FIELD_MEMO: dict[tuple[int, bytes], bytes] = {}
"""Encoded operation fields by (field, JSON text of the value): media types, schemes,
responses, parameters and extensions repeat across the operations of a type and across
types. Emptied whenever it reaches ``_FIELD_MEMO_SIZE`` entries, so it stays bounded."""
_FIELD_MEMO_SIZE = 4096


def _encoded_field(field: int, value: Any) -> bytes:
    """Operation field ``field`` (6, 7, 10: a string list; 8: one non-shared parameter; 9:
    the responses; 13: one vendor extension, given as a ``[name, value]`` pair) encoded
    with its key and length, from ``_FIELD_MEMO`` when the same value was encoded before.
    The memo key is the value's JSON text, which fixes everything the encoding reads
    (types, key order, strings), so a hit is exactly the bytes a fresh encoding gives."""
    key = (field, orjson.dumps(value))
    found = _FIELD_MEMO.get(key)
    if found is None:
        w = _Writer()
        if field in (6, 7, 10):
            w.strings(field, value)
        elif field == 8:
            w.message(8, _parameter_item(value), keep_empty=True)
        elif field == 9:
            w.message(9, _responses(value), keep_empty=True)
        else:
            w.message(13, _named_value(value[0], _any(value[1])))
        if len(_FIELD_MEMO) >= _FIELD_MEMO_SIZE:
            _FIELD_MEMO.clear()
        found = _FIELD_MEMO[key] = w.data()
    return found


def _operation_pb(op: JSON) -> bytes:
    """One ``Operation`` (what ``_operation`` builds, or any Swagger operation)."""
    if not _SHARED_PARAMS:
        _shared_params()
    w = _Writer()
    parts = w.parts
    w.strings(1, op.get("tags"))
    w.string(2, op.get("summary"))
    w.string(3, op.get("description"))
    w.string(5, op.get("operationId"))
    for field, name in ((6, "produces"), (7, "consumes")):
        value = op.get(name)
        if isinstance(value, list):
            parts.append(_encoded_field(field, value))
    for param in op.get("parameters") or []:
        shared = _SHARED_PARAMS.get(id(param))
        if shared is None or shared[0] is not param:
            parts.append(_encoded_field(8, param))
        else:
            parts.append(shared[1])
    parts.append(_encoded_field(9, op.get("responses") or {}))
    schemes = op.get("schemes")
    if isinstance(schemes, list):
        parts.append(_encoded_field(10, schemes))
    w.boolean(11, op.get("deprecated"))
    for key, value in op.items():
        if key.startswith("x-"):
            parts.append(_encoded_field(13, [key, value]))
    return w.data()


_METHOD_FIELDS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_entry(name: str, item: JSON, memo: dict[tuple[int, bytes], bytes] | None = None) -> bytes:
    """One ``Paths.path`` entry (field 2: a NamedPathItem), key and length included.
    ``memo``: see ``_operation_pb`` (one is shared by the paths of one part)."""
    if memo is None:
        memo = {}
    methods = _Writer()
    for method, op in item.items():
        field = _METHOD_FIELDS.get(method)
        if field is not None:
            methods.message(field, _operation_pb(op), keep_empty=True)
    if not _SHARED_PARAMS:
        _shared_params()
    for param in item.get("parameters") or []:  # PathItem.parameters (9)
        shared = _SHARED_PARAMS.get(id(param))
        encoded = (
            shared[1] if shared is not None and shared[0] is param else _encoded_field(8, param)
        )
        # the same ParametersItem as an Operation's field 8, keyed as field 9
        methods.parts.append(b"\x4a" + encoded[1:])
    w = _Writer()
    w.message(2, _named_value(name, methods.data()))
    return w.data()


def _definition_entry(name: str, schema: Any) -> bytes:
    """One ``Definitions.additional_properties`` entry (field 1: a NamedSchema), key and
    length included; empty for a value that is not a schema object."""
    if not isinstance(schema, dict):
        return b""
    w = _Writer()
    w.message(1, _named_value(name, _schema(schema)))
    return w.data()


_VENDORED_PB: dict[str, bytes] = {}
"""Encoded vendored definitions (they never change while the process runs)."""


def encode_protobuf(
    doc: JSON,
    known_paths: dict[str, bytes] | None = None,
    known_definitions: dict[str, bytes] | None = None,
) -> bytes:
    """``doc`` as gnostic's ``openapi.v2.Document`` (what client-go's ``OpenAPISchema``
    decodes). ``known_paths``/``known_definitions`` hold entries already encoded (from
    ``_Part``); only the others are encoded here."""
    known_paths = known_paths or {}
    known_definitions = known_definitions or {}
    path_entries = []
    for name, item in (doc.get("paths") or {}).items():
        entry = known_paths.get(name)
        path_entries.append(entry if entry is not None else _path_entry(name, item))
    definition_entries = []
    for name, schema in (doc.get("definitions") or {}).items():
        entry = known_definitions.get(name)
        if entry is None:
            entry = _definition_entry(name, schema)
        definition_entries.append(entry)
    info = doc.get("info") or {}
    info_w = _Writer()
    info_w.string(1, info.get("title"))
    info_w.string(2, info.get("version"))
    w = _Writer()
    w.string(1, doc.get("swagger"))
    w.message(2, info_w.data(), keep_empty=True)
    w.message(8, b"".join(path_entries), keep_empty=True)
    w.message(9, b"".join(definition_entries), keep_empty=True)
    parameters = doc.get("parameters") or {}
    if parameters:
        named = _Writer()
        for name, param in parameters.items():
            if isinstance(param, dict):
                named.message(1, _named_value(name, _parameter(param)))
        w.message(10, named.data(), keep_empty=True)
    return w.data()


# -- serving --------------------------------------------------------------------------------


@dataclass
class Encoded:
    """One registry generation's document in both forms, with its ETag. The protobuf
    form is made on first request, reusing each group's encoded entries."""

    generation: int
    json: bytes
    etag: str
    _protobuf: bytes | None = None
    _doc: JSON | None = None
    _parts: list[_Part] | None = None

    def protobuf(self) -> bytes:
        if self._protobuf is None:
            doc = self._doc if self._doc is not None else orjson.loads(self.json)
            known_paths: dict[str, bytes] = {}
            known_definitions: dict[str, bytes] = {}
            paths = doc.get("paths") or {}
            definitions = doc.get("definitions") or {}
            for part in self._parts or ():
                # a part's entry stands for the document's only where the document holds
                # that part's very value (a vendored definition of the same name wins)
                for name, entry in part.paths_pb().items():
                    if paths.get(name) is part.paths[name]:
                        known_paths[name] = entry
                for name, entry in part.definitions_pb().items():
                    if definitions.get(name) is part.definitions[name]:
                        known_definitions[name] = entry
            for name, schema in definitions.items():
                if name not in known_definitions:
                    vendored = _VENDORED_PB.get(name)
                    if vendored is None and name in _vendored_names():
                        vendored = _VENDORED_PB[name] = _definition_entry(name, schema)
                    if vendored is not None:
                        known_definitions[name] = vendored
            self._protobuf = encode_protobuf(doc, known_paths, known_definitions)
            self._doc = None
            self._parts = None
        return self._protobuf


def _vendored_names() -> Any:
    from kubewerk.apiserver.kinds import k8s_openapi

    return k8s_openapi.definitions()


def encoded(registry: Registry) -> Encoded:
    """The document of ``registry``'s current generation: assembled on first request
    after a change from the groups' parts, of which only the changed groups' are built
    again."""

    def build() -> Encoded:
        doc, parts = _assemble(registry)
        payload = orjson.dumps(doc)
        etag = '"' + hashlib.sha512(payload).hexdigest().upper() + '"'
        return Encoded(registry.generation, payload, etag, None, doc, parts)

    return registry.memo(("openapi.v2.encoded",), build)


def wants_protobuf(accept: str) -> bool:
    """Whether an ``Accept`` header asks for the protobuf form before JSON (kube-openapi
    serves the first of its types the header names, JSON when none is named)."""
    best: tuple[float, int, bool] | None = None
    for index, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        quality = 1.0
        for param in fields[1:]:
            if param.startswith("q="):
                try:
                    quality = float(param[2:])
                except ValueError:
                    quality = 0.0
        is_pb = media in PROTOBUF_MEDIA_TYPES
        if not is_pb and media not in ("application/json", "*/*", "application/*"):
            continue
        if quality <= 0:
            continue
        key = (-quality, index, is_pb)
        if best is None or key < best:
            best = key
    return best is not None and best[2]
