"""OpenAPI v3 documents (``/openapi/v3``), built from the CRD schemas and the built-in kinds.

The route model (``Operation``, ``PathItem``, ``resource_paths``) says what kube-apiserver
publishes for a served type: its installer's paths for built-in kinds, its CRD OpenAPI
builder's for custom resources (operationIds such as ``readAppsV1NamespacedDeployment``,
parameters by name, bodies, responses, ``x-kubernetes-action`` and
``x-kubernetes-group-version-kind``; the ``fieldValidation`` parameter on writes is how
``kubectl`` decides to leave validation to the server). This module renders it as v3;
``openapi_v2`` renders the same model as Swagger 2.0.

Each group-version document carries, for every kind, a schema named as kube-apiserver
names it (``com.example.v1.Widget``) with ``x-kubernetes-group-version-kind``. A built-in
kind marked ``vendored_openapi`` (every kind ``apiserver.builtins`` declares) is served
with its vendored definition and its list kind's (``kinds.k8s_openapi``: the published
Kubernetes definitions) and every definition they reference; a custom resource with its
structural schema as the CRD builder publishes it and its list kind (``openapi_crd``
makes both documents' custom resource schemas). The shared definitions (ObjectMeta,
Status, DeleteOptions, Patch, Scale) are always the vendored ones. ``index`` lists every
group-version and the discovery and ``/version`` documents (``static_document``) with
kube-openapi's content hashes; ``serve`` answers as kube-openapi's handler (ETag, 304,
``?hash=``). Each group-version's document (and its hash) is built on first request and
kept until a type of that group changes (``Registry.memo``), so a change to one CRD
rebuilds one group's documents, not all; nothing a request does costs more than its own
group.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from kubewerk.apiserver import openapi_crd
from kubewerk.apiserver.discovery import KUBE_MAJOR, KUBE_MINOR
from kubewerk.apiserver.registry import Registry, ServedResource
from kubewerk.core.errors import ApiError

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


def schema_name(rtype: ServedResource, version: str, kind: str | None = None) -> str:
    """The name kube-apiserver gives a kind's schema: the Go package path reversed
    (``io.k8s.api.<group's first label or core>`` for built-in kinds, the reversed group
    for custom resources), the version, the kind (``kind``: another kind of the same
    package, such as the list kind)."""
    kind = kind or rtype.kind
    if rtype.builtin:
        package = _PACKAGES.get(rtype.group) or f"io.k8s.api.{rtype.group.split('.')[0] or 'core'}"
        return f"{package}.{version}.{kind}"
    return ".".join(reversed(rtype.group.split("."))) + f".{version}.{kind}"


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


# -- routes: what kube-apiserver's installer (built-ins) and CRD builder publish ----------

STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
SCALE = "io.k8s.api.autoscaling.v1.Scale"
_DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
_PATCH = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
_RESOURCE_LIST = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList"

QUERY_PARAMETERS: dict[str, tuple[str, str]] = {
    "allowWatchBookmarks": ("boolean", "Asks for BOOKMARK events in a watch."),
    "continue": ("string", "The continue token of the previous page of a paginated list."),
    "dryRun": (
        "string",
        "When present, indicates that modifications should not be persisted (All: every "
        "stage runs, nothing is stored).",
    ),
    "fieldManager": (
        "string",
        "fieldManager is a name associated with the actor or entity that is making these "
        "changes (required for apply patches).",
    ),
    "fieldSelector": ("string", "Restricts the returned objects by their fields."),
    "fieldValidation": (
        "string",
        "fieldValidation instructs the server on how to handle objects in the request "
        "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore "
        "- Warn - Strict",
    ),
    "force": ("boolean", "Force re-acquires conflicting fields in an apply patch."),
    "gracePeriodSeconds": ("integer", "Seconds before the object should be deleted."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean",
        "Deletes an object whose stored data cannot be read.",
    ),
    "labelSelector": ("string", "Restricts the returned objects by their labels."),
    "limit": ("integer", "The most objects a list page returns."),
    "orphanDependents": ("boolean", "Deprecated: use propagationPolicy."),
    "pretty": ("string", "If 'true', then the output is pretty printed."),
    "propagationPolicy": (
        "string",
        "Whether and how garbage collection deletes dependents: Orphan, Background or Foreground.",
    ),
    "resourceVersion": ("string", "The resourceVersion the request is served at."),
    "resourceVersionMatch": (
        "string",
        "How resourceVersion applies to a list: Exact or NotOlderThan.",
    ),
    "sendInitialEvents": ("boolean", "Starts a watch with the current objects as ADDED."),
    "timeoutSeconds": ("integer", "Ends a list or watch call after this many seconds."),
    "watch": ("boolean", "Watch for changes to the described resources."),
}
"""Every query parameter an operation names: its type and a description (kube-apiserver
publishes the same names and types, with longer descriptions)."""

_LIST_OPTIONS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_WRITE_OPTIONS = ("dryRun", "fieldManager", "fieldValidation")
_DELETE_OPTIONS_PARAMS = (
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
)
_BUILTIN_DELETECOLLECTION = tuple(
    sorted(
        {*_LIST_OPTIONS, *_DELETE_OPTIONS_PARAMS} - {"watch", "allowWatchBookmarks"},
    )
)
"""kube-apiserver's installer: ListOptions without watch and allowWatchBookmarks, and the
DeleteOptions. (Its CRD builder gives a custom resource's deletecollection ListOptions
alone, watch included.)"""

_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
_JSON = "application/json"
_JSON_WATCH = "application/json;stream=watch"


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of a path, in neither OpenAPI version's form: what both documents
    publish for it (``query`` in kube's order, by name; definitions by name)."""

    method: str
    action: str
    operation_id: str
    description: str
    query: tuple[str, ...]
    body: str | None
    body_types: tuple[str, ...]
    body_required: bool
    responses: tuple[tuple[str, str, str | None], ...]
    """(code, description, definition of the body or None), by code."""
    produces: tuple[str, ...]
    gvk: tuple[str, str, str] | None
    """(group, version, kind), or None for a discovery path."""
    tag: str


@dataclass(frozen=True, slots=True)
class PathItem:
    """A path and its operations; ``common`` are the query parameters every operation
    takes, which kube-openapi publishes once on the path (with the path parameters)."""

    path: str
    path_params: tuple[tuple[str, str], ...]
    """(name, description), by name."""
    common: tuple[str, ...]
    operations: tuple[Operation, ...]


def operation_words(group: str, version: str) -> tuple[str, str]:
    """The group-version part of kube-openapi's operation ids (``AppsV1``, ``CoreV1``,
    ``RbacAuthorizationV1``, ``ExampleComV1``: the group without ``.k8s.io``, each run of
    letters, digits and ``_`` capitalized) and its tag (``apps_v1``, ``exampleCom_v1``)."""
    trimmed = group.removesuffix(".k8s.io") if group else "core"
    return (
        _valid_id(trimmed, True) + _valid_id(version, True),
        _valid_id(trimmed, False) + "_" + _valid_id(version, False),
    )


def _valid_id(text: str, capitalize: bool) -> str:
    out: list[str] = []
    upper = capitalize
    for i, ch in enumerate(text):
        if ch.isalpha() or ch == "_" or (i and ch.isdigit()):
            out.append(ch.upper() if upper else ch)
            upper = False
        else:
            upper = True
    return "".join(out)


def _article(kind: str) -> str:
    """``endpoints.GetArticleForNoun``: none for a plural (``Endpoints``), else a/an."""
    if kind.endswith("s") and not kind.endswith("ss"):
        return " "
    return " an " if kind[:1].lower() in "aeiou" else " a "


def resource_paths(
    rtype: ServedResource, version: str, kind_ref: str, list_ref: str
) -> list[PathItem]:
    """The paths of ``rtype`` in ``version`` as kube-apiserver publishes them (its
    installer's for built-in kinds, its CRD builder's for custom resources): the
    collection (and, for a namespaced kind, the all-namespaces list), the object, and
    its ``/status`` and ``/scale``; only the verbs ``rtype`` serves."""
    builtin = rtype.builtin
    gv_words, tag = operation_words(rtype.group, version)
    kind = rtype.kind
    gvk = (rtype.group, version, kind)
    scale_gvk = ("autoscaling", "v1", "Scale")
    verbs = set(rtype.verbs)
    prefix = "/" + _gv_path(rtype.group, version)
    scoped = "Namespaced" if rtype.namespaced else ""
    json_only = (_JSON,)
    list_produces = (_JSON, _JSON_WATCH) if builtin else json_only
    write_types = ("*/*",) if builtin else (_JSON, "application/yaml")
    patch_types = tuple(
        t for t in _PATCH_TYPES if (builtin and rtype.strategic_kind) or "strategic" not in t
    )
    deleted = kind_ref if rtype.return_deleted_object else STATUS

    def op(
        method: str,
        action: str,
        verb: str,
        sub: str,
        description: str,
        query: tuple[str, ...],
        body: str | None,
        responses: tuple[tuple[str, str, str | None], ...],
        *,
        all_namespaces: bool = False,
        body_types: tuple[str, ...] = write_types,
        body_required: bool = True,
        produces: tuple[str, ...] = json_only,
        op_gvk: tuple[str, str, str] = gvk,
    ) -> Operation:
        if verb == "deletecollection":
            op_id = f"delete{gv_words}Collection{scoped}{kind}"
        elif all_namespaces:
            op_id = f"{verb}{gv_words}{kind}ForAllNamespaces"
        else:
            op_id = f"{verb}{gv_words}{scoped}{kind}{sub.title()}"
        return Operation(
            method,
            action,
            op_id,
            description,
            tuple(sorted(("pretty", *query))),
            body,
            body_types,
            body_required,
            tuple(sorted(responses)),
            produces,
            op_gvk,
            tag,
        )

    ok = ("200", "OK")
    unauthorized = ("401", "Unauthorized", None)
    listed = "list or watch objects of kind " if builtin else "list objects of kind "
    items: list[PathItem] = []
    base = (
        f"{prefix}/namespaces/{{namespace}}/{rtype.resource}"
        if rtype.namespaced
        else f"{prefix}/{rtype.resource}"
    )
    ns_param = (("namespace", "object name and auth scope, such as for teams and projects"),)
    scope_params = ns_param if rtype.namespaced else ()
    name_params = (("name", f"name of the {kind}"), *scope_params)

    if rtype.namespaced and "list" in verbs:
        items.append(
            _path_item(
                f"{prefix}/{rtype.resource}",
                (),
                [
                    op(
                        "get",
                        "list",
                        "list",
                        "",
                        listed + kind,
                        _LIST_OPTIONS,
                        None,
                        ((*ok, list_ref), unauthorized),
                        all_namespaces=True,
                        produces=list_produces,
                    )
                ],
            )
        )
    collection: list[Operation] = []
    if "list" in verbs:
        collection.append(
            op(
                "get",
                "list",
                "list",
                "",
                listed + kind,
                _LIST_OPTIONS,
                None,
                ((*ok, list_ref), unauthorized),
                produces=list_produces,
            )
        )
    if "create" in verbs:
        collection.append(
            op(
                "post",
                "post",
                "create",
                "",
                "create" + _article(kind) + kind,
                _WRITE_OPTIONS,
                kind_ref,
                (
                    (*ok, kind_ref),
                    ("201", "Created", kind_ref),
                    ("202", "Accepted", kind_ref),
                    unauthorized,
                ),
            )
        )
    if "deletecollection" in verbs:
        collection.append(
            op(
                "delete",
                "deletecollection",
                "deletecollection",
                "",
                "delete collection of " + kind,
                _BUILTIN_DELETECOLLECTION if builtin else _LIST_OPTIONS,
                _DELETE_OPTIONS if builtin else None,
                ((*ok, STATUS), unauthorized),
                body_required=False,
            )
        )
    if collection:
        items.append(_path_item(base, scope_params, collection))

    def object_ops(
        sub: str, ref: str, op_gvk: tuple[str, str, str], delete: bool
    ) -> list[Operation]:
        of = f" {sub} of" if sub else ""
        ops: list[Operation] = []
        if "get" in verbs:
            ops.append(
                op(
                    "get",
                    "get",
                    "read",
                    sub,
                    f"read{of} the specified {kind}",
                    () if builtin else ("resourceVersion",),
                    None,
                    ((*ok, ref), unauthorized),
                    op_gvk=op_gvk,
                )
            )
        if "update" in verbs:
            ops.append(
                op(
                    "put",
                    "put",
                    "replace",
                    sub,
                    f"replace{of} the specified {kind}",
                    _WRITE_OPTIONS,
                    ref,
                    ((*ok, ref), ("201", "Created", ref), unauthorized),
                    op_gvk=op_gvk,
                )
            )
        if delete and "delete" in verbs:
            ops.append(
                op(
                    "delete",
                    "delete",
                    "delete",
                    sub,
                    "delete" + _article(kind) + kind,
                    _DELETE_OPTIONS_PARAMS,
                    _DELETE_OPTIONS,
                    ((*ok, deleted), ("202", "Accepted", deleted), unauthorized),
                    body_required=False,
                )
            )
        if "patch" in verbs:
            ops.append(
                op(
                    "patch",
                    "patch",
                    "patch",
                    sub,
                    f"partially update{of} the specified {kind}",
                    (*_WRITE_OPTIONS, "force"),
                    _PATCH,
                    ((*ok, ref), ("201", "Created", ref), unauthorized),
                    body_types=patch_types,
                    op_gvk=op_gvk,
                )
            )
        return ops

    item_ops = object_ops("", kind_ref, gvk, True)
    if item_ops:
        items.append(_path_item(base + "/{name}", name_params, item_ops))
    if rtype.has_status(version):
        status_ops = object_ops("status", kind_ref, gvk, False)
        if status_ops:
            items.append(_path_item(base + "/{name}/status", name_params, status_ops))
    if rtype.scale_of(version) is not None:
        scale_ops = object_ops("scale", SCALE, scale_gvk, False)
        if scale_ops:
            items.append(
                _path_item(
                    base + "/{name}/scale",
                    (("name", "name of the Scale"), *scope_params),
                    scale_ops,
                )
            )
    return items


def _path_item(
    path: str, path_params: tuple[tuple[str, str], ...], operations: list[Operation]
) -> PathItem:
    """A path whose ``common`` are the query parameters all its operations share (kube-
    openapi's ``findCommonParameters``), removed from each operation's own."""
    shared = set(operations[0].query)
    for operation in operations[1:]:
        shared &= set(operation.query)
    common = tuple(sorted(shared))
    ops = tuple(
        Operation(
            o.method,
            o.action,
            o.operation_id,
            o.description,
            tuple(q for q in o.query if q not in shared),
            o.body,
            o.body_types,
            o.body_required,
            o.responses,
            o.produces,
            o.gvk,
            o.tag,
        )
        for o in operations
    )
    return PathItem(path, tuple(sorted(path_params)), common, ops)


def discovery_path(group: str, version: str | None) -> PathItem:
    """The discovery path kube-apiserver publishes in a document: ``/api/``, ``/apis/``,
    ``/apis/G/`` (an APIGroup) or ``/api/v1/``, ``/apis/G/V/`` (an APIResourceList)."""
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1."
    if version is not None:
        words, tag = operation_words(group, version)
        path = "/" + _gv_path(group, version) + "/"
        op_id, description, ref = (
            f"get{words}APIResources",
            "get available resources",
            _RESOURCE_LIST,
        )
    elif group == "":
        path, op_id, tag = "/api/", "getCoreAPIVersions", "core"
        description, ref = "get available API versions", meta + "APIVersions"
    else:
        name = _valid_id(group.removesuffix(".k8s.io"), True)
        path, op_id, tag = (
            f"/apis/{group}/",
            f"get{name}APIGroup",
            _valid_id(group.removesuffix(".k8s.io"), False),
        )
        description, ref = "get information of a group", meta + "APIGroup"
    operation = Operation(
        "get",
        "",
        op_id,
        description,
        (),
        None,
        (),
        False,
        (("200", "OK", ref), ("401", "Unauthorized", None)),
        (_JSON,),
        None,
        tag,
    )
    return PathItem(path, (), (), (operation,))


STATIC_PATHS: dict[str, PathItem] = {
    "apis": PathItem(
        "/apis/",
        (),
        (),
        (
            Operation(
                "get",
                "",
                "getAPIVersions",
                "get available API versions",
                (),
                None,
                (),
                False,
                (
                    ("200", "OK", "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList"),
                    ("401", "Unauthorized", None),
                ),
                (_JSON,),
                None,
                "apis",
            ),
        ),
    ),
    "version": PathItem(
        "/version/",
        (),
        (),
        (
            Operation(
                "get",
                "",
                "getCodeVersion",
                "get the version information for this server",
                (),
                None,
                (),
                False,
                (
                    ("200", "OK", "io.k8s.apimachinery.pkg.version.Info"),
                    ("401", "Unauthorized", None),
                ),
                (_JSON,),
                None,
                "version",
            ),
        ),
    ),
}


# -- the v3 form ---------------------------------------------------------------------


def _v3_parameter(name: str, where: str, description: str) -> JSON:
    kind = QUERY_PARAMETERS[name][0] if where == "query" else "string"
    param: JSON = {
        "description": description,
        "in": where,
        "name": name,
        "schema": {"type": kind, "uniqueItems": True},
    }
    if where == "path":
        param["required"] = True
    return param


def _v3_query(name: str) -> JSON:
    return _v3_parameter(name, "query", QUERY_PARAMETERS[name][1])


def _v3_operation(op: Operation) -> JSON:
    out: JSON = {"description": op.description, "operationId": op.operation_id}
    if op.query:
        out["parameters"] = [_v3_query(q) for q in op.query]
    if op.body is not None:
        body: JSON = {"content": {t: {"schema": {"$ref": _REF + op.body}} for t in op.body_types}}
        if op.body_required:
            body["required"] = True
        out["requestBody"] = body
    responses: JSON = {}
    for code, description, ref in op.responses:
        response: JSON = {"description": description}
        if ref is not None:
            response["content"] = {t: {"schema": {"$ref": _REF + ref}} for t in op.produces}
        responses[code] = response
    out["responses"] = responses
    add_tags_and_kind(out, op)
    return out


def add_tags_and_kind(out: JSON, op: Operation) -> None:
    """The end of an operation in both forms (v3 and Swagger 2.0): its tag, and for a
    kind's operation kube's ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind``."""
    out["tags"] = [op.tag]
    if op.gvk is not None:
        out["x-kubernetes-action"] = op.action
        group, version, kind = op.gvk
        out["x-kubernetes-group-version-kind"] = {"group": group, "kind": kind, "version": version}


def v3_path_item(item: PathItem) -> JSON:
    """``item`` as an OpenAPI v3 path item."""
    out: JSON = {op.method: _v3_operation(op) for op in item.operations}
    params = [_v3_parameter(name, "path", text) for name, text in item.path_params]
    params.extend(_v3_query(q) for q in item.common)
    params.sort(key=lambda p: (p["name"], p["in"]))
    if params:
        out["parameters"] = params
    return out


def _referenced(items: list[PathItem]) -> list[str]:
    names: list[str] = []
    for item in items:
        for op in item.operations:
            if op.body is not None:
                names.append(op.body)
            names.extend(ref for _, _, ref in op.responses if ref is not None)
    return names


def selectable_fields(rtype: ServedResource, version: str) -> tuple[str, ...]:
    """The ``selectableFields`` paths (no leading dot) a custom resource's ``version``
    declares, which kube-apiserver publishes as ``x-kubernetes-selectable-fields``; none
    for a built-in kind."""
    from kubewerk.apiserver.kinds.custom import CustomResourceStrategy

    strategy = rtype.strategy
    if rtype.builtin or not isinstance(strategy, CustomResourceStrategy):
        return ()
    return tuple(strategy.selectable_fields(version))


def crd_kind_schema(rtype: ServedResource, version: str, *, v2: bool) -> JSON:
    """A custom resource's kind definition in ``version`` as kube-apiserver publishes it in
    ``/openapi/v3`` (``v2`` False) or ``/openapi/v2`` (``openapi_crd.kind_schema``)."""
    base = rtype.schemas.get(version)
    return openapi_crd.kind_schema(
        base if isinstance(base, dict) else None,
        rtype.group,
        version,
        rtype.kind,
        selectable_fields(rtype, version),
        v2=v2,
    )


def list_schema(rtype: ServedResource, version: str, *, v2: bool) -> JSON:
    """The list kind's definition kube-apiserver's CRD builder publishes
    (``openapi_crd.list_schema``), in v3 (``v2`` False) or v2 form."""
    return openapi_crd.list_schema(
        rtype.group,
        version,
        rtype.kind,
        rtype.list_kind,
        rtype.resource,
        schema_name(rtype, version),
        selectable_fields(rtype, version),
        v2=v2,
    )


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


def publishes_list(rtype: ServedResource) -> bool:
    """Whether a document carries ``rtype``'s list kind: only when it serves ``list``
    (kube's installer publishes a list kind only for a storage that lists; the create-only
    reviews have none, and kube defines no ``TokenReviewList``)."""
    return "list" in rtype.verbs


def kind_names(rtype: ServedResource, version: str) -> tuple[str, str, bool]:
    """The definition names of ``rtype``'s kind and list kind in ``version``, and whether
    they are vendored (a built-in kind's published definitions: the kind's, and the list
    kind's when ``publishes_list``) rather than built here (a custom resource's, or a
    built-in kind's without vendored definitions)."""
    from kubewerk.apiserver.kinds import k8s_openapi

    kind_name = _vendored_name(rtype, version)
    if kind_name is not None:
        list_name = schema_name(rtype, version, rtype.list_kind)
        if not publishes_list(rtype) or k8s_openapi.definition(list_name) is not None:
            return kind_name, list_name, True
    return schema_name(rtype, version), schema_name(rtype, version, rtype.list_kind), False


def type_paths(rtype: ServedResource, version: str) -> tuple[list[PathItem], JSON, list[str]]:
    """``rtype``'s paths in ``version``, the schemas of its own that are not vendored (a
    custom resource's kind, and its list kind when ``publishes_list``; v3 form), and the
    vendored definitions they need."""
    kind_name, list_name, vendored_kind = kind_names(rtype, version)
    own: JSON = {}
    lists = publishes_list(rtype)
    if not vendored_kind:
        own[kind_name] = crd_kind_schema(rtype, version, v2=False)
        if lists:
            own[list_name] = list_schema(rtype, version, v2=False)
    items = resource_paths(rtype, version, kind_name, list_name)
    vendored = [n for n in _referenced(items) if n not in own]
    extra = [LIST_META] if lists and not vendored_kind else []
    return items, own, [*vendored, *extra, OBJECT_META]


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


_INFO = {"title": "Kubernetes", "version": f"v{KUBE_MAJOR}.{KUBE_MINOR}.0"}
_CRD_INFO = {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
"""The ``info`` of a custom resources' group-version document: its CRD builder's, which
kube-apiserver serves unchanged."""


def _doc(paths: JSON, schemas: JSON, info: JSON = _INFO) -> JSON:
    return {
        "openapi": "3.0.0",
        "info": dict(info),
        "paths": paths,
        "components": {"schemas": schemas},
    }


def document(registry: Registry, gv: str) -> JSON | None:
    """The OpenAPI v3 document for ``api/v1`` or ``apis/G/V``; None when not served.
    Reads only the types of that group. A group-version of built-in kinds also holds its
    discovery path (``/apis/G/V/``), as kube-apiserver's does; a custom resource's
    group-version holds only its resources' paths (kube serves CRD discovery outside
    OpenAPI)."""
    split = _split_gv(gv)
    if split is None:
        return None
    group, version = split
    types = [t for t in registry.group(group) if version in t.versions]
    if not types:
        return None
    BUILDS.v3_documents += 1
    paths: JSON = {}
    schemas: JSON = {}
    vendored: list[str] = []
    if any(t.builtin for t in types):
        item = discovery_path(group, version)
        paths[item.path] = v3_path_item(item)
        vendored.append(_RESOURCE_LIST)
    for t in types:
        items, own, needed = type_paths(t, version)
        for item in items:
            paths[item.path] = v3_path_item(item)
        schemas.update(own)
        vendored.extend(needed)
    schemas.update(_vendored_schemas(vendored))
    return _doc(paths, schemas, _INFO if any(t.builtin for t in types) else _CRD_INFO)


def static_document(name: str) -> JSON | None:
    """The documents of the paths that are not a group-version: ``api`` (``/api/``),
    ``apis`` (``/apis/``), ``apis/G`` (a built-in group's ``/apis/G/``) and ``version``;
    None for another name. They depend on nothing but their name."""
    if name == "api":
        item = discovery_path("", None)
    elif name in STATIC_PATHS:
        item = STATIC_PATHS[name]
    elif name.startswith("apis/") and name.count("/") == 1 and len(name) > 5:
        item = discovery_path(name[5:], None)
    else:
        return None
    return _doc({item.path: v3_path_item(item)}, _vendored_schemas(_referenced([item])))


def _builtin_groups(registry: Registry) -> list[str]:
    """The groups (not core) serving a built-in kind: those kube-apiserver's
    ``/openapi/v3`` lists as ``apis/G``."""
    return [g for g in registry.group_names() if g and any(t.builtin for t in registry.group(g))]


def encoded_document(registry: Registry, gv: str) -> bytes | None:
    """``document`` (or ``static_document``) as JSON bytes (keys sorted); a group-version's
    kept until a type of its group changes, the others' for good."""
    split = _split_gv(gv)
    if split is None:
        return _encoded_static(registry, gv)
    group, version = split
    return registry.memo(("openapi.v3", version), lambda: _encode(registry, gv), group)


_STATIC_ENCODED: dict[str, tuple[bytes, str]] = {}
"""``static_document``'s bytes and hash by name: a few names (``api``, ``apis``,
``version`` and the built-in groups), the same for the life of the process."""


def _static(name: str) -> tuple[bytes, str] | None:
    found = _STATIC_ENCODED.get(name)
    if found is None:
        doc = static_document(name)
        if doc is None:
            return None
        payload = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        found = _STATIC_ENCODED[name] = (payload, content_hash(payload))
    return found


def _encoded_static(registry: Registry, name: str) -> bytes | None:
    if name.startswith("apis/") and not any(t.builtin for t in registry.group(name[5:])):
        return None  # looks at that group's types only, not every group's
    found = _static(name)
    return found[0] if found is not None else None


def _encode(registry: Registry, gv: str) -> bytes | None:
    doc = document(registry, gv)
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS) if doc is not None else None


def content_hash(payload: bytes) -> str:
    """kube-openapi's hash of a document: the SHA-512 of its JSON bytes in upper-case hex
    (all 128 digits), what the index's ``?hash=`` and the ``ETag`` carry."""
    return hashlib.sha512(payload).hexdigest().upper()


def document_hash(registry: Registry, group: str, version: str) -> str:
    """The ``hash`` of a group-version's URL in the index (``content_hash`` of its
    document), so it changes exactly when the document does; kept until a type of the
    group changes."""

    def build() -> str:
        return content_hash(encoded_document(registry, _gv_path(group, version)) or b"")

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


def _url(name: str, digest: str) -> str:
    return f"/openapi/v3/{name}?hash={digest}"


def index(registry: Registry) -> JSON:
    """``/openapi/v3``: every document served, with a content-hash URL, keyed in byte
    order as kube-apiserver writes the map: each group-version, and ``api``, ``apis``,
    ``apis/G`` for each group of built-in kinds and ``version`` (discovery and /version;
    kube-apiserver also lists paths kubewerk does not serve: ``logs``, ``openid/v1/jwks``,
    ``.well-known/openid-configuration``). After a change only the changed group's
    documents are built again; the others' hashes are kept."""

    def build() -> JSON:
        paths: JSON = {}
        for group in registry.group_names():
            for version in sorted({v for t in registry.group(group) for v in t.versions}):
                gv = _gv_path(group, version)
                paths[gv] = {"serverRelativeURL": _url(gv, document_hash(registry, group, version))}
        for name in ("api", "apis", "version", *(f"apis/{g}" for g in _builtin_groups(registry))):
            found = _static(name)
            if found is not None:
                paths[name] = {"serverRelativeURL": _url(name, found[1])}
        return {"paths": dict(sorted(paths.items()))}  # a Go map: keys in byte order

    return registry.memo(("openapi.v3.index",), build)


def encoded_index(registry: Registry) -> tuple[bytes, str]:
    """``index`` as JSON bytes and its ``content_hash`` (the index's ETag)."""

    def build() -> tuple[bytes, str]:
        payload = orjson.dumps(index(registry))
        return payload, content_hash(payload)

    found: tuple[bytes, str] = registry.memo(("openapi.v3.index.encoded",), build)
    return found


# -- serving --------------------------------------------------------------------------------

PROTOBUF_MEDIA_TYPES = (
    "application/com.github.proto-openapi.spec.v3@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v3.v1.0+protobuf",
)


@dataclass(frozen=True, slots=True)
class Reply:
    """An answer to a GET under ``/openapi/v3``: status, body and headers (content type,
    length, ETag, cache headers, Location)."""

    status: int
    body: bytes
    headers: list[tuple[bytes, bytes]]


def _etag_matches(if_none_match: str, etag: str) -> bool:
    """``If-None-Match`` as Go's ``http.ServeContent`` reads it: ``*`` or any listed tag
    equal to ``etag`` under weak comparison (a ``W/`` prefix ignored)."""
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag == etag:
            return True
    return False


def accepts_json(accept: str) -> bool | None:
    """Whether an ``Accept`` header lets a v3 document be answered as JSON (True), asks only
    for the v3 protobuf form, which kubewerk does not produce (None), or names nothing
    kube-openapi serves (False: 406)."""
    protobuf = False
    for part in (accept or "*/*").split(","):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        if any(f.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000") for f in fields[1:]):
            continue
        if media in ("application/json", "application/*", "*/*"):
            return True
        if media in PROTOBUF_MEDIA_TYPES:
            protobuf = True
    return None if protobuf else False


def serve(
    registry: Registry, name: str, query: dict[str, str], accept: str, if_none_match: str
) -> Reply | None:
    """``GET /openapi/v3`` (``name`` empty) or ``/openapi/v3/<name>`` as kube-openapi's
    handler answers: JSON with a quoted ``ETag`` (the document's hash) and
    ``Vary: Accept``; 304 when ``If-None-Match`` names it; with ``?hash=`` of the current
    document ``Cache-Control: public, immutable`` and ``Expires`` a year on, with a stale
    hash 301 to the current URL. ``ApiError`` 406 NotAcceptable (a Status, where kube
    answers an empty body) when ``Accept`` allows neither JSON nor protobuf, and, unlike
    kube, when it allows only protobuf. None: no such document."""
    if not name:
        payload, digest = encoded_index(registry)
        headers = [(b"content-type", b"application/json")]
    else:
        found = encoded_document(registry, name)
        if found is None:
            return None
        payload = found
        split = _split_gv(name)
        digest = document_hash(registry, *split) if split is not None else content_hash(payload)
        json_ok = accepts_json(accept)
        if not json_ok:
            raise ApiError(
                406,
                "NotAcceptable",
                "only the following media types are accepted: application/json",
                {},
            )
        headers = [(b"vary", b"Accept"), (b"content-type", b"application/json")]
        wanted = query.get("hash")
        if wanted:
            if wanted != digest:
                location = _url(name, digest).encode()
                return Reply(
                    301,
                    b"",
                    [*headers, (b"location", location), (b"content-length", b"0")],
                )
            headers.append((b"cache-control", b"public, immutable"))
            expires = datetime.now(UTC) + timedelta(days=365)
            headers.append((b"expires", expires.strftime("%a, %d %b %Y %H:%M:%S UTC").encode()))
    etag = f'"{digest}"'.encode()
    headers.append((b"etag", etag))
    if if_none_match and _etag_matches(if_none_match, etag.decode()):
        # as Go's ServeContent: no content type or length on a 304
        return Reply(304, b"", [h for h in headers if h[0] != b"content-type"])
    headers.append((b"content-length", str(len(payload)).encode()))
    return Reply(200, payload, headers)
