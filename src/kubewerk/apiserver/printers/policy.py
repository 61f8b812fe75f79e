"""Printers of ``policy/v1`` PodDisruptionBudget, ``scheduling.k8s.io/v1``
PriorityClass and ``storage.k8s.io/v1`` StorageClass."""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.printers.core import AGE
from kubewerk.apiserver.printers.format import age, int_or_string, meta, obj_int, obj_map, obj_str
from kubewerk.apiserver.printers.printer import JSON, Printer
from kubewerk.apiserver.strategy import PrinterColumn

POD_DISRUPTION_BUDGET_COLUMNS: Final = (
    PrinterColumn(
        "Min Available", "string", "", "The minimum number of pods that must be available."
    ),
    PrinterColumn(
        "Max Unavailable", "string", "", "The maximum number of pods that may be unavailable."
    ),
    PrinterColumn(
        "Allowed Disruptions",
        "integer",
        "",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
)


def pod_disruption_budget_cells(obj: JSON, now: float) -> list[Any]:
    """``printPodDisruptionBudget``: MIN AVAILABLE, MAX UNAVAILABLE (``N/A`` when
    unset), ALLOWED DISRUPTIONS, AGE."""
    spec = obj_map(obj.get("spec"))
    min_available = spec.get("minAvailable")
    max_unavailable = spec.get("maxUnavailable")
    return [
        "N/A" if min_available is None else int_or_string(min_available),
        "N/A" if max_unavailable is None else int_or_string(max_unavailable),
        obj_int(obj_map(obj.get("status")).get("disruptionsAllowed")),
        age(obj, now),
    ]


PRIORITY_CLASS_COLUMNS: Final = (
    PrinterColumn("Value", "integer", ""),
    PrinterColumn("Global-Default", "boolean", ""),
    AGE,
    PrinterColumn("PreemptionPolicy", "string", ""),
)


def priority_class_cells(obj: JSON, now: float) -> list[Any]:
    """``printPriorityClass`` (wide): VALUE, GLOBAL-DEFAULT, AGE, PREEMPTIONPOLICY.

    Kubernetes declares PreemptionPolicy with priority 0 yet only prints it wide, and
    its server always prints wide: so does this.
    """
    policy = obj.get("preemptionPolicy")
    return [
        obj_int(obj.get("value")),
        obj.get("globalDefault") is True,
        age(obj, now),
        policy if isinstance(policy, str) else "",
    ]


STORAGE_CLASS_COLUMNS: Final = (
    PrinterColumn("Provisioner", "string", ""),
    PrinterColumn("ReclaimPolicy", "string", ""),
    PrinterColumn("VolumeBindingMode", "string", ""),
    PrinterColumn("AllowVolumeExpansion", "string", ""),
    AGE,
)

DEFAULT_CLASS_ANNOTATIONS: Final = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def storage_class_name(obj: JSON) -> str:
    """The Name cell of a StorageClass: `` (default)`` appended to the default class's
    (``is-default-class`` annotation, or its beta form, set to ``true``)."""
    name = obj_str(meta(obj).get("name"))
    annotations = obj_map(meta(obj).get("annotations"))
    if any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    return name


def storage_class_cells(obj: JSON, now: float) -> list[Any]:
    """``printStorageClass``: PROVISIONER, RECLAIMPOLICY (Delete when unset),
    VOLUMEBINDINGMODE (Immediate when unset), ALLOWVOLUMEEXPANSION, AGE."""
    reclaim = obj.get("reclaimPolicy")
    binding = obj.get("volumeBindingMode")
    return [
        obj_str(obj.get("provisioner")),
        reclaim if isinstance(reclaim, str) else "Delete",
        binding if isinstance(binding, str) else "Immediate",
        obj.get("allowVolumeExpansion") is True,
        age(obj, now),
    ]


def printers() -> dict[str, Printer]:
    """The PodDisruptionBudget, PriorityClass and StorageClass printers."""
    return {
        "policy/v1/PodDisruptionBudget": Printer.of(
            POD_DISRUPTION_BUDGET_COLUMNS, pod_disruption_budget_cells
        ),
        "scheduling.k8s.io/v1/PriorityClass": Printer.of(
            PRIORITY_CLASS_COLUMNS, priority_class_cells
        ),
        "storage.k8s.io/v1/StorageClass": Printer.of(
            STORAGE_CLASS_COLUMNS, storage_class_cells, storage_class_name
        ),
    }
