"""Printers of ``apps/v1``: Deployment, ReplicaSet, StatefulSet, DaemonSet and
ControllerRevision (kube's ``printDeployment``, ``printReplicaSet``, ...)."""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.printers.core import AGE, CONTAINERS, IMAGES, SELECTOR
from kubewerk.apiserver.printers.format import (
    NONE,
    age,
    container_cells,
    format_label_selector,
    format_labels,
    meta,
    obj_int,
    obj_list,
    obj_map,
    obj_str,
    selector_string,
    template_containers,
)
from kubewerk.apiserver.printers.printer import JSON, Printer
from kubewerk.apiserver.strategy import PrinterColumn

DEPLOYMENT_COLUMNS: Final = (
    PrinterColumn("Ready", "string", "", "Number of the pod with ready state"),
    PrinterColumn("Up-to-date", "string", ""),
    PrinterColumn("Available", "string", ""),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
)


def deployment_cells(obj: JSON, now: float) -> list[Any]:
    """``printDeployment`` (wide): READY ``ready/desired``, UP-TO-DATE, AVAILABLE, AGE,
    CONTAINERS, IMAGES, SELECTOR (``<invalid>`` for a selector that does not parse)."""
    spec = obj_map(obj.get("spec"))
    status = obj_map(obj.get("status"))
    names, images = container_cells(template_containers(obj))
    selector = selector_string(spec.get("selector"))
    return [
        f"{obj_int(status.get('readyReplicas'))}/{obj_int(spec.get('replicas'), 1)}",
        obj_int(status.get("updatedReplicas")),
        obj_int(status.get("availableReplicas")),
        age(obj, now),
        names,
        images,
        "<invalid>" if selector is None else selector,
    ]


REPLICA_SET_COLUMNS: Final = (
    PrinterColumn("Desired", "integer", ""),
    PrinterColumn("Current", "integer", ""),
    PrinterColumn("Ready", "integer", ""),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
)


def replica_set_cells(obj: JSON, now: float) -> list[Any]:
    """``printReplicaSet`` (wide): DESIRED, CURRENT, READY, AGE, CONTAINERS, IMAGES,
    SELECTOR."""
    spec = obj_map(obj.get("spec"))
    status = obj_map(obj.get("status"))
    names, images = container_cells(template_containers(obj))
    return [
        obj_int(spec.get("replicas"), 1),
        obj_int(status.get("replicas")),
        obj_int(status.get("readyReplicas")),
        age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


STATEFUL_SET_COLUMNS: Final = (
    PrinterColumn("Ready", "string", "", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
)


def stateful_set_cells(obj: JSON, now: float) -> list[Any]:
    """``printStatefulSet`` (wide): READY ``ready/desired``, AGE, CONTAINERS, IMAGES."""
    spec = obj_map(obj.get("spec"))
    status = obj_map(obj.get("status"))
    names, images = container_cells(template_containers(obj))
    ready = f"{obj_int(status.get('readyReplicas'))}/{obj_int(spec.get('replicas'), 1)}"
    return [ready, age(obj, now), names, images]


DAEMON_SET_COLUMNS: Final = (
    PrinterColumn("Desired", "integer", ""),
    PrinterColumn("Current", "integer", ""),
    PrinterColumn("Ready", "integer", ""),
    PrinterColumn("Up-to-date", "integer", ""),
    PrinterColumn("Available", "integer", ""),
    PrinterColumn("Node Selector", "string", ""),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
)


def daemon_set_cells(obj: JSON, now: float) -> list[Any]:
    """``printDaemonSet`` (wide)."""
    spec = obj_map(obj.get("spec"))
    status = obj_map(obj.get("status"))
    pod_spec = obj_map(obj_map(spec.get("template")).get("spec"))
    names, images = container_cells(pod_spec.get("containers"))
    return [
        obj_int(status.get("desiredNumberScheduled")),
        obj_int(status.get("currentNumberScheduled")),
        obj_int(status.get("numberReady")),
        obj_int(status.get("updatedNumberScheduled")),
        obj_int(status.get("numberAvailable")),
        format_labels(pod_spec.get("nodeSelector")),
        age(obj, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


CONTROLLER_REVISION_COLUMNS: Final = (
    PrinterColumn("Controller", "string", "", "Controller of the object"),
    PrinterColumn("Revision", "string", ""),
    AGE,
)


def controller_of(obj: JSON) -> JSON | None:
    """``metav1.GetControllerOf``: the owner reference with ``controller: true``."""
    for ref in obj_list(meta(obj).get("ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def controller_name(obj: JSON) -> str:
    """The CONTROLLER cell: ``kind.group/name`` of the controlling owner in lower case
    (``daemonset.apps/fluentd``, ``pod/x`` for the core group), ``<none>`` without one."""
    ref = controller_of(obj)
    if ref is None:
        return NONE
    api_version = obj_str(ref.get("apiVersion"))
    group = api_version.split("/", 1)[0] if api_version.count("/") == 1 else ""
    kind = obj_str(ref.get("kind"))
    name = obj_str(ref.get("name"))
    if not group and not kind:
        return name
    group_kind = f"{kind}.{group}" if group else kind
    return f"{group_kind.lower()}/{name}"


def controller_revision_cells(obj: JSON, now: float) -> list[Any]:
    """``printControllerRevision``: CONTROLLER, REVISION, AGE."""
    return [controller_name(obj), obj_int(obj.get("revision")), age(obj, now)]


def printers() -> dict[str, Printer]:
    """The ``apps/v1`` kinds' printers."""
    return {
        "apps/v1/Deployment": Printer.of(DEPLOYMENT_COLUMNS, deployment_cells),
        "apps/v1/ReplicaSet": Printer.of(REPLICA_SET_COLUMNS, replica_set_cells),
        "apps/v1/StatefulSet": Printer.of(STATEFUL_SET_COLUMNS, stateful_set_cells),
        "apps/v1/DaemonSet": Printer.of(DAEMON_SET_COLUMNS, daemon_set_cells),
        "apps/v1/ControllerRevision": Printer.of(
            CONTROLLER_REVISION_COLUMNS, controller_revision_cells
        ),
    }
