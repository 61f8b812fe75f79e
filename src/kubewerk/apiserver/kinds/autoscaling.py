"""Scaling: the ``/scale`` selectors of the scalable workloads, and HorizontalPodAutoscaler
served as ``autoscaling/v2`` (stored) and ``autoscaling/v1`` (converted).

The ``autoscaling/v1`` Scale's ``status.selector`` is the workload's selector as a label
selector string (``pkg/registry/apps/deployment/storage``: ``LabelSelectorAsSelector``
then ``String()``; a ReplicationController's map selector as ``SelectorFromSet``).

HorizontalPodAutoscaler conversion follows ``pkg/apis/autoscaling/v1/conversion.go``: a
v1 object's ``targetCPUUtilizationPercentage`` is the v2 Resource metric on ``cpu`` with
an Utilization target (``currentCPUUtilizationPercentage`` likewise for the current
metrics); what v1 cannot express (other metrics, current metrics, conditions, behavior)
rides in the ``autoscaling.alpha.kubernetes.io/*`` annotations, as JSON of the v2 form
(Kubernetes writes the older v2beta-era shape there; kubewerk reads back what it wrote).
"""

from __future__ import annotations

from typing import Any

import orjson

from kubewerk.apiserver.kinds.typed import TypedKindStrategy
from kubewerk.core.selectors import LabelSelectorError, label_selector_from_dict

JSON = dict[str, Any]

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_ANNOTATIONS = (
    METRICS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
)


class SelectorScaledStrategy(TypedKindStrategy):
    """Deployments, ReplicaSets, StatefulSets: the Scale selector from ``spec.selector``."""

    def scale_selector(self, obj: JSON) -> str | None:
        selector = (obj.get("spec") or {}).get("selector")
        if not isinstance(selector, dict):
            return ""
        try:
            return str(label_selector_from_dict(selector))
        except LabelSelectorError:
            return ""


class ReplicationControllerStrategy(TypedKindStrategy):
    """ReplicationControllers: the Scale selector from the ``spec.selector`` map."""

    def scale_selector(self, obj: JSON) -> str | None:
        selector = (obj.get("spec") or {}).get("selector")
        if not isinstance(selector, dict):
            return ""
        return ",".join(f"{k}={selector[k]}" for k in sorted(selector))


# -- HorizontalPodAutoscaler ---------------------------------------------------------


def _is_cpu_utilization(metric: Any, target_key: str) -> bool:
    if not isinstance(metric, dict) or metric.get("type") != "Resource":
        return False
    resource = metric.get("resource")
    if not isinstance(resource, dict) or resource.get("name") != "cpu":
        return False
    value = resource.get(target_key)
    if not isinstance(value, dict):
        return False
    if target_key == "target":
        return value.get("type") == "Utilization" and "averageUtilization" in value
    return "averageUtilization" in value


def hpa_v2_to_v1(obj: JSON) -> JSON:
    """A stored ``autoscaling/v2`` HorizontalPodAutoscaler as ``autoscaling/v1`` (a new
    object; ``obj`` is not changed)."""
    out: JSON = {}
    for key, value in obj.items():
        if key not in ("spec", "status"):
            out[key] = value
    out["apiVersion"] = "autoscaling/v1"
    annotations: dict[str, str] = {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else None
    if spec is not None:
        v1_spec: JSON = {}
        for key in ("scaleTargetRef", "minReplicas", "maxReplicas"):
            if key in spec:
                v1_spec[key] = spec[key]
        others = []
        for metric in spec.get("metrics") or []:
            if "targetCPUUtilizationPercentage" not in v1_spec and _is_cpu_utilization(
                metric, "target"
            ):
                v1_spec["targetCPUUtilizationPercentage"] = metric["resource"]["target"][
                    "averageUtilization"
                ]
            else:
                others.append(metric)
        if others:
            annotations[METRICS_ANNOTATION] = orjson.dumps(others).decode()
        if spec.get("behavior"):
            annotations[BEHAVIOR_ANNOTATION] = orjson.dumps(spec["behavior"]).decode()
        out["spec"] = v1_spec
    status = obj.get("status") if isinstance(obj.get("status"), dict) else None
    if status is not None:
        v1_status: JSON = {}
        for key in ("observedGeneration", "lastScaleTime"):
            if key in status:
                v1_status[key] = status[key]
        v1_status["currentReplicas"] = status.get("currentReplicas", 0)
        v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
        current_others = []
        for metric in status.get("currentMetrics") or []:
            if "currentCPUUtilizationPercentage" not in v1_status and _is_cpu_utilization(
                metric, "current"
            ):
                v1_status["currentCPUUtilizationPercentage"] = metric["resource"]["current"][
                    "averageUtilization"
                ]
            else:
                current_others.append(metric)
        if current_others:
            annotations[CURRENT_METRICS_ANNOTATION] = orjson.dumps(current_others).decode()
        if status.get("conditions"):
            annotations[CONDITIONS_ANNOTATION] = orjson.dumps(status["conditions"]).decode()
        out["status"] = v1_status
    if annotations:
        meta = dict(out.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        out["metadata"] = meta
    return out


def _annotation_list(annotations: dict[str, Any], key: str) -> list[Any]:
    text = annotations.pop(key, None)
    if not isinstance(text, str):
        return []
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def hpa_v1_to_v2(obj: JSON) -> JSON:
    """An ``autoscaling/v1`` HorizontalPodAutoscaler as stored (``autoscaling/v2``; a new
    object, the ``autoscaling.alpha.kubernetes.io/*`` annotations folded back in)."""
    out: JSON = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v2"
    meta = dict(out.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else None
    other_metrics = _annotation_list(annotations, METRICS_ANNOTATION)
    current_others = _annotation_list(annotations, CURRENT_METRICS_ANNOTATION)
    conditions = _annotation_list(annotations, CONDITIONS_ANNOTATION)
    behavior_text = annotations.pop(BEHAVIOR_ANNOTATION, None)
    if spec is not None:
        v2_spec: JSON = {
            k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec
        }
        metrics: list[Any] = []
        target = spec.get("targetCPUUtilizationPercentage")
        if target is not None:
            metrics.append(
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": target},
                    },
                }
            )
        metrics.extend(other_metrics)
        if metrics:
            v2_spec["metrics"] = metrics
        if isinstance(behavior_text, str):
            try:
                behavior = orjson.loads(behavior_text)
            except orjson.JSONDecodeError:
                behavior = None
            if isinstance(behavior, dict):
                v2_spec["behavior"] = behavior
        out["spec"] = v2_spec
    status = obj.get("status") if isinstance(obj.get("status"), dict) else None
    if status is not None:
        v2_status: JSON = {
            k: status[k] for k in ("observedGeneration", "lastScaleTime") if k in status
        }
        if status.get("currentReplicas"):
            v2_status["currentReplicas"] = status["currentReplicas"]
        v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
        current: list[Any] = []
        cpu = status.get("currentCPUUtilizationPercentage")
        if cpu is not None:
            current.append(
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": cpu}},
                }
            )
        current.extend(current_others)
        if current:
            v2_status["currentMetrics"] = current
        if conditions:
            v2_status["conditions"] = conditions
        out["status"] = v2_status
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    return out


class HorizontalPodAutoscalerStrategy(TypedKindStrategy):
    """Stored as ``autoscaling/v2``, served as v2 or v1 (converted both ways)."""

    def prepare_for_create(self, obj: JSON) -> None:
        super().prepare_for_create(obj)
        if obj.get("apiVersion") == "autoscaling/v1":
            obj["status"] = {"currentReplicas": 0, "desiredReplicas": 0}

    def to_storage(self, obj: JSON) -> JSON:
        if obj.get("apiVersion") == "autoscaling/v1":
            return hpa_v1_to_v2(obj)
        return obj

    def from_storage(self, obj: JSON, api_version: str) -> JSON:
        if api_version == "autoscaling/v1" and obj.get("apiVersion") != "autoscaling/v1":
            return hpa_v2_to_v1(obj)
        return obj
