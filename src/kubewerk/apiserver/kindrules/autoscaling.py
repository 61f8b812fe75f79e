"""autoscaling/v2 and autoscaling/v1 HorizontalPodAutoscaler: defaults
(``pkg/apis/autoscaling/v2/defaults.go``, ``.../v1/defaults.go``) and validation
(``pkg/apis/autoscaling/validation``)."""

from __future__ import annotations

import copy
from typing import Any, Final

from kubewerk.apiserver.kindrules.common import (
    JSON,
    Errs,
    KindRules,
    check_nonnegative,
    ensure,
    int_of,
    items,
    obj,
    set_default,
    str_of,
)
from kubewerk.core.errors import FieldError
from kubewerk.core.validation import is_path_segment_name

METRIC_TYPES: Final = ("ContainerResource", "External", "Object", "Pods", "Resource")
TARGET_TYPES: Final = ("AverageValue", "Utilization", "Value")
SELECT_POLICIES: Final = ("Disabled", "Max", "Min")
SCALING_POLICY_TYPES: Final = ("Percent", "Pods")
DEFAULT_CPU_UTILIZATION: Final = 80
MAX_STABILIZATION_WINDOW: Final = 3600
MAX_PERIOD_SECONDS: Final = 1800
_SCALE_UP: Final = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_SCALE_DOWN: Final = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


def _rules(given: Any, defaults: dict[str, Any]) -> JSON:
    """``GenerateHPAScale{Up,Down}Rules``: the defaults with every set field kept."""
    rules: JSON = copy.deepcopy(defaults)
    if isinstance(given, dict):
        for key, value in given.items():
            if value is not None:
                rules[key] = value
    return rules


def default_hpa_v2(hpa: JSON) -> None:
    """``SetObjectDefaults_HorizontalPodAutoscaler`` (v2): minReplicas 1, a CPU target
    of 80% when no metric is given, the behavior's unset fields when it is given."""
    spec = ensure(hpa, "spec")
    set_default(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {
                        "type": "Utilization",
                        "averageUtilization": DEFAULT_CPU_UTILIZATION,
                    },
                },
            }
        ]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), _SCALE_DOWN)


def default_hpa_v1(hpa: JSON) -> None:
    """``SetDefaults_HorizontalPodAutoscaler`` (v1): minReplicas 1."""
    set_default(ensure(hpa, "spec"), "minReplicas", 1)


def _check_bounds(errs: Errs, spec: JSON) -> None:
    min_replicas = spec.get("minReplicas")
    max_replicas = int_of(spec, "maxReplicas")
    if isinstance(min_replicas, int) and min_replicas < 1:
        errs.append(
            FieldError.invalid(
                "spec.minReplicas", min_replicas, "must be greater than or equal to 1"
            )
        )
    if max_replicas < 1:
        errs.append(FieldError.invalid("spec.maxReplicas", max_replicas, "must be greater than 0"))
    if isinstance(min_replicas, int) and max_replicas < min_replicas:
        errs.append(
            FieldError.invalid(
                "spec.maxReplicas", max_replicas, "must be greater than or equal to `minReplicas`"
            )
        )
    ref = obj(spec, "scaleTargetRef")
    for key in ("kind", "name"):
        value = str_of(ref, key)
        if not value:
            errs.append(FieldError.required(f"spec.scaleTargetRef.{key}"))
        for msg in is_path_segment_name(value) if value else []:
            errs.append(FieldError.invalid(f"spec.scaleTargetRef.{key}", value, msg))


def _check_target(errs: Errs, target: JSON, path: str) -> None:
    kind = target.get("type")
    if not kind:
        errs.append(FieldError.required(f"{path}.type", "must specify a metric target type"))
    elif kind not in TARGET_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", kind, TARGET_TYPES))
    utilization = target.get("averageUtilization")
    if isinstance(utilization, int) and utilization < 1:
        errs.append(
            FieldError.invalid(f"{path}.averageUtilization", utilization, "must be greater than 0")
        )


_SOURCE_KEYS: Final = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
}


def _check_metrics(errs: Errs, metrics: list[JSON]) -> None:
    for i, metric in enumerate(metrics):
        path = f"spec.metrics[{i}]"
        kind = metric.get("type")
        if not kind:
            errs.append(FieldError.required(f"{path}.type", "must specify a metric source type"))
        if kind not in METRIC_TYPES:
            errs.append(FieldError.not_supported(f"{path}.type", kind or "", METRIC_TYPES))
            continue
        key = _SOURCE_KEYS[str(kind)]
        source = metric.get(key)
        if not isinstance(source, dict):
            errs.append(
                FieldError.required(
                    f"{path}.{key}", "must populate information for the given metric source"
                )
            )
            continue
        if kind in ("Resource", "ContainerResource") and not str_of(source, "name"):
            errs.append(FieldError.required(f"{path}.{key}.name", "must specify a resource name"))
        _check_target(errs, obj(source, "target"), f"{path}.{key}.target")


def _check_behavior(errs: Errs, behavior: Any) -> None:
    if not isinstance(behavior, dict):
        return
    for direction in ("scaleUp", "scaleDown"):
        rules = behavior.get(direction)
        if not isinstance(rules, dict):
            continue
        path = f"spec.behavior.{direction}"
        window = rules.get("stabilizationWindowSeconds")
        if isinstance(window, int):
            if window < 0:
                errs.append(
                    FieldError.invalid(
                        f"{path}.stabilizationWindowSeconds",
                        window,
                        "must be greater than or equal to zero",
                    )
                )
            elif window > MAX_STABILIZATION_WINDOW:
                errs.append(
                    FieldError.invalid(
                        f"{path}.stabilizationWindowSeconds",
                        window,
                        f"must be less than or equal to {MAX_STABILIZATION_WINDOW}",
                    )
                )
        select = rules.get("selectPolicy")
        if select is not None and select not in SELECT_POLICIES:
            errs.append(FieldError.not_supported(f"{path}.selectPolicy", select, SELECT_POLICIES))
        policies = items(rules, "policies")
        if not policies and select != "Disabled":
            errs.append(FieldError.required(f"{path}.policies", "must specify at least one Policy"))
        for j, policy in enumerate(policies):
            ppath = f"{path}.policies[{j}]"
            ptype = policy.get("type")
            if ptype not in SCALING_POLICY_TYPES:
                errs.append(
                    FieldError.not_supported(f"{ppath}.type", ptype or "", SCALING_POLICY_TYPES)
                )
            value = int_of(policy, "value")
            if value <= 0:
                errs.append(
                    FieldError.invalid(f"{ppath}.value", value, "must be greater than zero")
                )
            period = int_of(policy, "periodSeconds")
            if period <= 0:
                errs.append(
                    FieldError.invalid(
                        f"{ppath}.periodSeconds", period, "must be greater than zero"
                    )
                )
            elif period > MAX_PERIOD_SECONDS:
                errs.append(
                    FieldError.invalid(
                        f"{ppath}.periodSeconds",
                        period,
                        f"must be less than or equal to {MAX_PERIOD_SECONDS}",
                    )
                )


def validate_hpa_v2(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateHorizontalPodAutoscaler`` on a v2 object."""
    errs: Errs = []
    spec = obj(new, "spec")
    _check_bounds(errs, spec)
    _check_metrics(errs, items(spec, "metrics"))
    _check_behavior(errs, spec.get("behavior"))
    return errs


def validate_hpa_v1(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateHorizontalPodAutoscaler`` on a v1 object (its CPU target must be
    positive)."""
    errs: Errs = []
    spec = obj(new, "spec")
    _check_bounds(errs, spec)
    target = spec.get("targetCPUUtilizationPercentage")
    if isinstance(target, int) and target < 1:
        errs.append(
            FieldError.invalid(
                "spec.targetCPUUtilizationPercentage", target, "must be greater than 0"
            )
        )
    return errs


def validate_hpa_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateHorizontalPodAutoscalerStatusUpdate``: replica counts non-negative."""
    errs: Errs = []
    status = obj(new, "status")
    for key in ("currentReplicas", "desiredReplicas"):
        check_nonnegative(errs, status.get(key), f"status.{key}")
    return errs


RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("autoscaling/v2", "HorizontalPodAutoscaler"): KindRules(
        default_hpa_v2, validate_hpa_v2, validate_hpa_status
    ),
    ("autoscaling/v1", "HorizontalPodAutoscaler"): KindRules(
        default_hpa_v1, validate_hpa_v1, validate_hpa_status
    ),
}
