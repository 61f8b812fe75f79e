"""The built-in kinds the embedded server serves, declared as data."""

from __future__ import annotations

from typing import Any

from kubewerk.apiserver.registry import PrinterColumn, Registry, ResourceType
from kubewerk.core.meta import age

JSON = dict[str, Any]

NAME_AGE = [PrinterColumn("Age", "string", ".metadata.creationTimestamp")]

_OBJECT_META_REF = {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}


def _schema(description: str, props: dict[str, JSON], required: list[str] | None = None) -> JSON:
    schema: JSON = {
        "description": description,
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
            "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
            "metadata": {"allOf": [_OBJECT_META_REF], "default": {}, "description": "Standard object's metadata."},
            **props,
        },
    }
    if required:
        schema["required"] = required
    return schema


_STR_MAP = {"type": "object", "additionalProperties": {"type": "string", "default": ""}}
_OBJ_REF = {
    "type": "object",
    "description": "A reference to an object.",
    "properties": {k: {"type": "string"} for k in ("apiVersion", "kind", "name", "namespace", "uid", "resourceVersion", "fieldPath")},
}


def _count(obj: JSON, *fields: str) -> int:
    return sum(len(obj.get(f) or {}) for f in fields)


def _event_object(ev: JSON) -> str:
    ref = ev.get("involvedObject") or ev.get("regarding") or {}
    kind = str(ref.get("kind", "")).lower()
    return f"{kind}/{ref.get('name', '')}" if kind else str(ref.get("name", ""))


def _event_last_seen(ev: JSON) -> str:
    import time

    from kubewerk.core.meta import human_duration, parse_time

    for field_name in ("lastTimestamp", "eventTime", "deprecatedLastTimestamp", "firstTimestamp"):
        value = ev.get(field_name) or (ev.get("series") or {}).get("lastObservedTime")
        if isinstance(value, str):
            ts = parse_time(value)
            if ts is not None:
                return human_duration(time.time() - ts)
    return age(ev)


# events.k8s.io/v1 Event field <-> core/v1 Event field (the two share storage)
_EVENT_FIELDS = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_CORE_EVENT_FIELDS = {v: k for k, v in _EVENT_FIELDS.items()}


def event_to_core(ev: JSON) -> JSON:
    """An events.k8s.io/v1 Event as the core/v1 Event Kubernetes stores."""
    out: JSON = {"apiVersion": "v1", "kind": "Event"}
    for key, value in ev.items():
        if key in ("apiVersion", "kind"):
            continue
        out[_EVENT_FIELDS.get(key, key)] = value
    return out


def event_from_core(ev: JSON) -> JSON:
    """A stored core/v1 Event as events.k8s.io/v1 serves it."""
    out: JSON = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for key, value in ev.items():
        if key in ("apiVersion", "kind"):
            continue
        out[_CORE_EVENT_FIELDS.get(key, key)] = value
    return out


def builtin_types() -> list[ResourceType]:
    """Fresh ``ResourceType`` objects for every built-in kind."""
    ns_cols = [PrinterColumn("Status", "string", ".status.phase", "The status of the namespace"), *NAME_AGE]
    cm_cols = [PrinterColumn("Data", "string", ".data"), *NAME_AGE]
    secret_cols = [PrinterColumn("Type", "string", ".type"), PrinterColumn("Data", "string", ".data"), *NAME_AGE]
    sa_cols = [PrinterColumn("Secrets", "string", ".secrets"), *NAME_AGE]
    lease_cols = [PrinterColumn("Holder", "string", ".spec.holderIdentity"), *NAME_AGE]
    event_cols = [
        PrinterColumn("Last Seen", "string", ".lastTimestamp"),
        PrinterColumn("Type", "string", ".type"),
        PrinterColumn("Reason", "string", ".reason"),
        PrinterColumn("Object", "string", ".involvedObject"),
        PrinterColumn("Message", "string", ".message"),
    ]
    event_props: dict[str, JSON] = {
        "involvedObject": _OBJ_REF,
        "reason": {"type": "string"},
        "message": {"type": "string"},
        "type": {"type": "string"},
        "count": {"type": "integer", "format": "int32"},
        "firstTimestamp": {"type": "string", "format": "date-time"},
        "lastTimestamp": {"type": "string", "format": "date-time"},
        "eventTime": {"type": "string", "format": "date-time"},
        "source": {"type": "object", "properties": {"component": {"type": "string"}, "host": {"type": "string"}}},
        "reportingComponent": {"type": "string"},
        "reportingInstance": {"type": "string"},
        "action": {"type": "string"},
        "related": _OBJ_REF,
        "series": {"type": "object", "properties": {"count": {"type": "integer"}, "lastObservedTime": {"type": "string", "format": "date-time"}}},
    }
    new_event_props: dict[str, JSON] = {
        "regarding": _OBJ_REF,
        "related": _OBJ_REF,
        "reason": {"type": "string"},
        "note": {"type": "string"},
        "type": {"type": "string"},
        "action": {"type": "string"},
        "eventTime": {"type": "string", "format": "date-time"},
        "reportingController": {"type": "string"},
        "reportingInstance": {"type": "string"},
        "series": {"type": "object", "properties": {"count": {"type": "integer"}, "lastObservedTime": {"type": "string", "format": "date-time"}}},
        "deprecatedSource": {"type": "object", "properties": {"component": {"type": "string"}, "host": {"type": "string"}}},
        "deprecatedFirstTimestamp": {"type": "string", "format": "date-time"},
        "deprecatedLastTimestamp": {"type": "string", "format": "date-time"},
        "deprecatedCount": {"type": "integer", "format": "int32"},
    }
    return [
        ResourceType(
            group="", resource="namespaces", kind="Namespace", list_kind="NamespaceList",
            singular="namespace", namespaced=False, versions=["v1"], storage_version="v1",
            short_names=["ns"], status_subresource=True, strategic_kind="Namespace",
            return_deleted_object=True, printer_columns={"v1": ns_cols},
            row_cells=lambda o: [(o.get("status") or {}).get("phase", ""), age(o)],
            schemas={"v1": _schema("Namespace provides a scope for Names.", {
                "spec": {"type": "object", "properties": {"finalizers": {"type": "array", "items": {"type": "string"}}}},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}, "conditions": {"type": "array", "items": {"type": "object"}}}},
            })},
        ),
        ResourceType(
            group="", resource="configmaps", kind="ConfigMap", list_kind="ConfigMapList",
            singular="configmap", namespaced=True, versions=["v1"], storage_version="v1",
            short_names=["cm"], strategic_kind="ConfigMap", printer_columns={"v1": cm_cols},
            row_cells=lambda o: [_count(o, "data", "binaryData"), age(o)],
            schemas={"v1": _schema("ConfigMap holds configuration data for pods to consume.", {
                "data": _STR_MAP,
                "binaryData": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
                "immutable": {"type": "boolean"},
            })},
        ),
        ResourceType(
            group="", resource="secrets", kind="Secret", list_kind="SecretList",
            singular="secret", namespaced=True, versions=["v1"], storage_version="v1",
            strategic_kind="Secret", printer_columns={"v1": secret_cols},
            row_cells=lambda o: [o.get("type", ""), _count(o, "data"), age(o)],
            schemas={"v1": _schema("Secret holds secret data of a certain type.", {
                "data": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
                "stringData": _STR_MAP,
                "type": {"type": "string"},
                "immutable": {"type": "boolean"},
            })},
        ),
        ResourceType(
            group="", resource="serviceaccounts", kind="ServiceAccount", list_kind="ServiceAccountList",
            singular="serviceaccount", namespaced=True, versions=["v1"], storage_version="v1",
            short_names=["sa"], strategic_kind="ServiceAccount", return_deleted_object=True,
            printer_columns={"v1": sa_cols},
            row_cells=lambda o: [len(o.get("secrets") or []), age(o)],
            schemas={"v1": _schema("ServiceAccount binds together a name, a principal and secrets.", {
                "secrets": {"type": "array", "items": _OBJ_REF},
                "imagePullSecrets": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "automountServiceAccountToken": {"type": "boolean"},
            })},
        ),
        ResourceType(
            group="", resource="events", kind="Event", list_kind="EventList",
            singular="event", namespaced=True, versions=["v1"], storage_version="v1",
            short_names=["ev"], strategic_kind="Event", printer_columns={"v1": event_cols},
            row_cells=lambda o: [_event_last_seen(o), o.get("type", ""), o.get("reason", ""), _event_object(o), o.get("message", "")],
            schemas={"v1": _schema("Event is a report of an event somewhere in the cluster.", event_props, ["metadata", "involvedObject"])},
        ),
        ResourceType(
            group="events.k8s.io", resource="events", kind="Event", list_kind="EventList",
            singular="event", namespaced=True, versions=["v1"], storage_version="v1",
            short_names=["ev"], strategic_kind="events.k8s.io/Event", printer_columns={"v1": event_cols},
            storage_group="", to_storage=event_to_core, from_storage=event_from_core,
            row_cells=lambda o: [_event_last_seen(o), o.get("type", ""), o.get("reason", ""), _event_object(o), o.get("note", "")],
            schemas={"v1": _schema("Event is a report of an event somewhere in the cluster.", new_event_props, ["eventTime"])},
        ),
        ResourceType(
            group="coordination.k8s.io", resource="leases", kind="Lease", list_kind="LeaseList",
            singular="lease", namespaced=True, versions=["v1"], storage_version="v1",
            strategic_kind="Lease", printer_columns={"v1": lease_cols},
            row_cells=lambda o: [(o.get("spec") or {}).get("holderIdentity", ""), age(o)],
            schemas={"v1": _schema("Lease defines a lease concept.", {
                "spec": {"type": "object", "properties": {
                    "holderIdentity": {"type": "string"},
                    "leaseDurationSeconds": {"type": "integer", "format": "int32"},
                    "acquireTime": {"type": "string", "format": "date-time"},
                    "renewTime": {"type": "string", "format": "date-time"},
                    "leaseTransitions": {"type": "integer", "format": "int32"},
                    "strategy": {"type": "string"},
                    "preferredHolder": {"type": "string"},
                }},
            })},
        ),
        ResourceType(
            group="apiextensions.k8s.io", resource="customresourcedefinitions",
            kind="CustomResourceDefinition", list_kind="CustomResourceDefinitionList",
            singular="customresourcedefinition", namespaced=False, versions=["v1"],
            storage_version="v1", short_names=["crd", "crds"], categories=["api-extensions"],
            status_subresource=True,
            printer_columns={"v1": [PrinterColumn("Created At", "date", ".metadata.creationTimestamp")]},
            row_cells=lambda o: [o.get("metadata", {}).get("creationTimestamp", "")],
            schemas={"v1": _schema("CustomResourceDefinition represents a resource that should be exposed on the API server.", {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }, ["spec"])},
        ),
    ]


def install_builtins(registry: Registry) -> None:
    for rtype in builtin_types():
        registry.add(rtype)


# namespaces present on every fresh store
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
