"""Printers of HorizontalPodAutoscaler in ``autoscaling/v2`` and ``autoscaling/v1``, and
of the ``autoscaling/v1`` Scale a built-in kind's ``/scale`` answers.

Kubernetes prints the internal form; an ``autoscaling/v1`` object reaches it through
the v1 conversion: ``targetCPUUtilizationPercentage`` becomes a cpu Resource metric
(80% when unset, the implicit v1 default), ``currentCPUUtilizationPercentage`` its
current utilization. The extra metrics v1 keeps in the
``autoscaling.alpha.kubernetes.io/metrics`` annotation are not read.
"""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.printers.core import AGE
from kubewerk.apiserver.printers.format import (
    NONE,
    UNKNOWN,
    UNSET,
    age,
    obj_int,
    obj_list,
    obj_map,
    obj_str,
    quantity_string,
)
from kubewerk.apiserver.printers.printer import JSON, Printer
from kubewerk.apiserver.strategy import PrinterColumn

HPA_COLUMNS: Final = (
    PrinterColumn("Reference", "string", ""),
    PrinterColumn("Targets", "string", ""),
    PrinterColumn("MinPods", "string", ""),
    PrinterColumn("MaxPods", "string", ""),
    PrinterColumn("Replicas", "string", ""),
    AGE,
)

DEFAULT_CPU_UTILIZATION: Final = 80

SCALE_COLUMNS: Final = (
    PrinterColumn("Desired", "integer", ""),
    PrinterColumn("Available", "integer", ""),
    AGE,
)


def scale_cells(obj: JSON, now: float) -> list[Any]:
    """``printScale``: the Scale's ``spec.replicas``, ``status.replicas`` and age."""
    return [
        obj_int(obj_map(obj.get("spec")).get("replicas")),
        obj_int(obj_map(obj.get("status")).get("replicas")),
        age(obj, now),
    ]


def _qty(value: Any) -> str:
    """``Quantity.String()`` of a pointer field: ``<nil>`` when absent."""
    return "<nil>" if value is None else quantity_string(value)


def _percent(value: Any) -> str:
    return f"{obj_int(value)}%"


def _value_target(source: JSON, status: JSON | None, avg_label: bool) -> str:
    """An External or Object metric: ``current/target (avg)`` for an average-value
    target, else ``current/target`` of the plain value."""
    target = obj_map(source.get("target"))
    current = obj_map(status.get("current")) if status is not None else None
    if target.get("averageValue") is not None:
        cur = UNKNOWN
        if current is not None and current.get("averageValue") is not None:
            cur = quantity_string(current["averageValue"])
        return f"{cur}/{quantity_string(target['averageValue'])}" + (" (avg)" if avg_label else "")
    cur = UNKNOWN
    if current is not None:
        cur = _qty(current.get("value"))
    return f"{cur}/{_qty(target.get('value'))}"


def _resource_target(source: JSON, status: JSON | None) -> str:
    """A Resource or ContainerResource metric: ``name: current/target`` with average
    values, or utilizations in percent (``<auto>`` for a target without one)."""
    name = obj_str(source.get("name"))
    target = obj_map(source.get("target"))
    current = obj_map(status.get("current")) if status is not None else None
    if target.get("averageValue") is not None:
        cur = UNKNOWN
        if current is not None:
            cur = _qty(current.get("averageValue"))
        return f"{name}: {cur}/{quantity_string(target['averageValue'])}"
    cur = UNKNOWN
    if current is not None and current.get("averageUtilization") is not None:
        cur = _percent(current["averageUtilization"])
    want = "<auto>"
    if target.get("averageUtilization") is not None:
        want = _percent(target["averageUtilization"])
    return f"{name}: {cur}/{want}"


def format_hpa_metrics(specs: list[Any], statuses: list[Any]) -> str:
    """``formatHPAMetrics``: each metric's ``current/target`` (the status at the same
    index), at most two then `` + N more...``; ``<none>`` without metrics."""
    if not specs:
        return NONE
    shown: list[str] = []
    for i, spec in enumerate(specs):
        spec = obj_map(spec)
        status = obj_map(statuses[i]) if i < len(statuses) else None
        kind = spec.get("type")
        key = {
            "External": "external",
            "Pods": "pods",
            "Object": "object",
            "Resource": "resource",
            "ContainerResource": "containerResource",
        }.get(obj_str(kind))
        if key is None:
            shown.append("<unknown type>")
            continue
        source = obj_map(spec.get(key))
        metric_status = status.get(key) if status is not None else None
        metric_status = metric_status if isinstance(metric_status, dict) else None
        if kind in ("External", "Object"):
            shown.append(_value_target(source, metric_status, avg_label=True))
        elif kind == "Pods":
            cur = UNKNOWN
            if metric_status is not None:
                cur = _qty(obj_map(metric_status.get("current")).get("averageValue"))
            want = _qty(obj_map(source.get("target")).get("averageValue"))
            shown.append(f"{cur}/{want}")
        else:
            shown.append(_resource_target(source, metric_status))
    limit = 2
    text = ", ".join(shown[:limit])
    if len(shown) > limit:
        return f"{text} + {len(shown) - limit} more..."
    return text


def _cells(obj: JSON, now: float, metrics: list[Any], current: list[Any]) -> list[Any]:
    spec = obj_map(obj.get("spec"))
    ref = obj_map(spec.get("scaleTargetRef"))
    min_replicas = spec.get("minReplicas")
    return [
        f"{obj_str(ref.get('kind'))}/{obj_str(ref.get('name'))}",
        format_hpa_metrics(metrics, current),
        UNSET if min_replicas is None else str(obj_int(min_replicas)),
        obj_int(spec.get("maxReplicas")),
        obj_int(obj_map(obj.get("status")).get("currentReplicas")),
        age(obj, now),
    ]


def hpa_v2_cells(obj: JSON, now: float) -> list[Any]:
    """``printHorizontalPodAutoscaler`` for an ``autoscaling/v2`` object."""
    spec = obj_map(obj.get("spec"))
    status = obj_map(obj.get("status"))
    return _cells(obj, now, obj_list(spec.get("metrics")), obj_list(status.get("currentMetrics")))


def hpa_v1_cells(obj: JSON, now: float) -> list[Any]:
    """``printHorizontalPodAutoscaler`` for an ``autoscaling/v1`` object, through the
    v1 conversion of its cpu target and current utilization."""
    spec = obj_map(obj.get("spec"))
    status = obj_map(obj.get("status"))
    target = spec.get("targetCPUUtilizationPercentage")
    utilization = DEFAULT_CPU_UTILIZATION if target is None else obj_int(target)
    metrics: list[Any] = [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": utilization},
            },
        }
    ]
    current: list[Any] = []
    if status.get("currentCPUUtilizationPercentage") is not None:
        current.append(
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {
                        "averageUtilization": obj_int(status["currentCPUUtilizationPercentage"])
                    },
                },
            }
        )
    return _cells(obj, now, metrics, current)


def printers() -> dict[str, Printer]:
    """HorizontalPodAutoscaler's printers, one per served version, and Scale's."""
    return {
        "autoscaling/v2/HorizontalPodAutoscaler": Printer.of(HPA_COLUMNS, hpa_v2_cells),
        "autoscaling/v1/HorizontalPodAutoscaler": Printer.of(HPA_COLUMNS, hpa_v1_cells),
        "autoscaling/v1/Scale": Printer.of(SCALE_COLUMNS, scale_cells),
    }
