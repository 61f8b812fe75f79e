"""OpenAPI v3 documents (``/openapi/v3``), built from the CRD schemas and the built-in kinds.

Each group-version document carries, for every kind, a schema named as kube-apiserver
names it (``com.example.v1.Widget``) with ``x-kubernetes-group-version-kind``, and paths
whose operations list the ``fieldValidation`` parameter: that is how ``kubectl`` decides
to leave validation to the server and how ``kubectl explain`` finds a kind's fields.

A built-in kind marked ``vendored_openapi`` (every kind ``apiserver.builtins`` declares)
is served with its vendored definition (``kinds.k8s_openapi``: the published Kubernetes
definitions) and every definition it references, as
kube-apiserver serves them; ObjectMeta is the vendored one too. Others (and custom
resources) use ``ServedResource.schemas``. Each group-version's document (and its hash)
is built on first request and kept until a type of that group changes
(``Registry.memo``), so a change to one CRD rebuilds one group's documents, not all.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from kubewerk.apiserver.discovery import KUBE_MAJOR, KUBE_MINOR
from kubewerk.apiserver.registry import Registry, ServedResource
from kubewerk.core.jsoncopy import copy_tree

JSON = dict[str, Any]

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_REF = "#/components/schemas/"

_STR = {"type": "string"}
_STR_MAP = {"type": "object", "additionalProperties": {"type": "string", "default": ""}}

OBJECT_META_SCHEMA: JSON = {
    "description": "ObjectMeta is metadata that all persisted "
    "resources must have, which includes all objects users must create.",
    "type": "object",
    "properties": {
        "annotations": {
            **_STR_MAP,
            "description": "Annotations is an unstructured key value map stored with a "
            "resource that may be set by external tools to store and retrieve arbitrary metadata.",
        },
        "creationTimestamp": {
            "type": "string",
            "format": "date-time",
            "description": "CreationTimestamp is a "
            "timestamp representing the server time when this object was created.",
        },
        "deletionGracePeriodSeconds": {
            "type": "integer",
            "format": "int64",
            "description": "Number of seconds allowed for this object to gracefully terminate.",
        },
        "deletionTimestamp": {
            "type": "string",
            "format": "date-time",
            "description": "DeletionTimestamp is RFC "
            "3339 date and time at which this resource will be deleted.",
        },
        "finalizers": {
            "type": "array",
            "items": {"type": "string", "default": ""},
            "x-kubernetes-list-type": "set",
            "x-kubernetes-patch-strategy": "merge",
            "description": "Must be empty before the object is deleted from the registry.",
        },
        "generateName": {
            **_STR,
            "description": "GenerateName is an optional prefix, used by the server, to "
            "generate a unique name ONLY IF the Name field has not been provided.",
        },
        "generation": {
            "type": "integer",
            "format": "int64",
            "description": "A sequence number representing a "
            "specific generation of the desired state.",
        },
        "labels": {
            **_STR_MAP,
            "description": "Map of string keys and values that can be used to organize and "
            "categorize (scope and select) objects.",
        },
        "managedFields": {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "description": "ManagedFields maps workflow-id and version "
            "to the set of fields that are managed by that workflow.",
        },
        "name": {**_STR, "description": "Name must be unique within a namespace."},
        "namespace": {
            **_STR,
            "description": "Namespace defines the space within which each name must be unique.",
        },
        "ownerReferences": {
            "type": "array",
            "x-kubernetes-list-map-keys": ["uid"],
            "x-kubernetes-list-type": "map",
            "x-kubernetes-patch-merge-key": "uid",
            "x-kubernetes-patch-strategy": "merge",
            "description": "List of objects depended by this object.",
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "description": "OwnerReference contains enough "
                "information to let you identify an owning object.",
                "properties": {
                    "apiVersion": {**_STR, "description": "API version of the referent."},
                    "blockOwnerDeletion": {
                        "type": "boolean",
                        "description": "If true, AND if the owner has the "
                        '"foregroundDeletion" finalizer, then the owner cannot be deleted '
                        "from the key-value store until this reference is removed.",
                    },
                    "controller": {
                        "type": "boolean",
                        "description": "If true, this reference points to the managing controller.",
                    },
                    "kind": {**_STR, "description": "Kind of the referent."},
                    "name": {**_STR, "description": "Name of the referent."},
                    "uid": {**_STR, "description": "UID of the referent."},
                },
            },
        },
        "resourceVersion": {
            **_STR,
            "description": "An opaque value that represents the internal version of this "
            "object that can be used by clients to determine when objects have changed.",
        },
        "selfLink": {
            **_STR,
            "description": "Deprecated: selfLink is a legacy read-only field that is no longer "
            "populated by the system.",
        },
        "uid": {
            **_STR,
            "description": "UID is the unique in time and space value for this object.",
        },
    },
}


# built-in groups whose Go types live outside k8s.io/api/<group>
_PACKAGES = {"apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"}


def schema_name(rtype: ServedResource, version: str) -> str:
    """The name kube-apiserver gives a kind's schema: the Go package path reversed
    (``io.k8s.api.<group's first label or core>`` for built-in kinds, the reversed group
    for custom resources), the version, the kind."""
    if rtype.builtin:
        package = _PACKAGES.get(rtype.group) or f"io.k8s.api.{rtype.group.split('.')[0] or 'core'}"
        return f"{package}.{version}.{rtype.kind}"
    return ".".join(reversed(rtype.group.split("."))) + f".{version}.{rtype.kind}"


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _kind_schema(rtype: ServedResource, version: str) -> JSON:
    base = rtype.schemas.get(version) or {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    schema: JSON = copy_tree(base)
    props = schema.setdefault("properties", {})
    props["apiVersion"] = {
        "type": "string",
        "description": "APIVersion defines the versioned schema of this "
        "representation of an object. Servers should convert recognized schemas to the latest "
        "internal value, and may reject unrecognized values.",
    }
    props["kind"] = {
        "type": "string",
        "description": "Kind is a string value representing the REST resource this object "
        "represents. Servers may infer this from the endpoint the client submits requests to.",
    }
    props["metadata"] = {
        "allOf": [{"$ref": _REF + OBJECT_META}],
        "description": "Standard object's metadata. More "
        "info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
        "api-conventions.md#metadata",
    }
    schema.setdefault("type", "object")
    schema["x-kubernetes-group-version-kind"] = [
        {"group": rtype.group, "kind": rtype.kind, "version": version}
    ]
    return schema


_PARAM_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "schema": {"type": "string", "uniqueItems": True},
    "description": "fieldValidation instructs the server on how to "
    "handle objects in the request (POST/PUT/PATCH) containing unknown "
    "or duplicate fields. Valid values are: - Ignore - Warn - Strict",
}
_PARAM_DRY_RUN = {
    "name": "dryRun",
    "in": "query",
    "schema": {"type": "string", "uniqueItems": True},
    "description": "When present, indicates that modifications should not be persisted.",
}
_PARAM_FIELD_MANAGER = {
    "name": "fieldManager",
    "in": "query",
    "schema": {"type": "string", "uniqueItems": True},
}


def _operation(
    action: str, rtype: ServedResource, version: str, ref: str, params: list[JSON], body: bool
) -> JSON:
    op: JSON = {
        "operationId": f"{action}{rtype.kind}",
        "parameters": params,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": rtype.group,
            "kind": rtype.kind,
            "version": version,
        },
    }
    if body:
        types = ["application/json", "application/yaml"]
        if action == "patch":
            types = [
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]
            if rtype.strategic_kind:
                types.append("application/strategic-merge-patch+json")
        op["requestBody"] = {
            "content": {t: {"schema": {"$ref": ref}} for t in types},
            "required": True,
        }
    return op


def _vendored_name(rtype: ServedResource, version: str) -> str | None:
    if not rtype.builtin or not rtype.vendored_openapi:
        return None
    from kubewerk.apiserver.kinds import k8s_openapi

    return k8s_openapi.definition_name(rtype.group, version, rtype.kind)


def _vendored_schemas(names: list[str]) -> JSON:
    """The v3 form of ``names`` and of every definition they reach."""
    from kubewerk.apiserver.kinds import k8s_openapi

    out: JSON = {}
    for name in k8s_openapi.closure(names):
        schema = k8s_openapi.v3_definition(name)
        if schema is not None:
            out[name] = schema
    return out


class BuildCounts:
    """How many documents were built (not served from cache) since start: what the
    scale tests count to see that one CRD's change rebuilds only its own group."""

    __slots__ = ("v3_documents",)

    def __init__(self) -> None:
        self.v3_documents = 0


BUILDS = BuildCounts()


def _split_gv(gv: str) -> tuple[str, str] | None:
    parts = gv.split("/")
    if parts[0] == "api" and len(parts) == 2:
        return "", parts[1]
    if parts[0] == "apis" and len(parts) == 3:
        return parts[1], parts[2]
    return None


def document(registry: Registry, gv: str) -> JSON | None:
    """The OpenAPI v3 document for ``api/v1`` or ``apis/G/V``; None when not served.
    Reads only the types of that group."""
    split = _split_gv(gv)
    if split is None:
        return None
    group, version = split
    types = [t for t in registry.group(group) if version in t.versions]
    if not types:
        return None
    BUILDS.v3_documents += 1
    vendored = [n for t in types if (n := _vendored_name(t, version)) is not None]
    schemas: JSON = _vendored_schemas([*vendored, OBJECT_META]) if vendored else {}
    schemas.setdefault(OBJECT_META, OBJECT_META_SCHEMA)
    paths: JSON = {}
    prefix = "/" + _gv_path(group, version)
    write = [_PARAM_DRY_RUN, _PARAM_FIELD_MANAGER, _PARAM_FIELD_VALIDATION]
    for t in types:
        vendored_name = _vendored_name(t, version)
        if vendored_name is not None and vendored_name in schemas:
            name = vendored_name
        else:
            name = schema_name(t, version)
            schemas[name] = _kind_schema(t, version)
        ref = _REF + name
        base = (
            f"{prefix}/namespaces/{{namespace}}/{t.resource}"
            if t.namespaced
            else f"{prefix}/{t.resource}"
        )
        paths[base] = {
            "get": _operation("list", t, version, ref, [], False),
            "post": _operation("post", t, version, ref, write, True),
        }
        item = {
            "get": _operation("get", t, version, ref, [], False),
            "put": _operation("put", t, version, ref, write, True),
            "patch": _operation("patch", t, version, ref, write, True),
            "delete": _operation("delete", t, version, ref, [_PARAM_DRY_RUN], False),
        }
        paths[base + "/{name}"] = item
        if t.status_subresource:
            paths[base + "/{name}/status"] = {k: v for k, v in item.items() if k != "delete"}
        if t.scale is not None:
            scale_ref = _REF + _SCALE
            if _SCALE not in schemas:
                schemas.update(_vendored_schemas([_SCALE]))
            paths[base + "/{name}/scale"] = {
                "get": _operation("get", t, version, scale_ref, [], False),
                "put": _operation("put", t, version, scale_ref, write, True),
                "patch": _operation("patch", t, version, scale_ref, write, True),
            }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"v{KUBE_MAJOR}.{KUBE_MINOR}.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


_SCALE = "io.k8s.api.autoscaling.v1.Scale"


def encoded_document(registry: Registry, gv: str) -> bytes | None:
    """``document`` as JSON bytes (keys sorted), kept until a type of its group changes."""
    split = _split_gv(gv)
    if split is None:
        return None
    group, version = split
    return registry.memo(("openapi.v3", version), lambda: _encode(registry, gv), group)


def _encode(registry: Registry, gv: str) -> bytes | None:
    doc = document(registry, gv)
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS) if doc is not None else None


def document_hash(registry: Registry, group: str, version: str) -> str:
    """The ``hash`` of a group-version's URL in the index: the first 64 hex digits
    (upper case) of the SHA-512 of its document's bytes, so it changes exactly when the
    document does; kept until a type of the group changes."""

    def build() -> str:
        encoded = encoded_document(registry, _gv_path(group, version)) or b""
        return hashlib.sha512(encoded).hexdigest()[:64].upper()

    return registry.memo(("openapi.v3.hash", version), build, group)


def warm_group(registry: Registry, group: str) -> bool:
    """Build the documents and hashes of ``group``'s versions now unless already kept;
    whether anything was built (see ``openapi_v2.warm_group``)."""
    built = False
    for version in sorted({v for t in registry.group(group) for v in t.versions}):
        if not registry.has_memo(("openapi.v3.hash", version), group):
            document_hash(registry, group, version)
            built = True
    return built


def index(registry: Registry) -> JSON:
    """``/openapi/v3``: every served group-version with a content-hash URL, keyed in
    byte order as kube-apiserver writes the map. After a change only the changed group's
    documents are built again; the others' hashes are kept."""

    def build() -> JSON:
        paths: JSON = {}
        for group in registry.group_names():
            for version in sorted({v for t in registry.group(group) for v in t.versions}):
                gv = _gv_path(group, version)
                digest = document_hash(registry, group, version)
                paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
        return {"paths": dict(sorted(paths.items()))}  # a Go map: keys in byte order

    return registry.memo(("openapi.v3.index",), build)
